//! The root causes (issue 24) over a `Transport`, equal to the single-process ones
//! (`analysis::rootcause::root_causes`) to the bit (docs/distributed.md, "The distributed
//! extras"); each synchronisation point, critical-path step and delay computation on the
//! process owning its location.
//!
//! The caused wait states stay on the processes whose share passes found them (`Caused`,
//! keyed by their place in the single-process order). Each process runs the single-process
//! generators (`sync::world_points`, `coll_candidates`, `receive_points`, `send_points`) on
//! its ghosted share (`Ghosted`, with the ghosts of `needs`): the world calls of every
//! location (their first calls are ghosts), the collective instances whose first member it
//! holds, the waits of the locations it holds (with their partner's ghost). A generator may
//! register a point on another process's location (the send a receive waited for, a
//! collective's members): every point, renumbered to the owner's events, goes to its
//! location's owner (one `all_to_all`) with its generator and its place in the
//! single-process order, and the owner merges them in that order (`sync::merge`). The
//! critical path is walked back by the owner of each step's location (with thread teams,
//! `team_walk`); the delay costs are replayed backwards by the owners of the causing
//! locations (`backward`); rank 0 gathers the values.
//!
//! OpenMP and hybrid traces: the threads of a traced process are held by one process, so
//! each thread team's points (`omp::points`, with the barrier kinds its passes found,
//! `Caused::bars`), its time maps (`omp::info_of`), its barrier and idle-thread delays
//! (`costs::omp_tasks`) are local work; only the MPI points cross processes, as above.

mod backward;
mod team_walk;

use super::ghost::{Ghosted, Needs};
use super::wire::{Reader, Writer};
use super::Transport;
use crate::analysis::rootcause::costs::Costs;
use crate::analysis::rootcause::omp;
use crate::analysis::rootcause::sync::{self, Cand, Ctx, Kind, Ranks, Sp, Sync};
use crate::analysis::rootcause::{self as rc, RootCauses};
use crate::analysis::{CausedColl, CausedWait, ShareFound};
use crate::replay::matching::EventRef;
use crate::rules::causes::Shape;
use crate::rules::RuleSet;
use std::collections::BTreeMap;

/// The ghosts the synchronisation points read: partners (with their request event),
/// collective members, every rank's first MPI_Init and MPI_Finalize.
pub fn needs() -> Needs {
    super::critical_path::needs()
}

/// The caused wait states a process holds after its share passes (in the owners'
/// numbering), each with a key that orders them as the single process lists them
/// (`Analysis::waits`, `Analysis::colls`): the point-to-point waits its location passes
/// found, the collective instances whose first member it holds; and per thread barrier of
/// its processes (`replay.omp.barriers` of its share) the rules with a thread `[cause]` that
/// accepted it, in rule order.
#[derive(Clone, Debug, Default)]
pub struct Caused {
    pub waits: Vec<([u32; 3], CausedWait)>,
    pub colls: Vec<([u32; 2], CausedColl)>,
    pub bars: Vec<Vec<u16>>,
}

impl Caused {
    /// What `analysis::share_passes` found on this process: a wait keyed by (pass,
    /// location, place in its list), a collective by (instance, place), as
    /// `analysis::assemble` lists them.
    pub fn of(found: &ShareFound) -> Caused {
        let mut c = Caused::default();
        for (p, locs) in found.passes.iter().enumerate() {
            for (l, _, waits, _) in locs {
                let keyed = waits.iter().enumerate();
                c.waits
                    .extend(keyed.map(|(i, w)| ([p as u32, *l, i as u32], *w)));
            }
        }
        for (n, _, _, colls) in &found.collectives {
            let keyed = colls.iter().enumerate();
            c.colls.extend(keyed.map(|(i, x)| ([*n, i as u32], *x)));
        }
        c.bars = (found.threads[1].iter())
            .map(|(_, _, rules)| {
                let mut r = rules.clone();
                r.sort_unstable();
                r
            })
            .collect();
        c
    }
}

/// A candidate's generator (0: MPI_Init, 1: MPI_Finalize, 2: a collective, 3: a receive's
/// wait, 4: a send's) and its wait state's key in the single-process order.
type Key = [u32; 4];

/// The caused point-to-point waits of the locations held, keyed by their place in the
/// single-process order.
type Routed = Vec<([u32; 3], CausedWait)>;

/// The waits of `caused` on the owners of their locations (one `all_to_all`: 32 bytes a
/// wait booked at another process's location, and 4 bytes saying whether the process holds
/// thread teams), sorted by key; and whether any process holds thread teams.
fn route(
    g: &Ghosted,
    held: &[bool],
    caused: &Caused,
    t: &dyn Transport,
) -> Result<(Routed, bool), String> {
    let mut mine = Vec::new();
    let mut to = vec![Writer::default(); t.size()];
    let teams = !g.replay.omp.teams.is_empty();
    to.iter_mut().for_each(|w| w.u32(teams as u32));
    let mut any = false;
    for &(k, w) in &caused.waits {
        match (held.get(w.loc as usize), g.owner.get(w.loc as usize)) {
            (Some(true), _) => mine.push((k, w)),
            (_, Some(&o)) => {
                let x = [k[0], k[1], k[2], w.rule as u32, w.loc, w.event];
                x.into_iter()
                    .chain([w.partner.0, w.partner.1])
                    .for_each(|v| to[o as usize].u32(v));
            }
            _ => return Err(format!("a wait at location {} of {}", w.loc, held.len())),
        }
    }
    for (rank, b) in t
        .all_to_all(to.into_iter().map(|w| w.0).collect())?
        .iter()
        .enumerate()
    {
        let mut r = Reader::new(b);
        any |= r.u32().map_err(|e| format!("rank {rank}: {e}"))? == 1;
        let read = |r: &mut Reader| -> Result<_, String> {
            let k = [r.u32()?, r.u32()?, r.u32()?];
            let (rule, loc, event) = (r.u32()? as u16, r.u32()?, r.u32()?);
            let partner = (r.u32()?, r.u32()?);
            Ok((
                k,
                CausedWait {
                    rule,
                    loc,
                    event,
                    partner,
                },
            ))
        };
        while !r.is_done() {
            mine.push(read(&mut r).map_err(|e| format!("rank {rank}: {e}"))?);
        }
    }
    mine.sort_by_key(|x| x.0);
    Ok((mine, any))
}

/// The synchronisation points of the held locations of `g` (every other location empty), in
/// the owner's numbering, from the caused wait states `caused` of the rules `rules` (the
/// thread teams' points among them: their members are all held here); and whether the job
/// has thread teams (the single process's `Sync::omp`).
pub(crate) fn synchpoints(
    g: &Ghosted,
    rules: &RuleSet,
    caused: &Caused,
    t: &dyn Transport,
) -> Result<(Vec<Vec<Sp>>, bool), String> {
    let me = t.rank() as u32;
    let held: Vec<bool> = g.owner.iter().map(|&o| o == me).collect();
    let (waits, teams) = route(g, &held, caused, t)?;
    let mut keyed = world(g, &held);
    let (trace, replay) = (&g.trace, &g.replay);
    let proc = sync::processes(trace, replay);
    let (kinds, _) = sync::kinds_of(&rules.rules);
    let ctx = Ctx {
        proc: &proc,
        res: trace.timer_resolution.max(1) as f64,
        rules: &rules.rules,
        waits: &[],
        kinds: &kinds,
    };
    let local: BTreeMap<u32, u32> = (g.instance_of.iter().enumerate())
        .map(|(i, &n)| (n, i as u32))
        .collect();
    let mut out = Vec::new();
    for &([a, b], c) in &caused.colls {
        let Some(&n) = local.get(&c.instance) else {
            continue;
        };
        let first = replay.instances[n as usize].members.first();
        if !first.is_some_and(|m| held[m.loc as usize]) {
            continue;
        }
        let c = CausedColl { instance: n, ..c };
        // `caused.colls` are MPI collectives (the thread barriers' kinds are `caused.bars`)
        let _ = sync::coll_candidates(trace, replay, &c, ctx, &mut out);
        keyed.extend(out.drain(..).map(|x| ([2, a, b, 0], x)));
    }
    for ([a, b, c], w) in &waits {
        if held.get(w.loc as usize) != Some(&true) {
            continue;
        }
        let (pl, pe) = w.partner;
        let at = g.orig.get(pl as usize).map(|o| match o.is_empty() {
            true => Ok(pe),
            false => o.binary_search(&pe).map(|i| i as u32),
        });
        let Some(Ok(pe)) = at else {
            return Err(format!(
                "rank {me}: the partner (location {pl}, event {pe}) of a wait is no ghost here"
            ));
        };
        let one = [CausedWait {
            partner: (pl, pe),
            ..*w
        }];
        let ctx = Ctx { waits: &one, ..ctx };
        sync::receive_points(trace, replay, ctx, &mut out);
        keyed.extend(out.drain(..).map(|x| ([3, *a, *b, *c], x)));
        sync::send_points(trace, replay, ctx, &mut out);
        keyed.extend(out.drain(..).map(|x| ([4, *a, *b, *c], x)));
    }
    // the thread teams' points, registered last as the single process does
    let bar_kinds: Vec<Vec<u16>> = (caused.bars.iter().enumerate())
        .map(|(n, rules)| {
            let accepted = |&rule: &u16| {
                let c = CausedColl {
                    instance: n as u32,
                    rule,
                };
                sync::coll_candidates(trace, replay, &c, ctx, &mut Vec::new()).err()
            };
            rules.iter().filter_map(accepted).collect()
        })
        .collect();
    omp::points(trace, replay, ctx.res, &bar_kinds, &mut out);
    keyed.extend(out.drain(..).map(|x| ([5, 0, 0, 0], x)));
    let mut to = vec![Writer::default(); t.size()];
    for (key, (l, stage, mut sp)) in keyed {
        sp.event = g.original(l, sp.event);
        if sp.cause.is_some() {
            sp.cause.event = g.original(sp.cause.loc, sp.cause.event);
        }
        put(&mut to[g.owner[l as usize] as usize], key, &(l, stage, sp));
    }
    let got = t.all_to_all(to.into_iter().map(|w| w.0).collect())?;
    let mut mine: Vec<(Key, Cand)> = Vec::new();
    for (rank, bytes) in got.iter().enumerate() {
        let mut r = Reader::new(bytes);
        while !r.is_done() {
            mine.push(get(&mut r).map_err(|e| format!("rank {rank}: {e}"))?);
        }
    }
    mine.sort_by_key(|(k, c)| (c.0, c.2.event, c.1, *k));
    let sps = sync::merge(held.len(), mine.into_iter().map(|x| x.1).collect());
    Ok((sps, teams))
}

/// The MPI_Init and MPI_Finalize points of the held locations: every location's first call
/// of each is here (a ghost where not held), as the single process sees them.
fn world(g: &Ghosted, held: &[bool]) -> Vec<(Key, Cand)> {
    let res = g.trace.timer_resolution.max(1) as f64;
    let mut keyed = Vec::new();
    for (n, class, kind) in [
        (0, "MPI_INIT", Kind::Init),
        (1, "MPI_FINALIZE", Kind::Finalize),
    ] {
        let calls = sync::first_call(&g.trace, &g.replay, class);
        let mut out = Vec::new();
        sync::world_points(&g.trace, &calls, kind, res, &mut out);
        let mine = out.into_iter().filter(|c| held[c.0 as usize]);
        keyed.extend(mine.map(|c| ([n, 0, 0, 0], c)));
    }
    keyed
}

const SHAPES: [Shape; 6] = [
    Shape::Barrier,
    Shape::AllToAll,
    Shape::OneToAll,
    Shape::AllToOne,
    Shape::ThreadBarrier,
    Shape::ThreadFork,
];

/// A point's kind as a number (a collective: 16 + its shape's index).
fn kind_code(k: Kind) -> u32 {
    match k {
        Kind::Recv => 0,
        Kind::Send => 1,
        Kind::SendCompletion => 2,
        Kind::RecvRequest => 3,
        Kind::Init => 4,
        Kind::Finalize => 5,
        Kind::OmpFork => 6,
        Kind::OmpBarrier => 7,
        Kind::Coll(s) => 16 + SHAPES.iter().position(|&x| x == s).unwrap_or(0) as u32,
    }
}

fn kind_of(c: u32) -> Result<Kind, String> {
    const PLAIN: [Kind; 8] = [
        Kind::Recv,
        Kind::Send,
        Kind::SendCompletion,
        Kind::RecvRequest,
        Kind::Init,
        Kind::Finalize,
        Kind::OmpFork,
        Kind::OmpBarrier,
    ];
    let k = match c {
        0..8 => PLAIN.get(c as usize).copied(),
        _ => SHAPES
            .get(c.wrapping_sub(16) as usize)
            .map(|&s| Kind::Coll(s)),
    };
    k.ok_or_else(|| format!("a synchronisation point's kind {c} out of range"))
}

/// One candidate: key, location, stage, event, kind, the three times (their bits), the
/// processes (`u32::MAX`: all), the cause and the wait-state kinds.
fn put(w: &mut Writer, key: Key, (l, stage, sp): &Cand) {
    key.into_iter()
        .chain([*l, *stage as u32, sp.event, kind_code(sp.kind)])
        .for_each(|x| w.u32(x));
    [sp.wait, sp.total, sp.completion]
        .into_iter()
        .for_each(|x| w.u64(x.to_bits()));
    match &sp.ranks {
        Ranks::All => w.u32(u32::MAX),
        Ranks::Some(v) => {
            w.u32(v.len() as u32);
            v.iter().for_each(|&p| w.u32(p));
        }
    }
    w.u32(sp.cause.loc);
    w.u32(sp.cause.event);
    w.u32(sp.kinds.len() as u32);
    sp.kinds.iter().for_each(|&k| w.u32(k as u32));
}

fn get(r: &mut Reader) -> Result<(Key, Cand), String> {
    let key = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
    let (l, stage, event) = (r.u32()?, r.u32()? as u8, r.u32()?);
    let kind = kind_of(r.u32()?)?;
    let mut f = || r.u64().map(f64::from_bits);
    let (wait, total, completion) = (f()?, f()?, f()?);
    let ranks = match r.u32()? {
        u32::MAX => Ranks::All,
        n => Ranks::Some((0..n).map(|_| r.u32()).collect::<Result<_, _>>()?),
    };
    let cause = EventRef {
        loc: r.u32()?,
        event: r.u32()?,
    };
    let n = r.u32()?;
    let kinds = (0..n)
        .map(|_| r.u32().map(|k| k as u16))
        .collect::<Result<_, _>>()?;
    let sp = Sp {
        event,
        kind,
        wait,
        total,
        completion,
        ranks,
        cause,
        kinds,
    };
    Ok((key, (l, stage, sp)))
}

/// The root causes of the job (`analysis::rootcause::root_causes`: every metric of the rule
/// set's `rootcause::table`, the critical path's steps), equal to the single-process ones to
/// the bit: on rank 0, `None` on the others. `g` holds the ghosts of `needs()`; `caused` is
/// what this process's share passes found (`Caused::of`).
///
/// The synchronisation points (`synchpoints`) stay on their owners. The critical path is
/// walked back from the MPI_Finalize entered last by the owner of each step's location
/// (`rootcause::step`), handing the walk on (one `all_gather`) where it continues on another
/// process's location. The delay costs are replayed backwards by the owners of the causing
/// locations (`backward`). Each owner's profile and local time profile (16 bytes a call path
/// and location), steps (16 bytes each) and non-zero delay-cost and wait cells (16 bytes
/// each) go to rank 0 (one `all_to_all`), which derives the rest and assembles the metrics
/// as the single process does (`rootcause::assemble`).
pub fn root_causes(
    g: &Ghosted,
    rules: &RuleSet,
    caused: &Caused,
    t: &dyn Transport,
) -> Result<Option<RootCauses>, String> {
    let (sps, teams) = synchpoints(g, rules, caused, t)?;
    let me = t.rank() as u32;
    let held: Vec<bool> = g.owner.iter().map(|&o| o == me).collect();
    let (trace, replay) = (&g.trace, &g.replay);
    let res = trace.timer_resolution.max(1) as f64;
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let (kinds, shapes) = sync::kinds_of(&rules.rules);
    let mut sync = Sync {
        sps,
        init: sync::first_call(trace, replay, "MPI_INIT"),
        fin: sync::first_call(trace, replay, "MPI_FINALIZE"),
        proc: sync::processes(trace, replay),
        kinds,
        shapes,
        omp: None,
    };
    if teams {
        sync.omp = Some(omp::info_of(trace, replay, &sync.sps, &|l| held[l]));
    }
    // every location's first MPI_Finalize is here (a ghost where not held)
    let start = match sync.omp {
        Some(_) => omp::start(trace, replay, &sync),
        None => rc::path_start(trace, &sync.fin),
    };
    let Some(start) = start.map(|(l, x)| (l, g.original(l as u32, x))) else {
        return Ok((me == 0).then(|| RootCauses {
            nloc,
            ..RootCauses::default()
        }));
    };
    let (prof, steps) = walk(g, &sync, (&held, start), t)?;
    let costs = backward::costs(g, &sync, &held, t)?;
    let waits = rc::p2p_waits(replay, &sync, ncn);
    let mut lt = vec![0.0; ncn * nloc];
    let mut w = Writer::default();
    for l in (0..nloc).filter(|&l| held[l]) {
        rc::local_time(trace, replay, &sync, (l, res), &mut lt);
        w.u32(l as u32);
        for c in 0..ncn {
            w.u64(prof[c * nloc + l].to_bits());
            w.u64(lt[c * nloc + l].to_bits());
        }
    }
    w.u32(u32::MAX);
    for (n, (l, a, b)) in &steps {
        w.u64(*n);
        [*l, *a, *b].into_iter().for_each(|x| w.u32(x));
    }
    w.u64(u64::MAX);
    put_cells(&mut w, &costs, &waits);
    let mut to = vec![Vec::new(); t.size()];
    to[0] = w.0;
    let got = t.all_to_all(to)?;
    if me != 0 {
        return Ok(None);
    }
    let mut path = Gathered {
        prof,
        lt,
        steps: Vec::new(),
        cells: vec![vec![0.0; ncn * nloc]; 5 * sync.kinds.len()],
    };
    for (rank, b) in got.iter().enumerate() {
        get_gathered(&mut Reader::new(b), &mut path, (nloc, ncn))
            .map_err(|e| format!("rank {rank}: {e}"))?;
    }
    path.steps.sort_by_key(|x| x.0);
    let steps: Vec<(u32, u32, u32)> = path.steps.into_iter().map(|x| x.1).collect();
    if steps.is_empty() {
        return Ok(Some(RootCauses {
            nloc,
            ..RootCauses::default()
        }));
    }
    let derived = rc::derived(nloc, ncn, &path.prof, &path.lt);
    let mut cells = path.cells.into_iter();
    let mut take = || -> Vec<Vec<f64>> { cells.by_ref().take(sync.kinds.len()).collect() };
    let costs = Costs {
        short: take(),
        long: take(),
        indirect: take(),
        propagating: take(),
    };
    let waits = take();
    let parts = rc::Parts {
        lcp: &path.prof,
        derived: &derived,
        costs: &costs,
        waits: &waits,
    };
    Ok(Some(rc::assemble(
        rules,
        &sync.kinds,
        (nloc, ncn),
        parts,
        steps,
    )))
}

/// This process's part of the critical path: the profile (seconds, `cnode * nloc + loc`) of
/// its locations and its steps, each with its place on the path.
type PathPart = (Vec<f64>, Vec<(u64, (u32, u32, u32))>);

/// Walk the critical path back from `start` (location, its MPI_Finalize LEAVE in the
/// owner's numbering; with thread teams, `team_walk`): this process's part.
fn walk(
    g: &Ghosted,
    sync: &Sync,
    (held, start): (&[bool], (usize, u32)),
    t: &dyn Transport,
) -> Result<PathPart, String> {
    let (trace, replay) = (&g.trace, &g.replay);
    let res = trace.timer_resolution.max(1) as f64;
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let limit = steps_limit(g, held, t)?;
    if let Some(o) = sync.omp.as_ref() {
        let on = omp::PathCtx {
            trace,
            replay,
            sync,
            o,
            res,
        };
        return team_walk::walk(&on, g, (held, start, limit), t);
    }
    let mut prof = vec![0.0; ncn * nloc];
    let mut steps: Vec<(u64, (u32, u32, u32))> = Vec::new();
    let mut token = Some((start.0, start.1, 0u64));
    while let Some((mut l, mut end, mut n)) = token {
        let mut w = Writer::default();
        if held[l] {
            let mut tmap = vec![0.0; ncn];
            let next = loop {
                if n >= limit {
                    break None;
                }
                let sl = (&sync.sps[l][..], sync.init[l]);
                let (from, c) = rc::step(trace, replay, sl, (l, end, res), &mut tmap, &mut prof);
                steps.push((n, (l as u32, from, end)));
                n += 1;
                let Some(c) = c else { break None };
                (l, end) = (c.loc as usize, c.event);
                if !held[l] {
                    break Some(());
                }
            };
            w.u32(next.map_or(0, |_| 1));
            [l as u32, end].into_iter().for_each(|x| w.u32(x));
            w.u64(n);
        }
        token = None;
        for (rank, b) in t.all_gather(&w.0)?.iter().enumerate() {
            let mut r = Reader::new(b);
            if r.is_done() {
                continue;
            }
            let mut read = || -> Result<_, String> {
                let (on, l, end, n) = (r.u32()?, r.u32()? as usize, r.u32()?, r.u64()?);
                if l >= nloc {
                    return Err(format!("the walk goes on at location {l} of {nloc}"));
                }
                Ok((on == 1).then_some((l, end, n)))
            };
            token = read().map_err(|e| format!("rank {rank}: {e}"))?;
        }
    }
    Ok((prof, steps))
}

/// The bound of the critical path's steps, the single process's: the job's events + 1 (one
/// `all_gather` of each process's held events).
fn steps_limit(g: &Ghosted, held: &[bool], t: &dyn Transport) -> Result<u64, String> {
    let mut w = Writer::default();
    let evs = (g.trace.events.iter().zip(held)).filter(|x| *x.1);
    w.u64(evs.map(|(e, _)| e.len() as u64).sum());
    let mut limit = 1;
    for (rank, b) in t.all_gather(&w.0)?.iter().enumerate() {
        limit += Reader::new(b)
            .u64()
            .map_err(|e| format!("rank {rank}: {e}"))?;
    }
    Ok(limit)
}

/// The non-zero cells of the delay costs and waits (array: 5 arrays of `nk` kinds, short,
/// long, indirect, propagating, waits; index; value bits).
fn put_cells(w: &mut Writer, c: &Costs, waits: &[Vec<f64>]) {
    let arrays = [&c.short, &c.long, &c.indirect, &c.propagating, waits];
    let nk = c.short.len();
    for (a, kinds) in arrays.iter().enumerate() {
        for (k, v) in kinds.iter().enumerate() {
            for (i, x) in v.iter().enumerate().filter(|x| x.1.to_bits() != 0) {
                w.u32((a * nk + k) as u32);
                w.u32(i as u32);
                w.u64(x.to_bits());
            }
        }
    }
}

/// What rank 0 gathers: the profiles, the steps with their places, the cells.
struct Gathered {
    prof: Vec<f64>,
    lt: Vec<f64>,
    steps: Vec<(u64, (u32, u32, u32))>,
    cells: Vec<Vec<f64>>,
}

fn get_gathered(
    r: &mut Reader,
    x: &mut Gathered,
    (nloc, ncn): (usize, usize),
) -> Result<(), String> {
    loop {
        let l = r.u32()? as usize;
        if l == u32::MAX as usize {
            break;
        }
        if l >= nloc {
            return Err(format!("location {l} of {nloc}"));
        }
        for c in 0..ncn {
            x.prof[c * nloc + l] = f64::from_bits(r.u64()?);
            x.lt[c * nloc + l] = f64::from_bits(r.u64()?);
        }
    }
    loop {
        let n = r.u64()?;
        if n == u64::MAX {
            break;
        }
        x.steps.push((n, (r.u32()?, r.u32()?, r.u32()?)));
    }
    while !r.is_done() {
        let (a, i, v) = (
            r.u32()? as usize,
            r.u32()? as usize,
            f64::from_bits(r.u64()?),
        );
        let cell = x.cells.get_mut(a).and_then(|c| c.get_mut(i));
        *cell.ok_or_else(|| format!("a delay-cost cell ({a}, {i}) out of range"))? = v;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use crate::distributed::{ghost, local};
    use crate::model::Trace;
    use crate::replay::Replay;
    use crate::rules::causes::RcWhat;

    /// The trace at `path`, its replay and its analysis with the built-in rules (recording
    /// the caused wait states, as for the reports).
    fn analysed(path: &std::path::Path) -> (Trace, Replay, Analysis) {
        let whole = crate::formats::open(path).unwrap_or_else(|e| panic!("{e}"));
        let replay = Replay::new(&whole);
        let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
        let analysis = crate::analysis::analyse(&whole, &replay, rules);
        (whole, replay, analysis)
    }

    /// The caused wait states of `analysis` as the share passes of rank `me` of a job hold
    /// them (a wait on its location's owner, or with `waits_on_0` every wait on rank 0, as
    /// a booking at another process's location would be; a collective on its first
    /// member's; a thread barrier on its team master's, numbered among that process's
    /// barriers), keyed by their place in the single-process lists.
    pub(super) fn caused(
        a: &Analysis,
        replay: &Replay,
        (owner, me): (&[u32], u32),
        waits_on_0: bool,
    ) -> Caused {
        use crate::rules::Trigger;
        let waits = (a.waits.iter().enumerate())
            .filter(|(_, w)| match waits_on_0 {
                true => me == 0,
                false => owner[w.loc as usize] == me,
            })
            .map(|(i, w)| ([i as u32, 0, 0], *w));
        let root = |c: &CausedColl| a.rules.rules[c.rule as usize].root;
        let first = |c: &CausedColl| replay.instances[c.instance as usize].members[0].loc;
        let colls = (a.colls.iter().enumerate())
            .filter(|(_, c)| root(c) == Trigger::Collective && owner[first(c) as usize] == me)
            .map(|(i, c)| ([c.instance, i as u32], *c));
        // this process's thread barriers: those of the teams whose master it holds
        let omp = &replay.omp;
        let mine: Vec<usize> = (0..omp.barriers.len())
            .filter(|&n| owner[omp.teams[omp.barriers[n].team as usize].master as usize] == me)
            .collect();
        let mut bars = vec![Vec::new(); mine.len()];
        for c in a.colls.iter().filter(|c| root(c) == Trigger::ThreadBarrier) {
            if let Ok(k) = mine.binary_search(&(c.instance as usize)) {
                bars[k].push(c.rule);
            }
        }
        Caused {
            waits: waits.collect(),
            colls: colls.collect(),
            bars,
        }
    }

    /// Every testdata trace (MPI, OpenMP, hybrid) at P = 1..4 threads as processes: each held
    /// location's synchronisation points are the single-process ones (floats to the bit),
    /// the waits handed in on rank 0 (routed to their owners).
    #[test]
    fn the_distributed_synchronisation_points_are_the_single_process_ones() {
        let (mut traces, mut waits) = (0, 0);
        for path in local::testdata_traces() {
            let (whole, replay, analysis) = analysed(&path);
            let res = whole.timer_resolution.max(1) as f64;
            let want = sync::synchpoints(&whole, &replay, res, &analysis).sps;
            let show = |v: &[Sp]| format!("{v:?}");
            let want: Vec<String> = want.iter().map(|v| show(v)).collect();
            traces += 1;
            waits += analysis.waits.len() + analysis.colls.len();
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let g = ghost::replay(trace.clone(), keep, &needs(), t)?;
                    let me = t.rank() as u32;
                    let caused = caused(&analysis, &replay, (&g.owner, me), true);
                    let (sps, _) = synchpoints(&g, &analysis.rules, &caused, t)?;
                    Ok((
                        keep.to_vec(),
                        sps.iter().map(|v| show(v)).collect::<Vec<_>>(),
                    ))
                });
                for (rank, x) in got.into_iter().enumerate() {
                    let (keep, got) = x.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    for (l, k) in keep.iter().enumerate() {
                        let want = if *k { &want[l] } else { "[]" };
                        let at = format!("{}, P = {p}, rank {rank}, location {l}", path.display());
                        assert_eq!(got[l], want, "{at}");
                    }
                }
            }
        }
        assert!(traces > 5 && waits > 10, "{traces} traces, {waits} waits");
    }

    /// The same traces and process counts, the caused waits on their owners: rank 0's root
    /// causes — every metric of the table (the critical-path metrics, the delay costs, the
    /// wait causes) and the steps — are the single-process ones (floats to the bit).
    #[test]
    fn the_distributed_root_causes_are_the_single_process_ones() {
        let (mut steps, mut delays) = (0, 0);
        for path in local::testdata_traces() {
            let (whole, replay, analysis) = analysed(&path);
            let want = rc::root_causes(&whole, &replay, &analysis);
            steps += want.steps.len();
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let nonzero = |v: &[f64]| v.iter().any(|&x| x != 0.0);
            delays += (want.metrics.iter())
                .filter(|(m, v)| matches!(m.what, RcWhat::Delay { .. }) && nonzero(v))
                .count();
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let g = ghost::replay(trace.clone(), keep, &needs(), t)?;
                    let caused = caused(&analysis, &replay, (&g.owner, t.rank() as u32), false);
                    let (r0, b0) = (t.rounds(), t.bytes_exchanged());
                    let m = root_causes(&g, &analysis.rules, &caused, t)?;
                    Ok((m, t.rounds() - r0, t.bytes_exchanged() - b0))
                });
                let at = format!("{}, P = {p}", path.display());
                let Some(Ok((Some(got), rounds, bytes))) = got.into_iter().next() else {
                    panic!("{at}: rank 0 has no root causes");
                };
                if p == 2 {
                    eprintln!(
                        "{at}: {} steps, {rounds} rounds, {bytes} bytes",
                        got.steps.len()
                    );
                }
                assert_eq!(got.steps, want.steps, "{at}");
                assert_eq!(got.nloc, want.nloc, "{at}");
                let ids =
                    |r: &RootCauses| r.metrics.iter().map(|m| m.0.id.clone()).collect::<Vec<_>>();
                assert_eq!(ids(&got), ids(&want), "{at}");
                for ((m, v), (_, w)) in got.metrics.iter().zip(&want.metrics) {
                    assert_eq!(bits(v), bits(w), "{at}: {}", m.id);
                }
            }
        }
        assert!(
            steps > 10 && delays > 5,
            "{steps} steps, {delays} delay metrics"
        );
    }
}

/// The rounds and bytes of `root_causes` on the traces in `PERFEXPERT_RC_TRACES`
/// (colon-separated), at the process counts of `PERFEXPERT_RC_P` (comma-separated; 2 and 4
/// when unset) over threads: `cargo test --release --lib
/// rootcause_rounds_and_bytes -- --ignored --nocapture` (docs/distributed.md's table).
#[cfg(test)]
mod measure {
    use super::*;
    use crate::distributed::{ghost, local};
    use crate::replay::Replay;

    #[test]
    #[ignore]
    fn rootcause_rounds_and_bytes() {
        let paths = std::env::var("PERFEXPERT_RC_TRACES").unwrap_or_default();
        println!("| trace | events | P | rounds | bytes (rank 0) | bytes (most, a process) |");
        for path in paths.split(':').filter(|p| !p.is_empty()) {
            let path = std::path::Path::new(path);
            let whole = crate::formats::open(path).unwrap_or_else(|e| panic!("{e}"));
            let events: usize = whole.events.iter().map(|e| e.len()).sum();
            let replay = Replay::new(&whole);
            let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
            let a = crate::analysis::analyse(&whole, &replay, rules);
            drop(whole);
            let ps = std::env::var("PERFEXPERT_RC_P").unwrap_or_else(|_| "2,4".into());
            for p in ps.split(',').filter_map(|p| p.parse::<usize>().ok()) {
                let got = local::on_shares(path, p, |trace, keep, t| {
                    let g = ghost::replay(trace.clone(), keep, &needs(), t)?;
                    let me = t.rank() as u32;
                    let caused = super::tests::caused(&a, &replay, (&g.owner, me), false);
                    let (r0, b0) = (t.rounds(), t.bytes_exchanged());
                    root_causes(&g, &a.rules, &caused, t)?;
                    Ok((t.rounds() - r0, t.bytes_exchanged() - b0))
                });
                let got: Vec<(u64, u64)> = got.into_iter().map(|x| x.unwrap_or_default()).collect();
                let most = got.iter().map(|x| x.1).max().unwrap_or(0);
                println!(
                    "| {} | {events} | {p} | {} | {} | {most} |",
                    path.display(),
                    got[0].0,
                    got[0].1
                );
            }
        }
    }
}
