//! The root causes as the reports show them (docs/report-json.md `root_causes`): the metric
//! table (the values join the report's metrics and values), and per wait-state metric the call paths and locations whose
//! delay caused most of it (short- plus long-term cost).

use super::{MetricInfo, RootCauses};
use crate::model::Trace;
use crate::rules::causes::{RcWhat, Term};
use serde::Serialize;

/// A call path on a location whose delay caused waits of `wait_state`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Cause {
    pub wait_state: String,
    pub callpath: u32,
    pub location: u64,
    /// Caused directly (short-term delay cost) and through waits it propagated (long-term).
    pub short_s: f64,
    pub long_s: f64,
    /// The precision of the waits it explains: the severity-weighted mean precision of the
    /// wait-state metric's findings (lowered, like theirs, where collectives are
    /// reconstructed or clocks repaired); set by the report, 1 until then.
    pub precision: f64,
}

/// The `root_causes` section of the reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RootCauseSection {
    pub metrics: Vec<MetricInfo>,
    /// Per wait-state metric, its 5 largest causes, largest first.
    pub causes: Vec<Cause>,
}

/// How many causes of each wait-state metric the section lists.
const CAUSES: usize = 5;

impl RootCauses {
    /// The section of the reports; `None` when nothing was computed (no MPI_Finalize and
    /// no OpenMP thread team).
    pub fn section(&self, trace: &Trace) -> Option<RootCauseSection> {
        if self.metrics.is_empty() || self.nloc == 0 {
            return None;
        }
        let nloc = self.nloc;
        let loc_id = |l: usize| trace.defs.locations.get(l).map_or(l as u64, |x| x.id);
        let mut waits: Vec<&str> = (self.metrics.iter())
            .filter_map(|(m, _)| m.cause_of.as_deref())
            .collect();
        waits.dedup();
        let mut causes = Vec::new();
        for w in waits {
            let of = |long: bool| {
                (self.metrics.iter())
                    .find(|(m, _)| {
                        m.cause_of.as_deref() == Some(w)
                            && matches!(
                                m.what,
                                RcWhat::Delay {
                                    term: Term::Long,
                                    ..
                                }
                            ) == long
                    })
                    .map(|(_, v)| v.as_slice())
            };
            let (Some(s), Some(l)) = (of(false), of(true)) else {
                continue;
            };
            let mut here: Vec<(usize, f64, f64)> = (0..s.len())
                .filter(|&k| s[k] + l[k] > 0.0)
                .map(|k| (k, s[k], l[k]))
                .collect();
            here.sort_by(|a, b| (b.1 + b.2).total_cmp(&(a.1 + a.2)).then(a.0.cmp(&b.0)));
            causes.extend(here.into_iter().take(CAUSES).map(|(k, a, b)| Cause {
                wait_state: w.to_string(),
                callpath: (k / nloc) as u32,
                location: loc_id(k % nloc),
                short_s: a,
                long_s: b,
                precision: 1.0,
            }));
        }
        Some(RootCauseSection {
            metrics: self.metrics.iter().map(|(m, _)| m.clone()).collect(),
            causes,
        })
    }
}
