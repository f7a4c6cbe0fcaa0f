//! Typed compilation of rule expressions: the numeric sub-trees of an expression as code that
//! yields `Option<f64>` and the boolean ones as code that yields `Option<bool>` (`None`: the
//! absent value), with no `Value` tag to build and match between their nodes, and the common
//! leaves (a time of the event in a slot, of its call's ENTER or LEAVE, a slot, a constant)
//! read in place by the node around them. Node for node the semantics of `Ctx::eval`: every
//! arithmetic operation and comparison is the same, in the same order.

use super::{compile, compile_fn, enter_time, leave_time, Ctx, Dyn};
use crate::rules::compile::{Agg, BinOp, Expr, Field, Func, Value};

type NumFn = Box<dyn Fn(&Ctx, &mut [Value]) -> Option<f64> + Send + Sync>;
type BoolFn = Box<dyn Fn(&Ctx, &mut [Value]) -> Option<bool> + Send + Sync>;

/// A numeric operand.
pub enum Num {
    Const(Option<f64>),
    /// A slot whose type is not known here: converted where it is read (`operand`, `strict`).
    Slot(usize),
    /// The time of the event in the slot, of its call's ENTER, of its call's LEAVE.
    Time(usize),
    EnterTime(usize),
    LeaveTime(usize),
    /// The bytes of the message of the event in the slot.
    Bytes(usize),
    /// A shared subexpression (`Expr::Shared`): its context cell, else the expression.
    Shared(usize, Box<Num>),
    /// A table per call region of the event in the slot (`Expr::Table`).
    Table(usize, Box<[Option<f64>]>),
    /// A typed numeric node.
    Fn(NumFn),
    /// An untyped node (`compile_fn`), converted where it is read.
    Dyn(Dyn),
}

/// A `Value` as an operand of an arithmetic or order operator (`apply`): absent stays
/// absent, anything else is its number (NaN for a non-number).
#[inline(always)]
fn operand(v: Value) -> Option<f64> {
    match v {
        Value::None => None,
        v => Some(v.num()),
    }
}

/// A `Value` where a number is required (negation, `pos`, `abs`, `min`, `max`): anything
/// but a number is absent.
#[inline(always)]
fn strict(v: Value) -> Option<f64> {
    match v {
        Value::Num(x) => Some(x),
        _ => None,
    }
}

/// A `Value` where a boolean is required (`!`, `&&`, `||`, `if`).
#[inline(always)]
fn boolean(v: Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(b),
        _ => None,
    }
}

/// A number back as a `Value`.
#[inline(always)]
pub fn num_value(x: Option<f64>) -> Value {
    x.map_or(Value::None, Value::Num)
}

/// A boolean back as a `Value`.
#[inline(always)]
pub fn bool_value(x: Option<bool>) -> Value {
    x.map_or(Value::None, Value::Bool)
}

impl Num {
    /// The value as an operand of an arithmetic or order operator (`operand`).
    #[inline(always)]
    pub fn operand(&self, c: &Ctx, env: &mut [Value]) -> Option<f64> {
        self.read(c, env, operand)
    }

    /// The value where a number is required (`strict`); the same as `operand` but for
    /// slots and untyped nodes.
    #[inline(always)]
    pub fn strict(&self, c: &Ctx, env: &mut [Value]) -> Option<f64> {
        self.read(c, env, strict)
    }

    /// The value, slots and untyped nodes read as a number by `untyped`.
    #[inline(always)]
    fn read(&self, c: &Ctx, env: &mut [Value], untyped: fn(Value) -> Option<f64>) -> Option<f64> {
        match self {
            Num::Const(v) => *v,
            Num::Slot(s) => untyped(env[*s]),
            Num::Time(s) => time(c, env[*s]),
            Num::EnterTime(s) => strict(enter_time(c, env[*s])),
            Num::LeaveTime(s) => strict(leave_time(c, env[*s])),
            Num::Bytes(s) => bytes(c, env[*s]),
            Num::Shared(j, x) => shared(c, env, *j, &**x),
            Num::Table(s, t) => table(c, env[*s], t),
            Num::Fn(f) => f(c, env),
            Num::Dyn(d) => untyped(d(c, env)),
        }
    }
}

/// A typed code as a shared subexpression needs it: its evaluation, and its result read from
/// and written back to the shared cell's `Value`.
trait Typed {
    type Out: Copy;
    fn eval(&self, c: &Ctx, env: &mut [Value]) -> Option<Self::Out>;
    fn read(v: Value) -> Option<Self::Out>;
    fn write(x: Option<Self::Out>) -> Value;
}

impl Typed for Num {
    type Out = f64;
    #[inline(always)]
    fn eval(&self, c: &Ctx, env: &mut [Value]) -> Option<f64> {
        self.strict(c, env)
    }
    #[inline(always)]
    fn read(v: Value) -> Option<f64> {
        strict(v)
    }
    #[inline(always)]
    fn write(x: Option<f64>) -> Value {
        num_value(x)
    }
}

impl Typed for Truth {
    type Out = bool;
    #[inline(always)]
    fn eval(&self, c: &Ctx, env: &mut [Value]) -> Option<bool> {
        self.get(c, env)
    }
    #[inline(always)]
    fn read(v: Value) -> Option<bool> {
        boolean(v)
    }
    #[inline(always)]
    fn write(x: Option<bool>) -> Value {
        bool_value(x)
    }
}

/// Shared subexpression `x` (`Expr::Shared`): the value in context cell `j` once evaluated
/// for the current event, else `x` (kept in the cell).
#[inline(always)]
fn shared<T: Typed>(c: &Ctx, env: &mut [Value], j: usize, x: &T) -> Option<T::Out> {
    match c.shared.get(j) {
        Some(cell) => match cell.get() {
            Some(v) => T::read(v),
            None => shared_first(cell, c, env, x),
        },
        None => eval_out(c, env, x),
    }
}

/// A per-region table (`Expr::Table`) in `T`'s type: absent where a region has no value;
/// `None` (not typed) if an entry is of another type.
fn typed_table<T: Typed>(t: &[Value]) -> Option<Box<[Option<T::Out>]>> {
    (t.iter())
        .map(|v| match (v, T::read(*v)) {
            (Value::None, _) => Some(None),
            (_, Some(x)) => Some(Some(x)),
            _ => None,
        })
        .collect()
}

#[inline(never)]
fn shared_first<T: Typed>(
    cell: &std::cell::Cell<Option<Value>>,
    c: &Ctx,
    env: &mut [Value],
    x: &T,
) -> Option<T::Out> {
    let v = x.eval(c, env);
    cell.set(Some(T::write(v)));
    v
}

/// `x` evaluated out of line (a shared subexpression's, read once per event).
#[inline(never)]
fn eval_out<T: Typed>(c: &Ctx, env: &mut [Value], x: &T) -> Option<T::Out> {
    x.eval(c, env)
}

/// `X.bytes` of the value `v` of slot `X`: only a message event has bytes.
#[inline(always)]
fn bytes(c: &Ctx, v: Value) -> Option<f64> {
    match v {
        Value::Event(l, i) => strict(c.event_field_of(l, i, Field::Bytes)),
        _ => None,
    }
}

/// `X.time` of the value `v` of slot `X`: only an event has a time.
#[inline(always)]
fn time(c: &Ctx, v: Value) -> Option<f64> {
    match v {
        Value::Event(l, i) => Some(c.seconds(l, i)),
        _ => None,
    }
}

/// A boolean operand.
pub enum Truth {
    Const(Option<bool>),
    Slot(usize),
    /// An order operator (`<`, `<=`, `>`, `>=`) on two numeric operands, read in place as
    /// `binary!` reads them: no closure of its own.
    Order(BinOp, Box<[Num; 2]>),
    /// `==` (true) or `!=` (false) on two numeric operands (or nothing), read in place.
    Equal(bool, Box<[Num; 2]>),
    /// As `Num::Shared`, `Num::Table`.
    Shared(usize, Box<Truth>),
    Table(usize, Box<[Option<bool>]>),
    Fn(BoolFn),
    Dyn(Dyn),
}

impl Truth {
    #[inline(always)]
    pub fn get(&self, c: &Ctx, env: &mut [Value]) -> Option<bool> {
        match self {
            Truth::Const(v) => *v,
            Truth::Slot(s) => boolean(env[*s]),
            Truth::Order(op, ab) => {
                let x = ab[0].operand(c, env);
                match (x, ab[1].operand(c, env)) {
                    (Some(x), Some(y)) => Some(match op {
                        BinOp::Lt => x < y,
                        BinOp::Le => x <= y,
                        BinOp::Gt => x > y,
                        _ => x >= y,
                    }),
                    _ => None,
                }
            }
            Truth::Equal(eq, ab) => {
                let x = ab[0].strict(c, env);
                Some((x == ab[1].strict(c, env)) == *eq)
            }
            Truth::Shared(j, x) => shared(c, env, *j, &**x),
            Truth::Table(s, t) => table(c, env[*s], t),
            Truth::Fn(f) => f(c, env),
            Truth::Dyn(d) => boolean(d(c, env)),
        }
    }
}

/// Whether field `f` (last in a path) gives only numbers or nothing, whatever it is read on.
fn numeric_field(f: Field) -> bool {
    matches!(
        f,
        Field::Time
            | Field::Bytes
            | Field::Tag
            | Field::Rank
            | Field::Sent
            | Field::Received
            | Field::MemberBegin
            | Field::MemberEnd
            | Field::MemberSent
            | Field::MemberRecv
            | Field::MemberRank
            | Field::MemberTasks
    )
}

/// `e` as a numeric operand: typed where it is numeric (`typed_num`), else read as `Ctx::eval`
/// gives it and converted at the use.
fn num(e: &Expr) -> Num {
    match (typed_num(e), e) {
        (Some(n), _) => n,
        (None, Expr::Slot(s)) => Num::Slot(*s as usize),
        (None, e) => Num::Dyn(compile_fn(e)),
    }
}

/// `e` as a boolean operand, as `num`.
fn truth(e: &Expr) -> Truth {
    match (typed_bool(e), e) {
        (Some(t), _) => t,
        (None, Expr::Slot(s)) => Truth::Slot(*s as usize),
        (None, e) => Truth::Dyn(compile_fn(e)),
    }
}

/// The closure of arithmetic operator `$op` (an operator token) on numeric operands, as
/// `$make` (`Num::Fn`); the order operators read theirs in place (`Truth::Order`).
macro_rules! binary {
    ($make:path, $a:expr, $b:expr, $op:tt) => {{
        let (a, b) = (num($a), num($b));
        $make(Box::new(move |c: &Ctx, env: &mut [Value]| {
            let x = a.operand(c, env);
            let y = b.operand(c, env);
            match (x, y) {
                (Some(x), Some(y)) => Some(x $op y),
                _ => None,
            }
        }))
    }};
}

/// `e` as typed numeric code, when it gives only numbers or nothing (`None` otherwise).
pub fn typed_num(e: &Expr) -> Option<Num> {
    Some(match e {
        Expr::Const(Value::Num(v)) => Num::Const(Some(*v)),
        Expr::Const(Value::None) => Num::Const(None),
        Expr::Path(s, Field::Time, None) => Num::Time(*s as usize),
        Expr::Path(s, Field::Enter, Some(Field::Time)) => Num::EnterTime(*s as usize),
        Expr::Path(s, Field::Leave, Some(Field::Time)) => Num::LeaveTime(*s as usize),
        Expr::Path(s, Field::Bytes, None) => Num::Bytes(*s as usize),
        Expr::Path(_, f, g) if numeric_field(g.unwrap_or(*f)) => Num::Dyn(compile_fn(e)),
        Expr::Bin(BinOp::Add, a, b) => binary!(Num::Fn, a, b, +),
        Expr::Bin(BinOp::Sub, a, b) => binary!(Num::Fn, a, b, -),
        Expr::Bin(BinOp::Mul, a, b) => binary!(Num::Fn, a, b, *),
        Expr::Bin(BinOp::Div, a, b) => binary!(Num::Fn, a, b, /),
        Expr::Neg(x) => {
            let x = num(x);
            Num::Fn(Box::new(move |c, env| x.strict(c, env).map(|v| -v)))
        }
        Expr::Call(f @ (Func::Pos | Func::Abs), args) if args.len() == 1 => {
            let (pos, x) = (*f == Func::Pos, num(&args[0]));
            Num::Fn(Box::new(move |c, env| {
                x.strict(c, env)
                    .map(|v| if pos { v.max(0.0) } else { v.abs() })
            }))
        }
        Expr::Call(f @ (Func::Min | Func::Max), args) if args.len() == 2 => {
            let (min, a, b) = (*f == Func::Min, num(&args[0]), num(&args[1]));
            Num::Fn(Box::new(move |c, env| {
                let x = a.strict(c, env);
                match (x, b.strict(c, env)) {
                    (Some(x), Some(y)) => Some(if min { x.min(y) } else { x.max(y) }),
                    _ => None,
                }
            }))
        }
        Expr::Call(Func::Metric(m), _) => {
            let m = *m;
            Num::Fn(Box::new(move |c, _| Some((c.metric)(m))))
        }
        Expr::If(k, a, b) if if_exists_path(k, a).is_some() => {
            let (s, f, g) = if_exists_path(k, a)?;
            let b = typed_num(b)?;
            // `exists(X.f)` reads `X.f` once: its field `g` when it exists; the fields of the
            // point-to-point rules get a closure each, their reading inlined (`compile_fields`)
            macro_rules! exists_path {
                ($f:expr, $g:expr) => {
                    Num::Fn(Box::new(move |c, env| {
                        match super::path_step(c, env[s], $f) {
                            Value::None => b.strict(c, env),
                            v => strict(super::path_step(c, v, $g)),
                        }
                    }))
                };
            }
            match (f, g) {
                (Field::Send, Field::Bytes) => exists_path!(Field::Send, Field::Bytes),
                (Field::Recv, Field::Bytes) => exists_path!(Field::Recv, Field::Bytes),
                _ => exists_path!(f, g),
            }
        }
        Expr::If(k, a, b) => {
            let (a, b) = (typed_num(a)?, typed_num(b)?);
            let k = truth(k);
            Num::Fn(Box::new(move |c, env| match k.get(c, env) {
                Some(true) => a.strict(c, env),
                Some(false) => b.strict(c, env),
                None => None,
            }))
        }
        Expr::Table(s, t) => Num::Table(*s as usize, typed_table::<Num>(t)?),
        Expr::Shared(j, x) => Num::Shared(*j as usize, Box::new(typed_num(x)?)),
        Expr::Agg {
            op: Agg::Count | Agg::Sum | Agg::Max | Agg::Min | Agg::ArgMax,
            ..
        } => Num::Dyn(compile_fn(e)),
        _ => return None,
    })
}

/// `(s, f, g)` when `if k then a else ..` is `if exists(X.f) then X.f.g else ..` (`X` in
/// slot `s`, `g` a numeric field): the condition holds exactly when `X.f` is not absent,
/// and the branch reads field `g` of that same value.
pub(crate) fn if_exists_path(k: &Expr, a: &Expr) -> Option<(usize, Field, Field)> {
    match (k, a) {
        (Expr::Call(Func::Exists, args), Expr::Path(s, f, Some(g)))
            if args.len() == 1
                && numeric_field(*g)
                && matches!(args[0], Expr::Path(t, h, None) if t == *s && h == *f) =>
        {
            Some((*s as usize, *f, *g))
        }
        _ => None,
    }
}

/// Entry of table `t` (per region, last for "no enclosing call") for the value `v` of its
/// slot, as `Ctx::eval` reads an `Expr::Table`.
#[inline(always)]
fn table<T: Copy>(c: &Ctx, v: Value, t: &[T]) -> T {
    let r = match v {
        Value::Event(l, i) => super::call_region(c.trace, c.replay, l, i),
        _ => None,
    };
    r.map_or(t[t.len() - 1], |r| t[r as usize])
}

/// `e` as typed boolean code, when it gives only booleans or nothing (`None` otherwise).
pub fn typed_bool(e: &Expr) -> Option<Truth> {
    Some(match e {
        Expr::Const(Value::Bool(b)) => Truth::Const(Some(*b)),
        Expr::Const(Value::None) => Truth::Const(None),
        Expr::Not(x) => {
            let x = truth(x);
            Truth::Fn(Box::new(move |c, env| x.get(c, env).map(|b| !b)))
        }
        Expr::Bin(op @ (BinOp::And | BinOp::Or), a, b) => {
            let (and, a, b) = (*op == BinOp::And, truth(a), truth(b));
            Truth::Fn(Box::new(move |c, env| match (and, a.get(c, env)?) {
                (true, false) => Some(false),
                (false, true) => Some(true),
                _ => b.get(c, env),
            }))
        }
        Expr::Bin(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
            Truth::Order(*op, Box::new([num(a), num(b)]))
        }
        Expr::Bin(op @ (BinOp::Eq | BinOp::Ne), a, b) => {
            let eq = *op == BinOp::Eq;
            // two numbers (or nothing): equal as `Value`s are
            if let (Some(a), Some(b)) = (typed_num(a), typed_num(b)) {
                return Some(Truth::Equal(eq, Box::new([a, b])));
            }
            let (a, b) = (compile(a), compile(b));
            Truth::Fn(Box::new(move |c, env| {
                let x = a.run(c, env);
                Some((x == b.run(c, env)) == eq)
            }))
        }
        Expr::In(x, list) => {
            let (x, list) = (compile(x), list.clone());
            Truth::Fn(Box::new(move |c, env| match x.run(c, env) {
                Value::None => None,
                v => Some(list.contains(&v)),
            }))
        }
        Expr::Call(Func::Exists, args) if args.len() == 1 => {
            let x = compile(&args[0]);
            Truth::Fn(Box::new(move |c, env| Some(x.run(c, env) != Value::None)))
        }
        Expr::Call(Func::Had(r), args) if args.len() == 1 => {
            let (r, x) = (*r as usize, compile(&args[0]));
            Truth::Fn(Box::new(move |c, env| match x.run(c, env) {
                Value::Event(l, i) => Some(c.had[r].binary_search(&(l, i)).is_ok()),
                _ => Some(false),
            }))
        }
        Expr::Call(Func::Matches(k), args) if args.len() == 1 => {
            let (k, x) = (*k, compile(&args[0]));
            Truth::Fn(Box::new(move |c, env| match x.run(c, env) {
                Value::Str(s) => Some(c.regexes[k].is_match(&c.strings[s as usize])),
                _ => None,
            }))
        }
        Expr::Path(s, Field::Cancelled, None) => {
            let s = *s as usize;
            Truth::Fn(Box::new(move |c, env| match env[s] {
                Value::Event(l, i) => boolean(c.event_field_of(l, i, Field::Cancelled)),
                _ => None,
            }))
        }
        Expr::Table(s, t) => Truth::Table(*s as usize, typed_table::<Truth>(t)?),
        Expr::Shared(j, x) => Truth::Shared(*j as usize, Box::new(typed_bool(x)?)),
        Expr::If(k, a, b) => {
            let (a, b) = (typed_bool(a)?, typed_bool(b)?);
            let k = truth(k);
            Truth::Fn(Box::new(move |c, env| match k.get(c, env)? {
                true => a.get(c, env),
                false => b.get(c, env),
            }))
        }
        Expr::Agg {
            op: Agg::Any | Agg::All,
            ..
        } => Truth::Dyn(compile_fn(e)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::analysis::eval::compile;
    use crate::analysis::plan::testing::{same, Specialised};
    use crate::model::EventKind;
    use crate::rules::compile::{BinOp, Expr, Field, Func, Value};
    use crate::rules::RuleSet;

    /// The operands of the test expressions: slots 0 and 1, the fused leaves, other paths,
    /// constants of each type.
    fn leaves() -> Vec<Expr> {
        vec![
            Expr::Slot(0),
            Expr::Slot(1),
            Expr::Path(0, Field::Time, None),
            Expr::Path(0, Field::Enter, Some(Field::Time)),
            Expr::Path(1, Field::Leave, Some(Field::Time)),
            Expr::Path(0, Field::Bytes, None),
            Expr::Path(1, Field::Recv, Some(Field::Time)),
            Expr::Path(0, Field::Cancelled, None),
            Expr::Const(Value::Num(2.0)),
            Expr::Const(Value::None),
            Expr::Const(Value::Bool(true)),
        ]
    }

    /// Expressions over the leaves: every operator, function and form `typed` compiles,
    /// and some nested ones.
    fn exprs() -> Vec<Expr> {
        let b = Box::new;
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
            BinOp::Eq,
            BinOp::Ne,
            BinOp::And,
            BinOp::Or,
        ];
        let mut v = Vec::new();
        for x in leaves() {
            v.push(Expr::Not(b(x.clone())));
            v.push(Expr::Neg(b(x.clone())));
            for f in [Func::Pos, Func::Abs, Func::Exists] {
                v.push(Expr::Call(f, vec![x.clone()]));
            }
            v.push(Expr::In(
                b(x.clone()),
                vec![Value::Num(2.0), Value::Bool(true)],
            ));
            for y in leaves() {
                for op in ops {
                    v.push(Expr::Bin(op, b(x.clone()), b(y.clone())));
                }
                for f in [Func::Min, Func::Max] {
                    v.push(Expr::Call(f, vec![x.clone(), y.clone()]));
                }
                let lt = Expr::Bin(BinOp::Lt, b(x.clone()), b(y.clone()));
                let sub = Expr::Bin(BinOp::Sub, b(y.clone()), b(x.clone()));
                v.push(Expr::If(b(lt.clone()), b(x.clone()), b(y.clone())));
                v.push(Expr::If(
                    b(lt.clone()),
                    b(Expr::Const(Value::Num(0.0))),
                    b(sub.clone()),
                ));
                v.push(Expr::If(
                    b(x.clone()),
                    b(lt.clone()),
                    b(Expr::Not(b(lt.clone()))),
                ));
                v.push(Expr::Bin(BinOp::Add, b(sub.clone()), b(x.clone())));
                v.push(Expr::Bin(BinOp::And, b(Expr::Not(b(x.clone()))), b(lt)));
                v.push(Expr::Call(Func::Min, vec![sub, y.clone()]));
                // `if exists(X.f) then X.f.g else y` (`typed::if_exists_path`)
                for (s, f, g) in [
                    (0, Field::Send, Field::Bytes),
                    (1, Field::Recv, Field::Bytes),
                    (1, Field::Recv, Field::Time),
                    (0, Field::Enter, Field::Time),
                ] {
                    let p = |g| Expr::Path(s, f, g);
                    let exists = Expr::Call(Func::Exists, vec![p(None)]);
                    v.push(Expr::If(b(exists), b(p(Some(g))), b(y.clone())));
                }
            }
        }
        v
    }

    /// Typed code gives what `Ctx::eval` gives, bit for bit, as a value, as a number and as
    /// a condition, on events of each kind, absent values and values of every other type.
    #[test]
    fn typed_code_agrees_with_eval_on_values_of_every_type() {
        let rs = RuleSet::load(&[]).unwrap();
        let s = Specialised::new(&rs, "scorep/wo");
        let none = |_: u16| 0.0;
        let ctx = s.ctx(&s.spec, &[], &none);
        let mut vals = vec![
            Value::None,
            Value::Num(1.5),
            Value::Num(f64::NAN),
            Value::Num(-2.0),
            Value::Bool(true),
            Value::Bool(false),
            Value::Str(0),
            Value::Region(0),
        ];
        // an event of each kind present on the first locations
        let mut seen = std::collections::HashSet::new();
        for (l, ev) in s.trace.events.iter().enumerate().take(4) {
            for (i, k) in ev.kind.iter().enumerate() {
                if seen.insert(*k) || *k == EventKind::MpiRecv && i % 7 == 0 {
                    vals.push(Value::Event(l as u32, i as u32));
                }
            }
        }
        assert!(seen.contains(&EventKind::MpiSend) && seen.contains(&EventKind::MpiRecv));
        let es = exprs();
        let mut typed = 0;
        for e in &es {
            let code = compile(e);
            typed += matches!(
                code,
                super::super::Code::Num(_) | super::super::Code::Bool(_)
            ) as usize;
            for &a in &vals {
                for &b in &vals {
                    let env = [a, b];
                    let x = ctx.eval(e, &mut env.to_vec());
                    let z = code.run(&ctx, &mut env.to_vec());
                    let n = code.num(&ctx, &mut env.to_vec());
                    let t = code.truth(&ctx, &mut env.to_vec());
                    assert!(
                        same(x, z) && same(Value::Num(x.num()), Value::Num(n)) && x.bool() == t,
                        "{e:?} in {env:?}: {x:?} {z:?} {n:?} {t:?}"
                    );
                }
            }
        }
        // most of them are typed
        assert!(typed * 10 > es.len() * 9, "{typed} of {}", es.len());
    }
}
