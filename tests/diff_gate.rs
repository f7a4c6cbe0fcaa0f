//! `perfexpert diff A B --fail-on METRIC:THRESHOLD` as a CI gate: exit 1 with one line per
//! breach (relative and absolute thresholds, growth and fall), 0 when none, 2 on bad input;
//! `--format junit -o FILE` writes one test case per threshold (docs/diff.md).

mod common;

use common::perfexpert;
use std::path::Path;

/// JSON reports of ls and lr (late sender against late receiver) in `dir`.
fn reports(dir: &Path) -> (String, String) {
    let mut out = Vec::new();
    for t in ["ls", "lr"] {
        let p = dir.join(format!("{t}.json"));
        let (code, _, err) = perfexpert(&[
            "run",
            &format!("testdata/scorep/{t}"),
            "-q",
            "--format",
            "json",
            "-o",
            p.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        out.push(p.to_str().unwrap().to_string());
    }
    (out[0].clone(), out[1].clone())
}

#[test]
fn thresholds_pass_and_fail() {
    let dir = tempfile::tempdir().unwrap();
    let (ls, lr) = reports(dir.path());
    // ls → lr: the late sender (0.900 s) vanishes, a late receiver (1.201 s) appears, the
    // run's time grows by 0.921 s
    let (code, out, err) = perfexpert(&[
        "diff",
        &ls,
        &lr,
        "--fail-on",
        "mpi_latesender:+10%",
        "--fail-on",
        "time:+0.5s",
        "--fail-on",
        "mpi_latereceiver:+100ms",
        "--fail-on",
        "mpi_latesender:-50%",
        "--fail-on",
        "time:+2s",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.starts_with("perfexpert diff"),
        "the diff is still printed"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        lines[0].starts_with("perfexpert: fail-on: time: 3.523 s → 4.444 s"),
        "{err}"
    );
    assert!(lines[0].ends_with("past the threshold time:+0.5s"), "{err}");
    assert!(lines[1].contains("mpi_latereceiver"), "{err}");
    assert!(
        lines[2].contains("past the threshold mpi_latesender:-50%"),
        "{err}"
    );
    // none passed: exit 0, nothing on stderr
    let (code, _, err) = perfexpert(&[
        "diff",
        &ls,
        &lr,
        "--fail-on",
        "mpi_latesender:+0%",
        "--fail-on",
        "time:+1s",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    // the same report: nothing grows
    let (code, _, _) = perfexpert(&["diff", &ls, &ls, "--fail-on", "time:+0"]);
    assert_eq!(code, 0);
}

#[test]
fn junit_has_one_test_case_per_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let (ls, lr) = reports(dir.path());
    let x = dir.path().join("gate.xml");
    let (code, out, err) = perfexpert(&[
        "diff",
        &ls,
        &lr,
        "--fail-on",
        "mpi_latesender:+10%",
        "--fail-on",
        "time:+0.5s",
        "--format",
        "junit",
        "-o",
        x.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    let xml = std::fs::read_to_string(&x).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(
        xml.contains(r#"<testsuite name="perfexpert diff" tests="2" failures="1""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"name="mpi_latesender:+10%"><system-out>"#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testcase classname="perfexpert diff" name="time:+0.5s">"#),
        "{xml}"
    );
    assert_eq!(xml.matches("<failure ").count(), 1);
    // well-formed XML: an XML reader reads it to the end, every element closed
    let mut r = quick_xml::Reader::from_str(&xml);
    r.config_mut().check_end_names = true;
    let mut depth = 0i32;
    loop {
        match r.read_event().unwrap() {
            quick_xml::events::Event::Start(_) => depth += 1,
            quick_xml::events::Event::End(_) => depth -= 1,
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0);
}

#[test]
fn bad_thresholds_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let (ls, lr) = reports(dir.path());
    for (t, what) in [
        ("mpi_latesender", "no ':'"),
        (":+10%", "no metric"),
        ("time:+ten%", "'ten' is not a number"),
        (
            "no_such_metric:+1%",
            "neither report has the metric no_such_metric",
        ),
        ("visits:+1s", "not measured in seconds"),
    ] {
        let (code, out, err) = perfexpert(&["diff", &ls, &lr, "--fail-on", t]);
        assert_eq!(code, 2, "{t}: {err}");
        assert!(out.is_empty());
        assert_eq!(err.lines().count(), 1, "{t}: {err}");
        assert!(err.contains(what), "{t}: {err}");
    }
    let (code, _, err) = perfexpert(&["diff", &ls, &lr, "--format", "junit"]);
    assert_eq!(code, 2);
    assert!(err.contains("at least one"), "{err}");
}
