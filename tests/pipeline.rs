//! The analysis as one library call (`perfexpert::analyse_trace`), without the command line,
//! and what the command line says about its stages on stderr (`-v`, `RUST_LOG`,
//! `--timings`): never on stdout, nothing new by default.

mod common;

use common::{bin, perfexpert, shipped_traces};
use perfexpert::analysis::pipeline::{Options, Refusal};
use perfexpert::report::Report;
use perfexpert::rules::RuleSet;

const LS: &str = "testdata/scorep/ls/traces.otf2";

/// The JSON report of `trace` built from the library alone, as `run --format json` builds it.
fn library_json(trace: &str, phase: Option<usize>) -> String {
    let t = perfexpert::open(trace.as_ref()).unwrap();
    let opts = Options {
        phase,
        structure: true,
        phases: true,
        root_causes: true,
        ..Options::new(RuleSet::load(&[]).unwrap())
    };
    let outcome = perfexpert::analyse_trace(t, opts, Report::of).unwrap();
    let mut report = outcome.view;
    report.add_extras(outcome.extras);
    let mut out = Vec::new();
    report.write_json(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_library_call_gives_the_report_of_the_command_line() {
    let traces = shipped_traces();
    assert!(traces.len() > 5);
    for (name, path) in traces {
        let p = path.to_str().unwrap();
        let (code, cli, err) = perfexpert(&["run", "-q", "--format", "json", p]);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(library_json(p, None), cli, "{name}");
    }
    let (code, cli, err) = perfexpert(&["run", "-q", "--format", "json", "--phase", "2", LS]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(library_json(LS, Some(2)), cli);
}

#[test]
fn the_library_call_finds_what_the_report_lists() {
    let trace = perfexpert::open(LS.as_ref()).unwrap();
    let rules = RuleSet::load(&[]).unwrap();
    let outcome = perfexpert::analyse_trace(trace, Options::new(rules), |w| {
        let mut f = w.findings;
        perfexpert::analysis::scores::rank(&mut f);
        f.iter()
            .map(|f| (f.metric.clone(), f.callpath, f.severity))
            .collect::<Vec<_>>()
    })
    .unwrap();
    // no extras asked, none computed
    let e = &outcome.extras;
    assert!(e.critical_path.is_none() && e.phases.is_none() && e.wait_matrix.is_none());
    let (code, out, _) = perfexpert(&["run", "-q", "--format", "json", LS]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let listed: Vec<(String, u32, f64)> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["metric"].as_str().unwrap().to_string(),
                f["callpath"].as_u64().unwrap() as u32,
                f["severity"].as_f64().unwrap(),
            )
        })
        .collect();
    assert!(!listed.is_empty());
    assert_eq!(outcome.view, listed);
    assert!(listed.iter().any(|f| f.0 == "mpi_latesender"), "{listed:?}");
}

#[test]
fn the_library_call_refuses_a_phase_or_region_that_is_not_there() {
    let rules = || RuleSet::load(&[]).unwrap();
    let trace = perfexpert::open(LS.as_ref()).unwrap();
    let opts = Options {
        phase: Some(99),
        ..Options::new(rules())
    };
    match perfexpert::analyse_trace(trace, opts, |_| ()) {
        Err(Refusal::NoSuchPhase { k: 99, phases }) => assert!(phases > 1),
        other => panic!("{:?}", other.err()),
    }
    let trace = perfexpert::open(LS.as_ref()).unwrap();
    let opts = Options {
        what_if: vec!["no_such_region".to_string()],
        ..Options::new(rules())
    };
    match perfexpert::analyse_trace(trace, opts, |_| ()) {
        Err(Refusal::NoSuchRegion(r)) => assert_eq!(r, "no_such_region"),
        other => panic!("{:?}", other.err()),
    }
}

/// (stdout, stderr) of `perfexpert ARGS` with `RUST_LOG` as given (unset with `None`).
fn run_with_log(args: &[&str], rust_log: Option<&str>) -> (String, String) {
    let mut c = bin();
    c.current_dir(env!("CARGO_MANIFEST_DIR")).args(args);
    match rust_log {
        Some(v) => c.env("RUST_LOG", v),
        None => c.env_remove("RUST_LOG"),
    };
    let o = c.output().unwrap();
    assert!(o.status.success(), "{args:?}");
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// The stage names of the `perfexpert: NAME  SECS s  FIELDS` lines of `-v`.
fn stages(err: &str) -> Vec<String> {
    common::stages_in_order(
        err.lines()
            .filter_map(|l| l.strip_prefix("perfexpert: "))
            .filter(|l| l.contains(" s"))
            .map(|l| l.split("  ").next().unwrap().trim().to_string())
            .collect(),
    )
}

#[test]
fn verbose_prints_the_stages_on_stderr_and_leaves_stdout_alone() {
    for format in ["text", "json"] {
        let plain = run_with_log(&["run", "-q", "--format", format, LS], None);
        assert_eq!(plain.1, "", "nothing on stderr by default");
        let v = run_with_log(&["-v", "run", "-q", "--format", format, LS], None);
        assert_eq!(v.0, plain.0, "-v does not change stdout");
        assert!(!v.1.contains("timings:"));
        let names = stages(&v.1);
        let mut want = vec![
            "rules",
            "read",
            "replay",
            "rules evaluated",
            "scores and report",
        ];
        if format == "json" {
            want.insert(3, "phase detection");
            want.insert(5, "root causes");
            // the extras, each its own stage
            want.extend([
                "phases",
                "traffic matrix",
                "critical path",
                "wait matrix",
                "overheads",
            ]);
        }
        want.push("written");
        assert_eq!(names, want, "{}", v.1);
        assert!(
            v.1.contains("format=OTF2") && v.1.contains("events=92"),
            "{}",
            v.1
        );
        assert!(v.1.contains("call_paths=") && v.1.contains("messages_matched="));
        // -v after the subcommand too; RUST_LOG alone does the same
        let after = run_with_log(&["run", "-v", "-q", "--format", format, LS], None);
        assert_eq!(stages(&after.1), want);
        let env = run_with_log(
            &["run", "-q", "--format", format, LS],
            Some("perfexpert=info"),
        );
        assert_eq!(env.0, plain.0);
        assert_eq!(stages(&env.1), want);
        assert!(!env.1.contains("timings:"));
    }
    // -vv: the phases are described from the whole analysis, not analysed one by one
    let vv = run_with_log(&["-vv", "run", "-q", "--format", "json", LS], None);
    assert!(
        vv.1.contains("phases") && !vv.1.contains("perfexpert:   phase "),
        "{}",
        vv.1
    );
    // every subcommand takes -v: `info` reads the trace
    let info = run_with_log(&["info", "-v", LS], None);
    assert_eq!(stages(&info.1), ["read"], "{}", info.1);
    assert_eq!(info.0, run_with_log(&["info", LS], None).0);
}

#[test]
fn timings_and_verbose_are_views_of_the_same_stages() {
    let (out, err) = run_with_log(&["run", "-q", "-v", "--timings", LS], None);
    let timed = common::stages_in_order(
        err.lines()
            .filter_map(|l| l.strip_prefix("timings: "))
            .map(|l| l.split("  ").next().unwrap().trim().to_string())
            .collect(),
    );
    assert_eq!(
        timed,
        [
            "rules",
            "read",
            "replay",
            "rules evaluated",
            "scores and report",
            "written"
        ],
        "{err}"
    );
    assert_eq!(stages(&err), timed, "{err}");
    assert_eq!(out, run_with_log(&["run", "-q", LS], None).0);
}
