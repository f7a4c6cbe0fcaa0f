//! The rule passes of a job and its cube gathered (issue 24): after the ghost exchange
//! (`ghost::replay`) every process runs the rule passes over what it owns
//! (`analysis::share_passes`: its locations; the collective instances whose first member it
//! holds; rank 0 the world-call instances), the `had` lists exchanged after each location
//! pass; then every process ships its bookings (keyed in the owner's numbering, with their
//! event's tick), the replay facts the scores and the report read of its locations (events,
//! first and last tick, time, visits, inclusive time and repairs per call path, clamped
//! timestamps, gaps) and its wrong-order counts to rank 0, which adds the bookings in the
//! single-process order (`analysis::assemble`) and holds the whole analysis.

use super::ghost::{self, Ghosted};
use super::wire::{Reader, Writer};
use super::Transport;
use crate::analysis::critical_path::CriticalPath;
use crate::analysis::matrices::{TrafficMatrix, WaitMatrix};
use crate::analysis::phases::{self, PhaseEntry};
use crate::analysis::pipeline::{Refusal, Selected};
use crate::analysis::rootcause::RootCauses;
use crate::analysis::scores::Extent;
use crate::analysis::views::Views;
use crate::analysis::{
    self, Analysis, Booking, CausedColl, CausedWait, CellSum, Instance, Numbering, ShareFound,
    Sums, ThreadFound, Written,
};
use crate::model::Trace;
use crate::replay::omp::OmpStats;
use crate::replay::Replay;
use crate::rules::RuleSet;

/// The whole analysis, on rank 0: the definitions and rank 0's ghosted trace, the replay
/// with every location's facts, the analysis, what the scores read of the events, and the
/// wrong-order counts (`analysis::rootcause::wrong_order_differences`).
pub struct Whole {
    pub trace: Trace,
    pub replay: Replay,
    pub analysis: Analysis,
    pub extent: Extent,
    pub scalasca_differences: (u64, u64),
    /// With `Wanted::structure`: the critical path (with its what-if lengths) and the wait
    /// and traffic matrices (`distributed::critical_path`, `distributed::extras`).
    pub structure: Option<(CriticalPath, WaitMatrix, TrafficMatrix)>,
    /// With `Wanted::phases`: the phase summaries (`phases::summarise`), the single
    /// process's to the bit.
    pub phases: Option<Vec<PhaseEntry>>,
    /// With `Wanted::views`: the views of the run (`analysis::views`), the single process's
    /// to the bit.
    pub views: Option<Views>,
    /// With `Wanted::root_causes`: the root causes (`analysis::rootcause::root_causes`),
    /// the single process's to the bit.
    pub root_causes: Option<RootCauses>,
}

/// The extras a job computes beside the rules: with `structure`, the critical path with the
/// what-if lengths of `what_if` and the wait and traffic matrices (`run --mpi
/// --critical-path`, `--what-if`, `--matrices-csv`).
#[derive(Clone, Debug, Default)]
pub struct Wanted {
    pub structure: bool,
    pub what_if: Vec<String>,
    /// The phases detected and summarised (`Whole::phases`): the passes book the wait
    /// states per phase window.
    pub phases: bool,
    /// The views of the run for the HTML report (`Whole::views`, `distributed::views`).
    pub views: bool,
    /// The root causes and Scalasca's critical-path metrics (`Whole::root_causes`,
    /// `distributed::rootcause`): the passes record the caused wait states.
    pub root_causes: bool,
}

/// A process's numbering: its locations held (`keep`) in full, the others as ghosts.
struct View<'a> {
    g: &'a Ghosted,
    keep: &'a [bool],
}

impl Numbering for View<'_> {
    fn original(&self, l: u32, i: u32) -> u32 {
        self.g.original(l, i)
    }

    fn local(&self, l: u32, i: u32) -> Option<u32> {
        if self.keep.get(l as usize) == Some(&true) {
            return Some(i);
        }
        let o = self.g.orig.get(l as usize)?;
        o.binary_search(&i).ok().map(|x| x as u32)
    }
}

/// The job's analysis of `trace` (this process's share, `keep`) with `rules`: the whole
/// analysis on rank 0, `None` on the others.
pub fn analyse(
    trace: Trace,
    keep: &[bool],
    mut rules: RuleSet,
    want: &Wanted,
    t: &dyn Transport,
) -> Result<Option<Whole>, String> {
    // the instances of the rules with a `[cause]` are kept only for the root causes, as
    // in the single process (`pipeline::analyse_trace`)
    rules.record_causes = want.root_causes;
    // the phases over the job (every process finds the same), before the ghosts change
    // the share; the passes book the wait states per phase window
    let detected = (want.phases || want.views)
        .then(|| super::extras::detect_phases(&trace, keep, t))
        .transpose()?;
    let bounds = match &detected {
        Some(d) if want.phases => phases::bounds(d.t0(), &d.phases),
        _ => Vec::new(),
    };
    let mut needs = ghost::needs(&rules)?;
    if want.structure {
        needs.unite(&super::critical_path::needs());
    }
    if want.views {
        needs.unite(&super::views::needs());
    }
    if want.root_causes {
        needs.unite(&super::rootcause::needs());
    }
    let g = ghost::replay(trace, keep, &needs, t)?;
    let view = View { g: &g, keep };
    let owned_instances: Vec<bool> = (g.replay.instances.iter())
        .map(|inst| (inst.members.first()).is_some_and(|m| keep.get(m.loc as usize) == Some(&true)))
        .collect();
    type Had = Vec<(u16, u32, u32)>;
    let mut exchange = |mine: Had, cells: Vec<Written>| -> Result<(Had, Vec<Written>), String> {
        let mut w = Writer::default();
        put_list(&mut w, &mine, |w, &(k, l, e)| {
            [k as u32, l, e].into_iter().for_each(|x| w.u32(x))
        });
        put_list(&mut w, &cells, |w, &(k, c, at, by)| {
            [k as u32, c, at, by].into_iter().for_each(|x| w.u32(x))
        });
        let (mut had, mut written) = (Vec::new(), Vec::new());
        for (rank, b) in t.all_gather(&w.0)?.iter().enumerate() {
            let mut r = Reader::new(b);
            let mut read = || -> Result<(), String> {
                had.extend(get_list(&mut r, |r| {
                    Ok((r.u32()? as u16, r.u32()?, r.u32()?))
                })?);
                written.extend(get_list(&mut r, |r| {
                    Ok((r.u32()? as u16, r.u32()?, r.u32()?, r.u32()?))
                })?);
                Ok(())
            };
            read().map_err(|e| format!("rank {rank}: {e}"))?;
        }
        Ok((had, written))
    };
    let found = analysis::share_passes(
        &g.trace,
        &g.replay,
        &rules,
        keep,
        (&owned_instances, &g.instance_of),
        t.rank() == 0,
        &bounds,
        &view,
        &mut exchange,
    )?;
    let wrong = analysis::rootcause::wrong_order_differences_in(&g.trace, &g.replay, keep);
    let structure = match want.structure {
        true => {
            let traffic = super::extras::traffic_matrix(&g, t)?;
            let (cp, wait) = super::critical_path::critical_path(&g, &want.what_if, t)?;
            Some((cp, wait, traffic))
        }
        false => None,
    };
    let root_causes = match want.root_causes {
        true => {
            let caused = super::rootcause::Caused::of(&found);
            super::rootcause::root_causes(&g, &rules, &caused, t)?
        }
        false => None,
    };
    let mut w = Writer::default();
    put_found(&mut w, &found);
    put_facts(&mut w, &g, keep);
    w.u64(wrong.0);
    w.u64(wrong.1);
    put_omp_stats(&mut w, &g.replay.omp.stats);
    let mut to = vec![Vec::new(); t.size()];
    to[0] = w.0;
    let got = t.all_to_all(to)?;
    // rank 0 assembles the analysis; the views are rounds of every process after it, so
    // every process first learns whether it did (no process waits in a round rank 0 never
    // reaches)
    let assembled = match t.rank() {
        0 => Some(assemble(&got, &g, rules, &bounds)),
        _ => None,
    }
    .transpose();
    let assembled = match want.views {
        true => super::agree(t, assembled).map_err(|f| f.message)?,
        false => assembled?,
    };
    let views = match (want.views, &detected) {
        (true, Some(d)) => {
            let a = assembled.as_ref().map(|x| &x.analysis);
            super::views::views(&g, &d.phases, a, t)?
        }
        _ => None,
    };
    let Some(Assembled {
        analysis,
        facts,
        scalasca_differences,
        omp_stats,
    }) = assembled
    else {
        return Ok(None);
    };
    let Ghosted {
        trace, mut replay, ..
    } = g;
    let extent = apply_facts(&trace, &mut replay, keep, facts)?;
    replay.omp.stats = omp_stats;
    let phases = (detected.as_ref())
        .filter(|_| want.phases)
        .map(|d| phases::summarise_in(&trace, d, &replay, &analysis, &extent));
    Ok(Some(Whole {
        trace,
        replay,
        analysis,
        extent,
        scalasca_differences,
        structure,
        phases,
        views,
        root_causes,
    }))
}

/// What rank 0 makes of the processes' shipments: the assembled analysis, and the
/// replay facts, wrong-order counts and OpenMP statistics still to apply.
struct Assembled {
    analysis: Analysis,
    facts: Vec<Facts>,
    scalasca_differences: (u64, u64),
    omp_stats: OmpStats,
}

/// Rank 0: the bookings of every process (`got`, in rank order) added in the
/// single-process order (`analysis::assemble`) over its ghosted share `g`.
fn assemble(
    got: &[Vec<u8>],
    g: &Ghosted,
    rules: RuleSet,
    bounds: &[u64],
) -> Result<Assembled, String> {
    let mut founds = Vec::with_capacity(got.len());
    let mut facts = Vec::new();
    let mut scalasca_differences = (0, 0);
    let mut omp_stats = OmpStats::default();
    for (rank, b) in got.iter().enumerate() {
        let mut r = Reader::new(b);
        let mut read = || -> Result<(), String> {
            founds.push(get_found(&mut r)?);
            facts.extend(get_facts(&mut r)?);
            scalasca_differences.0 += r.u64()?;
            scalasca_differences.1 += r.u64()?;
            add_omp_stats(&mut r, &mut omp_stats)
        };
        read().map_err(|e| format!("rank {rank}: {e}"))?;
    }
    let analysis = analysis::assemble(&g.trace, &g.replay, rules, &founds, bounds)?;
    Ok(Assembled {
        analysis,
        facts,
        scalasca_differences,
        omp_stats,
    })
}

/// `run --mpi --phase K`: this process's share cut to phase `k` (1-based) of the phases
/// detected over the job (`extras::detect_phases`; every process finds the same, so every
/// process refuses alike), as the single process cuts the whole trace
/// (`pipeline::cut_phase`). The outer error is the job's (a transport failure).
pub fn phase_share(
    trace: Trace,
    keep: &[bool],
    k: usize,
    t: &dyn Transport,
) -> Result<Result<(Trace, Selected), Refusal>, String> {
    let d = super::extras::detect_phases(&trace, keep, t)?;
    Ok(analysis::pipeline::cut_phase(trace, &d.phases, d.t0(), k))
}

/// The OpenMP statistics' counts, in their order on the wire.
fn omp_counts(s: &mut OmpStats) -> [&mut u64; 6] {
    [
        &mut s.teams,
        &mut s.barrier_instances,
        &mut s.lock_acquisitions,
        &mut s.orphan_regions,
        &mut s.nested_regions,
        &mut s.worker_forks,
    ]
}

/// The OpenMP statistics of the processes held here (the report's notes): 48 bytes.
fn put_omp_stats(w: &mut Writer, s: &OmpStats) {
    let mut s = *s;
    omp_counts(&mut s).into_iter().for_each(|x| w.u64(*x));
}

/// `put_omp_stats` read back and added to `s` (every process's are the job's).
fn add_omp_stats(r: &mut Reader, s: &mut OmpStats) -> Result<(), String> {
    for x in omp_counts(s) {
        *x += r.u64()?;
    }
    Ok(())
}

/// What the scores and the report read of one location's replay.
struct Facts {
    loc: u32,
    events: u64,
    first: u64,
    last: u64,
    clamped: u64,
    gaps: u64,
    /// (call path, visits, time, inclusive time, repairs) where any is non-zero.
    per_cnode: Vec<(u32, [u64; 4])>,
}

/// Per held location: its events, first and last tick, clamped timestamps and gaps, then
/// its call paths with a visit, time or repair: 44 bytes and 36 a call path.
fn put_facts(w: &mut Writer, g: &Ghosted, keep: &[bool]) {
    let held: Vec<usize> = (0..g.trace.events.len())
        .filter(|&l| keep.get(l) == Some(&true))
        .collect();
    put_list(w, &held, |w, &l| {
        let (ev, st) = (&g.trace.events[l], &g.replay.locations[l]);
        w.u32(l as u32);
        let first = ev.time.first().unwrap_or(0);
        let last = ev.time.last().unwrap_or(0);
        for x in [ev.len() as u64, first, last, st.clamped, st.gaps] {
            w.u64(x);
        }
        let cols = [&st.visits, &st.time, &st.incl, &st.repairs];
        let at = |c: usize| cols.map(|v| v.get(c).copied().unwrap_or(0));
        let used: Vec<usize> = (0..g.replay.tree.len())
            .filter(|&c| at(c).iter().any(|&x| x != 0))
            .collect();
        put_list(w, &used, |w, &c| {
            w.u32(c as u32);
            at(c).into_iter().for_each(|x| w.u64(x));
        });
    });
}

fn get_facts(r: &mut Reader) -> Result<Vec<Facts>, String> {
    get_list(r, |r| {
        let loc = r.u32()?;
        let [events, first, last, clamped, gaps] =
            [r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?];
        let per_cnode = get_list(r, |r| {
            Ok((r.u32()?, [r.u64()?, r.u64()?, r.u64()?, r.u64()?]))
        })?;
        Ok(Facts {
            loc,
            events,
            first,
            last,
            clamped,
            gaps,
            per_cnode,
        })
    })
}

/// Every location's facts into the replay (the locations held here already have them) and
/// the extent of the events.
fn apply_facts(
    trace: &Trace,
    replay: &mut Replay,
    keep: &[bool],
    facts: Vec<Facts>,
) -> Result<Extent, String> {
    let nloc = trace.events.len();
    let ncn = replay.tree.len();
    let mut x = Extent {
        has_events: vec![false; nloc],
        span: None,
        events: 0,
    };
    for f in facts {
        let l = f.loc as usize;
        if l >= nloc {
            return Err(format!("location {l} out of range"));
        }
        x.has_events[l] = f.events > 0;
        x.events += f.events;
        if f.events > 0 {
            x.span = Some(
                x.span
                    .map_or((f.first, f.last), |(a, b)| (a.min(f.first), b.max(f.last))),
            );
        }
        if keep.get(l) == Some(&true) {
            continue;
        }
        let st = &mut replay.locations[l];
        let mut cols = [vec![0; ncn], vec![0; ncn], vec![0; ncn], vec![0; ncn]];
        for (c, v) in f.per_cnode {
            for (col, x) in cols.iter_mut().zip(v) {
                *col.get_mut(c as usize).ok_or("call path out of range")? = x;
            }
        }
        let [visits, time, incl, repairs] = cols;
        (st.visits, st.time, st.incl, st.repairs) = (visits, time, incl, repairs);
        (st.clamped, st.gaps) = (f.clamped, f.gaps);
    }
    Ok(x)
}

/// `items` as their count and each by `put`.
fn put_list<T>(w: &mut Writer, items: &[T], put: impl Fn(&mut Writer, &T)) {
    w.u32(items.len() as u32);
    items.iter().for_each(|x| put(w, x));
}

/// `put_list` read back.
fn get_list<T>(
    r: &mut Reader,
    mut get: impl FnMut(&mut Reader) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let n = r.u32()?;
    (0..n).map(|_| get(r)).collect()
}

/// 36 bytes a booking.
fn put_bookings(w: &mut Writer, bs: &[Booking]) {
    put_list(w, bs, |w, b| {
        for x in [b.rule as u32, b.cnode, b.loc, b.event] {
            w.u32(x);
        }
        w.u64(b.time);
        w.u64(b.value.to_bits());
        w.u32(b.cc as u32 | (b.rec as u32) << 1);
    });
}

fn get_bookings(r: &mut Reader) -> Result<Vec<Booking>, String> {
    get_list(r, |r| {
        let [rule, cnode, loc, event] = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
        let (time, value, flags) = (r.u64()?, f64::from_bits(r.u64()?), r.u32()?);
        Ok(Booking {
            rule: rule as u16,
            cnode,
            loc,
            event,
            time,
            value,
            cc: flags & 1 != 0,
            rec: flags & 2 != 0,
        })
    })
}

/// A location's own cells: 28 bytes a cell and 20 a worst instance (its location is the
/// cell's), 16 a clock-touched share.
fn put_sums(w: &mut Writer, s: &Sums) {
    put_list(w, &s.cells, |w, c| {
        w.u32(c.rule as u32);
        w.u32(c.cnode);
        w.u64(c.sum.to_bits());
        w.u64(c.n);
        put_list(w, &c.worst, |w, x| {
            w.u32(x.event);
            w.u64(x.time);
            w.u64(x.value.to_bits());
        });
        put_list(w, &c.windows, |w, &(p, v)| {
            w.u32(p);
            w.u64(v.to_bits());
        });
    });
    put_list(w, &s.cc, |w, &(k, c, v)| {
        w.u32(k as u32);
        w.u32(c);
        w.u64(v.to_bits());
    });
}

/// `put_sums` read back, of location `loc`.
fn get_sums(r: &mut Reader, loc: u32) -> Result<Sums, String> {
    let cells = get_list(r, |r| {
        let (rule, cnode) = (r.u32()? as u16, r.u32()?);
        let (sum, n) = (f64::from_bits(r.u64()?), r.u64()?);
        let worst = get_list(r, |r| {
            Ok(Instance {
                loc,
                event: r.u32()?,
                time: r.u64()?,
                value: f64::from_bits(r.u64()?),
            })
        })?;
        let windows = get_list(r, |r| Ok((r.u32()?, f64::from_bits(r.u64()?))))?;
        Ok(CellSum {
            rule,
            cnode,
            sum,
            n,
            worst,
            windows,
        })
    })?;
    let cc = get_list(r, |r| {
        Ok((r.u32()? as u16, r.u32()?, f64::from_bits(r.u64()?)))
    })?;
    Ok(Sums { cells, cc })
}

fn put_u32s(w: &mut Writer, xs: &[u32]) {
    put_list(w, xs, |w, &x| w.u32(x));
}

fn get_u32s(r: &mut Reader) -> Result<Vec<u32>, String> {
    get_list(r, |r| r.u32())
}

fn put_found(w: &mut Writer, f: &ShareFound) {
    put_list(w, &f.callpath, |w, (l, bs)| {
        w.u32(*l);
        put_bookings(w, bs);
    });
    put_list(w, &f.passes, |w, pass| {
        put_list(w, pass, |w, (l, bs, waits, sums)| {
            w.u32(*l);
            put_bookings(w, bs);
            put_list(w, &sums.iter().collect::<Vec<_>>(), |w, s| put_sums(w, s));
            put_list(w, waits, |w, x| {
                let p = x.partner;
                [x.rule as u32, x.loc, x.event, p.0, p.1]
                    .into_iter()
                    .for_each(|v| w.u32(v));
            });
        });
    });
    put_list(w, &f.collectives, |w, (i, bs, v, colls)| {
        w.u32(*i);
        put_bookings(w, bs);
        put_u32s(w, v);
        put_list(w, colls, |w, c| {
            w.u32(c.instance);
            w.u32(c.rule as u32);
        });
    });
    let world = f.world.iter().collect::<Vec<_>>();
    put_list(w, &world, |w, (bs, v)| {
        put_bookings(w, bs);
        put_u32s(w, v);
    });
    for family in &f.threads {
        put_list(w, family, |w, (m, bs, accepted)| {
            w.u32(*m);
            put_bookings(w, bs);
            put_list(w, accepted, |w, &k| w.u32(k as u32));
        });
    }
}

/// One family of `put_found`'s OpenMP instances read back.
fn get_threads(r: &mut Reader) -> Result<Vec<ThreadFound>, String> {
    get_list(r, |r| {
        let (m, bs) = (r.u32()?, get_bookings(r)?);
        Ok((m, bs, get_list(r, |r| Ok(r.u32()? as u16))?))
    })
}

fn get_found(r: &mut Reader) -> Result<ShareFound, String> {
    let callpath = get_list(r, |r| Ok((r.u32()?, get_bookings(r)?)))?;
    let passes = get_list(r, |r| {
        get_list(r, |r| {
            let l = r.u32()?;
            let bs = get_bookings(r)?;
            let sums = get_list(r, |r| get_sums(r, l))?.into_iter().next();
            let waits = get_list(r, |r| {
                let [rule, loc, event, pl, pe] = [r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?];
                Ok(CausedWait {
                    rule: rule as u16,
                    loc,
                    event,
                    partner: (pl, pe),
                })
            })?;
            Ok((l, bs, waits, sums))
        })
    })?;
    let collectives = get_list(r, |r| {
        let i = r.u32()?;
        let (bs, v) = (get_bookings(r)?, get_u32s(r)?);
        let colls = get_list(r, |r| {
            let (instance, rule) = (r.u32()?, r.u32()?);
            Ok(CausedColl {
                instance,
                rule: rule as u16,
            })
        })?;
        Ok((i, bs, v, colls))
    })?;
    let world = get_list(r, |r| Ok((get_bookings(r)?, get_u32s(r)?)))?;
    let threads = [get_threads(r)?, get_threads(r)?];
    Ok(ShareFound {
        callpath,
        passes,
        collectives,
        world: world.into_iter().next(),
        threads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::local;
    use std::sync::atomic::Ordering;

    /// With a rule booking at its partner's location (cells of a location written by other
    /// locations' passes, some before its own: such a location is sent listed, the others
    /// as sums), rank 0's cube, instance statistics and worst instances are the single
    /// process's, bit for bit, at P = 2..4 on every testdata trace (MPI, OpenMP, hybrid).
    #[test]
    fn sums_and_listed_locations_give_the_single_process_cube() {
        let dir = std::env::temp_dir().join(format!("perfexpert-sums-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("other_at.toml"), analysis::OTHER_AT).unwrap();
        let rules = RuleSet::load(std::slice::from_ref(&dir)).unwrap();
        let before = analysis::LISTED.load(Ordering::Relaxed);
        let bits = |v: &[Vec<f64>]| -> Vec<Vec<u64>> {
            v.iter()
                .map(|x| x.iter().map(|f| f.to_bits()).collect())
                .collect()
        };
        for path in local::testdata_traces() {
            let trace = crate::open(&path).unwrap();
            let want = analysis::analyse(&trace, &Replay::new(&trace), rules.clone());
            for p in 2..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    analyse(trace.clone(), keep, rules.clone(), &Wanted::default(), t)
                });
                let whole = got.into_iter().next().unwrap().unwrap().unwrap();
                let (a, at) = (&whole.analysis, format!("{} P = {p}", path.display()));
                assert_eq!(bits(&a.values), bits(&want.values), "{at}");
                assert_eq!(a.stats, want.stats, "{at}");
                for (x, y) in a.worst.iter().zip(&want.worst) {
                    assert_eq!(x.len(), y.len(), "{at}");
                    for (c, w) in x {
                        assert_eq!(w.instances(), y[c].instances(), "{at}");
                    }
                }
            }
        }
        assert!(analysis::LISTED.load(Ordering::Relaxed) > before);
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The wait states booked per phase window, as bits, sorted.
    type WindowBits = Vec<Vec<((u16, u32), Vec<u64>)>>;

    fn window_bits(v: &[analysis::PhaseValues]) -> WindowBits {
        (v.iter())
            .map(|w| {
                let mut x: Vec<_> = (w.iter())
                    .map(|(&k, row)| (k, row.iter().map(|f| f.to_bits()).collect()))
                    .collect();
                x.sort();
                x
            })
            .collect()
    }

    /// With the phases wanted, on every testdata trace (MPI, OpenMP, hybrid) at P = 1..4
    /// threads as processes: the wait states booked per phase window are the single
    /// process's to the bit, and so are the phase summaries.
    #[test]
    fn the_phase_windows_and_summaries_are_the_single_process_ones() {
        use crate::analysis::pipeline::{analyse_trace, Options};
        let rules = RuleSet::load(&[]).unwrap();
        let (mut windows, mut summaries) = (0, 0);
        for path in local::testdata_traces() {
            let trace = crate::open(&path).unwrap();
            let opts = Options {
                phases: true,
                ..Options::new(rules.clone())
            };
            let one = analyse_trace(trace, opts, |w| window_bits(&w.analysis.phase_values));
            let one = one.unwrap();
            let want = format!("{:?}", one.extras.phases);
            windows += one.view.len();
            summaries += one.extras.phases.as_ref().map_or(0, |p| p.len());
            let wanted = Wanted {
                phases: true,
                ..Default::default()
            };
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    analyse(trace.clone(), keep, rules.clone(), &wanted, t)
                });
                let mut got = got.into_iter();
                let whole = got.next().unwrap().unwrap().unwrap();
                assert!(got.all(|g| g.is_ok_and(|w| w.is_none())));
                let at = format!("{} P = {p}", path.display());
                assert_eq!(window_bits(&whole.analysis.phase_values), one.view, "{at}");
                assert_eq!(format!("{:?}", whole.phases), want, "{at}");
            }
        }
        // several traces have several windows
        assert!(windows >= 6 && summaries >= 40, "{windows} {summaries}");
    }
}
