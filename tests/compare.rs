//! `perfexpert compare A B` from the command line: a run against itself, two different runs,
//! bad input (one line, exit 2), `--map`, the JSON fields of docs/compare-json.md, the HTML
//! page (links resolve; loads in headless chromium without console errors), and the
//! `--fail-on` gate with its JUnit XML. The scores' optimality is judged in compare_judge.rs.

mod common;

use common::perfexpert;
use std::path::{Path, PathBuf};

const M2: &str = "testdata/scorep/mixed2";
const M8: &str = "testdata/scorep/mixed8";

fn json_of(args: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    let mut a = vec![
        "compare",
        "-q",
        "--format",
        "json",
        "-o",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(args);
    let (code, stdout, err) = perfexpert(&a);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.is_empty(), "-o: nothing on stdout");
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

#[test]
fn a_run_against_itself_has_no_edits_and_no_time_differences() {
    let (code, out, err) = perfexpert(&["compare", M8, M8]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("similarity 100.00 %"), "{out}");
    assert!(out.contains("no edits"), "{out}");
    assert!(
        out.contains("Time of matched calls: no difference"),
        "{out}"
    );
    assert!(
        out.contains("Wait-state findings: none appeared, vanished or moved"),
        "{out}"
    );
    assert!(err.is_empty(), "no progress bar off a terminal: {err}");
    let v = json_of(&[M8, M8]);
    assert_eq!(v["format_version"], 1);
    assert_eq!(v["scoring"]["match"], 2);
    assert_eq!(v["scoring"]["mismatch"], -1);
    assert_eq!(v["scoring"]["gap"], -1);
    assert_eq!(v["scoring"]["mode"], "global");
    let locs = v["locations"].as_array().unwrap();
    assert_eq!(locs.len(), 8);
    for l in locs {
        let n = l["a_symbols"].as_i64().unwrap();
        assert!(n > 0);
        assert_eq!(l["score"].as_i64().unwrap(), 2 * n);
        assert_eq!(l["optimal"], true);
        assert_eq!(l["a_location"], l["b_location"]);
        assert!(l["edits"].as_array().unwrap().is_empty());
    }
    for d in v["time_differences"].as_array().unwrap() {
        assert_eq!(d["diff_s"].as_f64().unwrap(), 0.0);
    }
    let f = &v["findings"];
    assert!(f["appeared"].as_array().unwrap().is_empty());
    assert!(f["vanished"].as_array().unwrap().is_empty());
    assert!(!f["stayed"].as_array().unwrap().is_empty());
}

#[test]
fn two_runs_list_unpaired_locations_edits_and_time_differences() {
    let v = json_of(&[M2, M8]);
    assert_eq!(v["locations"].as_array().unwrap().len(), 2);
    assert_eq!(v["unpaired_b"].as_array().unwrap().len(), 6);
    let rank1 = &v["locations"][1];
    assert_eq!(rank1["rank"], 1);
    let e = &rank1["edits"][0];
    for k in [
        "op", "a", "b", "a_region", "b_region", "callpath", "a_time_s", "b_time_s",
    ] {
        assert!(e.get(k).is_some(), "edit field {k}: {e}");
    }
    assert_eq!(e["op"], "insert");
    assert_eq!(e["b_region"], "MPI_Send");
    let d = v["time_differences"].as_array().unwrap();
    assert!(!d.is_empty());
    let abs: Vec<f64> = d
        .iter()
        .map(|x| x["diff_s"].as_f64().unwrap().abs())
        .collect();
    assert!(abs.windows(2).all(|w| w[0] >= w[1]), "ranked by |B − A|");
    for x in d {
        let (a, b, diff) = (
            x["a_s"].as_f64().unwrap(),
            x["b_s"].as_f64().unwrap(),
            x["diff_s"].as_f64().unwrap(),
        );
        assert!((b - a - diff).abs() < 1e-12);
    }
    // --map pairs rank 1 of A with rank 5 of B; rank 0 still pairs by rank
    let v = json_of(&[M2, M8, "--map", "1=5"]);
    let pairs: Vec<(String, String)> = v["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["a_location"].as_str().unwrap().to_string(),
                l["b_location"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        pairs.contains(&(
            "MPI Rank 1/Master thread".into(),
            "MPI Rank 5/Master thread".into()
        )),
        "{pairs:?}"
    );
    assert_eq!(pairs.len(), 2);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["compare", "no/such/trace", M8], "no/such/trace"),
        (&["compare", M8, "Cargo.toml"], "Cargo.toml"),
        (
            &["compare", M2, M8, "--score", "2,x,-1"],
            "'x' is not an integer",
        ),
        (
            &["compare", M2, M8, "--score", "2,-1,1"],
            "gap score is positive",
        ),
        (
            &["compare", M2, M8, "--score", "1,1,-1"],
            "not above the mismatch",
        ),
        (&["compare", M2, M8, "--score", "2,-1"], "not three values"),
        (
            &["compare", M2, M8, "--map", "0=99"],
            "has no location '99'",
        ),
        (
            &["compare", M2, M8, "--map", "nowhere=0"],
            "has no location 'nowhere'",
        ),
        (&["compare", M2, M8, "--map", "0"], "expected A=B"),
        (
            &["compare", M2, M8, "--fail-on", "time:+abc"],
            "'abc' is not a number",
        ),
        (
            &["compare", M2, M8, "--fail-on", "no_region:+1s"],
            "no_region",
        ),
        (&["compare", M2, M8, "--format", "junit"], "at least one"),
        (&["compare", M2, M8, "--alphabet", "words"], "words"),
    ];
    for (args, what) in cases {
        let (code, out, err) = perfexpert(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
    }
}

#[test]
fn calls_and_messages_tell_peers_apart() {
    let v = json_of(&[M8, M8, "--alphabet", "calls+messages"]);
    assert_eq!(v["alphabet"], "calls+messages");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("s.txt");
    let (code, out, err) = perfexpert(&[
        "compare",
        M2,
        M8,
        "--alphabet",
        "calls+messages",
        "--top",
        "0",
        "--dump-symbols",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // rank 1's MPI_Send to a peer: the peer and tag are part of the symbol
    assert!(out.contains("MPI_Send(peer "), "{out}");
}

fn hrefs_resolve(html: &str) {
    let ids: std::collections::HashSet<&str> = html
        .split("id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    let mut n = 0;
    for h in html.split("href=\"#").skip(1) {
        let target = h.split('"').next().unwrap();
        assert!(ids.contains(target), "link to #{target} has no target");
        n += 1;
    }
    assert!(n > 0, "the strips link to the edits");
}

fn chromium() -> Option<PathBuf> {
    common::chromium("the comparison page was not checked in a browser")
}

#[test]
fn the_html_page_links_its_strips_to_the_edits_and_loads_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("c.html");
    let (code, _, err) = perfexpert(&[
        "compare",
        M2,
        M8,
        "-q",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "self-contained"
    );
    assert_eq!(html.matches("<svg").count(), 2, "one strip per pair");
    hrefs_resolve(&html);
    let Some(chrome) = chromium() else { return };
    let shot = dir.path().join("c.png");
    let url = format!("file://{}", page.display());
    let shot_arg = format!("--screenshot={}", shot.display());
    let (_, console, err) =
        common::headless(&chrome, &url, &["--window-size=1200,1600", &shot_arg]);
    assert!(console.is_empty(), "{console:?}");
    assert!(shot.is_file(), "no screenshot: {err}");
    let size = std::fs::metadata(&shot).unwrap().len();
    assert!(size > 10_000, "a blank page? {size} bytes");
}

#[test]
fn fail_on_matched_call_time_exits_1_with_one_line_per_breach() {
    // mixed8's matched calls take longer than mixed2's: main (the outermost) grows
    let (code, out, err) = perfexpert(&[
        "compare",
        M2,
        M8,
        "--fail-on",
        "time:+10%",
        "--fail-on",
        "MPI_Barrier:+1ms",
        "--fail-on",
        "time:+1000s",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("perfexpert compare"),
        "the report is still written"
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].starts_with("perfexpert: fail-on: time: "), "{err}");
    assert!(lines[0].contains("past the threshold time:+10%"), "{err}");
    assert!(lines[1].contains("MPI_Barrier:+1ms"), "{err}");
    let (code, _, err) = perfexpert(&["compare", M8, M8, "--fail-on", "time:+0s"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty());
    // JUnit: one test case per threshold
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("j.xml");
    let (code, _, _) = perfexpert(&[
        "compare",
        M2,
        M8,
        "--fail-on",
        "time:+10%",
        "--fail-on",
        "time:+1000s",
        "--format",
        "junit",
        "-o",
        x.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let xml = std::fs::read_to_string(&x).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
    assert!(xml.contains(r#"tests="2" failures="1""#), "{xml}");
}

#[test]
fn the_readme_example_is_the_real_output() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let cmd = "$ perfexpert compare testdata/scorep/mixed2 testdata/scorep/mixed8 --top 5\n";
    let start = readme.find(cmd).expect("the README shows the example") + cmd.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let (code, out, err) = perfexpert(&["compare", M2, M8, "--top", "5"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(shown, out);
}

#[test]
fn a_progress_display_on_a_terminal_and_none_with_quiet() {
    // util-linux `script` runs the command on a pseudo-terminal
    if !Path::new("/usr/bin/script").is_file() {
        eprintln!("SKIPPED: no /usr/bin/script to run perfexpert on a terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.json");
    let run = |quiet: &str| {
        let cmd = format!(
            "{} compare {M2} {M8} {quiet} --format json -o {}",
            env!("CARGO_BIN_EXE_perfexpert"),
            out.display()
        );
        let o = std::process::Command::new("/usr/bin/script")
            .args(["-qec", &cmd, "/dev/null"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let shown = run("");
    assert!(
        shown.contains("aligning") || shown.contains("reading and analysing"),
        "{shown:?}"
    );
    assert_eq!(run("--quiet"), "");
}
