//! A binary built without the `mpi` feature refuses `run --mpi` in one line (issue 24).
#![cfg(not(feature = "mpi"))]

#[test]
fn run_mpi_says_the_feature_is_missing() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_perfexpert"))
        .args(["run", "--mpi", "testdata/scorep/ls"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("built without MPI") && err.contains("--features mpi"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}
