//! Agreement of the root-cause and critical-path metrics with Scalasca 2.6 (issue 27): the
//! reference is `scout_dump.csv` (scout's own report, every metric × call path × rank ×
//! thread, zeros included; its metric tree is the one perfexpert writes for these metrics:
//! each a root, `inter_partition_imbalance` below `critical_imbalance_impact`).
//! `trace_dump.csv` (after Cube's remapping) holds the same values for these metrics and is
//! not used. Values are compared metric-exclusive (the `value` column) within 1 µs or 0.01 %.
//!
//! Each metric of the issue is listed with its agreement; the critical-path family must
//! agree everywhere on the MPI traces; the delay and propagation metrics are not computed
//! yet (docs/root-causes.md) and are counted, not asserted.

mod common;

use perfexpert::analysis::rootcause::{root_causes, RootCauses};
use perfexpert::replay::Replay;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Every metric of the issue, in Scalasca's order.
const METRICS: &[&str] = &[
    "critical_path",
    "critical_path_activities",
    "critical_imbalance_impact",
    "inter_partition_imbalance",
    "non_critical_path_activities",
    "delay_latesender",
    "delay_latesender_longterm",
    "delay_latereceiver",
    "delay_latereceiver_longterm",
    "delay_barrier",
    "delay_barrier_longterm",
    "delay_n2n",
    "delay_n2n_longterm",
    "delay_12n",
    "delay_12n_longterm",
    "delay_n21",
    "delay_n21_longterm",
    "delay_ompbarrier",
    "delay_ompbarrier_longterm",
    "delay_ompidle",
    "delay_ompidle_longterm",
    "mpi_wait_indirect_latesender",
    "mpi_wait_indirect_latereceiver",
    "mpi_wait_propagating_ls",
    "mpi_wait_propagating_lr",
];

struct Row {
    metric: String,
    path: String,
    rank: u32,
    thread: u32,
    value: f64,
}

fn rows(file: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(file).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| METRICS.contains(&f[0]))
        .map(|f| Row {
            metric: f[0].to_string(),
            path: f[1].to_string(),
            rank: f[3].parse().unwrap(),
            thread: f[4].parse().unwrap(),
            value: f[5].parse().unwrap(),
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 || (a - b).abs() <= 1e-4 * b.abs().max(a.abs())
}

/// (agreeing, total) per metric, and the disagreements, of one trace.
type Tally = BTreeMap<&'static str, (usize, usize, usize)>;

fn compare(dir: &Path, tally: &mut Tally, bad: &mut Vec<String>) {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let trace = perfexpert::open(&dir.join("traces.otf2")).unwrap();
    let replay = Replay::new(&trace);
    let rc: RootCauses = root_causes(&trace, &replay);
    let by_path: HashMap<String, u32> = (0..replay.tree.len() as u32)
        .map(|c| (replay.path_name(&trace, c), c))
        .collect();
    let d = &trace.defs;
    let rank_of_group: HashMap<Option<usize>, u32> = d
        .locations
        .iter()
        .filter_map(|l| l.rank.map(|r| (l.group, r)))
        .collect();
    let loc_of: HashMap<(u32, u32), usize> = d
        .locations
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let rank = l
                .rank
                .or_else(|| rank_of_group.get(&l.group).copied())
                .unwrap_or(0);
            ((rank, replay.omp.thread[i]), i)
        })
        .collect();
    for r in rows(&dir.join("scout_dump.csv")) {
        let m = METRICS.iter().copied().find(|m| *m == r.metric).unwrap();
        let e = tally.entry(m).or_default();
        e.1 += 1;
        if r.value != 0.0 {
            e.2 += 1;
        }
        let (Some(&c), Some(&l)) = (by_path.get(&r.path), loc_of.get(&(r.rank, r.thread))) else {
            bad.push(format!(
                "{name}: {m}: no call path {} or rank {}",
                r.path, r.rank
            ));
            continue;
        };
        let ours = rc.values(m).map(|v| v[c as usize * rc.nloc + l]);
        match ours {
            Some(v) if close(v, r.value) => e.0 += 1,
            Some(v) => bad.push(format!(
                "{name}: {m} {} rank {} thread {}: ours {v}, Scalasca {}",
                r.path, r.rank, r.thread, r.value
            )),
            None => {}
        }
    }
}

fn dirs() -> Option<Vec<PathBuf>> {
    let shared = common::shared()?;
    let mut out = Vec::new();
    for sub in ["traces/scorep", "traces/scorep-omp"] {
        let mut ds: Vec<PathBuf> = std::fs::read_dir(shared.join(sub))
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("scout_dump.csv").exists())
            .collect();
        ds.sort();
        out.extend(ds);
    }
    Some(out)
}

#[test]
fn critical_path_metrics_agree_with_scalasca() {
    let Some(dirs) = dirs() else {
        eprintln!("SKIPPED: ../shared (the Score-P traces and scout_dump.csv) is absent");
        return;
    };
    assert_eq!(dirs.len(), 17, "12 Score-P MPI traces and 5 OpenMP ones");
    let mut mpi = Tally::new();
    let mut omp = Tally::new();
    let mut bad_mpi = Vec::new();
    let mut bad_omp = Vec::new();
    for d in &dirs {
        if d.parent().is_some_and(|p| p.ends_with("scorep-omp")) {
            compare(d, &mut omp, &mut bad_omp);
        } else {
            compare(d, &mut mpi, &mut bad_mpi);
        }
    }
    eprintln!(
        "{:<32} {:>14} {:>8} {:>14} {:>8}",
        "metric", "MPI agree/all", "non-zero", "OMP agree/all", "non-zero"
    );
    for m in METRICS {
        let (a, n, nz) = mpi.get(m).copied().unwrap_or_default();
        let (b, k, kz) = omp.get(m).copied().unwrap_or_default();
        eprintln!(
            "{m:<32} {:>14} {nz:>8} {:>14} {kz:>8}",
            format!("{a}/{n}"),
            format!("{b}/{k}")
        );
    }
    eprintln!(
        "OpenMP/hybrid disagreements (not asserted):\n{}",
        bad_omp.join("\n")
    );
    assert!(
        bad_mpi.is_empty(),
        "{} disagreements:\n{}",
        bad_mpi.len(),
        bad_mpi.join("\n")
    );
}
