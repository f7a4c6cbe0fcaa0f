//! The backward pass that books delay costs (docs/root-causes.md): every wait state's delay
//! is computed on the location that caused it, latest first, so that when a wait state is
//! handled every later wait state it propagated into has already handed it its long-term
//! cost. Short-term costs scale the delay by the wait it explains; long-term costs scale it
//! by the costs the waiting point carries, and pass costs on to the wait states inside the
//! causing location's interval (per kind of the wait state where the chain ends). The same
//! pass classifies point-to-point waits as indirect (caused by propagated waits) and
//! propagating (causing further waits). The kinds of wait state are the rules that declare a
//! `[cause]` (`Sync::kinds`); a wait booked by several such rules counts for each.
//!
//! The pass (`Pass`, `run`) and the order of each location's tasks (`order`) are shared
//! with the distributed backward replay (`distributed::rootcause`), which runs each
//! location's tasks on its owner and hands the facts of a waiting point held elsewhere in
//! (`Remote`, and the delay time maps of `Task::P2pGiven`/`Task::CollGiven`). Every value is
//! booked at the task's own location, in its task order, except the indirect waits, booked
//! at the waiting location: those are summed at the end (`Pass::finish`) in the order of
//! the `Pass::now` of the tasks that found them, the single-process run order.

use super::delay::{self, CollDelay, Map, P2pDelay};
use super::sync::{Kind, Sync};
use crate::model::Trace;
use crate::replay::matching::EventRef;
use crate::replay::Replay;
use crate::rules::causes::Shape;
use std::collections::{BTreeMap, HashMap};

/// One delay computation: on the causing location at its point, a point-to-point wait
/// state (the waiting location and point) or a collective instance.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Task {
    P2p(usize, usize),
    Coll(usize),
    /// A thread barrier instance; the serial interval before a parallel region's point
    /// (`None`: after the last region) of a master thread.
    OmpBarrier(usize),
    OmpIdle(usize, Option<usize>),
    /// A point-to-point wait state whose waiting point is held elsewhere (an index into
    /// `Pass::p2p_given`); a collective instance with its members' maps given (into
    /// `Pass::coll_given`).
    P2pGiven(usize),
    CollGiven(usize),
}

/// A point-to-point wait state of a waiting point held by another process: the waiting
/// point (location, index), its wait and cause, and its delay time map (`delay::waiter_map`).
pub(crate) type P2pGiven = ((usize, usize), f64, EventRef, Map);

/// A collective instance whose members are (partly) held elsewhere: its cause, the
/// processes of its members, and the synchronising members with their delay time maps.
pub(crate) type CollGiven = (EventRef, Vec<u32>, Vec<((usize, usize), Map)>);

/// What a process knows of a waiting point held by another: its wait, its kinds of wait
/// state and, per kind, the long-term cost it carries (as its owner handed it over).
#[derive(Clone, Debug, Default)]
pub(crate) struct Remote {
    pub(crate) wait: f64,
    pub(crate) kinds: Vec<u16>,
    pub(crate) cost: Vec<f64>,
}

/// What the pass books per kind of wait state: short- and long-term costs; of
/// point-to-point kinds, the indirect and propagating waits; all `cnode * nloc + loc`
/// (empty: nothing booked).
pub(crate) struct Costs {
    pub(crate) short: Vec<Vec<f64>>,
    pub(crate) long: Vec<Vec<f64>>,
    pub(crate) indirect: Vec<Vec<f64>>,
    pub(crate) propagating: Vec<Vec<f64>>,
}

/// `v`, sized `n` (zeros) when still empty.
fn sized(v: &mut Vec<f64>, n: usize) -> &mut Vec<f64> {
    if v.is_empty() {
        v.resize(n, 0.0);
    }
    v
}

/// The wait and kinds of waiting point `(l, j)`: its point here, or what its owner handed in.
fn point<'b>(
    sync: &'b Sync,
    remote: &'b HashMap<(usize, usize), Remote>,
    (l, j): (usize, usize),
) -> (f64, &'b [u16]) {
    match sync.sps[l].get(j) {
        Some(sp) => (sp.wait, &sp.kinds),
        None => (remote.get(&(l, j))).map_or((0.0, &[][..]), |r| (r.wait, &r.kinds[..])),
    }
}

/// The backward pass's state: what it booked, the long-term costs the points carry, and
/// what it knows of points held elsewhere.
pub(crate) struct Pass<'a> {
    trace: &'a Trace,
    replay: &'a Replay,
    sync: &'a Sync,
    nloc: usize,
    /// The size of a value array: call paths × locations.
    size: usize,
    out: Costs,
    /// Per kind, the long-term cost each point (location, index) carries.
    cost: Vec<HashMap<(usize, usize), f64>>,
    /// The largest propagated share of each point's wait.
    pw: BTreeMap<(usize, usize), f64>,
    /// The indirect part of each waiting point's wait (its point-to-point wait state's):
    /// per (waiting location, `now` of the task) its point and the value.
    pub(crate) ind: BTreeMap<(usize, [u32; 4]), (usize, f64)>,
    /// The running task's place in the single-process run order.
    pub(crate) now: [u32; 4],
    /// The waiting points held elsewhere, and the wait states given with their maps.
    pub(crate) remote: HashMap<(usize, usize), Remote>,
    pub(crate) p2p_given: Vec<P2pGiven>,
    pub(crate) coll_given: Vec<CollGiven>,
}

impl<'a> Pass<'a> {
    /// A pass with nothing booked.
    pub(crate) fn new(trace: &'a Trace, replay: &'a Replay, sync: &'a Sync) -> Pass<'a> {
        let (nloc, ncn) = (trace.events.len(), replay.tree.len());
        let nk = sync.kinds.len();
        let none = || vec![Vec::new(); nk];
        Pass {
            trace,
            replay,
            sync,
            nloc,
            size: ncn * nloc,
            out: Costs {
                short: none(),
                long: none(),
                indirect: none(),
                propagating: none(),
            },
            cost: vec![HashMap::new(); nk],
            pw: BTreeMap::new(),
            ind: BTreeMap::new(),
            now: [0; 4],
            remote: HashMap::new(),
            p2p_given: Vec::new(),
            coll_given: Vec::new(),
        }
    }

    /// The wait and kinds of a waiting point, here or held elsewhere.
    fn point(&self, at: (usize, usize)) -> (f64, &[u16]) {
        point(self.sync, &self.remote, at)
    }

    /// The long-term cost of kind `k` point `at` carries now.
    pub(crate) fn carried(&self, k: usize, at: (usize, usize)) -> f64 {
        match self.cost[k].get(&at) {
            Some(&v) => v,
            None => (self.remote.get(&at))
                .and_then(|r| r.cost.get(k).copied())
                .unwrap_or(0.0),
        }
    }

    /// The synchronisation points the pass reads.
    pub(crate) fn sync(&self) -> &'a Sync {
        self.sync
    }

    /// The number of kinds of wait state.
    pub(crate) fn kinds(&self) -> usize {
        self.cost.len()
    }

    fn book(v: &mut Vec<f64>, (size, nloc): (usize, usize), l: usize, d: &delay::Map, scale: f64) {
        let v = sized(v, size);
        for (&c, &x) in d {
            v[c as usize * nloc + l] += scale * x;
        }
    }

    fn p2p(&mut self, x: &P2pDelay) {
        let (wl, wj) = x.waiter;
        let sync = self.sync;
        let sps = &sync.sps[x.loc];
        let inside = x.inside.start.min(x.inside.end)..x.inside.end;
        let ts = point(sync, &self.remote, (wl, wj)).1;
        let dims = (self.size, self.nloc);
        let denom = x.dsum + x.wsum;
        let sw = if denom > 0.0 {
            (x.wait / denom).min(1.0)
        } else {
            0.0
        };
        for &t in ts {
            Self::book(&mut self.out.short[t as usize], dims, x.loc, &x.d, sw);
        }
        if x.wsum > 0.0 && sw > 0.0 {
            self.ind.insert((wl, self.now), (wj, sw * x.wsum));
            for j in inside.clone().filter(|&j| sps[j].wait > 0.0) {
                let v = self.pw.entry((x.loc, j)).or_insert(0.0);
                *v = v.max(sw * sps[j].wait);
            }
        }
        if denom <= 0.0 {
            return;
        }
        for k in 0..self.cost.len() {
            let rc = self.carried(k, (wl, wj));
            let sc = rc / denom;
            if sc > 0.0 {
                Self::book(&mut self.out.long[k], dims, x.loc, &x.d, sc);
            }
            let add = sc + if ts.contains(&(k as u16)) { sw } else { 0.0 };
            if add > 0.0 {
                for j in inside.clone().filter(|&j| sps[j].wait > 0.0) {
                    *self.cost[k].entry((x.loc, j)).or_insert(0.0) += add * sps[j].wait;
                }
            }
        }
    }

    /// The scales of each point inside the group interval: the members' summed scales,
    /// those that synchronised with the root inside the interval counted from the point
    /// after (as Scalasca does it: from the next such point on).
    fn add_scaled(&mut self, k: usize, g: &CollDelay, scales: &[f64]) {
        let (rl, rj) = g.root;
        let mut base = 0.0;
        let mut at: BTreeMap<usize, f64> = BTreeMap::new();
        for (m, &s) in g.members.iter().zip(scales) {
            match m.inter {
                Some(j) => *at.entry(j).or_insert(0.0) += s,
                None => base += s,
            }
        }
        let start = g.gprev.map_or(0, |p| p + 1);
        let mut map: BTreeMap<usize, f64> = BTreeMap::new();
        map.insert(g.gprev.unwrap_or(0), base);
        let mut cur = base;
        for (&j, &s) in &at {
            map.entry(j).or_insert(cur);
            cur += s;
        }
        let mut scale = map.values().next().copied().unwrap_or(0.0);
        let sps = &self.sync.sps[rl];
        for (j, sp) in sps.iter().enumerate().take(rj).skip(start.min(rj)) {
            if let Some(&s) = map.get(&j) {
                scale = s;
            }
            if scale > 0.0 && sp.wait > 0.0 {
                *self.cost[k].entry((rl, j)).or_insert(0.0) += scale * sp.wait;
            }
        }
    }

    fn coll(&mut self, g: &CollDelay) {
        let sync = self.sync;
        let Some(ts) = (g.members.iter())
            .map(|m| self.point(m.waiter).1)
            .find(|k| !k.is_empty())
            .map(<[u16]>::to_vec)
        else {
            return;
        };
        let ts = &ts[..];
        let dims = (self.size, self.nloc);
        let rl = g.root.0;
        let scale_of = |input: f64, m: &delay::CollMember| {
            if m.dsum + m.prop > 0.0 {
                input / (m.dsum + m.prop)
            } else {
                0.0
            }
        };
        let waits: Vec<f64> = (g.members.iter())
            .map(|m| scale_of(self.point(m.waiter).0.max(0.0), m))
            .collect();
        for &t in ts {
            for (m, &s) in g.members.iter().zip(&waits) {
                Self::book(&mut self.out.short[t as usize], dims, rl, &m.d, s);
            }
        }
        // a thread barrier: a worker thread has no long-term costs in Scalasca (those
        // metrics are the master thread's), so one whose last member is a worker passes none
        // on; nor is a thread barrier's own long-term cost handed on across another
        let bar = sync.sps[rl][g.root.1].kind == Kind::OmpBarrier;
        if bar && self.replay.omp.thread.get(rl).is_some_and(|&n| n > 0) {
            return;
        }
        for k in 0..self.cost.len() {
            if bar && sync.shapes[k] == Some(Shape::ThreadBarrier) {
                if ts.contains(&(k as u16)) {
                    self.add_scaled(k, g, &waits);
                }
                continue;
            }
            let sc: Vec<f64> = (g.members.iter())
                .map(|m| scale_of(self.carried(k, m.waiter), m))
                .collect();
            for (m, &s) in g.members.iter().zip(&sc) {
                Self::book(&mut self.out.long[k], dims, rl, &m.d, s);
            }
            self.add_scaled(k, g, &sc);
            if ts.contains(&(k as u16)) {
                self.add_scaled(k, g, &waits);
            }
        }
    }

    /// Idle worker threads: the master's serial time, once per worker; the waits inside
    /// carry that scale as long-term idleness cost.
    fn omp_idle(&mut self, l: usize, x: &super::omp::IdleDelay) {
        let dims = (self.size, self.nloc);
        let sync = self.sync;
        let idle = (0..sync.kinds.len()).filter(|&k| sync.shapes[k] == Some(Shape::ThreadFork));
        for k in idle {
            if x.dsum > 0.0 {
                Self::book(&mut self.out.short[k], dims, l, &x.d, x.scale);
            }
            if x.wsum > 0.0 && x.scale > 0.0 {
                let sps = &sync.sps[l];
                for j in x.inside.clone().filter(|&j| sps[j].wait > 0.0) {
                    *self.cost[k].entry((l, j)).or_insert(0.0) += x.scale * sps[j].wait;
                }
            }
        }
    }
}

/// A task at a point (index) of its location, its place among the tasks at that point
/// (`order`), and the (location, point) pairs whose locations must have handled everything
/// after them first.
pub(crate) type Pending = (usize, (u32, u32, u32), Task, Vec<(usize, usize)>);

/// Each location's tasks in the order the pass runs them: latest point first; at one point,
/// point-to-point wait states by waiting (location, point), then collectives by instance,
/// then the OpenMP tasks.
pub(crate) fn order(t: &mut [Vec<Pending>]) {
    for v in t {
        v.sort_by_key(|x| (std::cmp::Reverse(x.0), x.1));
    }
}

/// Whether location `l`, at its task `next[l]`, has handled everything after its point `j`.
pub(crate) fn passed(all: &[Vec<Pending>], next: &[usize], l: usize, j: usize) -> bool {
    all[l].get(next[l]).is_none_or(|x| x.0 <= j)
}

/// The time of location `l`'s next task's point (a blocked pass goes on with the latest).
pub(crate) fn next_time(p: &Pass, all: &[Vec<Pending>], next: &[usize], l: usize) -> u64 {
    (all[l].get(next[l]).and_then(|x| p.sync.sps[l].get(x.0)))
        .map_or(u64::MAX, |sp| p.trace.events[l].time.get(sp.event as usize))
}

/// Whether task `task` of location `l` may run: every location it waits for has passed the
/// point (`passed_at` for another location's).
pub(crate) fn ready(task: &Pending, l: usize, passed_at: &dyn Fn(usize, usize) -> bool) -> bool {
    task.3.iter().all(|&(ol, oj)| ol == l || passed_at(ol, oj))
}

fn tasks(sync: &Sync, replay: &Replay) -> Vec<Vec<Pending>> {
    let nloc = sync.sps.len();
    let mut t: Vec<Vec<Pending>> = vec![Vec::new(); nloc];
    for l in 0..nloc {
        for (j, sp) in sync.sps[l].iter().enumerate() {
            if !matches!(sp.kind, Kind::Recv | Kind::SendCompletion) || sp.wait <= 0.0 {
                continue;
            }
            let cl = sp.cause.loc as usize;
            if let Some(cj) = sync.at(cl, sp.cause.event) {
                let key = (0, l as u32, j as u32);
                t[cl].push((cj, key, Task::P2p(l, j), vec![(l, j)]));
            }
        }
    }
    for n in 0..replay.instances.len() {
        let (pts, Some(c)) = delay::coll_points(replay, sync, n) else {
            continue;
        };
        if let Some(cj) = sync.at(c.loc as usize, c.event) {
            t[c.loc as usize].push((cj, (1, n as u32, 0), Task::Coll(n), pts));
        }
    }
    omp_tasks(sync, &mut t);
    order(&mut t);
    t
}

/// The OpenMP tasks (thread barriers, idle threads) added to their locations' tasks: all on
/// the locations of their process, so `run --mpi` makes those of its processes alike.
pub(crate) fn omp_tasks(sync: &Sync, t: &mut [Vec<Pending>]) {
    for (seq, (l, j, task, needs)) in super::omp::tasks(sync).into_iter().enumerate() {
        let task = match task {
            super::omp::OmpTask::Barrier(n) => Task::OmpBarrier(n),
            super::omp::OmpTask::Idle(f) => Task::OmpIdle(l, f),
        };
        t[l].push((j, (2, seq as u32, 0), task, needs));
    }
}

/// The backward pass over every wait state's delay.
pub(super) fn costs(trace: &Trace, replay: &Replay, sync: &Sync) -> Costs {
    let nloc = trace.events.len();
    let mut p = Pass::new(trace, replay, sync);
    let all = tasks(sync, replay);
    let mut next = vec![0usize; nloc];
    let mut seq = 0;
    loop {
        let mut progress = false;
        for l in 0..nloc {
            while let Some(task) = all[l].get(next[l]) {
                if !ready(task, l, &|ol, oj| passed(&all, &next, ol, oj)) {
                    break;
                }
                seq += 1;
                p.now = [0, seq, 0, 0];
                run(&mut p, task.2);
                next[l] += 1;
                progress = true;
            }
        }
        if progress {
            continue;
        }
        // blocked (clock-condition violations): go on with the latest pending point
        let Some(l) = (0..nloc)
            .filter(|&l| next[l] < all[l].len())
            .max_by_key(|&l| next_time(&p, &all, &next, l))
        else {
            break;
        };
        seq += 1;
        p.now = [0, seq, 0, 0];
        run(&mut p, all[l][next[l]].2);
        next[l] += 1;
    }
    p.finish()
}

impl Pass<'_> {
    /// What the pass booked, with the propagating waits of the points held here (per
    /// location in point order) and their indirect waits (in run order).
    pub(crate) fn finish(mut self) -> Costs {
        let (sync, nloc, size) = (self.sync, self.nloc, self.size);
        let cnode = |l: usize, j: usize| {
            let sp = sync.sps[l].get(j)?;
            let ok = matches!(sp.kind, Kind::Recv | Kind::SendCompletion);
            ok.then(|| (self.replay.locations[l].cnode(sp.event as usize), &sp.kinds))
        };
        for (&(l, j), &v) in &self.pw {
            let Some((c, kinds)) = cnode(l, j) else {
                continue;
            };
            for &k in kinds {
                sized(&mut self.out.propagating[k as usize], size)[c as usize * nloc + l] += v;
            }
        }
        for (&(l, _), &(j, v)) in &self.ind {
            let Some((c, kinds)) = cnode(l, j) else {
                continue;
            };
            for &k in kinds {
                sized(&mut self.out.indirect[k as usize], size)[c as usize * nloc + l] += v;
            }
        }
        self.out
    }
}

/// Run one task.
pub(crate) fn run(p: &mut Pass, task: Task) {
    match task {
        Task::P2p(l, j) => {
            if let Some(x) = delay::p2p_delay(p.trace, p.replay, p.sync, l, j) {
                p.p2p(&x);
            }
        }
        Task::Coll(n) => {
            if let Some(g) = delay::coll_delay(p.trace, p.replay, p.sync, n) {
                p.coll(&g);
            }
        }
        Task::OmpBarrier(n) => {
            if let Some(g) = super::omp::barrier_delay(p.trace, p.replay, p.sync, n) {
                p.coll(&g);
            }
        }
        Task::OmpIdle(l, f) => {
            if let Some(x) = super::omp::idle_delay(p.trace, p.replay, p.sync, l, f) {
                p.omp_idle(l, &x);
            }
        }
        Task::P2pGiven(i) => {
            let Some((waiter, wait, cause, theirs)) = p.p2p_given.get(i) else {
                return;
            };
            let x = delay::p2p_from(p.trace, p.replay, p.sync, *waiter, (*wait, *cause), theirs);
            p.p2p(&x);
        }
        Task::CollGiven(i) => {
            let Some((cause, group, members)) = p.coll_given.get(i) else {
                return;
            };
            let what = (*cause, &group[..]);
            if let Some(g) = delay::coll_from(p.trace, p.replay, p.sync, what, members) {
                p.coll(&g);
            }
        }
    }
}
