//! The synchronisation points of an MPI run (docs/root-causes.md): the events where a
//! process synchronised with others, each with its wait time, its call's total time, its
//! completion time, the processes it synchronised with and, for a wait, the event that
//! caused it. The waits are the instances of the wait-state rules that declare a `[cause]`
//! (docs/rules.md): a point-to-point rule's stored instances with their partner events, a
//! collective rule's accepted instances with their shape; besides them, the first
//! MPI_Init*/MPI_Finalize of each process, as Scalasca 2.6 registers them, and the thread
//! teams' points (omp.rs; a barrier wait's kinds are the `thread_barrier` rules that took it).

use crate::analysis::{Analysis, CausedColl, CausedWait};
use crate::model::{classify, EventKind, Trace};
use crate::replay::matching::EventRef;
use crate::replay::{Replay, NONE};
use crate::rules::causes::{Cause, Shape};
use crate::rules::{Rule, Trigger};

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
    /// For a wait: the kinds of wait state (indices into `Sync::kinds`) whose rules
    /// booked it (several when rules overlap).
    pub(crate) kinds: Vec<u16>,
}

/// Per location its synchronisation points sorted by event, and the (ENTER, LEAVE) of its
/// first MPI_Init* and MPI_Finalize.
pub(crate) struct Sync {
    pub(crate) sps: Vec<Vec<Sp>>,
    pub(crate) init: Vec<Option<(u32, u32)>>,
    pub(crate) fin: Vec<Option<(u32, u32)>>,
    /// Per location: the location standing for its process.
    pub(crate) proc: Vec<u32>,
    /// The kinds of wait state with delay costs: the rules with a `[cause]`, in rule order.
    pub(crate) kinds: Vec<u16>,
    /// Per kind: the shape of its rule's collective `[cause]` (`None`: a partner event).
    pub(crate) shapes: Vec<Option<Shape>>,
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
        t.get(e as usize),
        if x == NONE {
            t.get(i as usize)
        } else {
            t.get(x as usize)
        },
    ))
}

/// A candidate synchronisation point: (location, stage, point); the first registered stage
/// wins where two name the same event.
pub(crate) type Cand = (u32, u8, Sp);

fn secs(a: u64, b: u64, res: f64) -> f64 {
    (a as f64 - b as f64) / res
}

/// What finding the points needs: per location its process, the timer resolution, the
/// rules and their point-to-point wait states (`Analysis::waits`, or some of them), the kinds
/// of wait state.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) proc: &'a [u32],
    pub(crate) res: f64,
    pub(crate) rules: &'a [Rule],
    pub(crate) waits: &'a [CausedWait],
    pub(crate) kinds: &'a [u16],
}

/// The point-to-point wait states of the rules with a `[cause]` (the instances the rule
/// engine stored, `Analysis::waits`) whose pass is `root`'s, each with its kind (an index
/// into `kinds`), in (location, event) order.
fn caused_waits<'a>(
    ctx: Ctx<'a>,
    root: Trigger,
) -> impl Iterator<Item = (&'a CausedWait, u16)> + 'a {
    let (rules, kinds) = (ctx.rules, ctx.kinds);
    ctx.waits.iter().filter_map(move |w| {
        let k = kinds.iter().position(|&r| r == w.rule)?;
        (rules[w.rule as usize].root == root).then_some((w, k as u16))
    })
}

/// The wait of a point-to-point wait state whose call ran from `enter` to `leave` (ticks) and
/// whose partner's call was entered at `partner`: from the call's ENTER until the partner's
/// ENTER, at most until the call's LEAVE, in seconds (`None` if not positive). The rule
/// decided that the instance is a wait and who caused it; the engine measures it between the
/// two calls, exactly (ticks), as the built-in rules' severities define it.
fn p2p_wait((enter, leave): (u64, u64), partner: u64, res: f64) -> Option<f64> {
    let w = secs(partner.min(leave), enter, res);
    (w > 0.0).then_some(w)
}

/// The waits of receive rules as synchronisation points: the receive that waited (stage 0)
/// and the send it waited for (1).
pub(crate) fn receive_points(trace: &Trace, replay: &Replay, ctx: Ctx, out: &mut Vec<Cand>) {
    let (proc, res) = (ctx.proc, ctx.res);
    for (w, k) in caused_waits(ctx, Trigger::Receive) {
        let (l, i) = (w.loc as usize, w.event);
        let p = EventRef {
            loc: w.partner.0,
            event: w.partner.1,
        };
        let (Some((re, rx)), Some((se, sx))) = (
            call_span(trace, replay, l, i),
            call_span(trace, replay, p.loc as usize, p.event),
        ) else {
            continue;
        };
        let Some(wait) = p2p_wait((re, rx), se, res) else {
            continue;
        };
        out.push((
            l as u32,
            0,
            Sp {
                event: i,
                kind: Kind::Recv,
                wait,
                total: secs(rx, re, res),
                completion: secs(rx, sx, res).max(0.0),
                ranks: Ranks::Some(vec![proc[p.loc as usize]]),
                cause: p,
                kinds: vec![k],
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
                kinds: Vec::new(),
            },
        ));
    }
}

/// The waits of send rules as synchronisation points: the send completion that waited
/// (stage 1) and the receive's posting it waited for (2).
pub(crate) fn send_points(trace: &Trace, replay: &Replay, ctx: Ctx, out: &mut Vec<Cand>) {
    let (proc, res) = (ctx.proc, ctx.res);
    for (w, k) in caused_waits(ctx, Trigger::Send) {
        let (l, c) = (w.loc as usize, w.event);
        let q = EventRef {
            loc: w.partner.0,
            event: w.partner.1,
        };
        let (Some((cen, clv)), Some((qen, qlv))) = (
            call_span(trace, replay, l, c),
            call_span(trace, replay, q.loc as usize, q.event),
        ) else {
            continue;
        };
        let Some(wait) = p2p_wait((cen, clv), qen, res) else {
            continue;
        };
        out.push((
            l as u32,
            1,
            Sp {
                event: c,
                kind: Kind::SendCompletion,
                wait,
                total: secs(clv, cen, res),
                // as Scalasca computes it (never positive)
                completion: if clv > qlv { 0.0 } else { secs(clv, qlv, res) },
                ranks: Ranks::Some(vec![proc[q.loc as usize]]),
                cause: q,
                kinds: vec![k],
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
                kinds: Vec::new(),
            },
        ));
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

/// Which members of a collective of shape `shape` synchronise, and whom they wait for.
fn collective_sync(shape: Shape, root: u32, ms: &[Member]) -> Option<(Vec<bool>, usize)> {
    let part = |m: &Member| m.4 > 0 || m.5 > 0;
    Some(match shape {
        Shape::Barrier => (vec![true; ms.len()], latest(ms, &|_| true)?),
        Shape::OneToAll => {
            let r = root as usize;
            if r >= ms.len() || ms[r].4 == 0 {
                return None;
            }
            let mut s: Vec<bool> = ms.iter().map(|m| m.5 > 0 && m.2 < ms[r].2).collect();
            s[r] = s.iter().any(|&x| x);
            (s, r)
        }
        Shape::AllToOne => {
            let r = root as usize;
            if r >= ms.len() || ms[r].5 == 0 {
                return None;
            }
            let j = latest(ms, &|m| m.4 > 0)?;
            let on = ms[r].2 < ms[j].2;
            let s = (0..ms.len()).map(|k| on && (k == r || k == j)).collect();
            (s, j)
        }
        Shape::AllToAll => {
            let l1 = latest(ms, &|m| part(m))?;
            let ee1 = ms.iter().filter(|m| part(m)).map(|m| m.3).min()?;
            if ee1 > ms[l1].2 {
                (ms.iter().map(part).collect(), l1)
            } else {
                let j = latest(ms, &|m| part(m) && m.4 > 0)?;
                let s = (ms.iter().enumerate())
                    .map(|(k, m)| part(m) && ((m.5 > 0 && m.2 < ms[j].2) || (m.4 > 0 && k == j)))
                    .collect();
                (s, j)
            }
        }
        // thread teams: their points are the OpenMP part's (omp.rs)
        Shape::ThreadBarrier | Shape::ThreadFork => return None,
    })
}

/// The synchronising members of collective instance `n`, a wait state of kind `kind` and
/// shape `shape` (stage 0).
fn collective_points(
    trace: &Trace,
    replay: &Replay,
    (n, shape, kind): (usize, Shape, u16),
    (proc, res): (&[u32], f64),
    out: &mut Vec<Cand>,
) {
    let inst = &replay.instances[n];
    let mut ms: Vec<Member> = Vec::with_capacity(inst.members.len());
    let mut root = None;
    for m in &inst.members {
        let Some(c) = trace.events[m.loc as usize].coll(m.event as usize) else {
            return;
        };
        root.get_or_insert(c.root);
        let t_end = trace.events[m.loc as usize].time.get(m.event as usize);
        let (begin, leave) =
            call_span(trace, replay, m.loc as usize, m.event).unwrap_or((t_end, t_end));
        ms.push((m.loc, m.event, begin, t_end, c.sent, c.received, leave));
    }
    let Some(root) = root else { return };
    if ms.len() < 2 {
        return;
    }
    let Some((sync, c)) = collective_sync(shape, root, &ms) else {
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
                kinds: if idle > 0.0 { vec![kind] } else { Vec::new() },
            },
        ));
    }
}

/// Per location, (ENTER, LEAVE) of its first call of region class `class` (the first ENTER
/// of such a region that has its LEAVE). Locations in parallel, each scanning its kind and
/// region columns alone until a call of the class (MPI_Finalize's is near the end).
pub(crate) fn first_call(trace: &Trace, replay: &Replay, class: &str) -> Vec<Option<(u32, u32)>> {
    use rayon::prelude::*;
    let is: Vec<bool> = (trace.defs.regions.iter())
        .map(|r| classify::classify(r).0 == class)
        .collect();
    if !is.contains(&true) {
        return vec![None; trace.events.len()];
    }
    (0..trace.events.len())
        .into_par_iter()
        .map(|l| {
            let ev = &trace.events[l];
            let (kind, arg) = (&ev.kind[..], &ev.arg[..]);
            let st = &replay.locations[l];
            (kind.iter().zip(arg).enumerate()).find_map(|(i, (&k, &r))| {
                if k != EventKind::Enter || !is.get(r as usize).copied().unwrap_or(false) {
                    return None;
                }
                let x = st.exitptr(i);
                (x != NONE).then_some((i as u32, x))
            })
        })
        .collect()
}

/// MPI_Init* and MPI_Finalize synchronise every process (stage 0): the wait before the last
/// process entered (none at MPI_Init, as in Scalasca), the completion after the first left.
pub(crate) fn world_points(
    trace: &Trace,
    calls: &[Option<(u32, u32)>],
    kind: Kind,
    res: f64,
    out: &mut Vec<Cand>,
) {
    let t = |l: usize, i: u32| trace.events[l].time.get(i as usize);
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
                kinds: Vec::new(),
            },
        ));
    }
}

/// The kinds of wait state with delay costs (the rules with a `[cause]`, in rule order) and
/// per kind the shape of its collective `[cause]` (`None`: a partner event).
pub(crate) fn kinds_of(rules: &[Rule]) -> (Vec<u16>, Vec<Option<Shape>>) {
    let kinds: Vec<u16> = (0..rules.len() as u16)
        .filter(|&k| rules[k as usize].cause.is_some())
        .collect();
    let shapes = (kinds.iter())
        .map(|&k| match &rules[k as usize].cause {
            Some(Cause::Collective(s)) => Some(*s),
            _ => None,
        })
        .collect();
    (kinds, shapes)
}

/// The points of collective instance `c.instance` (of the replay's) as a wait state of
/// `c.rule` if its `[cause]` is collective and not a thread barrier: `Err` with the rule's
/// kind when it is a thread barrier's (the OpenMP part takes those).
pub(crate) fn coll_candidates(
    trace: &Trace,
    replay: &Replay,
    c: &CausedColl,
    ctx: Ctx,
    out: &mut Vec<Cand>,
) -> Result<(), u16> {
    let Some(Cause::Collective(shape)) = &ctx.rules[c.rule as usize].cause else {
        return Ok(());
    };
    let Some(k) = ctx.kinds.iter().position(|&r| r == c.rule) else {
        return Ok(());
    };
    if *shape == Shape::ThreadBarrier {
        return Err(k as u16);
    }
    let what = (c.instance as usize, *shape, k as u16);
    collective_points(trace, replay, what, (ctx.proc, ctx.res), out);
    Ok(())
}

/// The candidates sorted by (location, event, stage) (stable: among equals, the order
/// registered), per location, each event once: the first registered stage wins; rules booking
/// the same wait share it.
pub(crate) fn merge(nloc: usize, mut cands: Vec<Cand>) -> Vec<Vec<Sp>> {
    cands.sort_by_key(|c| (c.0, c.2.event, c.1));
    let mut sps: Vec<Vec<Sp>> = vec![Vec::new(); nloc];
    for (l, _, sp) in cands {
        let v = &mut sps[l as usize];
        if let Some(x) = v.last_mut().filter(|x| x.event == sp.event) {
            if x.kind == sp.kind {
                for k in sp.kinds {
                    if !x.kinds.contains(&k) {
                        x.kinds.push(k);
                    }
                }
            }
            continue;
        }
        v.push(sp);
    }
    sps
}

/// Per location the location standing for its process (its thread team's master).
pub(crate) fn processes(trace: &Trace, replay: &Replay) -> Vec<u32> {
    (0..trace.events.len())
        .map(|l| replay.omp.master.get(l).copied().unwrap_or(l as u32))
        .collect()
}

/// Every synchronisation point of the run: the waits of the rules with a `[cause]` in
/// `analysis`, the partners they waited for, the members of the collective instances those
/// rules accepted, MPI_Init* and MPI_Finalize.
pub(crate) fn synchpoints(trace: &Trace, replay: &Replay, res: f64, analysis: &Analysis) -> Sync {
    let nloc = trace.events.len();
    let proc = processes(trace, replay);
    let rules = &analysis.rules.rules;
    let (kinds, shapes) = kinds_of(rules);
    let mut cands: Vec<Cand> = Vec::new();
    let init = first_call(trace, replay, "MPI_INIT");
    let fin = first_call(trace, replay, "MPI_FINALIZE");
    world_points(trace, &init, Kind::Init, res, &mut cands);
    world_points(trace, &fin, Kind::Finalize, res, &mut cands);
    let ctx = Ctx {
        proc: &proc,
        res,
        rules,
        waits: &analysis.waits,
        kinds: &kinds,
    };
    // per thread barrier (an index into the replay's), the kinds of the rules that took it
    let mut bar_kinds: Vec<Vec<u16>> = vec![Vec::new(); replay.omp.barriers.len()];
    for c in &analysis.colls {
        if let Err(k) = coll_candidates(trace, replay, c, ctx, &mut cands) {
            if let Some(v) = bar_kinds.get_mut(c.instance as usize) {
                v.push(k);
            }
        }
    }
    receive_points(trace, replay, ctx, &mut cands);
    send_points(trace, replay, ctx, &mut cands);
    super::omp::points(trace, replay, res, &bar_kinds, &mut cands);
    let sps = merge(nloc, cands);
    let omp = super::omp::info(trace, replay, &sps);
    Sync {
        sps,
        init,
        fin,
        proc,
        shapes,
        kinds,
        omp,
    }
}
