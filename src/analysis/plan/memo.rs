//! Memoised rule lists: a list of rules tried on one kind of trigger event (`PassRules::lists`)
//! whose instances are only booked at the trigger event itself, and whose `when` and
//! severity read the trigger only through a few inputs (`inputs`) besides the region of its
//! call, gives the same instances for every trigger with the same kind, region, call path
//! and input values. The walk evaluates the inputs, and the rules only for a key it has not
//! met (`pass::memo`).

use super::passes::KindRule;
use super::share::same_expr;
use super::specialise::is_pure;
use crate::analysis::eval::{compile, Code};
use crate::rules::compile::{Expr, Field, Func};
use crate::rules::{Let, Rule};

/// The inputs of a memoised list, compiled: their values, with the kind, region and call
/// path of the trigger event, decide what its rules book.
pub(crate) struct MemoSpec {
    pub(crate) inputs: Vec<Code>,
}

/// The most inputs a memoised list has (a key's size, `pass::memo`).
pub(crate) const MAX_INPUTS: usize = 4;

/// Whether `e` is an input: a value read from the trigger events (slots `0..n`) by one
/// node — a slot, a field or field chain of one, a shared value, `exists` of one of those,
/// or the region table of a trigger slot other than 0 (slot 0's region is in the key).
fn is_input(e: &Expr, n: u16) -> bool {
    match e {
        Expr::Slot(s) | Expr::Path(s, ..) => *s < n,
        Expr::Table(s, _) => *s != 0 && *s < n,
        Expr::Field(a, f) => {
            !matches!(f, Field::MemberLet(_) | Field::ItemSlot(_)) && is_input(a, n)
        }
        Expr::Shared(..) => true,
        Expr::Call(Func::Exists, args) => args.len() == 1 && is_input(&args[0], n),
        _ => false,
    }
}

/// The inputs of `e` added to `out` (`is_input`, each once); false if `e` reads anything
/// else than its inputs, constants and slot 0's region table (a queued instance, a
/// member, `had`, `metric`).
fn inputs_of(e: &Expr, n: u16, out: &mut Vec<Expr>) -> bool {
    if is_input(e, n) {
        if !out.iter().any(|x| same_expr(x, e)) {
            out.push(e.clone());
        }
        return true;
    }
    match e {
        Expr::Const(_) => true,
        Expr::Table(s, _) => *s == 0,
        Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => inputs_of(a, n, out),
        Expr::Bin(_, a, b) => inputs_of(a, n, out) && inputs_of(b, n, out),
        Expr::If(a, b, c) => inputs_of(a, n, out) && inputs_of(b, n, out) && inputs_of(c, n, out),
        Expr::Call(f, args) => is_pure(*f) && args.iter().all(|a| inputs_of(a, n, out)),
        _ => false,
    }
}

/// The inputs of rule `r` (folded for one kind, `n` trigger slots) if its instances are a
/// function of them: no lets, group, queue or clock condition, `at` the trigger event
/// (slot 0), `when` and severity read only inputs (`inputs_of`); `None` otherwise.
pub(crate) fn memo_inputs(r: &Rule, n: u16) -> Option<Vec<Expr>> {
    let lets = r.lets.iter().any(|l| matches!(l, Let::Inst(..)));
    if lets || r.group.is_some() || r.queue.is_some() || r.violation.is_some() {
        return None;
    }
    if !matches!(r.at, Some(Expr::Slot(0))) {
        return None;
    }
    let mut out = Vec::new();
    let exprs = [&r.when, &r.severity];
    exprs
        .into_iter()
        .flatten()
        .all(|e| inputs_of(e, n, &mut out))
        .then_some(out)
}

/// The spec of the list `list` (indices into `folded`): every rule of it only books its
/// instances at the trigger event (`plain` slot 0, after `mark_plain`), without a
/// prefilter left, and has inputs (`KindRule::inputs`), at most `MAX_INPUTS` in all;
/// `None` otherwise.
pub(crate) fn memo_spec(list: &[usize], folded: &[KindRule]) -> Option<MemoSpec> {
    let mut inputs: Vec<Expr> = Vec::new();
    for &j in list {
        let r = &folded[j];
        let no_prefilter = matches!(&r.code, Some((_, None)));
        if r.plain != Some(0) || !no_prefilter {
            return None;
        }
        for e in r.inputs.as_ref()? {
            if !inputs.iter().any(|x| same_expr(x, e)) {
                inputs.push(e.clone());
            }
        }
    }
    (!list.is_empty() && inputs.len() <= MAX_INPUTS).then(|| MemoSpec {
        inputs: inputs.iter().map(compile).collect(),
    })
}
