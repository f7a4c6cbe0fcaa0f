//! Delay costs (docs/root-causes.md): for each wait state, the excess time of the causing
//! location over the waiting one in their common synchronisation interval.
//!
//! A wait state's **synchronisation interval** on a location runs from the location's last
//! synchronisation point with the other process before it to the synchronisation point
//! itself. Its **delay time map** is the location's time per call path in that interval,
//! less the waits at the synchronisation points inside it and less the call time of the
//! interval's first point (its completion time stays). The **delay** of the causing
//! location is the positive excess of its map over the waiting location's map; its
//! **short-term cost** is that delay scaled so that delay plus the waits propagated inside
//! the interval explain the wait (at most 1:1).

use super::sync::{Kind, Sync};
use super::{each_runtime, NO_CNODE};
use crate::model::Trace;
use crate::replay::matching::EventRef;
use crate::replay::Replay;
use std::collections::BTreeMap;

/// Seconds per call path.
pub(crate) type Map = BTreeMap<u32, f64>;

/// The delay time map of location `l` for the interval from its synchronisation point
/// `prev` (an index into its points; `None`: the start) to event `to`, and the sum of the
/// waits at the points inside it.
pub(super) fn interval(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    l: usize,
    prev: Option<usize>,
    to: u32,
) -> (Map, f64) {
    let res = trace.timer_resolution.max(1) as f64;
    let sps = &sync.sps[l];
    let from = prev.map_or(0, |j| sps[j].event);
    let mut ticks: BTreeMap<u32, i64> = BTreeMap::new();
    match &sync.omp {
        Some(o) => o.each_runtime(l, (from, to), &mut |c, t| *ticks.entry(c).or_default() += t),
        None => each_runtime(trace, replay, l, (from, to), &mut |c, t| {
            *ticks.entry(c).or_default() += t as i64
        }),
    }
    let first = prev.map_or(0, |j| j + 1);
    let last = sps.partition_point(|x| x.event < to);
    let mut waits: Map = Map::new();
    let mut wsum = 0.0;
    for sp in &sps[first.min(last)..last] {
        if sp.wait > 0.0 {
            let c = replay.locations[l].cnode(sp.event as usize);
            *waits.entry(c).or_default() += sp.wait;
            wsum += sp.wait;
        }
    }
    let mut m: Map = ticks
        .into_iter()
        .filter_map(|(c, t)| {
            let d = t as f64 / res - waits.get(&c).copied().unwrap_or(0.0);
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

/// The positive part of `a - b`, and its sum.
pub(super) fn excess(a: &Map, b: &Map) -> (Map, f64) {
    let mut sum = 0.0;
    let m = a
        .iter()
        .filter_map(|(&c, &v)| {
            let d = v - b.get(&c).copied().unwrap_or(0.0);
            (d > 0.0).then(|| {
                sum += d;
                (c, d)
            })
        })
        .collect();
    (m, sum)
}

/// One point-to-point wait state's delay: (delaying location, delay map, delay sum,
/// propagated wait sum, the wait).
pub(super) struct P2pDelay {
    pub(super) loc: usize,
    pub(super) d: Map,
    pub(super) dsum: f64,
    pub(super) wsum: f64,
    pub(super) wait: f64,
    /// The delaying location's interval: its points strictly inside it (indices).
    pub(super) inside: std::ops::Range<usize>,
    /// The waiting location and its point's index.
    pub(super) waiter: (usize, usize),
}

/// The delay of the point-to-point wait state at point `j` of location `l` (a late
/// sender's receive or a late receiver's send completion), if it is one.
pub(super) fn p2p_delay(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    l: usize,
    j: usize,
) -> Option<P2pDelay> {
    let sp = &sync.sps[l][j];
    if !matches!(sp.kind, Kind::Recv | Kind::SendCompletion)
        || sp.wait <= 0.0
        || !sp.cause.is_some()
    {
        return None;
    }
    let theirs = waiter_map(trace, replay, sync, (l, j), sp.cause.loc as usize);
    Some(p2p_from(
        trace,
        replay,
        sync,
        (l, j),
        (sp.wait, sp.cause),
        &theirs,
    ))
}

/// The delay time map of the waiting point `j` of location `l` against location `other`
/// (the causing one): since `l`'s last point with `other`'s process (empty when `l` is
/// `other`). The waiting side's part of a delay, computed where `l` is held.
pub(crate) fn waiter_map(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    (l, j): (usize, usize),
    other: usize,
) -> Map {
    if l == other {
        return Map::new();
    }
    let e = sync.sps[l][j].event;
    interval(trace, replay, sync, l, sync.prev(l, e, sync.proc[other]), e).0
}

/// The delay of the point-to-point wait state of `waiter` (location, point index) with its
/// wait and cause, its delay time map `theirs` (`waiter_map`) given: the causing location's
/// part, computed where the cause is held.
pub(super) fn p2p_from(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    waiter: (usize, usize),
    (wait, cause): (f64, EventRef),
    theirs: &Map,
) -> P2pDelay {
    let (cl, ce) = (cause.loc as usize, cause.event);
    let prev = sync.prev(cl, ce, sync.proc[waiter.0]);
    let (mine, wsum) = interval(trace, replay, sync, cl, prev, ce);
    let (d, dsum) = excess(&mine, theirs);
    P2pDelay {
        loc: cl,
        d,
        dsum,
        wsum,
        wait,
        inside: prev.map_or(0, |p| p + 1)..sync.sps[cl].partition_point(|x| x.event < ce),
        waiter,
    }
}

/// The start of a collective's synchronisation interval on the causing location `l`
/// before event `e`: its last point at which it had synchronised with every other member
/// of `group` (since then, or at it, the points where it synchronised with some of them:
/// per process, the latest such point).
fn group_prev(sync: &Sync, l: usize, e: u32, group: &[u32]) -> (Option<usize>, Vec<(u32, usize)>) {
    let me = sync.proc[l];
    let mut remaining: Vec<u32> = group.iter().copied().filter(|&p| p != me).collect();
    remaining.sort_unstable();
    remaining.dedup();
    let sps = &sync.sps[l];
    let k = sps.partition_point(|x| x.event < e);
    let mut between = Vec::new();
    for j in (0..k).rev() {
        if remaining.is_empty() {
            return (Some(j + 1), between);
        }
        if remaining.iter().all(|&p| sps[j].ranks.contains(p)) {
            return (Some(j), between);
        }
        remaining.retain(|&p| {
            let hit = sps[j].ranks.contains(p);
            if hit {
                between.push((p, j));
            }
            !hit
        });
        if remaining.is_empty() {
            return (Some(j), between);
        }
    }
    (None, between)
}

/// One synchronising member of a collective's delay computation: its point, its delay
/// map against the causing location (scaled by nothing yet), its sum, and the waits
/// propagated inside the causing location's interval.
pub(super) struct CollMember {
    pub(super) waiter: (usize, usize),
    pub(super) d: Map,
    pub(super) dsum: f64,
    pub(super) prop: f64,
    /// The causing location's point where this member last synchronised with it inside
    /// the group interval, if any (an index).
    pub(super) inter: Option<usize>,
}

/// The delay of one collective instance.
pub(super) struct CollDelay {
    /// The causing location and its point (an index).
    pub(super) root: (usize, usize),
    /// The start of the group interval on it (an index).
    pub(super) gprev: Option<usize>,
    pub(super) members: Vec<CollMember>,
}

/// The synchronising members of collective instance `n` (location, point index, in member
/// order) and the event that caused their waits (the first waiting member's cause).
pub(super) fn coll_points(
    replay: &Replay,
    sync: &Sync,
    n: usize,
) -> (Vec<(usize, usize)>, Option<EventRef>) {
    let inst = &replay.instances[n];
    let pts: Vec<(usize, usize)> = (inst.members.iter())
        .filter_map(|m| {
            sync.at(m.loc as usize, m.event)
                .map(|j| (m.loc as usize, j))
        })
        .filter(|&(l, j)| matches!(sync.sps[l][j].kind, Kind::Coll(_)))
        .collect();
    let cause = (pts.iter())
        .map(|&(l, j)| &sync.sps[l][j])
        .find(|s| s.wait > 0.0 && s.cause.is_some())
        .map(|s| s.cause);
    (pts, cause)
}

/// The delay of collective instance `n`: the causing location and end event, and its
/// synchronising members (none when no member waited).
pub(super) fn coll_delay(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    n: usize,
) -> Option<CollDelay> {
    let (pts, cause) = coll_points(replay, sync, n);
    let cause = cause?;
    let members: Vec<((usize, usize), Map)> = (pts.into_iter())
        .map(|p| (p, waiter_map(trace, replay, sync, p, cause.loc as usize)))
        .collect();
    let group = group_of(replay, sync, n);
    coll_from(trace, replay, sync, (cause, &group), &members)
}

/// The processes of the members of collective instance `n`.
pub(crate) fn group_of(replay: &Replay, sync: &Sync, n: usize) -> Vec<u32> {
    (replay.instances[n].members.iter())
        .map(|m| sync.proc[m.loc as usize])
        .collect()
}

/// The delay of a collective instance caused at `cause`, the processes of its members
/// `group`, from its synchronising members with their delay time maps (`waiter_map`
/// against the causing location): the causing location's part, computed where it is held.
pub(super) fn coll_from(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    (cause, group): (EventRef, &[u32]),
    members: &[((usize, usize), Map)],
) -> Option<CollDelay> {
    let (rl, re) = (cause.loc as usize, cause.event);
    let rj = sync.at(rl, re)?;
    let (gprev, between) = group_prev(sync, rl, re, group);
    let (gmap, gwait) = interval(trace, replay, sync, rl, gprev, re);
    let mut out = Vec::new();
    for ((l, j), local) in members {
        let p = sync.proc[*l];
        let (tmap, prop, inter) = match between.iter().find(|b| b.0 == p) {
            Some(&(_, bj)) => {
                let (m, w) = interval(trace, replay, sync, rl, Some(bj), re);
                // only the call paths of the whole interval count
                let m = gmap
                    .keys()
                    .map(|c| (*c, m.get(c).copied().unwrap_or(0.0)))
                    .collect();
                (m, w, Some(bj))
            }
            None => (gmap.clone(), gwait, None),
        };
        let (d, dsum) = excess(&tmap, local);
        out.push(CollMember {
            waiter: (*l, *j),
            d,
            dsum,
            prop,
            inter,
        });
    }
    Some(CollDelay {
        root: (rl, rj),
        gprev,
        members: out,
    })
}
