//! A rule's instance-level expressions compiled into closures (`eval::compile`), with its
//! queue's `take` hoisted and bounded (`hoist`): what firing a rule runs.

use super::guard::{guard_of, SevGuard};
use super::hoist::{carries_items, hoist, TakeBound};
use crate::analysis::eval::{compile, Code};
use crate::rules::compile::Expr;
use crate::rules::{Let, Rule};

/// A rule's instance-level expressions compiled (`eval::compile`).
pub(crate) struct RuleCode {
    /// Instance-level lets (slot, value) in order.
    pub(crate) lets: Vec<(u16, Code)>,
    pub(crate) when: Option<Code>,
    pub(crate) severity: Option<Code>,
    pub(crate) at: Option<Code>,
    pub(crate) violation: Option<Code>,
    /// `group.by`, `group.when`.
    pub(crate) group: Option<(Code, Option<Code>)>,
    /// `queue.take`, its parts that do not read the queued instance (`hoist`) replaced by
    /// slots from `rule.slots` on.
    pub(crate) take: Option<Code>,
    /// Those parts: (slot, code), evaluated once per trigger before the queued instances
    /// are tried.
    pub(crate) hoisted: Vec<(u16, Code)>,
    /// The `take` as a bound on a key of the queued instance alone, when it has that form.
    pub(crate) bound: Option<TakeBound>,
    /// A necessary condition for an instance, read before the rest (`guard`).
    pub(crate) guard: Option<SevGuard>,
}

impl RuleCode {
    /// Rule `r` of `rules`, compiled.
    pub(crate) fn new(r: &Rule, rules: &[Rule]) -> RuleCode {
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
            guard: guard_of(r),
        }
    }
}
