//! The critical path and the wait matrix of `run --mpi` (issue 24), equal to the
//! single-process ones to the bit (docs/distributed.md, "The distributed extras").
//!
//! Each process builds the critical-path graph (`analysis::critical_path::Graph`) of its
//! ghosted share: the dependency targets of its own locations are the single-process ones,
//! their sources on other processes are ghost events (`needs`: partners, collective members,
//! every rank's MPI_Init and MPI_Finalize). The longest path is the single-process sweep
//! (`Walk`) run over the held locations only, in rounds: a process sweeps until every held
//! location is done or waits for a source on another process, then ships, to every process
//! that reads them, the distances newly known at its sources and how far each location has
//! got (one `all_to_all` a round; first a round in which each process tells the owners which
//! of their events it reads). When no process ships anything the sweep is at the
//! single-process fixpoint: done, or a cycle broken at the same location. The path is then
//! walked back from its end across processes (one `all_gather` per process change), and each
//! process attributes its stretches (`steps_by_place`); the sums and segments are gathered in
//! path order. The what-if lengths repeat the sweep, the wait matrix gathers the waits of
//! the held locations.

use super::ghost::{Ghosted, Needs};
use super::wire::{Reader, Writer};
use super::Transport;
use crate::analysis::critical_path::{
    self as cp, later_end, CriticalPath, End, Graph, Path, Segment, Stretch, Walk,
};
use crate::analysis::matrices::{self, WaitMatrix};
use crate::model::Trace;
use crate::replay::calltree::CnodeIdx;
use crate::replay::matching::EventRef;

/// The ghosts the critical path reads (to be united with the rules' needs).
pub fn needs() -> Needs {
    Needs {
        p2p: true,
        members: true,
        world: vec!["MPI_INIT".into(), "MPI_FINALIZE".into()],
    }
}

/// The critical path (with the what-if lengths of `what_if`) and the wait matrix, on every
/// process, from the ghosted share `g` (its ghosts as `needs` says).
pub fn critical_path(
    g: &Ghosted,
    what_if: &[String],
    t: &dyn Transport,
) -> Result<(CriticalPath, WaitMatrix), String> {
    let me = t.rank() as u32;
    let held: Vec<bool> = g.owner.iter().map(|&o| o == me).collect();
    let mut graph = Graph::new(&g.trace, &g.replay);
    let span = job_span(&g.trace, &held, t)?;
    let wanted = requests(&mut graph, g, &held, t)?;
    let job = Job {
        g,
        graph: &graph,
        held: &held,
        t0: span.map_or(0, |s| s.0),
        wanted: &wanted,
        t,
    };
    // the single process's line (`pipeline::Refusal::NoSuchRegion`)
    let matchers = (graph.what_if_matchers(what_if))
        .map_err(|r| format!("--what-if {r}: no region of that name"))?;
    let (walk, end, broken) = job.longest(None, true)?;
    let ends = job.back(&walk, end)?;
    let ncnode = g.replay.tree.nodes.len();
    let mine = Path::of_stretches(0, ends.iter().map(|x| x.1).collect(), 0, job.t0);
    let placed = cp::steps_by_place(&graph, &g.trace, &mine, ncnode, job.t0);
    let placed = job.gather_placed(placed, &ends)?;
    let mut lengths = Vec::with_capacity(matchers.len());
    for m in &matchers {
        let zero = |c: CnodeIdx| m.get(c as usize).copied().unwrap_or(false);
        lengths.push(job.longest(Some(&zero), false)?.1.map_or(0, |e| e.0));
    }
    let path = Path::of_stretches(end.map_or(0, |e| e.0), Vec::new(), broken, job.t0);
    let critical = cp::summary(
        &g.trace,
        &g.replay,
        span,
        &path,
        placed,
        (what_if, &lengths),
    );
    let waits = job.gather_waits()?;
    Ok((critical, matrices::wait_matrix_of(&g.trace, span, &waits)))
}

/// The run's span (`Trace::time_span`): the first and last times of the held locations,
/// over the job.
fn job_span(trace: &Trace, held: &[bool], t: &dyn Transport) -> Result<Option<(u64, u64)>, String> {
    let mut w = Writer::default();
    for (ev, _) in trace.events.iter().zip(held).filter(|x| *x.1) {
        if let (Some(a), Some(b)) = (ev.time.first(), ev.time.last()) {
            w.u64(a);
            w.u64(b);
        }
    }
    let mut span: Option<(u64, u64)> = None;
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(bytes);
        while !r.is_done() {
            let err = |e: String| format!("rank {rank}: {e}");
            let (a, b) = (r.u64().map_err(err)?, r.u64().map_err(err)?);
            span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
    }
    Ok(span)
}

/// The ranks reading some of a location's events as sources, each with those events.
type Readers = Vec<(usize, Vec<u32>)>;

/// Per held location, per rank reading some of its events as sources: those events
/// (sorted). Each process tells the owners which ghost events its targets read (one
/// `all_to_all`, 8 bytes a location and 4 an event); the owners keep distances there.
fn requests(
    graph: &mut Graph,
    g: &Ghosted,
    held: &[bool],
    t: &dyn Transport,
) -> Result<Vec<Readers>, String> {
    let mut to = vec![Writer::default(); t.size()];
    for (l, orig) in g.orig.iter().enumerate() {
        let srcs = graph.sources_of(l);
        if held[l] || orig.is_empty() || srcs.is_empty() {
            continue;
        }
        let w = &mut to[g.owner[l] as usize];
        w.u32(l as u32);
        w.u32(srcs.len() as u32);
        srcs.iter().for_each(|&e| w.u32(g.original(l as u32, e)));
    }
    let got = t.all_to_all(to.into_iter().map(|w| w.0).collect())?;
    let mut wanted: Vec<Readers> = vec![Vec::new(); held.len()];
    for (rank, bytes) in got.iter().enumerate() {
        let mut r = Reader::new(bytes);
        let err = |e: String| format!("rank {rank}: {e}");
        while !r.is_done() {
            let (l, n) = (
                r.u32().map_err(err)? as usize,
                r.u32().map_err(err)? as usize,
            );
            let events = (0..n).map(|_| r.u32()).collect::<Result<Vec<_>, _>>();
            let events = events.map_err(err)?;
            if held.get(l) != Some(&true) {
                return Err(err(format!("asks for location {l}, not held here")));
            }
            graph.add_sources(l, &events);
            wanted[l].push((rank, events));
        }
    }
    Ok(wanted)
}

/// One process's part of the distributed longest path.
struct Job<'a> {
    g: &'a Ghosted,
    graph: &'a Graph<'a>,
    held: &'a [bool],
    /// The run's first time.
    t0: u64,
    wanted: &'a [Readers],
    t: &'a dyn Transport,
}

/// No location: the first unfinished location of a process that has none.
const NO_LOC: u32 = u32::MAX;

impl<'a> Job<'a> {
    /// The longest path (`zero`: the what-if's call paths counted 0; `trace_back`: keep
    /// the jumps), swept in rounds; the walk, the path's end over the job and the
    /// dependencies dropped over the job.
    fn longest(
        &self,
        zero: Option<&dyn Fn(CnodeIdx) -> bool>,
        trace_back: bool,
    ) -> Result<(Walk<'a>, Option<End>, u64), String> {
        let (graph, held) = (self.graph, self.held);
        let (mut walk, _) = Walk::new(graph, Some(self.t0), Some(held));
        let mut sent_pos = vec![0usize; held.len()];
        loop {
            walk.sweep(graph, zero, trace_back);
            let (to, shipped) = self.updates(&walk, &mut sent_pos);
            let first = walk.first_unfinished(graph, &|l| held[l]);
            let got = self.t.all_to_all(
                to.into_iter()
                    .map(|w| {
                        let mut h = Writer::default();
                        h.u32(shipped as u32);
                        h.u32(first.map_or(NO_LOC, |l| l as u32));
                        h.0.extend(w.0);
                        h.0
                    })
                    .collect(),
            )?;
            let (mut any, mut first) = (false, NO_LOC);
            for (rank, bytes) in got.iter().enumerate() {
                let (s, f) = self
                    .apply(&mut walk, bytes)
                    .map_err(|e| format!("rank {rank}: {e}"))?;
                any |= s;
                first = first.min(f);
            }
            if any {
                continue;
            }
            // the job's fixpoint: done, or a cycle broken where the single process breaks it
            match first {
                NO_LOC => break,
                l if held.get(l as usize) == Some(&true) => walk.break_at(l as usize),
                _ => {}
            }
        }
        let (end, broken) = self.job_end(&walk)?;
        Ok((walk, end, broken))
    }

    /// What this process ships after a sweep: to each rank reading a held location's
    /// sources, the location's cursor and the distances newly known (per location 12 bytes,
    /// 16 a distance); whether anything was shipped.
    fn updates(&self, walk: &Walk, sent_pos: &mut [usize]) -> (Vec<Writer>, bool) {
        let mut to = vec![Writer::default(); self.t.size()];
        let mut shipped = false;
        for (l, readers) in self.wanted.iter().enumerate() {
            let (pos, before) = (walk.pos(l), sent_pos[l]);
            if readers.is_empty() || pos == before {
                continue;
            }
            sent_pos[l] = pos;
            shipped = true;
            for (rank, events) in readers {
                let a = events.partition_point(|&e| (e as usize) < before);
                let b = events.partition_point(|&e| (e as usize) < pos);
                let w = &mut to[*rank];
                w.u32(l as u32);
                w.u32(pos as u32);
                w.u32((b - a) as u32);
                for &e in &events[a..b] {
                    let (d, h) = walk.source_value(self.graph, l, e).unwrap_or((0, 0));
                    w.u32(e);
                    w.u64(d);
                    w.u32(h);
                }
            }
        }
        (to, shipped)
    }

    /// A rank's round message applied to the ghost locations: (whether it shipped
    /// anything, its first unfinished location).
    fn apply(&self, walk: &mut Walk, bytes: &[u8]) -> Result<(bool, u32), String> {
        let mut r = Reader::new(bytes);
        let (shipped, first) = (r.u32()? != 0, r.u32()?);
        let mut values = Vec::new();
        while !r.is_done() {
            let (l, pos, n) = (r.u32()?, r.u32()?, r.u32()? as usize);
            let orig = (self.g.orig.get(l as usize))
                .filter(|o| !o.is_empty() && !self.held[l as usize])
                .ok_or_else(|| format!("location {l} is no ghost here"))?;
            values.clear();
            for _ in 0..n {
                let (e, d, h) = (r.u32()?, r.u64()?, r.u32()?);
                if let Ok(k) = orig.binary_search(&e) {
                    values.push((k as u32, d, h));
                }
            }
            let gpos = orig.partition_point(|&o| o < pos);
            walk.set_remote(self.graph, l as usize, gpos, &values);
        }
        Ok((shipped, first))
    }

    /// The path's end over the job (the single process's choice: the best end in location
    /// order) and the dependencies dropped over the job (one `all_gather`).
    fn job_end(&self, walk: &Walk) -> Result<(Option<End>, u64), String> {
        let mut w = Writer::default();
        w.u64(walk.broken());
        if let Some((d, h, t, l)) = walk.end(self.graph, &|l| self.held[l]) {
            w.u64(d);
            w.u32(h);
            w.u64(t);
            w.u32(l);
        }
        let (mut ends, mut broken) = (Vec::new(), 0);
        for (rank, bytes) in self.t.all_gather(&w.0)?.iter().enumerate() {
            let mut r = Reader::new(bytes);
            let err = |e: String| format!("rank {rank}: {e}");
            broken += r.u64().map_err(err)?;
            if !r.is_done() {
                let (d, h) = (r.u64().map_err(err)?, r.u32().map_err(err)?);
                ends.push((d, h, r.u64().map_err(err)?, r.u32().map_err(err)?));
            }
        }
        ends.sort_by_key(|e| e.3);
        let mut end: Option<End> = None;
        for e in ends {
            if end.is_none_or(|b| later_end(e, b)) {
                end = Some(e);
            }
        }
        Ok((end, broken))
    }

    /// The path walked back from `end` across processes (one `all_gather` a process on the
    /// way, 16 bytes): this process's stretches with their place counted from the path's
    /// end, in the order of the path.
    fn back(&self, walk: &Walk, end: Option<End>) -> Result<Vec<(u32, Stretch)>, String> {
        let me = self.t.rank() as u32;
        // from the end location's last event (its owner knows which that is)
        let mut at: Option<(EventRef, u32)> = end.map(|e| {
            let last = EventRef {
                loc: e.3,
                event: u32::MAX,
            };
            (last, 0)
        });
        let mut mine: Vec<(u32, Stretch)> = Vec::new();
        let mut stretches = Vec::new();
        while let Some((mut from, seq)) = at {
            let mut w = Writer::default();
            if self.g.owner.get(from.loc as usize) == Some(&me) {
                if from.event == u32::MAX {
                    let n = self.g.trace.events[from.loc as usize].len() as u32;
                    from.event = n.saturating_sub(1);
                }
                stretches.clear();
                let next = walk.stretches_from(from, &|l| !self.held[l as usize], &mut stretches);
                let n = stretches.len() as u32;
                mine.extend((seq..).zip(stretches.iter().copied()));
                if let Some(s) = next {
                    w.u32(s.loc);
                    w.u32(self.g.original(s.loc, s.event));
                    w.u32(seq + n);
                }
                w.u32(1);
            }
            at = None;
            for (rank, bytes) in self.t.all_gather(&w.0)?.iter().enumerate() {
                let mut r = Reader::new(bytes);
                let err = |e: String| format!("rank {rank}: {e}");
                if bytes.len() > 4 {
                    let (loc, event, seq) = (
                        r.u32().map_err(err)?,
                        r.u32().map_err(err)?,
                        r.u32().map_err(err)?,
                    );
                    at = Some((EventRef { loc, event }, seq));
                }
            }
        }
        mine.sort_by_key(|x| std::cmp::Reverse(x.0));
        Ok(mine)
    }

    /// The time per call path and location of every process's stretches summed, the
    /// segments in the order of the path (one `all_gather`: 12 bytes a call path or location
    /// with time, 36 a segment).
    fn gather_placed(
        &self,
        (by_cnode, by_loc, segments): cp::Placed,
        ends: &[(u32, Stretch)],
    ) -> Result<cp::Placed, String> {
        let mut w = Writer::default();
        for v in [&by_cnode, &by_loc] {
            let nz: Vec<(usize, u64)> = v.iter().copied().enumerate().filter(|x| x.1 > 0).collect();
            w.u32(nz.len() as u32);
            for (k, x) in nz {
                w.u32(k as u32);
                w.u64(x);
            }
        }
        // one segment per stretch entered from another location; the path's first stretch
        // (entered from nowhere) has the others, up to two (start-up, start)
        let entered = ends.iter().filter(|x| x.1.entry.is_some()).count();
        let mut segs = segments.into_iter();
        let firsts = segs.len().saturating_sub(entered);
        for (seq, s) in ends {
            let k = if s.entry.is_some() { 1 } else { firsts };
            for sg in segs.by_ref().take(k) {
                w.u32(*seq);
                put_segment(&mut w, &sg);
            }
        }
        let (mut by_cnode, mut by_loc) = (vec![0u64; by_cnode.len()], vec![0u64; by_loc.len()]);
        let mut all: Vec<(u32, usize, Segment)> = Vec::new();
        for (rank, bytes) in self.t.all_gather(&w.0)?.iter().enumerate() {
            let mut r = Reader::new(bytes);
            let err = |e: String| format!("rank {rank}: {e}");
            for v in [&mut by_cnode, &mut by_loc] {
                for _ in 0..r.u32().map_err(err)? {
                    let (k, x) = (r.u32().map_err(err)? as usize, r.u64().map_err(err)?);
                    *v.get_mut(k)
                        .ok_or_else(|| err(format!("index {k} out of range")))? += x;
                }
            }
            while !r.is_done() {
                let seq = r.u32().map_err(err)?;
                all.push((seq, all.len(), get_segment(&mut r).map_err(err)?));
            }
        }
        // from the start: the largest place from the end first, a stretch's segments in order
        all.sort_by_key(|x| (std::cmp::Reverse(x.0), x.1));
        Ok((by_cnode, by_loc, all.into_iter().map(|x| x.2).collect()))
    }

    /// The waits of the held locations over the job (one `all_gather`, 16 bytes a pair).
    fn gather_waits(&self) -> Result<Vec<(u32, u32, u64)>, String> {
        let mut w = Writer::default();
        for &(a, b, x) in self.graph.waits.iter().filter(|x| self.held[x.0 as usize]) {
            w.u32(a);
            w.u32(b);
            w.u64(x);
        }
        let mut waits = Vec::new();
        for (rank, bytes) in self.t.all_gather(&w.0)?.iter().enumerate() {
            let mut r = Reader::new(bytes);
            let err = |e: String| format!("rank {rank}: {e}");
            while !r.is_done() {
                waits.push((
                    r.u32().map_err(err)?,
                    r.u32().map_err(err)?,
                    r.u64().map_err(err)?,
                ));
            }
        }
        Ok(waits)
    }
}

const VIAS: [&str; 4] = ["start-up", "start", "message", "collective"];

fn put_segment(w: &mut Writer, s: &Segment) {
    w.u64(s.location);
    w.u64(s.start_s.to_bits());
    w.u64(s.end_s.to_bits());
    w.u64(s.length_s.to_bits());
    w.u32(VIAS.iter().position(|&v| v == s.via).unwrap_or(1) as u32);
}

fn get_segment(r: &mut Reader) -> Result<Segment, String> {
    let location = r.u64()?;
    let (a, b, c) = (r.u64()?, r.u64()?, r.u64()?);
    let via = *VIAS
        .get(r.u32()? as usize)
        .ok_or("a segment's kind out of range")?;
    Ok(Segment {
        location,
        start_s: f64::from_bits(a),
        end_s: f64::from_bits(b),
        length_s: f64::from_bits(c),
        via,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{ghost, local};
    use crate::replay::Replay;

    /// Every testdata trace at P = 1..4 threads as processes: on every process, the
    /// critical path (with two what-ifs) and the wait matrix of the single process (their
    /// JSON, floats to the bit).
    #[test]
    fn the_distributed_critical_path_is_the_single_process_one() {
        let mut jumps = 0;
        for path in local::testdata_traces() {
            let Ok(whole) = crate::formats::open(&path) else {
                panic!("{}: cannot read", path.display());
            };
            let replay = Replay::new(&whole);
            let names = &whole.defs.regions;
            let what_if: Vec<String> = (names.first().into_iter().chain(names.last()))
                .map(|r| r.name.clone())
                .collect();
            let g = Graph::new(&whole, &replay);
            let Ok(want) = cp::critical_path_of(&g, &whole, &replay, &what_if) else {
                panic!("{}: what-if", path.display());
            };
            let json = |c: &CriticalPath, w: &WaitMatrix| {
                (serde_json::to_string(c).unwrap_or_default())
                    + &serde_json::to_string(w).unwrap_or_default()
            };
            let want = json(&want, &matrices::wait_matrix(&whole, &g));
            jumps += want.matches("\"message\"").count();
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let g = ghost::replay(trace.clone(), keep, &needs(), t)?;
                    let before = t.rounds();
                    let (c, w) = critical_path(&g, &what_if, t)?;
                    Ok((json(&c, &w), t.rounds() - before))
                });
                for (rank, x) in got.into_iter().enumerate() {
                    let (got, rounds) = x.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert_eq!(got, want, "{}, P = {p}, rank {rank}", path.display());
                    if rank == 0 && p == 2 {
                        eprintln!(
                            "{}: critical path in {rounds} rounds at P = 2",
                            path.display()
                        );
                    }
                }
            }
        }
        assert!(jumps > 10, "{jumps}");
    }
}
