//! Reports of an analysis: the JSON document (docs/report-json.md) and the terminal text.
//! A report knows nothing of how a value was found.

pub mod csv;
pub mod cubex;
pub mod diff;
pub mod html;
pub mod text;

use crate::analysis::pipeline::{Extras, Whole};
use crate::analysis::scores::{Extent, Finding, ScoreParams};
use crate::analysis::Analysis;
use crate::model::Trace;
use crate::replay::calltree::Callee;
use crate::replay::Replay;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct TraceInfo {
    pub path: String,
    pub format: String,
    pub creator: String,
    pub locations: usize,
    pub events: u64,
    pub duration_s: f64,
}

#[derive(Debug, Serialize)]
pub struct MetricEntry {
    pub id: String,
    pub name: String,
    pub long_name: String,
    pub unit: crate::rules::Unit,
    pub parent: Option<String>,
    pub description: String,
    pub diagnosis: String,
}

#[derive(Debug, Serialize)]
pub struct CallpathEntry {
    pub id: u32,
    pub parent: Option<u32>,
    pub region: String,
}

#[derive(Debug, Serialize)]
pub struct LocationEntry {
    pub id: u64,
    pub name: String,
    pub rank: Option<u32>,
    pub thread: u32,
    pub process: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct ValueEntry {
    pub metric: String,
    pub callpath: u32,
    pub location: u64,
    pub value: f64,
}

#[derive(Debug, Serialize)]
pub struct Diagnostics {
    pub clock_condition_violations: u64,
    pub clock_violations: crate::analysis::Violations,
    pub unmatched_sends: u64,
    pub unmatched_receives: u64,
    pub unresolved_peers: u64,
    pub ignored_records: u64,
    pub incomplete_collective_instances: u64,
    pub repairs: u64,
    pub clamped_timestamps: u64,
    pub measurement_gaps: u64,
    pub warnings: Vec<String>,
}

/// The whole report (docs/report-json.md), `format_version` 1.
#[derive(Debug, Serialize)]
pub struct Report {
    pub format_version: u32,
    pub trace: TraceInfo,
    pub metrics: Vec<MetricEntry>,
    pub callpaths: Vec<CallpathEntry>,
    pub locations: Vec<LocationEntry>,
    /// Sparse; exclusive along call paths, inclusive along the metric tree (as in Cube).
    pub values: Vec<ValueEntry>,
    pub findings: Vec<Finding>,
    pub score_parameters: ScoreParams,
    pub diagnostics: Diagnostics,
    /// The sections of issue 14, filled by `Report::add_extras` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_path: Option<crate::analysis::critical_path::CriticalPath>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_matrix: Option<crate::analysis::matrices::WaitMatrix>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traffic_matrix: Option<crate::analysis::matrices::TrafficMatrix>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overheads: Option<crate::analysis::overheads::Overheads>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phases: Option<Vec<crate::analysis::phases::PhaseEntry>>,
    /// The HTML report's views of the run over time (not in the JSON report).
    #[serde(skip)]
    pub views: Option<crate::analysis::views::Views>,
    /// Issue 27's root causes and critical-path metrics (docs/root-causes.md), when computed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_causes: Option<crate::analysis::rootcause::RootCauseSection>,
}

impl Report {
    pub fn build(
        trace: &Trace,
        replay: &Replay,
        a: &Analysis,
        findings: Vec<Finding>,
        params: ScoreParams,
    ) -> Report {
        Report::build_in(trace, replay, a, findings, params, &Extent::of(trace))
    }

    /// `build`, the trace's events seen through `x` (`run --mpi`: gathered from the
    /// processes holding them).
    pub fn build_in(
        trace: &Trace,
        replay: &Replay,
        a: &Analysis,
        mut findings: Vec<Finding>,
        params: ScoreParams,
        x: &Extent,
    ) -> Report {
        let span = x.span;
        let d = &trace.defs;
        let region_name = |c: Callee| match c {
            Callee::Region(r) => d.regions[r as usize].name.clone(),
            Callee::ArtificialRoot => "program".to_string(),
        };
        // thread number = position of the location inside its process
        let mut seen_in_group: std::collections::HashMap<Option<usize>, u32> = Default::default();
        // a worker thread's rank is its process's (the master's) rank
        let group_rank: std::collections::HashMap<Option<usize>, u32> = d
            .locations
            .iter()
            .filter_map(|l| l.rank.map(|r| (l.group, r)))
            .collect();
        let locations = d
            .locations
            .iter()
            .map(|l| {
                let n = seen_in_group.entry(l.group).or_insert(0);
                let thread = *n;
                *n += 1;
                LocationEntry {
                    id: l.id,
                    name: l.name.clone(),
                    rank: l.rank.or_else(|| group_rank.get(&l.group).copied()),
                    thread,
                    process: l.group.map(|g| d.location_groups[g].name.clone()),
                }
            })
            .collect();
        let mut values = Vec::new();
        for &k in &a.order {
            let id = &a.rules.rules[k].info.id;
            for c in 0..a.ncnode as u32 {
                for l in 0..a.nloc as u32 {
                    let v = a.value(k, c, l);
                    if v != 0.0 {
                        values.push(ValueEntry {
                            metric: id.clone(),
                            callpath: c,
                            location: d.locations[l as usize].id,
                            value: v,
                        });
                    }
                }
            }
        }
        crate::analysis::scores::rank(&mut findings);
        let m = replay.matching;
        let rep = &replay.locations;
        Report {
            format_version: 1,
            trace: TraceInfo {
                path: trace.path.display().to_string(),
                format: format!("{} {}", trace.origin.format, trace.origin.format_version)
                    .trim_end()
                    .to_string(),
                creator: trace.origin.creator.clone(),
                locations: d.locations.len(),
                events: x.events,
                duration_s: span.map_or(0.0, |(x, y)| {
                    y.saturating_sub(x) as f64 / trace.timer_resolution as f64
                }),
            },
            metrics: a
                .order
                .iter()
                .map(|&k| {
                    let i = &a.rules.rules[k].info;
                    MetricEntry {
                        id: i.id.clone(),
                        name: i.name.clone(),
                        long_name: i.long_name.clone(),
                        unit: i.unit,
                        parent: i.parent.clone(),
                        description: i.description.clone(),
                        diagnosis: i.diagnosis.clone(),
                    }
                })
                .collect(),
            callpaths: replay
                .tree
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| CallpathEntry {
                    id: i as u32,
                    parent: n.parent,
                    region: region_name(n.callee),
                })
                .collect(),
            locations,
            values,
            findings,
            score_parameters: params,
            diagnostics: Diagnostics {
                clock_condition_violations: a.violations.p2p + a.violations.collective,
                clock_violations: a.violations,
                unmatched_sends: m.unmatched_sends,
                unmatched_receives: m.unmatched_receives,
                unresolved_peers: m.unresolved_peers,
                ignored_records: m.ignored_records,
                incomplete_collective_instances: replay.collectives.incomplete,
                repairs: rep.iter().map(|s| s.repairs.iter().sum::<u64>()).sum(),
                clamped_timestamps: rep.iter().map(|s| s.clamped).sum(),
                measurement_gaps: rep.iter().map(|s| s.gaps).sum(),
                warnings: trace
                    .warnings
                    .iter()
                    .map(|w| w.to_string())
                    .chain((replay.omp.stats.orphan_regions > 0).then(|| {
                        format!(
                            "{} parallel-region instance(s) on threads whose master had not \
                             forked: in no team, no fork/join or barrier analysis",
                            replay.omp.stats.orphan_regions
                        )
                    }))
                    .chain(
                        (replay.omp.stats.nested_regions + replay.omp.stats.worker_forks > 0).then(
                            || {
                                format!(
                                    "nested parallelism is not modelled: {} parallel-region \
                                     instance(s) inside another, {} fork(s) by worker threads; \
                                     their threads are analysed as members of the outer team",
                                    replay.omp.stats.nested_regions, replay.omp.stats.worker_forks
                                )
                            },
                        ),
                    )
                    .collect(),
            },
            critical_path: None,
            wait_matrix: None,
            traffic_matrix: None,
            overheads: None,
            phases: None,
            views: None,
            root_causes: None,
        }
    }

    /// The report of the whole analysis (`analysis::pipeline`'s view of it).
    pub fn of(w: Whole<'_>) -> Report {
        let x = Extent::of(w.trace);
        Report::of_in(w, &x)
    }

    /// `of`, the trace's events seen through `x` (`run --mpi`: gathered from the processes
    /// holding them).
    pub fn of_in(w: Whole<'_>, x: &Extent) -> Report {
        let mut rc = w.root_causes.and_then(|rc| rc.section(w.trace));
        let mut r = Report::build_in(w.trace, w.replay, w.analysis, w.findings, w.params, x);
        if let Some(all) = w.root_causes {
            r.add_root_cause_metrics(w.trace, all);
        }
        for c in rc.iter_mut().flat_map(|s| s.causes.iter_mut()) {
            c.precision = cause_precision(&r.findings, &c.wait_state);
        }
        r.root_causes = rc;
        r
    }

    /// The root-cause and critical-path metrics join the metric list and the values (after
    /// the rules' metrics; the Cube report has the same, `Cube::add_root_causes`).
    fn add_root_cause_metrics(
        &mut self,
        trace: &Trace,
        rc: &crate::analysis::rootcause::RootCauses,
    ) {
        let nloc = rc.nloc.max(1);
        for (m, v) in rc.present() {
            self.metrics.push(MetricEntry {
                id: m.id.clone(),
                name: m.name.clone(),
                long_name: m.name.clone(),
                unit: crate::rules::Unit::Sec,
                parent: m.parent.clone(),
                description: m.description.clone(),
                diagnosis: String::new(),
            });
            for (k, &x) in v.iter().enumerate() {
                if x != 0.0 {
                    self.values.push(ValueEntry {
                        metric: m.id.clone(),
                        callpath: (k / nloc) as u32,
                        location: trace.defs.locations.get(k % nloc).map_or(0, |l| l.id),
                        value: x,
                    });
                }
            }
        }
    }

    /// Add the extras of the analysis: the critical path, the matrices, the overhead classes,
    /// the phases, and a warning first when only one phase was analysed.
    pub fn add_extras(&mut self, e: Extras) {
        self.critical_path = e.critical_path;
        self.wait_matrix = e.wait_matrix;
        self.traffic_matrix = e.traffic_matrix;
        self.overheads = e.overheads;
        self.phases = e.phases;
        self.views = e.views;
        let (several, cross) = e.scalasca_differences;
        if several + cross > 0 {
            self.diagnostics.warnings.push(format!(
                "{} wrong-order instances are booked differently by Scalasca 2.6 ({several} \
                 reclassified several at a time, {cross} across communicators): \
                 docs/scalasca-differences.md",
                several + cross
            ));
        }
        if let Some(p) = e.selected {
            let note = format!(
                "phase {} of {} only ({:.6} s to {:.6} s): messages and collectives crossing \
                 its bounds are unmatched or incomplete",
                p.k, p.of, p.start_s, p.end_s
            );
            self.diagnostics.warnings.insert(0, note);
        }
    }

    /// The call path as region names joined by `/`.
    pub fn path(&self, c: u32) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(c);
        while let Some(i) = cur {
            let n = &self.callpaths[i as usize];
            parts.push(n.region.as_str());
            cur = n.parent;
        }
        parts.reverse();
        parts.join("/")
    }

    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(|e| match e.io_error_kind() {
            Some(kind) => std::io::Error::from(kind),
            None => std::io::Error::other(e),
        })?;
        writeln!(out)
    }
}

/// The precision of the delay costs that explain the waits of `wait_state`: the
/// severity-weighted mean precision of that metric's findings (1 when it has none), so a
/// cause of waits at reconstructed collectives (Paje, OTF 1) is as uncertain as the waits.
fn cause_precision(findings: &[Finding], wait_state: &str) -> f64 {
    let (sum, sev) = (findings.iter())
        .filter(|f| f.metric == wait_state && f.severity > 0.0)
        .fold((0.0, 0.0), |(p, s), f| {
            (p + f.precision * f.severity, s + f.severity)
        });
    if sev > 0.0 {
        sum / sev
    } else {
        1.0
    }
}
