//! The distributed message replay (issue 24): point-to-point matching and collective
//! instances over the shares of a job, with the single-process replay's results.
//!
//! Matching: each process collects and sorts its processes' sends and receives as
//! `replay::matching` does, ships every run whose peer process is elsewhere to that peer's
//! owner (one `all_to_all`: per side its location, event, tag and time, 20 bytes), and
//! pairs its runs with the local ones and the shipped ones exactly as the single process
//! pairs them; so `sendptr`/`recvptr` and the request links of every location held are the
//! single-process ones, as (location, event) pairs in the owner's numbering. The statistics,
//! the clock-condition violators and the unmatched locations are then summed and united over
//! the job (one `all_gather`).
//!
//! Collective instances: every process finds its locations' COLL_ENDs, they are gathered
//! (8 bytes a COLL_END, one `all_gather`) and grouped on every process in location order
//! by `replay::collectives::group`, giving the single-process instance list.

use super::wire::{Reader, Writer};
use super::Transport;
use crate::model::{CommIdx, Trace};
use crate::replay::collectives::{self, CollStats, Instance};
use crate::replay::matching::{self, Matched, RemoteRun};
use crate::replay::LocationState;
use std::collections::BTreeSet;

/// What crosses processes in the message replay, as each process ends up with it.
#[derive(Debug, Default)]
pub struct Messages {
    /// Links of the locations held here (the others' empty), the job's statistics,
    /// violators and unmatched locations.
    pub matched: Matched,
    /// Every collective instance of the trace and the statistics.
    pub instances: Vec<Instance>,
    pub collectives: CollStats,
}

/// Match the messages and form the collective instances of a share: `keep` the locations
/// held, `owner[l]` the rank owning location `l`, `states[l]` the replay state of every
/// held location (its pointer column says which records lie inside an MPI call), `master`
/// the process of each location (`replay::omp::masters`).
pub fn replay_messages(
    trace: &Trace,
    keep: &[bool],
    owner: &[u32],
    states: &[LocationState],
    master: &[u32],
    t: &dyn Transport,
) -> Result<Messages, String> {
    let share = matching::collect_share(trace, states, master, Some(keep));
    let mut to = vec![Writer::default(); t.size()];
    for run in share.outgoing(trace) {
        let r = owner.get(run.peer as usize).copied().unwrap_or(0) as usize;
        put_run(&mut to[r.min(t.size() - 1)], &run);
    }
    let got = t.all_to_all(to.into_iter().map(|w| w.0).collect())?;
    let mut remote = Vec::new();
    for (rank, bytes) in got.iter().enumerate() {
        let mut r = Reader::new(bytes);
        while !r.is_done() {
            remote.push(get_run(&mut r).map_err(|e| format!("rank {rank}: {e}"))?);
        }
    }
    let mut matched = share.pair(trace, remote);
    job_totals(&mut matched, t)?;
    let (instances, collectives) = instances(trace, keep, master, t)?;
    Ok(Messages {
        matched,
        instances,
        collectives,
    })
}

fn put_run(w: &mut Writer, run: &RemoteRun) {
    w.u32(run.proc);
    w.u32(run.recv as u32);
    w.u32(run.comm);
    w.u32(run.peer);
    w.u32(run.sides.len() as u32);
    for &(l, i, tag, time) in &run.sides {
        w.u32(l);
        w.u32(i);
        w.u32(tag);
        w.u64(time);
    }
}

fn get_run(r: &mut Reader) -> Result<RemoteRun, String> {
    let (proc, recv, comm, peer) = (r.u32()?, r.u32()? != 0, r.u32()?, r.u32()?);
    let n = r.u32()? as usize;
    let mut sides = Vec::with_capacity(n.min(1 << 20));
    for _ in 0..n {
        sides.push((r.u32()?, r.u32()?, r.u32()?, r.u64()?));
    }
    Ok(RemoteRun {
        proc,
        recv,
        comm,
        peer,
        sides,
    })
}

/// The statistics, violators and unmatched locations of every process, summed and united:
/// on every process the single-process values.
fn job_totals(m: &mut Matched, t: &dyn Transport) -> Result<(), String> {
    let mut w = Writer::default();
    let s = &m.stats;
    for x in [
        s.messages,
        s.unmatched_sends,
        s.unmatched_receives,
        s.unresolved_peers,
        s.ignored_records,
        s.clock_violations,
        s.max_violation_ticks,
    ] {
        w.u64(x);
    }
    for list in [&m.violators, &m.unmatched] {
        w.u32(list.len() as u32);
        list.iter().for_each(|&l| w.u32(l));
    }
    let mut stats = matching::MatchStats::default();
    let (mut violators, mut unmatched) = (BTreeSet::new(), BTreeSet::new());
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(bytes);
        let mut read = || -> Result<(), String> {
            stats.messages += r.u64()?;
            stats.unmatched_sends += r.u64()?;
            stats.unmatched_receives += r.u64()?;
            stats.unresolved_peers += r.u64()?;
            stats.ignored_records += r.u64()?;
            stats.clock_violations += r.u64()?;
            stats.max_violation_ticks = stats.max_violation_ticks.max(r.u64()?);
            for set in [&mut violators, &mut unmatched] {
                for _ in 0..r.u32()? {
                    set.insert(r.u32()?);
                }
            }
            Ok(())
        };
        read().map_err(|e| format!("rank {rank}: {e}"))?;
    }
    stats.violation_locations = violators.len() as u64;
    m.stats = stats;
    m.violators = violators.into_iter().collect();
    m.unmatched = unmatched.into_iter().collect();
    Ok(())
}

/// The collective instances of the whole trace, on every process: the COLL_ENDs of each
/// share gathered, grouped in location order as the single-process replay groups them.
fn instances(
    trace: &Trace,
    keep: &[bool],
    master: &[u32],
    t: &dyn Transport,
) -> Result<(Vec<Instance>, CollStats), String> {
    let mine = collectives::coll_ends(trace, Some(keep));
    let mut w = Writer::default();
    for (l, ends) in mine.iter().enumerate().filter(|(_, e)| !e.is_empty()) {
        w.u32(l as u32);
        w.u32(ends.len() as u32);
        for &(comm, i) in ends {
            w.u32(comm);
            w.u32(i);
        }
    }
    drop(mine);
    let n = trace.events.len();
    let mut found: Vec<Vec<(CommIdx, u32)>> = vec![Vec::new(); n];
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(bytes);
        let mut read = || -> Result<(), String> {
            while !r.is_done() {
                let l = r.u32()? as usize;
                let k = r.u32()? as usize;
                let slot = found
                    .get_mut(l)
                    .filter(|s| s.is_empty())
                    .ok_or_else(|| format!("location {l} twice or out of range"))?;
                for _ in 0..k {
                    slot.push((r.u32()?, r.u32()?));
                }
            }
            Ok(())
        };
        read().map_err(|e| format!("rank {rank}: {e}"))?;
    }
    Ok(collectives::group(trace, master, found))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::local;
    use crate::replay::{omp, Replay};

    /// For P = 1..4 threads as processes: every held location's links, and the job's
    /// statistics, violators, unmatched locations and collective instances, are the
    /// single-process replay's.
    #[test]
    fn the_distributed_message_replay_is_the_single_process_one() {
        let paths = local::testdata_traces();
        for path in &paths {
            let path = path.to_string_lossy();
            let path = path.as_ref();
            let Ok(whole) = crate::formats::open(path.as_ref()) else {
                panic!("{path}: cannot read");
            };
            let want = Replay::new(&whole);
            for p in 1..=4 {
                let got = local::on_shares(path.as_ref(), p, |trace, keep, t| {
                    let r = crate::distributed::core::replay_share(trace, keep, t)?;
                    let (master, _) = omp::masters(trace, omp::has_openmp(trace));
                    let m = replay_messages(trace, keep, &r.owner, &r.states, &master, t)?;
                    Ok((keep.to_vec(), m))
                });
                for g in got {
                    let (keep, m) = g.unwrap_or_else(|e| panic!("{path}, P = {p}: {e}"));
                    let what = format!("{path}, P = {p}");
                    assert_eq!(m.matched.stats, want.matching, "{what}");
                    assert_eq!(m.matched.violators, want.p2p_violators, "{what}");
                    assert_eq!(m.matched.unmatched, want.unmatched_locations, "{what}");
                    assert_eq!(m.instances, want.instances, "{what}");
                    assert_eq!(m.collectives, want.collectives, "{what}");
                    for (l, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
                        let (a, b) = (&m.matched.links[l], &want.msg_links[l]);
                        assert_eq!(&a.partner[..], &b.partner[..], "{what}, location {l}");
                        for k in 0..b.partner.len() {
                            assert_eq!(a.request_event(k), b.request_event(k), "{what}");
                            assert_eq!(a.cancelled(k), b.cancelled(k), "{what}");
                        }
                    }
                }
            }
        }
    }
}
