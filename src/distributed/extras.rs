//! The distributed extras (issue 24): phase detection and the traffic matrix over the
//! shares of a job, equal to the single-process values to the bit.
//!
//! Phases (`detect_phases`): the run's span is agreed on (one `all_gather`: each process's
//! first and last time and the runs of locations it holds, 20 bytes + 8 a run). The curves
//! are float sums formed location by location in location order; a process cannot add its
//! locations before the sums of the locations before them are known, so the curves are
//! handed on along the runs of locations in location order: one `all_to_all` a run (the
//! partition's runs are contiguous, so P rounds), 3,200 bytes to the owner of the next
//! run (and from the last one to every process). Every process then runs the same detection
//! (`phases::detect_from_curves`); when it finds more than one phase, the exact sums per bin
//! are integers and gathered in one `all_gather` (8 bytes per bin and region, and each
//! held location's flags, 4 + 100 bytes).
//!
//! Traffic matrix (`traffic_matrix`): each process forms the rows of the sending locations
//! it holds (`matrices::traffic_rows`, reading a remote receive's call through its ghost
//! events, `ghost::Needs::p2p`); the rows are gathered (one `all_gather`: 8 bytes a row,
//! 32 a cell) and merged as the single process merges them (integer sums).

use super::ghost::Ghosted;
use super::wire::{Reader, Writer};
use super::Transport;
use crate::analysis::matrices::{self, Acc, TrafficMatrix, TrafficRow};
use crate::analysis::phases::{self, Bins, Detected, BINS};
use crate::model::Trace;

/// Runs of locations `[a, b)` and the rank holding each, in location order.
type Runs = Vec<(usize, usize, usize)>;

/// The trace's time span over the job, and per rank the runs `[a, b)` of locations it
/// holds (`keep`), sorted by location.
fn span_and_runs(
    trace: &Trace,
    keep: &[bool],
    t: &dyn Transport,
) -> Result<(Option<(u64, u64)>, Runs), String> {
    let mut w = Writer::default();
    let span = trace.time_span();
    w.u32(span.is_some() as u32);
    let (a, b) = span.unwrap_or((0, 0));
    w.u64(a);
    w.u64(b);
    let mut l = 0;
    while l < keep.len() {
        if keep[l] {
            let start = l;
            while l < keep.len() && keep[l] {
                l += 1;
            }
            w.u32(start as u32);
            w.u32(l as u32);
        } else {
            l += 1;
        }
    }
    let mut span: Option<(u64, u64)> = None;
    let mut runs = Vec::new();
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(bytes);
        let err = |e: String| format!("rank {rank}: {e}");
        let (has, a, b) = (
            r.u32().map_err(err)?,
            r.u64().map_err(err)?,
            r.u64().map_err(err)?,
        );
        if has != 0 {
            span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
        }
        while !r.is_done() {
            let (s, e) = (r.u32().map_err(err)?, r.u32().map_err(err)?);
            runs.push((s as usize, e as usize, rank));
        }
    }
    runs.sort_unstable();
    let n = trace.events.len();
    let mut next = 0;
    for &(s, e, rank) in &runs {
        if s != next || e > n || e <= s {
            return Err(format!(
                "rank {rank}: locations {s}..{e} held twice or out of order"
            ));
        }
        next = e;
    }
    if next != n {
        return Err(format!("locations {next}..{n}: held by no process"));
    }
    Ok((span, runs))
}

/// The phases of the trace (`phases::detect_binned`), on every process, from its share
/// (`keep` the locations it holds).
pub fn detect_phases(trace: &Trace, keep: &[bool], t: &dyn Transport) -> Result<Detected, String> {
    let (span, runs) = span_and_runs(trace, keep, t)?;
    let me = t.rank();
    let span = match span {
        Some((t0, t1)) if t1 > t0 => (t0, t1, (t1 - t0) as f64 / BINS as f64),
        Some((t0, _)) => return Ok(Detected::empty(t0)),
        None => return Ok(Detected::empty(0)),
    };
    let mut v = [[0.0f64; 4]; BINS];
    // the sums handed on along the runs of locations, in location order
    for (j, &(a, b, rank)) in runs.iter().enumerate() {
        let mut to = vec![Vec::new(); t.size()];
        if rank == me {
            phases::add_curves(trace, span, a..b, &mut v);
            let mut w = Writer::default();
            v.iter().flatten().for_each(|x| w.u64(x.to_bits()));
            match runs.get(j + 1) {
                Some(&(_, _, next)) => to[next] = w.0,
                None => (0..t.size())
                    .filter(|&r| r != me)
                    .for_each(|r| to[r] = w.0.clone()),
            }
        }
        let got = t.all_to_all(to)?;
        if let Some(bytes) = got.get(rank).filter(|b| !b.is_empty()) {
            let mut r = Reader::new(bytes);
            for x in v.iter_mut().flatten() {
                *x = f64::from_bits(r.u64().map_err(|e| format!("rank {rank}: {e}"))?);
            }
        }
    }
    phases::detect_from_curves(span, &v, |edges| job_bins(trace, keep, edges, t))
}

/// The exact sums per bin (`phases::measure`) over the job: region sums added (integers),
/// each location's flags from its owner.
fn job_bins(
    trace: &Trace,
    keep: &[bool],
    edges: Vec<u64>,
    t: &dyn Transport,
) -> Result<Bins, String> {
    let mine = phases::measure(trace, edges.clone());
    let (region, flags) = mine.parts();
    let mut w = Writer::default();
    region.iter().for_each(|&x| w.u64(x));
    for (l, row) in flags.chunks(BINS).enumerate() {
        if keep.get(l) == Some(&true) {
            w.u32(l as u32);
            row.chunks(4).for_each(|c| {
                let mut b = [0u8; 4];
                b[..c.len()].copy_from_slice(c);
                w.u32(u32::from_le_bytes(b));
            });
        }
    }
    let nregions = trace.defs.regions.len();
    let nloc = trace.events.len();
    let mut region = vec![0u64; region.len()];
    let mut flags = vec![0u8; BINS * nloc];
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(bytes);
        let err = |e: String| format!("rank {rank}: {e}");
        for x in region.iter_mut() {
            *x += r.u64().map_err(err)?;
        }
        while !r.is_done() {
            let l = r.u32().map_err(err)? as usize;
            let row = flags
                .get_mut(l * BINS..(l + 1) * BINS)
                .ok_or_else(|| err(format!("location {l} out of range")))?;
            for c in row.chunks_mut(4) {
                let b = r.u32().map_err(err)?.to_le_bytes();
                c.copy_from_slice(&b[..c.len()]);
            }
        }
    }
    Ok(Bins::from_parts(edges, nregions, region, flags))
}

/// The traffic matrix (`matrices::traffic_matrix`) on every process, from the ghosted
/// share `g` (its ghosts must hold the remote receives and their calls: `Needs::p2p`).
pub fn traffic_matrix(g: &Ghosted, t: &dyn Transport) -> Result<TrafficMatrix, String> {
    let me = t.rank() as u32;
    let rows = matrices::traffic_rows(&g.trace, &g.replay, &|l| g.owner.get(l) == Some(&me));
    let mut w = Writer::default();
    for (a, cells) in &rows {
        w.u32(*a);
        w.u32(cells.len() as u32);
        for &((comm, b), x) in cells {
            w.u32(comm);
            w.u32(b);
            w.u64(x.count);
            w.u64(x.bytes);
            w.u64(x.ticks);
        }
    }
    drop(rows);
    let mut all: Vec<TrafficRow> = Vec::new();
    for (rank, bytes) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(bytes);
        let err = |e: String| format!("rank {rank}: {e}");
        while !r.is_done() {
            let (a, n) = (r.u32().map_err(err)?, r.u32().map_err(err)? as usize);
            let mut cells = Vec::with_capacity(n.min(1 << 16));
            for _ in 0..n {
                let key = (r.u32().map_err(err)?, r.u32().map_err(err)?);
                let (count, bytes, ticks) = (
                    r.u64().map_err(err)?,
                    r.u64().map_err(err)?,
                    r.u64().map_err(err)?,
                );
                cells.push((
                    key,
                    Acc {
                        count,
                        bytes,
                        ticks,
                    },
                ));
            }
            all.push((a, cells));
        }
    }
    Ok(matrices::traffic_from_rows(&g.trace, all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::{ghost, local};
    use crate::replay::Replay;

    /// The bits of a detection's phases (scores as bits), its bins and their sums.
    type DetectedBits = (
        Vec<(u64, u64, u64)>,
        Vec<(usize, usize)>,
        Vec<u64>,
        Vec<u64>,
        Vec<u8>,
    );

    fn bits(d: &Detected) -> DetectedBits {
        let (region, flags) = d.bins.parts();
        (
            (d.phases.iter())
                .map(|p| (p.start, p.end, p.score.to_bits()))
                .collect(),
            d.ranges.clone(),
            d.bins.edges.clone(),
            region.to_vec(),
            flags.to_vec(),
        )
    }

    /// Every testdata trace at P = 1..4 threads as processes: on every process, the phases
    /// (scores to the bit, the exact sums per bin) and the traffic matrix (its JSON) of the
    /// single process.
    #[test]
    fn the_distributed_phases_and_traffic_are_the_single_process_ones() {
        let needs = ghost::Needs {
            p2p: true,
            ..Default::default()
        };
        let (mut phased, mut cells) = (0, 0);
        for path in local::testdata_traces() {
            let Ok(whole) = crate::formats::open(&path) else {
                panic!("{}: cannot read", path.display());
            };
            let replay = Replay::new(&whole);
            let want = bits(&phases::detect_binned(&whole));
            let traffic = matrices::traffic_matrix(&whole, &replay);
            let want_traffic = serde_json::to_string(&traffic).unwrap_or_default();
            phased += (want.0.len() > 1) as usize;
            cells += traffic.cells.len();
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let d = detect_phases(trace, keep, t)?;
                    let g = ghost::replay(trace.clone(), keep, &needs, t)?;
                    let m = traffic_matrix(&g, t)?;
                    Ok((bits(&d), serde_json::to_string(&m).unwrap_or_default()))
                });
                for g in got {
                    let (d, m) = g.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                    assert_eq!(d, want, "{}, P = {p}", path.display());
                    assert_eq!(m, want_traffic, "{}, P = {p}", path.display());
                }
            }
        }
        // the comparison covers traces with several phases and with messages
        assert!(phased >= 3 && cells >= 10, "{phased} {cells}");
    }
}
