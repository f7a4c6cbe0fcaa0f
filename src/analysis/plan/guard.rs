//! Severity guards: a necessary condition for a rule's severity to be positive, read in
//! clock ticks before the rule's lets, `when` and severity are evaluated.
//!
//! A rule keeps an instance only where its severity is a positive number (§4.1.1). Where the
//! severity is built from event times by `-`, `min`, `max`, `pos` and `if`, that requires
//! some times to be later than others; a time in seconds is `(tick - offset) / resolution`,
//! which never decreases as the tick grows (a positive resolution; every rounding step is
//! monotone), so a later time in seconds has a later tick. The guard compares the ticks:
//! where it fails the severity is not positive and the rule keeps nothing — unless a group
//! holds the candidate (a group keeps its best candidate whatever its sign), so a guard is
//! made only for a rule without a group or whose group's `when` reads the trigger events
//! alone, and is read only where that `when` does not hold (`Engine::fire_when`).

use super::passes::trigger_slots;
use crate::analysis::eval::{ptr, Code, Ctx, Ptr};
use crate::replay::NONE;
use crate::rules::compile::{BinOp, Expr, Field, Func, Value};
use crate::rules::{Let, Rule};

/// Which time of the event in a slot a guard compares.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum At {
    /// The event's own time (`X.time`).
    Event,
    /// Its call's ENTER (`X.enter.time`), LEAVE (`X.leave.time`).
    Enter,
    Leave,
}

/// A necessary condition for a severity to be positive, as it is derived (`Forms`).
#[derive(Clone, Debug, PartialEq)]
enum Cond {
    /// The severity is never positive.
    Never,
    /// The tick of the first time is later than the second's (either unknown: may hold).
    Later((u16, At), (u16, At)),
    All(Vec<Cond>),
    Any(Vec<Cond>),
}

/// At most this many clauses in a guard's conjunctive form.
const MAX_CLAUSES: usize = 8;

/// A time a guard compares.
type Time = (u16, At);

/// Pairs of times, one of which must have its first later.
type Clause = Box<[(Time, Time)]>;

/// A `Cond` as the passes read it: every clause must have a pair of times whose first is
/// later (or unknown); the clauses of one pair apart.
#[derive(Debug, PartialEq)]
pub(crate) struct Guard {
    pairs: Box<[(Time, Time)]>,
    clauses: Box<[Clause]>,
}

/// A rule's guard with the code that decides whether it may be read: the group's `when`
/// (`None`: the rule has no group).
pub(crate) struct SevGuard {
    pub(crate) guard: Guard,
    pub(crate) grouped: Option<Code>,
}

impl SevGuard {
    /// Whether the rule may keep an instance on the trigger bound in `env`: false only
    /// where no group holds the candidate and the guard fails. `first`: the pair compared
    /// first (`Guard::holds`).
    #[inline(always)]
    pub(crate) fn may_keep(&self, c: &Ctx, env: &mut [Value], first: &mut u8) -> bool {
        // ticks order seconds only with a resolution of a tick or more (finite seconds)
        // (the resolution is an integer, never NaN)
        if c.clock[1] < 1.0 || self.grouped.as_ref().is_some_and(|w| w.truth(c, env)) {
            return true;
        }
        self.guard.holds(c, env, first)
    }
}

impl Guard {
    /// `c` in conjunctive form, when it has few enough clauses.
    fn of(c: &Cond) -> Option<Guard> {
        let (mut pairs, mut clauses) = (Vec::new(), Vec::new());
        for v in cnf(c)? {
            match v[..] {
                [p] => pairs.push(p),
                _ => clauses.push(v.into_boxed_slice()),
            }
        }
        Some(Guard {
            pairs: pairs.into(),
            clauses: clauses.into(),
        })
    }

    /// Whether the condition may hold on the events bound in `env`. The pairs that must
    /// all hold are compared from pair `first` on, the one that failed last on this walk:
    /// `first` becomes the pair that fails (the pairs read nothing but times, so the order
    /// they are compared in changes nothing but how many are).
    /// Pair `first` is compared in place (the walk's triggers mostly stop there), the
    /// others out of line (`holds_rest`).
    #[inline(always)]
    pub(crate) fn holds(&self, c: &Ctx, env: &[Value], first: &mut u8) -> bool {
        if let Some(p) = self.pairs.get(*first as usize) {
            if !later(c, env, p) {
                return false;
            }
        }
        self.holds_rest(c, env, first)
    }

    /// `holds` after pair `first` held (or where there is none).
    #[inline(never)]
    fn holds_rest(&self, c: &Ctx, env: &[Value], first: &mut u8) -> bool {
        let f = *first as usize;
        for (j, p) in self.pairs.iter().enumerate() {
            if j != f && !later(c, env, p) {
                *first = j as u8;
                return false;
            }
        }
        self.clauses
            .iter()
            .all(|p| p.iter().any(|p| later(c, env, p)))
    }
}

/// Whether the first time of pair `(a, b)` has a later tick than the second (either unknown:
/// it may).
#[inline(always)]
fn later(c: &Ctx, env: &[Value], &(a, b): &(Time, Time)) -> bool {
    match (tick(c, env, a), tick(c, env, b)) {
        (Some(x), Some(y)) => x > y,
        _ => true,
    }
}

/// `c` as clauses (all must hold) of pairs (either may hold); `None` when it is too large.
#[allow(clippy::type_complexity)]
fn cnf(c: &Cond) -> Option<Vec<Vec<(Time, Time)>>> {
    Some(match c {
        Cond::Never => vec![Vec::new()],
        Cond::Later(a, b) => vec![vec![(*a, *b)]],
        Cond::All(v) => {
            let mut out = Vec::new();
            for x in v {
                out.extend(cnf(x)?);
            }
            out
        }
        Cond::Any(v) => {
            let mut out = vec![Vec::new()];
            for x in v {
                let mut next = Vec::new();
                for p in &out {
                    for q in cnf(x)? {
                        next.push([&p[..], &q[..]].concat());
                    }
                }
                out = next;
                if out.len() > MAX_CLAUSES {
                    return None;
                }
            }
            out
        }
    })
    .filter(|v| v.len() <= MAX_CLAUSES)
}

/// The tick of time `at` of the event in slot `s`, read as `typed` reads its time in
/// seconds (`None` where that gives no number).
#[inline(always)]
fn tick(c: &Ctx, env: &[Value], (s, at): (u16, At)) -> Option<u64> {
    let Value::Event(l, i) = env[s as usize] else {
        return None;
    };
    // the location's columns taken from the context's table (`Ctx::cols`), as `ptr` and
    // `Times::get` read them
    if let Some(col) = c.cols.get(l as usize) {
        let e = match at {
            At::Event => i,
            At::Enter | At::Leave => match col.ptrs.enterptr(i as usize) {
                NONE => return None,
                e if at == At::Enter => e,
                e => match col.ptrs.exitptr(e as usize) {
                    NONE => return None,
                    x => x,
                },
            },
        };
        return Some(col.time.get(e as usize));
    }
    let e = match at {
        At::Event => i,
        At::Enter | At::Leave => match ptr(c.replay, Ptr::Enter, l, i) {
            NONE => return None,
            e if at == At::Enter => e,
            e => match ptr(c.replay, Ptr::Exit, l, e) {
                NONE => return None,
                x => x,
            },
        },
    };
    Some(c.trace.events[l as usize].time.get(e as usize))
}

/// Rule `r`'s severity guard, when its severity has a form that gives one and no group
/// keeps candidates the guard would refuse (see the module).
pub(crate) fn guard_of(r: &Rule) -> Option<SevGuard> {
    let grouped = match &r.group {
        None => None,
        Some(g) => {
            let n = trigger_slots(r.on)?;
            let w = g.when.as_ref()?;
            if !reads_below(w, n) {
                return None;
            }
            Some(crate::analysis::eval::compile(w))
        }
    };
    let mut lets: Vec<(u16, &Expr)> = Vec::new();
    for l in &r.lets {
        if let Let::Inst(s, e) = l {
            // a slot written twice: its reads are not one expression
            if lets.iter().any(|(t, _)| t == s) {
                return None;
            }
            lets.push((*s, e));
        }
    }
    let g = Forms { lets: &lets };
    let guard = Guard::of(&g.pos(r.severity.as_ref()?, 0)?)?;
    Some(SevGuard { guard, grouped })
}

/// `e` reads nothing but slots below `n` (and constants, region tables of those slots).
fn reads_below(e: &Expr, n: u16) -> bool {
    match e {
        Expr::Const(_) => true,
        Expr::Slot(s) | Expr::Path(s, ..) | Expr::Table(s, _) => *s < n,
        Expr::Not(a) => reads_below(a, n),
        Expr::Bin(_, a, b) => reads_below(a, n) && reads_below(b, n),
        _ => false,
    }
}

/// How deep a guard follows lets into lets.
const DEPTH: u32 = 8;

/// The forms a guard is read from; `lets`: the rule's instance-level lets (slot,
/// expression), each slot written once.
struct Forms<'a> {
    lets: &'a [(u16, &'a Expr)],
}

/// Both conditions (`None`: unknown, may hold).
fn all(a: Option<Cond>, b: Option<Cond>) -> Option<Cond> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(Cond::Never), _) | (_, Some(Cond::Never)) => Some(Cond::Never),
        (Some(x), Some(y)) => Some(Cond::All(vec![x, y])),
    }
}

/// Either condition.
fn any(a: Option<Cond>, b: Option<Cond>) -> Option<Cond> {
    match (a, b) {
        (None, _) | (_, None) => None,
        (Some(Cond::Never), x) | (x, Some(Cond::Never)) => x,
        (Some(x), Some(y)) => Some(Cond::Any(vec![x, y])),
    }
}

impl Forms<'_> {
    /// `e` through the lets and shared values it names: the expression that gives its value.
    fn resolve<'e>(&'e self, e: &'e Expr, depth: u32) -> Option<&'e Expr> {
        match e {
            Expr::Shared(_, x) => self.resolve(x, depth),
            Expr::Slot(s) => match self.lets.iter().find(|(t, _)| t == s) {
                Some((_, x)) if depth < DEPTH => self.resolve(x, depth + 1),
                _ => Some(e),
            },
            e => Some(e),
        }
    }

    /// A time of an event in a slot, as `typed` reads it in place.
    fn time(&self, e: &Expr, depth: u32) -> Option<(u16, At)> {
        match self.resolve(e, depth)? {
            Expr::Path(s, Field::Time, None) => Some((*s, At::Event)),
            Expr::Path(s, Field::Enter, Some(Field::Time)) => Some((*s, At::Enter)),
            Expr::Path(s, Field::Leave, Some(Field::Time)) => Some((*s, At::Leave)),
            _ => None,
        }
    }

    /// Necessary for `e` to be a positive number.
    fn pos(&self, e: &Expr, depth: u32) -> Option<Cond> {
        if depth > DEPTH {
            return None;
        }
        let d = depth + 1;
        match self.resolve(e, depth)? {
            Expr::Const(v) => Some(match v {
                Value::Num(x) if *x > 0.0 => return None,
                _ => Cond::Never,
            }),
            // x - y > 0 only where x > y (NaN is not positive)
            Expr::Bin(BinOp::Sub, a, b) => self.later(a, b, d),
            Expr::Call(Func::Pos, args) if args.len() == 1 => self.pos(&args[0], d),
            Expr::Call(f @ (Func::Min | Func::Max), args) if args.len() == 2 => {
                let (x, y) = (self.pos(&args[0], d), self.pos(&args[1], d));
                if *f == Func::Min {
                    all(x, y)
                } else {
                    any(x, y)
                }
            }
            Expr::If(k, a, b) => {
                let t = all(self.truth(k, true, d), self.pos(a, d));
                any(t, all(self.truth(k, false, d), self.pos(b, d)))
            }
            _ => None,
        }
    }

    /// `min(x, y)` (true) or `max(x, y)` (false) as `e` resolves.
    fn minmax<'e>(&'e self, e: &'e Expr, depth: u32) -> Option<(bool, &'e Expr, &'e Expr)> {
        match self.resolve(e, depth)? {
            Expr::Call(f @ (Func::Min | Func::Max), args) if args.len() == 2 => {
                Some((*f == Func::Min, &args[0], &args[1]))
            }
            _ => None,
        }
    }

    /// Necessary for `a > b`, both numbers (neither NaN).
    fn later(&self, a: &Expr, b: &Expr, depth: u32) -> Option<Cond> {
        if depth > DEPTH {
            return None;
        }
        let d = depth + 1;
        if let (Some(x), Some(y)) = (self.time(a, depth), self.time(b, depth)) {
            return Some(Cond::Later(x, y));
        }
        let minmax = |e| self.minmax(e, depth);
        // min(x, y) > b: both; max(x, y) > b: either (min and max of two numbers are
        // one of them)
        if let Some((min, x, y)) = minmax(a) {
            let (p, q) = (self.later(x, b, d), self.later(y, b, d));
            return if min { all(p, q) } else { any(p, q) };
        }
        if let Some((min, x, y)) = minmax(b) {
            let (p, q) = (self.later(a, x, d), self.later(a, y, d));
            return if min { any(p, q) } else { all(p, q) };
        }
        None
    }

    /// Necessary for condition `k` to be the boolean `want`.
    fn truth(&self, k: &Expr, want: bool, depth: u32) -> Option<Cond> {
        if depth > DEPTH {
            return None;
        }
        let d = depth + 1;
        match self.resolve(k, depth)? {
            Expr::Not(x) => self.truth(x, !want, d),
            Expr::Bin(BinOp::And, a, b) if want => {
                all(self.truth(a, true, d), self.truth(b, true, d))
            }
            Expr::Bin(BinOp::Or, a, b) if !want => {
                all(self.truth(a, false, d), self.truth(b, false, d))
            }
            // on two times (numbers, never NaN): `a < b` true or `a >= b` false is `b > a`,
            // `a > b` true or `a <= b` false is `a > b`
            Expr::Bin(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
                let (x, y) = (self.time(a, depth)?, self.time(b, depth)?);
                match (op, want) {
                    (BinOp::Lt, true) | (BinOp::Ge, false) => Some(Cond::Later(y, x)),
                    (BinOp::Gt, true) | (BinOp::Le, false) => Some(Cond::Later(x, y)),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{plan_ctx, testdata_trace};
    use super::super::{PassRules, Plan};
    use crate::rules::compile::Value;
    use crate::rules::RuleSet;

    /// Wherever a rule's guard refuses a trigger, whatever pair it compares first, its
    /// severity (its lets evaluated first) is not a positive number: on every event of
    /// each kind of the built-in rules' passes, its slots bound to that event and to events
    /// after it (not only true partners). The guards of the receive and send passes refuse
    /// some triggers.
    #[test]
    fn a_refused_trigger_has_no_positive_severity() {
        let rs = RuleSet::load(&[]).unwrap();
        let (mut guarded, mut refused) = (0usize, 0usize);
        for name in [
            "scorep/ls",
            "scorep/lr",
            "scorep/wo",
            "scorep/mixed8",
            "scorep/nb",
        ] {
            let (trace, replay) = testdata_trace(name);
            let plan = Plan::new(&trace, &replay, &rs);
            let ctx = plan_ctx(&plan, &trace, &replay);
            let tables: Vec<&PassRules> = (plan.passes.iter())
                .flat_map(|p| [p].into_iter().chain(p.rider.as_deref().map(|r| &r.rules)))
                .collect();
            for p in tables {
                let nt = super::trigger_slots(p.trigger).unwrap_or(1) as u32;
                for (kind, here) in p.by_kind.iter().enumerate() {
                    for &j in here {
                        let r = &p.folded[j];
                        let Some((code, _)) = &r.code else { continue };
                        let Some(g) = &code.guard else { continue };
                        guarded += 1;
                        for (l, ev) in trace.events.iter().enumerate() {
                            let n = ev.len() as u32;
                            for i in (0..n).filter(|&i| ev.kind[i as usize] as usize == kind) {
                                let mut env = vec![Value::None; r.slots.max(1)];
                                for (s, v) in env.iter_mut().enumerate().take(nt as usize) {
                                    *v = Value::Event(l as u32, (i + s as u32) % n);
                                }
                                let keep = g.may_keep(&ctx, &mut env, &mut 0);
                                // the pair compared first (the one that failed last on a
                                // walk) changes nothing but how many pairs are compared
                                for f in 1..=super::MAX_CLAUSES as u8 {
                                    let mut first = f;
                                    let k = g.may_keep(&ctx, &mut env, &mut first);
                                    assert_eq!(k, keep, "{name}: rule {} first {f}", r.rule);
                                }
                                if keep {
                                    continue;
                                }
                                refused += 1;
                                for (s, c) in &code.lets {
                                    env[*s as usize] = c.run(&ctx, &mut env);
                                }
                                let sev = code.severity.as_ref().unwrap().num(&ctx, &mut env);
                                assert!(
                                    sev.is_nan() || sev <= 0.0,
                                    "{name}: rule {} {sev}",
                                    r.rule
                                );
                            }
                        }
                    }
                }
            }
        }
        assert!(
            guarded > 0 && refused > 0,
            "{guarded} guarded, {refused} refused"
        );
    }
}
