//! The rule tables of the event, receive and send passes: per kind of trigger event, the
//! rules tried on it, folded for the kind, their common parts shared, compiled and
//! prefiltered (`PassRules`), and the kinds a pass can skip to (`Skip`).

use super::code::RuleCode;
use super::fold::fold_kinds;
use super::memo::{memo_inputs, memo_spec, MemoSpec};
use super::prefilter::{prefilter_of, Prefilter};
use super::share::share;
use super::specialise::specialise_rule;
use crate::analysis::eval;
use crate::model::EventKind;
use crate::rules::compile::{Expr, Field, Value};
use crate::rules::{Rule, RuleSet, Trigger};
use std::collections::HashMap;

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
    /// Per kind: per region index of the call around the trigger event (slot 0; the last
    /// index for "no enclosing call"), an index into `lists`; one entry only when the
    /// region decides nothing for the kind (`dispatch`).
    pub(crate) by_region: Vec<Box<[u32]>>,
    /// The rules of `by_kind` (indices into `folded`, in the same order) that can fire on a
    /// trigger event of one kind in a call of one region: those whose prefilter's checks
    /// of the trigger event pass there (those checks are taken out of the prefilters).
    pub(crate) lists: Vec<Box<[usize]>>,
    /// Per list of `lists`: its inputs when its instances are a function of them, the
    /// trigger's kind, region and call path (`plan::memo`, made by `mark_plain`).
    pub(crate) memo: Vec<Option<MemoSpec>>,
    /// Event-pass rules tried on this pass's walk (`ride`), at each event of a kind they
    /// list, before the pass's own rules.
    pub(crate) rider: Option<Box<Rider>>,
}

/// The event-pass rules of some kinds of trigger event that ride on the walk of the
/// receive or send pass (`PassRules::rider`) instead of a walk of their own: rules whose
/// instances are only booked (no group, queue, fed rule or `[cause]`), so what they find
/// is the same in either walk, each cell summed in event order.
pub(crate) struct Rider {
    /// The event pass's table, its lists kept for the kinds that ride only.
    pub(crate) rules: PassRules,
    /// `had` as the event pass sees it: none yet (the event pass runs first).
    pub(crate) had: Vec<Vec<(u32, u32)>>,
}

/// A rule of the event, receive or send pass for trigger events of one kind: its
/// expressions folded for that kind (`fold_kinds`), compiled, and their prefilter.
pub(crate) struct KindRule {
    pub(crate) rule: usize,
    /// The size of the rule's environment (`Rule::slots`).
    pub(crate) slots: usize,
    /// `None` for a queue consumer (run as it is, `Engine::consume`).
    pub(crate) code: Option<(RuleCode, Option<Prefilter>)>,
    /// `Some(s)` for a rule whose instances are only booked, at the event in slot `s`
    /// (`Engine::fire_plain`; `Plan::mark_plain`).
    pub(crate) plain: Option<u16>,
    /// The rule's inputs when its instances are a function of them (`memo::memo_inputs`).
    pub(crate) inputs: Option<[Vec<Expr>; 2]>,
}

/// A pass that looks at events of at most two kinds that occur in the trace (besides LEAVE
/// events, while groups are open): the kind column is searched for those bytes (`memchr`)
/// instead of walked event by event.
pub(crate) struct Skip {
    kinds: Vec<u8>,
    /// Per kind byte: whether the pass looks at it, without and with LEAVE events.
    looks: [[bool; 256]; 2],
    /// Without and with LEAVE events: the bytes looked at, each repeated over a word (the
    /// first again where there are fewer than three), none if there are none; and whether
    /// there is one byte alone (one word compared).
    words: [Option<([u64; 3], bool)>; 2],
}

/// The bytes of `x` that are zero, as their high bit (exact: no carry between bytes).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    const M: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & M).wrapping_add(M)) | x | M)
}

/// How many events `Skip::find` looks at one by one before it calls `memchr`: where the
/// kinds are frequent (a message every few events) a call costs more than those bytes.
const NEAR: usize = 16;

impl Skip {
    /// For a pass whose rules fire on the kinds of `by_kind` with rules, on a trace whose
    /// events have the kinds of `present` (a kind that no event has is never searched for).
    pub(crate) fn new(by_kind: &[Vec<usize>], present: &[bool; 256]) -> Option<Skip> {
        let kinds: Vec<u8> = (0..by_kind.len())
            .filter(|&k| !by_kind[k].is_empty() && present[k])
            .map(|k| k as u8)
            .collect();
        let mut looks = [[false; 256]; 2];
        for &k in &kinds {
            looks[0][k as usize] = true;
            looks[1][k as usize] = true;
        }
        looks[1][EventKind::Leave as usize] = true;
        let word = |b: u8| u64::from_le_bytes([b; 8]);
        let words = [
            &kinds[..],
            &[&kinds[..], &[EventKind::Leave as u8]].concat(),
        ]
        .map(|b| {
            let first = *b.first()?;
            let at = |j: usize| word(b.get(j).copied().unwrap_or(first));
            Some(([at(0), at(1), at(2)], b.len() == 1))
        });
        (kinds.len() <= 2).then_some(Skip {
            kinds,
            looks,
            words,
        })
    }

    /// The distance to the first event of `kinds` that the pass looks at (LEAVE events too
    /// when `leave`): the next `NEAR` events a word of 8 at a time (the rest one by one),
    /// then `memchr`.
    #[inline(always)]
    pub(crate) fn find(&self, kinds: &[u8], leave: bool) -> Option<usize> {
        let Some((words, one)) = &self.words[leave as usize] else {
            return None;
        };
        let near = kinds.len().min(NEAR);
        let mut d = 0;
        while let Some(b) = kinds.get(d..d + 8).filter(|_| d + 8 <= near) {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            let x = u64::from_le_bytes(w);
            let hits = if *one {
                zero_bytes(x ^ words[0])
            } else {
                words.iter().fold(0, |h, &p| h | zero_bytes(x ^ p))
            };
            if hits != 0 {
                return Some(d + hits.trailing_zeros() as usize / 8);
            }
            d += 8;
        }
        let looks = &self.looks[leave as usize];
        if let Some(e) = kinds[d..near].iter().position(|&b| looks[b as usize]) {
            return Some(d + e);
        }
        self.find_far(&kinds[near..], leave).map(|d| d + near)
    }

    /// `find` by `memchr`.
    #[inline(never)]
    fn find_far(&self, kinds: &[u8], leave: bool) -> Option<usize> {
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
    /// as they are (`Engine::consume`). `konst` evaluates an expression that reads nothing;
    /// `present`: the kinds the trace's events have (`Skip`).
    pub(crate) fn new(
        rs: &RuleSet,
        rules_here: &[usize],
        trigger: Trigger,
        kind_names: &[u32; 256],
        konst: &dyn Fn(&Expr) -> Value,
        present: &[bool; 256],
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
                let inputs = r.as_ref().and_then(|r| memo_inputs(r, n));
                let code = r.map(|r| (RuleCode::new(&r, &rs.rules), prefilter_of(&r)));
                by_kind[kind as usize].push(folded.len());
                let slots = rs.rules[k].slots as usize;
                folded.push(KindRule {
                    rule: k,
                    slots,
                    code,
                    plain: None,
                    inputs,
                });
            }
        }
        let skip = Skip::new(&by_kind, present);
        let (by_region, lists) = dispatch(&by_kind, &mut folded);
        PassRules {
            trigger,
            by_kind,
            folded,
            shared,
            skip,
            dropped,
            by_region,
            lists,
            memo: Vec::new(),
            rider: None,
        }
    }

    /// Marks the rules that only book their instances (`KindRule::plain`): no group, `at`
    /// a slot, `feeds` false for them (no rule or queue fed, no `[cause]` recorded); the
    /// same in the rider's table.
    pub(crate) fn mark_plain(&mut self, feeds: &dyn Fn(usize) -> bool) {
        for r in &mut self.folded {
            r.plain = match &r.code {
                Some((c, _)) if c.group.is_none() && !feeds(r.rule) => match c.at {
                    Some(eval::Code::Slot(s)) => u16::try_from(s).ok(),
                    _ => None,
                },
                _ => None,
            };
        }
        #[cfg(test)]
        let memoise = !super::NO_MEMO.with(|c| c.get());
        #[cfg(not(test))]
        let memoise = true;
        self.memo = (self.lists.iter())
            .map(|l| memo_spec(l, &self.folded).filter(|_| memoise))
            .collect();
        if let Some(r) = &mut self.rider {
            r.rules.mark_plain(feeds);
        }
    }

    /// Whether every rule tried on events of `kind` only books its instances (`Rider`):
    /// no group, no queue, `feeds` and `cause` false for it.
    fn books_only(&self, kind: usize, feeds: &dyn Fn(usize) -> bool) -> bool {
        self.by_kind[kind].iter().all(|&j| {
            let r = &self.folded[j];
            matches!(&r.code, Some((c, _)) if c.group.is_none()) && !feeds(r.rule)
        })
    }

    /// Empties the lists of the kinds `keep` refuses; the kinds skipped to follow.
    fn keep_kinds(&mut self, keep: &dyn Fn(usize) -> bool, present: &[bool; 256]) {
        for (k, l) in self.by_kind.iter_mut().enumerate() {
            if !keep(k) {
                l.clear();
            }
        }
        self.skip_again(present);
    }

    /// `skip` for the kinds this pass or its rider tries rules on.
    fn skip_again(&mut self, present: &[bool; 256]) {
        let rider = self.rider.as_ref().map(|r| &r.rules.by_kind);
        let looks: Vec<Vec<usize>> = (0..self.by_kind.len())
            .map(|k| {
                let any = !self.by_kind[k].is_empty()
                    || rider.is_some_and(|r| r.get(k).is_some_and(|l| !l.is_empty()));
                if any {
                    vec![0]
                } else {
                    Vec::new()
                }
            })
            .collect();
        self.skip = Skip::new(&looks, present);
    }

    /// The rules to try on a trigger event of `kind` whose enclosing call is of region
    /// `region` (`None`: outside any call), in `by_kind` order: `lists[list_for(..)]`.
    #[cfg(test)]
    pub(crate) fn rules_for(&self, kind: usize, region: Option<u32>) -> &[usize] {
        &self.lists[self.list_for(kind, region)]
    }

    /// The list of `lists` to try on a trigger event of `kind` whose enclosing call is of
    /// region `region` (`None`: outside any call).
    #[inline(always)]
    pub(crate) fn list_for(&self, kind: usize, region: Option<u32>) -> usize {
        let t = &self.by_region[kind];
        let r = match (t.len(), region) {
            (1, _) => 0,
            (n, None) => n - 1,
            (_, Some(r)) => r as usize,
        };
        t[r] as usize
    }
}

/// The event-pass rules of the kinds of trigger event that the receive or send pass of
/// `tables` visits, and that only book their instances (`books_only`; `feeds`: whether a
/// rule feeds others or has a `[cause]`), moved to ride on that pass's walk (`Rider`): one
/// walk fewer per location for those events. A kind rides only if each of its rules
/// rides with every kind it is tried on, so all of a rule's instances are found by one
/// walk in the event pass's order. What rides depends on the rules alone, not on the
/// kinds the trace has (`present` only chooses what each walk skips to): every process of
/// `run --mpi`, holding a share of the trace, makes the same passes. The event pass's
/// table (`event` makes it again for each rider) keeps the other kinds; a walk of it
/// that finds none of them on a location stops at once. `nrules`: the rule count
/// (`Rider::had`).
pub(crate) fn ride(
    tables: &mut [PassRules],
    event: &dyn Fn() -> Option<PassRules>,
    feeds: &dyn Fn(usize) -> bool,
    present: &[bool; 256],
    nrules: usize,
) {
    let Some(e) = tables.iter().position(|t| t.trigger == Trigger::Event) else {
        return;
    };
    let mut moved = [false; 256];
    for h in 0..tables.len() {
        let visits: &[EventKind] = match tables[h].trigger {
            Trigger::Receive => &[EventKind::MpiRecv, EventKind::MpiIrecv],
            Trigger::Send => &[EventKind::MpiSend, EventKind::MpiIsend],
            _ => continue,
        };
        let ev = &tables[e];
        let mut rides: Vec<usize> = (visits.iter())
            .map(|&k| k as usize)
            .filter(|&k| !ev.by_kind[k].is_empty() && ev.books_only(k, feeds))
            .collect();
        // a rule rides only with all the kinds it is tried on: its instances come from one
        // walk, each cell's in event order as in the event pass's walk
        let rules_of = |k: usize| ev.by_kind[k].iter().map(|&j| ev.folded[j].rule);
        loop {
            let alone = |k: usize| {
                rules_of(k)
                    .all(|r| (0..256).all(|o| rides.contains(&o) || rules_of(o).all(|x| x != r)))
            };
            let before = rides.len();
            rides = rides.iter().copied().filter(|&k| alone(k)).collect();
            if rides.len() == before {
                break;
            }
        }
        if rides.is_empty() {
            continue;
        }
        let Some(mut rules) = event() else {
            continue;
        };
        rules.keep_kinds(&|k| rides.contains(&k), present);
        rides.iter().for_each(|&k| moved[k] = true);
        let host = &mut tables[h];
        host.rider = Some(Box::new(Rider {
            rules,
            had: vec![Vec::new(); nrules],
        }));
        host.skip_again(present);
    }
    tables[e].keep_kinds(&|k| !moved[k], present);
}

/// `PassRules::by_region` and `PassRules::lists`.
type Dispatch = (Vec<Box<[u32]>>, Vec<Box<[usize]>>);

/// The dispatch tables of a pass (`PassRules::by_region`, `lists`): per kind and region of
/// the trigger event's call, the rules whose prefilter's checks of the trigger event (slot
/// 0, bound to the event itself in every pass) hold; those checks leave the prefilters, so
/// a trigger event visits only the rules that can fire in its call's region and looks its
/// region up once. Each rule's checks of other slots and the rest of its `when` stay.
fn dispatch(by_kind: &[Vec<usize>], folded: &mut [KindRule]) -> Dispatch {
    let mut lists: Vec<Box<[usize]>> = Vec::new();
    let mut ids: HashMap<Box<[usize]>, u32> = HashMap::new();
    let mut id_of = |l: Vec<usize>| -> u32 {
        let l: Box<[usize]> = l.into();
        *ids.entry(l.clone()).or_insert_with(|| {
            lists.push(l);
            lists.len() as u32 - 1
        })
    };
    let mut by_region = Vec::with_capacity(by_kind.len());
    for here in by_kind {
        // the trigger's checks of this kind's rules
        let masks: Vec<Option<&[bool]>> = here
            .iter()
            .map(|&j| match &folded[j].code {
                Some((_, Some(p))) => p.checks.iter().find(|c| c.0 == 0).map(|c| &c.1[..]),
                _ => None,
            })
            .collect();
        let nreg = masks.iter().flatten().map(|m| m.len()).max();
        let table: Box<[u32]> = match nreg {
            None => Box::new([id_of(here.clone())]),
            Some(n) => (0..n)
                .map(|r| {
                    let pass = |m: &Option<&[bool]>| m.is_none_or(|m| m.get(r) == Some(&true));
                    let l = here.iter().zip(&masks).filter(|(_, m)| pass(m));
                    id_of(l.map(|(&j, _)| j).collect())
                })
                .collect(),
        };
        by_region.push(table);
    }
    for r in folded.iter_mut() {
        if let Some((code, pre)) = &mut r.code {
            if let Some(p) = pre {
                p.checks.retain(|c| c.0 != 0);
                // no check left: the rest is the rule's `when`, tried without a prefilter
                if p.checks.is_empty() {
                    code.when = p.rest_code.take();
                    *pre = None;
                }
            }
        }
    }
    (by_region, lists)
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

    /// `Skip::find` (a word of 8 kinds at a time, then `memchr`) finds the first event the
    /// pass looks at, as a walk event by event does: for zero, one and two kinds, with and
    /// without LEAVE events, on columns of every length around the word and `NEAR` sizes.
    #[test]
    fn skip_finds_the_first_event_looked_at() {
        let mut present = [false; 256];
        (0..8).for_each(|k| present[k] = true);
        let mut checked = 0usize;
        for wanted in [vec![], vec![3usize], vec![3, 5]] {
            let mut by_kind = vec![Vec::new(); 256];
            wanted.iter().for_each(|&k| by_kind[k] = vec![0]);
            let skip = Skip::new(&by_kind, &present).unwrap();
            // a small generator: ENTER, LEAVE and a few other kinds
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            for len in 0..40 {
                for _ in 0..50 {
                    let kinds: Vec<u8> = (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            [1u8, 3, 5, 7, 12, 13, 12, 13, 7, 1, 12, 7][(x % 12) as usize]
                        })
                        .collect();
                    for leave in [false, true] {
                        let want = |b: u8| {
                            wanted.contains(&(b as usize)) || (leave && b == EventKind::Leave as u8)
                        };
                        let slow = kinds.iter().position(|&b| want(b));
                        assert_eq!(skip.find(&kinds, leave), slow, "{kinds:?} {leave}");
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1000);
    }

    /// The dispatch tables (`PassRules::list_for`) hold, for every kind and every region
    /// of the trigger event's call (and outside any call), exactly the rules of the kind
    /// whose prefilter's checks of the trigger event hold there, in `by_kind` order; and no
    /// such check is left in a prefilter. The kinds whose event-pass rules ride on the
    /// receive or send pass's walk (`ride`) are in the rider's table, not the event pass's:
    /// each kind in one table of its trigger, each riding rule in no other table.
    #[test]
    fn dispatch_keeps_the_rules_whose_trigger_checks_hold() {
        use crate::analysis::plan::testing::testdata_trace;
        use crate::analysis::plan::Plan;
        let rs = RuleSet::load(&[]).unwrap();
        let (mut checked, mut left_out, mut riders) = (0usize, 0usize, 0usize);
        for name in ["scorep/mixed8", "scorep/wo", "scorep-omp/omp_lock"] {
            let (trace, replay) = testdata_trace(name);
            let plan = Plan::new(&trace, &replay, &rs);
            let ctx = crate::analysis::plan::testing::plan_ctx(&plan, &trace, &replay);
            let konst = |e: &Expr| ctx.eval(e, &mut [Value::None]);
            let nreg = trace.defs.regions.len();
            // the passes' tables and those of the event-pass rules riding on their walks
            let tables: Vec<&PassRules> = (plan.passes.iter())
                .flat_map(|p| [Some(p), p.rider.as_ref().map(|r| &r.rules)])
                .flatten()
                .collect();
            riders += tables.len() - plan.passes.len();
            // a riding rule is tried on no kind in another table
            let rules_on = |p: &PassRules| -> Vec<usize> {
                (0..256)
                    .flat_map(|k| p.by_kind[k].iter().map(|&j| p.folded[j].rule))
                    .collect()
            };
            for p in plan.passes.iter().filter_map(|p| p.rider.as_ref()) {
                let mine = rules_on(&p.rules);
                for t in tables.iter().filter(|t| !std::ptr::eq(**t, &p.rules)) {
                    assert!(rules_on(t).iter().all(|r| !mine.contains(r)), "{name}");
                }
            }
            for p in tables.iter().copied() {
                let n = trigger_slots(p.trigger).unwrap_or(1);
                let rules_here = plan.by_trigger(p.trigger);
                for kind in EventKind::ALL {
                    // the kind's rules as `PassRules::new` makes them, before the dispatch
                    let mut d = 0;
                    let mut here = kind_rules(
                        &plan.rs,
                        &rules_here,
                        kind,
                        &plan.kind_names,
                        &konst,
                        &mut d,
                    );
                    share(
                        &mut here
                            .iter_mut()
                            .filter_map(|(_, r)| r.as_mut())
                            .collect::<Vec<_>>(),
                        n,
                    );
                    let masks: Vec<Option<Vec<bool>>> = here
                        .iter()
                        .map(|(_, r)| {
                            let p = r.as_ref().and_then(prefilter_of)?;
                            p.checks.into_iter().find(|c| c.0 == 0).map(|c| c.1)
                        })
                        .collect();
                    let all = &p.by_kind[kind as usize];
                    // one table of the trigger tries the kind's rules
                    let same = tables.iter().filter(|t| t.trigger == p.trigger);
                    let with = same
                        .filter(|t| !t.by_kind[kind as usize].is_empty())
                        .count();
                    assert!(with <= 1, "{name} {kind:?}");
                    if all.is_empty() {
                        assert!(with == 1 || here.is_empty(), "{name} {kind:?}");
                        continue;
                    }
                    assert_eq!(all.len(), masks.len());
                    for r in 0..=nreg {
                        let region = (r < nreg).then_some(r as u32);
                        let want: Vec<usize> = all
                            .iter()
                            .zip(&masks)
                            .filter(|(_, m)| m.as_ref().is_none_or(|m| m[r]))
                            .map(|(&j, _)| j)
                            .collect();
                        left_out += all.len() - want.len();
                        assert_eq!(p.rules_for(kind as usize, region), &want[..], "{name}");
                        checked += 1;
                    }
                }
                for r in &p.folded {
                    if let Some((_, Some(f))) = &r.code {
                        assert!(f.checks.iter().all(|c| c.0 != 0));
                    }
                }
            }
        }
        assert!(checked > 0 && left_out > 0, "{checked} {left_out}");
        assert!(riders > 0, "no event-pass rules ride on another walk");
    }
}
