//! What of a run the comparison keeps, taken while its trace and replay exist: per location
//! the symbol sequence (one symbol per ENTER: the region name, with `calls+messages` also
//! the peer rank and tag of a point-to-point call), each symbol's call path and time span,
//! the call-path names, and the run's wait-state findings. Symbols are strings here; `mod.rs`
//! interns them across both runs.

use crate::analysis::pipeline::Whole;
use crate::model::{EventKind, LocationGroupKind};
use std::collections::HashMap;

/// Which events become symbols.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Alphabet {
    /// One symbol per ENTER: its region name.
    Calls,
    /// As `calls`, and a point-to-point call's symbol also holds its peer rank and tag.
    #[value(name = "calls+messages")]
    #[serde(rename = "calls+messages")]
    CallsMessages,
}

/// One location's symbols.
#[derive(Clone, Debug, Default)]
pub struct LocSeq {
    /// The MPI rank (or, without one, the process's position among the processes).
    pub rank: u32,
    /// The position of the location among its process's locations.
    pub thread: u32,
    /// "process name/location name".
    pub name: String,
    /// The symbol of each ENTER, an index into `Run::symbols`.
    pub keys: Vec<u32>,
    /// The call path each ENTER opens (an index into `Run::callpaths`).
    pub cnode: Vec<u32>,
    /// Seconds since the run's first event: the ENTER and its LEAVE.
    pub enter_s: Vec<f64>,
    pub leave_s: Vec<f64>,
}

/// A wait-state finding of a run, by metric and call-path name.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RunFinding {
    pub metric: String,
    pub callpath: String,
    /// Seconds (summed over locations).
    pub severity: f64,
}

/// What the comparison keeps of one run.
#[derive(Clone, Debug, Default)]
pub struct Run {
    pub path: String,
    pub format: String,
    pub symbols: Vec<String>,
    /// Call-path names ("main/MPI_Send") by call-path id.
    pub callpaths: Vec<String>,
    /// Region name of each call path's last element (what an edit names).
    pub regions: Vec<String>,
    pub locations: Vec<LocSeq>,
    pub findings: Vec<RunFinding>,
}

impl Run {
    /// Take the symbols of every location of an analysed trace.
    pub fn of(w: &Whole<'_>, alphabet: Alphabet) -> Run {
        use rayon::prelude::*;
        let trace = w.trace;
        let callpaths: Vec<String> = (0..w.replay.tree.len())
            .map(|c| w.replay.path_name(trace, c as _))
            .collect();
        let regions = callpaths
            .iter()
            .map(|p| p.rsplit('/').next().unwrap_or("").to_string())
            .collect();
        let ids = rank_thread(trace);
        let per: Vec<(LocSeq, Vec<String>)> = (0..trace.events.len())
            .into_par_iter()
            .map(|l| location(w, l, alphabet, ids[l].clone()))
            .collect();
        // intern each location's local strings into the run's table
        let mut table: HashMap<String, u32> = HashMap::new();
        let mut symbols = Vec::new();
        let mut locations = Vec::with_capacity(per.len());
        for (mut seq, local) in per {
            let map: Vec<u32> = local
                .into_iter()
                .map(|s| {
                    *table.entry(s.clone()).or_insert_with(|| {
                        symbols.push(s);
                        symbols.len() as u32 - 1
                    })
                })
                .collect();
            for k in &mut seq.keys {
                *k = map[*k as usize];
            }
            locations.push(seq);
        }
        let findings = w
            .findings
            .iter()
            .filter(|f| f.wait_state && f.severity > 0.0)
            .map(|f| RunFinding {
                metric: f.metric.clone(),
                callpath: w.replay.path_name(trace, f.callpath),
                severity: f.severity,
            })
            .collect();
        Run {
            path: trace.path.display().to_string(),
            format: trace.origin.format.to_string(),
            symbols,
            callpaths,
            regions,
            locations,
            findings,
        }
    }
}

/// (rank, thread, name) of every location: the trace's MPI rank where it has one, else the
/// position of its process among the processes; the thread is its position in its process.
fn rank_thread(trace: &crate::model::Trace) -> Vec<(u32, u32, String)> {
    let defs = &trace.defs;
    let mut process_no: HashMap<usize, u32> = HashMap::new();
    let mut threads: HashMap<Option<usize>, u32> = HashMap::new();
    defs.locations
        .iter()
        .map(|loc| {
            let next = process_no.len() as u32;
            let p = loc
                .group
                .map_or(next, |g| *process_no.entry(g).or_insert(next));
            let t = threads.entry(loc.group).or_insert(0);
            let thread = *t;
            *t += 1;
            let group = loc.group.and_then(|g| defs.location_groups.get(g));
            let rank = loc.rank.unwrap_or(p);
            let name = match group {
                Some(g) if g.kind == LocationGroupKind::Process || !g.name.is_empty() => {
                    format!("{}/{}", g.name, loc.name)
                }
                _ => loc.name.clone(),
            };
            (rank, thread, name)
        })
        .collect()
}

/// One location's symbols, with its own string table.
fn location(
    w: &Whole<'_>,
    l: usize,
    alphabet: Alphabet,
    (rank, thread, name): (u32, u32, String),
) -> (LocSeq, Vec<String>) {
    let trace = w.trace;
    let ev = &trace.events[l];
    let st = &w.replay.locations[l];
    let mut seq = LocSeq {
        rank,
        thread,
        name,
        ..LocSeq::default()
    };
    // per symbol: region, and (peer, tag) of the first message inside the call
    let enters = ev.kind.iter().filter(|&&k| k == EventKind::Enter).count();
    seq.cnode.reserve_exact(enters);
    seq.enter_s.reserve_exact(enters);
    seq.leave_s.reserve_exact(enters);
    let mut region_of = Vec::with_capacity(enters);
    let mut msg: Vec<Option<(u32, u32)>> = Vec::with_capacity(enters);
    let mut open: Vec<usize> = Vec::new(); // symbols whose call is open
    let last = ev.time.last().unwrap_or(0);
    for i in 0..ev.len() {
        match ev.kind[i] {
            EventKind::Enter => {
                let exit = st.exitptr(i);
                let leave = if exit == crate::replay::NONE {
                    last
                } else {
                    ev.time.get(exit as usize)
                };
                region_of.push(ev.arg[i]);
                msg.push(None);
                seq.cnode.push(st.cnode(i));
                seq.enter_s.push(trace.seconds(ev.time.get(i)));
                seq.leave_s.push(trace.seconds(leave));
                if alphabet == Alphabet::CallsMessages {
                    open.push(region_of.len() - 1);
                }
            }
            EventKind::Leave if alphabet == Alphabet::CallsMessages => {
                open.pop();
            }
            EventKind::MpiSend | EventKind::MpiRecv | EventKind::MpiIsend | EventKind::MpiIrecv
                if alphabet == Alphabet::CallsMessages =>
            {
                if let (Some(&s), Some(m)) = (open.last(), ev.msg(i)) {
                    if msg[s].is_none() {
                        msg[s] = Some((m.peer, m.tag));
                    }
                }
            }
            _ => {}
        }
    }
    let regions = &trace.defs.regions;
    let mut local: HashMap<(u32, Option<(u32, u32)>), u32> = HashMap::new();
    let mut strings = Vec::new();
    seq.keys = region_of
        .iter()
        .zip(&msg)
        .map(|(&r, &m)| {
            *local.entry((r, m)).or_insert_with(|| {
                let name = regions.get(r as usize).map_or("?", |x| x.name.as_str());
                strings.push(match m {
                    Some((peer, tag)) => format!("{name}(peer {peer}, tag {tag})"),
                    None => name.to_string(),
                });
                strings.len() as u32 - 1
            })
        })
        .collect();
    (seq, strings)
}
