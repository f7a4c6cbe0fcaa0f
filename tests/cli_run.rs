//! `perfexpert run` and `perfexpert rules` from the command line: outputs, options, and bad
//! requests (exit status 2, one line naming what is wrong).

mod common;

use common::perfexpert;

use std::path::Path;

const LS: &str = "testdata/scorep/ls/traces.otf2";

#[test]
fn text_report_names_the_late_sender_where_it_happens() {
    let (code, out, _) = perfexpert(&["run", LS]);
    assert_eq!(code, 0);
    assert!(out.contains("MPI Late Sender"), "{out}");
    assert!(out.contains("at main/late_sender_phase/MPI_Recv"), "{out}");
    // the README's claims: no colour when stdout is not a terminal
    assert!(!out.contains('\x1b'));
}

#[test]
fn json_report_has_the_documented_shape() {
    let (code, out, _) = perfexpert(&["run", "--format", "json", LS]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format_version"], 1);
    for key in [
        "trace",
        "metrics",
        "callpaths",
        "locations",
        "values",
        "findings",
        "diagnostics",
    ] {
        assert!(!v[key].is_null(), "missing {key}");
    }
    assert_eq!(v["trace"]["events"], 92);
    assert_eq!(v["diagnostics"]["unmatched_sends"], 0);
    // metric values are inclusive along the metric tree: late sender ≤ point-to-point
    let total = |id: &str| -> f64 {
        v["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["metric"] == id)
            .map(|x| x["value"].as_f64().unwrap())
            .sum()
    };
    assert!(total("mpi_latesender") > 0.9 && total("mpi_latesender") <= total("mpi_point2point"));
}

#[test]
fn several_formats_go_to_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let (code, stdout, err) = perfexpert(&["run", "--format", "text,json", "-o", o, LS]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(text.contains("Late Sender"));
    // the terminal gets the summary too, the same text as the file
    assert_eq!(stdout, text);
    // without text among the formats, nothing goes to the terminal
    let out2 = dir.path().join("out2");
    let (code, stdout, err) = perfexpert(&[
        "run",
        "--format",
        "json,cubex",
        "-o",
        out2.to_str().unwrap(),
        LS,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(out2.join("report.cubex").is_file());
    let json = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(json.contains("\"format_version\": 1"));
}

#[test]
fn options_show_the_call_tree_and_a_metric_per_rank() {
    let (code, out, _) = perfexpert(&["run", "--call-tree", "--metric", "mpi_latesender", LS]);
    assert_eq!(code, 0);
    assert!(out.contains("Call tree (inclusive time)"));
    assert!(out.contains("mpi_latesender per call path and rank"));
    assert!(out.contains("rank 3"));
}

#[test]
fn bad_requests_exit_2_with_one_line() {
    let unwritable = Path::new("/proc/perfexpert-no-such-dir/report.json");
    for (args, says) in [
        (
            vec!["run", "--metric", "no_such_metric", LS],
            "no such metric",
        ),
        (vec!["run", "--format", "pdf", LS], "invalid value 'pdf'"),
        (
            vec![
                "run",
                "--format",
                "json",
                "-o",
                unwritable.to_str().unwrap(),
                LS,
            ],
            "cannot create",
        ),
        (vec!["run", "no/such/trace.otf2"], "cannot open"),
        (
            vec!["run", "--rules", "no/such/rules", LS],
            "no such rule file",
        ),
        (vec!["rules", "show", "no_such_metric"], "no metric"),
        (vec!["rules", "check"], "name at least one rule file"),
    ] {
        let (code, out, err) = perfexpert(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: partial output {out}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_bad_rule_is_reported_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        "id = \"bad_rule\"\nname = \"Bad\"\nparent = \"mpi_latesender\"\nunit = \"sec\"\n\
         description = \"d\"\ndiagnosis = \"d\"\non = \"receive\"\nseverity = \"R.time + S.bogus\"\nat = \"R\"\n",
    )
    .unwrap();
    let (code, _, err) = perfexpert(&["rules", "check", f.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    // line 8, column 24: the `bogus` of `S.bogus` inside the quoted expression
    assert!(
        err.contains("bad.toml:8:24: an event has no field `bogus`"),
        "{err}"
    );
}

#[test]
fn rules_list_and_show_describe_the_catalogue() {
    let (code, out, _) = perfexpert(&["rules", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("mpi_latesender_wo") && out.contains("rules/mpi/mpi_latesender.toml"));
    let (code, out, _) = perfexpert(&["rules", "show", "mpi_latereceiver"]);
    assert_eq!(code, 0);
    assert!(out.contains("What to do about it"));
    // the root-cause and critical-path metrics are rule files too: listed and shown
    let (_, out, _) = perfexpert(&["rules", "list"]);
    assert!(
        out.contains("delay_latesender ") && out.contains("rules/rootcause/"),
        "{out}"
    );
    let (code, out, _) = perfexpert(&["rules", "show", "delay_latesender"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("computed as: root-cause metric, the short-term delay costs of the waits of `mpi_latesender`"),
        "{out}"
    );
}

#[test]
fn command_line_errors_are_one_line_with_exit_2() {
    for (args, says) in [
        (
            vec!["run", LS, "--format", "pdf"],
            "invalid value 'pdf' for '--format <FORMAT>' [possible values: text, json, cubex, html]",
        ),
        (
            vec!["run"],
            "required arguments were not provided: <TRACE>; usage: perfexpert run",
        ),
        (
            vec!["run", LS, "--bogus"],
            "unexpected argument '--bogus' found; tip:",
        ),
        (
            vec!["frobnicate"],
            "unrecognized subcommand 'frobnicate'; usage: perfexpert <COMMAND>",
        ),
    ] {
        let (code, out, err) = perfexpert(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("perfexpert: ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
    let (code, out, _) = perfexpert(&["--version"]);
    assert_eq!((code, out.trim()), (0, "perfexpert 0.1.0"));
}

#[test]
fn timings_name_every_stage_on_stderr_and_leave_the_report_alone() {
    let t = LS;
    let (code, plain, _) = perfexpert(&["run", "-q", t]);
    assert_eq!(code, 0);
    let (code, out, err) = perfexpert(&["run", "-q", "--timings", "--format", "json", t]);
    assert_eq!(code, 0, "{err}");
    let stages = common::stages_in_order(
        err.lines()
            .filter_map(|l| l.strip_prefix("timings: "))
            .map(|l| l.split("  ").next().unwrap_or("").trim().to_string())
            .collect(),
    );
    assert_eq!(
        stages,
        [
            "rules",
            "read",
            "replay",
            "phase detection",
            "rules evaluated",
            "root causes",
            "scores and report",
            "phases",
            "traffic matrix",
            "critical path",
            "wait matrix",
            "overheads",
            "written"
        ],
        "{err}"
    );
    assert!(
        err.lines()
            .all(|l| l.contains(" s  (total ") && l.contains("peak RSS")),
        "{err}"
    );
    assert!(out.starts_with('{'), "the report still goes to stdout");
    let (_, text, _) = perfexpert(&["run", "-q", "--timings", t]);
    assert_eq!(text, plain, "--timings does not change the text report");
}

#[test]
fn reports_are_written_under_a_temporary_name_and_renamed_when_complete() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all");
    let (code, _, err) = perfexpert(&[
        "run",
        "-q",
        "--format",
        "text,json,cubex,html",
        "-o",
        out.to_str().unwrap(),
        LS,
    ]);
    assert_eq!(code, 0, "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["report.cubex", "report.html", "report.json", "report.txt"],
        "no temporary file may be left behind"
    );
    // a report that cannot be put in place (its name is a directory) fails with one line
    // and leaves neither the temporary file nor anything under the name
    let blocked = dir.path().join("blocked.json");
    std::fs::create_dir(&blocked).unwrap();
    let (code, stdout, err) = perfexpert(&[
        "run",
        "-q",
        "--format",
        "json",
        "-o",
        blocked.to_str().unwrap(),
        LS,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(stdout.is_empty());
    assert!(err.contains("blocked.json: cannot create"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    assert_eq!(std::fs::read_dir(&blocked).unwrap().count(), 0);
}

#[test]
fn a_matrix_csv_that_cannot_be_put_in_place_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // the name of the wait matrix is taken by a directory
    std::fs::create_dir(dir.path().join("wait_matrix.csv")).unwrap();
    let (code, out, err) = perfexpert(&[
        "run",
        "-q",
        "--matrices-csv",
        dir.path().to_str().unwrap(),
        LS,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "partial output {out}");
    assert!(err.contains("wait_matrix.csv: cannot create"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let partial = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("partial")
        })
        .count();
    assert_eq!(partial, 0, "a temporary file was left behind");
}
