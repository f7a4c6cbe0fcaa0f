//! `--format html`, `--critical-path`, `--what-if` and `--matrices-csv` from the command line;
//! the HTML page checked in a real headless browser (Debian's `chromium`, installed by
//! .ci/run): it loads without console errors and renders (a screenshot is taken).

mod common;

use common::perfexpert;

use std::path::Path;

const LS: &str = "testdata/scorep/ls";

#[test]
fn what_if_prints_the_new_path_length() {
    let (code, out, err) = perfexpert(&["run", LS, "--what-if", "late_sender_phase"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Critical path: 893.774 ms of a 893.774 ms run"),
        "{out}"
    );
    // rank 2's 600 ms in late_sender_phase is the critical work; without it the longest
    // chain is rank 1's MPI_Init (293.4 ms; scout's time) and its short rest: the 300 ms
    // ranks 0 and 1 wait in MPI_Finalize are waiting, not work
    assert!(
        out.contains("What if late_sender_phase took no time: critical path 293.594 ms"),
        "{out}"
    );
    let (code, out, _) = perfexpert(&["run", LS]);
    assert_eq!(code, 0);
    assert!(!out.contains("Critical path"), "only on request");
    let (code, out, _) = perfexpert(&["run", LS, "--critical-path"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Critical path:") && out.contains("on: rank 2"),
        "{out}"
    );
}

#[test]
fn an_unknown_what_if_region_exits_2_with_one_line() {
    let (code, out, err) = perfexpert(&["run", LS, "--what-if", "no_such_region"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--what-if no_such_region: no region of that name in testdata/scorep/ls"),
        "{err}"
    );
}

#[test]
fn matrices_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (code, _, err) = perfexpert(&["run", LS, "-q", "--matrices-csv", d]);
    assert_eq!(code, 0, "{err}");
    let wait = std::fs::read_to_string(dir.path().join("wait_matrix.csv")).unwrap();
    let lines: Vec<&str> = wait.lines().collect();
    assert_eq!(
        lines[0],
        "waiting_rank,waits_for_rank,time_s,percent_of_duration"
    );
    // ls: rank 1 waits 0.300 s for rank 0, rank 3 0.600 s for rank 2 (Scalasca's late
    // sender); ranks 0 and 1 wait 0.300 s in MPI_Finalize for rank 3, the last to arrive
    // (Scalasca's wait at finalize); rank 2's 14 µs there is below 0.1 % and hidden
    assert_eq!(lines.len(), 5, "{wait}");
    assert!(lines[1].starts_with("0,3,0.300053422,"), "{wait}");
    assert!(lines[2].starts_with("1,0,0.300163969,"), "{wait}");
    assert!(lines[3].starts_with("1,3,0.300012677,"), "{wait}");
    assert!(lines[4].starts_with("3,2,0.600190006,"), "{wait}");
    let traffic = std::fs::read_to_string(dir.path().join("traffic_matrix.csv")).unwrap();
    assert!(traffic.starts_with("communicator,from_rank,to_rank,count,bytes,rate_bytes_per_s\n"));
    assert!(
        traffic.lines().any(|l| l.starts_with("all,0,1,")),
        "{traffic}"
    );
    assert!(
        traffic
            .lines()
            .any(|l| l.starts_with("MPI_COMM_WORLD,0,1,")),
        "{traffic}"
    );
}

fn html_of(trace: &str, out: &Path) {
    let (code, _, err) = perfexpert(&[
        "run",
        trace,
        "-q",
        "--format",
        "html",
        "--what-if",
        "MPI_Init",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn the_html_page_is_self_contained() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    html_of(LS, &page);
    let h = std::fs::read_to_string(&page).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>"));
    for needle in [
        "src=\"http",
        "href=\"http",
        "src=\"//",
        "@import",
        "<link",
        "url(",
    ] {
        assert!(!h.contains(needle), "the page fetches something: {needle}");
    }
    for section in [
        "Top findings",
        "Phases",
        "Metric tree",
        "Critical path",
        "Wait-time matrix",
        "Message traffic",
        "Overhead classes",
        "What if",
    ] {
        assert!(h.contains(section), "{section} missing");
    }
    // the per-rank chart of the top finding (Late Sender) shows rank 3's 600 ms
    assert!(h.contains("600.190 ms"), "per-rank values");
    // its worst instance: rank 3's receive record at 493.565 ms after the clock offset, the
    // run's first event 4.699 µs after it; 200.084 ms late
    assert!(h.contains("Worst instances in time"), "timeline missing");
    assert!(
        h.contains("<title>#1 rank 3 at 493.560 ms: 200.084 ms</title>"),
        "worst instance"
    );
}

/// Load `page` in headless chromium: (console messages at warning level or above, whether
/// the screenshot was written).
fn load(chrome: &Path, page: &Path, shot: &Path) -> (Vec<String>, bool) {
    let url = format!("file://{}", page.display());
    let shot_arg = format!("--screenshot={}", shot.display());
    let (_, console, _) = common::headless(chrome, &url, &["--window-size=1200,2600", &shot_arg]);
    (console, shot.is_file())
}

#[test]
fn the_html_page_loads_in_chromium_without_console_errors() {
    let Some(chrome) = common::chromium("the HTML page was not checked in a browser") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // the check itself can fail: a page with a script error is caught
    let bad = dir.path().join("bad.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><script>no_such_function();</script></body></html>",
    )
    .unwrap();
    let (console, _) = load(&chrome, &bad, &dir.path().join("bad.png"));
    assert!(
        console.iter().any(|l| l.contains("no_such_function")),
        "a script error must be seen: {console:?}"
    );
    for trace in [LS, "testdata/scorep/npb_lu_S"] {
        let page = dir.path().join("report.html");
        html_of(trace, &page);
        let shot = dir.path().join("report.png");
        let _ = std::fs::remove_file(&shot);
        let (console, shot_written) = load(&chrome, &page, &shot);
        assert!(console.is_empty(), "{trace}: console: {console:?}");
        assert!(shot_written, "{trace}: no screenshot");
        // a blank page would be a tiny PNG
        let size = std::fs::metadata(&shot).unwrap().len();
        assert!(size > 20_000, "{trace}: screenshot of {size} bytes");
    }
}
