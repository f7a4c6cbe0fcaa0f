//! The rule optimiser: turns a `RuleSet` into the `Plan` the passes execute on one trace —
//! the rules specialised for its regions (`specialise`), compiled (`code`, with queue
//! `take`s hoisted and bounded, `hoist`), and for the event, receive and send passes per
//! kind of trigger event folded (`fold`), with their common parts shared (`share`) and
//! their region-only checks prefiltered (`prefilter`), in one table per pass (`passes`).

mod code;
mod fold;
mod guard;
mod hoist;
mod memo;
mod passes;
mod prefilter;
mod share;
mod specialise;
#[cfg(test)]
pub(crate) mod testing;

pub(crate) use code::RuleCode;
pub(crate) use memo::{MemoSpec, MAX_INPUTS};
pub(crate) use passes::{KindRule, PassRules};
pub(crate) use prefilter::Prefilter;

use crate::analysis::eval::{Ctx, RegionStrings};
use crate::model::{classify, EventKind, Trace};
use crate::replay::Replay;
use crate::rules::causes::Cause;
use crate::rules::compile::{Expr, Interner, Value};
use crate::rules::{Rule, RuleSet, Trigger};

#[cfg(test)]
thread_local! {
    /// Tests: plans made on this thread leave every event-pass rule in the event pass
    /// (`passes::ride` not applied).
    pub(crate) static NO_RIDE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Tests: plans made on this thread memoise no rule list (`memo`).
    pub(crate) static NO_MEMO: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What the passes run on one trace: the rules specialised for it, the strings its
/// expressions compare, each rule compiled, who feeds whom, and the per-kind rule tables
/// of the event, receive and send passes.
pub(crate) struct Plan {
    /// The rules specialised for the trace (`specialise::specialised`), in rule order.
    pub(crate) rs: RuleSet,
    /// The interned strings: the rule set's, then the trace's regions, kinds and operations.
    pub(crate) strings: Vec<String>,
    pub(crate) regions: RegionStrings,
    pub(crate) kind_names: [u32; 256],
    /// Per collective operation code: its interned name.
    pub(crate) op_names: Vec<u32>,
    /// Rules fed by each rule's instances (`on = "rule"`), and queue consumers.
    pub(crate) fed: Vec<Vec<usize>>,
    pub(crate) queued: Vec<Vec<usize>>,
    /// Per rule: whether its instances feed rules or queues (`fed`, `queued`).
    pub(crate) feeds: Vec<bool>,
    /// Per rule: whether its instances are recorded with their partner event for the
    /// root causes (a point-to-point `[cause]`, `RuleSet::record_causes`).
    pub(crate) partner: Vec<bool>,
    /// Per rule: its expressions compiled, for the event, receive, send and rule passes.
    pub(crate) code: Vec<RuleCode>,
    /// The rule tables of the event, receive and send passes, in that order; a pass
    /// without rules has none.
    pub(crate) passes: Vec<PassRules>,
    /// Per rule: its children in the metric tree.
    pub(crate) children: Vec<Vec<usize>>,
}

impl Plan {
    /// The plan of `orig`'s rules for `trace` and its `replay`.
    pub(crate) fn new(trace: &Trace, replay: &Replay, orig: &RuleSet) -> Plan {
        let mut interner = orig.interner.clone();
        let (regions, kind_names) = trace_strings(&mut interner, trace);
        let op_names: Vec<u32> = (0..=255u8)
            .map(|op| interner.intern(classify::collective_op_name(op)))
            .collect();
        let strings = interner.strings;
        let rs = specialise::specialised(trace, replay, orig, &regions, &kind_names, &strings);
        let (fed, queued) = consumers(&rs.rules);
        let feeds = (0..rs.rules.len())
            .map(|k| !fed[k].is_empty() || !queued[k].is_empty())
            .collect();
        let partner = (rs.rules.iter())
            .map(|r| rs.record_causes && matches!(r.cause, Some(Cause::Partner(_))))
            .collect();
        let code = rs
            .rules
            .iter()
            .map(|r| RuleCode::new(r, &rs.rules))
            .collect();
        let children = metric_children(&rs.rules);
        let mut plan = Plan {
            rs,
            strings,
            regions,
            kind_names,
            op_names,
            fed,
            queued,
            feeds,
            partner,
            code,
            passes: Vec::new(),
            children,
        };
        plan.passes = plan.pass_tables(trace, replay);
        plan.log();
        plan
    }

    /// The rules of trigger `t`, in rule order.
    pub(crate) fn by_trigger(&self, t: Trigger) -> Vec<usize> {
        (0..self.rs.rules.len())
            .filter(|&k| self.rs.rules[k].on == t)
            .collect()
    }

    /// The tables of the event, receive and send passes that have rules.
    fn pass_tables(&self, trace: &Trace, replay: &Replay) -> Vec<PassRules> {
        let ctx = Ctx::of_trace(
            trace,
            replay,
            &self.regions,
            &self.kind_names,
            &self.rs.regexes,
            &self.strings,
        );
        let konst = |e: &Expr| ctx.eval(e, &mut [Value::None]);
        let present = kinds_present(trace);
        let table = |t: Trigger| {
            let rules_here = self.by_trigger(t);
            (!rules_here.is_empty()).then(|| {
                let k = &self.kind_names;
                PassRules::new(&self.rs, &rules_here, t, k, &konst, &present)
            })
        };
        let mut tables: Vec<PassRules> = [Trigger::Event, Trigger::Receive, Trigger::Send]
            .into_iter()
            .filter_map(table)
            .collect();
        let feeds = |k: usize| self.feeds[k] || self.rs.rules[k].cause.is_some();
        let event = || table(Trigger::Event);
        let n = self.rs.rules.len();
        // `partner`: an instance is recorded with its partner event for the root causes
        let books_more = |k: usize| self.feeds[k] || self.partner[k];
        #[cfg(test)]
        let ride = !NO_RIDE.with(|c| c.get());
        #[cfg(not(test))]
        let ride = true;
        if ride {
            passes::ride(&mut tables, &event, &feeds, &present, n);
        }
        tables.iter_mut().for_each(|t| t.mark_plain(&books_more));
        tables
    }

    /// What the plan holds, for a user asking what the analysis does (`tracing`, debug).
    fn log(&self) {
        let on = |t: Trigger| self.rs.rules.iter().filter(|r| r.on == t).count();
        let tables = |f: &dyn Fn(&PassRules) -> usize| -> usize { self.passes.iter().map(f).sum() };
        tracing::debug!(
            rules = self.rs.rules.len(),
            compiled = self.code.len(),
            callpath = on(Trigger::Callpath),
            event = on(Trigger::Event),
            receive = on(Trigger::Receive),
            send = on(Trigger::Send),
            fed = on(Trigger::Rule),
            collective = on(Trigger::Collective),
            world = on(Trigger::WorldCall),
            team = on(Trigger::Team),
            thread_barrier = on(Trigger::ThreadBarrier),
            sums_derived = on(Trigger::Sum) + on(Trigger::Derived),
            kind_rules = tables(&|p| p.folded.len()),
            dropped_for_kind = tables(&|p| p.dropped),
            prefiltered = tables(&|p| {
                p.folded
                    .iter()
                    .filter(|r| matches!(r.code, Some((_, Some(_)))))
                    .count()
            }),
            shared = tables(&|p| p.shared.iter().map(|&s| s as usize).sum()),
            "rule plan built"
        );
    }
}

/// Which kinds of event the trace has (per location in parallel, one look at each byte of
/// the kind columns): a pass need not look for the others (`passes::Skip`).
fn kinds_present(trace: &Trace) -> [bool; 256] {
    use rayon::prelude::*;
    trace
        .events
        .par_iter()
        .map(|ev| {
            let mut seen = [false; 256];
            for &k in crate::model::spill::bytes_of(&ev.kind[..]) {
                seen[k as usize] = true;
            }
            // a spilled column leaves memory again (`--memory-limit`)
            ev.release_resident();
            seen
        })
        .reduce(
            || [false; 256],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                a
            },
        )
}

/// Per rule: the rules its instances feed (`on = "rule"`, `of` it), and the queue
/// consumers whose queues they join.
fn consumers(rules: &[Rule]) -> (Vec<Vec<usize>>, Vec<Vec<usize>>) {
    let mut fed = vec![Vec::new(); rules.len()];
    let mut queued = vec![Vec::new(); rules.len()];
    for (k, r) in rules.iter().enumerate() {
        if r.on == Trigger::Rule {
            if let Some(of) = r.of {
                fed[of as usize].push(k);
            }
        }
        if let Some(q) = &r.queue {
            queued[q.of as usize].push(k);
        }
    }
    (fed, queued)
}

/// Per rule: the rules whose parent it is, in rule order.
fn metric_children(rules: &[Rule]) -> Vec<Vec<usize>> {
    let ids: Vec<&str> = rules.iter().map(|r| r.info.id.as_str()).collect();
    (0..rules.len())
        .map(|k| {
            (0..rules.len())
                .filter(|&c| rules[c].info.parent.as_deref() == Some(ids[k]))
                .collect()
        })
        .collect()
}

/// The interned strings of the trace's regions (name, paradigm, role, class, mode) and of
/// every event kind, as the rules compare them.
pub(crate) fn trace_strings(interner: &mut Interner, trace: &Trace) -> (RegionStrings, [u32; 256]) {
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

#[cfg(test)]
mod tests {
    use super::passes::fires_on;
    use super::testing::testdata_trace;
    use super::*;

    /// The plan of the built-in rules for a trace with messages: every rule specialised and
    /// compiled; one table per pass with rules, in pass order, holding on each kind exactly
    /// the rules of its trigger that fire on the kind, less those whose `when` folds to false
    /// there (counted); queue consumers unfolded; every fed rule and consumer listed under
    /// the rule that feeds it.
    #[test]
    fn plan_tables_hold_each_pass_rule_on_the_kinds_it_fires_on() {
        let rs = RuleSet::load(&[]).unwrap();
        let (trace, replay) = testdata_trace("scorep/wo");
        let plan = Plan::new(&trace, &replay, &rs);
        assert_eq!(plan.rs.rules.len(), rs.rules.len());
        assert_eq!(plan.code.len(), rs.rules.len());
        let with_rules: Vec<Trigger> = [Trigger::Event, Trigger::Receive, Trigger::Send]
            .into_iter()
            .filter(|&t| !plan.by_trigger(t).is_empty())
            .collect();
        let tables: Vec<Trigger> = plan.passes.iter().map(|p| p.trigger).collect();
        assert_eq!(tables, with_rules);
        assert!(!tables.is_empty());
        for p in &plan.passes {
            let mut tried = 0;
            for kind in EventKind::ALL {
                let here = &p.by_kind[kind as usize];
                for &j in here {
                    let r = &plan.rs.rules[p.folded[j].rule];
                    assert_eq!(r.on, p.trigger, "{}", r.info.id);
                    assert!(fires_on(r, kind), "{} on {kind:?}", r.info.id);
                    assert_eq!(p.folded[j].code.is_none(), r.queue.is_some());
                }
                let on_kind = plan.by_trigger(p.trigger);
                let on_kind = on_kind
                    .iter()
                    .filter(|&&k| fires_on(&plan.rs.rules[k], kind));
                tried += on_kind.count();
            }
            assert_eq!(p.folded.len() + p.dropped, tried, "{:?}", p.trigger);
        }
        for (k, r) in plan.rs.rules.iter().enumerate() {
            if let (Trigger::Rule, Some(of)) = (r.on, r.of) {
                assert!(plan.fed[of as usize].contains(&k) && plan.feeds[of as usize]);
            }
            if let Some(q) = &r.queue {
                assert!(plan.queued[q.of as usize].contains(&k) && plan.feeds[q.of as usize]);
            }
        }
    }
}
