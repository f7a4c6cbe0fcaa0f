//! Reviewed output: insta snapshots of the text and JSON reports of every trace in testdata/.
//! A changed snapshot in a commit is a claim that the new output is right.

mod common;

fn traces() -> Vec<(String, std::path::PathBuf)> {
    common::shipped_traces()
}

fn run(args: &[&str], trace: &std::path::Path) -> String {
    let o = common::bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("run")
        .args(args)
        .arg(trace)
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn text_reports() {
    for (name, trace) in traces() {
        insta::assert_snapshot!(format!("text_{name}"), run(&["--top", "3"], &trace));
    }
}

#[test]
fn json_reports() {
    for (name, trace) in traces() {
        insta::assert_snapshot!(format!("json_{name}"), run(&["--format", "json"], &trace));
    }
}

#[test]
fn reports_do_not_depend_on_the_thread_count() {
    // the first six, and the threaded ones (teams, locks and barrier instances are grouped
    // across locations)
    let all = traces();
    let threaded = all.iter().filter(|(n, _)| n.starts_with("scorep-omp"));
    for (_, trace) in all.iter().take(6).chain(threaded) {
        let one = common::bin()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["run", "--format", "json"])
            .arg(trace)
            .env("RAYON_NUM_THREADS", "1")
            .output()
            .unwrap();
        let two = common::bin()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["run", "--format", "json"])
            .arg(trace)
            .env("RAYON_NUM_THREADS", "2")
            .output()
            .unwrap();
        assert_eq!(one.stdout, two.stdout, "{}", trace.display());
    }
}
