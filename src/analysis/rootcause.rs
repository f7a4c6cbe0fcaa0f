//! Scalasca's critical-path metrics (Böhme et al., IPDPS 2012; docs/root-causes.md): the
//! synchronisation points of an MPI run with their wait times, the critical path found by
//! walking backwards from the end of the run along the wait states to the locations that
//! caused them, and from it, per call path and location, the critical-path profile, the
//! activity impact, the critical-path imbalance impact, the inter-partition imbalance and the
//! non-critical-path activities.
//!
//! The mechanism, in our words:
//! * a **synchronisation point** is an event where a location may have waited for another:
//!   the receive of a matched message (its wait: the receive's call entered before the
//!   matching send's call), the completion of a blocking send (the receive posted late), the
//!   end of a collective operation (the last member to enter, or the root), the end of
//!   MPI_Finalize; each has a wait time (0 if it did not wait) and, when it waited, the event
//!   of the location that caused the wait (the send, the receive's posting, the member that
//!   entered last, the root);
//! * **time between two events** of a location is its exclusive time per call path between
//!   the last ENTER or LEAVE before the one and the last ENTER or LEAVE before the other;
//! * the **critical path** starts on the location that entered MPI_Finalize last, at its
//!   LEAVE; going backwards, at the first synchronisation point where that location waited,
//!   the time since it (less the wait) is booked to the location's call paths, and the path
//!   continues on the causing location from the causing event; it ends at the LEAVE of
//!   MPI_Init (the time since the ENTER of MPI_Init is booked).
//!
//! The critical path here is the one Scalasca 2.6 computes; issue 14's longest path
//! (`critical_path.rs`) is a different one (docs/report-json.md says how they differ).

use crate::model::{classify, collective_op_name, EventKind, Trace};
use crate::replay::calltree::NO_CNODE;
use crate::replay::matching::EventRef;
use crate::replay::{Replay, NONE};

/// One synchronisation point of a location where it waited.
#[derive(Clone, Copy, Debug)]
struct Wait {
    event: u32,
    /// Seconds.
    wait: f64,
    /// The event that caused the wait, where the critical path continues.
    cause: EventRef,
}

/// The critical-path metrics: per metric, `cnode * nloc + loc`, seconds.
#[derive(Clone, Debug, Default)]
pub struct RootCauses {
    pub nloc: usize,
    /// (metric id, values) in Scalasca's order.
    pub metrics: Vec<(&'static str, Vec<f64>)>,
    /// The critical path's steps: (location, from event, to event), last step first.
    pub steps: Vec<(u32, u32, u32)>,
}

impl RootCauses {
    /// The values of metric `id`, if computed.
    pub fn values(&self, id: &str) -> Option<&[f64]> {
        self.metrics
            .iter()
            .find(|(m, _)| *m == id)
            .map(|(_, v)| v.as_slice())
    }
}

/// The region class of the call enclosing event `i` of location `l` ("" outside any call).
fn call_class(trace: &Trace, replay: &Replay, l: usize, i: u32) -> (&'static str, &'static str) {
    let st = &replay.locations[l];
    if i as usize >= st.len() {
        return ("", "");
    }
    let e = st.enterptr(i as usize);
    if e == NONE {
        return ("", "");
    }
    let ev = &trace.events[l];
    match trace.defs.regions.get(ev.arg[e as usize] as usize) {
        Some(r) if ev.kind[e as usize] == EventKind::Enter => classify::classify(r),
        _ => ("", ""),
    }
}

/// (ENTER, LEAVE) times of the call enclosing event `i` of location `l`.
fn call_span(trace: &Trace, replay: &Replay, l: usize, i: u32) -> Option<(u64, u64)> {
    let st = &replay.locations[l];
    let e = st.enterptr(i as usize);
    if e == NONE {
        return None;
    }
    let x = st.exitptr(e as usize);
    let t = &trace.events[l].time;
    Some((
        t[e as usize],
        if x == NONE {
            t[i as usize]
        } else {
            t[x as usize]
        },
    ))
}

/// The waits at receives (the sender entered its call late), one per call, the largest
/// one in a call completing several receives.
fn receive_waits(trace: &Trace, replay: &Replay, l: usize, res: f64, out: &mut Vec<Wait>) {
    let ev = &trace.events[l];
    let links = &replay.msg_links[l];
    // (enter of a multi-completion call, its largest wait so far)
    let mut multi: Option<(u32, Wait)> = None;
    for i in 0..ev.len() {
        if !matches!(ev.kind[i], EventKind::MpiRecv | EventKind::MpiIrecv) {
            continue;
        }
        let Some(p) = links.partner.get(ev.arg[i] as usize).copied() else {
            continue;
        };
        if !p.is_some() {
            continue;
        }
        let (class, _) = call_class(trace, replay, l, i as u32);
        if class.starts_with("P2P_TEST") {
            continue;
        }
        let (Some((re, rx)), Some((se, _))) = (
            call_span(trace, replay, l, i as u32),
            call_span(trace, replay, p.loc as usize, p.event),
        ) else {
            continue;
        };
        let idle = (se.min(rx) as f64 - re as f64) / res;
        if idle <= 0.0 {
            continue;
        }
        let w = Wait {
            event: i as u32,
            wait: idle,
            cause: p,
        };
        if class == "P2P_WAIT_MULTI" {
            let e = replay.locations[l].enterptr(i);
            match multi {
                Some((me, mw)) if me == e => {
                    if idle > mw.wait {
                        multi = Some((e, w));
                    }
                }
                Some((_, mw)) => {
                    out.push(mw);
                    multi = Some((e, w));
                }
                None => multi = Some((e, w)),
            }
        } else {
            out.push(w);
        }
    }
    if let Some((_, mw)) = multi {
        out.push(mw);
    }
}

/// The waits at send completions (the receive was posted late), the largest one in a call
/// completing several sends; a multi-completion call that waited for a message is skipped.
fn send_waits(trace: &Trace, replay: &Replay, l: usize, res: f64, recv_calls: &[u32]) -> Vec<Wait> {
    let ev = &trace.events[l];
    let links = &replay.msg_links[l];
    let mut best: Vec<(u32, Wait)> = Vec::new();
    for i in 0..ev.len() {
        let kind = ev.kind[i];
        if !matches!(kind, EventKind::MpiSend | EventKind::MpiIsend) {
            continue;
        }
        let k = ev.arg[i] as usize;
        let Some(p) = links.partner.get(k).copied() else {
            continue;
        };
        if !p.is_some() || links.cancelled(k) {
            continue;
        }
        let c = if kind == EventKind::MpiSend {
            i as u32
        } else {
            links.request_event(k)
        };
        if c == NONE {
            continue;
        }
        let (class, mode) = call_class(trace, replay, l, c);
        let ce = replay.locations[l].enterptr(c as usize);
        let ok = (class == "P2P_SEND" && (mode == "STANDARD" || mode == "SYNCHRONOUS"))
            || class == "P2P_WAIT_SINGLE"
            || (class == "P2P_WAIT_MULTI" && recv_calls.binary_search(&ce).is_err());
        if !ok {
            continue;
        }
        let (rl, rev) = (p.loc as usize, &trace.events[p.loc as usize]);
        let q = if rev.kind[p.event as usize] == EventKind::MpiRecv {
            p.event
        } else {
            replay.msg_links[rl].request_event(rev.arg[p.event as usize] as usize)
        };
        if q == NONE {
            continue;
        }
        let (Some((cen, clv)), Some((qen, _))) = (
            call_span(trace, replay, l, c),
            call_span(trace, replay, rl, q),
        ) else {
            continue;
        };
        if clv <= qen {
            continue;
        }
        let idle = (qen as f64 - cen as f64) / res;
        if idle <= 0.0 {
            continue;
        }
        let w = Wait {
            event: c,
            wait: idle,
            cause: EventRef {
                loc: p.loc,
                event: q,
            },
        };
        match best.iter_mut().find(|(e, _)| *e == ce) {
            Some((_, b)) if class == "P2P_WAIT_MULTI" => {
                if idle > b.wait {
                    *b = w;
                }
            }
            _ => best.push((ce, w)),
        }
    }
    best.into_iter().map(|(_, w)| w).collect()
}

/// One member of a collective instance: (location, COLL_END event, begin, end, sent,
/// received).
type Member = (u32, u32, u64, u64, u64, u64);

/// The waits at the members of one collective instance (Scalasca's synchronising members).
fn collective_waits(trace: &Trace, replay: &Replay, n: usize, res: f64, out: &mut [Vec<Wait>]) {
    let inst = &replay.instances[n];
    let mut ms: Vec<Member> = Vec::with_capacity(inst.members.len());
    let mut op_root = None;
    for m in &inst.members {
        let Some(c) = trace.events[m.loc as usize].coll(m.event as usize) else {
            return;
        };
        op_root.get_or_insert((c.op, c.root));
        let t_end = trace.events[m.loc as usize].time[m.event as usize];
        let begin = call_span(trace, replay, m.loc as usize, m.event).map_or(t_end, |s| s.0);
        ms.push((m.loc, m.event, begin, t_end, c.sent, c.received));
    }
    let Some((op, root)) = op_root else { return };
    if ms.len() < 2 {
        return;
    }
    // the member entered last among `pick` (the lowest rank among equals)
    let latest = |pick: &dyn Fn(&Member) -> bool| -> Option<usize> {
        let mut best: Option<usize> = None;
        for (k, m) in ms.iter().enumerate() {
            if pick(m) && best.is_none_or(|b| m.2 > ms[b].2) {
                best = Some(k);
            }
        }
        best
    };
    let part = |m: &Member| m.4 > 0 || m.5 > 0;
    // (synchronising members, the member that caused their wait)
    let (sync, cause): (Vec<bool>, Option<usize>) = match collective_op_name(op) {
        "BARRIER" => (vec![true; ms.len()], latest(&|_| true)),
        "BCAST" | "SCATTER" | "SCATTERV" => {
            let r = root as usize;
            if r >= ms.len() || ms[r].4 == 0 {
                return;
            }
            let waits: Vec<bool> = ms.iter().map(|m| m.5 > 0 && m.2 < ms[r].2).collect();
            (waits, Some(r))
        }
        "REDUCE" | "GATHER" | "GATHERV" => {
            let r = root as usize;
            if r >= ms.len() || ms[r].5 == 0 {
                return;
            }
            let Some(j) = latest(&|m| m.4 > 0) else {
                return;
            };
            let on = ms[r].2 < ms[j].2;
            let s = (0..ms.len()).map(|k| on && (k == r || k == j)).collect();
            (s, Some(j))
        }
        "ALLGATHER"
        | "ALLGATHERV"
        | "ALLREDUCE"
        | "ALLTOALL"
        | "ALLTOALLV"
        | "ALLTOALLW"
        | "REDUCE_SCATTER"
        | "REDUCE_SCATTER_BLOCK" => {
            let Some(l1) = latest(&|m| part(m)) else {
                return;
            };
            let ee1 = ms
                .iter()
                .filter(|m| part(m))
                .map(|m| m.3)
                .min()
                .unwrap_or(0);
            if ee1 > ms[l1].2 {
                (ms.iter().map(part).collect(), Some(l1))
            } else {
                let Some(j) = latest(&|m| part(m) && m.4 > 0) else {
                    return;
                };
                let s = (ms.iter().enumerate())
                    .map(|(k, m)| part(m) && ((m.5 > 0 && m.2 < ms[j].2) || (m.4 > 0 && k == j)))
                    .collect();
                (s, Some(j))
            }
        }
        _ => return,
    };
    let Some(c) = cause else { return };
    let lb = ms[c].2;
    for (k, m) in ms.iter().enumerate() {
        if !sync[k] || k == c {
            continue;
        }
        let idle = (lb.min(m.3) as f64 - m.2 as f64) / res;
        if idle > 0.0 {
            out[m.0 as usize].push(Wait {
                event: m.1,
                wait: idle,
                cause: EventRef {
                    loc: ms[c].0,
                    event: ms[c].1,
                },
            });
        }
    }
}

/// Per location, (ENTER, LEAVE) of its first call of region class `class`.
fn first_call(trace: &Trace, replay: &Replay, class: &str) -> Vec<Option<(u32, u32)>> {
    let is: Vec<bool> = (trace.defs.regions.iter())
        .map(|r| classify::classify(r).0 == class)
        .collect();
    (0..trace.events.len())
        .map(|l| {
            let ev = &trace.events[l];
            (0..ev.len()).find_map(|i| {
                let hit = ev.kind[i] == EventKind::Enter
                    && is.get(ev.arg[i] as usize).copied().unwrap_or(false);
                let x = replay.locations[l].exitptr(i);
                (hit && x != NONE).then_some((i as u32, x))
            })
        })
        .collect()
}

/// Exclusive time per call path (ticks) of location `l` between the last ENTER or LEAVE
/// before event `from` and the last one before event `to` (`from` = 0: from the first;
/// `to` past the end: to the last), added to `acc` (indexed by call path).
fn runtimes(trace: &Trace, replay: &Replay, l: usize, from: u32, to: u32, acc: &mut [f64]) {
    let ev = &trace.events[l];
    let st = &replay.locations[l];
    let is_el = |i: usize| matches!(ev.kind[i], EventKind::Enter | EventKind::Leave);
    // the last ENTER or LEAVE before event x; 0 and u32::MAX: the first and the last
    let cut = |x: u32| -> Option<usize> {
        match x {
            0 => (0..ev.len()).find(|&i| is_el(i)),
            u32::MAX => (0..ev.len()).rev().find(|&i| is_el(i)),
            x => (0..(x as usize).min(ev.len())).rev().find(|&i| is_el(i)),
        }
    };
    let (Some(b), Some(e)) = (cut(from), cut(to)) else {
        return;
    };
    let mut a = b;
    for i in b + 1..=e {
        if !is_el(i) {
            continue;
        }
        let c = match ev.kind[a] {
            EventKind::Enter => st.cnode(a),
            _ => match st.cnode(a) {
                NO_CNODE => NO_CNODE,
                c => replay.tree.nodes[c as usize].parent.unwrap_or(NO_CNODE),
            },
        };
        if c != NO_CNODE {
            acc[c as usize] += ev.time[i].saturating_sub(ev.time[a]) as f64;
        }
        a = i;
    }
}

/// The waits of every location, sorted by event, and the (ENTER, LEAVE) of its first
/// MPI_Init* and MPI_Finalize.
type Sync = (
    Vec<Vec<Wait>>,
    Vec<Option<(u32, u32)>>,
    Vec<Option<(u32, u32)>>,
);

fn synchpoints(trace: &Trace, replay: &Replay, res: f64) -> Sync {
    let nloc = trace.events.len();
    let mut waits: Vec<Vec<Wait>> = vec![Vec::new(); nloc];
    for (l, w) in waits.iter_mut().enumerate() {
        receive_waits(trace, replay, l, res, w);
        let mut calls: Vec<u32> = w
            .iter()
            .map(|x| replay.locations[l].enterptr(x.event as usize))
            .collect();
        calls.sort_unstable();
        let s = send_waits(trace, replay, l, res, &calls);
        w.extend(s);
    }
    for n in 0..replay.instances.len() {
        collective_waits(trace, replay, n, res, &mut waits);
    }
    let init = first_call(trace, replay, "MPI_INIT");
    let fin = first_call(trace, replay, "MPI_FINALIZE");
    // MPI_Finalize: every process waits for the last to enter
    let latest = (0..nloc)
        .filter_map(|l| fin[l].map(|(e, _)| (trace.events[l].time[e as usize], l)))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    if let Some((tl, _)) = latest {
        for l in 0..nloc {
            if let Some((e, x)) = fin[l] {
                let t = &trace.events[l].time;
                let idle = (tl.min(t[x as usize]) as f64 - t[e as usize] as f64) / res;
                if idle > 0.0 {
                    waits[l].push(Wait {
                        event: x,
                        wait: idle,
                        cause: EventRef::NONE,
                    });
                }
            }
        }
    }
    for w in &mut waits {
        w.sort_by_key(|x| x.event);
    }
    (waits, init, fin)
}

/// The location where the critical path starts (it entered MPI_Finalize last; the lowest
/// among equals) and its MPI_Finalize LEAVE.
fn path_start(trace: &Trace, fin: &[Option<(u32, u32)>]) -> Option<(usize, u32)> {
    (0..fin.len())
        .filter_map(|l| fin[l].map(|(e, x)| (trace.events[l].time[e as usize], l, x)))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, l, x)| (l, x))
}

/// Walk the critical path backwards; returns the profile (seconds, `cnode * nloc + loc`)
/// and the steps.
fn walk(trace: &Trace, replay: &Replay, sync: &Sync, res: f64) -> (Vec<f64>, Vec<(u32, u32, u32)>) {
    let (waits, init, fin) = sync;
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let mut prof = vec![0.0; ncn * nloc];
    let mut steps = Vec::new();
    let Some((mut l, mut end)) = path_start(trace, fin) else {
        return (prof, steps);
    };
    let mut tmap = vec![0.0; ncn];
    let limit: usize = trace.events.iter().map(|e| e.len()).sum::<usize>() + 1;
    while steps.len() < limit {
        let w = &waits[l];
        let k = w.partition_point(|x| x.event < end);
        let sp = (0..k).rev().map(|j| w[j]).find(|x| x.cause.is_some());
        let init_leave = init[l].map(|(_, x)| x).filter(|&x| x < end);
        let from = match (sp, init_leave) {
            (Some(s), Some(x)) if x > s.event => None,
            (Some(s), _) => Some(s),
            (None, _) => None,
        };
        tmap.iter_mut().for_each(|v| *v = 0.0);
        let start = from.map_or(init_leave.unwrap_or(0), |s| s.event);
        runtimes(trace, replay, l, start, end, &mut tmap);
        for (c, &t) in tmap.iter().enumerate() {
            if t != 0.0 {
                prof[c * nloc + l] += t / res;
            }
        }
        steps.push((l as u32, start, end));
        let Some(s) = from else { break };
        let c = replay.locations[l].cnode(s.event as usize);
        if c != NO_CNODE {
            let sub = s.wait.min(tmap[c as usize] / res);
            prof[c as usize * nloc + l] -= sub;
        }
        l = s.cause.loc as usize;
        end = s.cause.event;
    }
    (prof, steps)
}

/// Scalasca's critical-path metrics of an MPI trace (empty when it has no MPI_Finalize).
pub fn root_causes(trace: &Trace, replay: &Replay) -> RootCauses {
    let res = trace.timer_resolution.max(1) as f64;
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let sync = synchpoints(trace, replay, res);
    let (lcp, steps) = walk(trace, replay, &sync, res);
    if steps.is_empty() {
        return RootCauses {
            nloc,
            ..RootCauses::default()
        };
    }
    // local time profile: time less the waits, per call path and location
    let mut lt = vec![0.0; ncn * nloc];
    for l in 0..nloc {
        let mut t = vec![0.0; ncn];
        runtimes(trace, replay, l, 0, u32::MAX, &mut t);
        let mut w = vec![0.0; ncn];
        for x in &sync.0[l] {
            let c = replay.locations[l].cnode(x.event as usize);
            if c != NO_CNODE {
                w[c as usize] += x.wait;
            }
        }
        for c in 0..ncn {
            let tt = t[c] / res;
            lt[c * nloc + l] = tt - tt.min(w[c]);
        }
    }
    let metrics = derived(nloc, ncn, &lcp, &lt);
    RootCauses {
        nloc,
        metrics,
        steps,
    }
}

/// The metrics derived from the critical-path profile `lcp` and the local time profile
/// `lt` (both `cnode * nloc + loc`), as Scalasca defines them.
fn derived(nloc: usize, ncn: usize, lcp: &[f64], lt: &[f64]) -> Vec<(&'static str, Vec<f64>)> {
    let at = |v: &[f64], c: usize, l: usize| v[c * nloc + l];
    let g: Vec<f64> = (0..ncn)
        .map(|c| (0..nloc).map(|l| at(lcp, c, l)).sum())
        .collect();
    let gsum: f64 = g.iter().sum();
    let mut act = vec![0.0; ncn * nloc];
    let mut noncp = vec![0.0; ncn * nloc];
    let mut imb_g = vec![0.0; ncn];
    let mut hr_g = vec![0.0; ncn];
    for l in 0..nloc {
        let ltl: Vec<f64> = (0..ncn).map(|c| at(lt, c, l)).collect();
        let lsum: f64 = ltl.iter().sum();
        let excess: Vec<f64> = (0..ncn).map(|c| (g[c] - ltl[c]).max(0.0)).collect();
        let scale = (gsum - lsum) / excess.iter().sum::<f64>();
        // inter-partition headroom: critical-path time of call paths this location never runs
        let mut hr = g.clone();
        let mut lplen = 0.0;
        for c in 0..ncn {
            if ltl[c] > 0.0 {
                lplen += ltl[c] + (hr[c] - ltl[c].min(hr[c]));
                hr[c] = 0.0;
            }
        }
        let hrf = (gsum - lplen) / hr.iter().sum::<f64>();
        for c in 0..ncn {
            imb_g[c] += excess[c] * scale;
            hr_g[c] += hr[c] * hrf;
            if g[c] > 0.0 {
                act[c * nloc + l] = g[c].min(ltl[c]);
            }
            let nc = ltl[c] - g[c];
            if nc > 0.0 {
                noncp[c * nloc + l] = nc;
            }
        }
    }
    let mut imb = vec![0.0; ncn * nloc];
    let mut inter = vec![0.0; ncn * nloc];
    for c in 0..ncn {
        for l in 0..nloc {
            let v = at(lcp, c, l);
            if v > 0.0 {
                let a = v / g[c] * imb_g[c];
                if a > 0.0 {
                    imb[c * nloc + l] = a;
                }
                let b = v / g[c] * hr_g[c];
                if b > 0.0 {
                    inter[c * nloc + l] = b;
                }
            }
        }
    }
    vec![
        ("critical_path", lcp.to_vec()),
        ("critical_path_activities", act),
        ("critical_imbalance_impact", imb),
        ("inter_partition_imbalance", inter),
        ("non_critical_path_activities", noncp),
    ]
}
