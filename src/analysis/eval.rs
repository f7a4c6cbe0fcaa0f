//! Evaluation of compiled rule expressions against the replay state.

use crate::model::{EventKind, Events, Times, Trace};
use crate::replay::{LocView, Replay, NONE};
use crate::rules::compile::{Agg, BinOp, Expr, Field, Func, Value};

mod typed;
pub(crate) use typed::if_exists_path;

/// A per-event pointer column of the replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ptr {
    /// The ENTER of the region instance around an event (`NONE` outside any).
    Enter,
    /// Of an ENTER: its LEAVE (`NONE` if none).
    Exit,
    /// The call path of the region instance around an event (`NO_CNODE` outside any).
    Cnode,
}

/// Event `i` of location `l` in pointer column `p`: the one place the analysis reads the
/// replay's `enterptr`, `exitptr` and `cnode` columns.
#[inline(always)]
pub fn ptr(replay: &Replay, p: Ptr, l: u32, i: u32) -> u32 {
    let st = &replay.locations[l as usize];
    match p {
        Ptr::Enter => st.enterptr(i as usize),
        Ptr::Exit => st.exitptr(i as usize),
        Ptr::Cnode => st.cnode(i as usize),
    }
}

/// The replay's pointer columns of location `l`, taken once for a walk over its events
/// (`ptr`'s reads without the location looked up on each).
#[inline(always)]
pub fn ptrs(replay: &Replay, l: u32) -> LocView<'_> {
    replay.locations[l as usize].view()
}

/// A location's pointer columns and times as slices (`Ctx::cols`): what the severity
/// guards read of any location's events, without the location looked up in the replay
/// and in the trace on each read.
#[derive(Clone, Copy)]
pub(crate) struct LocCols<'a> {
    pub(crate) ptrs: LocView<'a>,
    pub(crate) time: &'a Times,
}

/// Every location's `LocCols`, in location order.
pub(crate) fn loc_cols<'a>(trace: &'a Trace, replay: &'a Replay) -> Vec<LocCols<'a>> {
    (trace.events.iter().zip(&replay.locations))
        .map(|(ev, st)| LocCols {
            ptrs: st.view(),
            time: &ev.time,
        })
        .collect()
}

/// The region of the call around event `i` of location `l`; `None` outside any call.
#[inline]
pub fn call_region(trace: &Trace, replay: &Replay, l: u32, i: u32) -> Option<u32> {
    match ptr(replay, Ptr::Enter, l, i) {
        NONE => None,
        e => Some(trace.events[l as usize].arg[e as usize]),
    }
}

/// One member of a collective (or world-call) instance.
#[derive(Clone, Copy, Debug)]
pub struct Member {
    pub loc: u32,
    pub event: u32,
    pub begin: f64,
    pub end: f64,
    pub sent: f64,
    pub recv: f64,
    pub rank: u32,
    /// Seconds spent executing tasks inside the operation (thread barriers; 0 elsewhere).
    pub tasks: f64,
}

/// Interned strings of each region: name, paradigm, role, class, mode.
pub type RegionStrings = Vec<[u32; 5]>;

/// Everything an expression can read.
pub struct Ctx<'a> {
    pub trace: &'a Trace,
    pub replay: &'a Replay,
    pub regions: &'a RegionStrings,
    pub kind_names: &'a [u32; 256],
    pub regexes: &'a [regex::Regex],
    pub strings: &'a [String],
    pub members: &'a [Member],
    /// Per member, its per-member bindings.
    pub member_vals: &'a [Vec<Value>],
    /// Queued instances of other rules (their environments).
    pub items: &'a [Vec<Value>],
    /// had(rule, event): groups with a positive candidate, per rule: sorted (loc, event).
    pub had: &'a [Vec<(u32, u32)>],
    /// metric(id) at the current (call path, location) (derived rules).
    pub metric: &'a dyn Fn(u16) -> f64,
    /// The values of `Expr::Shared` subexpressions for the current event (`None`: not
    /// evaluated yet); empty where no expression has them.
    pub shared: &'a [std::cell::Cell<Option<Value>>],
    /// The trace's global offset and timer resolution as `f64` (`clock_of`), what
    /// `seconds` converts every tick with: converted once, not per event read.
    pub clock: [f64; 2],
    /// Per location, its `LocCols` (`loc_cols`); empty where the context has none (the
    /// columns are then looked up as `ptr` does).
    pub(crate) cols: &'a [LocCols<'a>],
}

/// `Ctx::clock` of `trace`.
pub fn clock_of(trace: &Trace) -> [f64; 2] {
    [trace.global_offset as f64, trace.timer_resolution as f64]
}

/// `metric()` where no metric is known (0).
fn no_metric(_: u16) -> f64 {
    0.0
}

impl<'a> Ctx<'a> {
    /// A context that reads the trace and its strings alone: no collective members, queued
    /// instances, `had`, metrics or shared values.
    pub fn of_trace(
        trace: &'a Trace,
        replay: &'a Replay,
        regions: &'a RegionStrings,
        kind_names: &'a [u32; 256],
        regexes: &'a [regex::Regex],
        strings: &'a [String],
    ) -> Ctx<'a> {
        Ctx {
            trace,
            replay,
            regions,
            kind_names,
            regexes,
            strings,
            members: &[],
            member_vals: &[],
            items: &[],
            had: &[],
            metric: &no_metric,
            shared: &[],
            clock: clock_of(trace),
            cols: &[],
        }
    }
}

impl Ctx<'_> {
    #[inline(always)]
    pub fn seconds(&self, loc: u32, ev: u32) -> f64 {
        let t = self.trace.events[loc as usize].time.get(ev as usize);
        (t as f64 - self.clock[0]) / self.clock[1]
    }

    fn enter_of(&self, loc: u32, ev: u32) -> Value {
        let e = ptr(self.replay, Ptr::Enter, loc, ev);
        if e == NONE {
            Value::None
        } else {
            Value::Event(loc, e)
        }
    }

    #[inline(never)]
    fn field(&self, v: Value, f: Field) -> Value {
        match (v, f) {
            (Value::Event(l, i), _) => self.event_field(l, i, f),
            (Value::Region(r), _) => {
                let s = &self.regions[r as usize];
                let k = match f {
                    Field::RegionName => 0,
                    Field::RegionParadigm => 1,
                    Field::RegionRole => 2,
                    Field::RegionClass => 3,
                    Field::RegionMode => 4,
                    _ => return Value::None,
                };
                Value::Str(s[k])
            }
            (Value::Member(m), _) => {
                let mb = &self.members[m as usize];
                match f {
                    Field::MemberBegin => Value::Num(mb.begin),
                    Field::MemberEnd => Value::Num(mb.end),
                    Field::MemberSent => Value::Num(mb.sent),
                    Field::MemberRecv => Value::Num(mb.recv),
                    Field::MemberRank => Value::Num(mb.rank as f64),
                    Field::MemberTasks => Value::Num(mb.tasks),
                    Field::MemberEvent => Value::Event(mb.loc, mb.event),
                    Field::MemberLet(s) => self.member_vals[m as usize][s as usize],
                    _ => Value::None,
                }
            }
            (Value::Item(k), Field::ItemSlot(s)) => self.items[k as usize][s as usize],
            _ => Value::None,
        }
    }

    pub(crate) fn event_field(&self, l: u32, i: u32, f: Field) -> Value {
        self.event_field_of(l, i, f)
    }

    /// `event_field`, inlined where `f` is a constant (`compile`'s closures per field):
    /// the match on the field then disappears.
    #[inline(always)]
    fn event_field_of(&self, l: u32, i: u32, f: Field) -> Value {
        self.event_field_in(&self.trace.events[l as usize], l, i, f)
    }

    /// `event_field_of` with location `l`'s events `ev` already looked up (a walk over
    /// them: `plan::memo::Input::bits_at`).
    #[inline(always)]
    pub(crate) fn event_field_in(&self, ev: &Events, l: u32, i: u32, f: Field) -> Value {
        match f {
            Field::Time => Value::Num(self.seconds(l, i)),
            Field::Enter => self.enter_of(l, i),
            Field::Leave => {
                let e = ptr(self.replay, Ptr::Enter, l, i);
                if e == NONE {
                    return Value::None;
                }
                match ptr(self.replay, Ptr::Exit, l, e) {
                    NONE => Value::None,
                    x => Value::Event(l, x),
                }
            }
            Field::Call => {
                call_region(self.trace, self.replay, l, i).map_or(Value::None, Value::Region)
            }
            // the message columns directly (Events::msg would also look up the request)
            Field::Bytes | Field::Tag => {
                if !matches!(
                    ev.kind[i as usize],
                    EventKind::MpiSend
                        | EventKind::MpiRecv
                        | EventKind::MpiIsend
                        | EventKind::MpiIrecv
                ) {
                    return Value::None;
                }
                let k = ev.arg[i as usize] as usize;
                Value::Num(if f == Field::Bytes {
                    ev.msg.bytes.get(k) as f64
                } else {
                    ev.msg.tag[k] as f64
                })
            }
            Field::Rank => self.trace.defs.locations[l as usize]
                .rank
                .map_or(Value::None, |r| Value::Num(r as f64)),
            Field::Kind => Value::Str(self.kind_names[ev.kind[i as usize] as usize]),
            Field::Send | Field::Recv => {
                let k = ev.kind[i as usize];
                let is_send = matches!(k, EventKind::MpiSend | EventKind::MpiIsend);
                let is_recv = matches!(k, EventKind::MpiRecv | EventKind::MpiIrecv);
                if (f == Field::Send && !is_recv) || (f == Field::Recv && !is_send) {
                    return Value::None;
                }
                let p = self.replay.msg_links[l as usize].partner[ev.arg[i as usize] as usize];
                if p.is_some() {
                    Value::Event(p.loc, p.event)
                } else {
                    Value::None
                }
            }
            Field::Cancelled => Value::Bool(
                ev.kind[i as usize] == EventKind::MpiIsend
                    && self.replay.msg_links[l as usize].cancelled(ev.arg[i as usize] as usize),
            ),
            Field::LastRelease => match ev.kind[i as usize] {
                EventKind::ThreadAcquireLock | EventKind::OmpAcquireLock => self
                    .replay
                    .omp
                    .last_release(l, i)
                    .map_or(Value::None, |(rl, ri)| Value::Event(rl, ri)),
                _ => Value::None,
            },
            Field::Sent => ev
                .coll(i as usize)
                .map_or(Value::None, |c| Value::Num(c.sent as f64)),
            Field::Received => ev
                .coll(i as usize)
                .map_or(Value::None, |c| Value::Num(c.received as f64)),
            _ => Value::None,
        }
    }

    /// Evaluate `e` in `env`. Absent values (`None`) propagate; comparisons with them are false.
    ///
    /// Leaves (constants, slots) are read here, inlined at every call site; the rest goes to
    /// `eval_node`, whose rare cases (functions, aggregates) live out of line so that its own
    /// stack frame stays small (it recurses once per node).
    #[inline]
    pub fn eval(&self, e: &Expr, env: &mut [Value]) -> Value {
        match e {
            Expr::Const(v) => *v,
            Expr::Slot(s) => env[*s as usize],
            _ => self.eval_node(e, env),
        }
    }

    fn eval_node(&self, e: &Expr, env: &mut [Value]) -> Value {
        match e {
            Expr::Const(v) => *v,
            Expr::Slot(s) => env[*s as usize],
            Expr::Field(b, f) => {
                let v = self.eval(b, env);
                self.field(v, *f)
            }
            Expr::Not(x) => match self.eval(x, env) {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::None,
            },
            Expr::Neg(x) => match self.eval(x, env) {
                Value::Num(v) => Value::Num(-v),
                _ => Value::None,
            },
            Expr::If(c, a, b) => match self.eval(c, env) {
                Value::Bool(true) => self.eval(a, env),
                Value::Bool(false) => self.eval(b, env),
                _ => Value::None,
            },
            Expr::In(x, list) => {
                let v = self.eval(x, env);
                if v == Value::None {
                    return Value::None;
                }
                Value::Bool(list.contains(&v))
            }
            Expr::Bin(op, a, b) => self.binary(*op, a, b, env),
            Expr::Path(s, f, g) => {
                let v = match env[*s as usize] {
                    Value::Event(l, i) => self.event_field(l, i, *f),
                    v => self.field(v, *f),
                };
                match g {
                    None => v,
                    Some(g) => match v {
                        Value::Event(l, i) => self.event_field(l, i, *g),
                        v => self.field(v, *g),
                    },
                }
            }
            Expr::Table(s, t) => {
                let r = match env[*s as usize] {
                    Value::Event(l, i) => call_region(self.trace, self.replay, l, i),
                    _ => None,
                };
                r.map_or(t[t.len() - 1], |r| t[r as usize])
            }
            Expr::Call(f, args) => self.call(*f, args, env),
            Expr::Shared(_, x) => self.eval(x, env),
            Expr::Agg {
                op,
                slot,
                cond,
                body,
            } => self.aggregate(*op, *slot, cond.as_deref(), body, env),
        }
    }

    #[inline]
    fn binary(&self, op: BinOp, a: &Expr, b: &Expr, env: &mut [Value]) -> Value {
        // short-circuit logic
        if op == BinOp::And || op == BinOp::Or {
            let x = self.eval(a, env);
            match (op, x) {
                (BinOp::And, Value::Bool(false)) => return Value::Bool(false),
                (BinOp::Or, Value::Bool(true)) => return Value::Bool(true),
                (_, Value::Bool(_)) => {}
                _ => return Value::None,
            }
            return match self.eval(b, env) {
                Value::Bool(y) => Value::Bool(y),
                _ => Value::None,
            };
        }
        let x = self.eval(a, env);
        let y = self.eval(b, env);
        apply(op, x, y)
    }

    #[inline(never)]
    fn call(&self, f: Func, args: &[Expr], env: &mut [Value]) -> Value {
        let num = |k: usize, env: &mut [Value]| self.eval(&args[k], env);
        match f {
            Func::Pos => match num(0, env) {
                Value::Num(v) => Value::Num(v.max(0.0)),
                _ => Value::None,
            },
            Func::Abs => match num(0, env) {
                Value::Num(v) => Value::Num(v.abs()),
                _ => Value::None,
            },
            Func::Min | Func::Max => match (num(0, env), num(1, env)) {
                (Value::Num(a), Value::Num(b)) => {
                    Value::Num(if f == Func::Min { a.min(b) } else { a.max(b) })
                }
                _ => Value::None,
            },
            Func::Matches(k) => match num(0, env) {
                Value::Str(s) => Value::Bool(self.regexes[k].is_match(&self.strings[s as usize])),
                _ => Value::None,
            },
            Func::Exists => Value::Bool(num(0, env) != Value::None),
            Func::Had(r) => match num(0, env) {
                Value::Event(l, i) => {
                    Value::Bool(self.had[r as usize].binary_search(&(l, i)).is_ok())
                }
                _ => Value::Bool(false),
            },
            Func::Metric(m) => Value::Num((self.metric)(m)),
        }
    }

    #[inline(never)]
    fn aggregate(
        &self,
        op: Agg,
        slot: u16,
        cond: Option<&Expr>,
        body: &Expr,
        env: &mut [Value],
    ) -> Value {
        let mut best: Option<(f64, u32)> = None;
        let (mut sum, mut count) = (0.0, 0u32);
        let (mut any, mut all) = (false, true);
        for m in 0..self.members.len() as u32 {
            env[slot as usize] = Value::Member(m);
            if let Some(c) = cond {
                if !self.eval(c, env).bool() {
                    continue;
                }
            }
            let v = self.eval(body, env);
            match op {
                Agg::Count => count += v.bool() as u32,
                Agg::Any => any |= v.bool(),
                Agg::All => all &= v.bool(),
                Agg::Sum => sum += v.num(),
                Agg::Max | Agg::ArgMax => {
                    let x = v.num();
                    // ties: the lowest rank (members are in rank order) wins
                    if best.is_none_or(|(b, _)| x > b) {
                        best = Some((x, self.members[m as usize].rank));
                    }
                }
                Agg::Min => {
                    let x = v.num();
                    if best.is_none_or(|(b, _)| x < b) {
                        best = Some((x, self.members[m as usize].rank));
                    }
                }
            }
        }
        match op {
            Agg::Count => Value::Num(count as f64),
            Agg::Any => Value::Bool(any),
            Agg::All => Value::Bool(all),
            Agg::Sum => Value::Num(sum),
            Agg::Max => Value::Num(best.map_or(f64::NEG_INFINITY, |b| b.0)),
            Agg::Min => Value::Num(best.map_or(f64::INFINITY, |b| b.0)),
            Agg::ArgMax => best.map_or(Value::Num(-1.0), |b| Value::Num(b.1 as f64)),
        }
    }
}

/// What `Ctx::event_field` gives for field `f` of every event of kind `k`, where the kind
/// alone decides it (the bytes of an event that is no message, whether a blocking send was
/// cancelled, the kind's name); `None` where it depends on the event. Kept beside
/// `event_field`, whose kind checks it restates; a test holds the two together on every
/// event of the shipped traces.
pub fn kind_field(k: EventKind, f: Field, kind_names: &[u32; 256]) -> Option<Value> {
    use EventKind as K;
    let msg = matches!(k, K::MpiSend | K::MpiRecv | K::MpiIsend | K::MpiIrecv);
    let absent = |applies: bool| (!applies).then_some(Value::None);
    match f {
        Field::Time | Field::Enter | Field::Leave | Field::Call | Field::Rank => None,
        Field::Bytes | Field::Tag => absent(msg),
        Field::Kind => Some(Value::Str(kind_names[k as usize])),
        Field::Send => absent(matches!(k, K::MpiRecv | K::MpiIrecv)),
        Field::Recv => absent(matches!(k, K::MpiSend | K::MpiIsend)),
        Field::Cancelled => (k != K::MpiIsend).then_some(Value::Bool(false)),
        Field::LastRelease => absent(matches!(k, K::ThreadAcquireLock | K::OmpAcquireLock)),
        Field::Sent | Field::Received => absent(matches!(
            k,
            K::MpiCollectiveEnd | K::NonBlockingCollectiveComplete
        )),
        // not fields of events
        Field::RegionName
        | Field::RegionParadigm
        | Field::RegionRole
        | Field::RegionClass
        | Field::RegionMode
        | Field::MemberBegin
        | Field::MemberEnd
        | Field::MemberSent
        | Field::MemberRecv
        | Field::MemberRank
        | Field::MemberTasks
        | Field::MemberEvent
        | Field::MemberLet(_)
        | Field::ItemSlot(_) => Some(Value::None),
    }
}

/// A binary operator other than `&&` and `||` on its two operands' values.
#[inline(always)]
fn apply(op: BinOp, x: Value, y: Value) -> Value {
    if x == Value::None || y == Value::None {
        return match op {
            BinOp::Eq => Value::Bool(x == y),
            BinOp::Ne => Value::Bool(x != y),
            _ => Value::None,
        };
    }
    match op {
        BinOp::Eq => return Value::Bool(x == y),
        BinOp::Ne => return Value::Bool(x != y),
        _ => {}
    }
    let (x, y) = (x.num(), y.num());
    match op {
        BinOp::Add => Value::Num(x + y),
        BinOp::Sub => Value::Num(x - y),
        BinOp::Mul => Value::Num(x * y),
        BinOp::Div => Value::Num(x / y),
        BinOp::Lt => Value::Bool(x < y),
        BinOp::Le => Value::Bool(x <= y),
        BinOp::Gt => Value::Bool(x > y),
        BinOp::Ge => Value::Bool(x >= y),
        _ => Value::None,
    }
}

/// An expression compiled into nested closures (`compile`): what `Ctx::eval` gives, without
/// matching on the expression tree at every node.
type Dyn = Box<dyn Fn(&Ctx, &mut [Value]) -> Value + Send + Sync>;

pub enum Code {
    /// A constant: no call.
    Value(Value),
    /// A slot of the environment: no call.
    Slot(usize),
    /// An expression that gives only numbers (or nothing), as typed code (`typed`).
    Num(typed::Num),
    /// An expression that gives only booleans (or nothing), as typed code.
    Bool(typed::Truth),
    Dyn(Dyn),
}

impl Code {
    /// The value in `env`, as `Ctx::eval` of the expression gives it.
    #[inline(always)]
    pub fn run(&self, c: &Ctx, env: &mut [Value]) -> Value {
        match self {
            Code::Value(v) => *v,
            Code::Slot(s) => env[*s],
            Code::Num(n) => typed::num_value(n.strict(c, env)),
            Code::Bool(t) => typed::bool_value(t.get(c, env)),
            Code::Dyn(f) => f(c, env),
        }
    }

    /// `run(..)` as a tag and its bits, numbers bit for bit (a memo key's word,
    /// `pass::memo`): typed code without its `Value`.
    #[inline(always)]
    pub(crate) fn bits(&self, c: &Ctx, env: &mut [Value]) -> (u64, u64) {
        match self {
            Code::Num(n) => value_bits(n.strict(c, env).map_or(Value::None, Value::Num)),
            Code::Bool(t) => value_bits(t.get(c, env).map_or(Value::None, Value::Bool)),
            _ => value_bits(self.run(c, env)),
        }
    }

    /// `run(..).num()`: the number, NaN for anything else.
    #[inline(always)]
    pub fn num(&self, c: &Ctx, env: &mut [Value]) -> f64 {
        match self {
            Code::Num(n) => n.strict(c, env).unwrap_or(f64::NAN),
            _ => self.run(c, env).num(),
        }
    }

    /// `run(..).bool()`: true only for the boolean true.
    #[inline(always)]
    pub fn truth(&self, c: &Ctx, env: &mut [Value]) -> bool {
        match self {
            Code::Bool(t) => t.get(c, env) == Some(true),
            _ => self.run(c, env).bool(),
        }
    }
}

/// The logic operators, as in `Ctx::binary`.
#[inline(always)]
fn logic(and: bool, x: Value, y: impl FnOnce() -> Value) -> Value {
    match (and, x) {
        (true, Value::Bool(false)) => Value::Bool(false),
        (false, Value::Bool(true)) => Value::Bool(true),
        (_, Value::Bool(_)) => match y() {
            Value::Bool(y) => Value::Bool(y),
            _ => Value::None,
        },
        _ => Value::None,
    }
}

/// `e` as code with the semantics of `Ctx::eval` node for node: typed code where it gives
/// only booleans or only numbers (`typed`), else closures (`compile_fn`).
pub fn compile(e: &Expr) -> Code {
    match e {
        Expr::Const(v) => Code::Value(*v),
        Expr::Slot(s) => Code::Slot(*s as usize),
        _ => typed::typed_bool(e)
            .map(Code::Bool)
            .or_else(|| typed::typed_num(e).map(Code::Num))
            .unwrap_or_else(|| Code::Dyn(compile_fn(e))),
    }
}

/// `compile` of a node as one closure.
fn compile_fn(e: &Expr) -> Dyn {
    match e {
        Expr::Const(v) => {
            let v = *v;
            Box::new(move |_, _| v)
        }
        Expr::Slot(s) => {
            let s = *s as usize;
            Box::new(move |_, env| env[s])
        }
        Expr::Path(s, f, g) => compile_path(e, *s as usize, *f, *g),
        Expr::Shared(j, x) => {
            let (j, x) = (*j as usize, compile_fn(x));
            Box::new(move |c, env| match c.shared.get(j) {
                Some(cell) => match cell.get() {
                    Some(v) => v,
                    None => {
                        let v = x(c, env);
                        cell.set(Some(v));
                        v
                    }
                },
                None => x(c, env),
            })
        }
        Expr::Table(s, t) => {
            let (s, t) = (*s as usize, t.clone());
            Box::new(move |c, env| {
                let r = match env[s] {
                    Value::Event(l, i) => call_region(c.trace, c.replay, l, i),
                    _ => None,
                };
                r.map_or(t[t.len() - 1], |r| t[r as usize])
            })
        }
        Expr::Field(b, f) => {
            let (b, f) = (compile_fn(b), *f);
            Box::new(move |c, env| {
                let v = b(c, env);
                c.field(v, f)
            })
        }
        Expr::Not(x) => {
            let x = compile_fn(x);
            Box::new(move |c, env| match x(c, env) {
                Value::Bool(b) => Value::Bool(!b),
                _ => Value::None,
            })
        }
        Expr::Neg(x) => {
            let x = compile_fn(x);
            Box::new(move |c, env| match x(c, env) {
                Value::Num(v) => Value::Num(-v),
                _ => Value::None,
            })
        }
        Expr::If(k, a, b) => {
            let (k, a, b) = (compile_fn(k), compile_fn(a), compile_fn(b));
            Box::new(move |c, env| match k(c, env) {
                Value::Bool(true) => a(c, env),
                Value::Bool(false) => b(c, env),
                _ => Value::None,
            })
        }
        Expr::In(x, list) => {
            let (x, list) = (compile_fn(x), list.clone());
            Box::new(move |c, env| {
                let v = x(c, env);
                if v == Value::None {
                    return Value::None;
                }
                Value::Bool(list.contains(&v))
            })
        }
        Expr::Bin(op, a, b) => compile_bin(*op, a, b),
        Expr::Call(Func::Exists, args) if args.len() == 1 => {
            let x = compile_fn(&args[0]);
            Box::new(move |c, env| Value::Bool(x(c, env) != Value::None))
        }
        Expr::Call(f @ (Func::Min | Func::Max), args) if args.len() == 2 => {
            let min = *f == Func::Min;
            let pick = move |x: Value, y: Value| match (x, y) {
                (Value::Num(a), Value::Num(b)) => Value::Num(if min { a.min(b) } else { a.max(b) }),
                _ => Value::None,
            };
            match Leaf::pair(&args[0], &args[1]) {
                Some((a, b)) => Box::new(move |c, env| {
                    let x = a.get(c, env);
                    pick(x, b.get(c, env))
                }),
                None => {
                    let (a, b) = (compile_fn(&args[0]), compile_fn(&args[1]));
                    Box::new(move |c, env| {
                        let x = a(c, env);
                        pick(x, b(c, env))
                    })
                }
            }
        }
        _ => {
            let e = e.clone();
            Box::new(move |c, env| c.eval(&e, env))
        }
    }
}

/// Field `f` of value `v`, as a step of a path (`Expr::Path`) reads it.
#[inline(always)]
fn path_step(c: &Ctx, v: Value, f: Field) -> Value {
    match v {
        Value::Event(l, i) => c.event_field_of(l, i, f),
        v => c.field(v, f),
    }
}

/// `X.f.g` of the value `v` of slot `X` as `if exists(X.f) then X.f.g else ..` reads it
/// (`typed`, `g` a numeric field): `None` where `X.f` is absent, else the number (absent
/// for anything else); the fields of the point-to-point rules read in place (a memoised
/// list's input, `plan::memo::Input`).
#[inline(always)]
pub(crate) fn exists_path(c: &Ctx, v: Value, f: Field, g: Field) -> Option<Option<f64>> {
    macro_rules! read {
        ($f:expr, $g:expr) => {
            match path_step(c, v, $f) {
                Value::None => None,
                w => Some(num_step(c, w, $g)),
            }
        };
    }
    match (f, g) {
        (Field::Send, Field::Bytes) => read!(Field::Send, Field::Bytes),
        (Field::Recv, Field::Bytes) => read!(Field::Recv, Field::Bytes),
        _ => read!(f, g),
    }
}

/// The second step of `exists_path` and `exists_path_in`: field `g` of `w` as a number.
#[inline(always)]
fn num_step(c: &Ctx, w: Value, g: Field) -> Option<f64> {
    match path_step(c, w, g) {
        Value::Num(x) => Some(x),
        _ => None,
    }
}

/// `exists_path` of event `i` of location `l`, its events `ev` already looked up (a walk
/// over them, `plan::memo::Input::bits_at`): the first step read in place.
#[inline(always)]
pub(crate) fn exists_path_in(
    c: &Ctx,
    (ev, l, i): (&Events, u32, u32),
    f: Field,
    g: Field,
) -> Option<Option<f64>> {
    macro_rules! read {
        ($f:expr, $g:expr) => {
            match c.event_field_in(ev, l, i, $f) {
                Value::None => None,
                w => Some(num_step(c, w, $g)),
            }
        };
    }
    match (f, g) {
        (Field::Send, Field::Bytes) => read!(Field::Send, Field::Bytes),
        (Field::Recv, Field::Bytes) => read!(Field::Recv, Field::Bytes),
        _ => read!(f, g),
    }
}

/// `X.enter.time` of the value `v` of slot `X`: an event's read through the replay's
/// pointer column, anything else field by field as `Ctx::eval` does.
#[inline(always)]
fn enter_time(c: &Ctx, v: Value) -> Value {
    match v {
        Value::Event(l, i) => match ptr(c.replay, Ptr::Enter, l, i) {
            NONE => Value::None,
            e => Value::Num(c.seconds(l, e)),
        },
        v => {
            let v = c.field(v, Field::Enter);
            c.field(v, Field::Time)
        }
    }
}

/// `X.leave.time` of the value `v` of slot `X`, as `enter_time`.
#[inline(always)]
fn leave_time(c: &Ctx, v: Value) -> Value {
    match v {
        Value::Event(l, i) => match ptr(c.replay, Ptr::Enter, l, i) {
            NONE => Value::None,
            e => match ptr(c.replay, Ptr::Exit, l, e) {
                NONE => Value::None,
                x => Value::Num(c.seconds(l, x)),
            },
        },
        v => {
            let v = c.field(v, Field::Leave);
            c.field(v, Field::Time)
        }
    }
}

/// A path of fields from slot `s` (`e`): the most frequent ones read the columns directly,
/// as `event_field` does.
fn compile_path(e: &Expr, s: usize, f: Field, g: Option<Field>) -> Dyn {
    match (f, g) {
        (Field::Time, None) => Box::new(move |c, env| match env[s] {
            Value::Event(l, i) => Value::Num(c.seconds(l, i)),
            v => c.field(v, Field::Time),
        }),
        // a queued instance's event's time (`B.S.time` in a queue's `take`)
        (Field::ItemSlot(k), Some(Field::Time)) => {
            let k = k as usize;
            let e = e.clone();
            Box::new(move |c, env| match env[s] {
                Value::Item(j) => match c.items[j as usize][k] {
                    Value::Event(l, i) => Value::Num(c.seconds(l, i)),
                    v => c.field(v, Field::Time),
                },
                _ => c.eval(&e, env),
            })
        }
        (Field::Enter, Some(Field::Time)) => Box::new(move |c, env| enter_time(c, env[s])),
        (Field::Leave, Some(Field::Time)) => Box::new(move |c, env| leave_time(c, env[s])),
        // the fields of the point-to-point rules get a closure each, their reading inlined
        (f, None) => compile_field(s, f),
        (f, Some(g)) => compile_fields(s, f, g),
    }
}

/// Field `f` of the event in slot `s`.
fn compile_field(s: usize, f: Field) -> Dyn {
    macro_rules! field {
        ($f:expr) => {
            Box::new(move |c: &Ctx, env: &mut [Value]| match env[s] {
                Value::Event(l, i) => c.event_field_of(l, i, $f),
                v => c.field(v, $f),
            }) as Dyn
        };
    }
    match f {
        Field::Bytes => field!(Field::Bytes),
        Field::Tag => field!(Field::Tag),
        Field::Send => field!(Field::Send),
        Field::Recv => field!(Field::Recv),
        Field::Cancelled => field!(Field::Cancelled),
        Field::Enter => field!(Field::Enter),
        _ => Box::new(move |c, env| match env[s] {
            Value::Event(l, i) => c.event_field(l, i, f),
            v => c.field(v, f),
        }),
    }
}

/// Field `g` of field `f` of the event in slot `s`.
fn compile_fields(s: usize, f: Field, g: Field) -> Dyn {
    macro_rules! fields {
        ($f:expr, $g:expr) => {
            Box::new(move |c: &Ctx, env: &mut [Value]| {
                let v = match env[s] {
                    Value::Event(l, i) => c.event_field_of(l, i, $f),
                    v => c.field(v, $f),
                };
                match v {
                    Value::Event(l, i) => c.event_field_of(l, i, $g),
                    v => c.field(v, $g),
                }
            }) as Dyn
        };
    }
    match (f, g) {
        (Field::Send, Field::Bytes) => fields!(Field::Send, Field::Bytes),
        (Field::Recv, Field::Bytes) => fields!(Field::Recv, Field::Bytes),
        _ => Box::new(move |c, env| {
            let v = match env[s] {
                Value::Event(l, i) => c.event_field(l, i, f),
                v => c.field(v, f),
            };
            match v {
                Value::Event(l, i) => c.event_field(l, i, g),
                v => c.field(v, g),
            }
        }),
    }
}

/// An operand read in place by the closure of the operator around it (`bin!`, `min`,
/// `max`), without a closure of its own: a constant, a slot, or the time of the event in a
/// slot, of its call's ENTER or of its call's LEAVE (as `compile_path` reads them).
#[derive(Clone, Copy)]
enum Leaf {
    Const(Value),
    Slot(usize),
    Time(usize),
    EnterTime(usize),
    LeaveTime(usize),
}

impl Leaf {
    fn of(e: &Expr) -> Option<Leaf> {
        match e {
            Expr::Const(v) => Some(Leaf::Const(*v)),
            Expr::Slot(s) => Some(Leaf::Slot(*s as usize)),
            Expr::Path(s, Field::Time, None) => Some(Leaf::Time(*s as usize)),
            Expr::Path(s, Field::Enter, Some(Field::Time)) => Some(Leaf::EnterTime(*s as usize)),
            Expr::Path(s, Field::Leave, Some(Field::Time)) => Some(Leaf::LeaveTime(*s as usize)),
            _ => None,
        }
    }

    /// Both operands as leaves, unless both are constants (folded before, and `bin!`'s
    /// constant cases).
    fn pair(a: &Expr, b: &Expr) -> Option<(Leaf, Leaf)> {
        match (Leaf::of(a)?, Leaf::of(b)?) {
            (Leaf::Const(_), Leaf::Const(_)) => None,
            p => Some(p),
        }
    }

    /// The value, as `Ctx::eval` of the expression gives it.
    #[inline(always)]
    fn get(self, c: &Ctx, env: &[Value]) -> Value {
        match self {
            Leaf::Const(v) => v,
            Leaf::Slot(s) => env[s],
            Leaf::Time(s) => match env[s] {
                Value::Event(l, i) => Value::Num(c.seconds(l, i)),
                v => c.field(v, Field::Time),
            },
            Leaf::EnterTime(s) => enter_time(c, env[s]),
            Leaf::LeaveTime(s) => leave_time(c, env[s]),
        }
    }
}

/// The closures of binary operator `$op` on `$a` and `$b`: one for two leaves (`Leaf`), one
/// for a constant left operand, one for a constant right operand, one for two computed
/// operands.
macro_rules! bin {
    ($op:expr, $a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        if let Some((x, y)) = Leaf::pair(a, b) {
            return Box::new(move |c: &Ctx, env: &mut [Value]| {
                let x = x.get(c, env);
                apply($op, x, y.get(c, env))
            });
        }
        match (a, b) {
            (Expr::Const(x), y) => {
                let (x, y) = (*x, compile_fn(y));
                Box::new(move |c: &Ctx, env: &mut [Value]| apply($op, x, y(c, env))) as Dyn
            }
            (x, Expr::Const(y)) => {
                let (x, y) = (compile_fn(x), *y);
                Box::new(move |c: &Ctx, env: &mut [Value]| apply($op, x(c, env), y))
            }
            (x, y) => {
                let (x, y) = (compile_fn(x), compile_fn(y));
                Box::new(move |c: &Ctx, env: &mut [Value]| {
                    let x = x(c, env);
                    apply($op, x, y(c, env))
                })
            }
        }
    }};
}

/// `compile_fn` of a binary operator: `bin!` gives each operator its closures, the
/// operator a constant in them.
fn compile_bin(op: BinOp, a: &Expr, b: &Expr) -> Dyn {
    match op {
        BinOp::And | BinOp::Or => {
            let (and, a, b) = (op == BinOp::And, compile_fn(a), compile_fn(b));
            Box::new(move |c, env| {
                let x = a(c, env);
                logic(and, x, || b(c, env))
            })
        }
        BinOp::Add => bin!(BinOp::Add, a, b),
        BinOp::Sub => bin!(BinOp::Sub, a, b),
        BinOp::Mul => bin!(BinOp::Mul, a, b),
        BinOp::Div => bin!(BinOp::Div, a, b),
        BinOp::Lt => bin!(BinOp::Lt, a, b),
        BinOp::Le => bin!(BinOp::Le, a, b),
        BinOp::Gt => bin!(BinOp::Gt, a, b),
        BinOp::Ge => bin!(BinOp::Ge, a, b),
        BinOp::Eq => bin!(BinOp::Eq, a, b),
        BinOp::Ne => bin!(BinOp::Ne, a, b),
    }
}

/// `v` as a tag and its bits (numbers bit for bit): a memo key's words (`Code::bits`).
#[inline(always)]
pub(crate) fn value_bits(v: Value) -> (u64, u64) {
    match v {
        Value::Num(x) => (0, x.to_bits()),
        Value::Bool(b) => (1, b as u64),
        Value::Str(s) => (2, s as u64),
        Value::Event(l, i) => (3, (l as u64) << 32 | i as u64),
        Value::Region(r) => (4, r as u64),
        Value::Member(m) => (5, m as u64),
        Value::Item(i) => (6, i as u64),
        Value::None => (7, 0),
    }
}
