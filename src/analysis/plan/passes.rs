//! The rule tables of the event, receive and send passes: per kind of trigger event, the
//! rules tried on it, folded for the kind, their common parts shared, compiled and
//! prefiltered (`PassRules`), and the kinds a pass can skip to (`Skip`).

use super::code::RuleCode;
use super::fold::fold_kinds;
use super::prefilter::{prefilter_of, Prefilter};
use super::share::share;
use super::specialise::specialise_rule;
use crate::analysis::eval;
use crate::model::EventKind;
use crate::rules::compile::{Expr, Field, Value};
use crate::rules::{Rule, RuleSet, Trigger};

/// The slots the event, receive or send pass binds before it tries a rule (`E`; `R`, `S`;
/// `S`, `R`, `C`, `Q`), the same for every rule tried on one event; `None` for the other
/// triggers.
pub(crate) fn trigger_slots(t: Trigger) -> Option<u16> {
    match t {
        Trigger::Event => Some(1),
        Trigger::Receive => Some(2),
        Trigger::Send => Some(4),
        _ => None,
    }
}

/// Whether rule `r` of the event, receive or send pass is tried on events of `kind`: an
/// event rule on the kinds it lists, a receive rule on receives, a send rule on sends.
pub(crate) fn fires_on(r: &Rule, kind: EventKind) -> bool {
    match r.on {
        Trigger::Receive => matches!(kind, EventKind::MpiRecv | EventKind::MpiIrecv),
        Trigger::Send => matches!(kind, EventKind::MpiSend | EventKind::MpiIsend),
        _ => r.kinds.contains(&kind),
    }
}

/// The rules of an event, receive or send pass: per kind of trigger event, indices into
/// `folded`, and how many shared values (`share`) its rules have.
pub(crate) struct PassRules {
    /// The pass: `Trigger::Event`, `Receive` or `Send`.
    pub(crate) trigger: Trigger,
    pub(crate) by_kind: Vec<Vec<usize>>,
    pub(crate) folded: Vec<KindRule>,
    pub(crate) shared: Vec<u16>,
    /// The kinds the pass skips to, when they are few (`Skip::new`).
    pub(crate) skip: Option<Skip>,
    /// (rule, kind) pairs left out because the rule's `when` folds to false on the kind.
    pub(crate) dropped: usize,
}

/// A rule of the event, receive or send pass for trigger events of one kind: its
/// expressions folded for that kind (`fold_kinds`), compiled, and their prefilter.
pub(crate) struct KindRule {
    pub(crate) rule: usize,
    /// `None` for a queue consumer (run as it is, `Engine::consume`).
    pub(crate) code: Option<(RuleCode, Option<Prefilter>)>,
}

/// A pass that looks at events of at most two kinds (besides LEAVE events, while groups are
/// open): the kind column is searched for those bytes (`memchr`) instead of walked event
/// by event.
pub(crate) struct Skip {
    kinds: Vec<u8>,
}

impl Skip {
    /// For a pass whose rules fire on the kinds of `by_kind` with rules.
    pub(crate) fn new(by_kind: &[Vec<usize>]) -> Option<Skip> {
        let kinds: Vec<u8> = (0..by_kind.len())
            .filter(|&k| !by_kind[k].is_empty())
            .map(|k| k as u8)
            .collect();
        (kinds.len() <= 2).then_some(Skip { kinds })
    }

    /// The distance to the first event of `kinds` that the pass looks at (LEAVE events too
    /// when `leave`).
    pub(crate) fn find(&self, kinds: &[u8], leave: bool) -> Option<usize> {
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

impl PassRules {
    /// The rules of the `trigger` pass (`rules_here`, indices into the specialised `rs`):
    /// per kind of trigger event, those tried on it (`fires_on`: event triggers those that
    /// list the kind, receive triggers all of theirs on receives, send triggers on sends),
    /// each folded for the kind of its trigger event (`kind_rules`), their common
    /// subexpressions shared (`share`), compiled with their prefilters. Queue consumers run
    /// as they are (`Engine::consume`). `konst` evaluates an expression that reads nothing.
    pub(crate) fn new(
        rs: &RuleSet,
        rules_here: &[usize],
        trigger: Trigger,
        kind_names: &[u32; 256],
        konst: &dyn Fn(&Expr) -> Value,
    ) -> PassRules {
        let mut by_kind = vec![Vec::new(); 256];
        let mut folded = Vec::new();
        let mut shared = vec![0u16; 256];
        let mut dropped = 0;
        let n = trigger_slots(trigger).unwrap_or(1);
        for kind in EventKind::ALL {
            let mut here = kind_rules(rs, rules_here, kind, kind_names, konst, &mut dropped);
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
        let skip = Skip::new(&by_kind);
        PassRules {
            trigger,
            by_kind,
            folded,
            shared,
            skip,
            dropped,
        }
    }
}

/// The rules of `rules_here` tried on events of `kind`, each folded for that kind
/// (`fold_kinds`, slot 0 holds the trigger event; `None`: a queue consumer, run as it is),
/// and left out (counted in `dropped`) where its `when` cannot hold.
fn kind_rules(
    rs: &RuleSet,
    rules_here: &[usize],
    kind: EventKind,
    kind_names: &[u32; 256],
    konst: &dyn Fn(&Expr) -> Value,
    dropped: &mut usize,
) -> Vec<(usize, Option<Rule>)> {
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
                .then(|| eval::kind_field(kind, f, kind_names))
                .flatten()
        };
        let mut r = specialise_rule(r, &|e: &Expr| fold_kinds(e, &field, konst));
        let never = |e: &Option<Expr>| matches!(e, Some(Expr::Const(v)) if !v.bool());
        if never(&r.when) {
            *dropped += 1;
            continue;
        }
        // a group that takes no instance is none
        if r.group.as_ref().is_some_and(|g| never(&g.when)) {
            r.group = None;
        }
        here.push((k, Some(r)));
    }
    here
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::eval::{compile, Code};
    use crate::analysis::plan::testing::{agree, exprs, Specialised};
    use std::collections::HashMap;

    /// The rules of the event, receive and send passes folded for the kind of their
    /// trigger event and their common subexpressions shared (`fold_kinds`, `share`, as
    /// `PassRules::new` does per pass and kind), evaluated rule after rule on each event of
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
}
