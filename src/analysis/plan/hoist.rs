//! Hoisting a queue's `take`: its parts that do not read the queued instance are evaluated
//! once per trigger, and a `take` of the form `key OP bound` becomes a `TakeBound` that lets
//! a consumer skip a queue whose extreme key fails the bound.

use crate::analysis::eval::{compile, Code, Ctx};
use crate::rules::compile::{BinOp, Expr, Value};
use crate::rules::{Rule, Trigger};

/// A queue's `take` of the form `key OP bound` (after `hoist`; either side first in the
/// file), where `key` reads nothing but the queued instance and `bound` nothing of it, and
/// OP is `<`, `<=`, `>` or `>=`. Each instance's key is computed once, when it is queued,
/// and the queue keeps its extreme key: when even that fails the bound, no instance can be
/// taken and the queue is not walked (`Engine::consume`). An absent key, an absent bound
/// and NaN never compare true, as in `eval::apply`.
pub(crate) struct TakeBound {
    pub(crate) key: Code,
    pub(crate) op: BinOp,
    pub(crate) bound: Code,
}

impl TakeBound {
    /// From a hoisted `take` in which slot `q` holds the queued instance (`slots`: every
    /// slot the take may read).
    pub(crate) fn new(take: &Expr, q: u16, slots: u16) -> Option<TakeBound> {
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
    pub(crate) fn key_of(&self, ctx: &Ctx, q: u16) -> f64 {
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
    pub(crate) fn wants_max(&self) -> bool {
        matches!(self.op, BinOp::Gt | BinOp::Ge)
    }

    /// Whether an instance with key `k` (NaN: absent) passes bound `b`.
    pub(crate) fn passes(&self, k: f64, b: f64) -> bool {
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
pub(crate) fn reads_slot(e: &Expr, q: u16) -> bool {
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
pub(crate) fn hoist(e: &Expr, q: u16, next: &mut u16, out: &mut Vec<(u16, Expr)>) -> Expr {
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
pub(crate) fn carries_items(rules: &[Rule], k: usize) -> bool {
    let r = &rules[k];
    r.queue.is_some()
        || (r.on == Trigger::Rule && r.of.is_some_and(|f| carries_items(rules, f as usize)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::plan::testing::{same, Specialised};
    use crate::analysis::plan::RuleCode;
    use crate::rules::compile::Field;
    use crate::rules::RuleSet;

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
                        let bound = b.bound.num(&ctx, &mut env);
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
}
