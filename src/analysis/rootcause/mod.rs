//! Root causes and Scalasca's critical-path metrics (Böhme et al., ICPP 2010, IPDPS 2012;
//! docs/root-causes.md): the
//! synchronisation points of an MPI run with their wait times, the critical path found by
//! walking backwards from the end of the run along the wait states to the locations that
//! caused them, and from it, per call path and location, the critical-path profile, the
//! activity impact, the critical-path imbalance impact, the inter-partition imbalance and the
//! non-critical-path activities.
//!
//! The mechanism, in our words:
//! * a **synchronisation point** is an event where a location may have waited for another:
//!   the receive of a matched message (its wait: the receive's call entered before the
//!   matching send's call), the completion of a blocking send (the receive posted late), the
//!   end of a collective operation (the last member to enter, or the root), the end of
//!   MPI_Finalize; each has a wait time (0 if it did not wait) and, when it waited, the event
//!   of the location that caused the wait (the send, the receive's posting, the member that
//!   entered last, the root);
//! * **time between two events** of a location is its exclusive time per call path between
//!   the last ENTER or LEAVE before the one and the last ENTER or LEAVE before the other;
//! * the **critical path** starts on the location that entered MPI_Finalize last, at its
//!   LEAVE; going backwards, at the first synchronisation point where that location waited,
//!   the time since it (less the wait) is booked to the location's call paths, and the path
//!   continues on the causing location from the causing event; it ends at the LEAVE of
//!   MPI_Init (the time since the ENTER of MPI_Init is booked).
//!
//! The critical path here is the one Scalasca 2.6 computes; issue 14's longest path
//! (`critical_path.rs`) is a different one (docs/report-json.md says how they differ).

pub(crate) mod costs;
pub(crate) mod delay;
pub(crate) mod omp;
mod section;
pub(crate) mod sync;
mod wrong_order;

pub use section::{Cause, RootCauseSection};
pub use wrong_order::{wrong_order_differences, wrong_order_differences_in};

use crate::analysis::Analysis;
use crate::model::{EventKind, Trace};
use crate::replay::calltree::NO_CNODE;
use crate::replay::matching::EventRef;
use crate::replay::Replay;
use crate::rules::causes::{Part, Quantity, RcWhat, Term};
use crate::rules::RuleSet;
use sync::Sync;

/// One root-cause metric as the reports show it: Scalasca's id, name and parent, the
/// wait-state metric it explains, and (not shown) what it is. Declared by the rule files
/// with `kind` (`rules/rootcause/`, docs/rules.md).
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct MetricInfo {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The wait-state metric whose waits this delay cost explains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause_of: Option<String>,
    pub description: String,
    pub unit: String,
    #[serde(skip)]
    pub what: RcWhat,
}

/// The root-cause metrics of a rule set, depth-first in their metric tree.
pub fn table(rules: &RuleSet) -> Vec<MetricInfo> {
    (rules.rc_metrics.iter())
        .map(|m| MetricInfo {
            id: m.info.id.clone(),
            name: m.info.name.clone(),
            parent: m.info.parent.clone(),
            cause_of: match m.what {
                RcWhat::Delay { of, .. } => rules.rules.get(of as usize).map(|r| r.info.id.clone()),
                _ => None,
            },
            description: m.info.description.clone(),
            unit: format!("{:?}", m.info.unit).to_lowercase(),
            what: m.what,
        })
        .collect()
}

/// The built-in root-cause metrics (`rules/rootcause/`).
pub fn metric_table() -> Vec<MetricInfo> {
    RuleSet::load(&[]).map_or_else(|_| Vec::new(), |r| table(&r))
}

/// The root-cause and critical-path metrics of a trace: per metric (in the table's
/// order), seconds per `cnode * nloc + loc`.
#[derive(Clone, Debug, Default)]
pub struct RootCauses {
    pub nloc: usize,
    pub metrics: Vec<(MetricInfo, Vec<f64>)>,
    /// The critical path's steps: (location, from event, to event), last step first.
    pub steps: Vec<(u32, u32, u32)>,
}

impl RootCauses {
    /// The metrics the reports show (those with a non-zero value, parents first) with their
    /// values inclusive along the metric tree (a parent holds its own value plus its
    /// children's), as the reports keep every metric.
    pub fn present(&self) -> Vec<(&MetricInfo, Vec<f64>)> {
        let n = self.metrics.len();
        let size = self.metrics.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        let mut incl: Vec<Vec<f64>> = (self.metrics.iter())
            .map(|(_, v)| {
                if v.is_empty() {
                    vec![0.0; size]
                } else {
                    v.clone()
                }
            })
            .collect();
        for k in (0..n).rev() {
            let Some(p) = &self.metrics[k].0.parent else {
                continue;
            };
            if let Some(j) = (0..k).find(|&j| self.metrics[j].0.id == *p) {
                let child = std::mem::take(&mut incl[k]);
                for (a, b) in incl[j].iter_mut().zip(&child) {
                    *a += b;
                }
                incl[k] = child;
            }
        }
        (self.metrics.iter().zip(incl))
            .filter(|(_, v)| v.iter().any(|&x| x != 0.0))
            .map(|((m, _), v)| (m, v))
            .collect()
    }

    /// The values of metric `id`, if computed.
    pub fn values(&self, id: &str) -> Option<&[f64]> {
        self.metrics
            .iter()
            .find(|(m, _)| m.id == id)
            .map(|(_, v)| v.as_slice())
    }
}

/// Exclusive time per call path (ticks) of location `l` between the last ENTER or LEAVE
/// before event `from` and the last one before event `to` (`from` = 0: from the first;
/// `to` past the end: to the last), added to `acc` (indexed by call path).
fn runtimes(trace: &Trace, replay: &Replay, l: usize, from: u32, to: u32, acc: &mut [f64]) {
    each_runtime(trace, replay, l, (from, to), &mut |c, t| {
        acc[c as usize] += t as f64
    });
}

/// `runtimes`, handing each (call path, ticks) piece to `add`.
fn each_runtime(
    trace: &Trace,
    replay: &Replay,
    l: usize,
    (from, to): (u32, u32),
    add: &mut dyn FnMut(u32, u64),
) {
    let ev = &trace.events[l];
    let st = &replay.locations[l];
    let is_el = |i: usize| matches!(ev.kind[i], EventKind::Enter | EventKind::Leave);
    // the last ENTER or LEAVE before event x; 0 and u32::MAX: the first and the last
    let cut = |x: u32| -> Option<usize> {
        match x {
            0 => (0..ev.len()).find(|&i| is_el(i)),
            u32::MAX => (0..ev.len()).rev().find(|&i| is_el(i)),
            x => (0..(x as usize).min(ev.len())).rev().find(|&i| is_el(i)),
        }
    };
    let (Some(b), Some(e)) = (cut(from), cut(to)) else {
        return;
    };
    let mut a = b;
    for i in b + 1..=e {
        if !is_el(i) {
            continue;
        }
        let c = match ev.kind[a] {
            EventKind::Enter => st.cnode(a),
            _ => match st.cnode(a) {
                NO_CNODE => NO_CNODE,
                c => replay.tree.nodes[c as usize].parent.unwrap_or(NO_CNODE),
            },
        };
        if c != NO_CNODE {
            add(c, ev.time.get(i).saturating_sub(ev.time.get(a)));
        }
        a = i;
    }
}

/// The location where the critical path starts (it entered MPI_Finalize last; the lowest
/// among equals) and its MPI_Finalize LEAVE.
pub(crate) fn path_start(trace: &Trace, fin: &[Option<(u32, u32)>]) -> Option<(usize, u32)> {
    (0..fin.len())
        .filter_map(|l| fin[l].map(|(e, x)| (trace.events[l].time.get(e as usize), l, x)))
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        .map(|(_, l, x)| (l, x))
}

/// Walk the critical path backwards; returns the profile (seconds, `cnode * nloc + loc`)
/// and the steps.
fn walk(trace: &Trace, replay: &Replay, sync: &Sync, res: f64) -> (Vec<f64>, Vec<(u32, u32, u32)>) {
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let mut prof = vec![0.0; ncn * nloc];
    let mut steps = Vec::new();
    let Some((mut l, mut end)) = path_start(trace, &sync.fin) else {
        return (prof, steps);
    };
    let mut tmap = vec![0.0; ncn];
    let limit: usize = trace.events.iter().map(|e| e.len()).sum::<usize>() + 1;
    while steps.len() < limit {
        let at = (l, end, res);
        let (start, next) = step(
            trace,
            replay,
            (&sync.sps[l], sync.init[l]),
            at,
            &mut tmap,
            &mut prof,
        );
        steps.push((l as u32, start, end));
        let Some(c) = next else { break };
        l = c.loc as usize;
        end = c.event;
    }
    (prof, steps)
}

/// One step of the critical path, on location `l` (its synchronisation points and first
/// MPI_Init*) back from event `end`: to its last synchronisation point before `end` where it
/// waited for a cause (or to its MPI_Init*'s LEAVE, or its first event), the time between
/// booked to `prof` (`cnode * nloc + loc`, seconds; the wait there less), `tmap` the time per
/// call path. Returns where the step starts and the cause the path goes on from.
pub(crate) fn step(
    trace: &Trace,
    replay: &Replay,
    (w, init): (&[sync::Sp], Option<(u32, u32)>),
    (l, end, res): (usize, u32, f64),
    tmap: &mut [f64],
    prof: &mut [f64],
) -> (u32, Option<EventRef>) {
    let nloc = trace.events.len();
    let k = w.partition_point(|x| x.event < end);
    let sp = (0..k)
        .rev()
        .map(|j| &w[j])
        .find(|x| x.wait > 0.0 && x.cause.is_some());
    let init_leave = init.map(|(_, x)| x).filter(|&x| x < end);
    let from = match (sp, init_leave) {
        (Some(s), Some(x)) if x > s.event => None,
        (Some(s), _) => Some(s),
        (None, _) => None,
    };
    tmap.iter_mut().for_each(|v| *v = 0.0);
    let start = from.map_or(init_leave.unwrap_or(0), |s| s.event);
    runtimes(trace, replay, l, start, end, tmap);
    for (c, &t) in tmap.iter().enumerate() {
        if t != 0.0 {
            prof[c * nloc + l] += t / res;
        }
    }
    let Some(s) = from else {
        return (start, None);
    };
    let c = replay.locations[l].cnode(s.event as usize);
    if c != NO_CNODE {
        let sub = s.wait.min(tmap[c as usize] / res);
        prof[c as usize * nloc + l] -= sub;
    }
    (start, Some(s.cause))
}

/// Location `l`'s local time profile: its time per call path less its waits, in seconds,
/// into `lt` (`cnode * nloc + loc`).
pub(crate) fn local_time(
    trace: &Trace,
    replay: &Replay,
    sync: &Sync,
    (l, res): (usize, f64),
    lt: &mut [f64],
) {
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let mut t = vec![0.0; ncn];
    match &sync.omp {
        Some(o) => o.each_runtime(l, (0, u32::MAX), &mut |c, x| t[c as usize] += x as f64),
        None => runtimes(trace, replay, l, 0, u32::MAX, &mut t),
    }
    let mut w = vec![0.0; ncn];
    for x in sync.sps[l].iter().filter(|x| x.wait > 0.0) {
        let c = replay.locations[l].cnode(x.event as usize);
        if c != NO_CNODE {
            w[c as usize] += x.wait;
        }
    }
    for c in 0..ncn {
        let tt = t[c] / res;
        lt[c * nloc + l] = tt - tt.min(w[c]);
    }
}

/// The root-cause metrics of the rule set (`analysis.rules`, files with `kind`) and
/// Scalasca's critical-path metrics of an MPI, OpenMP or hybrid trace (empty when it has
/// neither an MPI_Finalize nor an OpenMP thread team).
pub fn root_causes(trace: &Trace, replay: &Replay, analysis: &Analysis) -> RootCauses {
    let rules = &analysis.rules;
    let res = trace.timer_resolution.max(1) as f64;
    let (nloc, ncn) = (trace.events.len(), replay.tree.len());
    let sync = sync::synchpoints(trace, replay, res, analysis);
    let (lcp, steps) = match sync.omp {
        Some(_) => omp::walk(trace, replay, &sync, res),
        None => walk(trace, replay, &sync, res),
    };
    if steps.is_empty() {
        return RootCauses {
            nloc,
            ..RootCauses::default()
        };
    }
    // local time profile: time less the waits, per call path and location
    let mut lt = vec![0.0; ncn * nloc];
    for l in 0..nloc {
        local_time(trace, replay, &sync, (l, res), &mut lt);
    }
    let d = derived(nloc, ncn, &lcp, &lt);
    let c = costs::costs(trace, replay, &sync);
    let waits = p2p_waits(replay, &sync, ncn);
    let parts = Parts {
        lcp: &lcp,
        derived: &d,
        costs: &c,
        waits: &waits,
    };
    assemble(rules, &sync.kinds, (nloc, ncn), parts, steps)
}

/// Per kind of wait state, the waits of its point-to-point wait states (seconds, `cnode *
/// nloc + loc`; empty: none), each location's summed in point order.
pub(crate) fn p2p_waits(replay: &Replay, sync: &Sync, ncn: usize) -> Vec<Vec<f64>> {
    let nloc = sync.sps.len();
    let mut waits = vec![Vec::new(); sync.kinds.len()];
    for (l, sps) in sync.sps.iter().enumerate() {
        for x in sps.iter().filter(|x| x.wait > 0.0) {
            if !matches!(x.kind, sync::Kind::Recv | sync::Kind::SendCompletion) {
                continue;
            }
            let cn = replay.locations[l].cnode(x.event as usize);
            for &k in x.kinds.iter().filter(|_| cn != NO_CNODE) {
                let w: &mut Vec<f64> = &mut waits[k as usize];
                if w.is_empty() {
                    w.resize(ncn * nloc, 0.0);
                }
                w[cn as usize * nloc + l] += x.wait;
            }
        }
    }
    waits
}

/// What the root-cause metrics are made of (`cnode * nloc + loc`): the critical-path
/// profile, the metrics derived from it, the delay costs and the point-to-point waits.
pub(crate) struct Parts<'a> {
    pub(crate) lcp: &'a [f64],
    pub(crate) derived: &'a [Vec<f64>; 4],
    pub(crate) costs: &'a costs::Costs,
    pub(crate) waits: &'a [Vec<f64>],
}

/// The root-cause metrics of the rule set's table from their parts; `kinds` the kinds of
/// wait state (`Sync::kinds`).
pub(crate) fn assemble(
    rules: &RuleSet,
    kinds: &[u16],
    (nloc, ncn): (usize, usize),
    parts: Parts,
    steps: Vec<(u32, u32, u32)>,
) -> RootCauses {
    let Parts {
        lcp,
        derived: d,
        costs: c,
        waits,
    } = parts;
    // `a - b`, an empty vector counting as zeros
    let less = |a: &[f64], b: &[f64]| -> Vec<f64> {
        (0..a.len().max(b.len()))
            .map(|i| a.get(i).copied().unwrap_or(0.0) - b.get(i).copied().unwrap_or(0.0))
            .collect()
    };
    let kind_of = |of: u16| kinds.iter().position(|&r| r == of);
    let pick = |m: &MetricInfo| -> Option<Vec<f64>> {
        let v: &[f64] = match m.what {
            RcWhat::Sum => return Some(Vec::new()),
            RcWhat::CriticalPath(q) => match q {
                Quantity::Path => lcp,
                Quantity::Activities => &d[0],
                Quantity::Imbalance => &d[1],
                Quantity::InterPartition => &d[2],
                Quantity::NonCritical => &d[3],
            },
            RcWhat::Delay { of, term } => {
                let k = kind_of(of)?;
                match term {
                    Term::Short => &c.short[k],
                    Term::Long => &c.long[k],
                }
            }
            RcWhat::WaitCause { of, part } => {
                let k = kind_of(of)?;
                match part {
                    Part::Indirect => c.indirect.get(k)?,
                    Part::Propagating => c.propagating.get(k)?,
                    Part::Direct => return Some(less(waits.get(k)?, c.indirect.get(k)?)),
                    Part::Terminal => return Some(less(waits.get(k)?, c.propagating.get(k)?)),
                }
            }
        };
        Some(v.to_vec())
    };
    // a kind that booked nothing: zeros (a sum keeps its empty vector)
    let full = |m: &MetricInfo, v: Vec<f64>| match (&m.what, v.is_empty()) {
        (RcWhat::Sum, _) | (_, false) => v,
        _ => vec![0.0; ncn * nloc],
    };
    let metrics = table(rules)
        .into_iter()
        .filter_map(|m| pick(&m).map(|v| (full(&m, v), m)))
        .map(|(v, m)| (m, v))
        .collect();
    RootCauses {
        nloc,
        metrics,
        steps,
    }
}

/// The metrics derived from the critical-path profile `lcp` and the local time profile
/// `lt` (both `cnode * nloc + loc`), as Scalasca defines them.
/// Returns the activity impact, the imbalance impact, the inter-partition imbalance and the
/// non-critical-path activities.
pub(crate) fn derived(nloc: usize, ncn: usize, lcp: &[f64], lt: &[f64]) -> [Vec<f64>; 4] {
    let at = |v: &[f64], c: usize, l: usize| v[c * nloc + l];
    let g: Vec<f64> = (0..ncn)
        .map(|c| (0..nloc).map(|l| at(lcp, c, l)).sum())
        .collect();
    let gsum: f64 = g.iter().sum();
    let mut act = vec![0.0; ncn * nloc];
    let mut noncp = vec![0.0; ncn * nloc];
    let mut imb_g = vec![0.0; ncn];
    let mut hr_g = vec![0.0; ncn];
    for l in 0..nloc {
        let ltl: Vec<f64> = (0..ncn).map(|c| at(lt, c, l)).collect();
        let lsum: f64 = ltl.iter().sum();
        let excess: Vec<f64> = (0..ncn).map(|c| (g[c] - ltl[c]).max(0.0)).collect();
        let scale = (gsum - lsum) / excess.iter().sum::<f64>();
        // inter-partition headroom: critical-path time of call paths this location never runs
        let mut hr = g.clone();
        let mut lplen = 0.0;
        for c in 0..ncn {
            if ltl[c] > 0.0 {
                lplen += ltl[c] + (hr[c] - ltl[c].min(hr[c]));
                hr[c] = 0.0;
            }
        }
        let hrf = (gsum - lplen) / hr.iter().sum::<f64>();
        for c in 0..ncn {
            imb_g[c] += excess[c] * scale;
            hr_g[c] += hr[c] * hrf;
            if g[c] > 0.0 {
                act[c * nloc + l] = g[c].min(ltl[c]);
            }
            let nc = ltl[c] - g[c];
            if nc > 0.0 {
                noncp[c * nloc + l] = nc;
            }
        }
    }
    let mut imb = vec![0.0; ncn * nloc];
    let mut inter = vec![0.0; ncn * nloc];
    for c in 0..ncn {
        for l in 0..nloc {
            let v = at(lcp, c, l);
            if v > 0.0 {
                let a = v / g[c] * imb_g[c];
                if a > 0.0 {
                    imb[c * nloc + l] = a;
                }
                let b = v / g[c] * hr_g[c];
                if b > 0.0 {
                    inter[c * nloc + l] = b;
                }
            }
        }
    }
    // Scalasca's imbalance impact includes the inter-partition imbalance below it: its own
    // value is the rest
    for (a, b) in imb.iter_mut().zip(&inter) {
        *a -= b;
    }
    [act, imb, inter, noncp]
}
