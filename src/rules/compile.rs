//! Type checking and compilation of rule expressions into `Expr` trees: names resolved to
//! slots, fields and functions to enum variants, regular expressions compiled once — nothing
//! is looked up by string while a rule runs.

use super::parse::{Ast, LangError, Pos};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    Num,
    Bool,
    Str,
    Event,
    Region,
    /// A member of a collective instance.
    Member,
    /// A queued instance of another rule; its index says which rule's bindings it carries.
    Item(u16),
    StrList,
    NumList,
}

impl Type {
    /// The name with its article: "a number", "an event".
    pub fn a(self) -> String {
        let n = self.name();
        if n.starts_with(['a', 'e', 'i', 'o', 'u']) {
            format!("an {n}")
        } else {
            format!("a {n}")
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Type::Num => "number",
            Type::Bool => "boolean",
            Type::Str => "string",
            Type::Event => "event",
            Type::Region => "region",
            Type::Member => "member",
            Type::Item(_) => "rule instance",
            Type::StrList => "list of strings",
            Type::NumList => "list of numbers",
        }
    }
}

/// A runtime value. `Str` holds an interned string id; `None` is an absent pointer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Num(f64),
    Bool(bool),
    Str(u32),
    Event(u32, u32),
    Region(u32),
    Member(u32),
    Item(u32),
    None,
}

impl Value {
    #[inline]
    pub fn num(self) -> f64 {
        match self {
            Value::Num(v) => v,
            _ => f64::NAN,
        }
    }

    #[inline]
    pub fn bool(self) -> bool {
        matches!(self, Value::Bool(true))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Time,
    Enter,
    Leave,
    Call,
    Bytes,
    Tag,
    Rank,
    Kind,
    Send,
    Recv,
    Sent,
    Received,
    Cancelled,
    /// Of a lock acquisition: the release of the same lock before it in acquisition order.
    LastRelease,
    RegionName,
    RegionParadigm,
    RegionRole,
    RegionClass,
    RegionMode,
    MemberBegin,
    MemberEnd,
    MemberSent,
    MemberRecv,
    MemberRank,
    MemberTasks,
    MemberEvent,
    /// A per-member binding (`m.sync`), by slot.
    MemberLet(u16),
    /// A binding of the rule a queued instance came from, by slot.
    ItemSlot(u16),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Func {
    Pos,
    Min,
    Max,
    Abs,
    Matches(usize),
    /// `had(rule, event)`: rule had a positive candidate in the group keyed by `event`.
    Had(u16),
    /// `metric(id)`: the value of another metric at this call path and location.
    Metric(u16),
    Exists,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    Max,
    Min,
    Sum,
    Count,
    Any,
    All,
    ArgMax,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

#[derive(Clone, Debug)]
pub enum Expr {
    Const(Value),
    Slot(u16),
    Field(Box<Expr>, Field),
    Call(Func, Vec<Expr>),
    /// Over the members of the current collective instance; `slot` holds the member.
    Agg {
        op: Agg,
        slot: u16,
        cond: Option<Box<Expr>>,
        body: Box<Expr>,
    },
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    In(Box<Expr>, Vec<Value>),
    /// `slot.f` or `slot.f.g` in one node (never written by the compiler: the analysis fuses
    /// field chains on slots when it specialises a rule, `analysis::plan::specialise`).
    Path(u16, Field, Option<Field>),
    /// A subexpression that reads nothing but the region of the call around the event in
    /// `slot`, evaluated in advance: its value per region index, and last for "no enclosing
    /// call" (never written by the compiler: `analysis::plan::specialise` makes it per trace).
    Table(u16, Box<[Value]>),
    /// A subexpression that reads nothing but the trigger events, met more than once among
    /// the rules tried on one kind of event: evaluated at most once per event, its value
    /// kept in the context's cell `n` (never written by the compiler: `analysis::plan::share`
    /// makes it per pass and kind).
    Shared(u16, Box<Expr>),
}

/// What names mean while compiling one rule.
pub struct Scope<'a> {
    /// (name, type, slot)
    pub vars: Vec<(String, Type, u16)>,
    /// Per-member bindings: (name, type, slot in the member table)
    pub member_lets: Vec<(String, Type, u16)>,
    /// Whether `members` (a collective instance) is available.
    pub has_members: bool,
    /// Bindings of the rules whose instances may appear as `Item(k)`: (name, type, slot).
    pub item_vars: &'a [Vec<(String, Type, u16)>],
    pub interner: &'a mut Interner,
    pub regexes: &'a mut Vec<regex::Regex>,
    /// Rule ids `had()` may name, and metric ids `metric()` may name.
    pub rule_ids: &'a [String],
    pub metric_ids: &'a [String],
    /// Whether `metric()` may be used (only in `on = "derived"` rules).
    pub allow_metric: bool,
    /// Whether `had(rule, ...)` may read rule `rule`: `Some(message)` if not.
    pub had_check: &'a dyn Fn(u16) -> Option<String>,
    /// Rules this expression refers to (for the evaluation order).
    pub uses_rules: Vec<u16>,
    pub uses_metrics: Vec<u16>,
    /// Every `metric()` call: the metric and the call's position in its expression.
    pub metric_refs: Vec<(u16, Pos)>,
    /// Environment slots handed out so far.
    pub slots: u16,
}

impl Scope<'_> {
    /// Bind a name to a fresh slot.
    pub fn declare(&mut self, name: &str, t: Type) -> u16 {
        let s = self.slots;
        self.slots += 1;
        self.vars.push((name.to_string(), t, s));
        s
    }
}

/// Interned strings: region names, paradigms, classes and literals share one table.
#[derive(Clone, Debug, Default)]
pub struct Interner {
    pub strings: Vec<String>,
    index: std::collections::HashMap<String, u32>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }

    pub fn get(&self, i: u32) -> &str {
        &self.strings[i as usize]
    }
}

fn err<T>(pos: Pos, msg: impl Into<String>) -> Result<T, LangError> {
    Err(LangError {
        pos,
        msg: msg.into(),
    })
}

fn field_of(t: Type, name: &str, scope: &Scope) -> Option<(Field, Type)> {
    use Field::*;
    Some(match (t, name) {
        (Type::Event, "time") => (Time, Type::Num),
        (Type::Event, "enter") => (Enter, Type::Event),
        (Type::Event, "leave") => (Leave, Type::Event),
        (Type::Event, "call") => (Call, Type::Region),
        (Type::Event, "bytes") => (Bytes, Type::Num),
        (Type::Event, "tag") => (Tag, Type::Num),
        (Type::Event, "rank") => (Rank, Type::Num),
        (Type::Event, "kind") => (Kind, Type::Str),
        (Type::Event, "send") => (Send, Type::Event),
        (Type::Event, "recv") => (Recv, Type::Event),
        (Type::Event, "sent") => (Sent, Type::Num),
        (Type::Event, "received") => (Received, Type::Num),
        (Type::Event, "cancelled") => (Cancelled, Type::Bool),
        (Type::Event, "last_release") => (LastRelease, Type::Event),
        (Type::Region, "name") => (RegionName, Type::Str),
        (Type::Region, "paradigm") => (RegionParadigm, Type::Str),
        (Type::Region, "role") => (RegionRole, Type::Str),
        (Type::Region, "class") => (RegionClass, Type::Str),
        (Type::Region, "mode") => (RegionMode, Type::Str),
        (Type::Member, "begin") => (MemberBegin, Type::Num),
        (Type::Member, "end") => (MemberEnd, Type::Num),
        (Type::Member, "sent") => (MemberSent, Type::Num),
        (Type::Member, "recv") => (MemberRecv, Type::Num),
        (Type::Member, "rank") => (MemberRank, Type::Num),
        (Type::Member, "tasks") => (MemberTasks, Type::Num),
        (Type::Member, "event") => (MemberEvent, Type::Event),
        (Type::Member, n) => {
            let (_, t, s) = scope.member_lets.iter().find(|(x, _, _)| x == n)?;
            (MemberLet(*s), *t)
        }
        (Type::Item(k), n) => {
            let (_, t, s) = scope
                .item_vars
                .get(k as usize)?
                .iter()
                .find(|(x, _, _)| x == n)?;
            (ItemSlot(*s), *t)
        }
        _ => return None,
    })
}

/// The fields of type `t`, listed for a message; `None` if it has none.
fn fields_of(t: Type, scope: &Scope) -> Option<String> {
    let base: &[&str] = match t {
        Type::Event => &[
            "time",
            "enter",
            "leave",
            "call",
            "bytes",
            "tag",
            "rank",
            "kind",
            "send",
            "recv",
            "sent",
            "received",
            "cancelled",
            "last_release",
        ],
        Type::Region => &["name", "paradigm", "role", "class", "mode"],
        Type::Member => &["begin", "end", "sent", "recv", "rank", "tasks", "event"],
        _ => &[],
    };
    let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    match t {
        Type::Member => v.extend(scope.member_lets.iter().map(|x| x.0.clone())),
        Type::Item(k) => {
            if let Some(vars) = scope.item_vars.get(k as usize) {
                v.extend(vars.iter().map(|x| x.0.clone()));
            }
        }
        _ => {}
    }
    if v.is_empty() {
        return None;
    }
    Some(v.join(", "))
}

/// Compile an expression, checking it has type `want` (if given).
pub fn compile(
    ast: &Ast,
    scope: &mut Scope,
    want: Option<Type>,
) -> Result<(Expr, Type), LangError> {
    let (e, t) = compile_any(ast, scope)?;
    if let Some(w) = want {
        if t != w {
            return err(
                ast.start(),
                format!("expected {}, this is {}", w.a(), t.a()),
            );
        }
    }
    Ok((e, t))
}

/// Compile an expression, whatever its type.
fn compile_any(ast: &Ast, scope: &mut Scope) -> Result<(Expr, Type), LangError> {
    Ok(match ast {
        Ast::Num(v, _) => (Expr::Const(Value::Num(*v)), Type::Num),
        Ast::Bool(v, _) => (Expr::Const(Value::Bool(*v)), Type::Bool),
        Ast::Str(s, _) => (Expr::Const(Value::Str(scope.interner.intern(s))), Type::Str),
        Ast::List(_, p) => return err(*p, "a list can only stand after `in`"),
        Ast::Var(name, p) => compile_var(name, *p, scope)?,
        Ast::Field(base, f, p) => {
            let (e, t) = compile_any(base, scope)?;
            match field_of(t, f, scope) {
                Some((field, ft)) => (Expr::Field(Box::new(e), field), ft),
                None => {
                    return err(
                        *p,
                        match fields_of(t, scope) {
                            Some(fs) => format!("{} has no field `{f}`; it has: {fs}", t.a()),
                            None => format!("{} has no fields", t.a()),
                        },
                    )
                }
            }
        }
        Ast::Unary('!', x, p) => {
            let (e, t) = compile_any(x, scope)?;
            if t != Type::Bool {
                return err(*p, format!("`!` needs a boolean, this is {}", t.a()));
            }
            (Expr::Not(Box::new(e)), Type::Bool)
        }
        Ast::Unary(_, x, p) => {
            let (e, t) = compile_any(x, scope)?;
            if t != Type::Num {
                return err(*p, format!("`-` needs a number, this is {}", t.a()));
            }
            (Expr::Neg(Box::new(e)), Type::Num)
        }
        Ast::If(c, a, b, p) => {
            let (ce, _) = compile(c, scope, Some(Type::Bool))?;
            let (ae, at) = compile_any(a, scope)?;
            let (be, bt) = compile_any(b, scope)?;
            if at != bt {
                return err(
                    *p,
                    format!(
                        "the branches of `if` differ: {} and {}",
                        at.name(),
                        bt.name()
                    ),
                );
            }
            (Expr::If(Box::new(ce), Box::new(ae), Box::new(be)), at)
        }
        Ast::Binary("in", x, list, p) => compile_in(x, list, *p, scope)?,
        Ast::Binary(op, a, b, p) => compile_binary(op, a, b, *p, scope)?,
        Ast::Call(name, args, p) => compile_call(name, args, *p, scope)?,
        Ast::Aggregate {
            op,
            var,
            coll,
            cond,
            body,
            pos,
        } => compile_aggregate(op, var, coll, cond.as_deref(), body, *pos, scope)?,
    })
}

/// A bound name: the innermost binding wins.
fn compile_var(name: &str, p: Pos, scope: &Scope) -> Result<(Expr, Type), LangError> {
    match scope.vars.iter().rev().find(|(n, _, _)| n == name) {
        Some((_, t, s)) => Ok((Expr::Slot(*s), *t)),
        None => {
            let known: Vec<&str> = scope.vars.iter().map(|v| v.0.as_str()).collect();
            if known.is_empty() {
                return err(p, format!("unknown name `{name}`; no names are bound here"));
            }
            err(
                p,
                format!("unknown name `{name}`; known here: {}", known.join(", ")),
            )
        }
    }
}

/// `x in [...]`: a string or number against a list of literals of its type.
fn compile_in(x: &Ast, list: &Ast, p: Pos, scope: &mut Scope) -> Result<(Expr, Type), LangError> {
    let (xe, xt) = compile_any(x, scope)?;
    if !matches!(xt, Type::Str | Type::Num) {
        return err(
            p,
            format!(
                "`in` needs a string or a number on its left, found {}",
                xt.a()
            ),
        );
    }
    let Ast::List(items, _) = list else {
        return err(p, "`in` needs a list literal on its right, like ['a', 'b']");
    };
    let mut vals = Vec::new();
    for it in items {
        let v = match (it, xt) {
            (Ast::Str(s, _), Type::Str) => Value::Str(scope.interner.intern(s)),
            (Ast::Num(n, _), Type::Num) => Value::Num(*n),
            _ => {
                return err(
                    it.start(),
                    format!("list items must be {} literals", xt.name()),
                )
            }
        };
        vals.push(v);
    }
    Ok((Expr::In(Box::new(xe), vals), Type::Bool))
}

/// A binary operator: arithmetic and comparisons on numbers, `&&` and `||` on booleans,
/// `==` and `!=` on two values of one type.
fn compile_binary(
    op: &str,
    a: &Ast,
    b: &Ast,
    p: Pos,
    scope: &mut Scope,
) -> Result<(Expr, Type), LangError> {
    let (ae, at) = compile_any(a, scope)?;
    let (be, bt) = compile_any(b, scope)?;
    let (bop, operand, result) = match op {
        "+" => (BinOp::Add, Some(Type::Num), Type::Num),
        "-" => (BinOp::Sub, Some(Type::Num), Type::Num),
        "*" => (BinOp::Mul, Some(Type::Num), Type::Num),
        "/" => (BinOp::Div, Some(Type::Num), Type::Num),
        "<" => (BinOp::Lt, Some(Type::Num), Type::Bool),
        "<=" => (BinOp::Le, Some(Type::Num), Type::Bool),
        ">" => (BinOp::Gt, Some(Type::Num), Type::Bool),
        ">=" => (BinOp::Ge, Some(Type::Num), Type::Bool),
        "&&" => (BinOp::And, Some(Type::Bool), Type::Bool),
        "||" => (BinOp::Or, Some(Type::Bool), Type::Bool),
        "==" => (BinOp::Eq, None, Type::Bool),
        _ => (BinOp::Ne, None, Type::Bool),
    };
    match operand {
        Some(o) if at != o || bt != o => {
            return err(
                p,
                format!(
                    "`{op}` needs two {}s, found {} and {}",
                    o.name(),
                    at.a(),
                    bt.a()
                ),
            )
        }
        None if at != bt => return err(p, format!("`{op}` compares {} with {}", at.a(), bt.a())),
        _ => {}
    }
    Ok((Expr::Bin(bop, Box::new(ae), Box::new(be)), result))
}

/// An aggregate over the members of a collective instance: `op(var in members [if cond]:
/// body)`.
fn compile_aggregate(
    op: &str,
    var: &str,
    coll: &str,
    cond: Option<&Ast>,
    body: &Ast,
    pos: Pos,
    scope: &mut Scope,
) -> Result<(Expr, Type), LangError> {
    if coll != "members" || !scope.has_members {
        return err(
            pos,
            format!(
                "`{coll}` is not a collection here (only `members` of a collective instance is)"
            ),
        );
    }
    let agg = match op {
        "max" => Agg::Max,
        "min" => Agg::Min,
        "sum" => Agg::Sum,
        "count" => Agg::Count,
        "any" => Agg::Any,
        "all" => Agg::All,
        "argmax" => Agg::ArgMax,
        _ => {
            return err(
                pos,
                format!("unknown aggregate `{op}`; known: max, min, sum, count, any, all, argmax"),
            )
        }
    };
    let slot = scope.declare(var, Type::Member);
    let c = match cond {
        Some(c) => Some(Box::new(compile(c, scope, Some(Type::Bool))?.0)),
        None => None,
    };
    let body_want = match agg {
        Agg::Count | Agg::Any | Agg::All => Type::Bool,
        _ => Type::Num,
    };
    let (b, _) = compile(body, scope, Some(body_want))?;
    scope.vars.pop();
    let t = match agg {
        Agg::Any | Agg::All => Type::Bool,
        _ => Type::Num,
    };
    Ok((
        Expr::Agg {
            op: agg,
            slot,
            cond: c,
            body: Box::new(b),
        },
        t,
    ))
}

fn compile_call(
    name: &str,
    args: &[Ast],
    p: Pos,
    scope: &mut Scope,
) -> Result<(Expr, Type), LangError> {
    let arity = |n: usize| -> Result<(), LangError> {
        if args.len() != n {
            return err(
                p,
                format!("`{name}` takes {n} argument(s), found {}", args.len()),
            );
        }
        Ok(())
    };
    let lit = |i: usize| -> Result<String, LangError> {
        match &args[i] {
            Ast::Str(s, _) => Ok(s.clone()),
            a => err(a.start(), format!("`{name}` needs a string literal here")),
        }
    };
    Ok(match name {
        "pos" | "abs" => {
            arity(1)?;
            let (e, _) = compile(&args[0], scope, Some(Type::Num))?;
            let f = if name == "pos" { Func::Pos } else { Func::Abs };
            (Expr::Call(f, vec![e]), Type::Num)
        }
        "min" | "max" => {
            arity(2)?;
            let (a, _) = compile(&args[0], scope, Some(Type::Num))?;
            let (b, _) = compile(&args[1], scope, Some(Type::Num))?;
            let f = if name == "min" { Func::Min } else { Func::Max };
            (Expr::Call(f, vec![a, b]), Type::Num)
        }
        "matches" => {
            arity(2)?;
            let (a, _) = compile(&args[0], scope, Some(Type::Str))?;
            let pat = lit(1)?;
            // a pattern already compiled (by this rule or another) is compiled once
            if let Some(k) = scope.regexes.iter().position(|r| r.as_str() == pat) {
                return Ok((Expr::Call(Func::Matches(k), vec![a]), Type::Bool));
            }
            let re = match regex::Regex::new(&pat) {
                Ok(r) => r,
                Err(e) => {
                    return err(
                        args[1].pos(),
                        format!("invalid regular expression: {}", regex_message(&e)),
                    )
                }
            };
            scope.regexes.push(re);
            (Expr::Call(Func::Matches(scope.regexes.len() - 1), vec![a]), Type::Bool)
        }
        "exists" => {
            arity(1)?;
            let (a, _) = compile(&args[0], scope, Some(Type::Event))?;
            (Expr::Call(Func::Exists, vec![a]), Type::Bool)
        }
        "had" => {
            arity(2)?;
            let id = lit(0)?;
            let Some(k) = scope.rule_ids.iter().position(|r| *r == id) else {
                return err(args[0].pos(), format!("no rule `{id}`"));
            };
            if let Some(msg) = (scope.had_check)(k as u16) {
                return err(p, msg);
            }
            let (e, _) = compile(&args[1], scope, Some(Type::Event))?;
            scope.uses_rules.push(k as u16);
            (Expr::Call(Func::Had(k as u16), vec![e]), Type::Bool)
        }
        "metric" => {
            if !scope.allow_metric {
                return err(
                    p,
                    "metric() can only be used in a rule with on = \"derived\"",
                );
            }
            arity(1)?;
            let id = lit(0)?;
            let Some(k) = scope.metric_ids.iter().position(|r| *r == id) else {
                return err(args[0].pos(), format!("no metric `{id}`"));
            };
            scope.uses_metrics.push(k as u16);
            scope.metric_refs.push((k as u16, p));
            (Expr::Call(Func::Metric(k as u16), vec![]), Type::Num)
        }
        _ => {
            return err(
                p,
                format!("unknown function `{name}`; known: pos, abs, min, max, matches, exists, had, metric, and the aggregates max/min/sum/count/any/all/argmax(m in members: ...)"),
            )
        }
    })
}

/// The regex crate's error in one line: its last line, the error itself, without the pattern
/// and the caret line above it.
fn regex_message(e: &regex::Error) -> String {
    let full = e.to_string();
    let last = full
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let last = last.trim();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}
