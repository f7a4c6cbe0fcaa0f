//! Root causes as data (docs/rules.md, "Wait states with a cause"): a user-written wait-state
//! rule of `testdata/rules/` (`mpi_wait_alltoallv`, Wait at N x N for MPI_Alltoallv, which
//! Scalasca's catalogue leaves out) declares a `[cause]` and gets its short- and long-term
//! delay costs with no Rust, checked by hand on a trace written here; and the bad rule files
//! of the new keys (`[cause]`, `kind`, `of`, `term`, `part`, `quantity`) are reported at their
//! `file:line:col` with exit status 2.

mod common;

use common::otf2_builder::{mpi_ranks_archive, Ev};
use perfexpert::analysis::analyse;
use perfexpert::analysis::rootcause::{root_causes, RootCauses};
use perfexpert::replay::Replay;
use perfexpert::rules::RuleSet;
use perfexpert::Trace;
use std::path::{Path, PathBuf};

const REGIONS: [&str; 7] = [
    "main",
    "compute",
    "MPI_Init",
    "MPI_Finalize",
    "MPI_Send",
    "MPI_Recv",
    "MPI_Alltoallv",
];

/// OTF2_COLLECTIVE_OP_ALLTOALLV.
const ALLTOALLV: u8 = 9;

fn t(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

fn reg(name: &str) -> u32 {
    REGIONS.iter().position(|r| *r == name).unwrap() as u32
}

fn call(name: &str, s0: f64, s1: f64, inner: &[(f64, Ev)]) -> Vec<(u64, Ev)> {
    let mut v = vec![(t(s0), Ev::Enter(reg(name)))];
    v.extend(inner.iter().map(|&(s, e)| (t(s), e)));
    v.push((t(s1), Ev::Leave(reg(name))));
    v
}

fn alltoallv(s0: f64, s1: f64) -> Vec<(u64, Ev)> {
    let end = Ev::MpiCollectiveEnd {
        op: ALLTOALLV,
        comm: 0,
        root: u32::MAX,
        sent: 8,
        recvd: 8,
    };
    call("MPI_Alltoallv", s0, s1, &[(s1, end)])
}

/// The worked example of docs/rules.md, three ranks (seconds):
///
/// * rank 0 computes 0.1–1.1, then sends to rank 1 and enters MPI_Alltoallv at 1.1;
/// * rank 1 receives from rank 0 from 0.1 (the message at 1.1: a Late Sender of 1.0 s),
///   computes 1.1–1.3 and enters MPI_Alltoallv at 1.3, last;
/// * rank 2 enters MPI_Alltoallv at 0.1;
///
/// all leave MPI_Alltoallv at 1.5; MPI_Init 0.0–0.1, MPI_Finalize 1.5–1.6, inside `main`.
fn write_fixture(dir: &Path) -> PathBuf {
    let send = Ev::MpiSend {
        to: 1,
        comm: 0,
        tag: 0,
        bytes: 8,
    };
    let recv = Ev::MpiRecv {
        from: 0,
        comm: 0,
        tag: 0,
        bytes: 8,
    };
    let ranks: Vec<Vec<Vec<(u64, Ev)>>> = vec![
        vec![
            call("compute", 0.1, 1.1, &[]),
            call("MPI_Send", 1.1, 1.1, &[(1.1, send)]),
            alltoallv(1.1, 1.5),
        ],
        vec![
            call("MPI_Recv", 0.1, 1.1, &[(1.1, recv)]),
            call("compute", 1.1, 1.3, &[]),
            alltoallv(1.3, 1.5),
        ],
        vec![alltoallv(0.1, 1.5)],
    ];
    let streams: Vec<Vec<(u64, Ev)>> = ranks
        .into_iter()
        .map(|r| {
            let mut v = vec![(0, Ev::Enter(reg("main")))];
            v.extend(call("MPI_Init", 0.0, 0.1, &[]));
            v.extend(r.concat());
            v.extend(call("MPI_Finalize", 1.5, 1.6, &[]));
            v.push((t(1.6), Ev::Leave(reg("main"))));
            v
        })
        .collect();
    let regions: Vec<(&str, u8, u8)> = REGIONS
        .iter()
        .map(|n| match *n {
            n if n.starts_with("MPI_") => (n, 28, 4),
            n => (n, 1, 1),
        })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    mpi_ranks_archive(1_000_000_000, &regions, &[vec![0, 1, 2]], &streams).write(dir)
}

fn rules_dir() -> PathBuf {
    common::testdata("rules")
}

/// The fixture read, replayed and analysed with the built-ins plus `extra`, and its root
/// causes.
fn root_causes_of(anchor: &Path, extra: &[PathBuf]) -> (Trace, Replay, RootCauses) {
    let rules = RuleSet::load(extra).unwrap_or_else(|e| panic!("{e}"));
    let trace = perfexpert::open(anchor).unwrap();
    let replay = Replay::new(&trace);
    let a = analyse(&trace, &replay, rules);
    let rc = root_causes(&trace, &replay, &a);
    (trace, replay, rc)
}

/// Every non-zero value of root-cause metric `id`: (call path, rank, seconds).
fn nonzero(t: &Trace, r: &Replay, rc: &RootCauses, id: &str) -> Vec<(String, u32, f64)> {
    let v = rc.values(id).unwrap_or_else(|| panic!("no metric {id}"));
    (0..v.len())
        .filter(|&k| v[k] != 0.0)
        .map(|k| {
            let (c, l) = (k / rc.nloc, k % rc.nloc);
            let rank = t.defs.locations[l].rank.unwrap_or(u32::MAX);
            (r.path_name(t, c as u32), rank, v[k])
        })
        .collect()
}

fn assert_values(got: &[(String, u32, f64)], want: &[(&str, u32, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for ((p, r, v), (wp, wr, wv)) in got.iter().zip(want) {
        assert!(
            p == wp && r == wr && (v - wv).abs() < 1e-9,
            "{got:?} vs {want:?}"
        );
    }
}

/// docs/rules.md, "A worked wait state with a cause": the numbers by hand.
///
/// The custom rule books rank 0's 0.2 s (1.1–1.3) and rank 2's 1.2 s (0.1–1.3) at
/// MPI_Alltoallv; rank 1, last, caused them. Its interval since it last synchronised with
/// everyone (MPI_Init) holds its 0.2 s of `compute` and the receive, whose 1.0 s wait is
/// subtracted and counts as propagated. Rank 2's own interval holds nothing: delay 0.2 s,
/// scale 1.2 / (0.2 + 1.0) = 1; rank 0 synchronised with rank 1 at the message, so its share
/// is counted from there: delay 0.2 s, no propagated wait, scale 0.2 / 0.2 = 1. Short-term:
/// 0.2 + 0.2 = 0.4 s on rank 1's `compute`. Rank 2's scale carries its wait back to the
/// receive's 1.0 s wait, which rank 0's 1.0 s of `compute` caused (scale 1): 1.0 s of
/// long-term Alltoallv delay cost on rank 0's `compute`. 0.4 + 1.0 = the 1.4 s waited.
#[test]
fn a_custom_wait_state_with_a_cause_gets_its_delay_costs() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = write_fixture(dir.path());
    let (t, r, rc) = root_causes_of(&anchor, &[rules_dir()]);
    assert_values(
        &nonzero(&t, &r, &rc, "delay_alltoallv"),
        &[("main/compute", 1, 0.4)],
    );
    assert_values(
        &nonzero(&t, &r, &rc, "delay_alltoallv_longterm"),
        &[("main/compute", 0, 1.0)],
    );
    // the built-in Late Sender's own cost, for comparison: rank 0's compute, directly
    assert_values(
        &nonzero(&t, &r, &rc, "delay_latesender"),
        &[("main/compute", 0, 1.0)],
    );
    assert!(nonzero(&t, &r, &rc, "delay_latesender_longterm").is_empty());
    // Scalasca's N x N does not cover MPI_Alltoallv: without the custom rule, no cost
    let (t0, r0, rc0) = root_causes_of(&anchor, &[]);
    assert!(rc0.values("delay_alltoallv").is_none());
    assert!(nonzero(&t0, &r0, &rc0, "delay_n2n").is_empty());
    assert!(nonzero(&t0, &r0, &rc0, "delay_n2n_longterm").is_empty());
}

/// The same through `perfexpert run --format json`: the custom wait state and its delay
/// costs are in the report's metrics and values, and the root-cause section names rank 1's
/// and rank 0's `compute` as its causes.
#[test]
fn the_report_carries_the_custom_delay_costs() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = write_fixture(&dir.path().join("trace"));
    let out = dir.path().join("report.json");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_perfexpert"))
        .arg("run")
        .arg("-q")
        .arg(&anchor)
        .arg("--rules")
        .arg(rules_dir())
        .args(["--format", "json", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sum = |id: &str| -> f64 {
        (j["values"].as_array().unwrap().iter())
            .filter(|v| v["metric"] == id)
            .map(|v| v["value"].as_f64().unwrap())
            .sum()
    };
    assert!((sum("mpi_wait_alltoallv") - 1.4).abs() < 1e-9);
    assert!((sum("delay_alltoallv") - 0.4).abs() < 1e-9);
    assert!((sum("delay_alltoallv_longterm") - 1.0).abs() < 1e-9);
    let metrics = j["metrics"].as_array().unwrap();
    let parent = |id: &str| {
        let m = metrics.iter().find(|m| m["id"] == id).unwrap();
        m["parent"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(parent("delay_alltoallv"), "delay_alltoallv_aggregate");
    assert_eq!(parent("delay_alltoallv_aggregate"), "delay_collective");
    let causes: Vec<(u64, f64, f64)> = (j["root_causes"]["causes"].as_array().unwrap().iter())
        .filter(|c| c["wait_state"] == "mpi_wait_alltoallv")
        .map(|c| {
            (
                c["location"].as_u64().unwrap(),
                c["short_s"].as_f64().unwrap(),
                c["long_s"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert!(causes[0].0 == 0 && causes[0].1.abs() < 1e-9 && (causes[0].2 - 1.0).abs() < 1e-9);
    assert!(causes[1].0 == 1 && (causes[1].1 - 0.4).abs() < 1e-9 && causes[1].2.abs() < 1e-9);
}

// ---------------------------------------------------------------------------------------------
// Bad rule files of the new keys

/// Load the built-ins plus these files, written to a fresh directory; the error as printed,
/// with the directory left out (`bad.toml:7:13: ...`).
fn load_err(files: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    match RuleSet::load(&[dir.path().to_path_buf()]) {
        Ok(_) => panic!("the rules loaded: {files:?}"),
        Err(e) => {
            let prefix = format!("{}{}", dir.path().display(), std::path::MAIN_SEPARATOR);
            let msg = e.to_string();
            msg.strip_prefix(&prefix).unwrap_or(&msg).to_string()
        }
    }
}

/// Lines 1–6 of a root-cause metric file; what a test adds starts on line 7.
const RC: &str = r#"id = "delay_x"
name = "X"
parent = "delay_collective"
unit = "sec"
description = "d"
order = 9
"#;

fn bad_rc(body: &str) -> String {
    load_err(&[("bad.toml", &format!("{RC}{body}"))])
}

/// A receive rule (lines 1–12) whose `[cause]` starts on line 14.
const RECV: &str = r#"id = "bad_wait"
name = "Bad"
parent = "mpi_point2point"
unit = "sec"
description = "d"
diagnosis = "d"
on = "receive"
let = [
    "ts = min(S.enter.time, R.leave.time)",
]
severity = "ts - R.enter.time"
at = "R"

[cause]
"#;

fn bad_recv(body: &str) -> String {
    load_err(&[("bad.toml", &format!("{RECV}{body}"))])
}

/// A collective rule (lines 1–10) whose `[cause]` starts on line 12.
const COLL: &str = r#"id = "bad_coll"
name = "Bad"
parent = "mpi_collective"
unit = "sec"
description = "d"
diagnosis = "d"
on = "collective"
when = "size > 1 && op == 'ALLTOALLV'"
severity = "1"
at = "m.event"

[cause]
"#;

#[test]
fn bad_root_cause_metric_files_are_reported_at_their_place() {
    assert_eq!(
        bad_rc("kind = \"dealy\"\n"),
        "bad.toml:7:8: unknown variant `dealy`, expected one of `sum`, `delay`, `wait_cause`, \
         `critical_path`"
    );
    assert_eq!(
        bad_rc("kind = \"delay\"\nof = \"mpi_latesender\"\n"),
        "bad.toml:7:8: a root-cause metric with kind = \"delay\" needs `term`"
    );
    assert_eq!(
        bad_rc("kind = \"delay\"\nof = \"mpi_latesender\"\nterm = \"medium\"\n"),
        "bad.toml:9:8: unknown variant `medium`, expected `short` or `long`"
    );
    assert_eq!(
        bad_rc("kind = \"delay\"\nof = \"mpi_latesendr\"\nterm = \"short\"\n"),
        "bad.toml:8:6: rule `mpi_latesendr` does not exist"
    );
    assert_eq!(
        bad_rc("kind = \"delay\"\nof = \"mpi_earlyscan\"\nterm = \"short\"\n"),
        "bad.toml:8:6: rule `mpi_earlyscan` declares no [cause]: only wait states with a cause \
         have delay costs"
    );
    assert_eq!(
        bad_rc("kind = \"wait_cause\"\nof = \"mpi_barrier_wait\"\npart = \"indirect\"\n"),
        "bad.toml:8:6: rule `mpi_barrier_wait` is a collective wait state (shape = \
         \"barrier\"): kind = \"wait_cause\" splits point-to-point waits only"
    );
    assert_eq!(
        bad_rc("kind = \"wait_cause\"\nof = \"mpi_latesender\"\npart = \"sideways\"\n"),
        "bad.toml:9:8: unknown variant `sideways`, expected one of `indirect`, `direct`, \
         `propagating`, `terminal`"
    );
    assert_eq!(
        bad_rc("kind = \"sum\"\nterm = \"short\"\n"),
        "bad.toml:8:8: `term` has no meaning in a root-cause metric with kind = \"sum\""
    );
    assert_eq!(
        bad_rc("kind = \"critical_path\"\nquantity = \"slack\"\n"),
        "bad.toml:8:12: unknown variant `slack`, expected one of `path`, `activities`, \
         `imbalance`, `inter_partition`, `non_critical`"
    );
    assert_eq!(
        bad_rc("kind = \"sum\"\nseverity = \"1\"\n"),
        "bad.toml:8:1: unknown field `severity`, expected one of `id`, `name`, `long_name`, \
         `parent`, `unit`, `paradigm`, `order`, `description`, `diagnosis`, `kind`, `of`, \
         `term`, `part`, `quantity`"
    );
    let text = RC.replace("delay_collective", "mpi_collective") + "kind = \"sum\"\n";
    assert_eq!(
        load_err(&[("bad.toml", &text)]),
        "bad.toml:3:10: parent metric `mpi_collective` is a rule's metric: a root-cause \
         metric's parent is a root-cause metric (a file with `kind`)"
    );
}

#[test]
fn bad_cause_tables_are_reported_at_their_place() {
    assert_eq!(
        bad_recv("partner = \"R\"\n"),
        "bad.toml:15:12: `[cause] partner` must be an event of the other process: a binding \
         of the partner (S of a receive; R or Q of a send) or its enter or leave"
    );
    assert_eq!(
        bad_recv("partner = \"S.bytes\"\n"),
        "bad.toml:15:12: expected an event, this is a number"
    );
    assert_eq!(
        bad_recv("partner = \"T\"\n"),
        "bad.toml:15:12: unknown name `T`; known here: R, S, ts"
    );
    assert_eq!(
        bad_recv("shape = \"barrier\"\n"),
        "bad.toml:15:9: `shape` is for collective wait states; a rule with on = \"receive\" \
         names its partner event: partner = \"S\""
    );
    assert_eq!(
        bad_recv("partnr = \"S\"\n"),
        "bad.toml:15:1: unknown field `partnr`, expected `partner` or `shape`"
    );
    assert_eq!(
        load_err(&[("bad.toml", &format!("{COLL}shape = \"ring\"\n"))]),
        "bad.toml:13:9: unknown variant `ring`, expected one of `barrier`, `all_to_all`, \
         `one_to_all`, `all_to_one`, `thread_barrier`, `thread_fork`"
    );
    assert_eq!(
        load_err(&[("bad.toml", COLL)]),
        "bad.toml:12:1: `[cause]` of a rule with on = \"collective\" needs `shape`: barrier, \
         all_to_all, one_to_all or all_to_one"
    );
    let at_s = RECV.replace("at = \"R\"", "at = \"S\"") + "partner = \"S\"\n";
    assert_eq!(
        load_err(&[("bad.toml", &at_s)]),
        "bad.toml:12:7: a wait state with a [cause] is booked where it waited: `at` must be an \
         event of the location the rule runs on (like R of a receive, C of a send)"
    );
    let callpath = "id = \"bad_cp\"\nname = \"B\"\nunit = \"sec\"\ndescription = \"d\"\n\
                    diagnosis = \"d\"\non = \"callpath\"\nseverity = \"time\"\n\n[cause]\n\
                    shape = \"barrier\"\n";
    assert_eq!(
        load_err(&[("bad.toml", callpath)]),
        "bad.toml:10:9: shape = \"barrier\" does not fit a rule with on = \"callpath\": \
         thread_fork"
    );
    // the thread shapes: each fits its own pass only
    let tb = "id = \"bad_tb\"\nname = \"B\"\nunit = \"sec\"\ndescription = \"d\"\n\
              diagnosis = \"d\"\non = \"thread_barrier\"\nseverity = \"1\"\nat = \"m.event\"\n\n\
              [cause]\nshape = \"all_to_all\"\n";
    assert_eq!(
        load_err(&[("bad.toml", tb)]),
        "bad.toml:11:9: shape = \"all_to_all\" does not fit a rule with on = \
         \"thread_barrier\": thread_barrier"
    );
    let team = tb.replace("on = \"thread_barrier\"", "on = \"team\"");
    assert_eq!(
        load_err(&[("bad.toml", &team)]),
        "bad.toml:10:1: `[cause]` has no meaning in a rule with on = \"team\": only receive, \
         send, collective and thread-barrier wait states, idle threads (on = \"callpath\") \
         and rules fed by receive or send rules have a cause"
    );
    let coll_tb = COLL.to_string() + "shape = \"thread_barrier\"\n";
    assert_eq!(
        load_err(&[("bad.toml", &coll_tb)]),
        "bad.toml:13:9: shape = \"thread_barrier\" does not fit a rule with on = \
         \"collective\": barrier, all_to_all, one_to_all or all_to_one"
    );
    let tb_partner = tb.replace("shape = \"all_to_all\"", "partner = \"m.event\"");
    assert_eq!(
        load_err(&[("bad.toml", &tb_partner)]),
        "bad.toml:11:11: `partner` is for point-to-point wait states; a rule with on = \
         \"thread_barrier\" names the shape: thread_barrier"
    );
}

/// `perfexpert rules check` prints one line, `file:line:col: message`, and exits with 2.
#[test]
fn rules_check_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        format!("{RC}kind = \"delay\"\nof = \"mpi_earlyscan\"\nterm = \"short\"\n"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perfexpert"))
        .args(["rules", "check"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}:8:6: rule `mpi_earlyscan` declares no [cause]",
            f.display()
        )),
        "{err}"
    );
}

/// A built-in wait state replaced by a user rule without a `[cause]` loads (like `had()` of
/// a built-in about a replaced rule): its built-in root-cause metrics are left out, the
/// others stay.
#[test]
fn replacing_a_wait_state_without_its_cause_drops_its_delay_costs() {
    let dir = tempfile::tempdir().unwrap();
    let rule = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/mpi/mpi_latesender.toml"),
    )
    .unwrap();
    let cut = rule
        .find("[cause]")
        .expect("the built-in declares its cause");
    std::fs::write(dir.path().join("mpi_latesender.toml"), &rule[..cut]).unwrap();
    let trace_dir = dir.path().join("trace");
    let anchor = write_fixture(&trace_dir);
    let rules = dir.path().join("mpi_latesender.toml");
    let (t, r, rc) = root_causes_of(&anchor, &[rules, rules_dir()]);
    assert!(rc.values("delay_latesender").is_none());
    assert!(rc.values("mpi_wait_indirect_latesender").is_none());
    assert!(rc.values("delay_latereceiver").is_some());
    // the receive's wait is no synchronisation point now: rank 1's compute alone explains
    // the Alltoallv waits (no long-term cost through the receive)
    assert!(nonzero(&t, &r, &rc, "delay_alltoallv_longterm").is_empty());
    assert!(!nonzero(&t, &r, &rc, "delay_alltoallv").is_empty());
}

/// A rule fed by a built-in wait state (`on = "rule"`) may declare the cause too: its waits
/// are the built-in's (the same synchronisation points), and each rule gets the full delay
/// costs of the waits it booked.
#[test]
fn a_fed_rule_with_a_cause_shares_the_points_of_its_feeder() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("mpi_ls_payload.toml"),
        r#"id = "mpi_ls_payload"
name = "With payload"
parent = "mpi_latesender"
unit = "sec"
order = 9
on = "rule"
of = "mpi_latesender"
when = "S.bytes > 0"
severity = "value"
at = "at"
description = "Late Sender of messages with payload."
diagnosis = "d"

[cause]
partner = "S"
"#,
    )
    .unwrap();
    std::fs::write(
        rules.join("delay_ls_payload.toml"),
        r#"id = "delay_ls_payload"
name = "With payload"
parent = "delay_latesender_aggregate"
unit = "sec"
order = 9
kind = "delay"
of = "mpi_ls_payload"
term = "short"
description = "d"
"#,
    )
    .unwrap();
    let anchor = write_fixture(&dir.path().join("trace"));
    let (t, r, rc) = root_causes_of(&anchor, &[rules]);
    let want = [("main/compute", 0, 1.0)];
    assert_values(&nonzero(&t, &r, &rc, "delay_ls_payload"), &want);
    assert_values(&nonzero(&t, &r, &rc, "delay_latesender"), &want);
}
