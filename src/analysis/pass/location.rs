//! The per-location pass of the event, receive and send triggers (§5.5 passes B, C): each
//! location's events in order, the rules of the event's kind tried on each trigger
//! (`walk`), locations a chunk at a time in parallel while the previous chunk's findings
//! are added to the cube in location order (`run_pass`).

use super::memo::{try_memo, Memo};
use super::{event, p2p};
use crate::analysis::cube::{CausedWait, Cell, Cells, Contribution, Cube, Found, PhaseBook};
use crate::analysis::eval;
use crate::analysis::fire::{Engine, Frame, NO_CALL, UNSEEN};
use crate::analysis::plan::{KindRule, PassRules};
use crate::model::{EventKind, Events};
use crate::replay::calltree::NO_CNODE;
use crate::replay::{LocView, NONE};
use crate::rules::compile::Value;
use crate::rules::Trigger;
use rayon::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Mutable state of one location's pass over receive or send triggers.
pub(crate) struct LocPass {
    /// The location the pass runs on: group keys are its events.
    pub(crate) loc: u32,
    /// Instances to add one by one: all of them without `acc`, else those attributed to
    /// another location (their clock-touched share is in `acc.cc` instead).
    pub(crate) out: Vec<Contribution>,
    pub(crate) acc: Option<Acc>,
    /// Per rule: open groups, key event → (best severity, env, clock-touched).
    pub(crate) groups: HashMap<(usize, u32), (f64, Vec<Value>, bool)>,
    /// Per rule (indexed by the consuming rule): the queued instances of its feeder.
    pub(crate) queues: Vec<VecDeque<Vec<Value>>>,
    /// Per consumer with a `TakeBound`: each queued instance's key (NaN: absent), in queue
    /// order, and the extreme key of the queue (`None`: to be found again).
    pub(crate) keys: Vec<(VecDeque<f64>, Option<f64>)>,
    pub(crate) had: Vec<(usize, u32, u32)>,
    /// The instances of rules with a point-to-point `[cause]` found here.
    pub(crate) waits: Vec<CausedWait>,
    /// A queue consumer's environment while it tries the queued instances
    /// (`Engine::consume`), kept from one trigger to the next.
    pub(crate) scratch: Vec<Value>,
    /// The last event an instance was attributed to (`at`): (location, event, call path,
    /// time) (`Engine::emit`).
    pub(crate) at: (u32, u32, u32, u64),
    /// Per rule, the pair of its severity guard compared first: the one that failed last
    /// on this walk (`Guard::holds`).
    pub(crate) first: Vec<u8>,
}

impl LocPass {
    pub(crate) fn new(loc: u32, nrules: usize) -> LocPass {
        LocPass {
            loc,
            out: Vec::new(),
            acc: None,
            groups: HashMap::new(),
            queues: vec![VecDeque::new(); nrules],
            keys: vec![(VecDeque::new(), None); nrules],
            had: Vec::new(),
            waits: Vec::new(),
            scratch: Vec::new(),
            at: (u32::MAX, u32::MAX, NO_CNODE, 0),
            first: vec![0; nrules],
        }
    }
}

/// What a location's pass found on its own location, without a buffer per instance: the
/// sum, count and worst instances per (rule, call path), and the clock-touched instances in
/// the order they were found (their `sev_cc` sums run across locations in location order).
pub(crate) struct Acc {
    /// Per rule, per call path: index + 1 into `cells` (empty until the rule's first
    /// instance here).
    pub(crate) idx: Vec<Vec<u32>>,
    pub(crate) cells: Cells,
    /// (rule, call path, value) of every clock-touched instance, own location or not.
    pub(crate) cc: Vec<(u16, u32, f64)>,
}

impl Acc {
    /// The cell of rule `k` at call path `cnode` (`ntree` call paths), made on its first
    /// instance.
    #[inline(always)]
    pub(crate) fn cell(&mut self, k: usize, cnode: u32, ntree: usize) -> &mut Cell {
        let i = match self.idx[k].get(cnode as usize) {
            Some(&s) if s != 0 => s as usize - 1,
            _ => self.new_cell(k, cnode, ntree),
        };
        &mut self.cells[i]
    }

    /// The index in `cells` of rule `k`'s cell at `cnode`, if made.
    pub(crate) fn index_of(&self, k: usize, cnode: u32) -> Option<usize> {
        match self.idx[k].get(cnode as usize) {
            Some(&s) if s != 0 => Some(s as usize - 1),
            _ => None,
        }
    }

    /// `cell`'s first instance of rule `k` at `cnode`: the cell made, its index returned.
    #[inline(never)]
    fn new_cell(&mut self, k: usize, cnode: u32, ntree: usize) -> usize {
        let idx = &mut self.idx[k];
        if idx.is_empty() {
            idx.resize(ntree, 0);
        }
        self.cells.push(Cell::new(k as u16, cnode));
        idx[cnode as usize] = self.cells.len() as u32;
        self.cells.len() - 1
    }
}

/// Passes run again in list mode (`add_passes`).
#[cfg(test)]
pub(crate) static RERUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The event, receive and send passes, in that order (`accumulate`: see
/// `analysis::analyse_with`). Returns `had`: per rule, the sorted (location, key event) of
/// its groups that had a candidate with a positive severity.
pub(crate) fn run(eng: &Engine, cube: &mut Cube, accumulate: bool) -> Vec<Vec<(u32, u32)>> {
    let mut had: Vec<Vec<(u32, u32)>> = vec![Vec::new(); eng.plan.rs.rules.len()];
    for pr in &eng.plan.passes {
        let new_had = run_pass(eng, cube, pr, &had, accumulate);
        for (k, l, e) in new_had {
            had[k].push((l, e));
        }
        for h in had.iter_mut() {
            h.sort_unstable();
        }
    }
    had
}

/// One pass over every location. Locations a few at a time, their results added in
/// location order: the contributions waiting to be added stay a small part of the trace.
/// Returns the (rule, location, key event) of the groups that had a candidate.
fn run_pass(
    eng: &Engine,
    cube: &mut Cube,
    pr: &PassRules,
    had: &[Vec<(u32, u32)>],
    accumulate: bool,
) -> Vec<(usize, u32, u32)> {
    let nloc = cube.nloc();
    let chunk = 2 * rayon::current_num_threads().max(1);
    let mut new_had = Vec::new();
    // the contribution buffers go round (fresh pages cost more than the rules)
    let mut pool: Vec<Vec<Contribution>> = Vec::new();
    // a chunk's contributions are added (in order, on one thread) while the next chunk
    // runs
    let mut pending: Vec<LocPass> = Vec::new();
    let book = cube.book();
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
                    let locs = s..(s + chunk).min(nloc);
                    run_locs(eng, pr, had, locs, outs, accumulate.then_some(&book))
                })
            },
            || {
                add_passes(eng, cube, pr, had, &done);
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
    new_had
}

/// Adds what the passes of `done` found, in location order.
fn add_passes(
    eng: &Engine,
    cube: &mut Cube,
    pr: &PassRules,
    had: &[Vec<(u32, u32)>],
    done: &[LocPass],
) {
    for p in done {
        cube.waits.extend_from_slice(&p.waits);
        let Some(acc) = &p.acc else {
            cube.add_all(&p.out);
            continue;
        };
        // A cell of this location that an earlier location's pass already wrote (a rule
        // whose `at` names another location's event) must get this location's values one
        // by one after those: the pass runs again, listing every instance (the pass is a
        // function of the trace and `had`, so it finds the same).
        if !cube.unwritten(&acc.cells, p.loc) {
            #[cfg(test)]
            RERUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let l = p.loc as usize;
            let again = run_locs(eng, pr, had, l..l + 1, vec![Vec::new()], None);
            for c in again.iter().flat_map(|q| &q.out) {
                cube.add(Found::One(c));
            }
            continue;
        }
        for c in acc.cells.iter() {
            cube.add(Found::Own(c, p.loc));
        }
        cube.add_all(&p.out);
        for &(k, c, v) in &acc.cc {
            cube.add(Found::Cc(k, c, v));
        }
    }
}

/// The pass on locations `locs`, in parallel, each with its contribution buffer of `outs`;
/// `accumulate`: the phase windows booked (`Cube::book`) when the passes accumulate, `None`
/// when they list every instance.
fn run_locs(
    eng: &Engine,
    pr: &PassRules,
    had: &[Vec<(u32, u32)>],
    locs: std::ops::Range<usize>,
    outs: Vec<Vec<Contribution>>,
    accumulate: Option<&Option<Arc<PhaseBook>>>,
) -> Vec<LocPass> {
    locs.into_par_iter()
        .zip(outs)
        .map(|(l, out)| {
            let pass = walk(eng, pr, had, l, out, accumulate);
            eng.trace.events[l].release_resident();
            pass
        })
        .collect()
}

/// The pass on location `l`: its events in order (those of the kinds the pass looks at,
/// `Skip`), on each trigger the rules of the event's kind, folded for it (`KindRule`);
/// groups closed as their key calls end. `accumulate`: see `run_locs`.
pub(crate) fn walk(
    eng: &Engine,
    pr: &PassRules,
    had: &[Vec<(u32, u32)>],
    l: usize,
    out: Vec<Contribution>,
    accumulate: Option<&Option<Arc<PhaseBook>>>,
) -> LocPass {
    let at = (l, out, accumulate);
    match pr.trigger {
        Trigger::Event => walk_on::<EVENT>(eng, pr, had, at),
        Trigger::Receive => walk_on::<RECEIVE>(eng, pr, had, at),
        _ => walk_on::<SEND>(eng, pr, had, at),
    }
}

/// `walk`'s location, contribution buffer and `accumulate`.
type Place<'a> = (usize, Vec<Contribution>, Option<&'a Option<Arc<PhaseBook>>>);

/// The trigger of a pass as a constant of `walk_on` (its code made once per trigger).
const EVENT: u8 = 0;
const RECEIVE: u8 = 1;
const SEND: u8 = 2;

/// `walk` for the pass of trigger `T` (`EVENT`, `RECEIVE`, `SEND`).
#[inline(never)]
fn walk_on<const T: u8>(
    eng: &Engine,
    pr: &PassRules,
    had: &[Vec<(u32, u32)>],
    (l, out, accumulate): Place,
) -> LocPass {
    let (trace, replay) = (eng.trace, eng.replay);
    let trigger = match T {
        EVENT => Trigger::Event,
        RECEIVE => Trigger::Receive,
        _ => Trigger::Send,
    };
    let skip = &pr.skip;
    let nrules = eng.plan.rs.rules.len();
    let ev = &trace.events[l];
    let links = &replay.msg_links[l];
    // One environment for every rule of the pass, the trigger's bindings written once per
    // trigger: they are the same slots in every rule of the pass (`trigger_slots`), and a
    // rule reads no other slot it has not written in the same trial (its lets in order,
    // each after those it reads; `at` and `value` set before an instance is handed on), so
    // what an earlier rule or trigger left is never read. Each rule sees its own length.
    // the event-pass rules riding on this walk (`Rider`) see the `had` of the event pass
    let rider = pr.rider.as_deref();
    let slots = |p: &PassRules| p.folded.iter().map(|r| r.slots).max().unwrap_or(0);
    let width = slots(pr).max(rider.map_or(0, |r| slots(&r.rules))).max(4);
    let mut env_buf = vec![Value::None; width];
    let mut pass = LocPass::new(l as u32, nrules);
    pass.out = out;
    if let Some(book) = accumulate {
        pass.acc = Some(Acc {
            idx: vec![Vec::new(); nrules],
            cells: Cells::new(book.clone()),
            cc: Vec::new(),
        });
    }
    // queued instances taken by consumers on this location (`B`)
    let mut taken: Vec<Vec<Value>> = Vec::new();
    // What the rules of the pass that are no queue consumers read, built once: no queued
    // instance (`Value::Item`) ever reaches their environments, so they never read `taken`
    // (consumers see it through their own frames)
    let none = |_: u16| 0.0;
    let shared_cells = |p: &PassRules| {
        vec![std::cell::Cell::new(None); *p.shared.iter().max().unwrap_or(&0) as usize]
    };
    let cells = shared_cells(pr);
    let rcells = rider.map_or_else(Vec::new, |r| shared_cells(&r.rules));
    let side = |rules, had, cells| {
        let fr = Frame::events(&[], had);
        let mut ctx = eng.frame_ctx(fr, &none);
        ctx.shared = cells;
        Side {
            rules,
            had,
            fr,
            ctx,
            lists: Lists::default(),
            memo: Memo::default(),
        }
    };
    let mut own = side(pr, had, &cells[..]);
    let mut riding = rider.map(|r| side(&r.rules, &r.had[..], &rcells[..]));
    // per kind: whether the pass has rules for it (`OWN`), whether riding rules do
    // (`RIDES`), one byte read per event
    let mut looks = [0u8; 256];
    let rider_kinds: &[Vec<usize>] = rider.map_or(&[], |r| &r.rules.by_kind);
    for (bit, table) in [(OWN, &pr.by_kind[..]), (RIDES, rider_kinds)] {
        for (x, rules) in looks.iter_mut().zip(table) {
            if !rules.is_empty() {
                *x |= bit;
            }
        }
    }
    let here = Here {
        l: l as u32,
        ev,
        ptrs: eval::ptrs(replay, l as u32),
    };
    let kind_col: &[EventKind] = &ev.kind[..];
    let kinds = crate::model::spill::bytes_of(kind_col);
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
        let kind = kind_col[i];
        if kind == EventKind::Leave && !pass.groups.is_empty() {
            let fr = Frame::events(&taken, had);
            eng.flush_groups(Some(i as u32), &mut pass, fr);
        }
        let look = looks[kind as usize];
        if look == 0 {
            continue;
        }
        // slot 0 holds the event itself in every pass: the rules that can fire in its
        // call's region (`PassRules::list_for`), the region looked up once
        let region = here.call_region(i);
        let word = kind_region(kind, region);
        if let Some(r) = riding.as_mut().filter(|_| look & RIDES != 0) {
            // the riding event-pass rules first, on `E` alone
            let mut at = (&mut env_buf[..], &mut pass, &mut taken);
            ride(eng, r, &here, &mut at, (kind, region, word, i));
            if look & OWN == 0 {
                continue;
            }
        }
        let bind: Option<[Value; 4]> = match trigger {
            Trigger::Event => Some(event::bind(l, i)),
            Trigger::Receive if matches!(kind, EventKind::MpiRecv | EventKind::MpiIrecv) => {
                p2p::bind_receive(links, ev, l, i)
            }
            Trigger::Send if matches!(kind, EventKind::MpiSend | EventKind::MpiIsend) => {
                p2p::bind_send(trace, replay, links, ev, kind, l, i)
            }
            _ => None,
        };
        let Some(bind) = bind else { continue };
        let list = own.lists.get(pr, kind, region, word);
        if list.1.is_empty() {
            continue;
        }
        let mut regions = [region.unwrap_or(NO_CALL), UNSEEN, UNSEEN, UNSEEN];
        // a blocking send's completion is the send itself: its call's region is known
        if T == SEND && bind[2] == bind[0] {
            regions[2] = regions[0];
        }
        // the trigger's bindings, one store each (a copy of a length known only here calls
        // memcpy); `width` is at least 4
        env_buf[0] = bind[0];
        if trigger != Trigger::Event {
            env_buf[1] = bind[1];
        }
        if trigger == Trigger::Send {
            env_buf[2] = bind[2];
            env_buf[3] = bind[3];
        }
        let mut at = (&mut env_buf[..], &mut regions, &mut pass, &mut taken);
        try_list(eng, &mut own, list, &mut at, &here, (word, i));
    }
    eng.flush_groups(None, &mut pass, Frame::events(&taken, had));
    pass
}

/// The walk's own location: its events and the replay's pointer columns, taken once
/// (`eval::ptrs`), what the walk reads of each trigger event.
#[derive(Clone, Copy)]
pub(crate) struct Here<'a> {
    pub(crate) l: u32,
    pub(crate) ev: &'a Events,
    pub(crate) ptrs: LocView<'a>,
}

impl Here<'_> {
    /// `eval::call_region` of event `i` here.
    #[inline(always)]
    fn call_region(&self, i: usize) -> Option<u32> {
        match self.ptrs.enterptr(i) {
            NONE => None,
            e => Some(self.ev.arg[e as usize]),
        }
    }

    /// `Engine::at_of` of event `i` here, read without asking `pass.at` first (a memoised
    /// list's trigger is mostly a new event: the two reads cost less than the comparison
    /// that would spare them) and kept there for the rules fired after it.
    #[inline(always)]
    pub(crate) fn at_of(&self, i: u32, pass: &mut LocPass) -> Option<(u32, u64)> {
        let cnode = self.ptrs.cnode(i as usize);
        let time = self.ev.time.get(i as usize);
        pass.at = (self.l, i, cnode, time);
        (cnode != NO_CNODE).then_some((cnode, time))
    }
}

/// One table of rules on a walk, the pass's own or the riding ones (`Rider`): what its
/// rules that are no queue consumers read (`had`, `fr`, `ctx`, built once per walk), the
/// list last asked for and the memo of its memoised lists (`plan::memo`).
struct Side<'a> {
    rules: &'a PassRules,
    had: &'a [Vec<(u32, u32)>],
    fr: Frame<'a>,
    ctx: crate::analysis::eval::Ctx<'a>,
    lists: Lists<'a>,
    memo: Memo,
}

/// The riding rules (`side`, the event pass's) on trigger event `i` here (of `kind`, in a
/// call of `region`; `word` their `kind_region`), on `E` alone.
#[inline(always)]
fn ride(
    eng: &Engine,
    side: &mut Side,
    here: &Here,
    (env, pass, taken): &mut (&mut [Value], &mut LocPass, &mut Vec<Vec<Value>>),
    (kind, region, word, i): (EventKind, Option<u32>, u64, usize),
) {
    let list = side.lists.get(side.rules, kind, region, word);
    if list.1.is_empty() {
        return;
    }
    env[0] = Value::Event(here.l, i as u32);
    // a memoised list (the riders' usual case) reads no call region of a slot
    if let Some(spec) = &side.rules.memo[list.0] {
        let key = (word, i as u32);
        let ctx = (&side.ctx, &mut side.memo);
        let env = (&mut **env, &mut **pass);
        try_memo(eng, &side.rules.folded, spec, list.1, env, ctx, here, key);
        return;
    }
    let mut regions = [region.unwrap_or(NO_CALL), UNSEEN, UNSEEN, UNSEEN];
    let mut at = (&mut **env, &mut regions, &mut **pass, &mut **taken);
    try_list(eng, side, list, &mut at, here, (word, i));
}

/// `walk_on`'s per-kind bits: the pass has rules for the kind, riding rules do.
const OWN: u8 = 1;
const RIDES: u8 = 2;

/// A trigger event's kind and call region (`None`: outside any call) in one word: the key
/// of `Lists` and the first word of a memo key (`pass::memo`).
#[inline(always)]
pub(crate) fn kind_region(kind: EventKind, region: Option<u32>) -> u64 {
    kind as u64 | region.map_or(u64::MAX << 8, |r| (r as u64) << 8)
}

/// A word `kind_region` never gives (its bits 8 to 62 all set or all clear with bit 63).
const NO_KIND_REGION: u64 = 1 << 63;

/// `PassRules::list_for` of the last (kind, region) asked for, kept: consecutive
/// triggers of a walk are mostly of one kind in calls of one region.
struct Lists<'a> {
    /// The (kind, region) as `kind_region` gives it (`NO_KIND_REGION`: none yet).
    key: u64,
    /// The list's index in `PassRules::lists`, and the list.
    list: (usize, &'a [usize]),
    /// How many shared values the rules of the kind read (`PassRules::shared`).
    shared: usize,
}

impl Default for Lists<'_> {
    fn default() -> Self {
        Lists {
            key: NO_KIND_REGION,
            list: (0, &[]),
            shared: 0,
        }
    }
}

impl<'a> Lists<'a> {
    /// The list of (`kind`, `region`), `word` their `kind_region`.
    #[inline(always)]
    fn get(
        &mut self,
        pr: &'a PassRules,
        kind: EventKind,
        region: Option<u32>,
        word: u64,
    ) -> (usize, &'a [usize]) {
        if self.key != word {
            self.key = word;
            let id = pr.list_for(kind as usize, region);
            self.list = (id, &pr.lists[id]);
            self.shared = pr.shared[kind as usize] as usize;
        }
        self.list
    }
}

/// What a trial of rules on one event works on: the environment (the trigger bound), the
/// call regions of its slots (`Engine::prefiltered_when`), the pass, the taken instances.
type Trial<'a> = (
    &'a mut [Value],
    &'a mut [u32; 4],
    &'a mut LocPass,
    &'a mut Vec<Vec<Value>>,
);

/// The list `id` (`rules_here`) of `side`'s table tried on event `i` here (its kind and
/// call region `word`, `kind_region`) bound in `at`'s environment: from the side's memo
/// when the list is memoised (`plan::memo`), else rule by rule (`try_rules`).
#[inline(always)]
fn try_list(
    eng: &Engine,
    side: &mut Side,
    (id, rules_here): (usize, &[usize]),
    at: &mut Trial,
    here: &Here,
    (word, i): (u64, usize),
) {
    let table = side.rules;
    match &table.memo[id] {
        Some(spec) => {
            let key = (word, i as u32);
            let env = (&mut *at.0, &mut *at.2);
            let ctx = (&side.ctx, &mut side.memo);
            try_memo(eng, &table.folded, spec, rules_here, env, ctx, here, key);
        }
        None => {
            // a new event: its shared values are still to be evaluated (a memoised list's
            // rules start from fresh ones where they are tried)
            // (`Lists::shared` cells: the pass's cells are as many as its kinds need most)
            for c in side.ctx.shared.iter().take(side.lists.shared) {
                c.set(None);
            }
            let (fr, ctx) = (&side.fr, &side.ctx);
            try_rules(eng, &table.folded, rules_here, at, side.had, fr, ctx)
        }
    }
}

/// The rules `rules_here` (indices into `folded`) tried in order on the event bound in
/// `at`'s environment; `fr`, `ctx`: what the rules that are no queue consumers read.
#[inline(always)]
fn try_rules(
    eng: &Engine,
    folded: &[KindRule],
    rules_here: &[usize],
    at: &mut Trial,
    had: &[Vec<(u32, u32)>],
    fr: &Frame,
    ctx: &crate::analysis::eval::Ctx,
) {
    let (env_buf, regions, pass, taken) = at;
    for &j in rules_here {
        let KindRule {
            rule: k,
            slots,
            code,
            plain,
            ..
        } = &folded[j];
        let k = *k;
        let env = &mut env_buf[..*slots];
        match code {
            // a consumer with nothing queued takes nothing
            None if pass.queues[k].is_empty() => {}
            None => eng.consume(k, env, pass, taken, had),
            Some((code, prefilter)) => {
                if let Some(when) = eng.prefiltered_when(prefilter, code, env, regions) {
                    match plain {
                        Some(at) => eng.fire_plain(k, code, when, *at as usize, env, pass, ctx),
                        None => eng.fire_when(k, code, when, env, pass, fr, ctx),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::analyse_with;
    use crate::analysis::cube::{FindingStats, Worst};
    use crate::analysis::plan::testing::testdata_trace;
    use crate::rules::RuleSet;

    /// (location, event, time, value bits) of a worst instance.
    type WorstBits = (u32, u32, u64, u64);

    /// A rule whose `at` names either the trigger event or its partner on another location,
    /// with fractional severities (sums whose bits depend on their order) and clock-touched
    /// instances: cells written by their own location's pass and by others'.
    pub(crate) const OTHER_AT: &str = r#"
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

    /// The traces the passes are compared on.
    const TRACES: [&str; 5] = [
        "scorep/mixed8",
        "scorep/nb",
        "scorep/wo",
        "scorep/ls",
        "scorep/lr",
    ];

    /// A fresh directory of rule files (name, text) for `RuleSet::load`.
    fn rules_dir(tag: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("perfexpert-{tag}-test-{pid}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(format!("{name}.toml")), text).unwrap();
        }
        dir
    }

    /// Accumulating passes (with their fallback for cells another location's pass wrote
    /// first) give the cube, the instance statistics and the worst instances of listing
    /// passes, bit for bit, with the built-in rules and with `OTHER_AT`.
    #[test]
    fn accumulating_passes_agree_with_listing_passes_bit_for_bit() {
        let dir = rules_dir("acc", &[("other_at", OTHER_AT)]);
        let before = RERUNS.load(std::sync::atomic::Ordering::Relaxed);
        for extra in [vec![], vec![dir.clone()]] {
            for name in TRACES {
                let (trace, replay) = testdata_trace(name);
                let rs = RuleSet::load(&extra).unwrap();
                let a = analyse_with(&trace, &replay, rs.clone(), true, &[]);
                let b = analyse_with(&trace, &replay, rs, false, &[]);
                assert_same(&a, &b, name);
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

    /// `a` and `b` have the same cube, instance statistics and worst instances, bit for bit.
    fn assert_same(a: &crate::analysis::Analysis, b: &crate::analysis::Analysis, name: &str) {
        for (k, (x, y)) in a.values.iter().zip(&b.values).enumerate() {
            let same = x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits());
            assert!(same, "{name} {}", a.rules.rules[k].info.id);
        }
        let stats = |v: &Vec<HashMap<u32, FindingStats>>| -> Vec<Vec<(u32, u64, u64, u64)>> {
            v.iter()
                .map(|m| {
                    let mut x: Vec<_> = m
                        .iter()
                        .map(|(c, s)| (*c, s.n, s.sev_cc.to_bits(), s.sev_rec.to_bits()))
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
    }

    /// `OTHER_AT` made a rule whose lists are memoised (`plan::memo`): at the trigger event,
    /// no clock condition, fractional severities (sums whose bits depend on their order) per
    /// message size, a wait state (booked per phase window); tried on sends and receives, it
    /// rides on no walk.
    fn memo_bytes() -> String {
        (OTHER_AT.replace("test_other_at", "test_memo_bytes"))
            .replace("Other at", "Memo bytes")
            .replace(
                "severity = \"E.time / 3 + 0.1\"",
                "when = \"E.call.paradigm == 'mpi' && E.bytes > 2\"\nseverity = \"E.bytes / 3 + 0.1\"",
            )
            .replace("if E.kind == 'MpiSend' then E.recv else E", "E")
            .replace("violation = \"E.time > 0.001\"\n", "")
    }

    /// Memoised rule lists (`plan::memo`, `pass::memo`) give what trying their rules on
    /// every trigger gives, bit for bit, accumulating and listing, with and without phase
    /// windows: the built-in rules (memoised in the riders) and with `memo_bytes` (in the
    /// event pass's own walk).
    #[test]
    fn memoised_lists_agree_with_the_rules_tried_bit_for_bit() {
        use crate::analysis::pass::memo::HITS;
        use crate::analysis::plan::{Plan, NO_MEMO};
        use std::sync::atomic::Ordering::Relaxed;
        let dir = rules_dir("memo", &[("memo_bytes", &memo_bytes())]);
        let before = HITS.load(Relaxed);
        for extra in [vec![], vec![dir.clone()]] {
            let rs = RuleSet::load(&extra).unwrap();
            for name in TRACES {
                let (trace, replay) = testdata_trace(name);
                let plan = Plan::new(&trace, &replay, &rs);
                let memoised = |p: &PassRules| p.memo.iter().any(|m| m.is_some());
                let rider = |p: &PassRules| p.rider.as_ref().is_some_and(|r| memoised(&r.rules));
                assert!(
                    plan.passes.iter().any(|p| memoised(p) || rider(p)),
                    "{name}"
                );
                let times = &trace.events[0].time;
                let mid = [times.get(times.len() / 2)];
                for (acc, bounds) in [(true, &[][..]), (false, &[]), (true, &mid), (false, &mid)] {
                    let memo = analyse_with(&trace, &replay, rs.clone(), acc, bounds);
                    NO_MEMO.with(|c| c.set(true));
                    let tried = analyse_with(&trace, &replay, rs.clone(), acc, bounds);
                    NO_MEMO.with(|c| c.set(false));
                    assert_same(&memo, &tried, name);
                    let bits = |a: &crate::analysis::Analysis| -> Vec<Vec<(u16, u32, Vec<u64>)>> {
                        let w = a.phase_values.iter().map(|p| {
                            let mut v: Vec<_> = (p.iter())
                                .map(|(&(k, c), x)| (k, c, x.iter().map(|y| y.to_bits()).collect()))
                                .collect();
                            v.sort_unstable();
                            v
                        });
                        w.collect()
                    };
                    assert_eq!(bits(&memo), bits(&tried), "{name}");
                }
            }
        }
        // triggers met a key again
        assert!(HITS.load(Relaxed) > before);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// `OTHER_AT` on receives only, its `at` the send on another location for a blocking
    /// receive: it rides on the receive pass's walk (`ride`), with cells written by other
    /// locations' walks.
    fn other_at_recv() -> String {
        (OTHER_AT.replace("test_other_at", "test_other_at_recv"))
            .replace("Other at", "Other at, receives")
            .replace("\"MpiSend\", \"MpiIsend\", ", "")
            .replace("E.time / 3 + 0.1", "E.time / 7 + 0.3")
            .replace(
                "E.kind == 'MpiSend' then E.recv",
                "exists(E.send) then E.send",
            )
    }

    /// The event-pass rules riding on the receive and send walks (`Rider`) give what the
    /// event pass's own walk gives, bit for bit: the built-in rules, and with
    /// `other_at_recv`. With `OTHER_AT` (tried on sends and receives) no kind of message
    /// rides: its instances stay in one walk.
    #[test]
    fn riding_rules_agree_with_the_event_pass_bit_for_bit() {
        use crate::analysis::plan::{Plan, NO_RIDE};
        let dir = rules_dir("ride", &[("recv", &other_at_recv())]);
        let both = rules_dir("ride-both", &[("other_at", OTHER_AT)]);
        for (extra, rides) in [
            (vec![], true),
            (vec![dir.clone()], true),
            (vec![both.clone()], false),
        ] {
            let rs = RuleSet::load(&extra).unwrap();
            for name in TRACES {
                let (trace, replay) = testdata_trace(name);
                let ride = analyse_with(&trace, &replay, rs.clone(), true, &[]);
                let plan = Plan::new(&trace, &replay, &rs);
                assert_eq!(plan.passes.iter().any(|p| p.rider.is_some()), rides);
                NO_RIDE.with(|c| c.set(true));
                let own = analyse_with(&trace, &replay, rs.clone(), true, &[]);
                let plan = Plan::new(&trace, &replay, &rs);
                NO_RIDE.with(|c| c.set(false));
                assert!(plan.passes.iter().all(|p| p.rider.is_none()));
                assert_same(&ride, &own, name);
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        std::fs::remove_dir_all(&both).ok();
    }
}
