//! The OTF 1 reader (formats.md §B): agreement with otfprint on every OTF 1 trace of
//! ../shared/traces/public, small traces written here (short and long forms, hex stream ids,
//! several processes per stream, `.z` streams without an end block, messages and collectives
//! the patterns must find), bad input, and reviewed snapshots of the WRF reports.

mod common;

use perfexpert::model::*;
use serde_json::Value as Json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Write the files of a trace into `dir`; returns the path of `t.otf`.
fn write(dir: &Path, files: &[(&str, &str)]) -> PathBuf {
    for (name, content) in files {
        std::fs::write(dir.join(name), content).unwrap();
    }
    dir.join("t.otf")
}

/// zlib-compress as VampirTrace does: full flushes, no end-of-stream block.
fn deflate_unfinished(text: &str) -> Vec<u8> {
    let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    w.write_all(text.as_bytes()).unwrap();
    w.flush().unwrap();
    w.get_ref().clone()
}

fn run_bin(args: &[&str], path: &Path) -> (i32, String, String) {
    let o = common::bin().args(args).arg(path).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn info_json(path: &Path) -> Json {
    let (code, out, err) = run_bin(&["info", "--json"], path);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn assert_clean_error(path: &Path, names: &str, says: &str) {
    let (code, out, err) = run_bin(&["info"], path);
    assert_eq!(code, 2, "exit status; stderr: {err}");
    assert!(out.is_empty(), "no partial output on error, got: {out}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(names), "{err:?} should name {names}");
    assert!(err.contains(says), "{err:?} should say {says}");
}

// ---------------------------------------------------------------------------------------
// Agreement with the official reader

#[test]
fn counts_agree_with_otfprint_on_every_public_otf1_trace() {
    let Some(shared) = common::shared() else {
        return;
    };
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(shared.join("traces/public"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("otf1-"))
        })
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "the five OTF 1 traces of the corpus");
    for dir in dirs {
        let expected: Json =
            serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap())
                .unwrap();
        let anchor = dir.join(expected["anchor_file"].as_str().unwrap());
        let got = info_json(&anchor);
        let name = dir.display();
        assert_eq!(got["format"], "OTF", "{name}");
        assert_eq!(got["events"], expected["events_total"], "{name}");
        assert_eq!(
            got["events_per_kind"], expected["events_per_kind"],
            "{name}"
        );
        assert_eq!(
            got["first_timestamp"], expected["first_timestamp"],
            "{name}"
        );
        assert_eq!(got["last_timestamp"], expected["last_timestamp"], "{name}");
        assert_eq!(
            got["definitions"], expected["definitions_per_kind"],
            "{name}"
        );
        let per_location: u64 = got["events_per_location"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(Some(per_location), expected["events_total"].as_u64());
        if expected["timer_resolution"].is_null() {
            // otf1-hello-world-missing-defs: no definitions at all; read with warnings
            let w = got["warnings"].to_string();
            assert!(w.contains("hello_world.0.def: no definition file"), "{w}");
            assert!(w.contains("no definition declares"), "{w}");
        } else {
            assert_eq!(
                got["timer_resolution"], expected["timer_resolution"],
                "{name}"
            );
            assert_eq!(
                got["locations"].as_array().unwrap().len() as u64,
                expected["processes"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(got["warnings"], serde_json::json!([]), "{name}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Small traces written here

const DEFS: &str = "DV1.a.1\"test\"\nDTRf4240\nDP1NM\"Process 0\"\nDP2NM\"Process 1\"\n\
DFG1NM\"Application\"\nDFG2NM\"MPI\"\nDF1G1NM\"main\"\nDF2G2NM\"MPI_Send\"\n\
DF3G2NM\"MPI_Recv\"\nDF4G2NM\"MPI_Bcast\"\nDCO1NM\"MPI_Bcast\"Y2\n\
DPG5M1,2,NM\"MPI_COMM_WORLD\"\nDCG1NM\"c\"\nDCNT1G1NM\"cycles\"P0U\"#\"\n";

const DEFS_LONG: &str = "DEFVERSION 1.a.1 \"test\"\nDEFTIMERRESOLUTION f4240\n\
DEFPROCESS 1 NAME \"Process 0\"\nDEFPROCESS 2 NAME \"Process 1\"\n\
DEFFUNCTIONGROUP 1 NAME \"Application\"\nDEFFUNCTIONGROUP 2 NAME \"MPI\"\n\
DEFFUNCTION 1 GROUP 1 NAME \"main\"\nDEFFUNCTION 2 GROUP 2 NAME \"MPI_Send\"\n\
DEFFUNCTION 3 GROUP 2 NAME \"MPI_Recv\"\nDEFFUNCTION 4 GROUP 2 NAME \"MPI_Bcast\"\n\
DEFCOLLOP 1 NAME \"MPI_Bcast\" TYPE 2\n\
DEFPROCESSGROUP 5 MEMBERS 1,2, NAME \"MPI_COMM_WORLD\"\nDEFCOUNTERGROUP 1 NAME \"c\"\n\
DEFCOUNTER 1 GROUP 1 NAME \"cycles\" PROPERTIES 0 UNIT \"#\"\n";

// Process 1 (rank 0) waits in MPI_Recv from t=100 µs; process 2 sends at t=300 µs: a late
// sender of 200 µs. Then process 1, the root, enters MPI_Bcast at 1000 µs, process 2 at 600:
// a late broadcast of 400 µs on rank 1. Times are hexadecimal microseconds.
const EVENTS_1: &str = "0\n*1\nE1\nCNT1V0\n64\n*1\nE3\n140\n*1\nR2L8T7C5\nL\n\
3e8\n*1\nE4\nCOP1C5RT1S40R0Da\n3f2\n*1\nL4\n4b0\n*1\nCNT1V2a\nL1\n";
const EVENTS_2: &str = "0\n*2\nE1\n12c\n*2\nE2\nS1L8T7C5\n136\n*2\nL\n\
258\n*2\nE4\nCOP1C5RT1S0R40D19a\n3f2\n*2\nL\n4b0\n*2\nL1\n";

const EVENTS_1_LONG: &str = "0\n*1\nENTER 1\nCOUNTER 1 VALUE 0\n64\n*1\nENTER 3\n140\n*1\n\
RECEIVE 2 LEN 8 TAG 7 COMM 5\nLEAVE 0\n3e8\n*1\nENTER 4\n\
COLLOP 1 COMM 5 ROOT 1 SENT 40 RECVD 0 DUR a\n3f2\n*1\nLEAVE 4\n4b0\n*1\n\
COUNTER 1 VALUE 2a\nLEAVE 1\n";
const EVENTS_2_LONG: &str = "0\n*2\nENTER 1\n12c\n*2\nENTER 2\nSEND 1 LEN 8 TAG 7 COMM 5\n\
136\n*2\nLEAVE\n258\n*2\nENTER 4\nCOLLOP 1 COMM 5 ROOT 1 SENT 0 RECVD 40 DUR 19a\n3f2\n*2\n\
LEAVE\n4b0\n*2\nLEAVE 1\n";

fn two_rank_trace(dir: &Path) -> PathBuf {
    write(
        dir,
        &[
            ("t.otf", "1:1\n2:2\n"),
            ("t.0.def", DEFS),
            ("t.1.events", EVENTS_1),
            ("t.2.events", EVENTS_2),
        ],
    )
}

#[test]
fn the_model_holds_messages_and_collectives_as_the_replay_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let t = perfexpert::open(&two_rank_trace(dir.path())).unwrap();
    assert_eq!(t.origin.format, "OTF");
    assert_eq!(t.defs.locations.len(), 2);
    assert_eq!(t.defs.locations[1].rank, Some(1));
    assert_eq!(
        t.defs.comms.len(),
        1,
        "no all-processes communicator needed"
    );
    let bcast = t.defs.regions.iter().position(|r| r.name == "MPI_Bcast");
    let r = &t.defs.regions[bcast.unwrap()];
    assert_eq!(
        (r.paradigm, r.role),
        (Paradigm::MPI, RegionRole::COLL_ONE2ALL)
    );
    let e = &t.events[0];
    let kinds: Vec<EventKind> = e.kind.to_vec();
    use EventKind::*;
    assert_eq!(
        kinds,
        [
            Enter,
            Metric,
            Enter,
            MpiRecv,
            Leave,
            Enter,
            MpiCollectiveEnd,
            Leave,
            Metric,
            Leave
        ]
    );
    // the receive names its sender by rank in communicator 5
    let m = e.msg(3).unwrap();
    assert_eq!((m.peer, m.tag, m.bytes), (1, 7, 8));
    // `L` leaves MPI_Recv, the function on top of the stack
    assert_eq!(e.region(4), e.region(2));
    // COP: one collective end at record time + duration, the root as rank 0
    assert_eq!(e.time.get(6), 0x3e8 + 0xa);
    let c = e.coll(6).unwrap();
    assert_eq!((c.op, c.root, c.sent, c.received), (1, 0, 0x40, 0));
    // on rank 1 the end is due at 0x258 + 0x19a = 0x3f2: emitted before its Leave
    let e2 = &t.events[1];
    let end = e2.kind.iter().position(|&k| k == MpiCollectiveEnd).unwrap();
    assert_eq!(e2.time.get(end), 0x3f2);
    assert_eq!(e2.kind[end + 1], Leave);
    assert_eq!(e.fields(1), &[0, 1, 4, 0]);
    assert_eq!(e.fields(8), &[0, 1, 4, 0x2a]);
    assert_eq!(t.event_count(), 10 + 8);
}

#[test]
fn long_form_reads_as_the_short_form() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let short = info_json(&two_rank_trace(a.path()));
    let long = info_json(&write(
        b.path(),
        &[
            ("t.otf", "1:1\n2:2\n"),
            ("t.0.def", DEFS_LONG),
            ("t.1.events", EVENTS_1_LONG),
            ("t.2.events", EVENTS_2_LONG),
        ],
    ));
    for key in [
        "events",
        "events_per_kind",
        "events_per_location",
        "locations",
        "regions",
        "communicators",
        "definitions",
        "first_timestamp",
        "last_timestamp",
        "timer_resolution",
        "format_version",
    ] {
        assert_eq!(short[key], long[key], "{key}");
    }
    let a = run_bin(&["run", "--format", "json"], &a.path().join("t.otf"));
    let b = run_bin(&["run", "--format", "json"], &b.path().join("t.otf"));
    let strip = |s: &str| {
        let mut v: Json = serde_json::from_str(s).unwrap();
        v["trace"]["path"] = Json::Null;
        v
    };
    assert_eq!(strip(&a.1), strip(&b.1));
}

/// Sum of a metric over all call paths and locations in a JSON report.
fn total(report: &Json, metric: &str) -> f64 {
    report["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["metric"] == metric)
        .map(|v| v["value"].as_f64().unwrap())
        .sum()
}

#[test]
fn the_mpi_patterns_find_the_planted_wait_states() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = run_bin(&["run", "--format", "json"], &two_rank_trace(dir.path()));
    assert_eq!(code, 0, "{err}");
    let r: Json = serde_json::from_str(&out).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(
        close(total(&r, "mpi_latesender"), 200e-6),
        "{}",
        total(&r, "mpi_latesender")
    );
    assert!(
        close(total(&r, "mpi_latebroadcast"), 400e-6),
        "{}",
        total(&r, "mpi_latebroadcast")
    );
    assert_eq!(r["diagnostics"]["unmatched_sends"], 0);
    assert_eq!(r["diagnostics"]["incomplete_collective_instances"], 0);
}

#[test]
fn hex_stream_ids_many_processes_per_stream_and_unfinished_z_streams() {
    let dir = tempfile::tempdir().unwrap();
    // stream 1 holds processes 1 and 2; stream a (10) holds process 3, compressed without an
    // end-of-stream block; process 4 is listed but has no events
    let s1 = "0\n*1\nE1\n*2\nE1\n5\n*1\nL1\n*2\nL1\n";
    let sa = "0\n*3\nPB\nE1\n#\"a comment\"\nN\n6\n*3\nL\nPE\n";
    let p = write(
        dir.path(),
        &[
            ("t.otf", "1:1,2\na:3,4\n"),
            (
                "t.0.def",
                "DTR3e8\nDP1NM\"a\"\nDP2NM\"b\"PT1\nDP3NM\"c\"\nDP4NM\"d\"\nDF1G0NM\"f\"\n",
            ),
            ("t.1.events", s1),
        ],
    );
    std::fs::write(dir.path().join("t.a.events.z"), deflate_unfinished(sa)).unwrap();
    let t = perfexpert::open(&p).unwrap();
    let counts: Vec<usize> = t.events.iter().map(Events::len).collect();
    assert_eq!(counts, [2, 2, 6, 0]);
    // a thread (PT parent) joins its process's location group and has no rank
    assert_eq!(t.defs.locations[1].group, t.defs.locations[0].group);
    assert_eq!(t.defs.locations[1].rank, None);
    assert_eq!(t.defs.locations[2].rank, Some(1));
    let info = info_json(&p);
    assert_eq!(info["events"], 10);
    assert_eq!(
        info["events_per_kind"],
        serde_json::json!({"BeginProcess": 1, "EndProcess": 1, "Enter": 3, "Leave": 3,
                           "EventComment": 1, "NoOp": 1})
    );
}

#[test]
fn the_format_is_found_by_content_not_by_name() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            ("trace", "1:1\n"),
            ("trace.0.def", "DTRf4240\nDP1NM\"p\"\nDF1G0NM\"f\"\n"),
            ("trace.1.events", "0\n*1\nE1\n1\n*1\nL1\n"),
        ],
    );
    let info = info_json(&dir.path().join("trace"));
    assert_eq!(info["events"], 2);
    assert_eq!(info["format"], "OTF");
    // a directory with one master file named *.otf is read as that trace
    let d2 = tempfile::tempdir().unwrap();
    two_rank_trace(d2.path());
    assert_eq!(info_json(d2.path())["events"], 18);
    // and a file named .otf that is no master file is refused
    std::fs::write(dir.path().join("x.otf"), "DP1NM\"p\"\n").unwrap();
    assert_clean_error(
        &dir.path().join("x.otf"),
        "x.otf: byte 0",
        "OTF master file",
    );
}

#[test]
fn unknown_records_count_as_otfprint_counts_them_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        &[
            ("t.otf", "1:1\n"),
            (
                "t.0.def",
                "DTRf4240\nDP1NM\"p\"\nDF1G0NM\"f\"\nDNEWTHING1\n",
            ),
            ("t.1.events", "0\n*1\nE1\nXYZ12\nKaY8V1\nL1\n"),
        ],
    );
    let info = info_json(&p);
    assert_eq!(info["events"], 3);
    assert_eq!(info["events_per_kind"]["Unknown"], 1);
    let w = info["warnings"].to_string();
    assert!(w.contains("t.1.events:4"), "{w}");
    assert!(w.contains("no known event record"), "{w}");
    assert!(w.contains("t.0.def:4"), "{w}");
    // the key-value line attaches to the Leave
    let t = perfexpert::open(&p).unwrap();
    assert_eq!(t.events[0].attributes_of(2).len(), 1);
}

// ---------------------------------------------------------------------------------------
// Bad input

#[test]
fn a_truncated_stream_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    let full = EVENTS_1.as_bytes();
    for cut in 1..full.len() {
        if full[cut - 1] == b'\n' {
            continue; // a cut at a line end leaves a shorter valid stream (no end marker)
        }
        std::fs::write(dir.path().join("t.1.events"), &full[..cut]).unwrap();
        let line = full[..cut].iter().filter(|&&c| c == b'\n').count() + 1;
        assert_clean_error(&p, &format!("t.1.events:{line}"), "truncated");
    }
}

#[test]
fn truncated_and_corrupt_z_streams_never_panic_and_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    std::fs::remove_file(dir.path().join("t.1.events")).unwrap();
    let z = deflate_unfinished(EVENTS_1);
    let zpath = dir.path().join("t.1.events.z");
    for cut in 0..z.len() {
        std::fs::write(&zpath, &z[..cut]).unwrap();
        match perfexpert::open(&p) {
            Err(e) => assert!(e.to_string().contains("t.1.events.z"), "{e}"),
            // a cut that ends the inflated text exactly at a line end cannot be told apart
            Ok(t) => assert!(t.event_count() <= 19),
        }
    }
    // the header damaged
    let mut bad = z.clone();
    bad[0] = 0x00;
    std::fs::write(&zpath, &bad).unwrap();
    assert_clean_error(&p, "t.1.events.z: byte ", "corrupt zlib data");
    // cut inside a record: the inflated text ends without its line end
    let text = EVENTS_1.as_bytes();
    std::fs::write(
        &zpath,
        deflate_unfinished(std::str::from_utf8(&text[..text.len() - 2]).unwrap()),
    )
    .unwrap();
    assert_clean_error(&p, "t.1.events.z:", "line of the inflated text");
}

#[test]
fn damaged_records_are_errors_naming_file_and_line() {
    let cases: [(&str, &str, &str); 7] = [
        ("0\n*1\nE1\nS2LzzT0C5\nL1\n", "t.1.events:4", "column 4"),
        ("0\n*1\nE1\nS2L8T0\nL1\n", "t.1.events:4", "after 'C'"),
        ("0\n*1\nE1\nCNT1V\nL1\n", "t.1.events:4", "after 'V'"),
        (
            "5\n*1\nE1\n3\n*1\nL1\n",
            "t.1.events:4",
            "time goes backwards",
        ),
        ("E1\n0\n*1\nL1\n", "t.1.events:1", "before the first record"),
        ("0\n*9\nE1\n", "t.1.events:2", "process 9"),
        ("0\n*1\nE1\nR2L8T0C5\nDF\"x\n", "t.1.events:5", "closing"),
    ];
    for (events, names, says) in cases {
        let dir = tempfile::tempdir().unwrap();
        let p = two_rank_trace(dir.path());
        std::fs::write(dir.path().join("t.1.events"), events).unwrap();
        assert_clean_error(&p, names, says);
    }
}

#[test]
fn missing_and_damaged_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    std::fs::remove_file(dir.path().join("t.2.events")).unwrap();
    assert_clean_error(&p, "t.otf", "stream 2 of the master file has no event file");

    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    std::fs::write(&p, "1:1\n2:2x\n").unwrap();
    assert_clean_error(&p, "t.otf:2", "expected a master line");

    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    std::fs::write(dir.path().join("t.0.def"), "DTRf4240\nDP1NM\"Process 0\n").unwrap();
    assert_clean_error(&p, "t.0.def:2", "closing");

    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    std::fs::write(dir.path().join("t.0.def"), "DTRf4240\nDF1GNM\"f\"\n").unwrap();
    assert_clean_error(&p, "t.0.def:2", "after 'G'");
}

#[test]
fn a_trace_without_definitions_is_read_with_warnings() {
    // the shape of otf1-hello-world-missing-defs, which otfprint accepts
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        &[
            ("t.otf", "1:1\n"),
            ("t.1.events", "0\n*1\nE1\nCNT5V1\n2\n*1\nL1\n"),
        ],
    );
    let t = perfexpert::open(&p).unwrap();
    assert_eq!(t.event_count(), 3);
    assert_eq!(t.defs.regions[0].name, "<undefined function 1>");
    assert_eq!(t.defs.metrics[0].name, "<undefined counter 5>");
    assert_eq!(t.defs.locations[0].name, "Process 1");
    let w: Vec<String> = t.warnings.iter().map(|w| w.to_string()).collect();
    assert!(
        w.iter().any(|w| w.contains("t.0.def: no definition file")),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w.contains("no timer resolution")), "{w:?}");
}

// ---------------------------------------------------------------------------------------
// Snapshots of the WRF reports (GPL data: read in place from ../shared)

fn wrf() -> Option<PathBuf> {
    let shared = common::shared()?;
    let dir = shared.join("traces/public/otf1-wrf");
    if dir.join("wrf.otf").is_file() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: {} is absent", dir.display());
        None
    }
}

fn run_wrf(dir: &Path, args: &[&str], threads: &str) -> String {
    let o = common::bin()
        .current_dir(dir)
        .arg("run")
        .args(args)
        .arg("wrf.otf")
        .env("RAYON_NUM_THREADS", threads)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn wrf_text_report() {
    let Some(dir) = wrf() else {
        return;
    };
    insta::assert_snapshot!("text_otf1_wrf", run_wrf(&dir, &["--top", "8"], "2"));
}

/// The JSON report of WRF is 7.4 MB (every metric × call path × location); the snapshot keeps
/// everything but `values` and `findings`, which it reduces to per-metric totals and counts and
/// to the first 25 findings. The full document must not depend on the thread count.
#[test]
fn wrf_json_report() {
    let Some(dir) = wrf() else {
        return;
    };
    let one = run_wrf(&dir, &["--format", "json"], "1");
    let two = run_wrf(&dir, &["--format", "json"], "2");
    assert!(
        one == two,
        "the WRF JSON report depends on the thread count"
    );
    let mut r: Json = serde_json::from_str(&two).unwrap();
    let mut totals: std::collections::BTreeMap<String, (u64, f64)> = Default::default();
    for v in r["values"].as_array().unwrap() {
        let e = totals
            .entry(v["metric"].as_str().unwrap().to_string())
            .or_default();
        e.0 += 1;
        e.1 += v["value"].as_f64().unwrap();
    }
    r["values"] = serde_json::json!(totals
        .into_iter()
        .map(|(k, (n, s))| (
            k,
            serde_json::json!({"entries": n, "total": (s * 1e9).round() / 1e9})
        ))
        .collect::<serde_json::Map<_, _>>());
    let findings = r["findings"].as_array().unwrap().clone();
    r["findings"] = serde_json::json!({
        "count": findings.len(),
        "first": findings.into_iter().take(25).collect::<Vec<_>>(),
    });
    for m in r["metrics"].as_array_mut().unwrap() {
        // the rule texts are snapshot with the OTF2 reports already
        m.as_object_mut().unwrap().remove("description");
        m.as_object_mut().unwrap().remove("diagnosis");
    }
    insta::assert_json_snapshot!("json_otf1_wrf", r);
}

/// Damaged copies of a small trace (bytes replaced, removed or duplicated at pseudo-random
/// places, in every file) are read or refused, never a panic; what is read is analysed without
/// a panic too (unbalanced stacks, stray messages and collectives).
#[test]
fn damaged_traces_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let p = two_rank_trace(dir.path());
    let files = [
        ("t.otf", "1:1\n2:2\n".to_string()),
        ("t.0.def", DEFS.to_string()),
        ("t.1.events", EVENTS_1.to_string()),
        ("t.2.events", EVENTS_2_LONG.to_string()),
    ];
    let alphabet = b"0123456789abcdefABCDEFGKLMNPRSTVXYZ*#\",. \n\t\r\0\xff";
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let rules = perfexpert::rules::RuleSet::load(&[]).unwrap();
    for round in 0..1500 {
        let (name, text) = &files[round % files.len()];
        let mut b = text.as_bytes().to_vec();
        for _ in 0..1 + next() % 3 {
            let at = (next() % b.len() as u64) as usize;
            match next() % 3 {
                0 => b[at] = alphabet[(next() % alphabet.len() as u64) as usize],
                1 => {
                    b.remove(at);
                }
                _ => b.insert(at, b[at]),
            }
        }
        std::fs::write(dir.path().join(name), &b).unwrap();
        let r = std::panic::catch_unwind(|| {
            if let Ok(t) = perfexpert::open(&p) {
                let replay = perfexpert::replay::Replay::new(&t);
                perfexpert::analysis::analyse(&t, &replay, rules.clone());
            }
        });
        assert!(
            r.is_ok(),
            "panic on damaged {name}: {:?}",
            String::from_utf8_lossy(&b)
        );
        std::fs::write(dir.path().join(name), text).unwrap();
    }
}
