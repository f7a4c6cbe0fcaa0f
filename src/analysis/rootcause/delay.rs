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
use crate::replay::Replay;
use std::collections::BTreeMap;

/// Seconds per call path.
pub(super) type Map = BTreeMap<u32, f64>;

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
    let (cl, ce) = (sp.cause.loc as usize, sp.cause.event);
    let prev = sync.prev(cl, ce, sync.proc[l]);
    let (mine, wsum) = interval(trace, replay, sync, cl, prev, ce);
    let (theirs, _) = interval(
        trace,
        replay,
        sync,
        l,
        sync.prev(l, sp.event, sync.proc[cl]),
        sp.event,
    );
    let (d, dsum) = excess(&mine, &theirs);
    Some(P2pDelay {
        loc: cl,
        d,
        dsum,
        wsum,
        wait: sp.wait,
        inside: prev.map_or(0, |p| p + 1)..sync.sps[cl].partition_point(|x| x.event < ce),
        waiter: (l, j),
    })
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

/// The delay of collective instance `n`: the causing location and end event, and its
/// synchronising members (none when no member waited).
pub(super) fn coll_delay(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    n: usize,
) -> Option<CollDelay> {
    let inst = &replay.instances[n];
    let pts: Vec<Option<(usize, usize)>> = (inst.members.iter())
        .map(|m| {
            sync.at(m.loc as usize, m.event)
                .map(|j| (m.loc as usize, j))
        })
        .collect();
    let pts: Vec<Option<(usize, usize)>> = pts
        .into_iter()
        .map(|p| p.filter(|&(l, j)| matches!(sync.sps[l][j].kind, Kind::Coll(_))))
        .collect();
    let cause = pts
        .iter()
        .flatten()
        .map(|&(l, j)| &sync.sps[l][j])
        .find(|s| s.wait > 0.0 && s.cause.is_some())?
        .cause;
    let (rl, re) = (cause.loc as usize, cause.event);
    let rj = sync.at(rl, re)?;
    let group: Vec<u32> = inst
        .members
        .iter()
        .map(|m| sync.proc[m.loc as usize])
        .collect();
    let (gprev, between) = group_prev(sync, rl, re, &group);
    let (gmap, gwait) = interval(trace, replay, sync, rl, gprev, re);
    let mut out = Vec::new();
    for &(l, j) in pts.iter().flatten() {
        let p = sync.proc[l];
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
        let local = if l == rl {
            Map::new()
        } else {
            interval(
                trace,
                replay,
                sync,
                l,
                sync.prev(l, sync.sps[l][j].event, sync.proc[rl]),
                sync.sps[l][j].event,
            )
            .0
        };
        let (d, dsum) = excess(&tmap, &local);
        out.push(CollMember {
            waiter: (l, j),
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
