//! The backward pass that books delay costs (docs/root-causes.md): every wait state's delay
//! is computed on the location that caused it, latest first, so that when a wait state is
//! handled every later wait state it propagated into has already handed it its long-term
//! cost. Short-term costs scale the delay by the wait it explains; long-term costs scale it
//! by the costs the waiting point carries, and pass costs on to the wait states inside the
//! causing location's interval (per kind of the wait state where the chain ends). The same
//! pass classifies point-to-point waits as indirect (caused by propagated waits) and
//! propagating (causing further waits). The kinds of wait state are the rules that declare a
//! `[cause]` (`Sync::kinds`); a wait booked by several such rules counts for each.

use super::delay::{self, CollDelay, P2pDelay};
use super::sync::{Kind, Sync};
use crate::model::Trace;
use crate::replay::Replay;
use crate::rules::causes::Shape;
use std::collections::{BTreeMap, HashMap};

/// One delay computation: on the causing location at its point, a point-to-point wait
/// state (the waiting location and point) or a collective instance.
#[derive(Clone, Copy)]
enum Task {
    P2p(usize, usize),
    Coll(usize),
    /// A thread barrier instance; the serial interval before a parallel region's point
    /// (`None`: after the last region) of a master thread.
    OmpBarrier(usize),
    OmpIdle(usize, Option<usize>),
}

/// What the pass books per kind of wait state: short- and long-term costs; of
/// point-to-point kinds, the indirect and propagating waits; all `cnode * nloc + loc`
/// (empty: nothing booked).
pub(super) struct Costs {
    pub(super) short: Vec<Vec<f64>>,
    pub(super) long: Vec<Vec<f64>>,
    pub(super) indirect: Vec<Vec<f64>>,
    pub(super) propagating: Vec<Vec<f64>>,
}

/// `v`, sized `n` (zeros) when still empty.
fn sized(v: &mut Vec<f64>, n: usize) -> &mut Vec<f64> {
    if v.is_empty() {
        v.resize(n, 0.0);
    }
    v
}

struct Pass<'a> {
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
}

impl Pass<'_> {
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
        let ts = &sync.sps[wl][wj].kinds;
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
            let c = self.replay.locations[wl].cnode(sync.sps[wl][wj].event as usize);
            for &t in ts {
                sized(&mut self.out.indirect[t as usize], self.size)
                    [c as usize * self.nloc + wl] += sw * x.wsum;
            }
            for j in inside.clone().filter(|&j| sps[j].wait > 0.0) {
                let v = self.pw.entry((x.loc, j)).or_insert(0.0);
                *v = v.max(sw * sps[j].wait);
            }
        }
        if denom <= 0.0 {
            return;
        }
        for k in 0..self.cost.len() {
            let rc = self.cost[k].get(&(wl, wj)).copied().unwrap_or(0.0);
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
            .map(|m| &sync.sps[m.waiter.0][m.waiter.1].kinds)
            .find(|k| !k.is_empty())
        else {
            return;
        };
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
            .map(|m| scale_of(self.sync.sps[m.waiter.0][m.waiter.1].wait.max(0.0), m))
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
                .map(|m| scale_of(self.cost[k].get(&m.waiter).copied().unwrap_or(0.0), m))
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

/// Per location its tasks, latest point first, and per task what must be handled before:
/// (location, point index) pairs whose location must have handled everything after them.
/// A task at a point (index) of its location and the (location, point) pairs it waits for.
type Pending = (usize, Task, Vec<(usize, usize)>);

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
                t[cl].push((cj, Task::P2p(l, j), vec![(l, j)]));
            }
        }
    }
    for (n, inst) in replay.instances.iter().enumerate() {
        let pts: Vec<(usize, usize)> = (inst.members.iter())
            .filter_map(|m| {
                sync.at(m.loc as usize, m.event)
                    .map(|j| (m.loc as usize, j))
            })
            .filter(|&(l, j)| matches!(sync.sps[l][j].kind, Kind::Coll(_)))
            .collect();
        let Some(c) = (pts.iter())
            .map(|&(l, j)| &sync.sps[l][j])
            .find(|s| s.wait > 0.0 && s.cause.is_some())
            .map(|s| s.cause)
        else {
            continue;
        };
        if let Some(cj) = sync.at(c.loc as usize, c.event) {
            t[c.loc as usize].push((cj, Task::Coll(n), pts));
        }
    }
    for (l, j, task, needs) in super::omp::tasks(sync) {
        let task = match task {
            super::omp::OmpTask::Barrier(n) => Task::OmpBarrier(n),
            super::omp::OmpTask::Idle(f) => Task::OmpIdle(l, f),
        };
        t[l].push((j, task, needs));
    }
    for v in &mut t {
        v.sort_by_key(|x| std::cmp::Reverse(x.0));
    }
    t
}

/// The backward pass over every wait state's delay.
pub(super) fn costs(trace: &Trace, replay: &Replay, sync: &Sync) -> Costs {
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let nk = sync.kinds.len();
    let none = || vec![Vec::new(); nk];
    let mut p = Pass {
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
    };
    let all = tasks(sync, replay);
    let mut next = vec![0usize; nloc];
    // a location has handled everything after point j once its next task is at or before j
    let passed = |next: &[usize], l: usize, j: usize| all[l].get(next[l]).is_none_or(|x| x.0 <= j);
    loop {
        let mut progress = false;
        for l in 0..nloc {
            while let Some((_, task, needs)) = all[l].get(next[l]) {
                if !needs
                    .iter()
                    .all(|&(ol, oj)| ol == l || passed(&next, ol, oj))
                {
                    break;
                }
                run(&mut p, *task);
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
            .max_by_key(|&l| {
                (sync.sps[l].get(all[l][next[l]].0))
                    .map_or(u64::MAX, |sp| trace.events[l].time[sp.event as usize])
            })
        else {
            break;
        };
        run(&mut p, all[l][next[l]].1);
        next[l] += 1;
    }
    for (&(l, j), &v) in &p.pw {
        let sp = &sync.sps[l][j];
        if !matches!(sp.kind, Kind::Recv | Kind::SendCompletion) {
            continue;
        }
        let c = replay.locations[l].cnode(sp.event as usize);
        for &k in &sp.kinds {
            sized(&mut p.out.propagating[k as usize], p.size)[c as usize * nloc + l] += v;
        }
    }
    p.out
}

fn run(p: &mut Pass, task: Task) {
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
    }
}
