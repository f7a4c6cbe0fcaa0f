//! Collective-operation instances (patterns.md §5.4): the k-th COLL_END on a communicator on
//! each of its members forms instance k.

use super::matching::EventRef;
use crate::model::{CommIdx, EventKind, Trace};
use rayon::prelude::*;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    pub comm: CommIdx,
    /// Sequence number on its communicator (0-based).
    pub seq: u32,
    /// The COLL_END event of each member, in communicator rank order.
    pub members: Vec<EventRef>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CollStats {
    pub instances: u64,
    /// Instances some member never reached (truncated traces), skipped by the patterns.
    pub incomplete: u64,
    /// COLL_END records on communicators without a member list.
    pub unresolved: u64,
}

/// Group the MPI collective operations (blocking: MpiCollectiveEnd) into instances.
/// `master[l]` is the location that stands for `l`'s process in the communicators (its
/// master thread): a collective called on any thread of a process is that process's.
pub fn instances(trace: &Trace, master: &[u32]) -> (Vec<Instance>, CollStats) {
    group(trace, master, coll_ends(trace, None))
}

/// The COLL_ENDs of each location `keep` selects (all when `None`; the others: none) as
/// (communicator, event), found in parallel; `run --mpi` exchanges them (issue 24).
pub fn coll_ends(trace: &Trace, keep: Option<&[bool]>) -> Vec<Vec<(CommIdx, u32)>> {
    trace
        .events
        .par_iter()
        .enumerate()
        .map(|(l, ev)| {
            if keep.is_some_and(|k| k.get(l) != Some(&true)) {
                return Vec::new();
            }
            // the kind column as bytes, searched with memchr (few events are COLL_ENDs)
            let kinds = crate::model::spill::bytes_of(&ev.kind[..]);
            let f = memchr::memchr_iter(EventKind::MpiCollectiveEnd as u8, kinds)
                .map(|i| (ev.coll.comm[ev.arg[i] as usize], i as u32))
                .collect();
            ev.release_resident();
            f
        })
        .collect()
}

/// The instances of the COLL_ENDs of every location (`found`, per location in location
/// order), as `instances` forms them.
pub fn group(
    trace: &Trace,
    master: &[u32],
    found: Vec<Vec<(CommIdx, u32)>>,
) -> (Vec<Instance>, CollStats) {
    // per (comm, process): the COLL_END events (location, event) in trace order
    let mut seqs: HashMap<(CommIdx, u32), Vec<EventRef>> = HashMap::new();
    let mut stats = CollStats::default();
    for (l, f) in found.into_iter().enumerate() {
        let p = master.get(l).copied().unwrap_or(l as u32);
        for (comm, i) in f {
            seqs.entry((comm, p)).or_default().push(EventRef {
                loc: l as u32,
                event: i,
            });
        }
    }
    let mut comms: Vec<CommIdx> = seqs.keys().map(|k| k.0).collect();
    comms.sort_unstable();
    comms.dedup();
    let mut out = Vec::new();
    for comm in comms {
        let c = &trace.defs.comms[comm as usize];
        let members: Vec<u32> = match &c.ranks {
            crate::model::CommRanks::Locations(v) => {
                v.iter().map(|x| x.unwrap_or(u32::MAX)).collect()
            }
            crate::model::CommRanks::SelfOnly => {
                // every caller forms its own size-1 instances
                let mut callers: Vec<u32> =
                    seqs.keys().filter(|k| k.0 == comm).map(|k| k.1).collect();
                callers.sort_unstable();
                for l in callers {
                    for (k, &e) in seqs[&(comm, l)].iter().enumerate() {
                        out.push(Instance {
                            comm,
                            seq: k as u32,
                            members: vec![e],
                        });
                        stats.instances += 1;
                    }
                }
                continue;
            }
            crate::model::CommRanks::Unknown => {
                stats.unresolved += seqs
                    .iter()
                    .filter(|(k, _)| k.0 == comm)
                    .map(|(_, v)| v.len() as u64)
                    .sum::<u64>();
                continue;
            }
        };
        let lists: Vec<&[EventRef]> = members
            .iter()
            .map(|&l| seqs.get(&(comm, l)).map_or(&[][..], |v| v.as_slice()))
            .collect();
        let longest = lists.iter().map(|v| v.len()).max().unwrap_or(0);
        let complete = lists.iter().map(|v| v.len()).min().unwrap_or(0);
        for k in 0..longest {
            if k >= complete {
                stats.incomplete += 1;
                continue;
            }
            out.push(Instance {
                comm,
                seq: k as u32,
                members: lists.iter().map(|v| v[k]).collect(),
            });
            stats.instances += 1;
        }
    }
    (out, stats)
}
