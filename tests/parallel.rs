//! Speed work never changes a result (issue 12, points 4 and 5): a generated trace with more
//! locations than the analysis handles at once (it takes locations a few at a time, two per
//! thread), with late senders, late receivers, wrong-order messages and collective waits,
//! gives byte-identical JSON reports with 1, 2 and 3 threads.

mod common;

#[test]
fn json_report_is_identical_for_1_2_and_3_threads_on_a_generated_trace() {
    let Some(py) = common::venv_python("generating a 13-rank mixed trace") else {
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mixed13");
    let o = std::process::Command::new(py)
        .arg(root.join("tools/gen_trace.py"))
        .arg(&out)
        .args(["--ranks", "13", "--iterations", "40", "--pattern", "mixed"])
        .args(["--imbalance", "0.7", "--jitter", "0.3", "--seed", "12"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = out.join("traces.otf2");
    let run = |threads: &str| {
        let o = common::bin()
            .args(["run", "--format", "json"])
            .arg(&trace)
            .env("RAYON_NUM_THREADS", threads)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        o.stdout
    };
    let one = run("1");
    let json: serde_json::Value = serde_json::from_slice(&one).unwrap();
    // the trace has what the passes must keep in order: wait states of several kinds
    let findings: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["metric"].as_str())
        .collect();
    for want in [
        "mpi_latesender",
        "mpi_latesender_wo",
        "mpi_latereceiver",
        "mpi_wait_nxn",
        "mpi_barrier_wait",
    ] {
        assert!(findings.contains(&want), "{want} not in {findings:?}");
    }
    assert_eq!(one, run("2"), "1 vs 2 threads");
    assert_eq!(one, run("3"), "1 vs 3 threads");
}
