//! Automatic phases (IPS-2): the run is cut into time bins; per bin, metric-over-time curves
//! (the share of location time in MPI calls, in OpenMP constructs, in other regions, and the
//! rate of point-to-point events) are smoothed with a sliding window, and
//! `B_i = Σ_m |ΔV_m,i / Δt_i| · h_m` (h_m = Δt / max V_m, so every curve weighs the same)
//! marks how much the behaviour changes at bin edge i. Boundaries are the edges where B_i is a
//! local maximum and above the mean plus two standard deviations (and above `MIN_SCORE`),
//! placed at the edge of the
//! largest unsmoothed change nearby. `slice` cuts a trace to one phase for
//! `perfexpert run --phase K`.

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
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub start: u64,
    pub end: u64,
    /// B at the phase's starting boundary (0 for the first phase).
    pub score: f64,
}

/// The phases of a trace (one phase if nothing changes, none if the trace has no time).
pub fn detect(trace: &Trace) -> Vec<Phase> {
    let Some((t0, t1)) = trace.time_span() else {
        return Vec::new();
    };
    if t1 <= t0 {
        return Vec::new();
    }
    let span = (t1 - t0) as f64;
    let dt = span / BINS as f64;
    let bin_of = |t: u64| (((t - t0) as f64 / dt) as usize).min(BINS - 1);
    // curves: 0 MPI, 1 OpenMP, 2 other regions (time shares), 3 point-to-point events
    let mut v = vec![[0.0f64; 4]; BINS];
    let d = &trace.defs;
    let classes: Vec<usize> = (d.regions.iter())
        .map(|x| match x.paradigm {
            Paradigm::MPI => 0,
            Paradigm::OPENMP => 1,
            _ => 2,
        })
        .collect();
    for ev in &trace.events {
        let mut stack: Vec<u32> = Vec::new();
        for i in 0..ev.len() {
            let t = ev.time[i].clamp(t0, t1);
            if let Some(&r) = stack.last() {
                if i > 0 {
                    let from = ev.time[i - 1].clamp(t0, t1).min(t);
                    let class = classes.get(r as usize).copied().unwrap_or(2);
                    spread(&mut v, class, from, t, t0, dt);
                }
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
    let edge = |i: usize| t0 + ((i as f64) * dt).round() as u64;
    let mut out = Vec::new();
    let mut start = (t0, 0.0);
    for &p in &peaks {
        out.push(Phase {
            start: start.0,
            end: edge(p),
            score: start.1,
        });
        start = (edge(p), score[p]);
    }
    out.push(Phase {
        start: start.0,
        end: t1,
        score: start.1,
    });
    out
}

/// Add the interval [from, to) to curve `m`, split over the bins it covers, as a share of
/// the bin's time (one location fully inside adds 1).
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
    let n_in = ev.time.iter().filter(|&&t| inside(t)).count();
    let mut out = Events::with_capacity(0);
    if n_in > 0 {
        out = Events::with_capacity(n_in + 16);
    }
    let mut stack: Vec<u32> = Vec::new();
    let mut opened = false;
    let has_attributes = !ev.attribute_index.is_empty();
    for i in 0..ev.len() {
        let t = ev.time[i];
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
        let t = out.time.last().copied().unwrap_or(ph.start).max(ph.start);
        let t = t.max(ph.end.saturating_sub(1)).min(ph.end);
        while let Some(r) = stack.pop() {
            out.push_region(t, EventKind::Leave, r);
        }
    }
    out
}

/// The trace cut into all its phases at once, each location's events dropped as soon as they
/// are cut (the slices together take about the trace's memory, never twice it).
pub fn slice_all(trace: Trace, phases: &[Phase]) -> Vec<Trace> {
    use rayon::prelude::*;
    let mut trace = trace;
    let events = std::mem::take(&mut trace.events);
    let per_loc: Vec<Vec<Events>> = events
        .into_par_iter()
        .map(|ev| {
            (phases.iter().enumerate())
                .map(|(k, ph)| slice_events(&ev, ph, k + 1 == phases.len()))
                .collect()
        })
        .collect();
    let mut parts: Vec<Vec<Events>> = phases
        .iter()
        .map(|_| Vec::with_capacity(per_loc.len()))
        .collect();
    for cuts in per_loc {
        for (k, e) in cuts.into_iter().enumerate() {
            parts[k].push(e);
        }
    }
    parts
        .into_iter()
        .map(|events| with_events(&trace, trace.defs.clone(), events))
        .collect()
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

/// Analyse each phase alone (its slice of the trace) and describe it: dominant regions and
/// the most significant wait-state findings. `rules` loads the rule set for each analysis;
/// `whole` is the analysis of the whole trace, reused when the only phase is the whole run
/// (its slice would be the trace itself: a second replay and analysis for nothing).
pub fn summarise(
    trace: &Trace,
    phases: &[Phase],
    rules: &dyn Fn() -> crate::error::Result<crate::rules::RuleSet>,
    whole: (&crate::replay::Replay, &crate::analysis::Analysis),
) -> crate::error::Result<Vec<PhaseEntry>> {
    let t0 = trace.time_span().map_or(0, |s| s.0);
    let mut out = Vec::new();
    for (k, ph) in phases.iter().enumerate() {
        if phases.len() == 1 && ph.start <= t0 {
            out.push(describe(trace, t0, k, ph, whole.0, whole.1));
            continue;
        }
        let _s = tracing::debug_span!("phase", k = k + 1).entered();
        let part = slice(trace, ph, k + 1 == phases.len());
        let replay = crate::replay::Replay::new(&part);
        let a = crate::analysis::analyse(&part, &replay, rules()?);
        out.push(describe(&part, t0, k, ph, &replay, &a));
    }
    Ok(out)
}

/// Whether the phases are the whole run (one phase from its start): then a phase's analysis
/// is the whole analysis.
pub fn is_whole(trace: &Trace, phases: &[Phase]) -> bool {
    let t0 = trace.time_span().map_or(0, |s| s.0);
    phases.len() == 1 && phases[0].start <= t0
}

/// As `summarise` when the phases are not the whole run (`!is_whole`), taking the trace: it
/// is cut into all phases at once and each phase's slice, replay and analysis are dropped
/// before the next, so the memory never exceeds about one analysis of the trace.
pub fn summarise_owned(
    trace: Trace,
    phases: &[Phase],
    rules: &dyn Fn() -> crate::error::Result<crate::rules::RuleSet>,
) -> crate::error::Result<Vec<PhaseEntry>> {
    let t0 = trace.time_span().map_or(0, |s| s.0);
    let mut out = Vec::new();
    let mut parts = slice_all(trace, phases).into_iter();
    for (k, ph) in phases.iter().enumerate() {
        let Some(part) = parts.next() else { break };
        let _s = tracing::debug_span!("phase", k = k + 1, events = part.event_count()).entered();
        let replay = crate::replay::Replay::new(&part);
        let a = crate::analysis::analyse(&part, &replay, rules()?);
        out.push(describe(&part, t0, k, ph, &replay, &a));
    }
    Ok(out)
}

/// Phase `k` (0-based) as the report lists it, from the analysis of its slice `part`.
fn describe(
    part: &Trace,
    t0: u64,
    k: usize,
    ph: &Phase,
    replay: &crate::replay::Replay,
    a: &crate::analysis::Analysis,
) -> PhaseEntry {
    use crate::analysis::scores::{score, ScoreParams};
    use crate::replay::calltree::Callee;
    let sec = |t: u64| t as f64 / part.timer_resolution.max(1) as f64;
    let mut findings = score(part, replay, a, ScoreParams::default());
    findings.retain(|f| f.wait_state);
    crate::analysis::scores::rank(&mut findings);
    // exclusive time per region over all locations
    let mut by_region: std::collections::BTreeMap<String, u64> = Default::default();
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
                *by_region.entry(reg.name.clone()).or_default() += t;
            }
        }
    }
    let mut regions: Vec<(String, u64)> = by_region.into_iter().collect();
    regions.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
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
        regions: regions
            .into_iter()
            .take(3)
            .map(|(n, t)| (n, sec(t)))
            .collect(),
        findings: findings
            .iter()
            .take(3)
            .map(|f| {
                (
                    f.metric.clone(),
                    replay.path_name(part, f.callpath),
                    f.severity,
                )
            })
            .collect(),
    }
}
