//! Runs the compiled rules over the replay and fills the metric × call path × location cube
//! (patterns.md §4, §5.5), then the sums and derived metrics (§1), in dependency order.
//! The engine knows triggers (receive, send, collective, ...), not patterns.

pub mod critical_path;
pub mod eval;
pub mod matrices;
pub mod overheads;
pub mod phases;
pub mod pipeline;
pub mod scores;

use crate::model::{classify, EventKind, Paradigm, Trace};
use crate::replay::calltree::NO_CNODE;
use crate::replay::{Replay, NONE};
use crate::rules::compile::{BinOp, Expr, Field, Func, Interner, Value};
use crate::rules::{Let, Rule, RuleSet, Trigger};
use eval::{compile, ptr, Code, Ctx, Member, Ptr, RegionStrings};
use rayon::prelude::*;
use std::collections::{HashMap, VecDeque};

/// One value a rule instance adds to the cube.
#[derive(Clone, Copy, Debug)]
struct Contribution {
    rule: u16,
    cnode: u32,
    loc: u32,
    /// The event of `loc` the value is attributed to (the rule's `at`); NONE for class time.
    event: u32,
    value: f64,
    /// Touched by a clock-condition violation (§6.2).
    cc: bool,
    /// From a reconstructed collective instance (§5.4, §6.2 `sev_rec`).
    rec: bool,
}

/// What `analyse` adds to the cube (`add_found`).
#[derive(Clone, Copy)]
enum Found<'a> {
    One(&'a Contribution),
    /// A pass's own (rule, call path) cell on the given location.
    Own(&'a Cell, u32),
    /// The clock-touched share of one instance of (rule, call path).
    Cc(u16, u32, f64),
}

/// Per finding (metric, call path): instances and their clock-touched share (§6.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FindingStats {
    pub n: u64,
    pub sev_cc: f64,
    /// Severity from reconstructed collective instances (§6.2).
    pub sev_rec: f64,
}

/// How many of its worst instances each finding keeps.
pub const WORST_K: usize = 5;

/// One instance of a finding: where, when (the tick of the event its value is attributed
/// to, the rule's `at`) and how much (in the metric's unit).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Instance {
    pub loc: u32,
    pub event: u32,
    pub time: u64,
    pub value: f64,
}

impl Instance {
    /// Worse first: larger value, then lower location, earlier time, lower event index — a
    /// total order, so the kept instances do not depend on the order they were offered in.
    #[inline]
    fn worse_than(&self, o: &Instance) -> bool {
        match self.value.total_cmp(&o.value) {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => {
                (self.loc, self.time, self.event) < (o.loc, o.time, o.event)
            }
        }
    }
}

/// The `WORST_K` worst instances of one finding, worst first (a bounded insertion list).
#[derive(Clone, Copy, Debug, Default)]
pub struct Worst {
    n: u8,
    items: [Instance; WORST_K],
}

impl Worst {
    #[inline]
    pub fn offer(&mut self, x: Instance) {
        if self.n as usize == WORST_K && !x.worse_than(&self.items[WORST_K - 1]) {
            return;
        }
        self.insert(x);
    }

    /// `offer` of an instance that is kept.
    #[inline(never)]
    fn insert(&mut self, x: Instance) {
        let n = self.n as usize;
        // shift the better-ranked ones down until x's place
        let mut i = n.min(WORST_K - 1);
        while i > 0 && x.worse_than(&self.items[i - 1]) {
            self.items[i] = self.items[i - 1];
            i -= 1;
        }
        self.items[i] = x;
        if n < WORST_K {
            self.n += 1;
        }
    }

    pub fn instances(&self) -> &[Instance] {
        &self.items[..self.n as usize]
    }
}

/// Clock-condition violations (patterns.md §7.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Violations {
    /// Messages whose send is later than their receive.
    pub p2p: u64,
    /// (instance, member) pairs where the member ended before the reference begin time.
    pub collective: u64,
    /// The largest point-to-point violation in seconds.
    pub max_p2p_s: f64,
    /// Locations touched by any violation.
    pub locations: u64,
}

/// The analysed trace: every metric's values per call path and location.
pub struct Analysis {
    /// Metric ids in report order (depth-first over the metric tree), omitted ones left out.
    pub order: Vec<usize>,
    /// `values[rule][cnode * nloc + loc]` (exclusive in call paths, inclusive in metrics).
    pub values: Vec<Vec<f64>>,
    pub stats: Vec<HashMap<u32, FindingStats>>,
    /// Per rule, per call path: the worst instances (only metrics computed by instances).
    pub worst: Vec<HashMap<u32, Worst>>,
    pub violations: Violations,
    pub nloc: usize,
    pub ncnode: usize,
    pub rules: RuleSet,
}

impl Analysis {
    #[inline]
    pub fn value(&self, rule: usize, cnode: u32, loc: u32) -> f64 {
        self.values[rule][cnode as usize * self.nloc + loc as usize]
    }
}

struct Setup<'a> {
    trace: &'a Trace,
    replay: &'a Replay,
    rs: &'a RuleSet,
    strings: Vec<String>,
    regions: RegionStrings,
    kind_names: [u32; 256],
    /// Rules fed by each rule's instances (`on = "rule"`), and queue consumers.
    fed: Vec<Vec<usize>>,
    queued: Vec<Vec<usize>>,
    /// Per rule: its expressions compiled, for the event, receive, send and rule passes.
    code: Vec<RuleCode>,
    /// Per rule: whether its instances feed rules or queues (`fed`, `queued`).
    feeds: Vec<bool>,
}

/// A rule's instance-level expressions compiled (`eval::compile`).
struct RuleCode {
    /// Instance-level lets (slot, value) in order.
    lets: Vec<(u16, Code)>,
    when: Option<Code>,
    severity: Option<Code>,
    at: Option<Code>,
    violation: Option<Code>,
    /// `group.by`, `group.when`.
    group: Option<(Code, Option<Code>)>,
    /// `queue.take`, its parts that do not read the queued instance (`hoist`) replaced by
    /// slots from `rule.slots` on.
    take: Option<Code>,
    /// Those parts: (slot, code), evaluated once per trigger before the queued instances
    /// are tried.
    hoisted: Vec<(u16, Code)>,
    /// The `take` as a bound on a key of the queued instance alone, when it has that form.
    bound: Option<TakeBound>,
}

/// A queue's `take` of the form `key OP bound` (after `hoist`; either side first in the
/// file), where `key` reads nothing but the queued instance and `bound` nothing of it, and
/// OP is `<`, `<=`, `>` or `>=`. Each instance's key is computed once, when it is queued,
/// and the queue keeps its extreme key: when even that fails the bound, no instance can be
/// taken and the queue is not walked (`Setup::consume`). An absent key, an absent bound
/// and NaN never compare true, as in `eval::apply`.
struct TakeBound {
    key: Code,
    op: BinOp,
    bound: Code,
}

impl TakeBound {
    /// From a hoisted `take` in which slot `q` holds the queued instance (`slots`: every
    /// slot the take may read).
    fn new(take: &Expr, q: u16, slots: u16) -> Option<TakeBound> {
        let Expr::Bin(op, a, b) = take else {
            return None;
        };
        let flipped = match op {
            BinOp::Lt => BinOp::Gt,
            BinOp::Le => BinOp::Ge,
            BinOp::Gt => BinOp::Lt,
            BinOp::Ge => BinOp::Le,
            _ => return None,
        };
        let only_item =
            |e: &Expr| reads_slot(e, q) && (0..slots).all(|s| s == q || !reads_slot(e, s));
        if only_item(a) && !reads_slot(b, q) {
            Some(TakeBound {
                key: compile(a),
                op: *op,
                bound: compile(b),
            })
        } else if only_item(b) && !reads_slot(a, q) {
            Some(TakeBound {
                key: compile(b),
                op: flipped,
                bound: compile(a),
            })
        } else {
            None
        }
    }

    /// The key of the instance `ctx.items[0]` (NaN: absent or not a number); `q`: the
    /// consumer's queue slot.
    fn key_of(&self, ctx: &Ctx, q: u16) -> f64 {
        // the key reads slot `q` alone (`new`): an environment up to it, on the stack
        let mut small = [Value::None; 16];
        let mut big = Vec::new();
        let e = match small.get_mut(..=q as usize) {
            Some(e) => e,
            None => {
                big.resize(q as usize + 1, Value::None);
                &mut big[..]
            }
        };
        e[q as usize] = Value::Item(0);
        match self.key.run(ctx, e) {
            Value::None => f64::NAN,
            v => v.num(),
        }
    }

    /// Whether the extreme key (largest for `>`/`>=`, smallest for `<`/`<=`) is kept.
    fn wants_max(&self) -> bool {
        matches!(self.op, BinOp::Gt | BinOp::Ge)
    }

    /// Whether an instance with key `k` (NaN: absent) passes bound `b`.
    fn passes(&self, k: f64, b: f64) -> bool {
        match self.op {
            BinOp::Gt => k > b,
            BinOp::Ge => k >= b,
            BinOp::Lt => k < b,
            _ => k <= b,
        }
    }
}

/// Whether `e` reads slot `q` (or the members of a collective instance, whose bindings
/// change with the member).
fn reads_slot(e: &Expr, q: u16) -> bool {
    match e {
        Expr::Const(_) => false,
        Expr::Slot(s) | Expr::Path(s, ..) | Expr::Table(s, _) => *s == q,
        Expr::Agg { .. } => true,
        Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => reads_slot(a, q),
        Expr::Call(_, args) => args.iter().any(|a| reads_slot(a, q)),
        Expr::Bin(_, a, b) => reads_slot(a, q) || reads_slot(b, q),
        Expr::If(a, b, c) => reads_slot(a, q) || reads_slot(b, q) || reads_slot(c, q),
        Expr::Shared(_, a) => reads_slot(a, q),
    }
}

/// `e` with every largest subexpression that does not read slot `q` (and is more than a
/// constant or a slot) replaced by a new slot, numbered from `next`; the replaced
/// subexpressions are appended to `out` with their slots. Expressions have no side effects
/// and never fail, so evaluating such a part once, before `e`'s other parts and even where
/// `e` would not have reached it (`&&`, `if`), gives the same value of `e`.
fn hoist(e: &Expr, q: u16, next: &mut u16, out: &mut Vec<(u16, Expr)>) -> Expr {
    if !reads_slot(e, q) {
        if matches!(e, Expr::Const(_) | Expr::Slot(_)) {
            return e.clone();
        }
        let s = *next;
        *next += 1;
        out.push((s, e.clone()));
        return Expr::Slot(s);
    }
    let mut h = |a: &Expr| Box::new(hoist(a, q, next, out));
    match e {
        Expr::Field(a, f) => Expr::Field(h(a), *f),
        Expr::Not(a) => Expr::Not(h(a)),
        Expr::Neg(a) => Expr::Neg(h(a)),
        Expr::In(a, v) => Expr::In(h(a), v.clone()),
        Expr::Bin(op, a, b) => {
            let a = h(a);
            Expr::Bin(*op, a, h(b))
        }
        Expr::If(a, b, c) => {
            let a = h(a);
            let b = h(b);
            Expr::If(a, b, h(c))
        }
        Expr::Call(f, args) => {
            Expr::Call(*f, args.iter().map(|a| hoist(a, q, next, out)).collect())
        }
        _ => e.clone(),
    }
}

/// Whether an instance of rule `k` may hold queued instances (`Value::Item`, indices into
/// the consumer's taken list): `k` consumes a queue, or is fed by a rule that may.
fn carries_items(rules: &[Rule], k: usize) -> bool {
    let r = &rules[k];
    r.queue.is_some()
        || (r.on == Trigger::Rule && r.of.is_some_and(|f| carries_items(rules, f as usize)))
}

impl RuleCode {
    /// Rule `r` of `rules`, compiled.
    fn new(r: &Rule, rules: &[Rule]) -> RuleCode {
        let o = |e: &Option<Expr>| e.as_ref().map(compile);
        let lets = r
            .lets
            .iter()
            .filter_map(|l| match l {
                Let::Inst(s, e) => Some((*s, compile(e))),
                Let::Member { .. } => None,
            })
            .collect();
        let mut hoisted = Vec::new();
        let mut bound = None;
        let take = r.queue.as_ref().map(|q| {
            let mut next = r.slots;
            let take = hoist(&q.take, q.slot, &mut next, &mut hoisted);
            // a key is computed with its own instance alone: not through queued instances
            // that instance holds (they index the list of taken instances)
            if !carries_items(rules, q.of as usize) {
                bound = TakeBound::new(&take, q.slot, next);
            }
            compile(&take)
        });
        RuleCode {
            lets,
            when: o(&r.when),
            severity: o(&r.severity),
            at: o(&r.at),
            violation: o(&r.violation),
            group: r.group.as_ref().map(|g| (compile(&g.by), o(&g.when))),
            take,
            hoisted: hoisted.iter().map(|(s, e)| (*s, compile(e))).collect(),
            bound,
        }
    }
}

/// A trigger slot's call region not looked up yet (`Setup::prefiltered_when`).
const UNSEEN: u32 = u32::MAX;
/// A trigger slot with no enclosing call (or no event) in that cache.
const NO_CALL: u32 = u32::MAX - 1;

/// The parts of a rule's `when` that read nothing but the region of the call around a
/// trigger event (`E.call.paradigm == 'mpi'`, `R.call.class in [...]`), evaluated once per
/// region before the replay is walked, and the rest of the `when`. `when` holds exactly
/// when every one of its `&&` operands does, so the rule fires iff every check passes and
/// the rest holds; expressions have no side effects, so evaluating fewer changes nothing.
struct Prefilter {
    /// (trigger slot, per region index — and one more for "no enclosing call" — the value
    /// of the operands that read that slot's call)
    checks: Vec<(u16, Vec<bool>)>,
    rest_code: Option<Code>,
}

/// The slots the event, receive or send pass binds before it tries a rule (`E`; `R`, `S`;
/// `S`, `R`, `C`, `Q`), the same for every rule tried on one event; `None` for the other
/// triggers.
fn trigger_slots(t: Trigger) -> Option<u16> {
    match t {
        Trigger::Event => Some(1),
        Trigger::Receive => Some(2),
        Trigger::Send => Some(4),
        _ => None,
    }
}

/// Whether rule `r` of the event, receive or send pass is tried on events of `kind`: an
/// event rule on the kinds it lists, a receive rule on receives, a send rule on sends.
fn fires_on(r: &Rule, kind: EventKind) -> bool {
    match r.on {
        Trigger::Receive => matches!(kind, EventKind::MpiRecv | EventKind::MpiIrecv),
        Trigger::Send => matches!(kind, EventKind::MpiSend | EventKind::MpiIsend),
        _ => r.kinds.contains(&kind),
    }
}

/// Rule `r`'s prefilter, for a rule of the event, receive or send pass whose `when` has
/// operands that read only a trigger event's call region.
fn prefilter_of(r: &Rule) -> Option<Prefilter> {
    let bound = trigger_slots(r.on)?;
    if r.queue.is_some() {
        return None;
    }
    // the `&&` operands that read only a trigger event's call region are tables
    // (`specialise`): they become the checks
    let mut parts = Vec::new();
    conjuncts(r.when.as_ref()?, &mut parts);
    let mut checks: Vec<(u16, Vec<bool>)> = Vec::new();
    let mut rest: Option<Expr> = None;
    for c in parts {
        match c {
            Expr::Table(s, t) if s < bound => {
                let mask = t.iter().map(|v| v.bool());
                match checks.iter_mut().find(|(u, _)| *u == s) {
                    Some((_, m)) => m.iter_mut().zip(mask).for_each(|(a, b)| *a &= b),
                    None => checks.push((s, mask.collect())),
                }
            }
            c => {
                rest = Some(match rest {
                    None => c,
                    Some(x) => Expr::Bin(BinOp::And, Box::new(x), Box::new(c)),
                })
            }
        }
    }
    if checks.is_empty() {
        return None;
    }
    Some(Prefilter {
        checks,
        rest_code: rest.as_ref().map(compile),
    })
}

/// `&&` operands of `e`, left to right.
fn conjuncts(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Bin(BinOp::And, a, b) => {
            conjuncts(a, out);
            conjuncts(b, out);
        }
        _ => out.push(e.clone()),
    }
}

fn is_region_field(f: Field) -> bool {
    matches!(
        f,
        Field::RegionName
            | Field::RegionParadigm
            | Field::RegionRole
            | Field::RegionClass
            | Field::RegionMode
    )
}

/// Whether `e` reads nothing but region fields of `X.call`, X the event in slot `s`.
fn reads_only_call(e: &Expr, s: u16) -> bool {
    match e {
        Expr::Const(_) => true,
        Expr::Field(b, f) => {
            is_region_field(*f)
                && matches!(&**b, Expr::Field(x, Field::Call) if matches!(**x, Expr::Slot(t) if t == s))
        }
        Expr::Not(x) | Expr::Neg(x) | Expr::In(x, _) => reads_only_call(x, s),
        Expr::Bin(_, a, b) => reads_only_call(a, s) && reads_only_call(b, s),
        Expr::If(c, a, b) => {
            reads_only_call(c, s) && reads_only_call(a, s) && reads_only_call(b, s)
        }
        Expr::Call(f, args) if is_pure(*f) => args.iter().all(|a| reads_only_call(a, s)),
        _ => false,
    }
}

/// `e` (for which `reads_only_call(e, s)` holds) with `X.call.f` read as `X.f`: evaluated
/// with the region (or `None`) in slot `s`, it gives what `e` gives for an event in a call
/// of that region (or outside any call).
fn on_region(e: &Expr) -> Expr {
    let b = |x: &Expr| Box::new(on_region(x));
    match e {
        Expr::Field(x, f) => match &**x {
            Expr::Field(y, Field::Call) => Expr::Field(y.clone(), *f),
            _ => Expr::Field(b(x), *f),
        },
        Expr::Not(x) => Expr::Not(b(x)),
        Expr::Neg(x) => Expr::Neg(b(x)),
        Expr::In(x, l) => Expr::In(b(x), l.clone()),
        Expr::Bin(op, x, y) => Expr::Bin(*op, b(x), b(y)),
        Expr::If(c, x, y) => Expr::If(b(c), b(x), b(y)),
        Expr::Call(f, args) => Expr::Call(*f, args.iter().map(on_region).collect()),
        _ => e.clone(),
    }
}

/// Slots `s` whose call `s.call` `e` reads (with repeats).
fn call_slots(e: &Expr, out: &mut Vec<u16>) {
    match e {
        Expr::Field(b, Field::Call) if matches!(**b, Expr::Slot(_)) => {
            if let Expr::Slot(t) = **b {
                out.push(t);
            }
        }
        Expr::Field(x, _) | Expr::Not(x) | Expr::Neg(x) | Expr::In(x, _) => call_slots(x, out),
        Expr::Bin(_, a, b) => {
            call_slots(a, out);
            call_slots(b, out);
        }
        Expr::If(c, a, b) => {
            call_slots(c, out);
            call_slots(a, out);
            call_slots(b, out);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| call_slots(a, out)),
        Expr::Agg { cond, body, .. } => {
            if let Some(c) = cond {
                call_slots(c, out);
            }
            call_slots(body, out);
        }
        _ => {}
    }
}

/// `e` specialised for one trace (partial evaluation; the value of every expression in every
/// environment stays the same, expressions having no side effects):
/// * every largest subexpression that reads nothing but the region of the call around one
///   slot's event (`X.call.class == 'P2P_WAIT_MULTI'`) becomes a `Table` of its value per
///   region, made by `table` (or a constant when every region gives the same value);
/// * every subexpression that reads nothing at all is evaluated once (`konst`);
/// * field chains on slots (`R.enter.time`) become one `Path` node.
fn specialise(
    e: &Expr,
    table: &dyn Fn(u16, &Expr) -> Box<[Value]>,
    konst: &dyn Fn(&Expr) -> Value,
) -> Expr {
    if !matches!(
        e,
        Expr::Const(_) | Expr::Slot(_) | Expr::Path(..) | Expr::Table(..)
    ) {
        let mut slots = Vec::new();
        call_slots(e, &mut slots);
        slots.sort_unstable();
        slots.dedup();
        match slots[..] {
            [] if reads_only_call(e, u16::MAX) => return Expr::Const(konst(e)),
            [s] if reads_only_call(e, s) => {
                let t = table(s, &on_region(e));
                return if t.iter().all(|v| *v == t[0]) {
                    Expr::Const(t[0])
                } else {
                    Expr::Table(s, t)
                };
            }
            _ => {}
        }
    }
    let b = |x: &Expr| Box::new(specialise(x, table, konst));
    match e {
        Expr::Field(x, f) => match specialise(x, table, konst) {
            Expr::Slot(s) => Expr::Path(s, *f, None),
            Expr::Path(s, g, None) => Expr::Path(s, g, Some(*f)),
            y => Expr::Field(Box::new(y), *f),
        },
        Expr::Not(x) => Expr::Not(b(x)),
        Expr::Neg(x) => Expr::Neg(b(x)),
        Expr::In(x, l) => Expr::In(b(x), l.clone()),
        Expr::Bin(op, x, y) => Expr::Bin(*op, b(x), b(y)),
        Expr::If(c, x, y) => Expr::If(b(c), b(x), b(y)),
        Expr::Call(f, args) => Expr::Call(
            *f,
            args.iter().map(|a| specialise(a, table, konst)).collect(),
        ),
        Expr::Agg { .. } => with_operands(e, &|x| specialise(x, table, konst)),
        _ => e.clone(),
    }
}

/// Aggregate `e` with its condition and body rewritten by `f` (any other node as it is).
fn with_operands(e: &Expr, f: &dyn Fn(&Expr) -> Expr) -> Expr {
    match e {
        Expr::Agg {
            op,
            slot,
            cond,
            body,
        } => Expr::Agg {
            op: *op,
            slot: *slot,
            cond: cond.as_deref().map(|c| Box::new(f(c))),
            body: Box::new(f(body)),
        },
        _ => e.clone(),
    }
}

/// Every expression of `r` specialised (`specialise`).
fn specialise_rule(r: &Rule, f: &dyn Fn(&Expr) -> Expr) -> Rule {
    let o = |e: &Option<Expr>| e.as_ref().map(f);
    let mut r2 = r.clone();
    for l in &mut r2.lets {
        match l {
            Let::Inst(_, e) | Let::Member { expr: e, .. } => *e = f(e),
        }
    }
    r2.when = o(&r.when);
    r2.for_members = o(&r.for_members);
    r2.severity = o(&r.severity);
    r2.at = o(&r.at);
    r2.violation = o(&r.violation);
    r2.value = o(&r.value);
    if let Some(g) = &mut r2.group {
        g.by = f(&g.by);
        g.when = g.when.as_ref().map(f);
    }
    if let Some(q) = &mut r2.queue {
        q.take = f(&q.take);
    }
    r2
}

/// Whether `f` is a function of its arguments alone (`konst` may evaluate it).
fn is_pure(f: Func) -> bool {
    matches!(
        f,
        Func::Pos | Func::Min | Func::Max | Func::Abs | Func::Matches(_) | Func::Exists
    )
}

/// `e` (specialised, `specialise`) for trigger events of known kinds, partial evaluation
/// again (the value in every environment whose slots hold events of those kinds stays the
/// same): a field of a slot's event that the kind decides (`field`, from
/// `eval::kind_field`: the bytes of an event that is no message, whether a blocking send
/// was cancelled) becomes its constant; then every node that reads nothing but constants
/// is evaluated (`konst`), and `&&`, `||` and `if` with a constant operand are reduced as
/// `eval` would reduce them (an operand of `&&`/`||` is a boolean or absent: the type
/// check).
fn fold_kinds(
    e: &Expr,
    field: &dyn Fn(u16, Field) -> Option<Value>,
    konst: &dyn Fn(&Expr) -> Value,
) -> Expr {
    let f = |x: &Expr| fold_kinds(x, field, konst);
    let k = |x: &Expr| match x {
        Expr::Const(v) => Some(*v),
        _ => None,
    };
    // a node whose operands are constants is one
    let done = |x: Expr| -> Expr {
        let all = match &x {
            Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => k(a).is_some(),
            Expr::Bin(_, a, b) => k(a).is_some() && k(b).is_some(),
            Expr::Call(g, args) => is_pure(*g) && args.iter().all(|a| k(a).is_some()),
            _ => false,
        };
        if all {
            Expr::Const(konst(&x))
        } else {
            x
        }
    };
    match e {
        Expr::Path(s, g, h) => match field(*s, *g) {
            None => e.clone(),
            Some(v) => match h {
                None => Expr::Const(v),
                Some(h) => done(Expr::Field(Box::new(Expr::Const(v)), *h)),
            },
        },
        Expr::Field(x, g) => done(Expr::Field(Box::new(f(x)), *g)),
        Expr::Not(x) => done(Expr::Not(Box::new(f(x)))),
        Expr::Neg(x) => done(Expr::Neg(Box::new(f(x)))),
        Expr::In(x, l) => done(Expr::In(Box::new(f(x)), l.clone())),
        Expr::Bin(op @ (BinOp::And | BinOp::Or), a, b) => {
            let and = *op == BinOp::And;
            let x = f(a);
            match k(&x) {
                // `false && y`, `true || y`: y is not read
                Some(Value::Bool(v)) if v != and => Expr::Const(Value::Bool(v)),
                // `true && y`, `false || y`: y, a boolean or absent
                Some(Value::Bool(_)) => f(b),
                Some(_) => Expr::Const(Value::None),
                None => {
                    let y = f(b);
                    match k(&y) {
                        // `x && true`, `x || false`: x, a boolean or absent
                        Some(Value::Bool(v)) if v == and => x,
                        _ => Expr::Bin(*op, Box::new(x), Box::new(y)),
                    }
                }
            }
        }
        Expr::Bin(op, a, b) => done(Expr::Bin(*op, Box::new(f(a)), Box::new(f(b)))),
        Expr::If(c, a, b) => {
            let c = f(c);
            match k(&c) {
                Some(Value::Bool(true)) => f(a),
                Some(Value::Bool(false)) => f(b),
                Some(_) => Expr::Const(Value::None),
                None => Expr::If(Box::new(c), Box::new(f(a)), Box::new(f(b))),
            }
        }
        Expr::Call(g, args) => done(Expr::Call(*g, args.iter().map(f).collect())),
        Expr::Agg { .. } => with_operands(e, &f),
        Expr::Shared(j, x) => Expr::Shared(*j, Box::new(f(x))),
        Expr::Const(_) | Expr::Slot(_) | Expr::Table(..) => e.clone(),
    }
}

/// Whether `e` reads nothing but the trigger events, slots `0..n` (whose values all rules
/// tried on one event share), and is worth keeping: more than a constant, a slot or a
/// region table (the prefilter reads those).
fn shareable(e: &Expr, n: u16) -> bool {
    fn reads(e: &Expr, n: u16) -> bool {
        match e {
            Expr::Const(_) => true,
            Expr::Slot(s) | Expr::Path(s, ..) | Expr::Table(s, _) => *s < n,
            Expr::Field(a, f) => {
                !matches!(f, Field::MemberLet(_) | Field::ItemSlot(_)) && reads(a, n)
            }
            Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => reads(a, n),
            Expr::Bin(_, a, b) => reads(a, n) && reads(b, n),
            Expr::If(a, b, c) => reads(a, n) && reads(b, n) && reads(c, n),
            Expr::Call(f, args) => is_pure(*f) && args.iter().all(|a| reads(a, n)),
            Expr::Agg { .. } | Expr::Shared(..) => false,
        }
    }
    !matches!(e, Expr::Const(_) | Expr::Slot(_) | Expr::Table(..)) && reads(e, n)
}

/// Every expression of `r` that its trial on an event evaluates (`exprs` of the tests).
fn rule_exprs_mut(r: &mut Rule) -> Vec<&mut Expr> {
    let mut v: Vec<&mut Expr> = Vec::new();
    for l in &mut r.lets {
        if let Let::Inst(_, e) = l {
            v.push(e);
        }
    }
    v.extend(
        [&mut r.when, &mut r.severity, &mut r.at, &mut r.violation]
            .into_iter()
            .flatten(),
    );
    if let Some(g) = &mut r.group {
        v.push(&mut g.by);
        v.extend(g.when.as_mut());
    }
    v
}

/// Common subexpressions of the rules tried on one kind of event (folded for it): every
/// largest subexpression that reads only the trigger events (slots `0..n`, `shareable`)
/// and occurs more than once among them becomes `Expr::Shared`, evaluated at most once
/// per event (expressions have no side effects and never fail, so evaluating one where
/// another rule reaches it first gives every rule the same value). Returns the number of
/// shared values.
fn share(rules: &mut [&mut Rule], n: u16) -> u16 {
    // the distinct shareable subexpressions, with how often each occurs
    fn count(e: &Expr, n: u16, seen: &mut Vec<(Expr, u32)>) {
        if shareable(e, n) {
            match seen.iter_mut().find(|(x, _)| same_expr(x, e)) {
                Some((_, c)) => *c += 1,
                None => seen.push((e.clone(), 1)),
            }
        }
        match e {
            Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => count(a, n, seen),
            Expr::Bin(_, a, b) => {
                count(a, n, seen);
                count(b, n, seen);
            }
            Expr::If(a, b, c) => {
                count(a, n, seen);
                count(b, n, seen);
                count(c, n, seen);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| count(a, n, seen)),
            _ => {}
        }
    }
    // `ids`: per entry of `seen`, its shared value once given one
    fn replace(
        e: &mut Expr,
        n: u16,
        seen: &[(Expr, u32)],
        ids: &mut [Option<u16>],
        next: &mut u16,
    ) {
        if shareable(e, n) {
            if let Some(k) = seen.iter().position(|(x, c)| *c > 1 && same_expr(x, e)) {
                let j = *ids[k].get_or_insert_with(|| {
                    *next += 1;
                    *next - 1
                });
                let inner = std::mem::replace(e, Expr::Const(Value::None));
                *e = Expr::Shared(j, Box::new(inner));
                return;
            }
        }
        match e {
            Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => {
                replace(a, n, seen, ids, next)
            }
            Expr::Bin(_, a, b) => {
                replace(a, n, seen, ids, next);
                replace(b, n, seen, ids, next);
            }
            Expr::If(a, b, c) => {
                replace(a, n, seen, ids, next);
                replace(b, n, seen, ids, next);
                replace(c, n, seen, ids, next);
            }
            Expr::Call(_, args) => args.iter_mut().for_each(|a| replace(a, n, seen, ids, next)),
            _ => {}
        }
    }
    let mut seen = Vec::new();
    for r in rules.iter_mut() {
        for e in rule_exprs_mut(r) {
            count(e, n, &mut seen);
        }
    }
    let (mut ids, mut next) = (vec![None; seen.len()], 0u16);
    for r in rules.iter_mut() {
        for e in rule_exprs_mut(r) {
            replace(e, n, &seen, &mut ids, &mut next);
        }
    }
    next
}

/// Whether `a` and `b` are the same expression, constants bit for bit (`0.0` and `-0.0`
/// are different constants: `x + 0.0` and `x + -0.0` differ for `x = -0.0`).
fn same_expr(a: &Expr, b: &Expr) -> bool {
    fn value(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Num(x), Value::Num(y)) => x.to_bits() == y.to_bits(),
            _ => a == b,
        }
    }
    fn values(a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value(x, y))
    }
    match (a, b) {
        (Expr::Const(x), Expr::Const(y)) => value(x, y),
        (Expr::Slot(x), Expr::Slot(y)) => x == y,
        (Expr::Path(s, f, g), Expr::Path(t, h, i)) => s == t && f == h && g == i,
        (Expr::Table(s, x), Expr::Table(t, y)) => s == t && values(x, y),
        (Expr::Field(x, f), Expr::Field(y, g)) => f == g && same_expr(x, y),
        (Expr::Not(x), Expr::Not(y)) | (Expr::Neg(x), Expr::Neg(y)) => same_expr(x, y),
        (Expr::In(x, l), Expr::In(y, m)) => values(l, m) && same_expr(x, y),
        (Expr::Bin(o, x, y), Expr::Bin(p, z, w)) => o == p && same_expr(x, z) && same_expr(y, w),
        (Expr::If(c, x, y), Expr::If(d, z, w)) => {
            same_expr(c, d) && same_expr(x, z) && same_expr(y, w)
        }
        (Expr::Call(f, x), Expr::Call(g, y)) => {
            f == g && x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_expr(a, b))
        }
        // never shared (`shareable`)
        _ => false,
    }
}

/// The rules of an event, receive or send pass: per kind of trigger event, indices into
/// `folded`, and how many shared values (`share`) its rules have.
struct PassRules {
    by_kind: Vec<Vec<usize>>,
    folded: Vec<KindRule>,
    shared: Vec<u16>,
}

/// A rule of the event, receive or send pass for trigger events of one kind: its
/// expressions folded for that kind (`fold_kinds`), compiled, and their prefilter.
struct KindRule {
    rule: usize,
    /// `None` for a queue consumer (run as it is, `Setup::consume`).
    code: Option<(RuleCode, Option<Prefilter>)>,
}

/// One (rule, call path) finding of a pass's own location, accumulated while the pass walks.
struct Cell {
    rule: u16,
    cnode: u32,
    /// The values added in event order, starting from 0.0.
    sum: f64,
    n: u64,
    worst: Worst,
}

/// What a location's pass found on its own location, without a buffer per instance: the
/// sum, count and worst instances per (rule, call path), and the clock-touched instances in
/// the order they were found (their `sev_cc` sums run across locations in location order).
struct Acc {
    /// Per rule, per call path: index + 1 into `cells` (empty until the rule's first
    /// instance here).
    idx: Vec<Vec<u32>>,
    cells: Vec<Cell>,
    /// (rule, call path, value) of every clock-touched instance, own location or not.
    cc: Vec<(u16, u32, f64)>,
}

/// A pass that looks at events of at most two kinds (besides LEAVE events, while groups are
/// open): the kind column is searched for those bytes (`memchr`) instead of walked event
/// by event.
struct Skip {
    kinds: Vec<u8>,
}

impl Skip {
    /// For a pass whose rules fire on the kinds of `by_kind` with rules.
    fn new(by_kind: &[Vec<usize>]) -> Option<Skip> {
        let kinds: Vec<u8> = (0..by_kind.len())
            .filter(|&k| !by_kind[k].is_empty())
            .map(|k| k as u8)
            .collect();
        (kinds.len() <= 2).then_some(Skip { kinds })
    }

    /// The distance to the first event of `kinds` that the pass looks at (LEAVE events too
    /// when `leave`).
    fn find(&self, kinds: &[u8], leave: bool) -> Option<usize> {
        let l = EventKind::Leave as u8;
        match (&self.kinds[..], leave) {
            ([], false) => None,
            ([], true) => memchr::memchr(l, kinds),
            ([a], false) => memchr::memchr(*a, kinds),
            ([a], true) => memchr::memchr2(*a, l, kinds),
            ([a, b], false) => memchr::memchr2(*a, *b, kinds),
            ([a, b], true) => memchr::memchr3(*a, *b, l, kinds),
            // `new` keeps at most two kinds; a longer list is walked event by event
            _ => Some(0),
        }
    }
}

/// Mutable state of one location's pass over receive or send triggers.
struct LocPass {
    /// The location the pass runs on: group keys are its events.
    loc: u32,
    /// Instances to add one by one: all of them without `acc`, else those attributed to
    /// another location (their clock-touched share is in `acc.cc` instead).
    out: Vec<Contribution>,
    acc: Option<Acc>,
    /// Per rule: open groups, key event → (best severity, env, clock-touched).
    groups: HashMap<(usize, u32), (f64, Vec<Value>, bool)>,
    /// Per rule (indexed by the consuming rule): the queued instances of its feeder.
    queues: Vec<VecDeque<Vec<Value>>>,
    /// Per consumer with a `TakeBound`: each queued instance's key (NaN: absent), in queue
    /// order, and the extreme key of the queue (`None`: to be found again).
    keys: Vec<(VecDeque<f64>, Option<f64>)>,
    had: Vec<(usize, u32, u32)>,
}

impl LocPass {
    fn new(loc: u32, nrules: usize) -> LocPass {
        LocPass {
            loc,
            out: Vec::new(),
            acc: None,
            groups: HashMap::new(),
            queues: vec![VecDeque::new(); nrules],
            keys: vec![(VecDeque::new(), None); nrules],
            had: Vec::new(),
        }
    }
}

/// What expressions can read besides their environment: the members of the current
/// collective or world-call instance and their per-member bindings, the queued instances
/// taken so far on this location (`Value::Item` indexes them), and `had()`.
#[derive(Clone, Copy)]
struct Frame<'b> {
    members: &'b [Member],
    member_vals: &'b [Vec<Value>],
    items: &'b [Vec<Value>],
    had: &'b [Vec<(u32, u32)>],
}

impl<'b> Frame<'b> {
    fn events(items: &'b [Vec<Value>], had: &'b [Vec<(u32, u32)>]) -> Frame<'b> {
        Frame {
            members: &[],
            member_vals: &[],
            items,
            had,
        }
    }
}

impl Setup<'_> {
    fn ctx<'b>(
        &'b self,
        members: &'b [Member],
        member_vals: &'b [Vec<Value>],
        items: &'b [Vec<Value>],
        had: &'b [Vec<(u32, u32)>],
        metric: &'b dyn Fn(u16) -> f64,
    ) -> Ctx<'b> {
        Ctx {
            trace: self.trace,
            replay: self.replay,
            regions: &self.regions,
            kind_names: &self.kind_names,
            regexes: &self.rs.regexes,
            strings: &self.strings,
            members,
            member_vals,
            items,
            had,
            metric,
            shared: &[],
        }
    }

    fn frame_ctx<'b>(&'b self, fr: Frame<'b>, metric: &'b dyn Fn(u16) -> f64) -> Ctx<'b> {
        self.ctx(fr.members, fr.member_vals, fr.items, fr.had, metric)
    }

    /// The call path, location and event an `at` value names.
    fn cnode_of(&self, v: Value) -> Option<(u32, u32, u32)> {
        match v {
            Value::Event(l, i) => {
                let c = ptr(self.replay, Ptr::Cnode, l, i);
                (c != NO_CNODE).then_some((c, l, i))
            }
            _ => None,
        }
    }

    /// Evaluate the instance-level lets and `when` of a non-collective rule; false = skip.
    fn prelude(&self, rule: &Rule, ctx: &Ctx, env: &mut [Value]) -> bool {
        self.prelude_when(rule, rule.when.as_ref(), ctx, env)
    }

    fn prelude_when(&self, rule: &Rule, when: Option<&Expr>, ctx: &Ctx, env: &mut [Value]) -> bool {
        for l in &rule.lets {
            if let Let::Inst(s, e) = l {
                env[*s as usize] = ctx.eval(e, env);
            }
        }
        when.is_none_or(|w| ctx.eval(w, env).bool())
    }

    /// `prelude_when` with a rule's compiled code.
    #[inline(always)]
    fn prelude_code(
        &self,
        code: &RuleCode,
        when: Option<&Code>,
        ctx: &Ctx,
        env: &mut [Value],
    ) -> bool {
        for (s, c) in &code.lets {
            env[*s as usize] = c.run(ctx, env);
        }
        when.is_none_or(|w| w.run(ctx, env).bool())
    }

    /// The checks of rule `k`'s prefilter on the events bound in `env`, and the rest of its
    /// `when` (its whole `when` without a prefilter); `None`: the rule does not fire.
    /// `regions` caches, per trigger slot, the index into a check's table of that slot's
    /// call region (`UNSEEN`: not looked up yet) across the rules of one trigger event: the
    /// slots hold the same events for all of them.
    #[inline(always)]
    fn prefiltered_when<'c>(
        &self,
        prefilter: &'c Option<Prefilter>,
        code: &'c RuleCode,
        env: &[Value],
        regions: &mut [u32; 4],
    ) -> Option<Option<&'c Code>> {
        let Some(p) = prefilter else {
            return Some(code.when.as_ref());
        };
        for (s, mask) in &p.checks {
            let r = match regions.get_mut(*s as usize) {
                Some(c) if *c != UNSEEN => *c,
                c => {
                    let r = match env[*s as usize] {
                        Value::Event(l, i) => {
                            eval::call_region(self.trace, self.replay, l, i).unwrap_or(NO_CALL)
                        }
                        _ => NO_CALL,
                    };
                    if let Some(c) = c {
                        *c = r;
                    }
                    r
                }
            };
            // the last entry is for "no enclosing call"
            let r = if r == NO_CALL {
                mask.len() - 1
            } else {
                r as usize
            };
            if !mask[r] {
                return None;
            }
        }
        Some(p.rest_code.as_ref())
    }

    /// Fire a rule fed by another's instances, or a queue consumer with a taken instance,
    /// in `env` (the event, receive and send passes try their own rules folded per kind,
    /// with their prefilters, `KindRule`).
    fn fire(&self, k: usize, env: &mut [Value], pass: &mut LocPass, fr: Frame) {
        let code = &self.code[k];
        let none = |_: u16| 0.0;
        let ctx = self.frame_ctx(fr, &none);
        self.fire_when(k, code, code.when.as_ref(), env, pass, fr, &ctx);
    }

    /// `fire` once the prefilter passed, with rule `k`'s `code` (its own or folded for
    /// the kind of its trigger event); `when` is what is left of the rule's `when`; `ctx`
    /// is `fr`'s (`frame_ctx`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn fire_when(
        &self,
        k: usize,
        code: &RuleCode,
        when: Option<&Code>,
        env: &mut [Value],
        pass: &mut LocPass,
        fr: Frame,
        ctx: &Ctx,
    ) {
        if !self.prelude_code(code, when, ctx, env) {
            return;
        }
        let Some(sev_e) = &code.severity else { return };
        let sev = sev_e.run(ctx, env).num();
        // the clock condition is read only for an instance that is kept (expressions have
        // no side effects, so the order of evaluation does not matter)
        let violated = |env: &mut [Value]| {
            code.violation
                .as_ref()
                .is_some_and(|v| v.run(ctx, env).bool())
        };
        if let Some((by, gw)) = &code.group {
            if gw.as_ref().is_none_or(|w| w.run(ctx, env).bool()) {
                match by.run(ctx, env) {
                    Value::Event(l, key) if l == pass.loc => {
                        let slot = pass.groups.entry((k, key)).or_insert((
                            f64::NEG_INFINITY,
                            Vec::new(),
                            false,
                        ));
                        if sev > slot.0 {
                            let cc = violated(env);
                            *slot = (sev, env.to_vec(), cc);
                        }
                        return;
                    }
                    // groups live per location: a key on another one groups nothing, the
                    // instance is stored at once (docs/rules.md, Groups)
                    Value::Event(..) => {}
                    _ => return,
                }
            }
        }
        if sev.is_nan() || sev <= 0.0 {
            return; // emit would drop it (§4.1.1)
        }
        let cc = violated(env);
        self.emit(k, code, sev, cc, env, pass, fr, ctx);
    }

    /// Record one instance of rule `k` and feed the rules that consume its instances.
    /// `ctx` is `fr`'s (`frame_ctx`), built once by the caller.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn emit(
        &self,
        k: usize,
        code: &RuleCode,
        sev: f64,
        cc: bool,
        env: &mut [Value],
        pass: &mut LocPass,
        fr: Frame,
        ctx: &Ctx,
    ) {
        if sev.is_nan() || sev <= 0.0 {
            return; // §4.1.1
        }
        let Some(at_e) = &code.at else { return };
        let at = at_e.run(ctx, env);
        let Some((cnode, loc, event)) = self.cnode_of(at) else {
            return;
        };
        match &mut pass.acc {
            // the frequent case, inline: an instance of the pass's own location
            Some(acc) if loc == pass.loc => {
                if cc {
                    acc.cc.push((k as u16, cnode, sev));
                }
                let idx = &mut acc.idx[k];
                if idx.is_empty() {
                    idx.resize(self.replay.tree.len(), 0);
                }
                let slot = &mut idx[cnode as usize];
                if *slot == 0 {
                    acc.cells.push(Cell {
                        rule: k as u16,
                        cnode,
                        sum: 0.0,
                        n: 0,
                        worst: Worst::default(),
                    });
                    *slot = acc.cells.len() as u32;
                }
                let cell = &mut acc.cells[*slot as usize - 1];
                cell.sum += sev;
                cell.n += 1;
                cell.worst.offer(Instance {
                    loc,
                    event,
                    time: self.trace.events[loc as usize].time[event as usize],
                    value: sev,
                });
            }
            _ => self.listed(k, cnode, loc, event, sev, cc, pass),
        }
        // the instance as the rules it feeds and the queues it joins see it (most rules have
        // neither)
        if self.feeds[k] {
            let rule = &self.rs.rules[k];
            env[rule.at_slot as usize] = at;
            env[rule.value_slot as usize] = Value::Num(sev);
            self.feed(k, env, pass, fr);
        }
    }

    /// `emit` of an instance kept in the pass's list: one of another location, or every
    /// one when the pass does not accumulate.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn listed(
        &self,
        k: usize,
        cnode: u32,
        loc: u32,
        event: u32,
        sev: f64,
        cc: bool,
        pass: &mut LocPass,
    ) {
        if let Some(acc) = &mut pass.acc {
            // its clock-touched share is summed across locations (`acc.cc`), not listed
            if cc {
                acc.cc.push((k as u16, cnode, sev));
            }
        }
        let cc = cc && pass.acc.is_none();
        pass.out.push(Contribution {
            rule: k as u16,
            cnode,
            loc,
            event,
            value: sev,
            cc,
            rec: false,
        });
    }

    /// Hand a stored instance of rule `k` (its `at` and `value` set in `env`) to the rules
    /// fed by it and to the queues of the rules that consume it.
    fn feed(&self, k: usize, env: &[Value], pass: &mut LocPass, fr: Frame) {
        let mut e2 = Vec::new();
        for &f in &self.fed[k] {
            e2.clear();
            e2.extend_from_slice(env);
            e2.resize(self.rs.rules[f].slots as usize, Value::None);
            self.fire(f, &mut e2, pass, fr);
        }
        for &q in &self.queued[k] {
            let Some(queue) = self.rs.rules[q].queue.as_ref() else {
                continue;
            };
            let qu = &mut pass.queues[q];
            let (keys, ext) = &mut pass.keys[q];
            // the oldest instance leaves a full queue (its buffer takes the new one)
            let mut item = Vec::new();
            if qu.len() >= queue.size {
                item = qu.pop_front().unwrap_or_default();
                // the extreme may have left: found again when needed
                if keys.pop_front().is_some_and(|k| Some(k) == *ext) {
                    *ext = None;
                }
            }
            item.clear();
            item.extend_from_slice(env);
            qu.push_back(item);
            if let Some(b) = &self.code[q].bound {
                let none = |_: u16| 0.0;
                let item = std::slice::from_ref(&qu[qu.len() - 1]);
                let key = b.key_of(&self.ctx(&[], &[], item, fr.had, &none), queue.slot);
                keys.push_back(key);
                if let Some(m) = ext {
                    if !key.is_nan() && (b.wants_max() && key > *m || !b.wants_max() && key < *m) {
                        *m = key;
                    }
                }
            }
        }
    }

    /// Give queue consumer `k` its chance at the current trigger (e.g. wrong-order late
    /// sender): every queued instance for which `take` holds moves to `taken` (where
    /// `Value::Item` finds it from then on) and fires the consumer.
    fn consume(
        &self,
        k: usize,
        env: &[Value],
        pass: &mut LocPass,
        taken: &mut Vec<Vec<Value>>,
        had: &[Vec<(u32, u32)>],
    ) {
        let rule = &self.rs.rules[k];
        let (Some(q), Some(take)) = (&rule.queue, &self.code[k].take) else {
            return;
        };
        if pass.queues[k].is_empty() {
            return;
        }
        let items = std::mem::take(&mut pass.queues[k]);
        let none = |_: u16| 0.0;
        let mut keep = VecDeque::with_capacity(items.len());
        let mut fire = Vec::new();
        // one environment for every trial: `take` writes nothing (no members to aggregate
        // over here), only the item's slot changes
        let n = rule.slots as usize;
        let mut e = env.to_vec();
        e.resize(n + self.code[k].hoisted.len(), Value::None);
        // the parts of `take` that do not read the queued instance, once per trigger
        let bound = {
            let ctx = self.ctx(&[], &[], taken, had, &none);
            for (s, c) in &self.code[k].hoisted {
                e[*s as usize] = c.run(&ctx, &mut e);
            }
            self.code[k]
                .bound
                .as_ref()
                .map(|b| (b, b.bound.run(&ctx, &mut e)))
        };
        if let Some((b, y)) = bound {
            // no instance can be taken when the extreme key fails the bound
            let (keys, ext) = &mut pass.keys[k];
            let m = *ext.get_or_insert_with(|| {
                let valid = keys.iter().copied().filter(|k| !k.is_nan());
                if b.wants_max() {
                    valid.fold(f64::NEG_INFINITY, f64::max)
                } else {
                    valid.fold(f64::INFINITY, f64::min)
                }
            });
            if y == Value::None || !b.passes(m, y.num()) {
                pass.queues[k] = items;
                return;
            }
        }
        let mut keys = std::mem::take(&mut pass.keys[k].0);
        let mut kept_keys = VecDeque::new();
        for item in items {
            // on trial at the end of `taken`; it stays there if taken
            taken.push(item);
            e[q.slot as usize] = Value::Item(taken.len() as u32 - 1);
            let ctx = self.ctx(&[], &[], taken, had, &none);
            let key = keys.pop_front();
            if take.run(&ctx, &mut e).bool() {
                fire.push(e[..n].to_vec());
            } else if let Some(item) = taken.pop() {
                keep.push_back(item);
                kept_keys.extend(key);
            }
        }
        pass.queues[k] = keep;
        pass.keys[k] = (kept_keys, None);
        for mut e in fire {
            self.fire(k, &mut e, pass, Frame::events(taken, had));
        }
    }

    /// Close the groups whose key call ends at event `i` of the pass's location (or all, at
    /// the end).
    fn flush_groups(&self, i: Option<u32>, pass: &mut LocPass, fr: Frame) {
        let l = pass.loc;
        let mut closing: Vec<(usize, u32)> = pass
            .groups
            .keys()
            .filter(|(_, key)| i.is_none_or(|i| ptr(self.replay, Ptr::Exit, l, *key) == i))
            .copied()
            .collect();
        closing.sort_unstable();
        for key in closing {
            if let Some((sev, mut env, cc)) = pass.groups.remove(&key) {
                if sev > 0.0 {
                    pass.had.push((key.0, l, key.1));
                }
                let none = |_: u16| 0.0;
                let ctx = self.frame_ctx(fr, &none);
                self.emit(key.0, &self.code[key.0], sev, cc, &mut env, pass, fr, &ctx);
            }
        }
    }
}

/// `orig`'s rules specialised for `trace` (`specialise`): the region-only parts evaluated
/// per region with `regions` and `kind_names` as the analysis interns them.
fn specialised(
    trace: &Trace,
    replay: &Replay,
    orig: &RuleSet,
    regions: &RegionStrings,
    kind_names: &[u32; 256],
    strings: &[String],
) -> RuleSet {
    let ctx = Ctx::of_trace(trace, replay, regions, kind_names, &orig.regexes, strings);
    let nreg = trace.defs.regions.len();
    let table = |s: u16, e: &Expr| -> Box<[Value]> {
        let mut env = vec![Value::None; s as usize + 1];
        (0..=nreg)
            .map(|reg| {
                env[s as usize] = if reg < nreg {
                    Value::Region(reg as u32)
                } else {
                    Value::None
                };
                ctx.eval(e, &mut env)
            })
            .collect()
    };
    let konst = |e: &Expr| ctx.eval(e, &mut [Value::None]);
    let f = |e: &Expr| specialise(e, &table, &konst);
    RuleSet {
        rules: orig.rules.iter().map(|r| specialise_rule(r, &f)).collect(),
        interner: Default::default(),
        regexes: orig.regexes.clone(),
    }
}

/// Run every rule over the replay.
/// The interned strings of the trace's regions (name, paradigm, role, class, mode) and of
/// every event kind, as the rules compare them.
fn trace_strings(interner: &mut Interner, trace: &Trace) -> (RegionStrings, [u32; 256]) {
    let regions = trace
        .defs
        .regions
        .iter()
        .map(|r| {
            let (class, mode) = classify::classify(r);
            [
                interner.intern(&r.name),
                interner.intern(r.paradigm.name()),
                interner.intern(r.role.name()),
                interner.intern(class),
                interner.intern(mode),
            ]
        })
        .collect();
    let mut kind_names = [0u32; 256];
    for k in EventKind::ALL {
        kind_names[k as usize] = interner.intern(k.name());
    }
    (regions, kind_names)
}

pub fn analyse(trace: &Trace, replay: &Replay, orig: RuleSet) -> Analysis {
    analyse_with(trace, replay, orig, true)
}

/// `analyse`; `accumulate`: the event, receive and send passes sum their own location's
/// findings as they walk (else they list every instance, to be added one by one: the same
/// result, bit for bit, in more memory).
fn analyse_with(trace: &Trace, replay: &Replay, orig: RuleSet, accumulate: bool) -> Analysis {
    let mut interner = orig.interner.clone();
    let (regions, kind_names) = trace_strings(&mut interner, trace);
    let op_names: Vec<u32> = (0..=255u8)
        .map(|op| interner.intern(classify::collective_op_name(op)))
        .collect();
    // the rules specialised for this trace's regions (partial evaluation, `specialise`)
    let spec = specialised(
        trace,
        replay,
        &orig,
        &regions,
        &kind_names,
        &interner.strings,
    );
    let rs = &spec;
    let nrules = rs.rules.len();
    let mut fed = vec![Vec::new(); nrules];
    let mut queued = vec![Vec::new(); nrules];
    for (k, r) in rs.rules.iter().enumerate() {
        if r.on == Trigger::Rule {
            if let Some(of) = r.of {
                fed[of as usize].push(k);
            }
        }
        if let Some(q) = &r.queue {
            queued[q.of as usize].push(k);
        }
    }
    let feeds = (0..nrules)
        .map(|k| !fed[k].is_empty() || !queued[k].is_empty())
        .collect();
    let setup = Setup {
        trace,
        replay,
        rs,
        strings: interner.strings.clone(),
        regions,
        kind_names,
        fed,
        queued,
        feeds,
        code: rs
            .rules
            .iter()
            .map(|r| RuleCode::new(r, &rs.rules))
            .collect(),
    };
    let nloc = trace.events.len();
    let ncnode = replay.tree.len();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); nrules];
    // per rule, per call path (dense while adding; a map per rule in the result)
    let mut dense_stats: Vec<Vec<FindingStats>> = vec![Vec::new(); nrules];
    // per rule, per call path: index + 1 into `worst` (0: none yet), so a finding's top-K
    // is allocated once, on its first instance
    let mut worst_idx: Vec<Vec<u32>> = vec![Vec::new(); nrules];
    let mut worst: Vec<(u16, u32, Worst)> = Vec::new();
    let mut violations = Violations::default();
    // Adds what the rules found to the cube, the instance counts and the worst instances:
    // one instance, a pass's own sum for one (rule, call path) (the cube cell must still be
    // 0.0, so the sum is bit for bit the one-by-one sum), or the clock-touched share of one.
    let mut add_found = |values: &mut Vec<Vec<f64>>, f: Found| {
        let (rule, cnode) = match f {
            Found::One(c) => (c.rule, c.cnode),
            Found::Own(c, _) => (c.rule, c.cnode),
            Found::Cc(rule, cnode, v) => {
                let d = &mut dense_stats[rule as usize];
                if d.is_empty() {
                    d.resize(ncnode, FindingStats::default());
                }
                d[cnode as usize].sev_cc += v;
                return;
            }
        };
        let (loc, value) = match f {
            Found::One(c) => (c.loc, c.value),
            Found::Own(c, loc) => (loc, c.sum),
            Found::Cc(..) => return,
        };
        let v = &mut values[rule as usize];
        if v.is_empty() {
            v.resize(ncnode * nloc, 0.0);
        }
        v[cnode as usize * nloc + loc as usize] += value;
        // instance counts exist only for pattern instances, not for class time (§6.2)
        if rs.rules[rule as usize].on == Trigger::Callpath {
            return;
        }
        let d = &mut dense_stats[rule as usize];
        if d.is_empty() {
            d.resize(ncnode, FindingStats::default());
        }
        let s = &mut d[cnode as usize];
        let one;
        let offers: &[Instance] = match f {
            Found::One(c) => {
                s.n += 1;
                if c.cc {
                    s.sev_cc += c.value;
                }
                if c.rec {
                    s.sev_rec += c.value;
                }
                if c.event == NONE {
                    return;
                }
                one = [Instance {
                    loc: c.loc,
                    event: c.event,
                    time: trace.events[c.loc as usize].time[c.event as usize],
                    value: c.value,
                }];
                &one
            }
            Found::Own(c, _) => {
                s.n += c.n;
                c.worst.instances()
            }
            Found::Cc(..) => return,
        };
        let wi = &mut worst_idx[rule as usize];
        if wi.is_empty() {
            wi.resize(ncnode, 0);
        }
        let slot = &mut wi[cnode as usize];
        if *slot == 0 {
            worst.push((rule, cnode, Worst::default()));
            *slot = worst.len() as u32;
        }
        // the top K of a union is the top K of the parts' top Ks (a total order)
        for x in offers {
            worst[*slot as usize - 1].2.offer(*x);
        }
    };
    let by_trigger =
        |t: Trigger| -> Vec<usize> { (0..nrules).filter(|&k| rs.rules[k].on == t).collect() };

    // Call paths: class time, visits. All rules in one walk over each location's call
    // paths; each (rule, call path, location) cell gets at most one value here, so the
    // order they are added in does not matter.
    let cp_rules = by_trigger(Trigger::Callpath);
    let none = |_: u16| 0.0;
    if !cp_rules.is_empty() {
        let contribs: Vec<Contribution> = (0..nloc)
            .into_par_iter()
            .flat_map_iter(|l| {
                let st = &replay.locations[l];
                let ctx = setup.ctx(&[], &[], &[], &[], &none);
                let mut out = Vec::new();
                let mut envs: Vec<Vec<Value>> = cp_rules
                    .iter()
                    .map(|&k| vec![Value::None; rs.rules[k].slots as usize])
                    .collect();
                // §3.5: the master of this location's process (itself without OpenMP)
                let m = replay.omp.master[l] as usize;
                let ms = &replay.locations[m];
                let res = trace.timer_resolution as f64;
                for c in 0..ncnode {
                    // a worker may owe idle time where only its master was (§3.5.3)
                    if st.visits[c] == 0
                        && st.time[c] == 0
                        && (m == l || (ms.time[c] == 0 && ms.incl[c] == 0))
                    {
                        continue;
                    }
                    let crate::replay::calltree::Callee::Region(r) = replay.tree.nodes[c].callee
                    else {
                        continue;
                    };
                    let sub = replay.omp.subtree[c];
                    let bound = [
                        Value::Num(st.time[c] as f64 / res),
                        Value::Num(st.visits[c] as f64),
                        Value::Region(r),
                        Value::Bool(m == l),
                        Value::Num(ms.time[c] as f64 / res),
                        Value::Num(st.incl[c] as f64 / res),
                        Value::Num(ms.incl[c] as f64 / res),
                        Value::Bool(sub != 0),
                        Value::Bool(sub == 2),
                    ];
                    for (&k, env) in cp_rules.iter().zip(&mut envs) {
                        let rule = &rs.rules[k];
                        env[..bound.len()].copy_from_slice(&bound);
                        if !setup.prelude(rule, &ctx, env) {
                            continue;
                        }
                        let v = rule
                            .severity
                            .as_ref()
                            .map_or(0.0, |s| ctx.eval(s, env).num());
                        if v > 0.0 {
                            out.push(Contribution {
                                rule: k as u16,
                                cnode: c as u32,
                                loc: l as u32,
                                event: NONE,
                                value: v,
                                cc: false,
                                rec: false,
                            });
                        }
                    }
                }
                out
            })
            .collect();
        for c in &contribs {
            add_found(&mut values, Found::One(c));
        }
    }

    // Events, receives, sends: one pass per location in event order (§5.5 passes B, C).
    let ev_rules = by_trigger(Trigger::Event);
    let recv_rules = by_trigger(Trigger::Receive);
    let send_rules = by_trigger(Trigger::Send);
    // The rules each event kind can fire: event triggers those that list the kind, receive
    // triggers all of theirs on receives, send triggers on sends; each folded for the kind
    // of its trigger event (`fold_kinds`, slot 0 holds it), and left out for a kind on
    // which its `when` cannot hold. Queue consumers run as they are (`Setup::consume`).
    let none = |_: u16| 0.0;
    let kctx = setup.ctx(&[], &[], &[], &[], &none);
    let konst = |e: &Expr| kctx.eval(e, &mut [Value::None]);
    let per_kind = |rules_here: &[usize], trigger: Trigger| -> PassRules {
        let mut by_kind = vec![Vec::new(); 256];
        let mut folded = Vec::new();
        let mut shared = vec![0u16; 256];
        let n = trigger_slots(trigger).unwrap_or(1);
        for kind in EventKind::ALL {
            let mut here: Vec<(usize, Option<Rule>)> = Vec::new();
            for k in rules_here
                .iter()
                .copied()
                .filter(|&k| fires_on(&rs.rules[k], kind))
            {
                let r = &rs.rules[k];
                if r.queue.is_some() {
                    here.push((k, None));
                    continue;
                }
                let field = |s: u16, f: Field| {
                    (s == 0)
                        .then(|| eval::kind_field(kind, f, &setup.kind_names))
                        .flatten()
                };
                let mut r = specialise_rule(r, &|e: &Expr| fold_kinds(e, &field, &konst));
                let never = |e: &Option<Expr>| matches!(e, Some(Expr::Const(v)) if !v.bool());
                if never(&r.when) {
                    continue;
                }
                // a group that takes no instance is none
                if r.group.as_ref().is_some_and(|g| never(&g.when)) {
                    r.group = None;
                }
                here.push((k, Some(r)));
            }
            shared[kind as usize] = share(
                &mut here
                    .iter_mut()
                    .filter_map(|(_, r)| r.as_mut())
                    .collect::<Vec<_>>(),
                n,
            );
            for (k, r) in here {
                let code = r.map(|r| (RuleCode::new(&r, &rs.rules), prefilter_of(&r)));
                by_kind[kind as usize].push(folded.len());
                folded.push(KindRule { rule: k, code });
            }
        }
        PassRules {
            by_kind,
            folded,
            shared,
        }
    };
    let run_pass = |(pr, skip): (&PassRules, &Option<Skip>),
                    trigger: Trigger,
                    had: &[Vec<(u32, u32)>],
                    locs: std::ops::Range<usize>,
                    outs: Vec<Vec<Contribution>>,
                    accumulate: bool|
     -> Vec<LocPass> {
        locs.into_par_iter()
            .zip(outs)
            .map(|(l, out)| {
                let ev = &trace.events[l];
                let links = &replay.msg_links[l];
                let mut envs: Vec<Vec<Value>> = rs
                    .rules
                    .iter()
                    .map(|r| vec![Value::None; r.slots as usize])
                    .collect();
                let mut pass = LocPass::new(l as u32, nrules);
                pass.out = out;
                if accumulate {
                    pass.acc = Some(Acc {
                        idx: vec![Vec::new(); nrules],
                        cells: Vec::new(),
                        cc: Vec::new(),
                    });
                }
                // queued instances taken by consumers on this location (`B`)
                let mut taken: Vec<Vec<Value>> = Vec::new();
                // What the rules of the pass that are no queue consumers read, built once:
                // no queued instance (`Value::Item`) ever reaches their environments, so
                // they never read `taken` (consumers see it through their own frames)
                let none = |_: u16| 0.0;
                let fr0 = Frame::events(&[], had);
                let cells = vec![
                    std::cell::Cell::new(None);
                    *pr.shared.iter().max().unwrap_or(&0) as usize
                ];
                let mut ctx0 = setup.frame_ctx(fr0, &none);
                ctx0.shared = &cells;
                let (by_kind, folded) = (&pr.by_kind, &pr.folded);
                let kinds = crate::model::spill::bytes_of(&ev.kind[..]);
                let mut next = 0usize;
                while next < kinds.len() {
                    // jump to the next event the pass looks at
                    if let Some(s) = skip {
                        match s.find(&kinds[next..], !pass.groups.is_empty()) {
                            Some(d) => next += d,
                            None => break,
                        }
                    }
                    let i = next;
                    next += 1;
                    let kind = ev.kind[i];
                    if kind == EventKind::Leave && !pass.groups.is_empty() {
                        let fr = Frame::events(&taken, had);
                        setup.flush_groups(Some(i as u32), &mut pass, fr);
                    }
                    let rules_here = &by_kind[kind as usize];
                    if rules_here.is_empty() {
                        continue;
                    }
                    let bind: Option<[Value; 4]> = match trigger {
                        Trigger::Event => Some([
                            Value::Event(l as u32, i as u32),
                            Value::None,
                            Value::None,
                            Value::None,
                        ]),
                        Trigger::Receive
                            if matches!(kind, EventKind::MpiRecv | EventKind::MpiIrecv) =>
                        {
                            let p = links.partner[ev.arg[i] as usize];
                            p.is_some().then(|| {
                                let r = Value::Event(l as u32, i as u32);
                                let s = Value::Event(p.loc, p.event);
                                [r, s, Value::None, Value::None]
                            })
                        }
                        Trigger::Send
                            if matches!(kind, EventKind::MpiSend | EventKind::MpiIsend) =>
                        {
                            let k = ev.arg[i] as usize;
                            let p = links.partner[k];
                            if !p.is_some() || links.cancelled(k) {
                                None
                            } else {
                                let c = if kind == EventKind::MpiSend {
                                    i as u32
                                } else {
                                    links.request_event(k)
                                };
                                let rev = &trace.events[p.loc as usize];
                                let q = if rev.kind[p.event as usize] == EventKind::MpiRecv {
                                    p.event
                                } else {
                                    replay.msg_links[p.loc as usize]
                                        .request_event(rev.arg[p.event as usize] as usize)
                                };
                                (c != NONE && q != NONE).then_some({
                                    [
                                        Value::Event(l as u32, i as u32),
                                        Value::Event(p.loc, p.event),
                                        Value::Event(l as u32, c),
                                        Value::Event(p.loc, q),
                                    ]
                                })
                            }
                        }
                        _ => None,
                    };
                    let Some(bind) = bind else { continue };
                    let mut regions = [UNSEEN; 4];
                    // a new event: its shared values are still to be evaluated
                    for c in &cells[..pr.shared[kind as usize] as usize] {
                        c.set(None);
                    }
                    for &j in rules_here {
                        let KindRule { rule: k, code } = &folded[j];
                        let k = *k;
                        // one environment per rule and location, reset per trigger
                        let env = &mut envs[k];
                        env.fill(Value::None);
                        // the trigger's bindings, one store each (a copy of a length known
                        // only here calls memcpy)
                        env[0] = bind[0];
                        if trigger != Trigger::Event {
                            env[1] = bind[1];
                        }
                        if trigger == Trigger::Send {
                            env[2] = bind[2];
                            env[3] = bind[3];
                        }
                        match code {
                            None => setup.consume(k, env, &mut pass, &mut taken, had),
                            Some((code, prefilter)) => {
                                if let Some(when) =
                                    setup.prefiltered_when(prefilter, code, env, &mut regions)
                                {
                                    setup.fire_when(k, code, when, env, &mut pass, fr0, &ctx0);
                                }
                            }
                        }
                    }
                }
                setup.flush_groups(None, &mut pass, Frame::events(&taken, had));
                pass
            })
            .collect()
    };
    let mut had: Vec<Vec<(u32, u32)>> = vec![Vec::new(); nrules];
    for (rules_here, trigger) in [
        (&ev_rules, Trigger::Event),
        (&recv_rules, Trigger::Receive),
        (&send_rules, Trigger::Send),
    ] {
        if rules_here.is_empty() {
            continue;
        }
        let pr = per_kind(rules_here, trigger);
        let skip = Skip::new(&pr.by_kind);
        let by_kind = (&pr, &skip);
        // Locations a few at a time, their results added in location order: the
        // contributions waiting to be added stay a small part of the trace.
        let chunk = 2 * rayon::current_num_threads().max(1);
        let mut new_had = Vec::new();
        // the contribution buffers go round (fresh pages cost more than the rules)
        let mut pool: Vec<Vec<Contribution>> = Vec::new();
        // a chunk's contributions are added (in order, on one thread) while the next chunk
        // runs
        let mut pending: Vec<LocPass> = Vec::new();
        let starts = (0..nloc).step_by(chunk).map(Some).chain([None]);
        for start in starts {
            let outs: Vec<Vec<Contribution>> = start
                .map(|s| s..(s + chunk).min(nloc))
                .into_iter()
                .flatten()
                .map(|_| pool.pop().unwrap_or_default())
                .collect();
            let done = std::mem::take(&mut pending);
            let (passes, done) = rayon::join(
                || {
                    start.map_or_else(Vec::new, |s| {
                        run_pass(
                            by_kind,
                            trigger,
                            &had,
                            s..(s + chunk).min(nloc),
                            outs,
                            accumulate,
                        )
                    })
                },
                || {
                    for p in &done {
                        let Some(acc) = &p.acc else {
                            for c in &p.out {
                                add_found(&mut values, Found::One(c));
                            }
                            continue;
                        };
                        // A cell of this location that an earlier location's pass already
                        // wrote (a rule whose `at` names another location's event) must get
                        // this location's values one by one after those: the pass runs again,
                        // listing every instance (the pass is a function of the trace and
                        // `had`, so it finds the same).
                        let clean = acc.cells.iter().all(|c| {
                            values[c.rule as usize]
                                .get(c.cnode as usize * nloc + p.loc as usize)
                                .is_none_or(|v| *v == 0.0)
                        });
                        if !clean {
                            #[cfg(test)]
                            tests::RERUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let l = p.loc as usize;
                            let again =
                                run_pass(by_kind, trigger, &had, l..l + 1, vec![Vec::new()], false);
                            for c in again.iter().flat_map(|q| &q.out) {
                                add_found(&mut values, Found::One(c));
                            }
                            continue;
                        }
                        for c in &acc.cells {
                            add_found(&mut values, Found::Own(c, p.loc));
                        }
                        for c in &p.out {
                            add_found(&mut values, Found::One(c));
                        }
                        for &(k, c, v) in &acc.cc {
                            add_found(&mut values, Found::Cc(k, c, v));
                        }
                    }
                    done
                },
            );
            for p in done {
                new_had.extend(p.had);
                let mut out = p.out;
                out.clear();
                pool.push(out);
            }
            pending = passes;
        }
        for (k, l, e) in new_had {
            had[k].push((l, e));
        }
        for h in had.iter_mut() {
            h.sort_unstable();
        }
    }

    // Collective and world-call instances (§5.5 pass D).
    let coll_rules = by_trigger(Trigger::Collective);
    let world_rules = by_trigger(Trigger::WorldCall);
    let begin_of = |l: u32, end: u32| -> f64 {
        // COLL_BEGIN inside the same call, else the call's ENTER (§4.1.5)
        let ev = &trace.events[l as usize];
        let enter = ptr(replay, Ptr::Enter, l, end);
        let mut j = end as usize;
        while j > 0 && enter != NONE && j > enter as usize {
            j -= 1;
            if ev.kind[j] == EventKind::MpiCollectiveBegin
                && ptr(replay, Ptr::Enter, l, j as u32) == enter
            {
                return setup.ctx(&[], &[], &[], &[], &none).seconds(l, j as u32);
            }
        }
        let b = if enter == NONE { end } else { enter };
        setup.ctx(&[], &[], &[], &[], &none).seconds(l, b)
    };
    let mut instances: Vec<(Vec<Member>, [Value; 3])> = Vec::new();
    // instances on communicators a reader reconstructed (§5.4): lower precision (§6.3 ρ)
    let mut reconstructed: Vec<bool> = Vec::new();
    let mut coll_violators: Vec<u32> = Vec::new();
    if !coll_rules.is_empty() {
        for inst in &replay.instances {
            reconstructed.push(
                trace.defs.comms[inst.comm as usize].flags & crate::model::COMM_FLAG_RECONSTRUCTED
                    != 0,
            );
            let mut members = Vec::with_capacity(inst.members.len());
            let mut op = 0;
            let mut root = u32::MAX;
            for (rank, m) in inst.members.iter().enumerate() {
                let Some(c) = trace.events[m.loc as usize].coll(m.event as usize) else {
                    continue;
                };
                op = c.op;
                root = c.root;
                // a reconstructed instance (§5.4) has no payload in the trace: unknown
                // bytes count as > 0 for the payload tests of the patterns
                let rec = reconstructed.last() == Some(&true);
                let known = |b: u64| if rec && b == 0 { 1.0 } else { b as f64 };
                members.push(Member {
                    loc: m.loc,
                    event: m.event,
                    begin: begin_of(m.loc, m.event),
                    end: setup.ctx(&[], &[], &[], &[], &none).seconds(m.loc, m.event),
                    sent: known(c.sent),
                    recv: known(c.received),
                    rank: rank as u32,
                    tasks: 0.0,
                });
            }
            let root_v = if root >= 0xFFFF_FFFD {
                -1.0
            } else {
                root as f64
            };
            instances.push((
                members,
                [
                    Value::Str(op_names[op as usize]),
                    Value::Num(inst.members.len() as f64),
                    Value::Num(root_v),
                ],
            ));
        }
    }
    // `had()` of collective and world-call rules reads the groups of all earlier passes
    let had: &[Vec<(u32, u32)>] = &had;
    let run_instances = |rule_ids: &[usize],
                         insts: &[(Vec<Member>, [Value; 3])],
                         nbind: usize,
                         rec: &[bool]|
     -> (Vec<Contribution>, Vec<u32>) {
        let per: Vec<(Vec<Contribution>, Vec<u32>)> = insts
            .par_iter()
            .enumerate()
            .map(|(ii, (members, bind))| {
                let rec = rec.get(ii).copied().unwrap_or(false);
                let mut out = Vec::new();
                // instances of the rules fed by collective rules
                let mut fed_out = Vec::new();
                let mut violated = vec![false; members.len()];
                for &k in rule_ids {
                    let rule = &rs.rules[k];
                    let mut env = vec![Value::None; rule.slots as usize];
                    env[..nbind].copy_from_slice(&bind[..nbind]);
                    let mut member_vals =
                        vec![vec![Value::None; rule.member_slots as usize]; members.len()];
                    let mut skip = false;
                    for l in &rule.lets {
                        match l {
                            Let::Inst(s, e) => {
                                let ctx = setup.ctx(members, &member_vals, &[], had, &none);
                                env[*s as usize] = ctx.eval(e, &mut env);
                            }
                            Let::Member { slot, var, expr } => {
                                let vals: Vec<Value> = (0..members.len())
                                    .map(|m| {
                                        let ctx = setup.ctx(members, &member_vals, &[], had, &none);
                                        env[*var as usize] = Value::Member(m as u32);
                                        ctx.eval(expr, &mut env)
                                    })
                                    .collect();
                                for (m, v) in vals.into_iter().enumerate() {
                                    member_vals[m][*slot as usize] = v;
                                }
                            }
                        }
                    }
                    let ctx = setup.ctx(members, &member_vals, &[], had, &none);
                    if let Some(w) = &rule.when {
                        skip = !ctx.eval(w, &mut env).bool();
                    }
                    if skip {
                        continue;
                    }
                    let mut touched = false;
                    let mut mine = Vec::new();
                    for (m, member_violated) in violated.iter_mut().enumerate() {
                        if let Some(mv) = rule.member_var {
                            env[mv as usize] = Value::Member(m as u32);
                        }
                        if rule
                            .for_members
                            .as_ref()
                            .is_some_and(|f| !ctx.eval(f, &mut env).bool())
                        {
                            continue;
                        }
                        if rule
                            .violation
                            .as_ref()
                            .is_some_and(|v| ctx.eval(v, &mut env).bool())
                        {
                            touched = true;
                            *member_violated = true;
                        }
                        let sev = rule
                            .severity
                            .as_ref()
                            .map_or(0.0, |s| ctx.eval(s, &mut env).num());
                        if sev.is_nan() || sev <= 0.0 {
                            continue;
                        }
                        let at = rule
                            .at
                            .as_ref()
                            .map_or(Value::None, |a| ctx.eval(a, &mut env));
                        if let Some((cnode, loc, event)) = setup.cnode_of(at) {
                            mine.push(Contribution {
                                rule: k as u16,
                                cnode,
                                loc,
                                event,
                                value: sev,
                                cc: false,
                                rec,
                            });
                            if !setup.fed[k].is_empty() {
                                env[rule.at_slot as usize] = at;
                                env[rule.value_slot as usize] = Value::Num(sev);
                                let fr = Frame {
                                    members,
                                    member_vals: &member_vals,
                                    items: &[],
                                    had,
                                };
                                let mut pass = LocPass::new(loc, rs.rules.len());
                                setup.feed(k, &env, &mut pass, fr);
                                fed_out.extend(pass.out);
                            }
                        }
                    }
                    // §6.2: an instance with any violated member is touched as a whole
                    for c in &mut mine {
                        c.cc = touched;
                    }
                    out.extend(mine);
                    out.append(&mut fed_out);
                }
                let locs: Vec<u32> = members
                    .iter()
                    .zip(&violated)
                    .filter(|(_, &v)| v)
                    .map(|(m, _)| m.loc)
                    .collect();
                (out, locs)
            })
            .collect();
        let ccv: Vec<u32> = per.iter().flat_map(|p| p.1.iter().copied()).collect();
        (per.into_iter().flat_map(|p| p.0).collect(), ccv)
    };
    if !coll_rules.is_empty() {
        let (c, v) = run_instances(&coll_rules, &instances, 3, &reconstructed);
        for x in &c {
            add_found(&mut values, Found::One(x));
        }
        coll_violators.extend(v);
    }
    // Per world rule and rank location: its first call of a region of the rule's class,
    // found for up to 64 rules in one parallel walk of the locations (a bit per rule in a
    // per-region mask).
    let mut firsts: Vec<Vec<Option<usize>>> = vec![vec![None; nloc]; world_rules.len()];
    for (c, chunk) in world_rules.chunks(64).enumerate() {
        let mask: Vec<u64> = setup
            .regions
            .iter()
            .map(|r| {
                let class = &setup.strings[r[3] as usize];
                chunk.iter().enumerate().fold(0u64, |m, (j, &k)| {
                    let of = rs.rules[k].class.as_deref().unwrap_or_default() == class;
                    m | (of as u64) << j
                })
            })
            .collect();
        let all = if chunk.len() == 64 {
            u64::MAX
        } else {
            (1u64 << chunk.len()) - 1
        };
        let found: Vec<Vec<Option<usize>>> = (0..nloc)
            .into_par_iter()
            .map(|l| {
                let mut first = vec![None; chunk.len()];
                if trace.defs.locations[l].rank.is_none() {
                    return first;
                }
                let ev = &trace.events[l];
                let mut want = all;
                for (i, (&kind, &a)) in ev.kind.iter().zip(ev.arg.iter()).enumerate() {
                    if kind != EventKind::Enter {
                        continue;
                    }
                    let m = mask[a as usize] & want;
                    if m != 0 {
                        for (j, f) in first.iter_mut().enumerate() {
                            if m >> j & 1 == 1 {
                                *f = Some(i);
                            }
                        }
                        want &= !m;
                        if want == 0 {
                            break;
                        }
                    }
                }
                first
            })
            .collect();
        for (l, f) in found.into_iter().enumerate() {
            for (j, i) in f.into_iter().enumerate() {
                firsts[c * 64 + j][l] = i;
            }
        }
    }
    for (w, &k) in world_rules.iter().enumerate() {
        let mut members = Vec::new();
        let mut ranked: Vec<(u32, usize)> = trace
            .defs
            .locations
            .iter()
            .enumerate()
            .filter_map(|(l, loc)| loc.rank.map(|r| (r, l)))
            .collect();
        ranked.sort_unstable();
        for (rank, l) in ranked {
            let first = firsts[w][l];
            let Some(i) = first else { continue };
            let ctx = setup.ctx(&[], &[], &[], &[], &none);
            let leave = ptr(replay, Ptr::Exit, l as u32, i as u32);
            members.push(Member {
                loc: l as u32,
                event: i as u32,
                begin: ctx.seconds(l as u32, i as u32),
                end: ctx.seconds(l as u32, if leave == NONE { i as u32 } else { leave }),
                sent: 0.0,
                recv: 0.0,
                rank,
                tasks: 0.0,
            });
        }
        let n = members.len() as f64;
        let insts = vec![(members, [Value::Num(n), Value::None, Value::None])];
        let (c, v) = run_instances(&[k], &insts, 1, &[]);
        for x in &c {
            add_found(&mut values, Found::One(x));
        }
        coll_violators.extend(v);
    }
    // OpenMP teams and barrier instances (§4.7, §5.6): members are threads
    let team_rules = by_trigger(Trigger::Team);
    let barrier_rules = by_trigger(Trigger::ThreadBarrier);
    let secs = |t: u64| (t as f64 - trace.global_offset as f64) / trace.timer_resolution as f64;
    let member = |loc: u32, thread: u32, enter: u32, leave: u32, tasks: u64| {
        let ev = &trace.events[loc as usize];
        let end = if leave == NONE { enter } else { leave };
        Member {
            loc,
            event: enter,
            begin: secs(ev.time[enter as usize]),
            end: secs(ev.time[end as usize]),
            sent: 0.0,
            recv: 0.0,
            rank: thread,
            tasks: tasks as f64 / trace.timer_resolution as f64,
        }
    };
    if !team_rules.is_empty() && !replay.omp.teams.is_empty() {
        let insts: Vec<(Vec<Member>, [Value; 3])> = replay
            .omp
            .teams
            .iter()
            .map(|t| {
                let ms: Vec<Member> = t
                    .members
                    .iter()
                    .map(|mb| member(mb.loc, mb.thread, mb.enter, mb.leave, 0))
                    .collect();
                let n = ms.len() as f64;
                (
                    ms,
                    [
                        Value::Num(n),
                        Value::Num(secs(t.fork)),
                        Value::Num(secs(t.join)),
                    ],
                )
            })
            .collect();
        let (c, _) = run_instances(&team_rules, &insts, 3, &[]);
        for x in &c {
            add_found(&mut values, Found::One(x));
        }
    }
    if !barrier_rules.is_empty() && !replay.omp.barriers.is_empty() {
        let insts: Vec<(Vec<Member>, [Value; 3])> = replay
            .omp
            .barriers
            .iter()
            .map(|b| {
                let ms: Vec<Member> = b
                    .members
                    .iter()
                    .map(|b| {
                        let leave = ptr(replay, Ptr::Exit, b.loc, b.enter);
                        member(b.loc, b.thread, b.enter, leave, b.tasks)
                    })
                    .collect();
                let n = ms.len() as f64;
                (ms, [Value::Num(n), Value::None, Value::None])
            })
            .collect();
        let (c, _) = run_instances(&barrier_rules, &insts, 1, &[]);
        for x in &c {
            add_found(&mut values, Found::One(x));
        }
    }
    // §7.1: collective violations once per (instance, member), whichever rules saw them
    violations.collective = coll_violators.len() as u64;
    let m = replay.matching;
    violations.p2p = m.clock_violations;
    violations.max_p2p_s = m.max_violation_ticks as f64 / trace.timer_resolution as f64;
    let touched: std::collections::BTreeSet<u32> = coll_violators
        .iter()
        .chain(&replay.p2p_violators)
        .copied()
        .collect();
    violations.locations = touched.len() as u64;

    // Sums and derived metrics, children and dependencies first (§1).
    let ids: Vec<&str> = rs.rules.iter().map(|r| r.info.id.as_str()).collect();
    let children: Vec<Vec<usize>> = (0..nrules)
        .map(|k| {
            (0..nrules)
                .filter(|&c| rs.rules[c].info.parent.as_deref() == Some(ids[k]))
                .collect()
        })
        .collect();
    let mut done: Vec<bool> = rs
        .rules
        .iter()
        .map(|r| !matches!(r.on, Trigger::Sum | Trigger::Derived))
        .collect();
    loop {
        let mut progressed = false;
        for k in 0..nrules {
            if done[k] {
                continue;
            }
            let rule = &rs.rules[k];
            let deps: Vec<usize> = match rule.on {
                Trigger::Sum => children[k].clone(),
                _ => rule.uses_metrics.iter().map(|&m| m as usize).collect(),
            };
            if !deps.iter().all(|&d| done[d]) {
                continue;
            }
            let mut v = vec![0.0; ncnode * nloc];
            if rule.on == Trigger::Sum {
                for &d in &deps {
                    if !values[d].is_empty() {
                        for (a, b) in v.iter_mut().zip(&values[d]) {
                            *a += b;
                        }
                    }
                }
            } else if let Some(e) = &rule.value {
                let vals = &values;
                v.par_iter_mut().enumerate().for_each(|(idx, out)| {
                    let metric = |m: u16| vals[m as usize].get(idx).copied().unwrap_or(0.0);
                    let ctx = setup.ctx(&[], &[], &[], &[], &metric);
                    let mut env = vec![Value::None; rule.slots.max(1) as usize];
                    if !setup.prelude(rule, &ctx, &mut env) {
                        *out = 0.0;
                        return;
                    }
                    let x = ctx.eval(e, &mut env).num();
                    // §1.3 comp: rounding residue in (−1e-12, 0) is stored as 0
                    *out = if x.is_nan() || (x < 0.0 && x > -1e-12) {
                        0.0
                    } else {
                        x
                    };
                });
            }
            values[k] = v;
            done[k] = true;
            progressed = true;
        }
        if !progressed {
            break;
        }
    }

    // Report order: depth-first over the metric tree, siblings by `order`; metrics of a
    // paradigm the trace lacks are omitted with their subtree (§1.1.6).
    let has_paradigm = |p: &str| {
        let want = match p {
            "mpi" => Paradigm::MPI,
            "openmp" => Paradigm::OPENMP,
            _ => return true,
        };
        trace.defs.regions.iter().any(|r| r.paradigm == want)
    };
    let mut roots: Vec<usize> = (0..nrules)
        .filter(|&k| rs.rules[k].info.parent.is_none())
        .collect();
    let sort = |v: &mut Vec<usize>| v.sort_by_key(|&k| (rs.rules[k].info.order, k));
    sort(&mut roots);
    let mut order = Vec::new();
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(k) = stack.pop() {
        if rs.rules[k]
            .info
            .paradigm
            .as_deref()
            .is_some_and(|p| !has_paradigm(p))
        {
            continue;
        }
        order.push(k);
        let mut kids = children[k].clone();
        sort(&mut kids);
        stack.extend(kids.into_iter().rev());
    }
    for v in values.iter_mut() {
        if v.is_empty() {
            v.resize(ncnode * nloc, 0.0);
        }
    }
    let stats: Vec<HashMap<u32, FindingStats>> = dense_stats
        .into_iter()
        .map(|d| {
            d.into_iter()
                .enumerate()
                .filter(|(_, s)| s.n > 0)
                .map(|(c, s)| (c as u32, s))
                .collect()
        })
        .collect();
    let mut worst_map: Vec<HashMap<u32, Worst>> = vec![HashMap::new(); nrules];
    for (k, c, w) in worst {
        worst_map[k as usize].insert(c, w);
    }
    Analysis {
        order,
        values,
        stats,
        worst: worst_map,
        violations,
        nloc,
        ncnode,
        rules: orig,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace of `testdata/` (`name`: its directory) with its replay and `rs` specialised
    /// for it, what `Ctx` reads, for the tests that evaluate rule expressions by hand.
    struct Specialised {
        trace: Trace,
        replay: Replay,
        strings: Vec<String>,
        regions: RegionStrings,
        kind_names: [u32; 256],
        spec: RuleSet,
        had: Vec<Vec<(u32, u32)>>,
    }

    /// The trace in directory `name` of `testdata/`, and its replay.
    fn testdata_trace(name: &str) -> (Trace, Replay) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata")
            .join(name)
            .join("traces.otf2");
        let trace = crate::open(&path).unwrap();
        let replay = Replay::new(&trace);
        (trace, replay)
    }

    /// Sharing tells expressions apart as evaluation does: constants bit for bit.
    #[test]
    fn same_expr_compares_constants_bit_for_bit() {
        let sum = |c: f64| {
            Expr::Bin(
                BinOp::Add,
                Box::new(Expr::Path(0, Field::Bytes, None)),
                Box::new(Expr::Const(Value::Num(c))),
            )
        };
        assert!(same_expr(&sum(0.0), &sum(0.0)));
        assert!(!same_expr(&sum(0.0), &sum(-0.0)));
        assert!(!same_expr(&sum(1.0), &sum(2.0)));
        let path = |f| Expr::Path(0, f, None);
        assert!(!same_expr(&path(Field::Bytes), &path(Field::Tag)));
        assert!(!same_expr(
            &Expr::Path(0, Field::Bytes, None),
            &Expr::Path(1, Field::Bytes, None)
        ));
    }

    /// `eval::kind_field` gives what `Ctx::event_field` reads, on every event of every
    /// OTF2 trace in `testdata/` (blocking and non-blocking messages, cancelled requests,
    /// collectives, locks), for every field it claims the kind decides.
    #[test]
    fn kind_field_agrees_with_event_field_on_every_event() {
        let fields = [
            Field::Time,
            Field::Enter,
            Field::Leave,
            Field::Call,
            Field::Bytes,
            Field::Tag,
            Field::Rank,
            Field::Kind,
            Field::Send,
            Field::Recv,
            Field::Sent,
            Field::Received,
            Field::Cancelled,
            Field::LastRelease,
            Field::RegionName,
            Field::MemberBegin,
            Field::ItemSlot(0),
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let mut names = Vec::new();
        for group in ["generated", "scorep", "scorep-omp"] {
            for d in std::fs::read_dir(root.join(group)).unwrap() {
                let d = d.unwrap().path();
                if d.join("traces.otf2").exists() {
                    names.push(format!(
                        "{group}/{}",
                        d.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
        assert!(names.len() >= 20, "{names:?}");
        let (mut decided, mut kinds_seen) = (0u64, std::collections::BTreeSet::new());
        for name in &names {
            let (trace, replay) = testdata_trace(name);
            let mut interner = Interner::default();
            let (regions, kind_names) = trace_strings(&mut interner, &trace);
            let ctx = Ctx::of_trace(
                &trace,
                &replay,
                &regions,
                &kind_names,
                &[],
                &interner.strings,
            );
            for (l, ev) in trace.events.iter().enumerate() {
                for i in 0..ev.len() {
                    let kind = ev.kind[i];
                    kinds_seen.insert(kind as u8);
                    for f in fields {
                        if let Some(v) = eval::kind_field(kind, f, &kind_names) {
                            let got = ctx.event_field(l as u32, i as u32, f);
                            assert_eq!(got, v, "{name}: location {l}, event {i} ({kind:?}), {f:?}");
                            decided += 1;
                        }
                    }
                }
            }
        }
        // the traces hold the kinds whose fields the folding decides
        for k in [
            EventKind::MpiSend,
            EventKind::MpiIsend,
            EventKind::MpiRecv,
            EventKind::MpiIrecv,
            EventKind::MpiCollectiveEnd,
            EventKind::ThreadAcquireLock,
            EventKind::Enter,
        ] {
            assert!(
                kinds_seen.contains(&(k as u8)),
                "no {k:?} event in testdata"
            );
        }
        assert!(decided > 100_000, "{decided}");
    }

    impl Specialised {
        fn new(rs: &RuleSet, name: &str) -> Specialised {
            let (trace, replay) = testdata_trace(name);
            let mut interner = rs.interner.clone();
            let (regions, kind_names) = trace_strings(&mut interner, &trace);
            let spec = specialised(
                &trace,
                &replay,
                rs,
                &regions,
                &kind_names,
                &interner.strings,
            );
            Specialised {
                trace,
                replay,
                strings: interner.strings,
                regions,
                kind_names,
                spec,
                had: vec![Vec::new(); rs.rules.len()],
            }
        }

        /// A context without members, with queued instances `items`.
        fn ctx<'a>(
            &'a self,
            rs: &'a RuleSet,
            items: &'a [Vec<Value>],
            metric: &'a dyn Fn(u16) -> f64,
        ) -> Ctx<'a> {
            Ctx {
                trace: &self.trace,
                replay: &self.replay,
                regions: &self.regions,
                kind_names: &self.kind_names,
                regexes: &rs.regexes,
                strings: &self.strings,
                members: &[],
                member_vals: &[],
                items,
                had: &self.had,
                metric,
                shared: &[],
            }
        }
    }

    /// (location, event, time, value bits) of a worst instance.
    type WorstBits = (u32, u32, u64, u64);

    /// Passes run again in list mode (`analyse_with`).
    pub(super) static RERUNS: std::sync::atomic::AtomicUsize =
        std::sync::atomic::AtomicUsize::new(0);

    /// A rule whose `at` names either the trigger event or its partner on another location,
    /// with fractional severities (sums whose bits depend on their order) and clock-touched
    /// instances: cells written by their own location's pass and by others'.
    const OTHER_AT: &str = r#"
id = "test_other_at"
name = "Other at"
unit = "sec"
on = "event"
kinds = ["MpiSend", "MpiIsend", "MpiRecv", "MpiIrecv"]
severity = "E.time / 3 + 0.1"
at = "if E.kind == 'MpiSend' then E.recv else E"
violation = "E.time > 0.001"
description = "test"
diagnosis = "test"
"#;

    /// `hoist` takes out of a queue's `take` exactly the largest parts that do not read the
    /// queued instance, and the rest still reads it.
    #[test]
    fn hoisted_take_parts_do_not_read_the_queued_instance() {
        let rs = RuleSet::load(&[]).unwrap();
        let mut queues = 0;
        for r in &rs.rules {
            let Some(q) = &r.queue else { continue };
            queues += 1;
            let mut next = r.slots;
            let mut out = Vec::new();
            let rest = hoist(&q.take, q.slot, &mut next, &mut out);
            assert!(reads_slot(&rest, q.slot), "{}", r.info.id);
            assert!(!out.is_empty(), "{}: nothing hoisted", r.info.id);
            for (i, (s, e)) in out.iter().enumerate() {
                assert_eq!(*s, r.slots + i as u16);
                assert!(!reads_slot(e, q.slot), "{}", r.info.id);
                assert!(!matches!(e, Expr::Const(_) | Expr::Slot(_)));
            }
            assert_eq!(next, r.slots + out.len() as u16);
        }
        assert!(queues > 0, "no built-in rule has a queue");
        // a part that reads the queued instance is kept, the others become slots
        let e = Expr::Bin(
            BinOp::Gt,
            Box::new(Expr::Path(5, Field::Time, None)),
            Box::new(Expr::Neg(Box::new(Expr::Path(1, Field::Time, None)))),
        );
        let mut next = 9;
        let mut out = Vec::new();
        let rest = hoist(&e, 5, &mut next, &mut out);
        assert_eq!(out.len(), 1);
        assert!(matches!(rest, Expr::Bin(BinOp::Gt, _, ref b) if matches!(**b, Expr::Slot(9))));
    }

    /// A queue's `take` as written (tree walk, no hoisting) and as `consume` runs it
    /// (specialised, hoisted parts in their slots, compiled) agree on queued instances of
    /// every event pairing of a trace, item paths included.
    #[test]
    fn hoisted_compiled_take_agrees_with_take_as_written() {
        let rs = RuleSet::load(&[]).unwrap();
        let sp = Specialised::new(&rs, "scorep/wo");
        let (trace, spec) = (&sp.trace, &sp.spec);
        let none = |_: u16| 0.0;
        let mut checked = 0usize;
        let mut bounded = 0usize;
        let mut taken_some = false;
        for (r, sr) in rs.rules.iter().zip(&spec.rules) {
            let (Some(q), Some(_)) = (&r.queue, &sr.queue) else {
                continue;
            };
            let code = RuleCode::new(sr, &spec.rules);
            let take = code.take.as_ref().unwrap();
            let feeder = &rs.rules[q.of as usize];
            // queued instances: the feeder's environments with events in its slots
            let evs: Vec<(u32, u32)> = trace
                .events
                .iter()
                .enumerate()
                .flat_map(|(l, ev)| (0..ev.len() as u32).step_by(3).map(move |i| (l as u32, i)))
                .collect();
            let items: Vec<Vec<Value>> = evs
                .iter()
                .map(|&(l, i)| {
                    (0..feeder.slots)
                        .map(|j| {
                            Value::Event(l, (i + j as u32) % trace.events[l as usize].len() as u32)
                        })
                        .collect()
                })
                .collect();
            let ctx = sp.ctx(&rs, &items, &none);
            for &(l, i) in evs.iter().step_by(2) {
                let mut env = vec![Value::None; r.slots as usize + code.hoisted.len()];
                let n = trace.events[l as usize].len() as u32;
                for (j, v) in env.iter_mut().take(4).enumerate() {
                    *v = Value::Event(l, (i + j as u32) % n);
                }
                for (s, c) in &code.hoisted {
                    env[*s as usize] = c.run(&ctx, &mut env);
                }
                for k in 0..items.len() {
                    env[q.slot as usize] = Value::Item(k as u32);
                    let mut plain = env[..r.slots as usize].to_vec();
                    let x = ctx.eval(&q.take, &mut plain);
                    let y = take.run(&ctx, &mut env);
                    assert!(same(x, y), "{}: {x:?} != {y:?}", r.info.id);
                    // the key (computed as the instance is queued) against the bound
                    if let Some(b) = &code.bound {
                        let item = Ctx {
                            items: &items[k..k + 1],
                            ..ctx
                        };
                        let bound = b.bound.run(&ctx, &mut env).num();
                        assert_eq!(
                            b.passes(b.key_of(&item, q.slot), bound),
                            x.bool(),
                            "{}",
                            r.info.id
                        );
                        bounded += 1;
                    }
                    taken_some |= x.bool();
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000 && taken_some, "{checked}");
        // the built-in queue (wrong-order late sender) has the bound form
        assert_eq!(bounded, checked);
    }

    /// Accumulating passes (with their fallback for cells another location's pass wrote
    /// first) give the cube, the instance statistics and the worst instances of listing
    /// passes, bit for bit, with the built-in rules and with `OTHER_AT`.
    #[test]
    fn accumulating_passes_agree_with_listing_passes_bit_for_bit() {
        let dir = std::env::temp_dir().join(format!("perfexpert-acc-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("other_at.toml"), OTHER_AT).unwrap();
        let before = RERUNS.load(std::sync::atomic::Ordering::Relaxed);
        for extra in [vec![], vec![dir.clone()]] {
            for name in [
                "scorep/mixed8",
                "scorep/nb",
                "scorep/wo",
                "scorep/ls",
                "scorep/lr",
            ] {
                let (trace, replay) = testdata_trace(name);
                let rs = RuleSet::load(&extra).unwrap();
                let a = analyse_with(&trace, &replay, rs.clone(), true);
                let b = analyse_with(&trace, &replay, rs, false);
                for (k, (x, y)) in a.values.iter().zip(&b.values).enumerate() {
                    let same = x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
                    assert!(same, "{name} {}", a.rules.rules[k].info.id);
                }
                let stats =
                    |v: &Vec<HashMap<u32, FindingStats>>| -> Vec<Vec<(u32, u64, u64, u64)>> {
                        v.iter()
                            .map(|m| {
                                let mut x: Vec<_> = m
                                    .iter()
                                    .map(|(c, s)| {
                                        (*c, s.n, s.sev_cc.to_bits(), s.sev_rec.to_bits())
                                    })
                                    .collect();
                                x.sort_unstable();
                                x
                            })
                            .collect()
                    };
                assert_eq!(stats(&a.stats), stats(&b.stats), "{name}");
                let worst = |v: &Vec<HashMap<u32, Worst>>| -> Vec<Vec<(u32, Vec<WorstBits>)>> {
                    v.iter()
                        .map(|m| {
                            let mut x: Vec<_> = m
                                .iter()
                                .map(|(c, w)| {
                                    let i = w.instances().iter();
                                    (
                                        *c,
                                        i.map(|i| (i.loc, i.event, i.time, i.value.to_bits()))
                                            .collect(),
                                    )
                                })
                                .collect();
                            x.sort_unstable();
                            x
                        })
                        .collect()
                };
                assert_eq!(worst(&a.worst), worst(&b.worst), "{name}");
                if !extra.is_empty() {
                    let k = a.rules.index_of("test_other_at").unwrap();
                    assert!(a.stats[k].values().any(|s| s.sev_cc > 0.0), "{name}");
                }
            }
        }
        // the fallback ran (the built-in rules alone never need it)
        assert!(RERUNS.load(std::sync::atomic::Ordering::Relaxed) > before);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The expression as written (`a`), as rewritten (`b`) and `b` compiled (`code`) give
    /// the same value in `env` (`what` names the case when they do not).
    fn agree(ctx: &Ctx, a: &Expr, b: &Expr, code: &Code, env: &[Value], what: &dyn Fn() -> String) {
        let x = ctx.eval(a, &mut env.to_vec());
        let y = ctx.eval(b, &mut env.to_vec());
        let z = code.run(ctx, &mut env.to_vec());
        assert!(
            same(x, y) && same(x, z),
            "{}: {x:?} {y:?} {z:?}\n{b:?}",
            what()
        );
    }

    fn same(a: Value, b: Value) -> bool {
        match (a, b) {
            (Value::Num(x), Value::Num(y)) => {
                x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan()
            }
            _ => a == b,
        }
    }

    fn exprs(r: &Rule) -> Vec<&Expr> {
        let mut v: Vec<&Expr> = r
            .lets
            .iter()
            .map(|l| match l {
                Let::Inst(_, e) | Let::Member { expr: e, .. } => e,
            })
            .collect();
        v.extend(
            [
                &r.when,
                &r.for_members,
                &r.severity,
                &r.at,
                &r.violation,
                &r.value,
            ]
            .into_iter()
            .flatten(),
        );
        if let Some(g) = &r.group {
            v.push(&g.by);
            v.extend(&g.when);
        }
        if let Some(q) = &r.queue {
            v.push(&q.take);
        }
        v
    }

    /// Every expression of every built-in rule gives the same value three ways — as written,
    /// specialised for the trace (tables, constants, paths), and compiled into closures —
    /// with events of every kind, inside and outside calls, in the trigger slots.
    /// The rules of the event, receive and send passes folded for the kind of their
    /// trigger event and their common subexpressions shared (`fold_kinds`, `share`, as
    /// `analyse_with` does per pass and kind), evaluated rule after rule on each event of
    /// that kind with one set of shared values per event, give what the rules as written
    /// give: interpreted and compiled.
    #[test]
    fn kind_folded_and_shared_rules_agree_with_the_rules_as_written() {
        // the built-in rules, and with two rules whose expressions over bindings of their
        // own read alike (what must not be shared)
        let extra = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/rules-shared");
        let rule_sets = [
            RuleSet::load(&[]).unwrap(),
            RuleSet::load(&[extra]).unwrap(),
        ];
        let (mut total_shared, mut changed, mut all) = (0usize, 0usize, 0usize);
        for (rs, name) in rule_sets.iter().flat_map(|rs| {
            [
                "scorep/mixed8",
                "scorep/npb_lu_S",
                "scorep/nb",
                "scorep/wo",
                "scorep/rootcoll",
                "scorep-omp/omp_lock",
            ]
            .map(|n| (rs, n))
        }) {
            let sp = Specialised::new(rs, name);
            let (trace, spec) = (&sp.trace, &sp.spec);
            let none = |_: u16| 0.0;
            let mut ctx = sp.ctx(rs, &[], &none);
            let konst = |e: &Expr| ctx.eval(e, &mut [Value::None]);
            let mut checked = 0usize;
            // per (trigger, kind): the rules tried, folded and shared, compiled
            type Compiled = Vec<(usize, Rule, Vec<Code>)>;
            let mut passes: HashMap<(u8, u8), Compiled> = HashMap::new();
            let triggers = [Trigger::Event, Trigger::Receive, Trigger::Send];
            for (t, trigger) in triggers.into_iter().enumerate() {
                let n = trigger_slots(trigger).unwrap_or(1);
                for kind in EventKind::ALL {
                    let mut here: Vec<(usize, Rule)> = Vec::new();
                    for (k, s) in spec.rules.iter().enumerate() {
                        if s.on != trigger || s.queue.is_some() || !fires_on(s, kind) {
                            continue;
                        }
                        let field = |slot: u16, f: Field| {
                            (slot == 0)
                                .then(|| eval::kind_field(kind, f, &sp.kind_names))
                                .flatten()
                        };
                        let f = specialise_rule(s, &|e: &Expr| fold_kinds(e, &field, &konst));
                        for (a, b) in exprs(s).iter().zip(exprs(&f)) {
                            changed += (format!("{a:?}") != format!("{b:?}")) as usize;
                        }
                        here.push((k, f));
                    }
                    let mut refs: Vec<&mut Rule> = here.iter_mut().map(|(_, r)| r).collect();
                    total_shared += share(&mut refs, n) as usize;
                    let compiled = here
                        .into_iter()
                        .map(|(k, r)| {
                            let code = exprs(&r).into_iter().map(compile).collect();
                            (k, r, code)
                        })
                        .collect();
                    passes.insert((t as u8, kind as u8), compiled);
                }
            }
            let cells = vec![std::cell::Cell::new(None); 64];
            ctx.shared = &cells;
            for (l, ev) in trace.events.iter().enumerate() {
                let n = ev.len() as u32;
                for i in 0..n {
                    let kind = ev.kind[i as usize];
                    for t in 0..3u8 {
                        let Some(rules) = passes.get(&(t, kind as u8)) else {
                            continue;
                        };
                        cells.iter().for_each(|c| c.set(None));
                        for (k, f, code) in rules {
                            let r = &rs.rules[*k];
                            let mut env = vec![Value::None; r.slots.max(1) as usize];
                            // the trigger slots as the pass binds them, the same for
                            // every rule; the others differ from rule to rule
                            let nt = trigger_slots(triggers[t as usize]).unwrap_or(1) as usize;
                            for (j, v) in env.iter_mut().enumerate() {
                                *v = if j < nt {
                                    Value::Event(l as u32, (i + j as u32) % n)
                                } else {
                                    Value::Num((j + 1000 * k) as f64)
                                };
                            }
                            for ((ea, eb), c) in exprs(r).iter().zip(exprs(f)).zip(code) {
                                agree(&ctx, ea, eb, c, &env, &|| {
                                    format!("{name} {} on {kind:?}", r.info.id)
                                });
                                checked += 1;
                            }
                        }
                    }
                }
            }
            assert!(checked > 0, "{name}: no evaluation");
            all += checked;
        }
        assert!(all > 5000, "only {all} evaluations");
        eprintln!("{all} evaluations, {total_shared} shared values");
        assert!(changed > 0, "folding changed no expression");
        assert!(total_shared > 0, "no expression shared");
    }

    #[test]
    fn specialised_and_compiled_rules_agree_with_the_rules_as_written() {
        let rs = RuleSet::load(&[]).unwrap();
        for name in [
            "scorep/mixed8",
            "scorep/nb",
            "scorep/wo",
            "scorep-omp/omp_lock",
        ] {
            let sp = Specialised::new(&rs, name);
            let (trace, spec) = (&sp.trace, &sp.spec);
            let none = |_: u16| 0.0;
            let ctx = sp.ctx(&rs, &[], &none);
            let mut checked = 0usize;
            for (r, s) in rs.rules.iter().zip(&spec.rules) {
                let (a, b) = (exprs(r), exprs(s));
                assert_eq!(a.len(), b.len());
                for (ea, eb) in a.iter().zip(&b) {
                    let code = compile(eb);
                    for (l, ev) in trace.events.iter().enumerate() {
                        let n = ev.len() as u32;
                        for i in (0..n).step_by(3) {
                            let mut env = vec![Value::None; r.slots.max(1) as usize];
                            for (j, v) in env.iter_mut().enumerate() {
                                *v = match j {
                                    0..4 => Value::Event(l as u32, (i + j as u32) % n),
                                    _ => Value::Num(j as f64),
                                };
                            }
                            agree(&ctx, ea, eb, &code, &env, &|| {
                                format!("{name} {}", r.info.id)
                            });
                            checked += 1;
                        }
                    }
                }
            }
            assert!(checked > 1000, "{name}: only {checked} evaluations");
        }
    }
}
