//! Prefilters: the `&&` operands of a rule's `when` that read only the region of the call
//! around a trigger event, as one table per trigger slot checked before the rest is run.

use super::passes::trigger_slots;
use crate::analysis::eval::{compile, Code};
use crate::rules::compile::{BinOp, Expr};
use crate::rules::Rule;

/// The parts of a rule's `when` that read nothing but the region of the call around a
/// trigger event (`E.call.paradigm == 'mpi'`, `R.call.class in [...]`), evaluated once per
/// region before the replay is walked, and the rest of the `when`. `when` holds exactly
/// when every one of its `&&` operands does, so the rule fires iff every check passes and
/// the rest holds; expressions have no side effects, so evaluating fewer changes nothing.
pub(crate) struct Prefilter {
    /// (trigger slot, per region index — and one more for "no enclosing call" — the value
    /// of the operands that read that slot's call)
    pub(crate) checks: Vec<(u16, Vec<bool>)>,
    pub(crate) rest_code: Option<Code>,
}

/// Rule `r`'s prefilter, for a rule of the event, receive or send pass whose `when` has
/// operands that read only a trigger event's call region.
pub(crate) fn prefilter_of(r: &Rule) -> Option<Prefilter> {
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
