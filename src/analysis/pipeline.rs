//! One call from a read trace to everything a report shows: the phase slice asked for, the
//! replay, the rules, the scores, and the extras the options ask for (critical path with its
//! what-ifs, matrices, overheads, phase summaries, views). Each stage is an info `tracing`
//! span (each extra its own, for `--timings`).

use super::critical_path::{self, CriticalPath};
use super::matrices::{self, TrafficMatrix, WaitMatrix};
use super::overheads::{self, Overheads};
use super::phases::{self, PhaseEntry};
use super::scores::{score, Finding, ScoreParams};
use super::Analysis;
use crate::model::Trace;
use crate::replay::Replay;
use crate::rules::RuleSet;
use tracing::field::Empty;

/// What to analyse and which extras to compute.
#[derive(Clone, Debug)]
pub struct Options {
    /// The rules to evaluate (built-ins and the user's).
    pub rules: RuleSet,
    pub params: ScoreParams,
    /// Analyse only phase K (1-based) of the detected phases (`--phase K`).
    pub phase: Option<usize>,
    /// The critical path, the wait and traffic matrices and the overhead classes.
    pub structure: bool,
    /// Regions whose time is set to zero in a what-if critical path each (implies
    /// `structure`).
    pub what_if: Vec<String>,
    /// Detect the phases and describe each from the whole analysis restricted to its window
    /// (not with `phase`).
    pub phases: bool,
    /// The views of the run over time for the HTML report (`analysis::views`).
    pub views: bool,
    /// The root causes and Scalasca's critical-path metrics (docs/root-causes.md).
    pub root_causes: bool,
}

impl Options {
    /// The rules alone: no phase slice, no extras, the default score parameters.
    pub fn new(rules: RuleSet) -> Options {
        Options {
            rules,
            params: ScoreParams::default(),
            phase: None,
            structure: false,
            what_if: Vec::new(),
            phases: false,
            views: false,
            root_causes: false,
        }
    }
}

/// The whole analysis while it exists, handed to the caller's view (the reports copy what
/// they show from it): the trace (or the phase slice analysed), its replay, the rules'
/// values and the scored findings.
pub struct Whole<'a> {
    pub trace: &'a Trace,
    pub replay: &'a Replay,
    pub analysis: &'a Analysis,
    pub findings: Vec<Finding>,
    pub params: ScoreParams,
    /// With `Options::root_causes`: the root causes and critical-path metrics.
    pub root_causes: Option<&'a super::rootcause::RootCauses>,
}

/// The phase analysed with `Options::phase`.
#[derive(Clone, Copy, Debug)]
pub struct Selected {
    /// 1-based, as asked.
    pub k: usize,
    /// How many phases the trace has.
    pub of: usize,
    /// Its bounds, in seconds from the start of the run.
    pub start_s: f64,
    pub end_s: f64,
}

/// The extras the options asked for (`None` where not asked).
#[derive(Debug, Default)]
pub struct Extras {
    pub selected: Option<Selected>,
    pub critical_path: Option<CriticalPath>,
    pub wait_matrix: Option<WaitMatrix>,
    pub traffic_matrix: Option<TrafficMatrix>,
    pub overheads: Option<Overheads>,
    pub phases: Option<Vec<PhaseEntry>>,
    pub views: Option<super::views::Views>,
    /// Wrong-order Late Sender instances Scalasca 2.6 books differently
    /// (docs/scalasca-differences.md): (several reclassified by one receive, sources across
    /// communicators).
    pub scalasca_differences: (u64, u64),
}

/// The analysis: what the caller's view made of the whole analysis, and the extras.
pub struct Outcome<V> {
    pub view: V,
    pub extras: Extras,
    /// What the analysis worked on, freed when this is dropped (`Working::leave`).
    pub working: Working,
}

/// The trace, the replay and the rule results an analysis worked on (most of a run's
/// memory), handed back so that the caller chooses when they are freed.
pub struct Working {
    _trace: Trace,
    _replay: Replay,
    _analysis: Analysis,
}

impl Working {
    /// Leaves the memory to the end of the process, nothing freed: for a program that
    /// exits next (the binary), since the kernel takes the pages back at exit for less than
    /// freeing the columns one by one costs (about 14 ms of a 0.35 s text run on the 4-rank
    /// ping-pong of `bench/full.sh`). Any other caller drops it.
    pub fn leave(self) {
        std::mem::forget(self)
    }
}

/// Why an analysis was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// `Options::phase` names no phase.
    #[error("--phase {k}: the trace has {phases} phase(s), numbered from 1")]
    NoSuchPhase { k: usize, phases: usize },
    /// A what-if region is not in the trace.
    #[error("--what-if {0}: no region of that name")]
    NoSuchRegion(String),
    #[error(transparent)]
    Error(#[from] crate::Error),
}

/// Analyse `trace` as `opts` asks. `view` is given the whole analysis once it is scored and
/// returns what the caller keeps of it (a report, a Cube); it runs beside the extras that
/// read the messages' payloads (the traffic matrix, the views' traffic, the wrong-order
/// differences), and the critical path after both, from the same replay and analysis (the
/// phases are detected beside the replay, and the rule passes book each wait-state
/// instance in its phase's window as they find it).
///
/// ```
/// use perfexpert::analysis::pipeline::Options;
/// let trace = perfexpert::open("testdata/scorep/ls/traces.otf2".as_ref())?;
/// let opts = Options {
///     structure: true,
///     ..Options::new(perfexpert::rules::RuleSet::load(&[])?)
/// };
/// // keep the metrics of the findings that are wait states
/// let outcome = perfexpert::analyse_trace(trace, opts, |whole| {
///     (whole.findings.iter())
///         .filter(|f| f.wait_state)
///         .map(|f| f.metric.clone())
///         .collect::<Vec<_>>()
/// })
/// .expect("no phase or what-if region asked for");
/// assert!(outcome.view.iter().any(|m| m == "mpi_latesender"));
/// assert!(outcome.extras.critical_path.is_some() && outcome.extras.phases.is_none());
/// # Ok::<(), perfexpert::Error>(())
/// ```
pub fn analyse_trace<V: Send>(
    trace: Trace,
    opts: Options,
    view: impl FnOnce(Whole<'_>) -> V + Send,
) -> Result<Outcome<V>, Refusal> {
    let mut extras = Extras::default();
    let mut trace = match opts.phase {
        None => trace,
        Some(k) => {
            let (part, selected) = select_phase(trace, k)?;
            extras.selected = Some(selected);
            part
        }
    };
    let want_phases = opts.phases && opts.phase.is_none();
    // the phases are detected beside the replay (both read only the trace), so that the
    // rule passes can book each wait-state instance in its phase's window as they find it
    let (replay, detected) = rayon::join(
        || replay(&trace),
        || (want_phases || opts.views).then(|| detect_phases(&trace)),
    );
    let bounds = match &detected {
        Some(d) if want_phases => phases::bounds(trace.time_span().map_or(0, |s| s.0), &d.phases),
        _ => Vec::new(),
    };
    let analysis = {
        let s = tracing::info_span!("rules evaluated", metrics = Empty).entered();
        let mut rules = opts.rules;
        // the instances of the rules with a `[cause]` are kept only for the root causes
        rules.record_causes = opts.root_causes;
        let a = super::analyse_phased(&trace, &replay, rules, &bounds);
        s.record("metrics", a.order.len());
        a
    };
    let want_structure = opts.structure || !opts.what_if.is_empty();
    let found = detected.as_ref().map_or(&[][..], |d| &d.phases[..]);
    let (trace_r, replay_r, analysis_r) = (&trace, &replay, &analysis);
    // the payload readers (the wrong-order differences, the views' traffic part, the
    // traffic matrix) beside what reads no payload and does not feed the critical path:
    // the root causes, the scores and the caller's view, the phase summaries
    let ((differences, (part, traffic)), (view, phase_entries)) = rayon::join(
        || {
            rayon::join(
                || super::rootcause::wrong_order_differences(trace_r, replay_r),
                || {
                    if opts.views && want_structure {
                        // both from one walk over the sends
                        let _s = tracing::info_span!("views of the run, traffic").entered();
                        let (part, matrix) =
                            super::views::views_traffic_with_matrix(trace_r, replay_r, found);
                        return (Some(part), Some(matrix));
                    }
                    rayon::join(
                        || {
                            opts.views.then(|| {
                                let _s = tracing::info_span!("views of the run, traffic").entered();
                                super::views::views_traffic(trace_r, replay_r, found)
                            })
                        },
                        || {
                            want_structure.then(|| {
                                let _s = tracing::info_span!("traffic matrix").entered();
                                matrices::traffic_matrix(trace_r, replay_r)
                            })
                        },
                    )
                },
            )
        },
        || {
            let root_causes = opts.root_causes.then(|| {
                let s = tracing::info_span!("root causes", metrics = Empty).entered();
                let rc = super::rootcause::root_causes(trace_r, replay_r, analysis_r);
                s.record("metrics", rc.metrics.len());
                rc
            });
            let view = {
                let s = tracing::info_span!("scores and report", findings = Empty).entered();
                let findings = score(trace_r, replay_r, analysis_r, opts.params);
                s.record("findings", findings.len());
                view(Whole {
                    trace: trace_r,
                    replay: replay_r,
                    analysis: analysis_r,
                    findings,
                    params: opts.params,
                    root_causes: root_causes.as_ref(),
                })
            };
            drop(root_causes); // the view kept what it shows
            let phase_entries = match (want_phases, &detected) {
                (true, Some(d)) => {
                    let _s = tracing::info_span!("phases", found = d.phases.len()).entered();
                    Some(phases::summarise(trace_r, d, replay_r, analysis_r))
                }
                _ => None,
            };
            (view, phase_entries)
        },
    );
    extras.scalasca_differences = differences;
    extras.phases = phase_entries;
    extras.traffic_matrix = traffic;
    if want_structure {
        // nothing after the traffic matrix and the views' traffic reads the payloads, and
        // the critical path's graph takes their place in memory (the full reports' peak)
        trace.events.iter_mut().for_each(|e| e.free_msg_payloads());
    }
    let owned = trace;
    let trace = &owned;
    let timeline = |part| {
        let _s = tracing::info_span!("views of the run").entered();
        super::views::views_rest(trace, &replay, &analysis, part)
    };
    if want_structure {
        let (views, st) = rayon::join(
            || part.map(timeline),
            || structure(trace, &replay, &analysis, &opts.what_if),
        );
        extras.views = views;
        let (cp, wait_matrix, oh) = st?;
        extras.critical_path = Some(cp);
        extras.wait_matrix = Some(wait_matrix);
        extras.overheads = Some(oh);
    } else {
        extras.views = part.map(timeline);
    }
    let working = Working {
        _trace: owned,
        _replay: replay,
        _analysis: analysis,
    };
    Ok(Outcome {
        view,
        extras,
        working,
    })
}

/// The replay, with the sizes `-v` shows.
fn replay(trace: &Trace) -> Replay {
    let s = tracing::info_span!(
        "replay",
        call_paths = Empty,
        messages_matched = Empty,
        unmatched_sends = Empty,
        unmatched_receives = Empty,
        collectives = Empty
    )
    .entered();
    let replay = Replay::new(trace);
    let m = &replay.matching;
    s.record("call_paths", replay.tree.nodes.len());
    s.record("messages_matched", m.messages);
    s.record("unmatched_sends", m.unmatched_sends);
    s.record("unmatched_receives", m.unmatched_receives);
    s.record("collectives", replay.instances.len());
    replay
}

/// Phase `k` (1-based) of the trace's phases, alone; the whole trace is dropped.
fn select_phase(trace: Trace, k: usize) -> Result<(Trace, Selected), Refusal> {
    let all = phases::detect(&trace);
    let t0 = trace.time_span().map_or(0, |s| s.0);
    cut_phase(trace, &all, t0, k)
}

/// Phase `k` (1-based) of the phases `all` of a run starting at tick `t0`, alone: `trace`
/// cut to it location by location (the whole trace, or one process's share of it under
/// `run --mpi`, where the phases are detected over the job).
pub fn cut_phase(
    trace: Trace,
    all: &[phases::Phase],
    t0: u64,
    k: usize,
) -> Result<(Trace, Selected), Refusal> {
    let Some(p) = k.checked_sub(1).and_then(|i| all.get(i)) else {
        return Err(Refusal::NoSuchPhase {
            k,
            phases: all.len(),
        });
    };
    tracing::debug!(phases = all.len(), k, "phase slice");
    let res = trace.timer_resolution.max(1) as f64;
    let selected = Selected {
        k,
        of: all.len(),
        start_s: (p.start - t0) as f64 / res,
        end_s: (p.end - t0) as f64 / res,
    };
    Ok((phases::slice(&trace, p, k == all.len()), selected))
}

/// The critical path (with a what-if length per region of `what_if`), the wait matrix and
/// the overhead classes, each its own stage span (the traffic matrix is made before, while
/// the messages' payloads exist).
fn structure(
    trace: &Trace,
    replay: &Replay,
    a: &Analysis,
    what_if: &[String],
) -> Result<(CriticalPath, WaitMatrix, Overheads), Refusal> {
    let s = tracing::info_span!("critical path", length_s = Empty, segments = Empty).entered();
    let g = critical_path::Graph::new(trace, replay);
    let cp = critical_path::critical_path_of(&g, trace, replay, what_if)
        .map_err(Refusal::NoSuchRegion)?;
    s.record("length_s", cp.length_s);
    s.record("segments", cp.segments.len());
    drop(s);
    let s = tracing::info_span!("wait matrix").entered();
    let wait_matrix = matrices::wait_matrix(trace, &g);
    drop(g);
    drop(s);
    let _s = tracing::info_span!("overheads").entered();
    Ok((cp, wait_matrix, overheads::overheads(a)))
}

/// The phases of the trace (`phases::detect_binned`), with its stage span.
fn detect_phases(trace: &Trace) -> phases::Detected {
    let s = tracing::info_span!("phase detection", found = Empty).entered();
    let found = phases::detect_binned(trace);
    s.record("found", found.phases.len());
    found
}
