//! Automatic phases (IPS-2): the run is cut into time bins; per bin, metric-over-time curves
//! (the share of location time in MPI calls, in OpenMP constructs, in other regions, and the
//! rate of point-to-point events) are smoothed with a sliding window, and
//! `B_i = Σ_m |ΔV_m,i / Δt_i| · h_m` (h_m = Δt / max V_m, so every curve weighs the same)
//! marks how much the behaviour changes at bin edge i. Boundaries are the edges where B_i is a
//! local maximum and above the mean plus two standard deviations (and above `MIN_SCORE`),
//! placed at the edge of the
//! largest unsmoothed change nearby. `slice` cuts a trace to one phase for
//! `perfexpert run --phase K`.

use super::exact_f64;
use crate::model::{EventKind, Events, Paradigm, Trace};
use serde::Serialize;

/// Bins over the run.
pub const BINS: usize = 100;
/// Half-width of the smoothing window, in bins.
const SMOOTH: usize = 2;
/// Boundaries closer than this many bins are merged (the higher peak stays).
const MIN_BINS: usize = 5;
/// The smallest B that marks a boundary: a millionth of a curve's full scale. A run that does
/// not change has B of floating-point noise (about 1e-15 on a uniform ping-pong); the mean +
/// 2σ test alone would make its largest noise a boundary. Real boundaries of the shipped
/// traces score 0.13 and more.
const MIN_SCORE: f64 = 1e-6;

/// One phase, [start, end) in ticks of the trace.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Phase {
    pub start: u64,
    pub end: u64,
    /// B at the phase's starting boundary (0 for the first phase).
    pub score: f64,
}

/// The phases of a trace (one phase if nothing changes, none if the trace has no time).
pub fn detect(trace: &Trace) -> Vec<Phase> {
    detect_binned(trace).phases
}

/// The phases, and the exact tick sums per bin they were found from (the phase windows'
/// values of the summaries come from them).
#[derive(Debug, PartialEq)]
pub struct Detected {
    pub phases: Vec<Phase>,
    /// Per phase: its bins, `[first, end)`.
    pub ranges: Vec<(usize, usize)>,
    pub bins: Bins,
}

/// What the detection walk measured, in exact ticks per bin: bin `i` is
/// `[edges[i], edges[i + 1])` (the last one also holds the last event), and a stretch of a
/// location's time that crosses an edge is split at it.
#[derive(Debug, PartialEq, Eq)]
pub struct Bins {
    pub edges: Vec<u64>,
    nregions: usize,
    /// `[bin * nregions + region]`: the time of all locations with the region on top of
    /// their stack (its exclusive time).
    region: Vec<u64>,
    /// `[location * BINS + bin]`: `ACTIVE` when the location has an event or region time
    /// in the bin, `IN_MPI` when it has time in an MPI region or enters one.
    flags: Vec<u8>,
}

const ACTIVE: u8 = 1;
const IN_MPI: u8 = 2;

impl Detected {
    /// The run's first tick (0 without events): the first bin's edge.
    pub fn t0(&self) -> u64 {
        self.bins.edges.first().copied().unwrap_or(0)
    }

    /// No phases: a run without time from `t0` (all bin edges there).
    pub fn empty(t0: u64) -> Detected {
        Detected {
            phases: Vec::new(),
            ranges: Vec::new(),
            bins: Bins {
                edges: vec![t0; BINS + 1],
                nregions: 0,
                region: Vec::new(),
                flags: Vec::new(),
            },
        }
    }
}

impl Bins {
    /// The bins of the edges `edges` from their sums: `region` per bin and region (all
    /// locations), `flags` per location and bin.
    pub fn from_parts(edges: Vec<u64>, nregions: usize, region: Vec<u64>, flags: Vec<u8>) -> Bins {
        Bins {
            edges,
            nregions,
            region,
            flags,
        }
    }

    /// The sums per bin and region, and the flags per location and bin (`BINS` a row).
    pub fn parts(&self) -> (&[u64], &[u8]) {
        (&self.region, &self.flags)
    }

    /// Exclusive ticks per region over bins `[a, b)`, all locations.
    fn region_ticks(&self, a: usize, b: usize) -> Vec<u64> {
        let mut out = vec![0u64; self.nregions];
        for bin in a..b {
            let row = &self.region[bin * self.nregions..(bin + 1) * self.nregions];
            for (o, &x) in out.iter_mut().zip(row) {
                *o += x;
            }
        }
        out
    }

    /// Per location, the flags of bins `[a, b)` or-ed.
    fn loc_flags(&self, a: usize, b: usize) -> Vec<u8> {
        (self.flags.chunks(BINS))
            .map(|f| f[a..b].iter().fold(0, |x, y| x | y))
            .collect()
    }
}

/// One walk per location (locations in parallel, sums in integers, so the result does not
/// depend on the thread count), then the IPS-2 boundaries.
pub fn detect_binned(trace: &Trace) -> Detected {
    let empty = Detected::empty;
    let Some((t0, t1)) = trace.time_span() else {
        return empty(0);
    };
    if t1 <= t0 {
        return empty(t0);
    }
    let span = (t0, t1, (t1 - t0) as f64 / BINS as f64);
    let mut v = [[0.0f64; 4]; BINS];
    add_curves(trace, span, 0..trace.events.len(), &mut v);
    let found = detect_from_curves(span, &v, |e| {
        Ok::<_, std::convert::Infallible>(measure(trace, e))
    });
    found.unwrap_or_else(|e| match e {})
}

/// The bins' edges of a run `(t0, t1, dt)` (`t1 > t0`).
pub fn edges((t0, t1, dt): (u64, u64, f64)) -> Vec<u64> {
    let mut edges: Vec<u64> = (0..BINS)
        .map(|i| t0 + ((i as f64) * dt).round() as u64)
        .collect();
    edges.push(t1);
    edges
}

/// The phases from the curves `v` of a run `(t0, t1, dt)` (`t1 > t0`); `measure` gives the
/// exact sums per bin from the edges, called only when there is more than one phase (a run
/// that is one phase is described by the whole analysis). The single-process detection
/// and the distributed one (`distributed::extras`) both end here.
pub fn detect_from_curves<E>(
    span: (u64, u64, f64),
    v: &[[f64; 4]],
    measure: impl FnOnce(Vec<u64>) -> Result<Bins, E>,
) -> Result<Detected, E> {
    let edges = edges(span);
    let (phases, ranges) = boundaries(&edges, v, span.2);
    let bins = if phases.len() > 1 {
        measure(edges)?
    } else {
        Bins {
            edges,
            nregions: 0,
            region: Vec::new(),
            flags: Vec::new(),
        }
    };
    Ok(Detected {
        phases,
        ranges,
        bins,
    })
}

/// The curves of the boundary score per bin (bin width `dt` ticks from `t0`), from zero.
#[cfg(test)]
fn curves(trace: &Trace, span: (u64, u64, f64)) -> Vec<[f64; 4]> {
    let mut v = [[0.0f64; 4]; BINS];
    add_curves(trace, span, 0..trace.events.len(), &mut v);
    v.to_vec()
}

/// Adds to `v` (`BINS` rows) the curves of the boundary score per bin (bin width `dt` ticks
/// from `t0`) of the locations `locs`: the shares of location time in MPI, OpenMP and other
/// regions, and the point-to-point events. Each location walked once, in order (float sums,
/// formed in one order whatever the thread count; a run of locations continues the sums of
/// the ones before it, so the distributed detection hands `v` on from one share to the next).
pub fn add_curves(
    trace: &Trace,
    (t0, t1, dt): (u64, u64, f64),
    locs: std::ops::Range<usize>,
    v: &mut [[f64; 4]; BINS],
) {
    let bins = BinOf::new(t1 - t0, dt);
    let classes: Vec<u8> = (trace.defs.regions.iter())
        .map(|x| match x.paradigm {
            Paradigm::MPI => 0,
            Paradigm::OPENMP => 1,
            _ => 2,
        })
        .collect();
    let mut stack: Vec<(u32, u8)> = Vec::new();
    // every time after t0 converts as a signed integer (the run is shorter than 2^63 ticks)
    if i64::try_from(t1 - t0).is_ok() {
        let inner = Inner::new(&bins, t1 - t0, |x| exact_f64(x, true));
        for ev in &trace.events[locs] {
            curve_walk::<true>(ev, (t0, t1), (&bins, &inner), &classes, &mut stack, v);
        }
    } else {
        let inner = Inner::new(&bins, t1 - t0, |x| exact_f64(x, false));
        for ev in &trace.events[locs] {
            curve_walk::<false>(ev, (t0, t1), (&bins, &inner), &classes, &mut stack, v);
        }
    }
}

/// `curve_walk`'s curves as it adds them: a row of 8 cells per bin, the 4 curves and the
/// column of an empty stack (`NO_CLASS`, its sums dropped), read at `(8 * bin + column) &
/// MASK` (no bounds check: the rows fit).
const MASK: usize = 1023;
const _: () = assert!(8 * BINS <= MASK + 1);

/// The column of an empty stack in `curve_walk`'s cells (`MASK`).
const NO_CLASS: usize = 4;

/// One location's events in order (`add_curves`): the interval [previous event, this one)
/// goes to the class of the region on top of the stack (none at the first event: the stack
/// is empty; classes per region in `classes`, 0 MPI, 1 OpenMP, 2 other), each
/// point-to-point event adds 1 to its bin. `SIGNED`: every time after t0 converts as a
/// signed integer (`exact_f64`). Not inlined: the hot loop keeps its state in registers.
/// The curves are added to in a copy of `v` whose rows have a column for an empty stack:
/// its intervals are added there, not tested for (the other columns get the same values
/// in the same order).
#[inline(never)]
fn curve_walk<const SIGNED: bool>(
    ev: &Events,
    (t0, t1): (u64, u64),
    (bins, inner): (&BinOf, &Inner),
    classes: &[u8],
    stack: &mut Vec<(u32, u8)>,
    v: &mut [[f64; 4]; BINS],
) {
    let mut cells = [0.0f64; MASK + 1];
    for (row, x) in cells.chunks_exact_mut(8).zip(v.iter()) {
        row[..4].copy_from_slice(x);
    }
    stack.clear();
    let dt = bins.dt;
    // the class on top of the stack, the previous event's time (ticks after t0, clamped to
    // the run), and the bin last found with the times inside it (`Inner`)
    let (mut top, mut prev, mut prev_f) = (NO_CLASS, 0u64, 0.0f64);
    let (mut k, mut lo, mut hi) = (0usize, inner.lo[0], inner.hi[0]);
    let time = ev.time.view();
    let n = time.len();
    let (kind, arg) = (&ev.kind[..n], &ev.arg[..n]);
    // by index over columns of one length, the times a block at a time (`for_each`), the
    // kinds tested as `if`s, the common LEAVE (of the region on top) without a search:
    // fewer instructions an event than a zip and a `match` (issue 26)
    time.for_each(|i, t| {
        // `clamp` (t0 < t1) without its check of the bounds' order
        let x = t.max(t0).min(t1) - t0;
        let xf = exact_f64(x, SIGNED);
        if prev < x {
            if lo <= prev && x < hi {
                // inside bin k as `BinOf::spread` cuts it: its one share, the same value
                cells[(k * 8 + top) & MASK] += (xf - prev_f) / dt;
            } else {
                k = bins.bin(prev, k);
                (lo, hi) = (inner.lo[k], inner.hi[k]);
                bins.spread(&mut cells, top, prev_f, xf, k);
            }
        }
        let kd = kind[i];
        if kd == EventKind::Enter {
            let a = arg[i];
            let c = classes.get(a as usize).map_or(2, |&c| c);
            stack.push((a, c));
            top = usize::from(c);
        } else if kd == EventKind::Leave {
            let (a, len) = (arg[i], stack.len());
            if len > 0 && stack[len - 1].0 == a {
                stack.truncate(len - 1);
                top = if len > 1 {
                    usize::from(stack[len - 2].1)
                } else {
                    NO_CLASS
                };
            } else {
                leave_below(stack, a, &mut top);
            }
        } else if matches!(
            kd,
            EventKind::MpiSend | EventKind::MpiIsend | EventKind::MpiRecv | EventKind::MpiIrecv
        ) {
            if !(lo <= x && x < hi) {
                k = bins.bin(x, k);
                (lo, hi) = (inner.lo[k], inner.hi[k]);
            }
            cells[(k * 8 + 3) & MASK] += 1.0;
        }
        (prev, prev_f) = (x, xf);
    });
    for (row, x) in cells.chunks_exact(8).zip(v.iter_mut()) {
        x.copy_from_slice(&row[..4]);
    }
}

/// A LEAVE of region `a` below the top of `stack` (`curve_walk`): the stack cut at its
/// last instance, if any, and `top` its class on top then. Rare: not inlined.
#[inline(never)]
fn leave_below(stack: &mut Vec<(u32, u8)>, a: u32, top: &mut usize) {
    if let Some(j) = stack.iter().rposition(|&(r, _)| r == a) {
        stack.truncate(j);
        *top = stack.last().map_or(NO_CLASS, |&(_, c)| usize::from(c));
    }
}

/// Per bin `k` of a `BinOf`, the times `[lo[k], hi[k])` (ticks after the start) whose bin
/// is `k` and whose value as f64 (`f`) lies within the bin's edges `[edge[k], edge[k + 1]]`:
/// an interval [a, b) with `lo[k] <= a < b < hi[k]` is one share of bin `k`, `(b - a) / dt`
/// as `BinOf::spread` adds it (its cuts at the edges change neither end).
struct Inner {
    lo: [u64; BINS],
    hi: [u64; BINS],
}

impl Inner {
    fn new(bins: &BinOf, span: u64, f: impl Fn(u64) -> f64) -> Inner {
        // the first time in [0, span] whose value passes `ok` (monotone), else span + 1
        let first = |ok: &dyn Fn(f64) -> bool| {
            let (mut a, mut b) = (0u64, span.saturating_add(1));
            while a < b {
                let m = a + (b - a) / 2;
                if ok(f(m)) {
                    b = m;
                } else {
                    a = m + 1;
                }
            }
            a
        };
        let mut inner = Inner {
            lo: [0; BINS],
            hi: [0; BINS],
        };
        for k in 0..BINS {
            let (e0, e1) = (bins.edge[k], bins.edge[k + 1]);
            inner.lo[k] = bins.thr[k].max(first(&|y| y >= e0));
            inner.hi[k] = bins.thr[k + 1].min(first(&|y| y > e1));
        }
        inner
    }
}

/// The bins of the curves over a run of `span` ticks, bin width `dt`: the bin of a time `x`
/// ticks after the start is `((x as f64 / dt) as usize).min(BINS - 1)`, found here without
/// the division (the hot loop of the detection, issue 26). That value never decreases as `x`
/// grows (each step of it is monotone), so each bin is a range of `x`; `thr[k]` is the
/// smallest `x` of bin `k` or later, found once by bisection on the same expression: the
/// bins are exactly the division's.
struct BinOf {
    thr: [u64; BINS + 1],
    /// `k as f64 * dt`: the bins' edges as the shares of `spread` are cut at.
    edge: [f64; BINS + 1],
    dt: f64,
}

impl BinOf {
    fn new(span: u64, dt: f64) -> BinOf {
        let g = |x: u64| (x as f64 / dt) as usize;
        let mut thr = [u64::MAX; BINS + 1];
        thr[0] = 0;
        for (k, t) in thr.iter_mut().enumerate().take(BINS).skip(1) {
            if g(span) < k {
                break; // no time of the run is in bin k (the rest stay at u64::MAX)
            }
            let (mut lo, mut hi) = (0u64, span);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if g(mid) >= k {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            *t = lo;
        }
        BinOf {
            thr,
            edge: std::array::from_fn(|k| k as f64 * dt),
            dt,
        }
    }

    /// The bin of `x` (at most the run's span), looked up from bin `hint` on.
    #[inline]
    fn bin(&self, x: u64, hint: usize) -> usize {
        if self.thr[hint] <= x && x < self.thr[hint + 1] {
            return hint;
        }
        self.thr[1..BINS].partition_point(|&t| t <= x)
    }

    /// `spread` of the interval [a, b) (a < b, ticks after the start as f64) from its first
    /// bin `i` to `curve_walk`'s cells of column `m`: the same shares, added in the same
    /// order. Rare (an interval that leaves its bin): not inlined into `curve_walk`'s loop.
    #[inline(never)]
    fn spread(&self, cells: &mut [f64; MASK + 1], m: usize, a: f64, b: f64, mut i: usize) {
        // `max`/`min` as comparisons: no NaN here, and equal values have equal bits (no
        // -0.0: the edges and times are 0 or positive)
        loop {
            let (e0, e1) = (self.edge[i], self.edge[i + 1]);
            let lo = if a > e0 { a } else { e0 };
            let hi = if b < e1 { b } else { e1 };
            if hi > lo {
                cells[(i * 8 + m) & MASK] += (hi - lo) / self.dt;
            }
            if hi >= b || i + 1 >= BINS {
                break;
            }
            i += 1;
        }
    }
}

/// The bins' exact sums: each location walked once (locations in parallel, sums in
/// integers, so the result does not depend on the thread count).
pub fn measure(trace: &Trace, edges: Vec<u64>) -> Bins {
    use rayon::prelude::*;
    let d = &trace.defs;
    let nregions = d.regions.len();
    let mpi: Vec<bool> = (d.regions.iter())
        .map(|x| x.paradigm == Paradigm::MPI)
        .collect();
    let nloc = trace.events.len();
    let chunk = nloc
        .div_ceil(2 * rayon::current_num_threads().max(1))
        .max(1);
    let parts: Vec<(Vec<u64>, Vec<u8>)> = (trace.events.par_chunks(chunk))
        .map(|locs| {
            let mut region = vec![0u64; BINS * nregions];
            let mut flags = vec![0u8; BINS * locs.len()];
            for (ev, fl) in locs.iter().zip(flags.chunks_mut(BINS)) {
                let mut w = BinWalk {
                    edges: &edges,
                    nregions,
                    mpi: &mpi,
                    region: &mut region,
                    flags: fl,
                };
                w.walk(ev);
            }
            (region, flags)
        })
        .collect();
    let mut bins = Bins {
        edges,
        nregions,
        region: vec![0u64; BINS * nregions],
        flags: Vec::with_capacity(BINS * nloc),
    };
    for (region, flags) in parts {
        for (a, b) in bins.region.iter_mut().zip(region) {
            *a += b;
        }
        bins.flags.extend(flags);
    }
    bins
}

/// One location's walk over the bins (`measure`).
struct BinWalk<'a> {
    edges: &'a [u64],
    nregions: usize,
    mpi: &'a [bool],
    region: &'a mut [u64],
    flags: &'a mut [u8],
}

impl BinWalk<'_> {
    /// The events in order: the time since the previous event (times that go backwards
    /// are taken as the previous one) goes to the region on top of the stack, split at
    /// the bin edges it crosses.
    fn walk(&mut self, ev: &Events) {
        let (time, kind, arg) = (ev.time.view(), &ev.kind[..], &ev.arg[..]);
        let Some(first) = time.first() else { return };
        let mut stack: Vec<u32> = Vec::new();
        let mut bin = 0usize;
        let end_of = |bin: usize| {
            if bin + 1 < BINS {
                self.edges[bin + 1]
            } else {
                u64::MAX
            }
        };
        let mut hi = end_of(0);
        let mut last = first;
        while first >= hi {
            bin += 1;
            hi = end_of(bin);
        }
        for i in 0..time.len() {
            let t = time.get(i).max(last);
            let top = stack
                .last()
                .copied()
                .filter(|&r| (r as usize) < self.nregions);
            while t >= hi {
                if let Some(r) = top {
                    self.book(bin, r, hi - last);
                }
                last = hi;
                bin += 1;
                hi = end_of(bin);
            }
            if let Some(r) = top {
                self.book(bin, r, t - last);
            }
            self.flags[bin] |= ACTIVE;
            last = t;
            match kind[i] {
                EventKind::Enter => {
                    let r = arg[i];
                    if self.mpi.get(r as usize) == Some(&true) {
                        self.flags[bin] |= IN_MPI;
                    }
                    stack.push(r);
                }
                EventKind::Leave => {
                    if let Some(k) = stack.iter().rposition(|&r| r == arg[i]) {
                        stack.truncate(k);
                    }
                }
                _ => {}
            }
        }
    }

    #[inline(always)]
    fn book(&mut self, bin: usize, r: u32, ticks: u64) {
        if ticks > 0 {
            self.region[bin * self.nregions + r as usize] += ticks;
            self.flags[bin] |= if self.mpi[r as usize] {
                ACTIVE | IN_MPI
            } else {
                ACTIVE
            };
        }
    }
}

/// The IPS-2 boundaries from the curves `v` (bin width `dt` ticks, bin edges `edges`): the
/// phases and their bins.
#[allow(clippy::type_complexity)]
fn boundaries(edges: &[u64], v: &[[f64; 4]], dt: f64) -> (Vec<Phase>, Vec<(usize, usize)>) {
    // smooth
    let sm: Vec<[f64; 4]> = (0..BINS)
        .map(|i| {
            let (a, b) = (i.saturating_sub(SMOOTH), (i + SMOOTH).min(BINS - 1));
            let mut s = [0.0; 4];
            for row in &v[a..=b] {
                for m in 0..4 {
                    s[m] += row[m];
                }
            }
            s.map(|x| x / (b - a + 1) as f64)
        })
        .collect();
    let max: Vec<f64> = (0..4)
        .map(|m| sm.iter().map(|r| r[m]).fold(0.0, f64::max))
        .collect();
    // B_i at the edge between bins i-1 and i
    let mut score = vec![0.0f64; BINS];
    for i in 1..BINS {
        score[i] = (0..4)
            .filter(|&m| max[m] > 0.0)
            .map(|m| ((sm[i][m] - sm[i - 1][m]) / dt).abs() * (dt / max[m]))
            .sum();
    }
    let inner = &score[1..];
    let mean = inner.iter().sum::<f64>() / inner.len() as f64;
    let sd = (inner.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / inner.len() as f64).sqrt();
    let threshold = mean + 2.0 * sd;
    let mut peaks: Vec<usize> = (1..BINS)
        .filter(|&i| {
            score[i] > threshold
                && score[i] > MIN_SCORE
                && (i.saturating_sub(MIN_BINS)..(i + MIN_BINS + 1).min(BINS))
                    .all(|j| score[j] < score[i] || (score[j] == score[i] && j >= i))
        })
        .collect();
    peaks.retain(|&i| i >= MIN_BINS && i + MIN_BINS <= BINS);
    // smoothing spreads a step over 2·SMOOTH+1 edges of equal B: place the boundary at the
    // edge of the largest change of the unsmoothed curves among them
    let vmax: Vec<f64> = (0..4)
        .map(|m| v.iter().map(|r| r[m]).fold(0.0, f64::max))
        .collect();
    let raw = |i: usize| -> f64 {
        (0..4)
            .filter(|&m| vmax[m] > 0.0)
            .map(|m| (v[i][m] - v[i - 1][m]).abs() / vmax[m])
            .sum()
    };
    for p in peaks.iter_mut() {
        let (a, b) = (
            (*p).saturating_sub(SMOOTH).max(1),
            (*p + SMOOTH).min(BINS - 1),
        );
        let mut best = *p;
        for i in a..=b {
            if raw(i) > raw(best) {
                best = i;
            }
        }
        *p = best;
    }
    let edge = |i: usize| edges[i];
    let mut out = Vec::new();
    let mut ranges = Vec::new();
    let mut start = (0, 0.0);
    for &p in &peaks {
        out.push(Phase {
            start: edge(start.0),
            end: edge(p),
            score: start.1,
        });
        ranges.push((start.0, p));
        start = (p, score[p]);
    }
    out.push(Phase {
        start: edge(start.0),
        end: edge(BINS),
        score: start.1,
    });
    ranges.push((start.0, BINS));
    (out, ranges)
}

/// Add the interval [from, to) to curve `m`, split over the bins it covers, as a share of
/// the bin's time (one location fully inside adds 1). The definition `BinOf::spread` keeps
/// to the bit (tests).
#[cfg(test)]
fn spread(v: &mut [[f64; 4]], m: usize, from: u64, to: u64, t0: u64, dt: f64) {
    if to <= from {
        return;
    }
    let (a, b) = ((from - t0) as f64, (to - t0) as f64);
    let mut i = ((a / dt) as usize).min(BINS - 1);
    loop {
        let lo = (i as f64 * dt).max(a);
        let hi = (((i + 1) as f64) * dt).min(b);
        if hi > lo {
            v[i][m] += (hi - lo) / dt;
        }
        if hi >= b || i + 1 >= BINS {
            break;
        }
        i += 1;
    }
}

/// The trace cut to [start, end) (the last phase keeps its final events): regions open at
/// `start` are entered at `start`, regions still open at the end are left there. Messages
/// and collectives whose other side lies outside become unmatched or incomplete.
pub fn slice(trace: &Trace, ph: &Phase, last: bool) -> Trace {
    use rayon::prelude::*;
    let events = (trace.events.par_iter())
        .map(|ev| slice_events(ev, ph, last))
        .collect();
    with_events(trace, trace.defs.clone(), events)
}

/// A trace like `trace` (its definitions `defs`) with other events.
fn with_events(trace: &Trace, defs: crate::model::Definitions, events: Vec<Events>) -> Trace {
    Trace {
        path: trace.path.clone(),
        origin: trace.origin.clone(),
        timer_resolution: trace.timer_resolution,
        global_offset: trace.global_offset,
        trace_length: trace.trace_length,
        defs,
        events,
        warnings: trace.warnings.clone(),
        native_event_kinds: trace.native_event_kinds.clone(),
        paje: trace.paje,
    }
}

/// One location's events cut to the phase (see `slice`).
fn slice_events(ev: &Events, ph: &Phase, last: bool) -> Events {
    let inside = |t: u64| t >= ph.start && (t < ph.end || last);
    let n_in = ev.time.iter().filter(|&t| inside(t)).count();
    let mut out = Events::with_capacity(0);
    if n_in > 0 {
        out = Events::with_capacity(n_in + 16);
    }
    let mut stack: Vec<u32> = Vec::new();
    let mut opened = false;
    let has_attributes = !ev.attribute_index.is_empty();
    for i in 0..ev.len() {
        let t = ev.time.get(i);
        if !inside(t) {
            if t < ph.start {
                match ev.kind[i] {
                    EventKind::Enter => stack.push(ev.arg[i]),
                    EventKind::Leave => {
                        if let Some(k) = stack.iter().rposition(|&r| r == ev.arg[i]) {
                            stack.truncate(k);
                        }
                    }
                    _ => {}
                }
            }
            continue;
        }
        if !opened {
            for &r in &stack {
                out.push_region(ph.start, EventKind::Enter, r);
            }
            opened = true;
        }
        if has_attributes {
            out.attach_attributes(ev.attributes_of(i));
        }
        let kind = ev.kind[i];
        match kind {
            EventKind::Enter | EventKind::Leave => {
                out.push_region(t, kind, ev.arg[i]);
                if kind == EventKind::Enter {
                    stack.push(ev.arg[i]);
                } else if let Some(k) = stack.iter().rposition(|&r| r == ev.arg[i]) {
                    stack.truncate(k);
                }
            }
            EventKind::Unknown => out.push_unknown(t, ev.arg[i] as u8),
            _ => {
                if let Some(m) = ev.msg(i) {
                    out.push_msg(t, kind, m);
                } else if let Some(c) = ev.coll(i) {
                    out.push_coll(t, kind, c);
                } else {
                    out.push_extra(t, kind, ev.fields(i));
                }
            }
        }
    }
    if opened && !last {
        let t = out.time.last().unwrap_or(ph.start).max(ph.start);
        let t = t.max(ph.end.saturating_sub(1)).min(ph.end);
        while let Some(r) = stack.pop() {
            out.push_region(t, EventKind::Leave, r);
        }
    }
    out
}

/// A phase in the JSON report.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseEntry {
    /// 1-based, as `--phase K` takes it.
    pub phase: usize,
    pub start_s: f64,
    pub end_s: f64,
    /// B at the boundary that starts this phase (0 for the first).
    pub boundary_score: f64,
    pub mpi_percent: f64,
    /// The regions with the most exclusive time in the phase (all locations).
    pub regions: Vec<(String, f64)>,
    /// The most significant wait-state findings of the phase alone: (metric, call path,
    /// severity in seconds).
    pub findings: Vec<(String, String, f64)>,
}

/// The phases as the report lists them, from the whole-trace analysis restricted to each
/// phase's window: its regions and MPI share from the detection walk's bins (exact: a
/// stretch that crosses a boundary is split at it), its findings from the wait-state
/// instances the rule passes booked in its window (`analyse_phased` with `bounds`). A run
/// that is one phase is described by the whole analysis itself.
pub fn summarise(
    trace: &Trace,
    det: &Detected,
    replay: &crate::replay::Replay,
    a: &crate::analysis::Analysis,
) -> Vec<PhaseEntry> {
    let x = crate::analysis::scores::Extent::of(trace);
    summarise_in(trace, det, replay, a, &x)
}

/// `summarise` where the events' extent `x` is given (`run --mpi`: gathered from the
/// processes, each holding its share of the events; `trace` holds the definitions).
pub fn summarise_in(
    trace: &Trace,
    det: &Detected,
    replay: &crate::replay::Replay,
    a: &crate::analysis::Analysis,
    x: &crate::analysis::scores::Extent,
) -> Vec<PhaseEntry> {
    let t0 = x.span.map_or(0, |s| s.0);
    if is_whole(t0, &det.phases) {
        return vec![describe(trace, t0, 0, &det.phases[0], replay, a, x)];
    }
    (det.phases.iter().zip(&det.ranges).enumerate())
        .map(|(k, (ph, &(lo, hi)))| {
            let empty = Default::default();
            let values = a.phase_values.get(k).unwrap_or(&empty);
            describe_window(trace, t0, k, ph, (lo, hi), det, replay, a, values)
        })
        .collect()
}

/// The starts of the phases after the first: the windows `analyse_phased` books (none
/// when the run is one phase: then the whole analysis describes it). `t0`: the run's first
/// tick (0 without events).
pub fn bounds(t0: u64, phases: &[Phase]) -> Vec<u64> {
    if is_whole(t0, phases) || phases.is_empty() {
        return Vec::new();
    }
    phases[1..].iter().map(|p| p.start).collect()
}

/// Whether the phases are the whole run (one phase from its first tick `t0`): then a
/// phase's analysis is the whole analysis.
pub fn is_whole(t0: u64, phases: &[Phase]) -> bool {
    phases.len() == 1 && phases[0].start <= t0
}

/// Phase `k` (0-based), bins `[lo, hi)`, from the whole analysis restricted to its window
/// (`summarise`). A finding's significance is §6.3's over the window: its severity over
/// the window's time (all locations' region time in it), the affected share and imbalance
/// over the locations eligible in the window (for MPI metrics those with time in MPI or
/// an MPI call entered in it, else those with an event or region time in it).
#[allow(clippy::too_many_arguments)]
fn describe_window(
    trace: &Trace,
    t0: u64,
    k: usize,
    ph: &Phase,
    (lo, hi): (usize, usize),
    det: &Detected,
    replay: &crate::replay::Replay,
    a: &crate::analysis::Analysis,
    values: &crate::analysis::PhaseValues,
) -> PhaseEntry {
    let res = trace.timer_resolution.max(1) as f64;
    let ticks = det.bins.region_ticks(lo, hi);
    let mut by_region: std::collections::BTreeMap<&str, u64> = Default::default();
    let (mut total, mut mpi) = (0u64, 0u64);
    for (r, &t) in ticks.iter().enumerate() {
        if t == 0 {
            continue;
        }
        let reg = &trace.defs.regions[r];
        total += t;
        if reg.paradigm == Paradigm::MPI {
            mpi += t;
        }
        *by_region.entry(reg.name.as_str()).or_default() += t;
    }
    let flags = det.bins.loc_flags(lo, hi);
    let findings = window_findings(a, values, &flags, total as f64 / res);
    let findings = (findings.into_iter().take(3))
        .map(|(_, sev, k, c)| {
            let id = a.rules.rules[k as usize].info.id.clone();
            (id, replay.path_name(trace, c), sev)
        })
        .collect();
    PhaseEntry::new(k, ph, t0, res, by_region, (total, mpi), findings)
}

/// The wait-state findings of one window, most significant first (`scores::rank`'s order):
/// (significance, severity, rule, call path). `flags`: per location, the window's
/// `ACTIVE`/`IN_MPI`; `time_s`: the window's time.
fn window_findings(
    a: &crate::analysis::Analysis,
    values: &crate::analysis::PhaseValues,
    flags: &[u8],
    time_s: f64,
) -> Vec<(f64, f64, u16, u32)> {
    let p = crate::analysis::scores::ScoreParams::default();
    let in_order: std::collections::HashSet<usize> = a.order.iter().copied().collect();
    let mut out = Vec::new();
    for (&(k, c), row) in values {
        let rule = &a.rules.rules[k as usize];
        if !in_order.contains(&(k as usize)) {
            continue;
        }
        let need = if rule.info.paradigm.as_deref() == Some("mpi") {
            IN_MPI
        } else {
            ACTIVE
        };
        let eligible: Vec<f64> = (row.iter().zip(flags))
            .filter(|(_, &f)| f & need != 0)
            .map(|(&v, _)| v)
            .collect();
        let sev: f64 = row.iter().sum();
        if eligible.is_empty() || sev == 0.0 {
            continue;
        }
        let s = if time_s > 0.0 { sev / time_s } else { 0.0 };
        let n = eligible.len() as f64;
        let affected = eligible.iter().filter(|&&v| v > 0.0).count() as f64 / n;
        let max = eligible.iter().copied().fold(0.0, f64::max);
        let mean = eligible.iter().sum::<f64>() / n;
        let imbalance = if max > 0.0 { 1.0 - mean / max } else { 0.0 };
        let g = (s / p.s_ref).min(1.0);
        let significance = if s < p.s_min {
            g
        } else {
            0.6 * g + 0.2 * affected + 0.2 * imbalance
        };
        out.push((significance, sev, k, c));
    }
    out.sort_by(|x, y| {
        (y.0.total_cmp(&x.0))
            .then(y.1.total_cmp(&x.1))
            .then_with(|| {
                a.rules.rules[x.2 as usize]
                    .info
                    .id
                    .cmp(&a.rules.rules[y.2 as usize].info.id)
            })
            .then(x.3.cmp(&y.3))
    });
    out
}

/// Phase `k` (0-based) as the report lists it, from the analysis of its slice `part` (the
/// extent of its events `x`).
fn describe(
    part: &Trace,
    t0: u64,
    k: usize,
    ph: &Phase,
    replay: &crate::replay::Replay,
    a: &crate::analysis::Analysis,
    x: &crate::analysis::scores::Extent,
) -> PhaseEntry {
    use crate::analysis::scores::{score_in, ScoreParams};
    use crate::replay::calltree::Callee;
    let mut findings = score_in(part, replay, a, ScoreParams::default(), x);
    findings.retain(|f| f.wait_state);
    crate::analysis::scores::rank(&mut findings);
    // exclusive time per region over all locations
    let mut by_region: std::collections::BTreeMap<&str, u64> = Default::default();
    let (mut total, mut mpi) = (0u64, 0u64);
    for st in &replay.locations {
        for (c, &t) in st.time.iter().enumerate() {
            if t == 0 {
                continue;
            }
            total += t;
            if let Callee::Region(r) = replay.tree.nodes[c].callee {
                let reg = &part.defs.regions[r as usize];
                if reg.paradigm == Paradigm::MPI {
                    mpi += t;
                }
                *by_region.entry(reg.name.as_str()).or_default() += t;
            }
        }
    }
    let findings = (findings.iter().take(3))
        .map(|f| {
            let path = replay.path_name(part, f.callpath);
            (f.metric.clone(), path, f.severity)
        })
        .collect();
    let res = part.timer_resolution.max(1) as f64;
    PhaseEntry::new(k, ph, t0, res, by_region, (total, mpi), findings)
}

impl PhaseEntry {
    /// Phase `k` (0-based) from its exclusive time per region name and its (all, MPI) time
    /// in ticks (`res` ticks a second): the three regions with the most time (ties by name),
    /// the MPI share; `findings` are its top three wait-state findings.
    fn new(
        k: usize,
        ph: &Phase,
        t0: u64,
        res: f64,
        by_region: std::collections::BTreeMap<&str, u64>,
        (total, mpi): (u64, u64),
        findings: Vec<(String, String, f64)>,
    ) -> PhaseEntry {
        let sec = |t: u64| t as f64 / res;
        let mut regions: Vec<(&str, u64)> = by_region.into_iter().collect();
        regions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        PhaseEntry {
            phase: k + 1,
            start_s: sec(ph.start - t0),
            end_s: sec(ph.end - t0),
            boundary_score: ph.score,
            mpi_percent: if total > 0 {
                100.0 * mpi as f64 / total as f64
            } else {
                0.0
            },
            regions: (regions.into_iter().take(3))
                .map(|(n, t)| (n.to_string(), sec(t)))
                .collect(),
            findings,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::plan::testing::testdata_trace;
    use crate::replay::calltree::Callee;

    /// The bits of each window's values, sorted by (rule, call path).
    type Bits = Vec<Vec<((u16, u32), Vec<u64>)>>;

    const MPI_TRACES: [&str; 6] = [
        "scorep/ls",
        "scorep/lr",
        "scorep/wo",
        "scorep/nb",
        "scorep/mixed8",
        "scorep/rootcoll",
    ];

    /// The curves as they were defined before `BinOf` (a division per bin lookup, `spread`).
    fn curves_by_division(trace: &Trace, (t0, t1, dt): (u64, u64, f64)) -> Vec<[f64; 4]> {
        let bin_of = |t: u64| (((t - t0) as f64 / dt) as usize).min(BINS - 1);
        let mut v = vec![[0.0f64; 4]; BINS];
        let class = |r: u32| match trace.defs.regions.get(r as usize).map(|x| x.paradigm) {
            Some(Paradigm::MPI) => 0,
            Some(Paradigm::OPENMP) => 1,
            _ => 2,
        };
        for ev in &trace.events {
            let mut stack: Vec<u32> = Vec::new();
            for i in 0..ev.len() {
                let t = ev.time.get(i).clamp(t0, t1);
                if let (Some(&r), true) = (stack.last(), i > 0) {
                    let from = ev.time.get(i - 1).clamp(t0, t1).min(t);
                    spread(&mut v, class(r), from, t, t0, dt);
                }
                match ev.kind[i] {
                    EventKind::Enter => stack.push(ev.arg[i]),
                    EventKind::Leave => {
                        if let Some(k) = stack.iter().rposition(|&r| r == ev.arg[i]) {
                            stack.truncate(k);
                        }
                    }
                    EventKind::MpiSend
                    | EventKind::MpiIsend
                    | EventKind::MpiRecv
                    | EventKind::MpiIrecv => v[bin_of(t)][3] += 1.0,
                    _ => {}
                }
            }
        }
        v
    }

    /// `BinOf` finds the division's bin of every time, at and beside each threshold, for
    /// spans where `span / BINS` is and is not exact; the curves are the division's to the bit.
    #[test]
    fn bins_without_division_are_the_divisions() {
        for span in [
            1u64,
            7,
            99,
            100,
            101,
            12345,
            1 << 40,
            (1 << 53) + 12_345,
            u64::MAX / 3,
        ] {
            let dt = span as f64 / BINS as f64;
            let b = BinOf::new(span, dt);
            let g = |x: u64| ((x as f64 / dt) as usize).min(BINS - 1);
            let mut xs: Vec<u64> = vec![0, span, span / 2, span / 3];
            for &t in &b.thr[1..BINS] {
                if t != u64::MAX {
                    xs.extend([t.saturating_sub(1), t, t.saturating_add(1).min(span)]);
                }
            }
            let mut hint = 0;
            for &x in &xs {
                assert_eq!(b.bin(x, 0), g(x), "span {span} x {x}");
                assert_eq!(b.bin(x, BINS - 1), g(x), "span {span} x {x}");
                hint = b.bin(x, hint);
                assert_eq!(hint, g(x), "span {span} x {x}");
            }
        }
        for name in MPI_TRACES.iter().chain(&["scorep-omp/hybrid"]) {
            let (trace, _) = testdata_trace(name);
            let (t0, t1) = trace.time_span().unwrap();
            let dt = (t1 - t0) as f64 / BINS as f64;
            let bits = |v: Vec<[f64; 4]>| -> Vec<[u64; 4]> {
                v.iter().map(|c| c.map(f64::to_bits)).collect()
            };
            assert_eq!(
                bits(curves(&trace, (t0, t1, dt))),
                bits(curves_by_division(&trace, (t0, t1, dt))),
                "{name}"
            );
        }
    }

    /// The bins split every stretch at their edges: summed over the bins, each region's
    /// time is the replay's exclusive time of its call paths, to the tick (MPI traces
    /// without repairs or clamped timestamps).
    #[test]
    fn the_bins_hold_each_regions_exclusive_time_to_the_tick() {
        for name in MPI_TRACES {
            let (trace, replay) = testdata_trace(name);
            assert!(replay.locations.iter().all(|st| st.clamped == 0), "{name}");
            let det = detect_binned(&trace);
            let (t0, t1) = trace.time_span().unwrap();
            let bins = measure(&trace, det.bins.edges.clone());
            assert_eq!((bins.edges[0], bins.edges[BINS]), (t0, t1), "{name}");
            let ticks = bins.region_ticks(0, BINS);
            let mut want = vec![0u64; trace.defs.regions.len()];
            for st in &replay.locations {
                for (c, &t) in st.time.iter().enumerate() {
                    if let Callee::Region(r) = replay.tree.nodes[c].callee {
                        want[r as usize] += t;
                    }
                }
            }
            assert_eq!(ticks, want, "{name}");
            // and the phases' windows cover the bins once, in order
            let mut next = 0;
            for &(a, b) in &det.ranges {
                assert_eq!(a, next, "{name}");
                assert!(b > a, "{name}");
                next = b;
            }
            assert_eq!(next, BINS, "{name}");
        }
    }

    /// The wait-state values booked per window add up to the whole analysis's, cell by
    /// cell; accumulating passes book them as listing passes do, bit for bit.
    #[test]
    fn the_windows_add_up_to_the_whole_analysis() {
        let mut phased = 0;
        for name in MPI_TRACES
            .iter()
            .chain(&["scorep-omp/omp_barrier", "scorep-omp/hybrid"])
        {
            let (trace, replay) = testdata_trace(name);
            let det = detect_binned(&trace);
            let b = bounds(trace.time_span().map_or(0, |s| s.0), &det.phases);
            let rs = crate::rules::RuleSet::load(&[]).unwrap();
            let a = crate::analysis::analyse_with(&trace, &replay, rs.clone(), true, &b);
            let l = crate::analysis::analyse_with(&trace, &replay, rs, false, &b);
            if b.is_empty() {
                assert!(a.phase_values.is_empty(), "{name}");
                continue;
            }
            phased += 1;
            assert_eq!(a.phase_values.len(), det.phases.len(), "{name}");
            let bits = |v: &[crate::analysis::PhaseValues]| -> Bits {
                v.iter()
                    .map(|m| {
                        let mut x: Vec<_> = (m.iter())
                            .map(|(k, row)| (*k, row.iter().map(|v| v.to_bits()).collect()))
                            .collect();
                        x.sort_unstable();
                        x
                    })
                    .collect()
            };
            assert_eq!(bits(&a.phase_values), bits(&l.phase_values), "{name}");
            let mut seen = 0;
            for (k, rule) in a.rules.rules.iter().enumerate() {
                let wait = rule.info.unit == crate::rules::Unit::Sec
                    && crate::analysis::cube::is_pattern(rule.on);
                for c in 0..a.ncnode as u32 {
                    for loc in 0..a.nloc as u32 {
                        let whole = a.value(k, c, loc);
                        let parts: f64 = (a.phase_values.iter())
                            .filter_map(|m| m.get(&(k as u16, c)).map(|r| r[loc as usize]))
                            .sum();
                        if !wait {
                            assert_eq!(parts, 0.0, "{name} {}", rule.info.id);
                            continue;
                        }
                        seen += (whole > 0.0) as usize;
                        let tol = 1e-9 * whole.abs().max(1.0);
                        assert!(
                            (whole - parts).abs() <= tol,
                            "{name} {}: {whole} vs {parts}",
                            rule.info.id
                        );
                    }
                }
            }
            assert!(seen > 0, "{name}");
        }
        assert!(phased >= 4, "{phased}");
    }
}
