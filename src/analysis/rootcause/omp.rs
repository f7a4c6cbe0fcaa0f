//! OpenMP in the root-cause analysis (docs/root-causes.md, "OpenMP"), as Scalasca 2.6 does
//! it: the synchronisation points of thread teams (every thread's ENTER of a parallel region,
//! every thread's LEAVE of a barrier), the time each thread spends between two points (the
//! fork and join intervals moved into the parallel region; a worker's time outside parallel
//! regions and after its last barrier of a region not counted), the critical path through
//! forks and thread barriers, and the delays behind barrier waits and idle worker threads.
//! Used only when the trace has OpenMP teams; an MPI-only trace never comes here. The points
//! are the engine's (every fork and barrier, as Scalasca registers them); the rules say what
//! the waits are: a barrier wait is of the kinds whose rule (`[cause] shape =
//! "thread_barrier"`) took its instance, and idle threads are booked to the kinds with
//! `shape = "thread_fork"` (costs.rs). No pattern is named here.

use super::delay::{excess, CollDelay, CollMember, Map};
use super::sync::{Cand, Kind, Ranks, Sp, Sync};
use crate::model::{EventKind, Trace};
use crate::replay::calltree::NO_CNODE;
use crate::replay::matching::EventRef;
use crate::replay::{Replay, NONE};
use std::collections::{BTreeMap, HashMap};

fn secs(a: u64, b: u64, res: f64) -> f64 {
    (a as f64 - b as f64) / res
}

/// The synchronisation points of the thread teams: each member's ENTER of its parallel
/// region (no wait; its call time is the fork interval, its completion the time since the
/// first member entered) and each member's LEAVE of a barrier (its wait: the last member's
/// ENTER less its own; no completion).
pub(crate) fn points(
    trace: &Trace,
    replay: &Replay,
    res: f64,
    bar_kinds: &[Vec<u16>],
    out: &mut Vec<Cand>,
) {
    let t = |l: u32, i: u32| trace.events[l as usize].time.get(i as usize);
    let point = |kind, wait, total, completion| Sp {
        event: 0,
        kind,
        wait,
        total,
        completion,
        ranks: Ranks::Some(Vec::new()),
        cause: EventRef::NONE,
        kinds: Vec::new(),
    };
    for team in &replay.omp.teams {
        let Some(first) = team.members.iter().map(|m| t(m.loc, m.enter)).min() else {
            continue;
        };
        for m in &team.members {
            let te = t(m.loc, m.enter);
            let total = secs(te, team.fork.min(te), res);
            let mut sp = point(Kind::OmpFork, 0.0, total, secs(te, first, res));
            sp.event = m.enter;
            out.push((m.loc, 0, sp));
        }
    }
    for (n, inst) in replay.omp.barriers.iter().enumerate() {
        let Some(last) = inst.members.iter().map(|m| t(m.loc, m.enter)).max() else {
            continue;
        };
        for m in &inst.members {
            let x = replay.locations[m.loc as usize].exitptr(m.enter as usize);
            if x == NONE {
                continue;
            }
            let te = t(m.loc, m.enter);
            let mut sp = point(
                Kind::OmpBarrier,
                secs(last, te, res).max(0.0),
                secs(t(m.loc, x), te, res),
                0.0,
            );
            sp.event = x;
            if sp.wait > 0.0 {
                sp.kinds = bar_kinds.get(n).cloned().unwrap_or_default();
            }
            out.push((m.loc, 0, sp));
        }
    }
}

/// Per location, its time per call path cut at its synchronisation points, the way
/// Scalasca's time-map cache keeps it: `pieces` in event order, `cuts` (event, number of
/// pieces before it) at every point and every THREAD_JOIN.
struct Pieces {
    pieces: Vec<(u32, i64)>,
    cuts: Vec<(u32, usize)>,
}

/// What the OpenMP parts of the analysis share: the time maps, the barrier instances and
/// forks by their points, the joins and the thread count of each process.
pub(crate) struct OmpInfo {
    locs: Vec<Pieces>,
    /// Per barrier instance: (location, LEAVE event, ENTER time) of each member that left it.
    bars: Vec<Vec<(u32, u32, u64)>>,
    /// (location, barrier LEAVE) → instance; (location, parallel ENTER) → team.
    bar_of: HashMap<(u32, u32), usize>,
    fork_of: HashMap<(u32, u32), usize>,
    /// Per team: its master's parallel-region ENTER.
    team_master: Vec<Option<(u32, u32)>>,
    /// Per location: its THREAD_JOIN events.
    joins: Vec<Vec<u32>>,
    /// Per location: the number of threads of its process.
    nthreads: Vec<usize>,
}

impl OmpInfo {
    /// Ticks per call path of location `l` between its points `from` (0: the start) and
    /// `to` (`u32::MAX`: the end), handed to `add`.
    pub(super) fn each_runtime(
        &self,
        l: usize,
        (from, to): (u32, u32),
        add: &mut dyn FnMut(u32, i64),
    ) {
        let p = &self.locs[l];
        let at = |x: u32| -> usize {
            match x {
                0 => 0,
                u32::MAX => p.pieces.len(),
                x => {
                    let k = p.cuts.partition_point(|c| c.0 < x);
                    match p.cuts.get(k) {
                        Some(c) if c.0 == x => c.1,
                        _ => k.checked_sub(1).map_or(0, |j| p.cuts[j].1),
                    }
                }
            }
        };
        let (a, b) = (at(from), at(to));
        for &(c, t) in &p.pieces[a.min(b)..b] {
            add(c, t);
        }
    }

    /// Seconds per call path of location `l` between `from` and `to` (as `each_runtime`).
    fn runtimes(&self, l: usize, from: u32, to: u32, res: f64) -> BTreeMap<u32, f64> {
        let mut ticks: BTreeMap<u32, i64> = BTreeMap::new();
        self.each_runtime(l, (from, to), &mut |c, t| *ticks.entry(c).or_default() += t);
        ticks
            .into_iter()
            .map(|(c, t)| (c, t as f64 / res))
            .collect()
    }
}

/// The OpenMP state of the analysis (`None` without thread teams).
pub(super) fn info(trace: &Trace, replay: &Replay, sps: &[Vec<Sp>]) -> Option<OmpInfo> {
    (!replay.omp.teams.is_empty()).then(|| info_of(trace, replay, sps, &|_| true))
}

/// The OpenMP state of the analysis with the time maps of the locations `held` (the others
/// have none): `info` of a trace with thread teams; a `run --mpi` process makes it of its
/// share when the job has teams, whether or not it holds some.
pub(crate) fn info_of(
    trace: &Trace,
    replay: &Replay,
    sps: &[Vec<Sp>],
    held: &dyn Fn(usize) -> bool,
) -> OmpInfo {
    let omp = &replay.omp;
    let nloc = trace.events.len();
    let t = |l: u32, i: u32| trace.events[l as usize].time.get(i as usize);
    // per location: (parallel ENTER, fork interval), (parallel LEAVE, join interval), ticks
    let mut fork_at: Vec<Vec<Moved>> = vec![Vec::new(); nloc];
    let mut join_at: Vec<Vec<Moved>> = vec![Vec::new(); nloc];
    let mut fork_of = HashMap::new();
    let mut team_master = Vec::with_capacity(omp.teams.len());
    for (n, team) in omp.teams.iter().enumerate() {
        let mut master = None;
        for m in &team.members {
            let te = t(m.loc, m.enter);
            fork_at[m.loc as usize].push((m.enter, te as i64 - team.fork.min(te) as i64));
            if m.leave != NONE {
                let tl = t(m.loc, m.leave);
                join_at[m.loc as usize].push((m.leave, team.join.max(tl) as i64 - tl as i64));
            }
            fork_of.insert((m.loc, m.enter), n);
            if m.loc == team.master {
                master = Some((m.loc, m.enter));
            }
        }
        team_master.push(master);
    }
    let mut bars = Vec::with_capacity(omp.barriers.len());
    let mut bar_of = HashMap::new();
    for (n, inst) in omp.barriers.iter().enumerate() {
        let mut v = Vec::new();
        for m in &inst.members {
            let x = replay.locations[m.loc as usize].exitptr(m.enter as usize);
            if x != NONE {
                v.push((m.loc, x, t(m.loc, m.enter)));
                bar_of.insert((m.loc, x), n);
            }
        }
        bars.push(v);
    }
    for v in fork_at.iter_mut().chain(join_at.iter_mut()) {
        v.sort_unstable();
    }
    let mut per_proc: HashMap<u32, usize> = HashMap::new();
    for l in 0..nloc {
        *per_proc
            .entry(omp.master.get(l).copied().unwrap_or(l as u32))
            .or_default() += 1;
    }
    let nthreads = (0..nloc)
        .map(|l| per_proc[&omp.master.get(l).copied().unwrap_or(l as u32)])
        .collect();
    let is_join = |k| matches!(k, EventKind::ThreadJoin | EventKind::OmpJoin);
    let joins: Vec<Vec<u32>> = (trace.events.iter().enumerate())
        .map(|(l, ev)| match held(l) {
            true => (0..ev.len() as u32)
                .filter(|&i| is_join(ev.kind[i as usize]))
                .collect(),
            false => Vec::new(),
        })
        .collect();
    let locs = (0..nloc)
        .map(|l| match held(l) {
            true => pieces(trace, replay, l, &sps[l], (&fork_at[l], &join_at[l])),
            false => Pieces {
                pieces: Vec::new(),
                cuts: Vec::new(),
            },
        })
        .collect();
    OmpInfo {
        locs,
        bars,
        bar_of,
        fork_of,
        team_master,
        joins,
        nthreads,
    }
}

/// A parallel region's ENTER (LEAVE) and its fork (join) interval in ticks.
type Moved = (u32, i64);

/// Location `l`'s time per call path cut at its points (see `Pieces`). Between two ENTER or
/// LEAVE events the time goes to the call path that was current; a point is cut before its
/// event, except a parallel region's ENTER (after it: the fork interval, moved from the
/// enclosing call path to the region, lies after the cut) and a THREAD_JOIN (after it); the
/// join interval moves from the enclosing call path to the region at the region's LEAVE; a
/// worker thread drops what it accumulated since its last point at each ENTER of a parallel
/// region and at its end.
fn pieces(
    trace: &Trace,
    replay: &Replay,
    l: usize,
    sps: &[Sp],
    (fork_at, join_at): (&[Moved], &[Moved]),
) -> Pieces {
    let ev = &trace.events[l];
    let st = &replay.locations[l];
    let worker = replay.omp.thread.get(l).is_some_and(|&t| t > 0);
    let parent = |c: u32| match c {
        NO_CNODE => None,
        c => replay.tree.nodes[c as usize].parent,
    };
    // the time since the last cut, per call path
    let mut tmap = Tmap {
        dense: vec![(0, false); replay.tree.len()],
        touched: Vec::new(),
    };
    let mut out = Pieces {
        pieces: Vec::new(),
        cuts: Vec::new(),
    };
    let flush = |tmap: &mut Tmap, out: &mut Pieces, i: usize| {
        tmap.drain(&mut out.pieces);
        out.cuts.push((i as u32, out.pieces.len()));
    };
    // the next parallel ENTER / LEAVE with its fork / join interval
    let (mut fk, mut jk) = (0, 0);
    let mut last: Option<u64> = None;
    let mut next_sp = 0;
    for i in 0..ev.len() {
        while next_sp < sps.len() && (sps[next_sp].event as usize) < i {
            next_sp += 1;
        }
        let sp_here = sps.get(next_sp).filter(|s| s.event as usize == i);
        if sp_here.is_some_and(|s| s.kind != Kind::OmpFork) {
            flush(&mut tmap, &mut out, i);
        }
        let time = ev.time.get(i);
        let c = st.cnode(i);
        match ev.kind[i] {
            EventKind::Enter => {
                let p = parent(c);
                if let (Some(p), Some(t0)) = (p, last) {
                    tmap.add(p, time as i64 - t0 as i64);
                }
                last = Some(time);
                while fk < fork_at.len() && (fork_at[fk].0 as usize) < i {
                    fk += 1;
                }
                if let Some(&(_, ft)) = fork_at.get(fk).filter(|f| f.0 as usize == i) {
                    if let Some(p) = p {
                        tmap.add(p, -ft);
                    }
                    if worker {
                        tmap.drain(&mut Vec::new());
                    }
                    flush(&mut tmap, &mut out, i);
                    if c != NO_CNODE {
                        tmap.add(c, ft);
                    }
                }
            }
            EventKind::Leave => {
                if let (true, Some(t0)) = (c != NO_CNODE, last) {
                    tmap.add(c, time as i64 - t0 as i64);
                }
                last = Some(time);
                while jk < join_at.len() && (join_at[jk].0 as usize) < i {
                    jk += 1;
                }
                let jt = join_at.get(jk).filter(|j| j.0 as usize == i).map(|j| j.1);
                if let (Some(jt), Some(p)) = (jt, parent(c)) {
                    tmap.add(p, -jt);
                    tmap.add(c, jt);
                }
            }
            EventKind::ThreadJoin | EventKind::OmpJoin => {
                if let (true, Some(t0)) = (c != NO_CNODE, last) {
                    tmap.add(c, time as i64 - t0 as i64);
                }
                last = Some(time);
                flush(&mut tmap, &mut out, i);
            }
            _ => {}
        }
    }
    if worker {
        tmap.drain(&mut Vec::new());
    }
    tmap.drain(&mut out.pieces);
    out
}

/// Ticks per call path since the last cut: a value per call path and the call paths
/// touched since.
struct Tmap {
    dense: Vec<(i64, bool)>,
    touched: Vec<u32>,
}

impl Tmap {
    fn add(&mut self, c: u32, t: i64) {
        let Some(v) = self.dense.get_mut(c as usize) else {
            return;
        };
        if !v.1 {
            v.1 = true;
            self.touched.push(c);
        }
        v.0 += t;
    }

    /// Moves the (call path, ticks) pairs into `out` and starts again.
    fn drain(&mut self, out: &mut Vec<(u32, i64)>) {
        for c in self.touched.drain(..) {
            let v = std::mem::take(&mut self.dense[c as usize]);
            out.push((c, v.0));
        }
    }
}

/// The previous OpenMP point (fork or barrier) of location `l` before its point `j`.
fn prev_omp(sps: &[Sp], j: usize) -> Option<usize> {
    (0..j)
        .rev()
        .find(|&k| matches!(sps[k].kind, Kind::OmpFork | Kind::OmpBarrier))
}

/// The delay map of location `l` for the interval from its point `prev` to event `to` (the
/// call time of `prev` less its completion taken off its call path), the waits inside.
fn omp_interval(
    sync: &Sync,
    o: &OmpInfo,
    replay: &Replay,
    l: usize,
    prev: Option<usize>,
    to: u32,
    res: f64,
) -> (Map, f64) {
    let sps = &sync.sps[l];
    let from = prev.map_or(0, |j| sps[j].event);
    let rt = o.runtimes(l, from, to, res);
    let first = prev.map_or(0, |j| j + 1);
    let last = sps.partition_point(|x| x.event < to);
    let mut waits: Map = Map::new();
    let mut wsum = 0.0;
    for sp in sps[first.min(last)..last].iter().filter(|s| s.wait > 0.0) {
        *waits
            .entry(replay.locations[l].cnode(sp.event as usize))
            .or_default() += sp.wait;
        wsum += sp.wait;
    }
    let mut m: Map = rt
        .into_iter()
        .filter_map(|(c, t)| {
            let d = t - waits.get(&c).copied().unwrap_or(0.0);
            (d > 0.0).then_some((c, d))
        })
        .collect();
    if let Some(j) = prev {
        let c = replay.locations[l].cnode(sps[j].event as usize);
        if c != NO_CNODE {
            let v = m.entry(c).or_default();
            *v = (*v - sps[j].total + sps[j].completion).max(0.0);
        }
    }
    (m, wsum)
}

/// The delay of barrier instance `n` in the shape of a collective's: the member that
/// entered last causes the others' waits; each member's delay map is the positive excess of
/// the last member's map (since its previous OpenMP point) over its own; every member's
/// scale counts the waits inside the last member's interval.
pub(super) fn barrier_delay(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    n: usize,
) -> Option<CollDelay> {
    let o = sync.omp.as_ref()?;
    let res = trace.timer_resolution.max(1) as f64;
    let ms = o.bars.get(n)?;
    let pts: Vec<(usize, usize)> = (ms.iter())
        .filter_map(|&(l, x, _)| sync.at(l as usize, x).map(|j| (l as usize, j)))
        .collect();
    if pts.len() != ms.len() || !pts.iter().any(|&(l, j)| sync.sps[l][j].wait > 0.0) {
        return None;
    }
    // the last to enter (the first member among equals)
    let mut li = 0;
    for (k, m) in ms.iter().enumerate() {
        if m.2 > ms[li].2 {
            li = k;
        }
    }
    let (rl, rj) = pts[li];
    let gprev = prev_omp(&sync.sps[rl], rj);
    let (lmap, prop) = omp_interval(sync, o, replay, rl, gprev, sync.sps[rl][rj].event, res);
    let members = (pts.iter())
        .map(|&(l, j)| {
            let (mine, _) = if l == rl {
                (lmap.clone(), 0.0)
            } else {
                let p = prev_omp(&sync.sps[l], j);
                omp_interval(sync, o, replay, l, p, sync.sps[l][j].event, res)
            };
            let (d, dsum) = excess(&lmap, &mine);
            CollMember {
                waiter: (l, j),
                d,
                dsum,
                prop,
                inter: None,
            }
        })
        .collect();
    Some(CollDelay {
        root: (rl, rj),
        gprev,
        members,
    })
}

/// The delay that left the worker threads of `l`'s process idle before its parallel region
/// entered at point `fork` (`None`: after its last region, to the end): the master's time
/// since the THREAD_JOIN of the region before, less the waits in it, counted once per
/// worker. Returns the delay map, the scale (the number of workers), the waits inside and
/// the points inside.
pub(super) struct IdleDelay {
    pub(super) d: Map,
    pub(super) dsum: f64,
    pub(super) wsum: f64,
    pub(super) scale: f64,
    pub(super) inside: std::ops::Range<usize>,
}

pub(super) fn idle_delay(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    l: usize,
    fork: Option<usize>,
) -> Option<IdleDelay> {
    let o = sync.omp.as_ref()?;
    let res = trace.timer_resolution.max(1) as f64;
    let sps = &sync.sps[l];
    let end = fork.unwrap_or(sps.len());
    let prev = prev_omp(sps, end);
    // the join after the previous point (none: from the start)
    let from = prev.and_then(|p| {
        let js = &o.joins[l];
        js.get(js.partition_point(|&x| x < sps[p].event)).copied()
    });
    let to = fork.map_or(u32::MAX, |j| sps[j].event);
    let inside = prev.map_or(0, |p| p + 1)..end;
    let mut waits: Map = Map::new();
    let mut wsum = 0.0;
    for sp in sps[inside.clone()].iter().filter(|s| s.wait > 0.0) {
        *waits
            .entry(replay.locations[l].cnode(sp.event as usize))
            .or_default() += sp.wait;
        wsum += sp.wait;
    }
    let rt: Map = o
        .runtimes(l, from.unwrap_or(0), to, res)
        .into_iter()
        .collect();
    let (d, dsum) = excess(&rt, &waits);
    let scale = if dsum + wsum > 0.0 {
        o.nthreads[l].saturating_sub(1) as f64
    } else {
        0.0
    };
    Some(IdleDelay {
        d,
        dsum,
        wsum,
        scale,
        inside,
    })
}

/// The OpenMP delay computations of the backward pass: a barrier instance, or the serial
/// interval of a master before its parallel region's point (`None`: after its last region,
/// sitting past its last point).
pub(super) enum OmpTask {
    Barrier(usize),
    Idle(Option<usize>),
}

/// One OpenMP delay computation: its location and point index, what it is, and the
/// (location, point) pairs whose locations must have handled everything after them first.
pub(super) type Pending = (usize, usize, OmpTask, Vec<(usize, usize)>);

pub(super) fn tasks(sync: &Sync) -> Vec<Pending> {
    let mut out = Vec::new();
    let Some(o) = sync.omp.as_ref() else {
        return out;
    };
    for (n, ms) in o.bars.iter().enumerate() {
        let pts: Vec<(usize, usize)> = (ms.iter())
            .filter_map(|&(l, x, _)| sync.at(l as usize, x).map(|j| (l as usize, j)))
            .collect();
        if !pts.iter().any(|&(l, j)| sync.sps[l][j].wait > 0.0) {
            continue;
        }
        let mut li = 0;
        for (k, m) in ms.iter().enumerate() {
            if m.2 > ms[li].2 {
                li = k;
            }
        }
        if let Some(&(rl, rj)) = pts.get(li).filter(|_| pts.len() == ms.len()) {
            out.push((rl, rj, OmpTask::Barrier(n), pts));
        }
    }
    // the masters' serial intervals: before each fork, and after the last region
    let mut masters: Vec<usize> = Vec::new();
    for m in o.team_master.iter().flatten() {
        let (l, e) = (m.0 as usize, m.1);
        if let Some(j) = sync.at(l, e) {
            out.push((l, j, OmpTask::Idle(Some(j)), Vec::new()));
        }
        if !masters.contains(&l) {
            masters.push(l);
        }
    }
    for l in masters {
        out.push((l, sync.sps[l].len(), OmpTask::Idle(None), Vec::new()));
    }
    out
}

/// What a critical-path segment ends at, going backwards on a location.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Next {
    /// A point where it waited for another process (its index).
    Mpi(usize),
    /// The LEAVE of MPI_Init, or the start of the location.
    Start(u32),
    /// A thread barrier's LEAVE (instance, point index); a parallel region's ENTER (team,
    /// point index).
    Barrier(usize, usize),
    Fork(usize, usize),
}

/// A location the critical path is on: where its segment ends and, once the process holding
/// the location has looked, what the segment ends at, with the key that orders the team
/// events (`PathCtx::key`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Active {
    pub(crate) loc: usize,
    pub(crate) end: u32,
    pub(crate) next: Option<(Next, [u32; 4])>,
}

/// What the critical path reads: the trace, its replay, the synchronisation points and the
/// OpenMP state, the timer resolution.
pub(crate) struct PathCtx<'a> {
    pub(crate) trace: &'a Trace,
    pub(crate) replay: &'a Replay,
    pub(crate) sync: &'a Sync,
    pub(crate) o: &'a OmpInfo,
    pub(crate) res: f64,
}

impl PathCtx<'_> {
    /// What location `l`'s segment ending at event `end` ends at, going backwards.
    fn next(&self, l: usize, end: u32) -> Next {
        let (sync, o) = (self.sync, self.o);
        let w = &sync.sps[l];
        let k = w.partition_point(|x| x.event < end);
        let init = sync.init[l].map(|(_, x)| x).filter(|&x| x < end);
        for j in (0..k).rev() {
            let x = &w[j];
            if init.is_some_and(|i| i > x.event) {
                break;
            }
            match x.kind {
                Kind::OmpBarrier => {
                    if let Some(&n) = o.bar_of.get(&(l as u32, x.event)) {
                        return Next::Barrier(n, j);
                    }
                }
                Kind::OmpFork => {
                    if let Some(&n) = o.fork_of.get(&(l as u32, x.event)) {
                        return Next::Fork(n, j);
                    }
                }
                _ if x.wait > 0.0 && x.cause.is_some() => return Next::Mpi(j),
                _ => {}
            }
        }
        Next::Start(init.unwrap_or(0))
    }

    /// The order of the team events: (the team's master, team, 1 for a barrier, barrier).
    /// Teams are numbered master by master, so this orders them as their indices do, and a
    /// `run --mpi` process, whose teams are those of the masters it holds, orders them alike.
    fn key(&self, n: Next) -> [u32; 4] {
        let omp = &self.replay.omp;
        let master = |t: usize| omp.teams.get(t).map_or(0, |x| x.master);
        match n {
            Next::Barrier(b, _) => {
                let t = omp.barriers.get(b).map_or(0, |x| x.team);
                [master(t as usize), t, 1, b as u32]
            }
            Next::Fork(t, _) => [master(t), t as u32, 0, 0],
            _ => [0; 4],
        }
    }
}

/// Where Scalasca's critical path of a run with thread teams starts: at the LEAVE of the last
/// MPI_Finalize; without MPI, at the end of the first location's master thread.
pub(crate) fn start(trace: &Trace, replay: &Replay, sync: &Sync) -> Option<(usize, u32)> {
    let mpi = sync.fin.iter().any(|f| f.is_some());
    match super::path_start(trace, &sync.fin) {
        Some(s) => Some(s),
        None if mpi => None,
        None => Some((
            replay.omp.master.first().copied().unwrap_or(0) as usize,
            u32::MAX,
        )),
    }
}

/// Scalasca's critical path of a run with thread teams, walked backwards from `start`: at a
/// point where the location waited for another process, on to the causing one; at a thread
/// barrier, on to every member that did not wait there (the last to enter); at a parallel
/// region's ENTER, on to the master's; it ends at MPI_Init's LEAVE (without MPI: at the start
/// of the master thread). The walk stops where it must look at a location held elsewhere
/// (`advance`), so `run --mpi` hands it on to that location's process.
pub(crate) struct Walk {
    pub(crate) active: Vec<Active>,
    /// The steps booked so far, and their bound.
    pub(crate) steps: u64,
    pub(crate) limit: u64,
}

impl Walk {
    pub(crate) fn new((loc, end): (usize, u32), limit: u64) -> Walk {
        Walk {
            active: vec![Active {
                loc,
                end,
                next: None,
            }],
            steps: 0,
            limit,
        }
    }

    /// Walks on while every location it must look at is `held`: returns the first one that
    /// is not (its process goes on), `None` when the path is done. Each step is booked into
    /// `prof` (seconds, `cnode * nloc + loc`) and pushed to `steps` with its place on the
    /// path. A location's own transition comes first; then the latest team event.
    pub(crate) fn advance(
        &mut self,
        on: &PathCtx,
        held: &dyn Fn(usize) -> bool,
        prof: &mut [f64],
        steps: &mut Vec<(u64, (u32, u32, u32))>,
    ) -> Option<usize> {
        while !self.active.is_empty() && self.steps < self.limit {
            for a in self.active.iter_mut().filter(|a| a.next.is_none()) {
                if !held(a.loc) {
                    return Some(a.loc);
                }
                let n = on.next(a.loc, a.end);
                a.next = Some((n, on.key(n)));
            }
            let nexts: Vec<(Next, [u32; 4])> = self.active.iter().filter_map(|a| a.next).collect();
            let own = |n: &(Next, [u32; 4])| matches!(n.0, Next::Mpi(_) | Next::Start(_));
            if let Some(k) = nexts.iter().position(own) {
                let a = self.active[k];
                if !held(a.loc) {
                    return Some(a.loc);
                }
                self.active.remove(k);
                match nexts[k].0 {
                    Next::Mpi(j) => {
                        let s = &on.sync.sps[a.loc][j];
                        self.book(on, (a.loc, s.event, a.end, s.wait), prof, steps);
                        let target = s.cause.loc as usize;
                        self.active.retain(|x| x.loc != target);
                        self.active.push(Active {
                            loc: target,
                            end: s.cause.event,
                            next: None,
                        });
                    }
                    Next::Start(from) => self.book(on, (a.loc, from, a.end, 0.0), prof, steps),
                    _ => {}
                }
                continue;
            }
            let Some(&(pick, key)) = nexts.iter().max_by_key(|n| n.1) else {
                break;
            };
            // the members of one team event: on one process
            let at_pick = |a: &Active| a.next.is_some_and(|n| n.1 == key);
            if let Some(a) = self.active.iter().find(|a| at_pick(a) && !held(a.loc)) {
                return Some(a.loc);
            }
            let (team, rest): (Vec<Active>, Vec<Active>) =
                self.active.iter().partition(|a| at_pick(a));
            for a in &team {
                if let Some((Next::Barrier(_, j) | Next::Fork(_, j), _)) = a.next {
                    let s = &on.sync.sps[a.loc][j];
                    self.book(on, (a.loc, s.event, a.end, s.wait), prof, steps);
                }
            }
            self.active = rest;
            self.on_from(on, pick);
        }
        None
    }

    /// The locations the path goes on from after a team event: at a barrier, every member
    /// that did not wait there; at a parallel region's ENTER, the master's.
    fn on_from(&mut self, on: &PathCtx, pick: Next) {
        let mut go = |l: usize, end: u32| {
            self.active.retain(|a| a.loc != l);
            self.active.push(Active {
                loc: l,
                end,
                next: None,
            });
        };
        match pick {
            Next::Barrier(b, _) => {
                for &(l, x, _) in &on.o.bars[b] {
                    let waited = (on.sync.at(l as usize, x))
                        .is_some_and(|j| on.sync.sps[l as usize][j].wait > 0.0);
                    if !waited {
                        go(l as usize, x);
                    }
                }
            }
            Next::Fork(t, _) => {
                if let Some((l, e)) = on.o.team_master[t] {
                    go(l as usize, e);
                }
            }
            _ => {}
        }
    }

    /// Books location `l`'s time from event `from` to `end` (less `wait` at `from`'s call
    /// path) as the path's next step.
    fn book(
        &mut self,
        on: &PathCtx,
        (l, from, end, wait): (usize, u32, u32, f64),
        prof: &mut [f64],
        steps: &mut Vec<(u64, (u32, u32, u32))>,
    ) {
        let nloc = on.trace.events.len();
        let rt = on.o.runtimes(l, from, end, on.res);
        for (&c, &t) in &rt {
            prof[c as usize * nloc + l] += t;
        }
        let st = &on.replay.locations[l];
        let c = match from as usize {
            f if f < st.len() => st.cnode(f),
            _ => NO_CNODE,
        };
        if wait > 0.0 && c != NO_CNODE && from != 0 {
            prof[c as usize * nloc + l] -= wait.min(rt.get(&c).copied().unwrap_or(0.0));
        }
        steps.push((self.steps, (l as u32, from, end)));
        self.steps += 1;
    }
}

/// Scalasca's critical path of a run with thread teams (`Walk`) over the whole trace: the
/// profile (seconds, `cnode * nloc + loc`) and the steps.
pub(super) fn walk(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    res: f64,
) -> (Vec<f64>, Vec<(u32, u32, u32)>) {
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let mut prof = vec![0.0; ncn * nloc];
    let (Some(o), Some(s)) = (sync.omp.as_ref(), start(trace, replay, sync)) else {
        return (prof, Vec::new());
    };
    let limit = trace.events.iter().map(|e| e.len() as u64).sum::<u64>() + 1;
    let on = PathCtx {
        trace,
        replay,
        sync,
        o,
        res,
    };
    let mut steps = Vec::new();
    Walk::new(s, limit).advance(&on, &|_| true, &mut prof, &mut steps);
    (prof, steps.into_iter().map(|x| x.1).collect())
}
