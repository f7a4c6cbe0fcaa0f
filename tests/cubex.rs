//! Cube4 `.cubex` reports (patterns.md §8): the byte layout, a read-back with pycubexr of the
//! report of every trace in testdata/ (every value equal to the JSON report's), a side-by-side
//! check against Scalasca's `scout.cubex` of the same traces (metric ids, call-path tree,
//! system tree), bad requests, `perfexpert diff`, and the README's pandas example.

mod common;

use common::perfexpert;

use perfexpert::report::cubex::Cube;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// `perfexpert run TRACE --format text,json,cubex -o DIR`; returns DIR.
fn reports(trace: &Path, dir: &Path) -> PathBuf {
    let (code, _, err) = perfexpert(&[
        "run",
        "-q",
        "--format",
        "text,json,cubex",
        "-o",
        dir.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{}: {err}", trace.display());
    for f in ["report.txt", "report.json", "report.cubex"] {
        assert!(dir.join(f).is_file(), "{} missing", f);
    }
    dir.to_path_buf()
}

/// The members of a tar archive, checking every header as §8.1 demands.
fn tar_members(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let h = &bytes[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            // two zero blocks, then nothing
            assert!(bytes[at..].iter().all(|&b| b == 0));
            assert_eq!(
                bytes.len() - at,
                1024,
                "the archive ends with two zero blocks"
            );
            break;
        }
        let name = String::from_utf8(h[..100].split(|&b| b == 0).next().unwrap().to_vec()).unwrap();
        assert_eq!(&h[257..263], b"ustar\0", "{name}: ustar magic");
        assert_eq!(&h[100..108], b"0000644\0", "{name}: mode");
        assert_eq!(&h[108..116], b"0000000\0", "{name}: uid");
        assert_eq!(&h[116..124], b"0000000\0", "{name}: gid");
        assert_eq!(h[156], b'0', "{name}: a regular file");
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    b as u32
                }
            })
            .sum();
        let stored = std::str::from_utf8(&h[148..154]).unwrap();
        assert_eq!(
            u32::from_str_radix(stored, 8).unwrap(),
            sum,
            "{name}: checksum"
        );
        let size = usize::from_str_radix(std::str::from_utf8(&h[124..135]).unwrap(), 8).unwrap();
        out.push((name, bytes[at + 512..at + 512 + size].to_vec()));
        at += 512 + size.div_ceil(512) * 512;
    }
    out
}

fn u32le(b: &[u8]) -> u32 {
    u32::from_le_bytes(b.try_into().unwrap())
}

/// The byte layout of §8.1 and §8.7, and every value against the JSON report (read with our
/// own reader; pycubexr checks the same independently below).
fn check_layout_and_values(dir: &Path) {
    let bytes = std::fs::read(dir.join("report.cubex")).unwrap();
    let members = tar_members(&bytes);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("report.json")).unwrap()).unwrap();
    let nmetrics = json["metrics"].as_array().unwrap().len();
    let ncnodes = json["callpaths"].as_array().unwrap().len();
    let nloc = json["locations"].as_array().unwrap().len();
    let mut want_names = vec!["anchor.xml".to_string()];
    for k in 0..nmetrics {
        want_names.push(format!("{k}.index"));
        want_names.push(format!("{k}.data"));
    }
    let names: Vec<&String> = members.iter().map(|(n, _)| n).collect();
    assert_eq!(names, want_names.iter().collect::<Vec<_>>(), "member order");
    assert!(members[0]
        .1
        .starts_with(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"));
    for k in 0..nmetrics {
        let index = &members[1 + 2 * k].1;
        let data = &members[2 + 2 * k].1;
        assert_eq!(&index[..11], b"CUBEX.INDEX");
        assert_eq!(u32le(&index[11..15]), 1, "endianness marker");
        assert_eq!(&index[15..17], &[0, 0], "version");
        assert_eq!(index[17], 1, "sparse index");
        let n = u32le(&index[18..22]) as usize;
        assert!(n >= 1, "metric {k}: at least one row");
        assert_eq!(index.len(), 22 + 4 * n);
        let rows: Vec<u32> = index[22..].chunks(4).map(u32le).collect();
        assert!(rows.windows(2).all(|w| w[0] < w[1]), "rows ascending");
        assert!(rows.iter().all(|&r| (r as usize) < ncnodes));
        assert_eq!(&data[..10], b"CUBEX.DATA");
        assert_eq!(data.len(), 10 + 8 * n * nloc, "metric {k}: data size");
    }

    // our reader gives back every value of the JSON report, bit for bit, and zeros elsewhere
    let cube = Cube::read(&dir.join("report.cubex")).unwrap();
    let ids: Vec<&str> = cube.metrics.iter().map(|m| m.id.as_str()).collect();
    let json_ids: Vec<&str> = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, json_ids);
    // JSON location id → Cube column, by (process rank, thread)
    let column: HashMap<u64, usize> = {
        let mut by: Vec<(bool, u64, u64, u64)> = Vec::new();
        let mut proc_rank: HashMap<String, Option<u64>> = HashMap::new();
        for l in json["locations"].as_array().unwrap() {
            let p = l["process"].as_str().unwrap_or("").to_string();
            let r = l["rank"].as_u64();
            let e = proc_rank.entry(p).or_insert(r);
            *e = match (*e, r) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        for l in json["locations"].as_array().unwrap() {
            let r = proc_rank[l["process"].as_str().unwrap_or("")];
            by.push((
                r.is_none(),
                r.unwrap_or(0),
                l["thread"].as_u64().unwrap(),
                l["id"].as_u64().unwrap(),
            ));
        }
        by.sort();
        by.iter().enumerate().map(|(c, x)| (x.3, c)).collect()
    };
    let mut want: HashMap<(usize, usize, usize), f64> = HashMap::new();
    for v in json["values"].as_array().unwrap() {
        let m = ids.iter().position(|&i| i == v["metric"]).unwrap();
        let c = v["callpath"].as_u64().unwrap() as usize;
        let l = column[&v["location"].as_u64().unwrap()];
        want.insert((m, c, l), v["value"].as_f64().unwrap());
    }
    for (m, id) in ids.iter().enumerate() {
        for c in 0..ncnodes {
            for l in 0..nloc {
                let w = want.get(&(m, c, l)).copied().unwrap_or(0.0);
                assert_eq!(
                    cube.value(m, c, l).to_bits(),
                    w.to_bits(),
                    "{id} at cnode {c} column {l}"
                );
            }
        }
    }
    for (c, p) in json["callpaths"].as_array().unwrap().iter().enumerate() {
        assert_eq!(
            cube.cnodes[c].parent,
            p["parent"].as_u64().map(|x| x as usize)
        );
        assert_eq!(
            cube.regions[cube.cnodes[c].callee].name,
            p["region"].as_str().unwrap()
        );
    }
}

#[test]
fn every_shipped_trace_reads_back_with_pycubexr_equal_to_the_json_report() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = Vec::new();
    for (name, trace) in common::shipped_traces() {
        let dir = reports(&trace, &tmp.path().join(&name));
        check_layout_and_values(&dir);
        args.push(dir.join("report.cubex"));
        args.push(dir.join("report.json"));
    }
    assert!(args.len() >= 2 * 16, "the shipped traces are all there");
    let Some(py) = common::venv_python("the pycubexr read-back of the .cubex reports") else {
        return;
    };
    let o = std::process::Command::new(py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cubex_roundtrip.py"))
        .args(&args)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    eprintln!("{out}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(out.lines().count(), args.len() / 2, "one line per report");
}

/// Metrics that Scalasca's scout.cubex carries and perfexpert leaves out of scope
/// (patterns.md §1.2 "Scope notes").
fn out_of_scope(id: &str) -> bool {
    [
        "mpi_rma_",
        "critical_",
        "non_critical_",
        "delay_",
        "mpi_wait_",
        "inter_partition_",
        "bytes_put",
        "bytes_get",
        "pthread_",
    ]
    .iter()
    .any(|p| id.starts_with(p))
}

/// The system tree as (depth, class, name) of nodes, then each process (rank, type, name)
/// with its locations (thread number, type, name), in document order.
fn system_shape(c: &Cube) -> Vec<String> {
    let depth = |mut i: usize| {
        let mut d = 0;
        while let Some(p) = c.system[i].parent {
            i = p;
            d += 1;
        }
        d
    };
    let mut out = Vec::new();
    for (i, n) in c.system.iter().enumerate() {
        out.push(format!("{} {} {}", depth(i), n.class, n.name));
        for (g, grp) in c.groups.iter().enumerate().filter(|(_, g)| g.node == i) {
            out.push(format!("  process {} {} {}", grp.rank, grp.kind, grp.name));
            for l in c.locations.iter().filter(|l| l.group == g) {
                out.push(format!("    location {} {} {}", l.rank, l.kind, l.name));
            }
        }
    }
    out
}

fn call_paths(c: &Cube) -> BTreeSet<String> {
    (0..c.cnodes.len()).map(|k| c.path(k)).collect()
}

#[test]
fn our_cubex_has_scalascas_metric_ids_call_tree_and_system_tree() {
    let Some(shared) = common::shared() else {
        return;
    };
    // Scalasca's full metric hierarchy (trace.cubex after `square`): id → parent
    let tsv = std::fs::read_to_string(shared.join("traces/scorep/trace_metrics.tsv")).unwrap();
    let hierarchy: HashMap<String, String> = tsv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0].to_string(), f[1].to_string())
        })
        .collect();
    let tmp = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for (name, trace) in common::shipped_traces() {
        let case = trace.parent().unwrap().file_name().unwrap();
        let scout_path = shared.join("traces/scorep").join(case).join("scout.cubex");
        if !name.starts_with("scorep_") || !scout_path.exists() {
            continue;
        }
        let dir = reports(&trace, &tmp.path().join(&name));
        let ours = Cube::read(&dir.join("report.cubex")).unwrap();
        let scout = Cube::read(&scout_path).unwrap();

        // metric ids: every in-scope metric of scout.cubex is ours, and ours sit where
        // Scalasca's hierarchy puts them
        let our_ids: BTreeSet<&str> = ours.metrics.iter().map(|m| m.id.as_str()).collect();
        for m in &scout.metrics {
            if !out_of_scope(&m.id) {
                assert!(our_ids.contains(m.id.as_str()), "{name}: {} missing", m.id);
                let o = ours.metrics.iter().find(|x| x.id == m.id).unwrap();
                assert_eq!(o.unit, m.unit, "{name}: unit of {}", m.id);
            }
        }
        for m in &ours.metrics {
            let parent = m.parent.map_or("-", |p| ours.metrics[p].id.as_str());
            assert_eq!(
                hierarchy.get(&m.id).map(String::as_str),
                Some(parent),
                "{name}: parent of {}",
                m.id
            );
        }
        // the same call-path tree (by region names: Scalasca numbers call paths differently,
        // patterns.md §3.1.5)
        assert_eq!(call_paths(&ours), call_paths(&scout), "{name}: call paths");
        // the same system tree, names included
        assert_eq!(
            system_shape(&ours),
            system_shape(&scout),
            "{name}: system tree"
        );
        // and, per metric of both and call path, the same totals
        let ds = perfexpert::report::diff::diff(
            &scout_path,
            &perfexpert::report::diff::Summary::from_cube(&scout),
            &dir,
            &perfexpert::report::diff::Summary::from_cube(&ours),
        );
        assert!(
            ds.changes.is_empty(),
            "{name}: differs from scout.cubex: {:?}",
            &ds.changes[..ds.changes.len().min(5)]
        );
        // Scalasca's full report (trace.cubex, after `square`) also has the class-time
        // metrics (execution, mpi, comp, ...): it has every metric of ours, with the same
        // totals per call path
        let full_path = shared.join("traces/scorep").join(case).join("trace.cubex");
        let full = Cube::read(&full_path).unwrap();
        let dt = perfexpert::report::diff::diff(
            &full_path,
            &perfexpert::report::diff::Summary::from_cube(&full),
            &dir,
            &perfexpert::report::diff::Summary::from_cube(&ours),
        );
        assert_eq!(
            dt.only_in_b,
            Vec::<String>::new(),
            "{name}: not in trace.cubex"
        );
        assert!(
            dt.changes.is_empty(),
            "{name}: differs from trace.cubex: {:?}",
            &dt.changes[..dt.changes.len().min(5)]
        );
        compared += 1;
    }
    assert!(
        compared >= 11,
        "compared {compared} traces with scout.cubex"
    );
}

#[test]
fn openmp_and_hybrid_traces_get_machine_node_process_thread() {
    let Some(shared) = common::shared() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut seen = 0;
    for e in std::fs::read_dir(shared.join("traces/scorep-omp"))
        .unwrap()
        .flatten()
    {
        let trace = e.path().join("traces.otf2");
        let scout_path = e.path().join("scout.cubex");
        if !trace.exists() || !scout_path.exists() {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let dir = reports(&trace, &tmp.path().join(&name));
        check_layout_and_values(&dir);
        let ours = Cube::read(&dir.join("report.cubex")).unwrap();
        let scout = Cube::read(&scout_path).unwrap();
        assert_eq!(
            system_shape(&ours),
            system_shape(&scout),
            "{name}: system tree"
        );
        // worker threads' call paths hang below the master's parallel region (patterns.md
        // §3.1.3), so the call-path tree is Scalasca's too
        assert_eq!(call_paths(&ours), call_paths(&scout), "{name}: call paths");
        let our_ids: BTreeSet<&str> = ours.metrics.iter().map(|m| m.id.as_str()).collect();
        for m in scout.metrics.iter().filter(|m| !out_of_scope(&m.id)) {
            assert!(our_ids.contains(m.id.as_str()), "{name}: {} missing", m.id);
        }
        let threads: BTreeMap<usize, usize> =
            ours.locations.iter().fold(BTreeMap::new(), |mut m, l| {
                *m.entry(l.group).or_default() += 1;
                m
            });
        assert!(
            threads.values().all(|&n| n >= 2),
            "{name}: several threads per process"
        );
        seen += 1;
    }
    if seen == 0 {
        eprintln!("SKIPPED: no OpenMP traces with scout.cubex in ../shared/traces/scorep-omp");
    }
}

const LS: &str = "testdata/scorep/ls/traces.otf2";

#[test]
fn bad_requests_exit_2_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    // unknown format
    let (code, _, err) = perfexpert(&["run", "--format", "cube", LS]);
    assert_eq!(code, 2);
    assert!(err.contains("cube") && err.contains("cubex"), "{err}");
    // a binary archive needs a file name
    let (code, out, err) = perfexpert(&["run", "--format", "cubex", LS]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("-o"), "{err}");
    // unwritable path: names the file, leaves nothing behind
    let bad = tmp.path().join("no/such/dir/report.cubex");
    let (code, _, err) = perfexpert(&["run", "--format", "cubex", "-o", bad.to_str().unwrap(), LS]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("report.cubex"), "{err}");
    assert!(!bad.exists());
    // several formats, but -o names an existing file rather than a directory
    let file = tmp.path().join("a_file");
    std::fs::write(&file, "x").unwrap();
    let (code, _, err) = perfexpert(&[
        "run",
        "--format",
        "json,cubex",
        "-o",
        file.to_str().unwrap(),
        LS,
    ]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("a_file"), "{err}");
    // a malformed SOURCE_DATE_EPOCH (reproducible-builds.org: exit non-zero) is refused before
    // the trace is read, and nothing is written; without a Cube archive it is not read at all
    let out = tmp.path().join("r.cubex");
    let epoch = |args: &[&str]| {
        let o = common::bin()
            .args(args)
            .env("SOURCE_DATE_EPOCH", "17e8")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (o.status.code(), err)
    };
    let (code, err) = epoch(&["run", "--format", "cubex", "-o", out.to_str().unwrap(), LS]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("SOURCE_DATE_EPOCH") && err.contains("17e8"),
        "{err}"
    );
    assert!(!out.exists());
    assert_eq!(epoch(&["run", "-q", LS]).0, Some(0));
}

#[test]
fn several_formats_in_one_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = reports(Path::new(LS), &tmp.path().join("out"));
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(text.contains("MPI Late Sender"), "{text}");
    // a single cubex to a file name
    let one = tmp.path().join("one.cubex");
    let (code, out, _) = perfexpert(&[
        "run",
        "-q",
        "--format",
        "cubex",
        "-o",
        one.to_str().unwrap(),
        LS,
    ]);
    assert_eq!(code, 0);
    assert!(out.is_empty());
    let a = Cube::read(&one).unwrap();
    let b = Cube::read(&dir.join("report.cubex")).unwrap();
    assert_eq!(a, b, "the same report whichever way it is asked for");
}

// ---------------------------------------------------------------------------------------
// perfexpert diff

fn json_reports(tmp: &Path, case: &str) -> PathBuf {
    let trace = format!("testdata/scorep/{case}/traces.otf2");
    reports(Path::new(&trace), &tmp.join(case))
}

#[test]
fn diff_ranks_changes_by_absolute_change() {
    let tmp = tempfile::tempdir().unwrap();
    let ls = json_reports(tmp.path(), "ls");
    let wo = json_reports(tmp.path(), "wo");
    let a = ls.join("report.json");
    let b = wo.join("report.json");
    let (code, out, err) = perfexpert(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let changes = d["changes"].as_array().unwrap();
    assert!(!changes.is_empty());
    // grouped by unit (sec, occ, bytes), each group by decreasing |change|
    let units: Vec<&str> = changes
        .iter()
        .map(|c| c["unit"].as_str().unwrap())
        .collect();
    let rank = |u: &str| {
        ["sec", "occ", "bytes"]
            .iter()
            .position(|x| *x == u)
            .unwrap()
    };
    assert!(units.windows(2).all(|w| rank(w[0]) <= rank(w[1])));
    for w in changes.windows(2) {
        if w[0]["unit"] == w[1]["unit"] {
            let x = w[0]["change"].as_f64().unwrap().abs();
            let y = w[1]["change"].as_f64().unwrap().abs();
            assert!(x >= y, "{w:?}");
        }
    }
    // the late sender of ls went away: its value at ls's call path is the whole change
    let ls_report: serde_json::Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    let paths: HashMap<u64, (Option<u64>, String)> = ls_report["callpaths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_u64().unwrap(),
                (
                    c["parent"].as_u64(),
                    c["region"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    let full = |mut c: u64| {
        let mut parts = Vec::new();
        loop {
            let (p, r) = &paths[&c];
            parts.push(r.clone());
            match p {
                Some(p) => c = *p,
                None => break,
            }
        }
        parts.reverse();
        parts.join("/")
    };
    let mut ls_total: BTreeMap<String, f64> = BTreeMap::new();
    for v in ls_report["values"].as_array().unwrap() {
        if v["metric"] == "mpi_latesender" {
            *ls_total
                .entry(full(v["callpath"].as_u64().unwrap()))
                .or_default() += v["value"].as_f64().unwrap();
        }
    }
    assert!(!ls_total.is_empty());
    for (path, total) in &ls_total {
        let c = changes
            .iter()
            .find(|c| c["metric"] == "mpi_latesender" && c["callpath"] == path.as_str())
            .unwrap_or_else(|| panic!("no change listed for mpi_latesender at {path}"));
        assert_eq!(c["a"].as_f64().unwrap(), *total);
        assert_eq!(c["b"].as_f64().unwrap(), 0.0);
        assert_eq!(c["change"].as_f64().unwrap(), -total);
    }
    // time at main/MPI_Barrier changed exactly as its sub-metric execution: implied, and the
    // text leaves it out; the barrier wait itself is listed
    let at_barrier = |m: &str| {
        changes
            .iter()
            .find(|c| c["metric"] == m && c["callpath"] == "main/MPI_Barrier")
            .unwrap_or_else(|| panic!("no change of {m} at main/MPI_Barrier"))
    };
    assert_eq!(at_barrier("time")["implied"], true);
    assert_eq!(at_barrier("mpi_barrier_wait")["implied"], false);
    let (code, text, _) = perfexpert(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(
        text.contains("Wait at Barrier (mpi_barrier_wait)"),
        "{text}"
    );
    assert!(!text.contains("Time (time)"), "{text}");
    assert!(text.contains("further changes equal a change of one of their sub-metrics"));
    // text: the three sections and the late sender line
    let (code, out, _) = perfexpert(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--top",
        "0",
        "--metric",
        "mpi_latesender",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("Late Sender (mpi_latesender)"), "{out}");
    assert!(out.contains("at main/late_sender_phase/MPI_Recv"), "{out}");
    assert!(!out.contains("(time)"), "--metric filters: {out}");
}

#[test]
fn diff_reads_cubex_and_json_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let ls = json_reports(tmp.path(), "ls");
    let nb = json_reports(tmp.path(), "nb");
    let run = |a: &Path, b: &Path| {
        let (code, out, err) = perfexpert(&[
            "diff",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["changes"].clone()
    };
    let by_json = run(&ls.join("report.json"), &nb.join("report.json"));
    let by_cubex = run(&ls.join("report.cubex"), &nb.join("report.cubex"));
    let mixed = run(&ls.join("report.json"), &nb.join("report.cubex"));
    assert!(!by_json.as_array().unwrap().is_empty());
    assert_eq!(by_json, by_cubex);
    assert_eq!(by_json, mixed);
    // a report against itself, in either form: nothing changed
    let same = run(&ls.join("report.json"), &ls.join("report.cubex"));
    assert_eq!(same, serde_json::json!([]));
    let (code, out, _) = perfexpert(&[
        "diff",
        ls.join("report.cubex").to_str().unwrap(),
        ls.join("report.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("no metric changed"), "{out}");
}

#[test]
fn diff_against_scalascas_cubex() {
    let Some(shared) = common::shared() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let ls = json_reports(tmp.path(), "ls");
    let scout = shared.join("traces/scorep/ls/scout.cubex");
    let (code, out, err) = perfexpert(&[
        "diff",
        scout.to_str().unwrap(),
        ls.join("report.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // the metrics both have agree; the others are named, not compared
    assert!(out.contains("no metric changed"), "{out}");
    assert!(
        out.contains("metrics only in A: ") && out.contains("delay_latesender"),
        "{out}"
    );
    assert!(
        out.contains("metrics only in B: ") && out.contains("mpi_point2point"),
        "{out}"
    );
}

#[test]
fn diff_bad_input_exits_2_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let ls = json_reports(tmp.path(), "ls");
    let good = ls.join("report.json");
    let cubex = std::fs::read(ls.join("report.cubex")).unwrap();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "garbage.bin",
            b"\x00\x01not a report".to_vec(),
            "expected a JSON report",
        ),
        ("other.json", br#"{"hello": 1}"#.to_vec(), "missing field"),
        (
            "broken.json",
            br#"{"format_version": 1, "metrics": ["#.to_vec(),
            ":1",
        ),
        (
            "short.cubex",
            cubex[..cubex.len() / 2].to_vec(),
            "unexpected end of data",
        ),
        // a broken anchor whose text carries a newline: still one line
        (
            "newline.cubex",
            {
                let i = cubex
                    .windows(12)
                    .position(|w| w == b"</uniq_name>")
                    .unwrap();
                let mut c = cubex.clone();
                c[i..i + 12].copy_from_slice(b"</uniq\nname>");
                c
            },
            "malformed XML",
        ),
        (
            "headless.cubex",
            {
                let mut c = cubex.clone();
                c[0..10].copy_from_slice(b"xnchor.xml");
                c
            },
            "checksum",
        ),
    ];
    for (name, bytes, what) in cases {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        for args in [
            [p.to_str().unwrap(), good.to_str().unwrap()],
            [good.to_str().unwrap(), p.to_str().unwrap()],
        ] {
            let (code, out, err) = perfexpert(&["diff", args[0], args[1]]);
            assert_eq!(code, 2, "{name}: {err}");
            assert!(out.is_empty(), "{name}: no partial output");
            assert_eq!(err.lines().count(), 1, "{name}: {err}");
            assert!(err.contains(name) && err.contains(what), "{name}: {err}");
        }
    }
    let (code, _, err) = perfexpert(&["diff", "no/such/report.json", good.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("no/such/report.json"), "{err}");
    let (code, _, err) = perfexpert(&[
        "diff",
        good.to_str().unwrap(),
        good.to_str().unwrap(),
        "--metric",
        "nope",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("nope"), "{err}");
}

// ---------------------------------------------------------------------------------------
// README

/// The README's pandas example, run as written on the JSON report of testdata/scorep/ls.
#[test]
fn readme_pandas_example_runs() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("```python\n")
        .expect("a python example in README.md")
        + 10;
    let code = &readme[start..start + readme[start..].find("```").unwrap()];
    assert_eq!(code.lines().count(), 5, "a five-line example:\n{code}");
    assert!(code.contains("report.json"));
    let tmp = tempfile::tempdir().unwrap();
    json_reports(tmp.path(), "ls");
    let dir = tmp.path().join("ls");
    let Some(py) = common::venv_python("the README's pandas example") else {
        return;
    };
    let o = std::process::Command::new(py)
        .current_dir(&dir)
        .args(["-c", code])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // it prints the late sender per region: ls waits in MPI_Recv
    let line = out
        .lines()
        .find(|l| l.starts_with("MPI_Recv"))
        .unwrap_or_else(|| panic!("no MPI_Recv line: {out}"));
    let v: f64 = line.split_whitespace().last().unwrap().parse().unwrap();
    assert!(
        (v - 0.9).abs() < 0.01,
        "about 0.9 s of Late Sender in ls: {line}"
    );
}

// ---------------------------------------------------------------------------------------
// Reviewed output

/// The structure of a `.cubex` as text: metric tree, call tree with regions, system tree,
/// and the rows (call paths with data) of every metric.
fn structure(c: &Cube, anchor: &str) -> String {
    let mut s = String::new();
    let depth_of = |parents: &dyn Fn(usize) -> Option<usize>, mut i: usize| {
        let mut d = 0;
        while let Some(p) = parents(i) {
            i = p;
            d += 1;
        }
        d
    };
    s.push_str("metrics\n");
    for (i, m) in c.metrics.iter().enumerate() {
        let d = depth_of(&|k| c.metrics[k].parent, i);
        s.push_str(&format!(
            "{:w$}{i} {} \"{}\" {:?}{} — {}\n",
            "",
            m.id,
            m.disp_name,
            m.unit,
            if m.url.is_empty() { "" } else { " url" },
            m.descr,
            w = 2 * d
        ));
    }
    s.push_str("call paths\n");
    for (i, n) in c.cnodes.iter().enumerate() {
        let d = depth_of(&|k| c.cnodes[k].parent, i);
        let r = &c.regions[n.callee];
        s.push_str(&format!(
            "{:w$}{i} {} [{} {} {}:{}]\n",
            "",
            r.name,
            r.paradigm,
            r.role,
            r.file,
            r.begin,
            w = 2 * d
        ));
    }
    s.push_str("system\n");
    for line in system_shape(c) {
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str("rows\n");
    for (k, m) in c.metrics.iter().enumerate() {
        let rows: Vec<String> = c.values[k].cnodes.iter().map(|r| r.to_string()).collect();
        s.push_str(&format!("{}: {}\n", m.id, rows.join(" ")));
    }
    s.push_str(&format!(
        "anchor.xml: {} bytes, {} regions\n",
        anchor.len(),
        c.regions.len()
    ));
    s
}

#[test]
fn cubex_structure_of_every_shipped_trace() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, trace) in common::shipped_traces() {
        let out = tmp.path().join(format!("{name}.cubex"));
        let (code, _, err) = perfexpert(&[
            "run",
            "-q",
            "--format",
            "cubex",
            "-o",
            out.to_str().unwrap(),
            trace.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let c = Cube::read(&out).unwrap();
        insta::assert_snapshot!(format!("cubex_{name}"), structure(&c, &c.anchor_xml()));
    }
}

/// A trace without any region event still gives a report Cube readers open: one artificial
/// root call path, all values zero, every location listed.
#[test]
fn a_trace_without_events_gives_one_root_call_path() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = common::otf2_builder::mpi_ranks_archive(
        1_000_000_000,
        &[("main", 1, 1)],
        &[vec![0, 1]],
        &[Vec::new(), Vec::new()],
    );
    let anchor = archive.write(tmp.path());
    let out = tmp.path().join("empty.cubex");
    let (code, _, err) = perfexpert(&[
        "run",
        "-q",
        "--format",
        "cubex",
        "-o",
        out.to_str().unwrap(),
        anchor.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let c = Cube::read(&out).unwrap();
    assert_eq!(c.cnodes.len(), 1);
    assert_eq!(c.regions[c.cnodes[0].callee].role, "artificial");
    assert_eq!(c.locations.len(), 2);
    assert!(c.values.iter().all(|r| r.cnodes.is_empty()));
    let Some(py) = common::venv_python("reading the report of an empty trace with pycubexr") else {
        return;
    };
    let script = "import sys\nfrom pycubexr import CubexParser\n\
                  with CubexParser(sys.argv[1]) as c:\n\
                  \x20   vals = [c.get_metric_values(m).value(c.get_root_cnodes()[0]) for m in c.all_metrics()]\n\
                  \x20   print(len(c.get_locations()), len(vals), sum(vals))\n";
    let o = std::process::Command::new(py)
        .args(["-c", script])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        printed.split_whitespace().collect::<Vec<_>>()[..1],
        ["2"],
        "{printed}"
    );
    assert!(
        printed.trim().ends_with(" 0") || printed.trim().ends_with(" 0.0"),
        "{printed}"
    );
}
