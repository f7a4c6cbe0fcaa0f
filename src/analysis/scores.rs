//! Scores of a finding (patterns.md §6): severity, significance and precision.

use super::Analysis;
use crate::model::{Paradigm, Trace};
use crate::replay::Replay;
use crate::rules::{Trigger, Unit};

/// Score constants (§6.3 defaults).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ScoreParams {
    pub s_ref: f64,
    pub s_min: f64,
    pub k_res: f64,
}

impl Default for ScoreParams {
    fn default() -> Self {
        ScoreParams {
            s_ref: 0.10,
            s_min: 0.001,
            k_res: 10.0,
        }
    }
}

/// One finding: a metric at a call path, over all locations, with its scores and the
/// quantities they come from (so they can be recomputed).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Finding {
    /// Index of the rule (metric) in `Analysis::rules`.
    #[serde(skip)]
    pub rule: usize,
    pub metric: String,
    pub callpath: u32,
    pub severity: f64,
    pub significance: f64,
    pub precision: f64,
    /// share of the denominator, affected share of eligible locations, imbalance
    pub s: f64,
    pub a: f64,
    pub imbalance: f64,
    /// clock, reconstruction, resolution and repair factors of the precision
    pub kappa: f64,
    pub rho: f64,
    pub tau: f64,
    pub psi: f64,
    /// contributing instances
    pub n: u64,
    /// Whether the metric is a wait state (computed by a pattern, unit seconds).
    pub wait_state: bool,
    /// The worst instances, worst first (at most `WORST_K`); absent for metrics that have
    /// no instances of their own (class time, sums, derived metrics).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub worst_instances: Vec<WorstInstance>,
}

/// One of the worst instances of a finding.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct WorstInstance {
    /// Location id.
    pub location: u64,
    /// 1 = the worst.
    pub rank: u32,
    /// Seconds since the trace's first event, of the event the value is attributed to.
    pub time_s: f64,
    /// The instance's severity, in the metric's unit.
    pub value: f64,
}

/// Score every (metric, call path) with a non-zero severity.
/// The report's order of findings: most significant first, then by severity, metric id and
/// call path (a total order, so ties never depend on how the findings were computed).
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|x, y| {
        y.significance
            .total_cmp(&x.significance)
            .then(y.severity.total_cmp(&x.severity))
            .then(x.metric.cmp(&y.metric))
            .then(x.callpath.cmp(&y.callpath))
    });
}

pub fn score(trace: &Trace, replay: &Replay, a: &Analysis, p: ScoreParams) -> Vec<Finding> {
    score_in(trace, replay, a, p, &Extent::of(trace))
}

/// What the scores and the report read of the trace's events as a whole: `Extent::of` a
/// trace, or gathered from the processes of `run --mpi` (each holding its share).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extent {
    /// Per location: whether it has events.
    pub has_events: Vec<bool>,
    /// (first, last) tick over all locations (`Trace::time_span`).
    pub span: Option<(u64, u64)>,
    /// Events of all locations.
    pub events: u64,
}

impl Extent {
    pub fn of(trace: &Trace) -> Extent {
        Extent {
            has_events: trace.events.iter().map(|e| !e.is_empty()).collect(),
            span: trace.time_span(),
            events: trace.event_count(),
        }
    }
}

/// `score`, the trace's events seen through `x`.
pub fn score_in(
    trace: &Trace,
    replay: &Replay,
    a: &Analysis,
    p: ScoreParams,
    x: &Extent,
) -> Vec<Finding> {
    let nloc = a.nloc;
    let rules = &a.rules.rules;
    // eligible locations (§6.3)
    let has_events = &x.has_events;
    let runs_mpi: Vec<bool> = replay
        .locations
        .iter()
        .map(|st| {
            (0..replay.tree.len()).any(|c| {
                st.visits[c] > 0
                    && matches!(replay.tree.nodes[c].callee,
                        crate::replay::calltree::Callee::Region(r)
                            if trace.defs.regions[r as usize].paradigm == Paradigm::MPI)
            })
        })
        .collect();
    // locations with repairs, clamped timestamps, measurement gaps or unmatched messages
    // lower precision (ψ, §6.2)
    let repaired: Vec<bool> = replay
        .locations
        .iter()
        .enumerate()
        .map(|(l, st)| {
            st.repairs.iter().any(|&r| r > 0)
                || st.clamped > 0
                || st.gaps > 0
                || replay
                    .unmatched_locations
                    .binary_search(&(l as u32))
                    .is_ok()
        })
        .collect();
    let mut total_time: f64 = replay
        .locations
        .iter()
        .map(|st| st.time.iter().sum::<u64>() as f64)
        .sum::<f64>()
        / trace.timer_resolution as f64;
    // D(m) = Σ time (§6.3): with OpenMP, `time` also holds the idle time of worker threads
    // (§3.5), which the replay's exclusive time does not
    let has_workers = (replay.omp.master.iter().enumerate()).any(|(l, &m)| m as usize != l);
    if has_workers {
        if let Some(k) = a.rules.index_of("time") {
            total_time = a.values[k].iter().sum();
        }
    }
    let root_of = |mut k: usize| {
        while let Some(parent) = &rules[k].info.parent {
            match a.rules.index_of(parent) {
                Some(q) => k = q,
                None => break,
            }
        }
        k
    };
    let r = (1.0 / trace.timer_resolution as f64).max(1e-9);
    // instance times count from the trace's first event, as the other sections do
    let t0 = x.span.map_or(0, |s| s.0);
    let mut out = Vec::new();
    for &k in &a.order {
        let rule = &rules[k];
        let eligible: Vec<usize> = (0..nloc)
            .filter(|&l| {
                if rule.info.paradigm.as_deref() == Some("mpi") {
                    runs_mpi[l]
                } else {
                    has_events[l]
                }
            })
            .collect();
        if eligible.is_empty() {
            continue;
        }
        let denom = if rule.info.unit == Unit::Sec {
            total_time
        } else {
            let root = root_of(k);
            a.values[root].iter().sum()
        };
        let wait_state = rule.info.unit == Unit::Sec
            && !matches!(rule.on, Trigger::Callpath | Trigger::Sum | Trigger::Derived);
        for c in 0..a.ncnode as u32 {
            let row = &a.values[k][c as usize * nloc..(c as usize + 1) * nloc];
            let sev: f64 = row.iter().sum();
            if sev == 0.0 {
                continue;
            }
            let s = if denom > 0.0 { sev / denom } else { 0.0 };
            let n_elig = eligible.len() as f64;
            let affected = eligible.iter().filter(|&&l| row[l] > 0.0).count() as f64 / n_elig;
            let max = eligible.iter().map(|&l| row[l]).fold(0.0, f64::max);
            let mean = eligible.iter().map(|&l| row[l]).sum::<f64>() / n_elig;
            let imbalance = if max > 0.0 { 1.0 - mean / max } else { 0.0 };
            let g = (s / p.s_ref).min(1.0);
            let significance = if s < p.s_min {
                g
            } else {
                0.6 * g + 0.2 * affected + 0.2 * imbalance
            };
            let st = a.stats[k].get(&c).copied().unwrap_or_default();
            let kappa = 1.0 - st.sev_cc / sev;
            let rho = 1.0 - 0.5 * st.sev_rec / sev;
            let tau = if st.n == 0 {
                1.0
            } else {
                ((sev / st.n as f64) / (p.k_res * r)).min(1.0)
            };
            let sev_rep: f64 = (0..nloc).filter(|&l| repaired[l]).map(|l| row[l]).sum();
            let psi = 1.0 - 0.5 * sev_rep / sev;
            out.push(Finding {
                rule: k,
                metric: rule.info.id.clone(),
                callpath: c,
                severity: sev,
                significance,
                precision: (kappa * rho * tau * psi).clamp(0.0, 1.0),
                s,
                a: affected,
                imbalance,
                kappa,
                rho,
                tau,
                psi,
                n: st.n,
                wait_state,
                worst_instances: a.worst[k].get(&c).map_or(Vec::new(), |w| {
                    (w.instances().iter().enumerate())
                        .map(|(i, x)| WorstInstance {
                            location: trace.defs.locations[x.loc as usize].id,
                            rank: i as u32 + 1,
                            time_s: x.time.saturating_sub(t0) as f64
                                / trace.timer_resolution.max(1) as f64,
                            value: x.value,
                        })
                        .collect()
                }),
            });
        }
    }
    out
}
