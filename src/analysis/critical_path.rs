//! The critical path of the run (IPS-2): the longest chain of computation and communication
//! dependencies through the program activity graph, and its "what if this region took no
//! time?" variant.
//!
//! The graph (patterns.md §5 gives the pointers it walks):
//! * vertices are the events of every location;
//! * a **local edge** joins consecutive events of a location; its weight is the elapsed time
//!   between them, minus the part of it spent waiting for another location (below);
//! * a **dependency edge** joins the event a location waits for on another location to the
//!   event that completes the wait: for a receive (`sendptr`), the ENTER of the matched send's
//!   call → the receive; for a send that waited for its receive to be posted (the call
//!   completing it is a standard or synchronous send or a wait, entered before the receive's
//!   call and left after it: patterns.md §4.3), the ENTER of the receive's call → the LEAVE of
//!   the completing call; for a collective instance (§5.4), the ENTER of each member's call that
//!   this member depends on → this member's COLL_END (1-to-N: the root; N-to-1: the root
//!   depends on every member; scans: lower ranks; otherwise every other member); for an
//!   OpenMP barrier instance (§5.6), every other thread's ENTER of the barrier → this
//!   thread's LEAVE of it; likewise for the k-th MPI_Init* and MPI_Finalize of every
//!   location (§4.8: they synchronise all processes). Its weight
//!   is the time from the moment the target's location and the *latest* of its sources were
//!   both ready to the target, the same as the local edge into the target after the wait
//!   window: so an earlier source never looks binding, and recomputing with some weights set
//!   to zero simulates the run without that time (what-if).
//!
//! A location *waits* inside the call enclosing a dependency target `d` (entered at `e`) from
//! `t(e)` until the latest of its sources is ready (`t_ready`, capped at `t(d)`): local edges
//! lose their overlap with that window, so time spent blocked is carried by the dependency
//! edge, never by the waiting location. Sources later than their target (clock-condition
//! violations) are ignored. With timestamps clamped to be non-decreasing per location, every
//! vertex's distance is at most its time minus its location's first time, so the path length
//! never exceeds the run's duration; it equals it when the path starts on a location that
//! begins with the run and every wait is caused by a dependency (one rank computes while the
//! others wait).
//!
//! The longest path is found by dynamic programming in a topological order (each location in
//! event order, a target only after its sources): linear in events + dependency edges. No
//! per-event array is built: a cursor per location walks its events (a k-way sweep that
//! switches location when a target's source is not reached yet), distances are kept only at
//! dependency sources and the path's jumps at dependency targets, and a run of events
//! without target, source or wait window adds its elapsed time at once. The path's edges
//! are walked again, per stretch, only to attribute them (`Graph::for_each_stretch`: a
//! stretch's local edges summed at once for its location and segment; for the report,
//! `Graph::local_sums`, in runs of about as many edges each walked in parallel, a long
//! stretch cut into several, each run with its own window cursor: a ping-pong's path is one
//! stretch over all of a location's events). The what-if paths,
//! which need only their lengths, run beside the path and each other; the path itself, with
//! two threads, walks the two halves of the locations at once (`Walk::sweep_halves`: every
//! event's distance is the best over its edges whatever order the locations go in, so the
//! path is the serial one).

use crate::model::times::{Block, BLOCK, SHIFT};
use crate::model::{EventKind, KindsIn, Times, TimesRef, Trace};
use crate::replay::calltree::{Callee, CnodeIdx, NO_CNODE};
use crate::replay::matching::EventRef;
use crate::replay::{LocationState, Replay, NONE};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// OTF2 CollectiveOp values that give a collective's dependency structure.
fn op_shape(op: u8) -> Shape {
    match op {
        1 | 4 | 5 => Shape::OneToN,  // BCAST, SCATTER, SCATTERV
        2 | 3 | 12 => Shape::NToOne, // GATHER, GATHERV, REDUCE
        14 | 15 => Shape::Prefix,    // SCAN, EXSCAN
        _ => Shape::All,             // barrier, all-to-all, allreduce, ...
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    OneToN,
    NToOne,
    Prefix,
    All,
}

/// Where a dependency target's sources are.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The ENTER of the matched send's call.
    Msg(EventRef),
    /// Member `k` of collective instance `inst`.
    Coll { inst: u32, k: u32 },
    /// The ENTERs of the receive calls a blocking send completion waited for:
    /// `recv_enters[first..first + n]`.
    Recvs { first: u32, n: u32 },
}

/// One dependency target on a location.
#[derive(Clone, Copy, Debug)]
struct Dep {
    event: u32,
    source: Source,
}

/// A wait window of location: the local edges into events `first..=last` lose their overlap
/// with `[t(event - 1), until]`.
#[derive(Clone, Copy, Debug)]
struct Window {
    first: u32,
    last: u32,
    until: u64,
}

/// The replay's per-event columns, read in one place (the replay may store them otherwise);
/// an index past a location's events reads as `none`.
#[inline]
fn column<T>(
    replay: &Replay,
    l: usize,
    i: usize,
    read: fn(&LocationState, usize) -> T,
    none: T,
) -> T {
    let st = &replay.locations[l];
    if i < st.len() {
        read(st, i)
    } else {
        none
    }
}

#[inline]
pub(crate) fn enterptr(replay: &Replay, l: usize, i: usize) -> u32 {
    column(replay, l, i, LocationState::enterptr, NONE)
}

#[inline]
pub(crate) fn exitptr(replay: &Replay, l: usize, i: usize) -> u32 {
    column(replay, l, i, LocationState::exitptr, NONE)
}

#[inline]
pub(crate) fn cnode(replay: &Replay, l: usize, i: usize) -> CnodeIdx {
    column(replay, l, i, LocationState::cnode, NO_CNODE)
}

/// The dependency structure of a trace: targets per location (in event order), the wait
/// windows and clamped times. No per-event array is kept: the longest path walks each
/// location's events with a cursor and keeps distances only at dependency sources.
pub struct Graph<'a> {
    trace: &'a Trace,
    replay: &'a Replay,
    /// Per location: non-decreasing timestamps (the trace's own unless some went backwards).
    time: Vec<Cow<'a, Times>>,
    deps: Vec<Vec<Dep>>,
    /// Per location: the wait windows, sorted by first event.
    windows: Vec<Vec<Window>>,
    /// Per instance: the ENTER of each member's call (or its COLL_END if it has none), and
    /// the instance's shape and root position.
    inst_enter: Vec<Vec<EventRef>>,
    inst_shape: Vec<(Shape, u32)>,
    /// Instances of MPI_Init*: their waits are process start-up, left out of `waits`.
    inst_startup: Vec<bool>,
    /// Waits: (waiting location, location waited for, ticks), summed over the dependency
    /// targets of each pair, sorted by pair.
    pub waits: Vec<(u32, u32, u64)>,
    /// Per location: the sources of its `Source::Recvs` targets.
    recv_enters: Vec<Vec<EventRef>>,
    /// Per location: the events that are a source of some dependency, sorted (the longest
    /// path keeps its distances there).
    src_events: Vec<Vec<u32>>,
}

fn enter_of(replay: &Replay, r: EventRef) -> u32 {
    let e = enterptr(replay, r.loc as usize, r.event as usize);
    if e == NONE {
        r.event
    } else {
        e
    }
}

/// A forward cursor over a location's wait windows: the latest `until` of the windows that
/// cover event `i`, for increasing `i`.
struct WindowCursor<'w> {
    list: &'w [Window],
    next: usize,
    /// (last event, until) of the windows begun so far that may still cover.
    active: Vec<(u32, u64)>,
    /// The smallest last event and the latest `until` of `active` (`active` is unchanged
    /// while no window begins and none ends: the answer stays).
    min_last: u32,
    max_until: u64,
}

impl<'w> WindowCursor<'w> {
    fn new(list: &'w [Window]) -> WindowCursor<'w> {
        WindowCursor {
            list,
            next: 0,
            active: Vec::new(),
            min_last: 0,
            max_until: 0,
        }
    }

    #[inline(always)]
    fn until(&mut self, i: u32) -> Option<u64> {
        // no window begins at `i`: none is active, or the answer stays (most events)
        if self.list.get(self.next).is_none_or(|w| w.first > i) {
            if self.active.is_empty() {
                return None;
            }
            if self.min_last >= i {
                return Some(self.max_until);
            }
        }
        self.until_changed(i)
    }

    /// A cursor ready to answer `until` from event `i` on, as if it had answered every
    /// event before: the windows begun before `i` that still cover it active (`until`'s
    /// answer at an event depends only on the event, so a part of a location's events can
    /// be walked on its own, `Graph::local_sums`).
    fn at(list: &'w [Window], i: u32) -> WindowCursor<'w> {
        let next = list.partition_point(|w| w.first < i);
        let active: Vec<(u32, u64)> = (list[..next].iter())
            .filter(|w| w.last >= i)
            .map(|w| (w.last, w.until))
            .collect();
        WindowCursor {
            list,
            next,
            min_last: active.iter().map(|w| w.0).min().unwrap_or(0),
            max_until: active.iter().map(|w| w.1).max().unwrap_or(0),
            active,
        }
    }

    /// `until` where a window begins at `i` or one may have ended before it.
    #[inline(never)]
    fn until_changed(&mut self, i: u32) -> Option<u64> {
        let mut begun = false;
        while let Some(w) = self.list.get(self.next).filter(|w| w.first <= i) {
            self.active.push((w.last, w.until));
            self.next += 1;
            begun = true;
        }
        if self.active.is_empty() {
            return None;
        }
        if begun || self.min_last < i {
            self.active.retain(|w| w.0 >= i);
            self.min_last = self.active.iter().map(|w| w.0).min().unwrap_or(u32::MAX);
            self.max_until = self.active.iter().map(|w| w.1).max()?;
        }
        Some(self.max_until)
    }

    /// The first event from `i` on that a window may cover (`u32::MAX` if none).
    #[inline]
    fn covered_from(&self, i: u32) -> u32 {
        if self.active.iter().any(|w| w.0 >= i) {
            return i;
        }
        self.list
            .get(self.next)
            .map_or(u32::MAX, |w| w.first.max(i))
    }
}

/// A location's times read forward a block at a time (`times::Block`): a narrow block's
/// base and offsets held, so a read in it is a compare, a load and an add (`offs.get`), not
/// `TimesRef::get`'s base word read and tested each time; a wide block's times held for
/// the reads that miss the offsets. Any index may be read (another block is taken when it
/// lies outside the one held); one past the events panics, as `get` does.
#[derive(Clone, Copy)]
struct Ahead<'a> {
    t: TimesRef<'a>,
    /// The first event of the block held.
    from: usize,
    /// A narrow block's base and offsets (no offsets for a wide one).
    base: u64,
    offs: &'a [u32],
    /// A wide block's times (none for a narrow one).
    wide: &'a [u64],
}

impl<'a> Ahead<'a> {
    fn new(t: TimesRef<'a>) -> Ahead<'a> {
        let mut a = Ahead {
            t,
            from: 0,
            base: 0,
            offs: &[],
            wide: &[],
        };
        if !t.is_empty() {
            a.take(0);
        }
        a
    }

    /// The time of event `i`.
    #[inline(always)]
    fn at(&mut self, i: usize) -> u64 {
        match self.offs.get(i.wrapping_sub(self.from)) {
            Some(&o) => self.base + o as u64,
            None => self.enter(i),
        }
    }

    /// `at` of an event in a wide block or outside the block held: its block taken
    /// where it is another.
    #[inline(never)]
    fn enter(&mut self, i: usize) -> u64 {
        let j = i.wrapping_sub(self.from);
        if j >= BLOCK {
            self.take(i >> SHIFT);
        }
        let j = i - self.from;
        match self.offs.get(j) {
            Some(&o) => self.base + o as u64,
            None => self.wide[j],
        }
    }

    /// Block `k` held.
    fn take(&mut self, k: usize) {
        self.from = k << SHIFT;
        (self.base, self.offs, self.wide) = match self.t.block(k) {
            Block::Narrow(b, offs) => (b, offs, &[][..]),
            Block::Wide(ts) => (0, &[][..], ts),
        };
    }
}

/// The weight of the local edge into event `i > 0` of a location, from the time `t0` of
/// the event before to its time `t1` (clamped times; time spent waiting taken out); `wc`
/// is at `i` (called for increasing `i`).
#[inline(always)]
fn local_weight(t0: u64, t1: u64, i: usize, wc: &mut WindowCursor) -> u64 {
    let mut w = t1 - t0;
    if let Some(until) = wc.until(i as u32) {
        if until > t0 {
            w -= until.min(t1) - t0;
        }
    }
    w
}

/// The position of `x` in the sorted `v`, searched from `hint` on (galloping) or before it;
/// `hint` becomes the position found. The one after `hint` is tried first: targets mostly
/// read a location's sources in order (a ping-pong's receives, each its send's).
#[inline]
fn find_from(v: &[u32], hint: &mut usize, x: u32) -> Option<usize> {
    let h = (*hint).min(v.len());
    if v.get(h + 1) == Some(&x) {
        *hint = h + 1;
        return Some(h + 1);
    }
    let k = if v.get(h).is_some_and(|&y| y <= x) {
        let (mut lo, mut step) = (h, 1);
        while lo + step < v.len() && v[lo + step] <= x {
            lo += step;
            step *= 2;
        }
        let hi = (lo + step).min(v.len());
        lo + v[lo..hi].binary_search(&x).ok()?
    } else {
        v[..h].binary_search(&x).ok()?
    };
    *hint = k;
    Some(k)
}

/// Whether `t` never decreases (`t.windows(2).all(|w| w[0] <= w[1])`): blocks of 256
/// neighbours compared without a branch each (fewer instructions a time), the answer
/// checked between blocks.
#[cfg(test)]
fn non_decreasing(t: &[u64]) -> bool {
    let Some(next) = t.get(1..) else {
        return true;
    };
    (t.chunks(256).zip(next.chunks(256)))
        .all(|(a, b)| a.iter().zip(b).fold(true, |ok, (x, y)| ok & (x <= y)))
}

/// Per location, non-decreasing timestamps: the trace's own unless some went backwards.
fn clamped_times(trace: &Trace) -> Vec<Cow<'_, Times>> {
    use rayon::prelude::*;
    trace
        .events
        .par_iter()
        .map(|ev| {
            if ev.time.non_decreasing() {
                return Cow::Borrowed(&ev.time);
            }
            let mut last = ev.time.first().unwrap_or(0);
            Cow::Owned(
                ev.time
                    .iter()
                    .map(|t| {
                        last = last.max(t);
                        last
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The events other locations' targets read distances from, per location, sorted.
fn source_events(
    nloc: usize,
    deps: &[Vec<Dep>],
    recv_enters: &[Vec<EventRef>],
    inst_enter: &[Vec<EventRef>],
) -> Vec<Vec<u32>> {
    use rayon::prelude::*;
    // counted first, so that no vector grows by doubling
    let mut count = vec![0usize; nloc];
    for (l, ds) in deps.iter().enumerate() {
        for d in ds {
            if let Source::Msg(s) = d.source {
                count[s.loc as usize] += 1;
            }
        }
        for s in &recv_enters[l] {
            count[s.loc as usize] += 1;
        }
    }
    for s in inst_enter.iter().flatten() {
        count[s.loc as usize] += 1;
    }
    let mut src_events: Vec<Vec<u32>> = count.into_iter().map(Vec::with_capacity).collect();
    for (l, ds) in deps.iter().enumerate() {
        for d in ds {
            if let Source::Msg(s) = d.source {
                src_events[s.loc as usize].push(s.event);
            }
        }
        for s in &recv_enters[l] {
            src_events[s.loc as usize].push(s.event);
        }
    }
    for enters in inst_enter {
        for s in enters {
            src_events[s.loc as usize].push(s.event);
        }
    }
    src_events.par_iter_mut().for_each(|s| {
        s.sort_unstable();
        s.dedup();
        s.shrink_to_fit();
    });
    src_events
}

/// The instances of the graph as they are collected (collectives, MPI initialisation and
/// finalisation, OpenMP barriers); their members' targets go to the locations' dependencies.
#[derive(Default)]
struct Instances {
    /// Per instance: the ENTER of each member's call (or its COLL_END if it has none).
    enter: Vec<Vec<EventRef>>,
    /// Per instance: its shape and root position.
    shape: Vec<(Shape, u32)>,
    /// Which instances are of MPI_Init* (as far as any is).
    startup: Vec<bool>,
}

impl Instances {
    /// The collective instances of the replay.
    fn add_collectives(&mut self, trace: &Trace, replay: &Replay, deps: &mut [Vec<Dep>]) {
        self.enter.reserve_exact(replay.instances.len());
        self.shape.reserve_exact(replay.instances.len());
        for (n, inst) in replay.instances.iter().enumerate() {
            let enters: Vec<EventRef> = inst
                .members
                .iter()
                .map(|m| EventRef {
                    loc: m.loc,
                    event: enter_of(replay, *m),
                })
                .collect();
            let (op, root) = inst
                .members
                .first()
                .and_then(|m| trace.events[m.loc as usize].coll(m.event as usize))
                .map_or((0, u32::MAX), |c| (c.op, c.root));
            let shape = op_shape(op);
            // a rooted collective without a valid root is treated as all-to-all
            let shape = match shape {
                Shape::OneToN | Shape::NToOne if root as usize >= inst.members.len() => Shape::All,
                s => s,
            };
            for (k, m) in inst.members.iter().enumerate() {
                deps[m.loc as usize].push(Dep {
                    event: m.event,
                    source: Source::Coll {
                        inst: n as u32,
                        k: k as u32,
                    },
                });
            }
            self.enter.push(enters);
            self.shape.push((shape, root));
        }
    }

    /// MPI initialisation and finalisation synchronise every process (§4.8): the k-th
    /// MPI_Init* (MPI_Finalize) of every location that calls one forms an instance, each
    /// member's LEAVE waits for every member's ENTER.
    fn add_init_finalize(&mut self, trace: &Trace, replay: &Replay, deps: &mut [Vec<Dep>]) {
        let Some(calls) = init_finalize_calls(trace, replay) else {
            return;
        };
        for which in [1u8, 2] {
            let w = which as usize - 1;
            let most = calls.iter().map(|c| c[w].len()).max().unwrap_or(0);
            for k in 0..most {
                let members: Vec<(u32, u32, u32)> = calls
                    .iter()
                    .enumerate()
                    .filter_map(|(l, c)| c[w].get(k).map(|&(e, x)| (l as u32, e, x)))
                    .collect();
                if members.len() < 2 {
                    continue;
                }
                let n = self.enter.len() as u32;
                for (j, &(l, _, x)) in members.iter().enumerate() {
                    deps[l as usize].push(Dep {
                        event: x,
                        source: Source::Coll {
                            inst: n,
                            k: j as u32,
                        },
                    });
                }
                self.enter.push(
                    members
                        .iter()
                        .map(|&(l, e, _)| EventRef { loc: l, event: e })
                        .collect(),
                );
                self.shape.push((Shape::All, u32::MAX));
                self.startup.resize(self.enter.len() - 1, false);
                self.startup.push(which == 1);
            }
        }
    }

    /// OpenMP barrier instances (§5.6): every thread leaves the barrier after the last one
    /// entered it.
    fn add_omp_barriers(&mut self, replay: &Replay, deps: &mut [Vec<Dep>]) {
        for b in &replay.omp.barriers {
            let n = self.enter.len() as u32;
            let mut enters = Vec::with_capacity(b.members.len());
            for (k, m) in b.members.iter().enumerate() {
                enters.push(EventRef {
                    loc: m.loc,
                    event: m.enter,
                });
                let leave = exitptr(replay, m.loc as usize, m.enter as usize);
                if leave != NONE {
                    deps[m.loc as usize].push(Dep {
                        event: leave,
                        source: Source::Coll {
                            inst: n,
                            k: k as u32,
                        },
                    });
                }
            }
            self.enter.push(enters);
            self.shape.push((Shape::All, u32::MAX));
        }
    }
}

/// (ENTER, LEAVE) of a location's MPI_Init* calls and of its MPI_Finalize calls.
type InitFinalizeCalls = [Vec<(u32, u32)>; 2];

/// Per location, (ENTER, LEAVE) of every MPI_Init* call and of every MPI_Finalize call;
/// `None` if the trace defines neither region.
fn init_finalize_calls(trace: &Trace, replay: &Replay) -> Option<Vec<InitFinalizeCalls>> {
    use rayon::prelude::*;
    let init_fin: Vec<u8> = trace
        .defs
        .regions
        .iter()
        .map(|r| match crate::model::classify::classify(r).0 {
            "MPI_INIT" => 1,
            "MPI_FINALIZE" => 2,
            _ => 0,
        })
        .collect();
    if !init_fin.iter().any(|&x| x != 0) {
        return None;
    }
    let calls = (0..trace.events.len())
        .into_par_iter()
        .map(|l| {
            let ev = &trace.events[l];
            let mut c: [Vec<(u32, u32)>; 2] = Default::default();
            for i in 0..ev.len() {
                if ev.kind[i] != EventKind::Enter {
                    continue;
                }
                let which = init_fin.get(ev.arg[i] as usize).copied().unwrap_or(0);
                if which == 0 {
                    continue;
                }
                let x = exitptr(replay, l, i);
                if x != NONE {
                    c[which as usize - 1].push((i as u32, x));
                }
            }
            c
        })
        .collect();
    Some(calls)
}

/// The best way into a dependency target from another location: (distance, cross-location
/// edges, source, whether it is a collective's, weight of the dependency edge).
type Remote = (u64, u32, EventRef, bool, u64);

/// The state of one longest-path computation (`Graph::longest_path`): per location its
/// cursors, the distances at its dependency sources and the jumps onto it, and which
/// locations can go on and which wait for another.
pub(crate) struct Walk<'g> {
    /// What other locations read: the distances at the sources and how far each location is.
    shared: Shared,
    /// The dependency targets where the path came from another location.
    jumps: Vec<Vec<Jump>>,
    cur: Vec<Cursor>,
    wcs: Vec<WindowCursor<'g>>,
    sched: Sched,
}

/// What a location's dependency targets read of other locations: distances and
/// cross-location edges on the best path (among equally long paths the one with the fewest
/// wins: the path stays where the work is) at the sources, and how far each location's
/// cursor has gone (every source before it has its final values). Atomics, so that two
/// halves of the locations can be walked at once (`Walk::sweep_halves`); read and written
/// `Relaxed` but for `reached` (a store `Release` after the values it covers).
struct Shared {
    sdist: Vec<Vec<AtomicU64>>,
    shops: Vec<Vec<AtomicU32>>,
    reached: Vec<AtomicUsize>,
}

impl Shared {
    /// Location `l`'s cursor as the other locations see it.
    #[inline(always)]
    fn reached(&self, l: usize) -> usize {
        self.reached[l].load(Ordering::Acquire)
    }

    #[inline(always)]
    fn value(&self, l: usize, k: usize) -> (u64, u32) {
        (
            self.sdist[l][k].load(Ordering::Relaxed),
            self.shops[l][k].load(Ordering::Relaxed),
        )
    }

    #[inline(always)]
    fn set(&self, l: usize, k: usize, (d, h): (u64, u32)) {
        self.sdist[l][k].store(d, Ordering::Relaxed);
        self.shops[l][k].store(h, Ordering::Relaxed);
    }
}

/// Which locations can go on and which wait for another (one per half walked).
struct Sched {
    /// Per location: the locations waiting for it to move.
    waiters: Vec<Vec<usize>>,
    runnable: Vec<usize>,
    queued: Vec<bool>,
    broken: u64,
    /// Scratch: the sources of the dependency at hand.
    src: Vec<EventRef>,
    /// Per location: where the last source was found (targets read them mostly in order).
    hint: Vec<usize>,
    /// (location waited for, its cursor then, waiting location) where the location waited
    /// for is in the other half.
    remote: Vec<(usize, usize, usize)>,
}

impl Sched {
    /// The locations `runnable` (all queued) of a walk of `nloc` locations.
    fn new(nloc: usize, runnable: Vec<usize>) -> Sched {
        let mut queued = vec![false; nloc];
        runnable.iter().for_each(|&l| queued[l] = true);
        Sched {
            waiters: vec![Vec::new(); nloc],
            runnable,
            queued,
            broken: 0,
            src: Vec::new(),
            hint: vec![0usize; nloc],
            remote: Vec::new(),
        }
    }
}

/// The locations `first..first + cur.len()` of a walk, with their own scheduling: all of
/// them (`Walk::whole`) or one half (`Walk::sweep_halves`).
struct Part<'a, 'g> {
    first: usize,
    cur: &'a mut [Cursor],
    jumps: &'a mut [Vec<Jump>],
    wcs: &'a mut [WindowCursor<'g>],
    sched: &'a mut Sched,
    shared: &'a Shared,
}

/// A half of `Walk::sweep_halves`: not started yet, going on, out of work, done.
const NOT_STARTED: u8 = 0;
const RUNNING: u8 = 1;
const IDLE: u8 = 2;

impl<'g> Walk<'g> {
    /// Every location at its first event, and the start of the run: the earliest first
    /// event (a location that starts later is reached from it by an edge of its start-up
    /// delay). The distributed walk gives the run's start (`start`) and runs only the
    /// locations its process holds (`held`; the others' cursors and distances are set from
    /// their owners' by `set_remote`).
    pub(crate) fn new(g: &'g Graph, start: Option<u64>, held: Option<&[bool]>) -> (Walk<'g>, u64) {
        let nloc = g.trace.events.len();
        let mut cur: Vec<Cursor> = vec![Cursor::default(); nloc];
        let t0 = start.unwrap_or_else(|| g.first_time());
        for (c, t) in cur.iter_mut().zip(&g.time) {
            if let Some(first) = t.first() {
                c.dist = first - t0;
            }
        }
        let zeros = |n: usize| -> Vec<AtomicU64> { (0..n).map(|_| AtomicU64::new(0)).collect() };
        let walk = Walk {
            shared: Shared {
                sdist: g.src_events.iter().map(|s| zeros(s.len())).collect(),
                shops: (g.src_events.iter())
                    .map(|s| (0..s.len()).map(|_| AtomicU32::new(0)).collect())
                    .collect(),
                reached: (0..nloc).map(|_| AtomicUsize::new(0)).collect(),
            },
            jumps: vec![Vec::new(); nloc],
            cur,
            wcs: g.windows.iter().map(|w| WindowCursor::new(w)).collect(),
            sched: Sched::new(
                nloc,
                (0..nloc)
                    .rev()
                    .filter(|&l| held.is_none_or(|h| h.get(l) == Some(&true)))
                    .collect(),
            ),
        };
        (walk, t0)
    }

    /// All the locations, scheduled together.
    fn whole(&mut self) -> Part<'_, 'g> {
        Part {
            first: 0,
            cur: &mut self.cur,
            jumps: &mut self.jumps,
            wcs: &mut self.wcs,
            sched: &mut self.sched,
            shared: &self.shared,
        }
    }

    /// Every remaining location waits for another: a dependency cycle (only in a corrupt
    /// trace). Drops the dependency of the first blocked location; `false` if none is left.
    fn break_cycle(&mut self, g: &Graph) -> bool {
        match self.first_unfinished(g, &|_| true) {
            Some(l) => {
                self.break_at(l);
                true
            }
            None => false,
        }
    }

    /// The first location of `held` that has events left.
    pub(crate) fn first_unfinished(
        &self,
        g: &Graph,
        held: &dyn Fn(usize) -> bool,
    ) -> Option<usize> {
        (0..g.trace.events.len()).find(|&l| held(l) && self.cur[l].pos < g.trace.events[l].len())
    }

    /// Drops the dependency location `l` waits at (a cycle broken there).
    pub(crate) fn break_at(&mut self, l: usize) {
        self.cur[l].dpos += 1;
        let s = &mut self.sched;
        s.broken += 1;
        for w in &mut s.waiters {
            w.retain(|&x| x != l);
        }
        s.queued[l] = true;
        s.runnable.push(l);
    }

    /// Every runnable location as far as it goes (a location whose cursor moves wakes the
    /// ones waiting for it).
    pub(crate) fn sweep(
        &mut self,
        g: &Graph,
        zero: Option<&dyn Fn(CnodeIdx) -> bool>,
        trace_back: bool,
    ) {
        self.whole().sweep(g, zero, trace_back);
    }

    /// `sweep` of every location (all runnable, none broken), the two halves of the
    /// locations at once, each as far as it goes: a half waits for the other's cursors
    /// where a target's source lies there, and stops when the other half is out of work
    /// too (or has not started: rayon runs it later). The distances, and so the path, are
    /// the serial sweep's: each event's is the best over its edges, whatever the order
    /// the locations went in; the serial `sweep` then takes what is left from where the
    /// halves stopped (a cycle is broken only where nothing can go on, as there).
    fn sweep_halves(&mut self, g: &Graph, trace_back: bool) {
        let nloc = self.cur.len();
        let m = nloc / 2;
        let (ca, cb) = self.cur.split_at_mut(m);
        let (ja, jb) = self.jumps.split_at_mut(m);
        let (wa, wb) = self.wcs.split_at_mut(m);
        let mut sa = Sched::new(nloc, (0..m).rev().collect());
        let mut sb = Sched::new(nloc, (m..nloc).rev().collect());
        let shared = &self.shared;
        let mut a = Part {
            first: 0,
            cur: ca,
            jumps: ja,
            wcs: wa,
            sched: &mut sa,
            shared,
        };
        let mut b = Part {
            first: m,
            cur: cb,
            jumps: jb,
            wcs: wb,
            sched: &mut sb,
            shared,
        };
        let state = [AtomicU8::new(RUNNING), AtomicU8::new(NOT_STARTED)];
        rayon::join(
            || a.run_half(g, trace_back, &state, 0),
            || b.run_half(g, trace_back, &state, 1),
        );
        // the serial sweep goes on from here: every unfinished location runnable
        let runnable: Vec<usize> = (0..nloc)
            .rev()
            .filter(|&l| self.cur[l].pos < g.time[l].len())
            .collect();
        self.sched = Sched {
            hint: std::mem::take(&mut self.sched.hint),
            ..Sched::new(nloc, runnable)
        };
    }

    /// Location `l`'s next event (all before it have their distances).
    pub(crate) fn pos(&self, l: usize) -> usize {
        self.cur[l].pos
    }

    /// The distance and cross-location edges at event `e` of location `l`, a source of
    /// some dependency already passed.
    pub(crate) fn source_value(&self, g: &Graph, l: usize, e: u32) -> Option<(u64, u32)> {
        let k = g.src_events[l].binary_search(&e).ok()?;
        Some(self.shared.value(l, k))
    }

    /// A location held elsewhere: its owner's cursor is at `pos` (in this graph's events of
    /// it), and `values` are the distances and cross-location edges at its sources; the
    /// locations waiting for it are woken.
    pub(crate) fn set_remote(
        &mut self,
        g: &Graph,
        l: usize,
        pos: usize,
        values: &[(u32, u64, u32)],
    ) {
        for &(e, d, h) in values {
            if let Ok(k) = g.src_events[l].binary_search(&e) {
                self.shared.set(l, k, (d, h));
            }
        }
        self.cur[l].pos = self.cur[l].pos.max(pos);
        self.shared.reached[l].store(self.cur[l].pos, Ordering::Release);
        self.whole().wake(l);
    }

    /// Dependencies dropped to break cycles so far.
    pub(crate) fn broken(&self) -> u64 {
        self.sched.broken
    }

    /// The end of the path: the largest distance over every location's last event, as
    /// (distance, hops, time, location).
    pub(crate) fn end(&self, g: &Graph, held: &dyn Fn(usize) -> bool) -> Option<End> {
        let mut end: Option<End> = None;
        for (l, (c, time)) in self.cur.iter().zip(&g.time).enumerate() {
            if let (Some(t), true) = (time.last(), held(l)) {
                let e = (c.dist, c.hops, t, l as u32);
                if end.is_none_or(|b| later_end(e, b)) {
                    end = Some(e);
                }
            }
        }
        end
    }

    /// Back from the last event of location `l`: a stretch of local edges on one location
    /// per jump, last stretch first.
    fn stretches_to(&self, g: &Graph, l: u32) -> Vec<Stretch> {
        let mut stretches = Vec::new();
        let at = EventRef {
            loc: l,
            event: (g.time[l as usize].len() - 1) as u32,
        };
        self.stretches_from(at, &|_| false, &mut stretches);
        stretches
    }

    /// Back from event `at`: a stretch of local edges on one location per jump, last
    /// stretch first, appended to `stretches`, until the path comes from a location that
    /// `remote` says is held elsewhere (that jump's source is returned).
    pub(crate) fn stretches_from(
        &self,
        mut at: EventRef,
        remote: &dyn Fn(u32) -> bool,
        stretches: &mut Vec<Stretch>,
    ) -> Option<EventRef> {
        loop {
            if remote(at.loc) {
                return Some(at);
            }
            let js = &self.jumps[at.loc as usize];
            let k = js.partition_point(|j| j.event <= at.event);
            match k.checked_sub(1).map(|k| js[k]) {
                Some(j) => {
                    stretches.push(Stretch {
                        loc: at.loc,
                        first: j.event,
                        last: at.event,
                        entry: Some((j.from, j.weight, j.coll)),
                    });
                    at = j.from;
                }
                None => {
                    stretches.push(Stretch {
                        loc: at.loc,
                        first: 0,
                        last: at.event,
                        entry: None,
                    });
                    return None;
                }
            }
        }
    }
}

impl<'g> Part<'_, 'g> {
    /// Every runnable location as far as it goes (`Walk::sweep`).
    fn sweep(&mut self, g: &Graph, zero: Option<&dyn Fn(CnodeIdx) -> bool>, trace_back: bool) {
        while let Some(l) = self.sched.runnable.pop() {
            self.sched.queued[l] = false;
            let before = self.cur[l - self.first].pos;
            self.advance(g, l, zero, trace_back);
            if self.cur[l - self.first].pos > before {
                self.wake(l);
            }
        }
    }

    /// The locations waiting for location `l` become runnable.
    fn wake(&mut self, l: usize) {
        let s = &mut *self.sched;
        for w in std::mem::take(&mut s.waiters[l]) {
            if !s.queued[w] {
                s.queued[w] = true;
                s.runnable.push(w);
            }
        }
    }

    /// The locations waiting for the other half whose location waited for has moved
    /// become runnable; whether any did.
    fn poll_remote(&mut self) -> bool {
        let (s, shared) = (&mut *self.sched, self.shared);
        let before = s.runnable.len();
        s.remote.retain(|&(sl, seen, l)| {
            if shared.reached(sl) == seen {
                return true;
            }
            if !s.queued[l] {
                s.queued[l] = true;
                s.runnable.push(l);
            }
            false
        });
        s.runnable.len() > before
    }

    /// One half of `Walk::sweep_halves` (`me`: 0 or 1; `state`: both halves' states).
    fn run_half(&mut self, g: &Graph, trace_back: bool, state: &[AtomicU8; 2], me: usize) {
        state[me].store(RUNNING, Ordering::SeqCst);
        loop {
            self.sweep(g, None, trace_back);
            if self.poll_remote() {
                continue;
            }
            if self.sched.remote.is_empty() {
                break; // every location of the half done, or waiting inside it (a cycle)
            }
            state[me].store(IDLE, Ordering::SeqCst);
            // the other half may still move a location waited for: wait while it runs
            let mut spins = 0u32;
            while state[1 - me].load(Ordering::SeqCst) == RUNNING && !self.poll_remote() {
                spins = spins.wrapping_add(1);
                if spins % 64 == 0 {
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
            if !self.poll_remote() && self.sched.runnable.is_empty() {
                break;
            }
            state[me].store(RUNNING, Ordering::SeqCst);
        }
        state[me].store(IDLE, Ordering::SeqCst);
    }

    /// Location `l` as far as it goes: up to its end, or to a dependency target with a
    /// source not reached yet (then `l` waits for that source's location).
    fn advance(
        &mut self,
        g: &Graph,
        l: usize,
        zero: Option<&dyn Fn(CnodeIdx) -> bool>,
        trace_back: bool,
    ) {
        let t = g.time[l].view();
        let n = t.len();
        let mut at = Ahead::new(t);
        let deps = &g.deps[l][..];
        let srcs = &g.src_events[l][..];
        let me = l - self.first;
        // the part's fields taken apart once: the loop keeps its own in registers, and a
        // dependency target reads only the scheduling and the shared values
        let held = (self.first, self.cur.len());
        let Part {
            cur,
            jumps,
            wcs,
            sched,
            shared,
            ..
        } = self;
        let shared: &Shared = shared;
        let (wc, jumps) = (&mut wcs[me], &mut jumps[me]);
        let mut reads = Reads {
            sched,
            shared,
            held,
        };
        // this location's values other locations read (one index each, not two a source)
        let (sdist, shops, reached) = (
            &shared.sdist[l][..],
            &shared.shops[l][..],
            &shared.reached[l],
        );
        let mut c = cur[me];
        // the time of the event before the cursor's (read once: each event's time is the
        // next one's time before)
        let mut tp = match c.pos {
            p @ 1.. if p <= n => at.at(p - 1),
            _ => 0,
        };
        // the events of the next dependency target and of the next source (`n` past the
        // last: never an event of the walk)
        let dep_at = |k: usize| deps.get(k).map_or(n, |d| d.event as usize);
        let src_at = |k: usize| srcs.get(k).map_or(n, |&e| e as usize);
        let (mut next_dep, mut next_src) = (dep_at(c.dpos), src_at(c.spos));
        // the first event from the cursor on that a wait window may cover: the local edges
        // into the events before it are their elapsed time (`wc` asked only from there)
        let mut next_win = wc.covered_from(c.pos as u32) as usize;
        while c.pos < n {
            let i = c.pos;
            let ti = at.at(i);
            // the local edge into event i (none into the first); `wc` may be asked again
            // at `i` if the dependency below is not ready: its answer depends on `i` only
            let mut w = 0;
            if i > 0 {
                w = if i < next_win {
                    ti - tp
                } else {
                    let w = local_weight(tp, ti, i, wc);
                    next_win = wc.covered_from((i as u32).saturating_add(1)) as usize;
                    w
                };
                if let Some(zero) = zero {
                    let cn = g.active(l, i - 1);
                    if cn != NO_CNODE && zero(cn) {
                        w = 0;
                    }
                }
            }
            if next_dep == i {
                // the dependency of event i, if its sources are all done
                let mut remote: Option<Remote> = None;
                if let Some(&d) = deps.get(c.dpos) {
                    match reads.dependency(g, (tp, ti), l, i, d, zero) {
                        Some(r) => remote = r,
                        None => break,
                    }
                }
                c.dpos += 1;
                next_dep = dep_at(c.dpos);
                c.dist += w;
                // a tie keeps the local edge: the location was not waiting
                if let Some((v, h, s, coll, w)) = remote {
                    if v > c.dist || (v == c.dist && h < c.hops) {
                        c.dist = v;
                        c.hops = h;
                        if trace_back {
                            jumps.push(Jump {
                                event: i as u32,
                                from: s,
                                weight: w,
                                coll,
                            });
                        }
                    }
                }
            } else {
                c.dist += w;
            }
            while next_src <= i {
                if next_src == i {
                    if let (Some(d), Some(h)) = (sdist.get(c.spos), shops.get(c.spos)) {
                        d.store(c.dist, Ordering::Relaxed);
                        h.store(c.hops, Ordering::Relaxed);
                    }
                    // the other half may read it now
                    reached.store(i + 1, Ordering::Release);
                }
                c.spos += 1;
                next_src = src_at(c.spos);
            }
            c.pos += 1;
            tp = ti;
            if zero.is_none() && c.pos < n {
                // events up to the next one that matters: their local edges are their
                // elapsed time
                let next = next_dep.min(next_src).min(next_win).min(n);
                if next > c.pos {
                    tp = at.at(next - 1);
                    c.dist += tp - ti;
                    c.pos = next;
                }
            }
        }
        cur[me] = c;
        reached.store(c.pos, Ordering::Release);
    }
}

/// What a dependency target reads and changes of a walk's part: its scheduling (a location
/// that must wait is queued there) and the values every part shares; `held` the part's
/// locations, `first..first + len` (`Part::advance` keeps the rest of the part to itself).
struct Reads<'a> {
    sched: &'a mut Sched,
    shared: &'a Shared,
    held: (usize, usize),
}

impl Reads<'_> {
    /// Location `l` waits for location `sl` to move.
    #[inline]
    fn wait_for(&mut self, sl: usize, l: usize) {
        if sl.wrapping_sub(self.held.0) < self.held.1 {
            self.sched.waiters[sl].push(l);
        } else {
            let seen = self.shared.reached(sl);
            self.sched.remote.push((sl, seen, l));
        }
    }

    /// Dependency `d` of event `i` of location `l`: `None` if a source is not reached yet
    /// (`l` then waits for its location), else the best way in from a source, if any.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn dependency(
        &mut self,
        g: &Graph,
        (tp, ti): (u64, u64),
        l: usize,
        i: usize,
        d: Dep,
        zero: Option<&dyn Fn(CnodeIdx) -> bool>,
    ) -> Option<Option<Remote>> {
        if let Source::Msg(s) = d.source {
            return self.msg_dependency(g, (tp, ti), l, i, s, zero);
        }
        let mut remote: Option<Remote> = None;
        g.sources(l, &d, &mut self.sched.src);
        // (sources are on other locations)
        let shared = self.shared;
        if let Some(s) =
            (self.sched.src.iter()).find(|s| shared.reached(s.loc as usize) <= s.event as usize)
        {
            let sl = s.loc as usize;
            self.wait_for(sl, l);
            return None;
        }
        let z = zero.is_some_and(|zero| {
            let cn = cnode(g.replay, l, i);
            cn != NO_CNODE && zero(cn)
        });
        let s = &mut *self.sched;
        // the dependency takes from the latest source to the target, whichever source the
        // path comes from
        let ready = (s.src.iter())
            .map(|s| g.time[s.loc as usize].get(s.event as usize))
            .max()
            .unwrap_or(ti);
        // the part of the target's last edge after it and its sources were ready: the same
        // on the local edge (the wait window) and from any source
        let after = if i > 0 { ready.max(tp) } else { ready };
        let lat = ti.saturating_sub(after);
        let w = if z { 0 } else { lat };
        for src in &s.src {
            let sl = src.loc as usize;
            let Some(k) = find_from(&g.src_events[sl], &mut s.hint[sl], src.event) else {
                continue;
            };
            let (d0, h0) = shared.value(sl, k);
            let (v, h) = (d0 + w, h0 + 1);
            if remote.is_none_or(|(bv, bh, _, _, _)| v > bv || (v == bv && h < bh)) {
                remote = Some((v, h, *src, matches!(d.source, Source::Coll { .. }), w));
            }
        }
        Some(remote)
    }

    /// `dependency` of a receive, whose one source is the ENTER of its send's call `s`
    /// (the common case, without the list of sources `Graph::sources` makes); `tp` and
    /// `ti` are the times of events `i - 1` (when `i > 0`) and `i` of location `l`.
    #[inline(always)]
    fn msg_dependency(
        &mut self,
        g: &Graph,
        (tp, ti): (u64, u64),
        l: usize,
        i: usize,
        s: EventRef,
        zero: Option<&dyn Fn(CnodeIdx) -> bool>,
    ) -> Option<Option<Remote>> {
        let sl = s.loc as usize;
        // a source on the same location or later than its target is no dependency
        if sl == l {
            return Some(None);
        }
        let ready = g.time[sl].get(s.event as usize);
        if ready > ti {
            return Some(None);
        }
        if self.shared.reached(sl) <= s.event as usize {
            self.wait_for(sl, l);
            return None;
        }
        let z = zero.is_some_and(|zero| {
            let cn = cnode(g.replay, l, i);
            cn != NO_CNODE && zero(cn)
        });
        let after = if i > 0 { ready.max(tp) } else { ready };
        let w = if z { 0 } else { ti.saturating_sub(after) };
        let Some(k) = find_from(&g.src_events[sl], &mut self.sched.hint[sl], s.event) else {
            return Some(None);
        };
        let (d0, h0) = self.shared.value(sl, k);
        Some(Some((d0 + w, h0 + 1, s, false, w)))
    }
}

/// The end of a path: (distance, cross-location edges, time, location) of a location's
/// last event.
pub(crate) type End = (u64, u32, u64, u32);

/// Whether end `e` beats end `b` (found at an earlier location): longer, then fewer
/// cross-location edges, then later.
pub(crate) fn later_end(e: End, b: End) -> bool {
    (e.0, std::cmp::Reverse(e.1), e.2) > (b.0, std::cmp::Reverse(b.1), b.2)
}

/// A dependency target where the path came from another location.
#[derive(Clone, Copy, Debug)]
struct Jump {
    event: u32,
    from: EventRef,
    weight: u64,
    coll: bool,
}

/// The longest-path state of one location: the next event and its distance.
#[derive(Clone, Copy, Default)]
struct Cursor {
    pos: usize,
    dpos: usize,
    spos: usize,
    dist: u64,
    hops: u32,
}

impl<'a> Graph<'a> {
    pub fn new(trace: &'a Trace, replay: &'a Replay) -> Graph<'a> {
        use rayon::prelude::*;
        let nloc = trace.events.len();
        let time = clamped_times(trace);
        let (mut deps, recv_enters) = Self::message_dependencies(trace, replay);
        let mut inst = Instances::default();
        inst.add_collectives(trace, replay, &mut deps);
        inst.add_init_finalize(trace, replay, &mut deps);
        inst.add_omp_barriers(replay, &mut deps);
        deps.par_iter_mut().for_each(|d| {
            // stable: among targets of one event the first added stays
            d.sort_by_key(|d| d.event);
            // one dependency per target event (a COLL_END is never also a barrier's LEAVE)
            d.dedup_by_key(|d| d.event);
        });
        let src_events = source_events(nloc, &deps, &recv_enters, &inst.enter);
        let mut g = Graph {
            trace,
            replay,
            time,
            deps,
            windows: Vec::new(),
            inst_enter: inst.enter,
            inst_shape: inst.shape,
            inst_startup: inst.startup,
            waits: Vec::new(),
            recv_enters,
            src_events,
        };
        g.compute_windows();
        g
    }

    /// Per location, the targets of its receives and of its blocking sends that waited for
    /// their receive to be posted (a synchronous or rendezvous protocol), and the sources of
    /// its `Source::Recvs` targets. The LEAVE of the call completing such a send depends on
    /// the ENTER of the call that posted the receive. The trace shows it (patterns.md §4.3)
    /// when the completing call is a standard or synchronous send, or a wait, and was entered
    /// before the receive was posted and left after.
    #[allow(clippy::type_complexity)]
    fn message_dependencies(trace: &Trace, replay: &Replay) -> (Vec<Vec<Dep>>, Vec<Vec<EventRef>>) {
        use rayon::prelude::*;
        let blocking: Vec<bool> = (trace.defs.regions.iter())
            .map(|r| match crate::model::classify::classify(r) {
                ("P2P_SEND", mode) => mode == "STANDARD" || mode == "SYNCHRONOUS",
                (class, _) => class == "P2P_WAIT_SINGLE" || class == "P2P_WAIT_MULTI",
            })
            .collect();
        (0..trace.events.len())
            .into_par_iter()
            .map(|l| {
                let ev = &trace.events[l];
                let (arg, partner): (&[u32], &[EventRef]) = (&ev.arg, &replay.msg_links[l].partner);
                let mut deps = Vec::new();
                for i in KindsIn::new(&ev.kind, 0, EventKind::MpiRecv, EventKind::MpiIrecv) {
                    let Some(p) = partner.get(arg[i] as usize) else {
                        continue;
                    };
                    if p.is_some() {
                        let src = EventRef {
                            loc: p.loc,
                            event: enter_of(replay, *p),
                        };
                        deps.push(Dep {
                            event: i as u32,
                            source: Source::Msg(src),
                        });
                    }
                }
                let mut recv_enters = Vec::new();
                Self::receive_dependencies(
                    trace,
                    replay,
                    &blocking,
                    l,
                    &mut deps,
                    &mut recv_enters,
                );
                // the graph keeps them to the end: no spare capacity (up to half of a
                // vector that grew by doubling; the JSON run's peak memory, issue 26)
                deps.shrink_to_fit();
                recv_enters.shrink_to_fit();
                (deps, recv_enters)
            })
            .unzip()
    }

    /// Adds the send completion → receive posting dependencies of location `l` (see
    /// `message_dependencies`).
    fn receive_dependencies(
        trace: &Trace,
        replay: &Replay,
        blocking: &[bool],
        l: usize,
        deps: &mut Vec<Dep>,
        recv_enters: &mut Vec<EventRef>,
    ) {
        // the call (its ENTER) enclosing event `i` of location `l`, if any
        let call = |l: usize, i: u32| -> Option<u32> {
            let e = enterptr(replay, l, i as usize);
            (e != NONE).then_some(e)
        };
        // the same on this location, and an ENTER's LEAVE there (its replay state read once)
        let st = &replay.locations[l];
        let own_call = |i: u32| -> Option<u32> {
            let i = i as usize;
            let e = if i < st.len() { st.enterptr(i) } else { NONE };
            (e != NONE).then_some(e)
        };
        let own_exit = |i: u32| -> u32 {
            let i = i as usize;
            if i < st.len() {
                st.exitptr(i)
            } else {
                NONE
            }
        };
        let ev = &trace.events[l];
        let links = &replay.msg_links[l];
        // (LEAVE of the completing call, ENTER of the receive's call)
        let mut found: Vec<(u32, EventRef)> = Vec::new();
        for i in KindsIn::new(&ev.kind, 0, EventKind::MpiSend, EventKind::MpiIsend) {
            let kind = ev.kind[i];
            let k = ev.arg[i] as usize;
            let Some(p) = links.partner.get(k) else {
                continue;
            };
            if !p.is_some() || links.cancelled(k) {
                continue;
            }
            // the event completing the send: the send itself, or its request's completion
            let c = if kind == EventKind::MpiSend {
                i as u32
            } else {
                links.request_event(k)
            };
            if c == NONE {
                continue;
            }
            let Some(ce) = own_call(c) else { continue };
            let region = ev.arg[ce as usize] as usize;
            if ev.kind[ce as usize] != EventKind::Enter
                || !blocking.get(region).copied().unwrap_or(false)
            {
                continue;
            }
            let cl = own_exit(ce);
            if cl == NONE {
                continue;
            }
            // the receive's posting call: the receive's own call, or its request's start
            let (rl, rev) = (p.loc as usize, &trace.events[p.loc as usize]);
            let q = if rev.kind[p.event as usize] == EventKind::MpiRecv {
                p.event
            } else {
                let rk = rev.arg[p.event as usize] as usize;
                replay.msg_links[rl].request_event(rk)
            };
            let Some(qe) = (q != NONE).then(|| call(rl, q)).flatten() else {
                continue;
            };
            let (tc_enter, tc_leave) = (ev.time.get(ce as usize), ev.time.get(cl as usize));
            let tq = rev.time.get(qe as usize);
            if tc_enter < tq && tq < tc_leave {
                found.push((
                    cl,
                    EventRef {
                        loc: p.loc,
                        event: qe,
                    },
                ));
            }
        }
        found.sort_unstable_by_key(|&(e, s)| (e, s.loc, s.event));
        found.dedup();
        let mut j = 0;
        while j < found.len() {
            let e = found[j].0;
            let first = recv_enters.len() as u32;
            while j < found.len() && found[j].0 == e {
                recv_enters.push(found[j].1);
                j += 1;
            }
            deps.push(Dep {
                event: e,
                source: Source::Recvs {
                    first,
                    n: recv_enters.len() as u32 - first,
                },
            });
        }
    }

    /// The sources of a dependency target of location `l` (never itself).
    fn sources(&self, l: usize, d: &Dep, out: &mut Vec<EventRef>) {
        out.clear();
        if let Source::Msg(s) = d.source {
            // the common case, one source: the same test as the `retain` below
            if s.loc != l as u32
                && self.time[s.loc as usize].get(s.event as usize)
                    <= self.time[l].get(d.event as usize)
            {
                out.push(s);
            }
            return;
        }
        match d.source {
            Source::Msg(s) => out.push(s),
            Source::Recvs { first, n } => {
                out.extend_from_slice(&self.recv_enters[l][first as usize..(first + n) as usize])
            }
            Source::Coll { inst, k } => {
                let enters = &self.inst_enter[inst as usize];
                let (shape, root) = self.inst_shape[inst as usize];
                let k = k as usize;
                match shape {
                    Shape::OneToN if k != root as usize => out.push(enters[root as usize]),
                    Shape::OneToN => {}
                    Shape::NToOne if k == root as usize => out.extend(
                        enters
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| *j != k)
                            .map(|(_, e)| *e),
                    ),
                    Shape::NToOne => {}
                    Shape::Prefix => out.extend(enters[..k].iter().copied()),
                    Shape::All => out.extend(
                        enters
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| *j != k)
                            .map(|(_, e)| *e),
                    ),
                }
            }
        }
        let me = l as u32;
        let td = self.time[l].get(d.event as usize);
        // a source on the same location or later than its target is no dependency
        out.retain(|s| s.loc != me && self.time[s.loc as usize].get(s.event as usize) <= td);
    }

    fn compute_windows(&mut self) {
        use rayon::prelude::*;
        type Waits = Vec<(u32, u32, u64)>;
        let per_loc: Vec<(Vec<Window>, Waits)> = (0..self.deps.len())
            .into_par_iter()
            .map(|l| {
                let mut src = Vec::new();
                let mut w = Vec::new();
                let mut waits: Vec<(u32, u32, u64)> = Vec::new();
                // per enclosing call: the end of the wait already counted (multi-wait calls)
                let mut counted: (u32, u64) = (NONE, 0);
                // (the targets in order: their times and their calls' read a block at a time)
                let mut t = Ahead::new(self.time[l].view());
                let st = &self.replay.locations[l];
                for d in &self.deps[l] {
                    let td = t.at(d.event as usize);
                    // the latest source and its time (a receive's one source read directly:
                    // `sources`' test)
                    let (latest, ready) = match d.source {
                        Source::Msg(s) => {
                            let ts = self.time[s.loc as usize].get(s.event as usize);
                            if s.loc == l as u32 || ts > td {
                                continue;
                            }
                            (s, ts)
                        }
                        _ => {
                            self.sources(l, d, &mut src);
                            let Some(&latest) = src.iter().max_by_key(|s| {
                                (
                                    self.time[s.loc as usize].get(s.event as usize),
                                    u32::MAX - s.loc,
                                )
                            }) else {
                                continue;
                            };
                            (
                                latest,
                                self.time[latest.loc as usize].get(latest.event as usize),
                            )
                        }
                    };
                    let e = match d.event as usize {
                        i if i < st.len() => st.enterptr(i),
                        _ => NONE,
                    };
                    let e = if e == NONE { d.event } else { e };
                    let te = t.at(e as usize);
                    let from = if counted.0 == e {
                        te.max(counted.1)
                    } else {
                        te
                    };
                    let until = ready.min(td);
                    let startup = matches!(d.source, Source::Coll { inst, .. }
                        if self.inst_startup.get(inst as usize) == Some(&true));
                    if until > from {
                        if !startup {
                            waits.push((l as u32, latest.loc, until - from));
                        }
                        counted = (e, until);
                        // every local edge inside (e, d] overlaps [te, until]
                        if e < d.event {
                            w.push(Window {
                                first: e + 1,
                                last: d.event,
                                until,
                            });
                        }
                    }
                }
                w.sort_by_key(|w| w.first);
                w.shrink_to_fit();
                // the waits of this location per location waited for (exact: integer sums)
                waits.sort_unstable_by_key(|x| x.1);
                let mut summed: Vec<(u32, u32, u64)> = Vec::new();
                for x in waits {
                    match summed.last_mut() {
                        Some(s) if s.1 == x.1 => s.2 += x.2,
                        _ => summed.push(x),
                    }
                }
                (w, summed)
            })
            .collect();
        let mut windows = Vec::with_capacity(per_loc.len());
        let mut waits = Vec::new();
        for (w, s) in per_loc {
            windows.push(w);
            waits.extend(s);
        }
        self.windows = windows;
        self.waits = waits;
    }

    /// The earliest first event of every location (the start of the run).
    pub(crate) fn first_time(&self) -> u64 {
        (self.time.iter())
            .filter_map(|t| t.first())
            .min()
            .unwrap_or(0)
    }

    /// The events of location `l` other locations' targets read distances from, with
    /// `more` added (sorted, without repeats): a process of `run --mpi` keeps the distances
    /// that remote targets read.
    pub(crate) fn add_sources(&mut self, l: usize, more: &[u32]) {
        let s = &mut self.src_events[l];
        s.extend_from_slice(more);
        s.sort_unstable();
        s.dedup();
    }

    /// The events of location `l` that are a source of some dependency here.
    pub(crate) fn sources_of(&self, l: usize) -> &[u32] {
        &self.src_events[l]
    }

    /// The matcher of each region of `what_if` (`region_matcher`); an unknown name is the
    /// error.
    pub(crate) fn what_if_matchers(&self, what_if: &[String]) -> Result<Vec<Vec<bool>>, String> {
        (what_if.iter())
            .map(|r| self.region_matcher(r).ok_or_else(|| r.clone()))
            .collect()
    }

    /// The call path active between event `i` and the next one on location `l`.
    fn active(&self, l: usize, i: usize) -> CnodeIdx {
        self.active_in(&self.replay.locations[l], &self.trace.events[l].kind[..], i)
    }

    /// `active` of the location whose replay state is `st` and event kinds `kind`.
    #[inline]
    fn active_in(&self, st: &LocationState, kind: &[EventKind], i: usize) -> CnodeIdx {
        let c = if i < st.len() { st.cnode(i) } else { NO_CNODE };
        if c == NO_CNODE {
            return c;
        }
        match kind[i] {
            EventKind::Leave => self.replay.tree.nodes[c as usize]
                .parent
                .unwrap_or(NO_CNODE),
            _ => c,
        }
    }

    /// The longest path; `zero(c)` says whether time attributed to call path `c` counts 0.
    pub fn longest(&self, zero: &dyn Fn(CnodeIdx) -> bool) -> Path {
        self.longest_path(Some(zero), true)
    }

    /// The longest path with every time counted (runs of uneventful events taken at once).
    pub fn path(&self) -> Path {
        self.longest_path(None, true)
    }

    /// The longest path's length (no edges kept), for what-if questions.
    fn longest_length(&self, zero: &dyn Fn(CnodeIdx) -> bool) -> Path {
        self.longest_path(Some(zero), false)
    }

    /// The longest path. Events are visited per location with a cursor; without `zero`,
    /// a run of events with no dependency target, no source and no wait window adds its
    /// elapsed time at once (the sum of its local edges).
    fn longest_path(&self, zero: Option<&dyn Fn(CnodeIdx) -> bool>, trace_back: bool) -> Path {
        let (mut walk, t0) = Walk::new(self, None, None);
        // the path with every time counted (the report's, serial otherwise beside the
        // what-ifs): two halves of the locations at once where there are two threads
        if zero.is_none() && rayon::current_num_threads() > 1 && self.time.len() >= 2 {
            walk.sweep_halves(self, trace_back);
        }
        loop {
            walk.sweep(self, zero, trace_back);
            if !walk.break_cycle(self) {
                break;
            }
        }
        let end = walk.end(self, &|_| true);
        // back from the end: a stretch of local edges on one location per jump
        let mut stretches = match (end, trace_back) {
            (Some((_, _, _, l)), true) => walk.stretches_to(self, l),
            _ => Vec::new(),
        };
        stretches.reverse();
        Path {
            length: end.map_or(0, |e| e.0),
            ends: stretches,
            broken_dependencies: walk.broken(),
            t0,
        }
    }

    /// The path's edges from its start, in order (`f` once per edge).
    /// `zero` is the one the path was found with.
    ///
    /// Generic over `zero` and `f` (one call per event on the path: inlined, not called
    /// through a vtable; the path may hold half the trace's events).
    pub fn for_each_step<Z, F>(&self, path: &Path, zero: &Z, f: &mut F)
    where
        Z: Fn(CnodeIdx) -> bool + ?Sized,
        F: FnMut(Step) + ?Sized,
    {
        self.for_each_stretch(path, zero, |s, entry, local| {
            if let Some(e) = entry {
                f(e);
            }
            for (w, c, [from, to]) in local {
                f(Step {
                    loc: s.loc,
                    from,
                    to,
                    weight: w,
                    cnode: c,
                    via: Via::Local,
                });
            }
        });
    }

    /// The path's stretches from its start, in order: `f(stretch, entry, local)` once per
    /// stretch with the step entering it (its dependency edge, or the start-up delay of
    /// the location the path begins on; none for a start without delay) and its local
    /// edges in order. `zero` is the one the path was found with.
    fn for_each_stretch<Z, F>(&self, path: &Path, zero: &Z, mut f: F)
    where
        Z: Fn(CnodeIdx) -> bool + ?Sized,
        F: FnMut(&Stretch, Option<Step>, LocalEdges<'_, '_, Z>),
    {
        let mut wcs: Vec<Option<WindowCursor>> = (0..self.windows.len()).map(|_| None).collect();
        for s in &path.ends {
            let l = s.loc as usize;
            let t = self.time[l].view();
            let entry = match s.entry {
                // the start-up delay of the location the path begins on
                None => Some(t.get(0) - path.t0).filter(|&d| d > 0).map(|d| Step {
                    loc: s.loc,
                    from: t.get(0) - d,
                    to: t.get(0),
                    weight: d,
                    cnode: STARTUP,
                    via: Via::Local,
                }),
                Some((from, weight, coll)) => Some(Step {
                    loc: s.loc,
                    from: self.time[from.loc as usize].get(from.event as usize),
                    to: t.get(s.first as usize),
                    weight,
                    cnode: cnode(self.replay, l, s.first as usize),
                    via: if coll { Via::Collective } else { Via::Message },
                }),
            };
            let local = LocalEdges::new(
                self,
                l,
                wcs[l].get_or_insert_with(|| WindowCursor::new(&self.windows[l])),
                (s.first as usize + 1, s.last as usize),
                zero,
            );
            f(s, entry, local);
        }
    }

    /// The local edges of the path's stretches (no weight set to zero), summed per call path
    /// (`slot_of`; integers, so in any order) and per stretch of `path.ends`.
    /// The stretches are cut into runs of about as many events each (`runs`), walked in
    /// parallel, each with its own window cursor (`WindowCursor::at`): a path that stays on
    /// one location, a ping-pong's, is one long stretch.
    fn local_sums(&self, path: &Path, ncnode: usize) -> (Vec<u64>, Vec<u64>) {
        use rayon::prelude::*;
        let nslot = ncnode + 2;
        // per call path, the slot of the time after an event of it: its own after an ENTER
        // or any other event, its parent's after a LEAVE (`active_in`, `slot_of`)
        let slots: Vec<[u32; 2]> = (self.replay.tree.nodes.iter().enumerate())
            .map(|(c, node)| {
                let parent = node.parent.unwrap_or(NO_CNODE);
                [c, slot_of(parent, ncnode)].map(|s| s as u32)
            })
            .collect();
        let walk = |(mut by, mut totals): (Vec<u64>, Vec<(usize, u64)>),
                    (l, pieces): &(usize, Vec<Piece>)| {
            let l = *l;
            let first = pieces.first().map_or(0, |p| p.1);
            let mut wc = WindowCursor::at(&self.windows[l], first as u32);
            for &(k, from, to) in pieces {
                let total = self.piece_sums(l, &mut wc, (from, to), (&slots, ncnode), &mut by);
                totals.push((k, total));
            }
            (by, totals)
        };
        let (by_cnode, parts) = (self.runs(path).par_iter().with_max_len(1))
            .fold(|| (vec![0u64; nslot], Vec::new()), walk)
            .reduce(
                || (vec![0u64; nslot], Vec::new()),
                |(mut a, mut ta), (b, tb)| {
                    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                    ta.extend(tb);
                    (a, ta)
                },
            );
        let mut totals = vec![0u64; path.ends.len()];
        for (k, t) in parts {
            totals[k] += t;
        }
        (by_cnode, totals)
    }

    /// The local edges into events `from..=to` (`0 < from`) of location `l` added to `by`
    /// per call path (`local_sums`: `slots` per call path its slots, `ncnode` as there),
    /// their sum returned; `wc` is at `from`. The same weights and slots as `LocalEdges`
    /// with no weight set to zero; before the next event a wait window may cover
    /// (`WindowCursor::covered_from`) an edge's weight is its elapsed time.
    fn piece_sums(
        &self,
        l: usize,
        wc: &mut WindowCursor,
        (from, to): (usize, usize),
        (slots, ncnode): (&[[u32; 2]], usize),
        by: &mut [u64],
    ) -> u64 {
        if from > to {
            return 0;
        }
        let state = &self.replay.locations[l];
        let (st, len) = (state.view(), state.len());
        let kind = &self.trace.events[l].kind[..];
        let mut at = Ahead::new(self.time[l].view());
        let mut prev = at.at(from - 1);
        let mut covered = wc.covered_from(from as u32) as usize;
        let mut total = 0u64;
        for i in from..=to {
            let t1 = at.at(i);
            let w = if i < covered {
                t1 - prev
            } else {
                let w = local_weight(prev, t1, i, wc);
                covered = wc.covered_from((i as u32).saturating_add(1)) as usize;
                w
            };
            prev = t1;
            // the call path active on the edge (`active_in` of event `i - 1`)
            let j = i - 1;
            let c = if j < len { st.cnode(j) } else { NO_CNODE };
            let slot = match slots.get(c as usize) {
                Some(s) => s[(kind[j] == EventKind::Leave) as usize] as usize,
                None => slot_of(self.active_in(state, kind, j), ncnode),
            };
            if let Some(x) = by.get_mut(slot) {
                *x += w;
            }
            total += w;
        }
        total
    }

    /// The local edges of the path as runs of pieces on one location each, in event order:
    /// a run per location with one thread; with more, runs of about a quarter of a thread's
    /// share of the edges (a long stretch cut into several).
    fn runs(&self, path: &Path) -> Vec<(usize, Vec<Piece>)> {
        let threads = rayon::current_num_threads();
        let edges: usize = (path.ends.iter())
            .map(|s| s.last.saturating_sub(s.first) as usize)
            .sum();
        let budget = match threads {
            1 => usize::MAX,
            n => (edges / (4 * n)).max(1 << 15),
        };
        let mut of_loc: Vec<Vec<Piece>> = vec![Vec::new(); self.time.len()];
        for (k, s) in path.ends.iter().enumerate() {
            if s.last > s.first {
                of_loc[s.loc as usize].push((k, s.first as usize + 1, s.last as usize));
            }
        }
        let mut runs = Vec::new();
        for (l, pieces) in of_loc.into_iter().enumerate() {
            let (mut run, mut size) = (Vec::new(), 0usize);
            for (k, mut from, to) in pieces {
                while from <= to {
                    let n = (to + 1 - from).min(budget - size);
                    run.push((k, from, from + n - 1));
                    (from, size) = (from + n, size + n);
                    if size == budget {
                        runs.push((l, std::mem::take(&mut run)));
                        size = 0;
                    }
                }
            }
            if !run.is_empty() {
                runs.push((l, run));
            }
        }
        runs
    }

    /// Call paths whose callee region is named `name`.
    pub fn region_matcher(&self, name: &str) -> Option<Vec<bool>> {
        let regions: Vec<bool> = self
            .trace
            .defs
            .regions
            .iter()
            .map(|r| r.name == name)
            .collect();
        if !regions.iter().any(|&b| b) {
            return None;
        }
        Some(
            self.replay
                .tree
                .nodes
                .iter()
                .map(|n| matches!(n.callee, Callee::Region(r) if regions[r as usize]))
                .collect(),
        )
    }
}

/// A part of a stretch of the path: (its index in `Path::ends`, first and last event of
/// its local edges).
type Piece = (usize, usize, usize);

/// The local edges of a stretch of the path on location `l`, in order, as (weight, call
/// path active on it, times of its two events) (`Graph::for_each_stretch`).
struct LocalEdges<'g, 'w, Z: ?Sized> {
    g: &'g Graph<'g>,
    /// The location's (clamped) times.
    at: Ahead<'g>,
    /// The time of event `next - 1`.
    prev: u64,
    st: &'g LocationState,
    kind: &'g [EventKind],
    wc: &'w mut WindowCursor<'g>,
    next: usize,
    last: usize,
    zero: &'w Z,
}

impl<'g, 'w, Z: Fn(CnodeIdx) -> bool + ?Sized> LocalEdges<'g, 'w, Z> {
    /// The edges into events `next..=last` (`next > 0`) of location `l`, `wc` at `next`.
    fn new(
        g: &'g Graph<'g>,
        l: usize,
        wc: &'w mut WindowCursor<'g>,
        (next, last): (usize, usize),
        zero: &'w Z,
    ) -> LocalEdges<'g, 'w, Z> {
        let mut at = Ahead::new(g.time[l].view());
        // (none when `next` is past the events: `last` is before it then)
        let prev = if next > last { 0 } else { at.at(next - 1) };
        LocalEdges {
            g,
            at,
            prev,
            st: &g.replay.locations[l],
            kind: &g.trace.events[l].kind[..],
            wc,
            next,
            last,
            zero,
        }
    }
}

impl<Z: Fn(CnodeIdx) -> bool + ?Sized> Iterator for LocalEdges<'_, '_, Z> {
    type Item = (u64, CnodeIdx, [u64; 2]);

    #[inline]
    fn next(&mut self) -> Option<(u64, CnodeIdx, [u64; 2])> {
        let i = self.next;
        if i > self.last {
            return None;
        }
        self.next += 1;
        let (t0, t1) = (self.prev, self.at.at(i));
        self.prev = t1;
        let mut w = local_weight(t0, t1, i, self.wc);
        let c = self.g.active_in(self.st, self.kind, i - 1);
        if c != NO_CNODE && (self.zero)(c) {
            w = 0;
        }
        Some((w, c, [t0, t1]))
    }
}

/// The call path of the path's first step when it begins on a location that started after
/// the run did: the start-up delay.
pub const STARTUP: CnodeIdx = NO_CNODE - 1;

/// One edge of the path: `weight` ticks attributed to call path `cnode` on location `loc`
/// (for a dependency edge, the target's location and call), spanning `from..to`.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub loc: u32,
    pub from: u64,
    pub to: u64,
    pub weight: u64,
    pub cnode: CnodeIdx,
    pub via: Via,
}

/// What kind of edge a step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Local,
    Message,
    Collective,
}

/// A stretch of the path on one location: the local edges into `first + 1..=last`, entered
/// by a dependency edge from `entry` (source, weight, collective?) or, without one, the start
/// of the path at event 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Stretch {
    pub(crate) loc: u32,
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) entry: Option<(EventRef, u64, bool)>,
}

/// A longest path: its length in ticks and its stretches per location from the start (the
/// edges: `Graph::for_each_step`).
#[derive(Clone, Debug)]
pub struct Path {
    pub length: u64,
    ends: Vec<Stretch>,
    /// Dependencies dropped to break a cycle (a corrupt trace); 0 normally.
    pub broken_dependencies: u64,
    /// The run's first event (ticks).
    t0: u64,
}

impl Path {
    /// A path (or the part of one a process holds) of its stretches from the start.
    pub(crate) fn of_stretches(length: u64, ends: Vec<Stretch>, broken: u64, t0: u64) -> Path {
        Path {
            length,
            ends,
            broken_dependencies: broken,
            t0,
        }
    }
}

/// A stretch of the path on one location.
#[derive(Clone, Debug, Serialize)]
pub struct Segment {
    /// Location id.
    pub location: u64,
    /// Seconds since the start of the trace.
    pub start_s: f64,
    pub end_s: f64,
    /// Path time in this stretch (waiting excluded).
    pub length_s: f64,
    /// How the path reached this location: "start", "message" or "collective".
    pub via: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Share {
    pub name: String,
    pub time_s: f64,
    pub percent: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct CallpathShare {
    pub callpath: u32,
    pub time_s: f64,
    pub percent: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct LocationShare {
    pub location: u64,
    pub rank: Option<u32>,
    pub time_s: f64,
    pub percent: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct WhatIf {
    pub region: String,
    /// The new critical-path length with that region's time on the path set to zero.
    pub length_s: f64,
    pub saved_s: f64,
}

/// The `critical_path` section of the JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct CriticalPath {
    pub length_s: f64,
    pub duration_s: f64,
    /// Per region (callee name), descending.
    pub regions: Vec<Share>,
    pub locations: Vec<LocationShare>,
    /// Per call path: its critical-path time, descending.
    pub callpaths: Vec<CallpathShare>,
    pub segments: Vec<Segment>,
    pub what_if: Vec<WhatIf>,
    pub broken_dependencies: u64,
}

/// The critical path of the trace, and for each region of `what_if` the path length with that
/// region's time set to zero. Unknown region names are an error (the name is returned).
pub fn critical_path(
    trace: &Trace,
    replay: &Replay,
    what_if: &[String],
) -> Result<CriticalPath, String> {
    critical_path_of(&Graph::new(trace, replay), trace, replay, what_if)
}

/// As `critical_path`, on a graph already built.
pub fn critical_path_of(
    g: &Graph,
    trace: &Trace,
    replay: &Replay,
    what_if: &[String],
) -> Result<CriticalPath, String> {
    use rayon::prelude::*;
    let matchers = g.what_if_matchers(what_if)?;
    let span = trace.time_span();
    let ncnode = replay.tree.nodes.len();
    // each longest path is serial, and the what-if ones do not need the path: they run
    // beside it and beside each other (each its own value, collected in order)
    let ((path, placed), lengths) = rayon::join(
        || {
            let path = g.path();
            let placed = steps_by_place(g, trace, &path, ncnode, span.map_or(0, |s| s.0));
            (path, placed)
        },
        || -> Vec<u64> {
            (matchers.par_iter())
                .map(|m| {
                    g.longest_length(&|c| m.get(c as usize).copied().unwrap_or(false))
                        .length
                })
                .collect()
        },
    );
    Ok(summary(
        trace,
        replay,
        span,
        &path,
        placed,
        (what_if, &lengths),
    ))
}

/// The path's time per call path and per location, and its segments (`steps_by_place`).
pub(crate) type Placed = (Vec<u64>, Vec<u64>, Vec<Segment>);

/// The `critical_path` section from the path (its length and broken dependencies), the
/// run's span, its time per place, and the what-if regions with their path lengths.
pub(crate) fn summary(
    trace: &Trace,
    replay: &Replay,
    span: Option<(u64, u64)>,
    path: &Path,
    (by_cnode, by_loc, segments): Placed,
    (what_if, lengths): (&[String], &[u64]),
) -> CriticalPath {
    let res = trace.timer_resolution.max(1) as f64;
    let sec = |t: u64| t as f64 / res;
    let duration = span.map_or(0, |(a, b)| b.saturating_sub(a));
    let pct = |t: u64| {
        if path.length == 0 {
            0.0
        } else {
            100.0 * t as f64 / path.length as f64
        }
    };
    let (callpaths, regions) = callpath_shares(trace, replay, &by_cnode, &sec, &pct);
    let locations = location_shares(trace, by_loc, &sec, &pct);
    let what_if = (what_if.iter().zip(lengths))
        .map(|(r, &l)| WhatIf {
            region: r.clone(),
            length_s: sec(l),
            saved_s: sec(path.length.saturating_sub(l)),
        })
        .collect();
    CriticalPath {
        length_s: sec(path.length),
        duration_s: sec(duration),
        regions,
        locations,
        callpaths,
        segments,
        what_if,
        broken_dependencies: path.broken_dependencies,
    }
}

/// The path's time per call path (`NO_CNODE`, `STARTUP` after them) and per location, and
/// its segments (a stretch of local edges on one location each).
pub(crate) fn steps_by_place(
    g: &Graph,
    trace: &Trace,
    path: &Path,
    ncnode: usize,
    t0: u64,
) -> Placed {
    let res = trace.timer_resolution.max(1) as f64;
    let sec = &|t: u64| t as f64 / res;
    let slot = |c: CnodeIdx| slot_of(c, ncnode);
    let mut by_loc: Vec<u64> = vec![0; trace.events.len()];
    let mut segments: Vec<Segment> = Vec::new();
    // the segment open, and whether local steps on its location extend it (not the
    // start-up delay's)
    let mut cur: Option<(OpenSegment, bool)> = None;
    // a new segment from step `s`, the current one done
    let mut begin = |cur: &mut Option<_>, s: Step| {
        if let Some((c, _)) = cur.take() {
            segments.push(seg(trace, c, t0, sec));
        }
        let via = match s.via {
            Via::Local if s.cnode == STARTUP => "start-up",
            Via::Local => "start",
            Via::Message => "message",
            Via::Collective => "collective",
        };
        *cur = Some(((s.loc, s.from, s.to, s.weight, via), via != "start-up"));
    };
    // the local edges, each to its call path (in parallel); together a stretch's extend the
    // segment it is in (or begin one, as its first edge would)
    let (mut by_cnode, totals) = g.local_sums(path, ncnode);
    let mut k = 0;
    g.for_each_stretch(path, &|_| false, |s, entry, _| {
        let l = s.loc as usize;
        if let Some(e) = entry {
            if let Some(x) = by_cnode.get_mut(slot(e.cnode)) {
                *x += e.weight;
            }
            by_loc[l] += e.weight;
            begin(&mut cur, e);
        }
        let total = totals[k];
        k += 1;
        if s.last > s.first {
            by_loc[l] += total;
            let t = g.time[l].view();
            let (from, to) = (t.get(s.first as usize), t.get(s.last as usize));
            match &mut cur {
                Some((c, true)) if c.0 == s.loc => {
                    c.2 = to;
                    c.3 += total;
                }
                _ => {
                    let first = Step {
                        loc: s.loc,
                        from,
                        to: t.get(s.first as usize + 1),
                        weight: total,
                        cnode: NO_CNODE,
                        via: Via::Local,
                    };
                    begin(&mut cur, first);
                    if let Some((c, _)) = &mut cur {
                        c.2 = to;
                    }
                }
            }
        }
    });
    if let Some((c, _)) = cur.take() {
        segments.push(seg(trace, c, t0, sec));
    }
    (by_cnode, by_loc, segments)
}

/// Where call path `c` is summed among the path's sums per call path: `NO_CNODE` and
/// `STARTUP` after the `ncnode` call paths.
#[inline(always)]
fn slot_of(c: CnodeIdx, ncnode: usize) -> usize {
    match c {
        NO_CNODE => ncnode,
        STARTUP => ncnode + 1,
        c => c as usize,
    }
}

/// The shares of the path per call path (longest first) and per region name.
fn callpath_shares(
    trace: &Trace,
    replay: &Replay,
    by_cnode: &[u64],
    sec: &dyn Fn(u64) -> f64,
    pct: &dyn Fn(u64) -> f64,
) -> (Vec<CallpathShare>, Vec<Share>) {
    let ncnode = replay.tree.nodes.len();
    let mut by_region: HashMap<String, u64> = HashMap::new();
    let mut callpaths: Vec<CallpathShare> = Vec::new();
    for (k, &t) in by_cnode.iter().enumerate() {
        if t == 0 {
            continue;
        }
        let c = match k {
            k if k == ncnode => NO_CNODE,
            k if k == ncnode + 1 => STARTUP,
            k => k as CnodeIdx,
        };
        let name = if c == STARTUP {
            "(process start-up)".to_string()
        } else if c == NO_CNODE {
            "(outside any region)".to_string()
        } else {
            match replay.tree.nodes[c as usize].callee {
                Callee::Region(r) => trace.defs.regions[r as usize].name.clone(),
                Callee::ArtificialRoot => "program".to_string(),
            }
        };
        *by_region.entry(name).or_default() += t;
        if c != NO_CNODE && c != STARTUP {
            callpaths.push(CallpathShare {
                callpath: c,
                time_s: sec(t),
                percent: pct(t),
            });
        }
    }
    callpaths.sort_by(|a, b| {
        b.time_s
            .total_cmp(&a.time_s)
            .then(a.callpath.cmp(&b.callpath))
    });
    let mut regions: Vec<Share> = by_region
        .into_iter()
        .filter(|(_, t)| *t > 0)
        .map(|(name, t)| Share {
            name,
            time_s: sec(t),
            percent: pct(t),
        })
        .collect();
    regions.sort_by(|a, b| b.time_s.total_cmp(&a.time_s).then(a.name.cmp(&b.name)));
    (callpaths, regions)
}

/// The shares of the path per location, longest first.
fn location_shares(
    trace: &Trace,
    by_loc: Vec<u64>,
    sec: &dyn Fn(u64) -> f64,
    pct: &dyn Fn(u64) -> f64,
) -> Vec<LocationShare> {
    let mut locations: Vec<LocationShare> = by_loc
        .into_iter()
        .enumerate()
        .filter(|(_, t)| *t > 0)
        .map(|(l, t)| {
            let loc = &trace.defs.locations[l];
            LocationShare {
                location: loc.id,
                rank: loc.rank,
                time_s: sec(t),
                percent: pct(t),
            }
        })
        .collect();
    locations.sort_by(|a, b| {
        b.time_s
            .total_cmp(&a.time_s)
            .then(a.location.cmp(&b.location))
    });
    locations
}

/// A segment as it is found: location, start, end, length, via.
type OpenSegment = (u32, u64, u64, u64, &'static str);

fn seg(trace: &Trace, c: OpenSegment, t0: u64, sec: &dyn Fn(u64) -> f64) -> Segment {
    Segment {
        location: trace.defs.locations[c.0 as usize].id,
        start_s: sec(c.1.saturating_sub(t0)),
        end_s: sec(c.2.saturating_sub(t0)),
        length_s: sec(c.3),
        via: c.4,
    }
}

#[cfg(test)]
mod tests {
    use super::{non_decreasing, Window, WindowCursor};

    #[test]
    fn a_cursor_placed_at_an_event_answers_as_one_walked_there() {
        // windows of all lengths, some sharing a first event, sorted by first event
        let mut list: Vec<Window> = (0..60u32)
            .map(|k| Window {
                first: 1 + k * 7 % 50,
                last: 1 + k * 7 % 50 + k * 13 % 23,
                until: 1000 + u64::from(k * 31 % 17),
            })
            .collect();
        list.sort_by_key(|w| w.first);
        let mut walked = WindowCursor::new(&list);
        let answers: Vec<Option<u64>> = (1..90).map(|i| walked.until(i)).collect();
        for from in 1..90u32 {
            for step in [1, 3] {
                let mut at = WindowCursor::at(&list, from);
                for i in (from..90).step_by(step) {
                    assert_eq!(at.until(i), answers[i as usize - 1], "from {from}, at {i}");
                }
            }
        }
    }

    #[test]
    fn non_decreasing_is_windows_all() {
        for n in [0usize, 1, 2, 255, 256, 257, 511, 512, 513, 1000] {
            let up: Vec<u64> = (0..n as u64).map(|x| x / 3).collect();
            assert!(non_decreasing(&up), "n = {n}");
            // one step back anywhere (block edges included) is found
            for at in 1..n {
                let mut t = up.clone();
                t[at] = t[at - 1].wrapping_sub(1).min(t[at - 1]);
                let want = t.windows(2).all(|w| w[0] <= w[1]);
                assert_eq!(non_decreasing(&t), want, "n = {n}, at = {at}");
            }
        }
    }
}
