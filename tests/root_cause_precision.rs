//! The precision of the root causes (docs/report-json.md `root_causes.causes`): each cause
//! carries the severity-weighted mean precision of the findings of the wait state it
//! explains, so the delay costs of waits at collectives rebuilt from Paje states (SMPI) are
//! marked as uncertain as those waits, in the JSON, the text and the HTML report.

mod common;

use serde_json::Value;

/// `run --format json` of `trace` (a path under the project root), parsed.
fn json_of(trace: &str, name: &str) -> Value {
    let out =
        std::env::temp_dir().join(format!("perfexpert-rcp-{}-{name}.json", std::process::id()));
    let o = out.to_string_lossy().into_owned();
    let (code, _, err) = common::perfexpert(&["run", "-q", "--format", "json", "-o", &o, trace]);
    assert_eq!(code, 0, "{trace}: {err}");
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).ok();
    j
}

/// Every cause's precision is the severity-weighted mean precision of its wait state's
/// findings; returns the causes' (wait state, precision).
fn check_causes(j: &Value) -> Vec<(String, f64)> {
    let findings = j["findings"].as_array().unwrap();
    let causes = j["root_causes"]["causes"].as_array().unwrap();
    assert!(!causes.is_empty());
    causes
        .iter()
        .map(|c| {
            let w = c["wait_state"].as_str().unwrap();
            let (mut ps, mut s) = (0.0, 0.0);
            for f in findings.iter().filter(|f| f["metric"] == w) {
                let sev = f["severity"].as_f64().unwrap();
                if sev > 0.0 {
                    ps += sev * f["precision"].as_f64().unwrap();
                    s += sev;
                }
            }
            let want = if s > 0.0 { ps / s } else { 1.0 };
            let got = c["precision"].as_f64().unwrap();
            assert!(
                (got - want).abs() < 1e-12,
                "{w}: precision {got}, findings say {want}"
            );
            (w.to_string(), got)
        })
        .collect()
}

#[test]
fn causes_of_waits_at_a_reconstructed_barrier_have_its_lowered_precision() {
    let trace = "testdata/smpi/barrier_imbalance/trace.paje";
    let j = json_of(trace, "smpi");
    let causes = check_causes(&j);
    // the barrier is rebuilt from Paje states: rho = 0.5 for all of its waits
    let barrier: Vec<f64> = (causes.iter())
        .filter(|c| c.0 == "mpi_barrier_wait")
        .map(|c| c.1)
        .collect();
    assert!(!barrier.is_empty(), "{causes:?}");
    assert!(barrier.iter().all(|&p| p <= 0.5 + 1e-12), "{causes:?}");
    let (code, out, err) = common::perfexpert(&["run", "--root-causes", trace]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("through waits it propagated; precision 0.50)"),
        "the text report names the lowered precision:\n{out}"
    );
}

#[test]
fn causes_of_measured_waits_keep_the_findings_precision() {
    let j = json_of("testdata/scorep/ls", "ls");
    let causes = check_causes(&j);
    // Score-P's own MPI records: nothing reconstructed, the rho factor is 1
    let findings = j["findings"].as_array().unwrap();
    for (w, _) in &causes {
        assert!(
            (findings.iter())
                .filter(|f| f["metric"] == w.as_str())
                .all(|f| f["rho"].as_f64() == Some(1.0)),
            "{w}"
        );
    }
}
