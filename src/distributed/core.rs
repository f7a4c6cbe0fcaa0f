//! The distributed replay as far as it goes: each process runs pass A over its share, the
//! local call trees (with their time, visits and repairs per call path) are exchanged and
//! merged on every process exactly as `Replay::new` merges them (same locations in the same
//! order, so the call-path ids are the single-process ones), and the call-path profile is
//! summed over the locations in location order. Then the message replay (`messages`):
//! matching and collective instances, whose statistics the profile's header shows.

use super::{wire, Transport};
use crate::model::Trace;
use crate::replay::calltree::{CallTree, LocalTree};
use crate::replay::collectives::CollStats;
use crate::replay::matching::MatchStats;
use crate::replay::{self, omp, LocalPass, LocationState, Replay};
use rayon::prelude::*;
use std::io::Write;

/// Visits, exclusive time and repairs per call path of the merged tree, summed over all
/// locations (integers: the sum does not depend on its order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    pub tree: CallTree,
    pub visits: Vec<u64>,
    pub time: Vec<u64>,
    pub repairs: Vec<u64>,
    /// The message replay's statistics (point-to-point matching, collective instances).
    pub matching: MatchStats,
    /// Locations with unmatched sends or receives.
    pub unmatched_locations: u64,
    pub collectives: CollStats,
}

/// What a process holds after the distributed pass A.
pub struct Replayed {
    /// The same on every process (without the message replay's statistics, and before the
    /// OpenMP teams move their fork and join time).
    pub profile: Profile,
    /// The replay state of the locations held here, call paths merged (the others: empty).
    pub states: Vec<LocationState>,
    /// The rank owning each location.
    pub owner: Vec<u32>,
}

/// Pass A over the locations `keep` selects, the trees of all processes exchanged through
/// `t` and merged.
pub fn replay_share(trace: &Trace, keep: &[bool], t: &dyn Transport) -> Result<Replayed, String> {
    let mine = replay::local_passes(trace, keep);
    let mut w = wire::Writer::default();
    let owned: Vec<(u32, &LocalPass)> = (mine.iter().enumerate())
        .filter(|(l, _)| keep.get(*l) == Some(&true))
        .map(|(l, p)| (l as u32, p))
        .collect();
    wire::put_passes(&mut w, &owned);
    drop(owned);
    let n = trace.defs.locations.len();
    let mut all: Vec<Option<LocalPass>> = vec![None; n];
    let mut owner = vec![0u32; n];
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        for (l, p) in wire::get_passes(bytes).map_err(|e| format!("rank {rank}: {e}"))? {
            match all.get_mut(l as usize) {
                Some(slot @ None) => {
                    *slot = Some(p);
                    owner[l as usize] = rank as u32;
                }
                _ => return Err(format!("rank {rank}: location {l} twice or out of range")),
            }
        }
    }
    let passes: Vec<LocalPass> = (all.into_iter().enumerate())
        .map(|(l, p)| p.ok_or_else(|| format!("location {l}: replayed by no process")))
        .collect::<Result<_, _>>()?;
    let (profile, maps) = merge(trace, &passes);
    drop(passes);
    let ncn = profile.tree.len();
    let states = (mine.into_par_iter().zip(maps).enumerate())
        .map(|(l, (p, map))| match keep.get(l) {
            Some(true) => p.into_state(&trace.events[l], &map, ncn),
            _ => LocationState::default(),
        })
        .collect();
    Ok(Replayed {
        profile,
        states,
        owner,
    })
}

/// The whole distributed replay of a share: pass A and the call-tree merge
/// (`replay_share`), the OpenMP teams of the processes held here (`omp::build`: the threads
/// of a process are on one process, so this is local work; the time it moves summed over
/// the job), then the message replay (`messages::replay_messages`); the profile with its
/// statistics, the same on every process.
pub fn replay_all(trace: &Trace, keep: &[bool], t: &dyn Transport) -> Result<Profile, String> {
    let Replayed {
        mut profile,
        mut states,
        owner,
    } = replay_share(trace, keep, t)?;
    let openmp = omp::has_openmp(trace);
    let (master, thread) = omp::masters(trace, openmp);
    if openmp {
        let kinds = omp::region_kinds(trace);
        omp::build(
            trace,
            &profile.tree,
            &mut states,
            &kinds,
            master.clone(),
            thread,
        );
        profile.time = job_sum(&states, keep, profile.tree.len(), t)?;
    }
    let m = super::messages::replay_messages(trace, keep, &owner, &states, &master, t)?;
    profile.matching = m.matched.stats;
    profile.unmatched_locations = m.matched.unmatched.len() as u64;
    profile.collectives = m.collectives;
    Ok(profile)
}

/// The exclusive time per call path of the locations held, summed over the job (integers:
/// the sum does not depend on its order).
fn job_sum(
    states: &[LocationState],
    keep: &[bool],
    ncn: usize,
    t: &dyn Transport,
) -> Result<Vec<u64>, String> {
    let mut mine = vec![0u64; ncn];
    for (s, _) in states.iter().zip(keep).filter(|(_, &k)| k) {
        for (a, b) in mine.iter_mut().zip(&s.time) {
            *a += b;
        }
    }
    let mut w = wire::Writer::default();
    mine.iter().for_each(|&x| w.u64(x));
    let mut sum = vec![0u64; ncn];
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = wire::Reader::new(bytes);
        for x in sum.iter_mut() {
            *x += r.u64().map_err(|e| format!("rank {rank}: {e}"))?;
        }
    }
    Ok(sum)
}

/// The passes of all locations merged and summed, and each location's map from its local
/// call paths to the merged ones.
fn merge(trace: &Trace, passes: &[LocalPass]) -> (Profile, Vec<Vec<u32>>) {
    let trees: Vec<LocalTree> = passes.iter().map(|p| p.tree.clone()).collect();
    let loc_ids: Vec<u64> = trace.defs.locations.iter().map(|l| l.id).collect();
    let region_ids: Vec<u64> = trace.defs.regions.iter().map(|r| r.id).collect();
    let (tree, maps) = replay::calltree::merge(&trees, &loc_ids, &region_ids);
    let ncn = tree.len();
    let mut p = Profile {
        tree,
        visits: vec![0; ncn],
        time: vec![0; ncn],
        repairs: vec![0; ncn],
        ..Default::default()
    };
    for (pass, map) in passes.iter().zip(&maps) {
        for (k, &g) in map.iter().enumerate() {
            let g = g as usize;
            p.visits[g] += pass.visits.get(k).copied().unwrap_or(0);
            p.time[g] += pass.time.get(k).copied().unwrap_or(0);
            p.repairs[g] += pass.repairs.get(k).copied().unwrap_or(0);
        }
    }
    (p, maps)
}

impl Profile {
    /// The profile of a single-process replay.
    pub fn of_replay(replay: &Replay) -> Profile {
        let ncn = replay.tree.len();
        let mut p = Profile {
            tree: replay.tree.clone(),
            visits: vec![0; ncn],
            time: vec![0; ncn],
            repairs: vec![0; ncn],
            matching: replay.matching,
            unmatched_locations: replay.unmatched_locations.len() as u64,
            collectives: replay.collectives,
        };
        for s in &replay.locations {
            for (sum, v) in [
                (&mut p.visits, &s.visits),
                (&mut p.time, &s.time),
                (&mut p.repairs, &s.repairs),
            ] {
                for (a, b) in sum.iter_mut().zip(v) {
                    *a += b;
                }
            }
        }
        p
    }

    /// One line per call path in call-tree order: its path, visits, exclusive and inclusive
    /// time in seconds, repairs.
    pub fn write(&self, trace: &Trace, w: &mut dyn Write) -> std::io::Result<()> {
        let incl = omp::inclusive(&self.tree, &self.time);
        let named = Replay {
            tree: self.tree.clone(),
            ..Default::default()
        };
        let res = trace.timer_resolution.max(1) as f64;
        writeln!(
            w,
            "# call-path profile of {}: {} call paths over {} locations",
            trace.path.display(),
            self.tree.len(),
            trace.defs.locations.len()
        )?;
        let (m, c) = (&self.matching, &self.collectives);
        writeln!(
            w,
            "# messages: {} matched, {} sends and {} receives unmatched on {} locations, {} \
             clock-condition violations (largest {} ticks) on {} locations, {} unresolved \
             peers, {} records outside MPI calls",
            m.messages,
            m.unmatched_sends,
            m.unmatched_receives,
            self.unmatched_locations,
            m.clock_violations,
            m.max_violation_ticks,
            m.violation_locations,
            m.unresolved_peers,
            m.ignored_records
        )?;
        writeln!(
            w,
            "# collective instances: {}, {} incomplete, {} COLL_ENDs on communicators \
             without members",
            c.instances, c.incomplete, c.unresolved
        )?;
        writeln!(w, "# call path\tvisits\texclusive s\tinclusive s\trepairs")?;
        for (c, incl) in incl.iter().enumerate() {
            writeln!(
                w,
                "{}\t{}\t{:.9}\t{:.9}\t{}",
                named.path_name(trace, c as u32),
                self.visits[c],
                self.time[c] as f64 / res,
                *incl as f64 / res,
                self.repairs[c]
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::local;

    /// Every location's pass on its owner, for P = 1..4 threads as processes: the profile
    /// of the single-process replay, on every process.
    #[test]
    fn the_distributed_profile_is_the_single_process_one() {
        for path in [
            "testdata/scorep/ls/traces.otf2",
            "testdata/scorep/npb_lu_S/traces.otf2",
            "testdata/scorep/nb/traces.otf2",
            "testdata/scorep-omp/omp_fork/traces.otf2",
            "testdata/scorep-omp/hybrid/traces.otf2",
            "testdata/generated/omp_tasks2/traces.otf2",
            "testdata/generated/omp_teams4/traces.otf2",
            // Paje declares no event counts: the share is balanced by the events read
            "testdata/smpi/late_broadcast/trace-sizes.paje",
        ] {
            let Ok(whole) = crate::formats::open(path.as_ref()) else {
                panic!("{path}: cannot read");
            };
            let want = Profile::of_replay(&Replay::new(&whole));
            for p in 1..=4 {
                let got = local::on_shares(path.as_ref(), p, |trace, keep, t| {
                    replay_all(trace, keep, t)
                });
                for g in got {
                    assert_eq!(g.as_ref(), Ok(&want), "{path}, P = {p}");
                }
            }
        }
    }
}
