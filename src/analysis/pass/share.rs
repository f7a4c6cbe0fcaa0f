//! `run --mpi` (issue 24): the rule passes over what one process owns, and the cube of a
//! job. `share_passes` runs, on a process's ghosted trace (`distributed::ghost`), the
//! call-path, event, receive and send passes over the locations it owns (accumulating: a
//! location's own cells leave as sums, counts and worst instances, only the instances
//! booked at other locations one by one; a location whose cell an earlier location's pass
//! booked first is passed again listing every instance, as `analyse` does, bit for bit the
//! same sums, `location`'s test), the collective pass over the instances it owns and, on
//! one process, the world-call pass; the `had` lists, and which cells each location booked
//! at others, are exchanged after each location pass (a later pass, a collective or a world
//! rule reads `had()` of every location). Every booking leaves keyed in the owner's
//! numbering with the tick of its event. `assemble` adds every
//! process's bookings to one cube in the single-process order (call paths; each location
//! pass location by location; collective instances in instance order; world calls), then
//! the sums and derived metrics, as `analyse` does.

use super::{callpath, collective, derived, instances, location, team, thread_barrier, world};
use crate::analysis::cube::{
    self, CausedColl, CausedWait, Cell, Contribution, Cube, Found, Instance, PhaseBook, Violations,
};
use crate::analysis::fire::Engine;
use crate::analysis::plan::Plan;
use crate::analysis::Analysis;
use crate::model::Trace;
use crate::replay::{Replay, NONE};
use crate::rules::{RuleSet, Trigger};
use rayon::prelude::*;
use std::collections::HashMap;

/// One value a rule instance books, keyed in the owner's numbering, with the tick of its
/// event (0 for call-path values, which have none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Booking {
    pub rule: u16,
    pub cnode: u32,
    pub loc: u32,
    pub event: u32,
    pub time: u64,
    pub value: f64,
    /// Touched by a clock-condition violation; from a reconstructed collective.
    pub cc: bool,
    pub rec: bool,
}

/// One owned location's bookings in one location pass (with `Sums`: those at other
/// locations; without: every instance), its caused waits and its own cells' sums.
pub type LocFound = (u32, Vec<Booking>, Vec<CausedWait>, Option<Sums>);

/// A location's own cells as its pass summed them (from 0.0, in event order) and the
/// clock-touched share of each instance in the order found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sums {
    pub cells: Vec<CellSum>,
    /// (rule, call path, value).
    pub cc: Vec<(u16, u32, f64)>,
}

/// One (rule, call path) cell of a location: its sum, instance count and worst instances
/// (events in the owner's numbering).
#[derive(Clone, Debug, PartialEq)]
pub struct CellSum {
    pub rule: u16,
    pub cnode: u32,
    pub sum: f64,
    pub n: u64,
    pub worst: Vec<Instance>,
    /// With phase windows, a wait state's non-zero sums per window: (window, sum).
    pub windows: Vec<(u32, f64)>,
}

/// A cell a location pass booked at another location: (rule, call path, location booked
/// at, location whose pass booked it).
pub type Written = (u16, u32, u32, u32);

/// One owned collective instance (its index in the whole trace's list): its bookings, the
/// locations of its members that violated the clock condition, the causes it recorded.
pub type InstFound = (u32, Vec<Booking>, Vec<u32>, Vec<CausedColl>);

/// One OpenMP instance (team or thread barrier) of a process held here: the process's
/// master location, the instance's bookings, and the rules with a thread `[cause]` that
/// accepted it. A family's instances are the single process's, master by master.
pub type ThreadFound = (u32, Vec<Booking>, Vec<u16>);

/// What one process's passes found on what it owns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShareFound {
    /// Per owned location: its call-path values.
    pub callpath: Vec<(u32, Vec<Booking>)>,
    /// Per location pass with rules (event, receive, send), per owned location.
    pub passes: Vec<Vec<LocFound>>,
    pub collectives: Vec<InstFound>,
    /// The world-call pass's bookings and violators, on the process that ran it.
    pub world: Option<(Vec<Booking>, Vec<u32>)>,
    /// The OpenMP teams, then the thread barriers, of the processes held here.
    pub threads: [Vec<ThreadFound>; 2],
}

/// Locations whose pass was run again listing every instance (`share_passes`).
#[cfg(test)]
pub(crate) static LISTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A process's event numbering against the owners'.
pub trait Numbering: Sync {
    /// Event `i` of location `l` here: its index on the location's owner.
    fn original(&self, l: u32, i: u32) -> u32;
    /// The owner's event `i` of location `l`: its index here, if held or a ghost here.
    fn local(&self, l: u32, i: u32) -> Option<u32>;
}

/// Every process's new `had` entries (rule, location, key event in the owner's numbering)
/// and cells booked at other locations (`Written`) from this process's: the job's, in rank
/// order.
pub type HadExchange<'a> =
    &'a mut dyn FnMut(
        Vec<(u16, u32, u32)>,
        Vec<Written>,
    ) -> Result<(Vec<(u16, u32, u32)>, Vec<Written>), String>;

/// What the passes find here: the locations `owned`, the collective instances of
/// `replay.instances` whose `owned_instances` is set (`instance_of`: their indices in the
/// whole trace's list), the world-call pass when `world`, the OpenMP teams and thread
/// barriers of the replay (those of the processes held here); with phase windows starting
/// at `bounds` (`analysis::analyse_phased`), each own cell's sums per window.
#[allow(clippy::too_many_arguments)]
pub fn share_passes(
    trace: &Trace,
    replay: &Replay,
    rules: &RuleSet,
    owned: &[bool],
    (owned_instances, instance_of): (&[bool], &[u32]),
    world: bool,
    bounds: &[u64],
    num: &dyn Numbering,
    exchange: HadExchange,
) -> Result<ShareFound, String> {
    let plan = Plan::new(trace, replay, rules);
    let eng = Engine::new(trace, replay, &plan);
    let locs: Vec<usize> = (0..trace.events.len())
        .filter(|&l| owned.get(l) == Some(&true))
        .collect();
    let books = |cs: &[Contribution]| -> Vec<Booking> {
        (cs.iter())
            .map(|c| {
                let held = c.event != NONE;
                Booking {
                    rule: c.rule,
                    cnode: c.cnode,
                    loc: c.loc,
                    event: if held {
                        num.original(c.loc, c.event)
                    } else {
                        NONE
                    },
                    time: if held {
                        trace.events[c.loc as usize].time.get(c.event as usize)
                    } else {
                        0
                    },
                    value: c.value,
                    cc: c.cc,
                    rec: c.rec,
                }
            })
            .collect()
    };
    let mut found = ShareFound::default();
    let cp_rules = plan.by_trigger(Trigger::Callpath);
    if !cp_rules.is_empty() {
        found.callpath = (locs.par_iter())
            .map(|&l| (l as u32, books(&callpath::location(&eng, &cp_rules, l))))
            .collect();
    }
    let mut had: Vec<Vec<(u32, u32)>> = vec![Vec::new(); plan.rs.rules.len()];
    let book = PhaseBook::new(&plan.rs.rules, bounds);
    let walk = |pr, had: &[Vec<(u32, u32)>], l: usize, acc| {
        let p = location::walk(&eng, pr, had, l, Vec::new(), acc);
        trace.events[l].release_resident();
        p
    };
    for pr in &plan.passes {
        let done: Vec<location::LocPass> = (locs.par_iter())
            .map(|&l| walk(pr, &had, l, Some(&book)))
            .collect();
        let mine = (done.iter().flat_map(|p| &p.had))
            .map(|&(k, l, e)| (k as u16, l, num.original(l, e)))
            .collect();
        let mut written: Vec<Written> = (done.iter())
            .flat_map(|p| (p.out.iter()).map(|c| (c.rule, c.cnode, c.loc, p.loc)))
            .collect();
        written.sort_unstable();
        written.dedup_by_key(|w| (w.0, w.1, w.2));
        let (new_had, written) = exchange(mine, written)?;
        // the first location whose pass booked each cell at another location
        let mut first: HashMap<(u16, u32, u32), u32> = HashMap::new();
        for (k, c, at, by) in written {
            let f = first.entry((k, c, at)).or_insert(by);
            *f = (*f).min(by);
        }
        let orig = |(l, i): (u32, u32)| (l, num.original(l, i));
        let sent: Vec<LocFound> = (done.into_par_iter())
            .map(|p| {
                let waits = (p.waits.iter())
                    .map(|w| CausedWait {
                        event: num.original(w.loc, w.event),
                        partner: orig(w.partner),
                        ..*w
                    })
                    .collect();
                let acc = p.acc.as_ref().expect("accumulating pass");
                let early = |c: &Cell| {
                    first
                        .get(&(c.rule, c.cnode, p.loc))
                        .is_some_and(|&b| b < p.loc)
                };
                if acc.cells.iter().any(early) {
                    #[cfg(test)]
                    LISTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    // as `analyse`: the pass again, listing every instance
                    let again = walk(pr, &had, p.loc as usize, None);
                    return (p.loc, books(&again.out), waits, None);
                }
                (p.loc, books(&p.out), waits, Some(sums_of(acc, p.loc, num)))
            })
            .collect();
        found.passes.push(sent);
        for (k, l, e) in new_had {
            if let (Some(h), Some(i)) = (had.get_mut(k as usize), num.local(l, e)) {
                h.push((l, i));
            }
        }
        had.iter_mut().for_each(|h| h.sort_unstable());
    }
    let coll_rules = plan.by_trigger(Trigger::Collective);
    if !coll_rules.is_empty() {
        let (insts, rec) = collective::collectives(&eng);
        let (mut picked, mut rec_of, mut index) = (Vec::new(), Vec::new(), Vec::new());
        for (i, inst) in insts.into_iter().enumerate() {
            if owned_instances.get(i) == Some(&true) {
                picked.push(inst);
                rec_of.push(rec.get(i).copied().unwrap_or(false));
                index.push(instance_of.get(i).copied().unwrap_or(NONE));
            }
        }
        let per = instances::run_each(&eng, &had, &coll_rules, &picked, 3, &rec_of);
        found.collectives = (index.iter().zip(per))
            .map(|(&ii, (c, v, colls))| {
                let colls = (colls.into_iter())
                    .map(|x| CausedColl { instance: ii, ..x })
                    .collect();
                (ii, books(&c), v, colls)
            })
            .collect();
    }
    if world {
        let (c, v) = world::found(&eng, &had);
        found.world = Some((books(&c), v));
    }
    found.threads = thread_families(&eng, &had, &books);
    Ok(found)
}

/// The team and thread-barrier passes (`team::run`, `thread_barrier::run`) over the
/// replay's teams and barriers, each instance with its process's master.
fn thread_families(
    eng: &Engine,
    had: &[Vec<(u32, u32)>],
    books: &dyn Fn(&[Contribution]) -> Vec<Booking>,
) -> [Vec<ThreadFound>; 2] {
    let omp = &eng.replay.omp;
    let team_master = |t: u32| omp.teams.get(t as usize).map_or(NONE, |t| t.master);
    let families = [
        (
            Trigger::Team,
            3,
            omp.teams.iter().map(|t| t.master).collect::<Vec<_>>(),
        ),
        (
            Trigger::ThreadBarrier,
            1,
            omp.barriers.iter().map(|b| team_master(b.team)).collect(),
        ),
    ];
    families.map(|(trigger, nbind, masters)| {
        let rules = eng.plan.by_trigger(trigger);
        if rules.is_empty() {
            return Vec::new();
        }
        let insts = match trigger {
            Trigger::Team => team::teams(eng),
            _ => thread_barrier::barriers(eng),
        };
        let per = instances::run_each(eng, had, &rules, &insts, nbind, &[]);
        (masters.into_iter().zip(per))
            .map(|(m, (c, _, colls))| (m, books(&c), colls.iter().map(|x| x.rule).collect()))
            .collect()
    })
}

/// What a location `l`'s accumulating pass summed on its own cells, events in the owner's
/// numbering.
fn sums_of(acc: &location::Acc, l: u32, num: &dyn Numbering) -> Sums {
    let cells = (acc.cells.iter())
        .map(|c| {
            let (sum, n, worst) = c.parts();
            let worst = (worst.iter())
                .map(|x| Instance {
                    event: num.original(l, x.event),
                    ..*x
                })
                .collect();
            let windows = (c.phase_sums().iter().enumerate())
                .filter(|(_, &v)| v != 0.0)
                .map(|(p, &v)| (p as u32, v))
                .collect();
            CellSum {
                rule: c.rule,
                cnode: c.cnode,
                sum,
                n,
                worst,
                windows,
            }
        })
        .collect();
    Sums {
        cells,
        cc: acc.cc.clone(),
    }
}

/// The analysis of the whole trace from every process's `ShareFound`, on a process whose
/// `trace` and `replay` hold the definitions, the merged call tree and the job's matching
/// statistics and violators (`distributed::ghost`); with the phase windows starting at
/// `bounds` that the passes booked (`share_passes`).
pub fn assemble(
    trace: &Trace,
    replay: &Replay,
    rules: RuleSet,
    found: &[ShareFound],
    bounds: &[u64],
) -> Result<Analysis, String> {
    let plan = Plan::new(trace, replay, &rules);
    let mut cube = Cube::new(trace, replay, &plan.rs.rules);
    cube.set_windows(bounds);
    let book = cube.book();
    let add = |cube: &mut Cube, bs: &[Booking]| {
        for b in bs {
            let c = Contribution {
                rule: b.rule,
                cnode: b.cnode,
                loc: b.loc,
                event: b.event,
                value: b.value,
                cc: b.cc,
                rec: b.rec,
            };
            cube.add(Found::Timed(&c, b.time));
        }
    };
    let mut cp: Vec<&(u32, Vec<Booking>)> = found.iter().flat_map(|f| &f.callpath).collect();
    cp.sort_by_key(|x| x.0);
    cp.iter().for_each(|x| add(&mut cube, &x.1));
    for p in 0..plan.passes.len() {
        let mut per: Vec<&LocFound> = found
            .iter()
            .flat_map(|f| f.passes.get(p))
            .flatten()
            .collect();
        per.sort_by_key(|x| x.0);
        for (l, b, w, sums) in per {
            cube.waits.extend_from_slice(w);
            let Some(s) = sums else {
                add(&mut cube, b);
                continue;
            };
            let cells: Vec<Cell> = (s.cells.iter())
                .map(|c| {
                    let mut cell = Cell::from_parts(c.rule, c.cnode, c.sum, c.n, &c.worst);
                    if let (Some(book), false) = (&book, c.windows.is_empty()) {
                        let mut sums = vec![0.0; book.bounds.len() + 1];
                        for &(p, v) in &c.windows {
                            if let Some(x) = sums.get_mut(p as usize) {
                                *x = v;
                            }
                        }
                        cell.set_phase_sums(book, sums);
                    }
                    cell
                })
                .collect();
            if !cube.unwritten(&cells, *l) {
                return Err(format!(
                    "location {l}: a cell summed by its process was booked before by another"
                ));
            }
            cells.iter().for_each(|c| cube.add(Found::Own(c, *l)));
            add(&mut cube, b);
            s.cc.iter()
                .for_each(|&(k, c, v)| cube.add(Found::Cc(k, c, v)));
        }
    }
    let mut violators = Vec::new();
    let mut colls: Vec<&InstFound> = found.iter().flat_map(|f| &f.collectives).collect();
    colls.sort_by_key(|x| x.0);
    for (_, b, v, cc) in colls {
        add(&mut cube, b);
        cube.colls.extend_from_slice(cc);
        violators.extend_from_slice(v);
    }
    for (b, v) in found.iter().filter_map(|f| f.world.as_ref()) {
        add(&mut cube, b);
        violators.extend_from_slice(v);
    }
    // the teams, then the barriers, in the single process's order: master by master
    for family in 0..2 {
        let mut per: Vec<&ThreadFound> = found.iter().flat_map(|f| &f.threads[family]).collect();
        per.sort_by_key(|x| x.0);
        for (ii, (_, b, accepted)) in per.into_iter().enumerate() {
            add(&mut cube, b);
            (cube.colls).extend(accepted.iter().map(|&rule| CausedColl {
                instance: ii as u32,
                rule,
            }));
        }
    }
    let violations = Violations::of(trace, replay, &violators);
    let eng = Engine::new(trace, replay, &plan);
    derived::run(&eng, &mut cube);
    let order = cube::report_order(trace, &plan.rs.rules, &plan.children);
    Ok(cube.finish(order, violations, rules))
}
