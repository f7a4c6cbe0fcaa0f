//! The wait-state findings of both runs joined by (metric, call path): which appeared (in B
//! only), vanished (in A only), moved (a metric found at call paths of A only and of B only:
//! paired, largest first) and which stayed, with their severities.

use super::alphabet::RunFinding;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FindingChanges {
    pub appeared: Vec<RunFinding>,
    pub vanished: Vec<RunFinding>,
    pub moved: Vec<Moved>,
    pub stayed: Vec<Stayed>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Moved {
    pub metric: String,
    pub from_callpath: String,
    pub to_callpath: String,
    pub a_severity: f64,
    pub b_severity: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stayed {
    pub metric: String,
    pub callpath: String,
    pub a_severity: f64,
    pub b_severity: f64,
}

pub fn join(a: &[RunFinding], b: &[RunFinding]) -> FindingChanges {
    let key = |f: &RunFinding| (f.metric.clone(), f.callpath.clone());
    let ma: BTreeMap<_, f64> = a.iter().map(|f| (key(f), f.severity)).collect();
    let mb: BTreeMap<_, f64> = b.iter().map(|f| (key(f), f.severity)).collect();
    let mut out = FindingChanges::default();
    // per metric, the call paths found in one run only
    let mut only_a: BTreeMap<String, Vec<RunFinding>> = BTreeMap::new();
    let mut only_b: BTreeMap<String, Vec<RunFinding>> = BTreeMap::new();
    for ((m, c), &s) in &ma {
        match mb.get(&(m.clone(), c.clone())) {
            Some(&t) => out.stayed.push(Stayed {
                metric: m.clone(),
                callpath: c.clone(),
                a_severity: s,
                b_severity: t,
            }),
            None => only_a.entry(m.clone()).or_default().push(RunFinding {
                metric: m.clone(),
                callpath: c.clone(),
                severity: s,
            }),
        }
    }
    for ((m, c), &s) in &mb {
        if !ma.contains_key(&(m.clone(), c.clone())) {
            only_b.entry(m.clone()).or_default().push(RunFinding {
                metric: m.clone(),
                callpath: c.clone(),
                severity: s,
            });
        }
    }
    let by_severity = |v: &mut Vec<RunFinding>| v.sort_by(|x, y| y.severity.total_cmp(&x.severity));
    for (m, mut va) in only_a {
        let mut vb = only_b.remove(&m).unwrap_or_default();
        by_severity(&mut va);
        by_severity(&mut vb);
        let k = va.len().min(vb.len());
        for (x, y) in va.iter().zip(&vb).take(k) {
            out.moved.push(Moved {
                metric: m.clone(),
                from_callpath: x.callpath.clone(),
                to_callpath: y.callpath.clone(),
                a_severity: x.severity,
                b_severity: y.severity,
            });
        }
        out.vanished.extend(va.into_iter().skip(k));
        out.appeared.extend(vb.into_iter().skip(k));
    }
    for (_, vb) in only_b {
        out.appeared.extend(vb);
    }
    by_severity(&mut out.appeared);
    by_severity(&mut out.vanished);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(m: &str, c: &str, s: f64) -> RunFinding {
        RunFinding {
            metric: m.into(),
            callpath: c.into(),
            severity: s,
        }
    }

    #[test]
    fn appeared_vanished_moved_stayed() {
        let a = [
            f("ls", "main/MPI_Recv", 1.0),
            f("wb", "main/MPI_Barrier", 2.0),
        ];
        let b = [
            f("ls", "main/foo/MPI_Recv", 1.5),
            f("wb", "main/MPI_Barrier", 0.5),
            f("lr", "main/MPI_Send", 0.1),
        ];
        let j = join(&a, &b);
        assert_eq!(j.stayed.len(), 1);
        assert_eq!(j.moved.len(), 1);
        assert_eq!(j.moved[0].to_callpath, "main/foo/MPI_Recv");
        assert_eq!(j.appeared, vec![f("lr", "main/MPI_Send", 0.1)]);
        assert!(j.vanished.is_empty());
    }
}
