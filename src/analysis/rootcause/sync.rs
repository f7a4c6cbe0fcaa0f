//! The synchronisation points of an MPI run (docs/root-causes.md): the events where a
//! process synchronised with others, each with its wait time, its call's total time, its
//! completion time, the processes it synchronised with and, for a wait, the event that
//! caused it. Found from the replay's matched messages, collective instances and the first
//! MPI_Init*/MPI_Finalize of each process, as Scalasca 2.6 registers them.

use crate::model::{classify, collective_op_name, EventKind, Trace};
use crate::replay::matching::EventRef;
use crate::replay::{Replay, NONE};

/// What kind of synchronisation an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A receive that waited for its send (a late sender).
    Recv,
    /// The send a waiting receive waited for.
    Send,
    /// The completion of a send that waited for its receive (a late receiver).
    SendCompletion,
    /// The posting of the receive a waiting send waited for.
    RecvRequest,
    /// The end of a collective operation of the given shape.
    Coll(Shape),
    Init,
    Finalize,
    /// A thread's ENTER of a parallel region (its fork).
    OmpFork,
    /// A thread's LEAVE of a thread barrier.
    OmpBarrier,
}

/// The dependency shape of a collective operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Barrier,
    AllToAll,
    OneToAll,
    AllToOne,
}

/// The processes a synchronisation point synchronised with.
#[derive(Clone, Debug)]
pub(crate) enum Ranks {
    All,
    Some(Vec<u32>),
}

impl Ranks {
    pub(crate) fn contains(&self, p: u32) -> bool {
        match self {
            Ranks::All => true,
            Ranks::Some(v) => v.contains(&p),
        }
    }
}

/// One synchronisation point of a location; times in seconds.
#[derive(Clone, Debug)]
pub(crate) struct Sp {
    pub(crate) event: u32,
    pub(crate) kind: Kind,
    pub(crate) wait: f64,
    pub(crate) total: f64,
    pub(crate) completion: f64,
    pub(crate) ranks: Ranks,
    /// For a wait: the event that caused it (else `EventRef::NONE`).
    pub(crate) cause: EventRef,
}

/// Per location its synchronisation points sorted by event, and the (ENTER, LEAVE) of its
/// first MPI_Init* and MPI_Finalize.
pub(crate) struct Sync {
    pub(crate) sps: Vec<Vec<Sp>>,
    pub(crate) init: Vec<Option<(u32, u32)>>,
    pub(crate) fin: Vec<Option<(u32, u32)>>,
    /// Per location: the location standing for its process.
    pub(crate) proc: Vec<u32>,
    /// The thread teams' part (`None` without OpenMP teams).
    pub(crate) omp: Option<super::omp::OmpInfo>,
}

impl Sync {
    /// The index of location `l`'s last synchronisation point before event `before` that
    /// synchronised with process `p`.
    pub(crate) fn prev(&self, l: usize, before: u32, p: u32) -> Option<usize> {
        let s = &self.sps[l];
        let k = s.partition_point(|x| x.event < before);
        (0..k).rev().find(|&j| s[j].ranks.contains(p))
    }

    /// The index of the synchronisation point at event `e` of location `l`.
    pub(crate) fn at(&self, l: usize, e: u32) -> Option<usize> {
        let s = &self.sps[l];
        let k = s.partition_point(|x| x.event < e);
        (k < s.len() && s[k].event == e).then_some(k)
    }
}

/// (ENTER, LEAVE) times of the call enclosing event `i` of location `l`.
pub(crate) fn call_span(trace: &Trace, replay: &Replay, l: usize, i: u32) -> Option<(u64, u64)> {
    let st = &replay.locations[l];
    if i as usize >= st.len() {
        return None;
    }
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

/// The region class and mode of the call enclosing event `i` of location `l`.
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

/// A candidate synchronisation point: (location, stage, point); the first registered stage
/// wins where two name the same event.
pub(super) type Cand = (u32, u8, Sp);

fn secs(a: u64, b: u64, res: f64) -> f64 {
    (a as f64 - b as f64) / res
}

/// A late sender: (receive event, send, wait, call enter, receive call leave).
type Ls = (u32, EventRef, f64, u32, u64);

/// The late senders of location `l`: one per call, the largest in a call completing
/// several receives.
fn late_senders(trace: &Trace, replay: &Replay, l: usize, res: f64) -> Vec<Ls> {
    let ev = &trace.events[l];
    let links = &replay.msg_links[l];
    let mut out: Vec<Ls> = Vec::new();
    let mut multi: Option<Ls> = None;
    for i in 0..ev.len() {
        if !matches!(ev.kind[i], EventKind::MpiRecv | EventKind::MpiIrecv) {
            continue;
        }
        let Some(p) = links.partner.get(ev.arg[i] as usize).copied() else {
            continue;
        };
        let (class, _) = call_class(trace, replay, l, i as u32);
        if !p.is_some() || class.starts_with("P2P_TEST") {
            continue;
        }
        let (Some((re, rx)), Some((se, _))) = (
            call_span(trace, replay, l, i as u32),
            call_span(trace, replay, p.loc as usize, p.event),
        ) else {
            continue;
        };
        let idle = secs(se.min(rx), re, res);
        if idle <= 0.0 {
            continue;
        }
        let e = replay.locations[l].enterptr(i);
        let x: Ls = (i as u32, p, idle, e, rx);
        if class != "P2P_WAIT_MULTI" {
            out.push(x);
            continue;
        }
        match multi {
            Some(m) if m.3 == e => {
                if idle > m.2 {
                    multi = Some(x);
                }
            }
            Some(m) => {
                out.push(m);
                multi = Some(x);
            }
            None => multi = Some(x),
        }
    }
    out.extend(multi);
    out
}

/// The late senders as synchronisation points: the receive (stage 0) and its send (1).
fn receive_points(trace: &Trace, replay: &Replay, proc: &[u32], res: f64, out: &mut Vec<Cand>) {
    for l in 0..trace.events.len() {
        for (i, p, idle, re_call, rx) in late_senders(trace, replay, l, res) {
            let Some((se, sx)) = call_span(trace, replay, p.loc as usize, p.event) else {
                continue;
            };
            let re = trace.events[l].time[re_call as usize];
            out.push((
                l as u32,
                0,
                Sp {
                    event: i,
                    kind: Kind::Recv,
                    wait: idle,
                    total: secs(rx, re, res),
                    completion: secs(rx, sx, res).max(0.0),
                    ranks: Ranks::Some(vec![proc[p.loc as usize]]),
                    cause: p,
                },
            ));
            out.push((
                p.loc,
                1,
                Sp {
                    event: p.event,
                    kind: Kind::Send,
                    wait: 0.0,
                    total: secs(sx, se, res),
                    completion: secs(sx, rx, res).max(0.0),
                    ranks: Ranks::Some(vec![proc[l]]),
                    cause: EventRef::NONE,
                },
            ));
        }
    }
}

/// A late receiver: (send completion, receive request, wait, completion call).
type Lr = (u32, EventRef, f64, u32);

/// The late receivers of location `l`: one per call, the largest in a call completing
/// several sends; a multi-completion call that also completed a late sender has none.
fn late_receivers(trace: &Trace, replay: &Replay, l: usize, res: f64, ls_calls: &[u32]) -> Vec<Lr> {
    let ev = &trace.events[l];
    let links = &replay.msg_links[l];
    let mut best: Vec<Lr> = Vec::new();
    for i in 0..ev.len() {
        let kind = ev.kind[i];
        if !matches!(kind, EventKind::MpiSend | EventKind::MpiIsend) {
            continue;
        }
        let k = ev.arg[i] as usize;
        let Some(p) = links.partner.get(k).copied() else {
            continue;
        };
        let c = match kind {
            EventKind::MpiSend => i as u32,
            _ => links.request_event(k),
        };
        if !p.is_some() || links.cancelled(k) || c == NONE {
            continue;
        }
        let (class, mode) = call_class(trace, replay, l, c);
        let ce = replay.locations[l].enterptr(c as usize);
        let ok = (class == "P2P_SEND" && (mode == "STANDARD" || mode == "SYNCHRONOUS"))
            || class == "P2P_WAIT_SINGLE"
            || (class == "P2P_WAIT_MULTI" && ls_calls.binary_search(&ce).is_err());
        let (rl, rev) = (p.loc as usize, &trace.events[p.loc as usize]);
        let q = match rev.kind[p.event as usize] {
            EventKind::MpiRecv => p.event,
            _ => replay.msg_links[rl].request_event(rev.arg[p.event as usize] as usize),
        };
        if !ok || q == NONE {
            continue;
        }
        let (Some((cen, clv)), Some((qen, _))) = (
            call_span(trace, replay, l, c),
            call_span(trace, replay, rl, q),
        ) else {
            continue;
        };
        let idle = if clv <= qen { 0.0 } else { secs(qen, cen, res) };
        if idle <= 0.0 {
            continue;
        }
        let x: Lr = (
            c,
            EventRef {
                loc: p.loc,
                event: q,
            },
            idle,
            ce,
        );
        match best.iter_mut().find(|b| b.3 == ce) {
            Some(b) if class == "P2P_WAIT_MULTI" => {
                if idle > b.2 {
                    *b = x;
                }
            }
            _ => best.push(x),
        }
    }
    best
}

/// The late receivers as synchronisation points: the send completion (stage 1) and the
/// receive's posting (2).
fn send_points(trace: &Trace, replay: &Replay, proc: &[u32], res: f64, out: &mut Vec<Cand>) {
    for l in 0..trace.events.len() {
        let mut ls_calls: Vec<u32> = (out.iter())
            .filter(|c| c.0 == l as u32 && c.2.kind == Kind::Recv)
            .map(|c| replay.locations[l].enterptr(c.2.event as usize))
            .collect();
        ls_calls.sort_unstable();
        for (c, q, idle, _) in late_receivers(trace, replay, l, res, &ls_calls) {
            let (Some((cen, clv)), Some((qen, qlv))) = (
                call_span(trace, replay, l, c),
                call_span(trace, replay, q.loc as usize, q.event),
            ) else {
                continue;
            };
            out.push((
                l as u32,
                1,
                Sp {
                    event: c,
                    kind: Kind::SendCompletion,
                    wait: idle,
                    total: secs(clv, cen, res),
                    // as Scalasca computes it (never positive)
                    completion: if clv > qlv { 0.0 } else { secs(clv, qlv, res) },
                    ranks: Ranks::Some(vec![proc[q.loc as usize]]),
                    cause: q,
                },
            ));
            out.push((
                q.loc,
                2,
                Sp {
                    event: q.event,
                    kind: Kind::RecvRequest,
                    wait: 0.0,
                    total: secs(qlv, qen, res),
                    completion: secs(qlv, clv, res).max(0.0),
                    ranks: Ranks::Some(vec![proc[l]]),
                    cause: EventRef::NONE,
                },
            ));
        }
    }
}

/// One member of a collective instance: (location, COLL_END event, begin, end, sent,
/// received, leave).
type Member = (u32, u32, u64, u64, u64, u64, u64);

/// The member entered last among those `pick` selects (the lowest rank among equals).
fn latest(ms: &[Member], pick: &dyn Fn(&Member) -> bool) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (k, m) in ms.iter().enumerate() {
        if pick(m) && best.is_none_or(|b| m.2 > ms[b].2) {
            best = Some(k);
        }
    }
    best
}

/// Which members of a collective synchronise, whom they wait for, and the shape.
fn collective_sync(op: u8, root: u32, ms: &[Member]) -> Option<(Vec<bool>, usize, Shape)> {
    let part = |m: &Member| m.4 > 0 || m.5 > 0;
    Some(match collective_op_name(op) {
        "BARRIER" => (vec![true; ms.len()], latest(ms, &|_| true)?, Shape::Barrier),
        "BCAST" | "SCATTER" | "SCATTERV" => {
            let r = root as usize;
            if r >= ms.len() || ms[r].4 == 0 {
                return None;
            }
            let mut s: Vec<bool> = ms.iter().map(|m| m.5 > 0 && m.2 < ms[r].2).collect();
            s[r] = s.iter().any(|&x| x);
            (s, r, Shape::OneToAll)
        }
        "REDUCE" | "GATHER" | "GATHERV" => {
            let r = root as usize;
            if r >= ms.len() || ms[r].5 == 0 {
                return None;
            }
            let j = latest(ms, &|m| m.4 > 0)?;
            let on = ms[r].2 < ms[j].2;
            let s = (0..ms.len()).map(|k| on && (k == r || k == j)).collect();
            (s, j, Shape::AllToOne)
        }
        "ALLGATHER"
        | "ALLGATHERV"
        | "ALLREDUCE"
        | "ALLTOALL"
        | "REDUCE_SCATTER"
        | "REDUCE_SCATTER_BLOCK" => {
            let l1 = latest(ms, &|m| part(m))?;
            let ee1 = ms.iter().filter(|m| part(m)).map(|m| m.3).min()?;
            if ee1 > ms[l1].2 {
                (ms.iter().map(part).collect(), l1, Shape::AllToAll)
            } else {
                let j = latest(ms, &|m| part(m) && m.4 > 0)?;
                let s = (ms.iter().enumerate())
                    .map(|(k, m)| part(m) && ((m.5 > 0 && m.2 < ms[j].2) || (m.4 > 0 && k == j)))
                    .collect();
                (s, j, Shape::AllToAll)
            }
        }
        _ => return None,
    })
}

/// The synchronising members of collective instance `n` (stage 0).
fn collective_points(
    trace: &Trace,
    replay: &Replay,
    n: usize,
    ctx: (&[u32], f64),
    out: &mut Vec<Cand>,
) {
    let (proc, res) = ctx;
    let inst = &replay.instances[n];
    let mut ms: Vec<Member> = Vec::with_capacity(inst.members.len());
    let mut op_root = None;
    for m in &inst.members {
        let Some(c) = trace.events[m.loc as usize].coll(m.event as usize) else {
            return;
        };
        op_root.get_or_insert((c.op, c.root));
        let t_end = trace.events[m.loc as usize].time[m.event as usize];
        let (begin, leave) =
            call_span(trace, replay, m.loc as usize, m.event).unwrap_or((t_end, t_end));
        ms.push((m.loc, m.event, begin, t_end, c.sent, c.received, leave));
    }
    let Some((op, root)) = op_root else { return };
    if ms.len() < 2 {
        return;
    }
    let Some((sync, c, shape)) = collective_sync(op, root, &ms) else {
        return;
    };
    let lb = ms[c].2;
    // the earliest end of the members that synchronise (1-to-N: of those waiting for the root)
    let ee = (0..ms.len())
        .filter(|&k| sync[k] && !(shape == Shape::OneToAll && k == c))
        .map(|k| ms[k].3)
        .min()
        .unwrap_or(u64::MAX);
    let ranks: Vec<u32> = (0..ms.len())
        .filter(|&k| sync[k])
        .map(|k| proc[ms[k].0 as usize])
        .collect();
    for (k, m) in ms.iter().enumerate() {
        if !sync[k] {
            continue;
        }
        let begin_l = lb.min(m.3);
        let idle = secs(begin_l, m.2, res).max(0.0);
        let mine = match shape {
            Shape::OneToAll if k != c => Ranks::Some(vec![proc[ms[c].0 as usize]]),
            Shape::AllToOne => Ranks::Some(vec![
                proc[ms[if k == c { root as usize } else { c }].0 as usize],
            ]),
            _ => Ranks::Some(ranks.clone()),
        };
        out.push((
            m.0,
            0,
            Sp {
                event: m.1,
                kind: Kind::Coll(shape),
                wait: idle,
                total: secs(m.6, m.2, res),
                completion: secs(m.3, ee.max(begin_l), res).max(0.0),
                ranks: mine,
                cause: if idle > 0.0 {
                    EventRef {
                        loc: ms[c].0,
                        event: ms[c].1,
                    }
                } else {
                    EventRef::NONE
                },
            },
        ));
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

/// MPI_Init* and MPI_Finalize synchronise every process (stage 0): the wait before the last
/// process entered (none at MPI_Init, as in Scalasca), the completion after the first left.
fn world_points(
    trace: &Trace,
    calls: &[Option<(u32, u32)>],
    kind: Kind,
    res: f64,
    out: &mut Vec<Cand>,
) {
    let t = |l: usize, i: u32| trace.events[l].time[i as usize];
    let lt = (0..calls.len())
        .filter_map(|l| calls[l].map(|(e, _)| t(l, e)))
        .max();
    let ee = (0..calls.len())
        .filter_map(|l| calls[l].map(|(_, x)| t(l, x)))
        .min();
    let (Some(lt), Some(ee)) = (lt, ee) else {
        return;
    };
    for (l, c) in calls.iter().enumerate() {
        let Some((e, x)) = *c else { continue };
        let (te, tx) = (t(l, e), t(l, x));
        let lb = lt.min(tx);
        let wait = if kind == Kind::Finalize {
            secs(lb, te, res).max(0.0)
        } else {
            0.0
        };
        out.push((
            l as u32,
            0,
            Sp {
                event: x,
                kind,
                wait,
                total: secs(tx, te, res),
                completion: secs(tx, ee.max(lb), res).max(0.0),
                ranks: Ranks::All,
                cause: EventRef::NONE,
            },
        ));
    }
}

/// Every synchronisation point of the run.
pub(crate) fn synchpoints(trace: &Trace, replay: &Replay, res: f64) -> Sync {
    let nloc = trace.events.len();
    let proc: Vec<u32> = (0..nloc)
        .map(|l| replay.omp.master.get(l).copied().unwrap_or(l as u32))
        .collect();
    let mut cands: Vec<Cand> = Vec::new();
    let init = first_call(trace, replay, "MPI_INIT");
    let fin = first_call(trace, replay, "MPI_FINALIZE");
    world_points(trace, &init, Kind::Init, res, &mut cands);
    world_points(trace, &fin, Kind::Finalize, res, &mut cands);
    for n in 0..replay.instances.len() {
        collective_points(trace, replay, n, (&proc, res), &mut cands);
    }
    receive_points(trace, replay, &proc, res, &mut cands);
    send_points(trace, replay, &proc, res, &mut cands);
    super::omp::points(trace, replay, res, &mut cands);
    cands.sort_by_key(|c| (c.0, c.2.event, c.1));
    let mut sps: Vec<Vec<Sp>> = vec![Vec::new(); nloc];
    for (l, _, sp) in cands {
        let v = &mut sps[l as usize];
        if v.last().is_some_and(|x| x.event == sp.event) {
            continue;
        }
        v.push(sp);
    }
    let omp = super::omp::info(trace, replay, &sps);
    Sync {
        sps,
        init,
        fin,
        proc,
        omp,
    }
}
