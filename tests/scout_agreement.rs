//! Agreement with Scalasca 2.6 (patterns.md): beside each Score-P trace in testdata/scorep,
//! `scout_dump.csv` holds every stored metric × call path × rank value of scout's report (zeros
//! included) and `trace_dump.csv` the non-zero values of the full metric hierarchy after
//! Scalasca's post-processing (class time, sums, computation). Every metric perfexpert shares
//! with them must agree within 1 µs or 0.01 % (counts exactly), per call path and rank; the
//! metrics Scalasca has and perfexpert deliberately does not (delay, critical path, RMA, ...,
//! patterns.md §1.2 "Scope notes") are skipped by id.

mod common;

use perfexpert::analysis::{analyse, Analysis};
use perfexpert::replay::Replay;
use perfexpert::rules::RuleSet;
use std::collections::{HashMap, HashSet};
use std::path::Path;

struct Row {
    metric: String,
    path: String,
    rank: u32,
    /// The OpenMP thread number (Cube's location rank inside its process; 0 without threads).
    thread: u32,
    value: f64,
}

fn rows(file: &Path) -> Vec<Row> {
    let Ok(text) = std::fs::read_to_string(file) else {
        return Vec::new();
    };
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Row {
                metric: f[0].to_string(),
                path: f[1].to_string(),
                rank: f[3].parse().unwrap(),
                thread: f[4].parse().unwrap(),
                value: f[6].parse().unwrap(),
            }
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 || (a - b).abs() <= 1e-4 * b.abs().max(a.abs())
}

/// A deliberate difference: given a row, the reason (with its spec section) for not
/// comparing it, if it is one.
type Deliberate<'a> = &'a dyn Fn(&str, &str, u32, u32) -> Option<&'static str>;

/// Compare one trace; returns (values checked, disagreements).
fn compare(dir: &Path, trace_dump: Option<&Path>) -> (usize, Vec<String>) {
    compare_with(dir, trace_dump, &|_, _, _, _| None, false).0
}

/// Compare one trace, skipping the deliberate differences; `time_from_trace_dump`: the
/// `time` of scout_dump.csv is scout's raw time, before Cube's remapper adds the idle time
/// of worker threads (patterns.md §3.5), so `time` is compared with trace_dump.csv only.
/// Returns (values checked, disagreements) and the deliberate differences met.
fn compare_with(
    dir: &Path,
    trace_dump: Option<&Path>,
    deliberate: Deliberate,
    time_from_trace_dump: bool,
) -> ((usize, Vec<String>), Vec<String>) {
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    let trace = perfexpert::open(&dir.join("traces.otf2")).unwrap();
    let replay = Replay::new(&trace);
    let a: Analysis = analyse(&trace, &replay, RuleSet::load(&[]).unwrap());
    let ours: HashMap<&str, usize> = a
        .order
        .iter()
        .map(|&k| (a.rules.rules[k].info.id.as_str(), k))
        .collect();
    let by_path: HashMap<String, u32> = (0..replay.tree.len() as u32)
        .map(|c| (replay.path_name(&trace, c), c))
        .collect();
    // (MPI rank of the process, thread number) → location: a process's rank is the rank of
    // its master; pure OpenMP traces have one process, rank 0 (as in Cube)
    let d = &trace.defs;
    let rank_of_group: HashMap<Option<usize>, u32> = d
        .locations
        .iter()
        .filter_map(|l| l.rank.map(|r| (l.group, r)))
        .collect();
    let loc_of: HashMap<(u32, u32), u32> = d
        .locations
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let rank = l
                .rank
                .or_else(|| rank_of_group.get(&l.group).copied())
                .unwrap_or(0);
            ((rank, replay.omp.thread[i]), i as u32)
        })
        .collect();
    let mut bad = Vec::new();
    let mut skipped = Vec::new();
    let mut checked = 0;
    let mut seen: HashSet<(usize, u32, u32)> = HashSet::new();
    let mut check = |rows: Vec<Row>, complete: bool, bad: &mut Vec<String>| {
        for r in rows {
            let Some(&k) = ours.get(r.metric.as_str()) else {
                continue;
            };
            if complete && time_from_trace_dump && r.metric == "time" {
                continue;
            }
            if let Some(why) = deliberate(&r.metric, &r.path, r.rank, r.thread) {
                if r.value != 0.0 {
                    skipped.push(format!(
                        "{name}: {} {} rank {} thread {}: {why}",
                        r.metric, r.path, r.rank, r.thread
                    ));
                }
                if let (Some(&c), Some(&l)) =
                    (by_path.get(&r.path), loc_of.get(&(r.rank, r.thread)))
                {
                    seen.insert((k, c, l));
                }
                continue;
            }
            let Some(&c) = by_path.get(&r.path) else {
                if r.value != 0.0 {
                    bad.push(format!("{name}: {} has no call path {}", r.metric, r.path));
                }
                continue;
            };
            let Some(&l) = loc_of.get(&(r.rank, r.thread)) else {
                bad.push(format!(
                    "{name}: no location for rank {} thread {}",
                    r.rank, r.thread
                ));
                continue;
            };
            let v = a.value(k, c, l);
            if !close(v, r.value) {
                bad.push(format!(
                    "{name}: {} {} rank {} thread {}: ours {v}, Scalasca {}",
                    r.metric, r.path, r.rank, r.thread, r.value
                ));
            }
            seen.insert((k, c, l));
            checked += 1;
        }
        let _ = complete;
    };
    check(rows(&dir.join("scout_dump.csv")), true, &mut bad);
    if let Some(td) = trace_dump {
        check(rows(td), false, &mut bad);
    }
    // what we report that Scalasca does not (non-zero values of shared metrics)
    let scout_ids: HashSet<String> = rows(&dir.join("scout_dump.csv"))
        .into_iter()
        .map(|r| r.metric)
        .chain(
            trace_dump
                .map_or(Vec::new(), rows)
                .into_iter()
                .map(|r| r.metric),
        )
        .collect();
    for (&id, &k) in &ours {
        if !scout_ids.contains(id) {
            continue;
        }
        for c in 0..replay.tree.len() as u32 {
            for l in 0..trace.events.len() as u32 {
                let v = a.value(k, c, l);
                if v != 0.0 && !seen.contains(&(k, c, l)) && trace_dump.is_some() {
                    bad.push(format!(
                        "{name}: {id} {} loc {l}: ours {v}, Scalasca has no value",
                        replay.path_name(&trace, c)
                    ));
                }
            }
        }
    }
    ((checked, bad), skipped)
}

/// scout.log says "N clock condition violations detected: Point-to-point: P Collective: C"
/// when there are any (patterns.md §7.1); we count the same.
#[test]
fn clock_condition_violations_agree_with_scout() {
    let root = common::testdata("scorep");
    let mut checked = 0;
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let Ok(log) = std::fs::read_to_string(e.path().join("scout.log")) else {
            continue;
        };
        let count = |label: &str| -> u64 {
            log.lines()
                .find(|l| l.trim_start().starts_with(label))
                .and_then(|l| l.rsplit(':').next())
                .map_or(0, |n| n.trim().parse().unwrap())
        };
        let trace = perfexpert::open(&e.path().join("traces.otf2")).unwrap();
        let replay = Replay::new(&trace);
        let a = analyse(&trace, &replay, RuleSet::load(&[]).unwrap());
        assert_eq!(
            (a.violations.p2p, a.violations.collective),
            (count("Point-to-point"), count("Collective")),
            "{}",
            e.path().display()
        );
        checked += 1;
    }
    assert!(checked >= 11, "scout.log beside {checked} traces");
}

#[test]
fn every_shared_metric_agrees_with_scalasca() {
    let root = common::testdata("scorep");
    let shared = common::shared();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("scout_dump.csv").exists())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 11,
        "expected the Score-P traces in testdata/scorep"
    );
    let mut total = 0;
    let mut bad = Vec::new();
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let td = shared
            .as_ref()
            .map(|s| s.join("traces/scorep").join(&name).join("trace_dump.csv"));
        let (n, b) = compare(dir, td.as_deref());
        total += n;
        bad.extend(b);
    }
    // NPB LU class W (378 k events) stays in ../shared; read it in place
    if let Some(s) = &shared {
        let w = s.join("traces/scorep/npb_lu_W");
        let (n, b) = compare(&w, Some(&w.join("trace_dump.csv")));
        total += n;
        bad.extend(b);
    }
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!("{total} metric values agree with Scalasca");
}

/// The differences from Scalasca on the OpenMP and hybrid traces that are deliberate.
fn omp_deliberate(metric: &str, path: &str, rank: u32, thread: u32) -> Option<&'static str> {
    // patterns.md §3.5.2: Cube's remapper walks the call paths in Scalasca's id order; the
    // MPI_Recv inside `omp master`, entered only on rank 1, got an id after main/MPI_Finalize
    // and is taken for serial code, so the master's 0.2 s there becomes idle time (and time)
    // of rank 1's thread 1, which was in fact waiting in the implicit barrier. perfexpert
    // walks the tree in pre-order: no idle time there.
    if matches!(metric, "omp_idle_threads" | "time")
        && path.ends_with("/!$omp master @app.c:22/MPI_Recv")
        && (rank, thread) == (1, 1)
    {
        return Some("§3.5.2: Cube remapper's id-order walk (artefact)");
    }
    None
}

/// Every scout_dump.csv (and trace_dump.csv, for time, idle threads and the derived metrics)
/// of the OpenMP and hybrid traces in testdata/scorep-omp, per metric, call path, rank and
/// thread.
#[test]
fn every_shared_metric_agrees_with_scalasca_on_openmp_traces() {
    let root = common::testdata("scorep-omp");
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("scout_dump.csv").exists())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 5, "the OpenMP traces in testdata/scorep-omp");
    let mut total = 0;
    let mut bad = Vec::new();
    let mut skipped = Vec::new();
    for dir in &dirs {
        let td = dir.join("trace_dump.csv");
        let ((n, b), s) = compare_with(dir, Some(&td), &omp_deliberate, true);
        total += n;
        bad.extend(b);
        skipped.extend(s);
    }
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad.join("\n")
    );
    // the artefact is there in the reference (and only there): if it vanished, the
    // exception above would hide nothing and should go
    assert_eq!(skipped.len(), 2, "{skipped:#?}");
    eprintln!(
        "{total} metric values agree with Scalasca; deliberate differences:\n{}",
        skipped.join("\n")
    );
}
