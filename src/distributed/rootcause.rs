//! The synchronisation points of the root causes (issue 24) over a `Transport`, equal to the
//! single-process ones (`analysis::rootcause::sync::synchpoints`) to the bit, each on the
//! process owning its location (docs/distributed.md, "The distributed extras").
//!
//! The caused wait states (`Analysis::waits`, `Analysis::colls`) reach every process from
//! rank 0 (one `all_gather`). Each process runs the single-process generators
//! (`sync::world_points`, `coll_candidates`, `receive_points`, `send_points`) on its ghosted
//! share (`Ghosted`, with the ghosts of `needs`): the world calls of every location (their
//! first calls are ghosts), the collective instances whose first member it holds, the waits
//! of the locations it holds (with their partner's ghost). A generator may register a point
//! on another process's location (the send a receive waited for, a collective's members):
//! every point, renumbered to the owner's events, goes to its location's owner (one
//! `all_to_all`) with its generator and its place in the single-process order, and the
//! owner merges them in that order (`sync::merge`). OpenMP and hybrid traces are refused.

use super::ghost::{Ghosted, Needs};
use super::wire::{Reader, Writer};
use super::Transport;
use crate::analysis::rootcause as rc;
use crate::analysis::rootcause::sync::{self, Cand, Ctx, Kind, Ranks, Sp, Sync};
use crate::analysis::{CausedColl, CausedWait};
use crate::replay::matching::EventRef;
use crate::rules::causes::{Quantity, Shape};
use crate::rules::RuleSet;
use std::collections::BTreeMap;

/// The ghosts the synchronisation points read: partners (with their request event),
/// collective members, every rank's first MPI_Init and MPI_Finalize.
pub fn needs() -> Needs {
    super::critical_path::needs()
}

/// A candidate's generator (0: MPI_Init, 1: MPI_Finalize, 2: a collective, 3: a receive's
/// wait, 4: a send's) and its index in the generator's single-process list.
type Key = (u32, u32);

/// The synchronisation points of the held locations of `g` (every other location empty), in
/// the owner's numbering, from the caused wait states `caused` (in the owners' numbering,
/// given on rank 0, `None` elsewhere) of the rules `rules`.
pub(crate) fn synchpoints(
    g: &Ghosted,
    rules: &RuleSet,
    caused: Option<(&[CausedWait], &[CausedColl])>,
    t: &dyn Transport,
) -> Result<Vec<Vec<Sp>>, String> {
    if crate::replay::omp::has_openmp(&g.trace) {
        return Err(
            "--mpi: the root causes of OpenMP and hybrid traces are not distributed \
                    yet (docs/distributed.md)"
                .into(),
        );
    }
    let me = t.rank() as u32;
    let held: Vec<bool> = g.owner.iter().map(|&o| o == me).collect();
    let (waits, colls) = spread(caused, t)?;
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
    for (seq, c) in colls.iter().enumerate() {
        let Some(&n) = local.get(&c.instance) else {
            continue;
        };
        let first = replay.instances[n as usize].members.first();
        if !first.is_some_and(|m| held[m.loc as usize]) {
            continue;
        }
        let c = CausedColl { instance: n, ..*c };
        // a thread barrier's kind (`Err`) cannot occur without OpenMP
        let _ = sync::coll_candidates(trace, replay, &c, ctx, &mut out);
        keyed.extend(out.drain(..).map(|x| ((2, seq as u32), x)));
    }
    for (seq, w) in waits.iter().enumerate() {
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
        keyed.extend(out.drain(..).map(|x| ((3, seq as u32), x)));
        sync::send_points(trace, replay, ctx, &mut out);
        keyed.extend(out.drain(..).map(|x| ((4, seq as u32), x)));
    }
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
    Ok(sync::merge(
        held.len(),
        mine.into_iter().map(|x| x.1).collect(),
    ))
}

/// The caused wait states of rank 0 on every process (16 bytes a wait, 8 a collective).
fn spread(
    caused: Option<(&[CausedWait], &[CausedColl])>,
    t: &dyn Transport,
) -> Result<(Vec<CausedWait>, Vec<CausedColl>), String> {
    let mut w = Writer::default();
    if let Some((waits, colls)) = caused {
        w.u32(waits.len() as u32);
        for x in waits {
            [x.rule as u32, x.loc, x.event, x.partner.0, x.partner.1]
                .into_iter()
                .for_each(|v| w.u32(v));
        }
        for x in colls {
            w.u32(x.instance);
            w.u32(x.rule as u32);
        }
    }
    let all = t.all_gather(&w.0)?;
    let mut r = Reader::new(&all[0]);
    let (mut waits, mut colls) = (Vec::new(), Vec::new());
    let mut read = || -> Result<(), String> {
        if r.is_done() {
            return Ok(());
        }
        for _ in 0..r.u32()? {
            let (rule, loc, event) = (r.u32()? as u16, r.u32()?, r.u32()?);
            let partner = (r.u32()?, r.u32()?);
            waits.push(CausedWait {
                rule,
                loc,
                event,
                partner,
            });
        }
        while !r.is_done() {
            let instance = r.u32()?;
            let rule = r.u32()? as u16;
            colls.push(CausedColl { instance, rule });
        }
        Ok(())
    };
    read().map_err(|e| format!("rank 0: {e}"))?;
    Ok((waits, colls))
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
        keyed.extend(mine.map(|c| ((n, 0), c)));
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
fn put(w: &mut Writer, (group, seq): Key, (l, stage, sp): &Cand) {
    [group, seq, *l, *stage as u32, sp.event, kind_code(sp.kind)]
        .into_iter()
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
    let key = (r.u32()?, r.u32()?);
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

/// Scalasca's critical-path metrics of a job (`analysis::rootcause`), on rank 0.
#[derive(Clone, Debug)]
pub struct PathMetrics {
    pub nloc: usize,
    /// The critical-path profile (seconds, `cnode * nloc + loc`).
    pub path: Vec<f64>,
    /// Derived from it: the activity impact, the critical-path imbalance impact, the
    /// inter-partition imbalance and the non-critical-path activities.
    pub derived: [Vec<f64>; 4],
    /// The path's steps: (location, from event, to event), last step first.
    pub steps: Vec<(u32, u32, u32)>,
}

impl PathMetrics {
    /// The values of a critical-path quantity.
    pub fn values(&self, q: Quantity) -> &[f64] {
        match q {
            Quantity::Path => &self.path,
            Quantity::Activities => &self.derived[0],
            Quantity::Imbalance => &self.derived[1],
            Quantity::InterPartition => &self.derived[2],
            Quantity::NonCritical => &self.derived[3],
        }
    }
}

/// The critical-path metrics of the job, equal to the single-process ones to the bit: on
/// rank 0, `None` on the others. The synchronisation points (`synchpoints`) stay on their
/// owners; the path is walked back from the MPI_Finalize entered last by the owner of each
/// step's location (`rootcause::step`), handing the walk on (one `all_gather`) where it
/// continues on another process's location; each owner's profile and local time profile go
/// to rank 0 (16 bytes a call path and location, 16 a step), which derives the rest.
pub fn critical_path_metrics(
    g: &Ghosted,
    rules: &RuleSet,
    caused: Option<(&[CausedWait], &[CausedColl])>,
    t: &dyn Transport,
) -> Result<Option<PathMetrics>, String> {
    let sps = synchpoints(g, rules, caused, t)?;
    let me = t.rank() as u32;
    let held: Vec<bool> = g.owner.iter().map(|&o| o == me).collect();
    let (trace, replay) = (&g.trace, &g.replay);
    let res = trace.timer_resolution.max(1) as f64;
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let (kinds, shapes) = sync::kinds_of(&rules.rules);
    let sync = Sync {
        sps,
        init: sync::first_call(trace, replay, "MPI_INIT"),
        fin: sync::first_call(trace, replay, "MPI_FINALIZE"),
        proc: sync::processes(trace, replay),
        kinds,
        shapes,
        omp: None,
    };
    let mut w = Writer::default();
    let evs = (trace.events.iter().zip(&held)).filter(|x| *x.1);
    w.u64(evs.map(|(e, _)| e.len() as u64).sum());
    let mut limit = 1;
    for (rank, b) in t.all_gather(&w.0)?.iter().enumerate() {
        limit += Reader::new(b)
            .u64()
            .map_err(|e| format!("rank {rank}: {e}"))?;
    }
    // every location's first MPI_Finalize is here (a ghost where not held)
    let start = rc::path_start(trace, &sync.fin).map(|(l, x)| (l, g.original(l as u32, x)));
    let mut prof = vec![0.0; ncn * nloc];
    let mut steps: Vec<(u64, (u32, u32, u32))> = Vec::new();
    let mut token = start.map(|(l, e)| (l, e, 0u64));
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
    let mut to = vec![Vec::new(); t.size()];
    to[0] = w.0;
    let got = t.all_to_all(to)?;
    if me != 0 {
        return Ok(None);
    }
    steps.clear();
    for (rank, b) in got.iter().enumerate() {
        let mut r = Reader::new(b);
        let mut read = || -> Result<(), String> {
            loop {
                let l = r.u32()? as usize;
                if l == u32::MAX as usize {
                    break;
                }
                if l >= nloc {
                    return Err(format!("location {l} of {nloc}"));
                }
                for c in 0..ncn {
                    prof[c * nloc + l] = f64::from_bits(r.u64()?);
                    lt[c * nloc + l] = f64::from_bits(r.u64()?);
                }
            }
            while !r.is_done() {
                let n = r.u64()?;
                steps.push((n, (r.u32()?, r.u32()?, r.u32()?)));
            }
            Ok(())
        };
        read().map_err(|e| format!("rank {rank}: {e}"))?;
    }
    steps.sort_by_key(|x| x.0);
    let steps: Vec<(u32, u32, u32)> = steps.into_iter().map(|x| x.1).collect();
    if steps.is_empty() {
        return Ok(Some(PathMetrics {
            nloc,
            path: Vec::new(),
            derived: Default::default(),
            steps,
        }));
    }
    let derived = rc::derived(nloc, ncn, &prof, &lt);
    Ok(Some(PathMetrics {
        nloc,
        path: prof,
        derived,
        steps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use crate::distributed::{ghost, local};
    use crate::model::Trace;
    use crate::replay::Replay;

    /// The trace at `path` (`None` with OpenMP), its replay and its analysis with the
    /// built-in rules.
    fn analysed(path: &std::path::Path) -> Option<(Trace, Replay, Analysis)> {
        let whole = crate::formats::open(path).unwrap_or_else(|e| panic!("{e}"));
        if crate::replay::omp::has_openmp(&whole) {
            return None;
        }
        let replay = Replay::new(&whole);
        let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
        let analysis = crate::analysis::analyse(&whole, &replay, rules);
        Some((whole, replay, analysis))
    }

    /// Every testdata trace without OpenMP at P = 1..4 threads as processes: each held
    /// location's synchronisation points are the single-process ones (floats to the bit).
    #[test]
    fn the_distributed_synchronisation_points_are_the_single_process_ones() {
        let (mut traces, mut waits) = (0, 0);
        for path in local::testdata_traces() {
            let Some((whole, replay, analysis)) = analysed(&path) else {
                continue;
            };
            let res = whole.timer_resolution.max(1) as f64;
            let want = sync::synchpoints(&whole, &replay, res, &analysis).sps;
            let show = |v: &[Sp]| format!("{v:?}");
            let want: Vec<String> = want.iter().map(|v| show(v)).collect();
            traces += 1;
            waits += analysis.waits.len() + analysis.colls.len();
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let g = ghost::replay(trace.clone(), keep, &needs(), t)?;
                    let caused =
                        (t.rank() == 0).then_some((&analysis.waits[..], &analysis.colls[..]));
                    let sps = synchpoints(&g, &analysis.rules, caused, t)?;
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

    /// The same traces and process counts: rank 0's critical-path metrics and steps are the
    /// single-process root causes' (floats to the bit).
    #[test]
    fn the_distributed_critical_path_metrics_are_the_single_process_ones() {
        let mut steps = 0;
        for path in local::testdata_traces() {
            let Some((whole, replay, analysis)) = analysed(&path) else {
                continue;
            };
            let want = rc::root_causes(&whole, &replay, &analysis);
            steps += want.steps.len();
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let g = ghost::replay(trace.clone(), keep, &needs(), t)?;
                    let caused =
                        (t.rank() == 0).then_some((&analysis.waits[..], &analysis.colls[..]));
                    let before = t.rounds();
                    let m = critical_path_metrics(&g, &analysis.rules, caused, t)?;
                    Ok((m, t.rounds() - before))
                });
                let at = format!("{}, P = {p}", path.display());
                let Some(Ok((Some(got), rounds))) = got.into_iter().next() else {
                    panic!("{at}: rank 0 has no metrics");
                };
                assert_eq!(got.steps, want.steps, "{at}");
                if p == 2 {
                    eprintln!("{at}: {} steps in {rounds} rounds", got.steps.len());
                }
                for (m, v) in &want.metrics {
                    let crate::rules::causes::RcWhat::CriticalPath(q) = m.what else {
                        continue;
                    };
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(got.values(q)), bits(v), "{at}: {}", m.id);
                }
            }
        }
        assert!(steps > 10, "{steps}");
    }
}
