//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod otf2_builder;

use std::path::{Path, PathBuf};

/// `../shared` beside the project (or `$PERFEXPERT_SHARED`), if it is there. Tests that need
/// it say so on stderr and skip when it is absent.
pub fn shared() -> Option<PathBuf> {
    let p = match std::env::var_os("PERFEXPERT_SHARED") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    };
    if p.join("traces").is_dir() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent (the reference traces live in ../shared beside the project; \
             set PERFEXPERT_SHARED to point elsewhere)",
            p.display()
        );
        None
    }
}

pub fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(rel)
}

/// The perfexpert binary built for these tests.
pub fn bin() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_perfexpert"))
}

/// Every OTF2 trace shipped in testdata/scorep, testdata/scorep-omp and testdata/generated:
/// (group_name, path relative to the project root, as a user there would type it), sorted.
pub fn shipped_traces() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for group in ["scorep", "scorep-omp", "generated"] {
        for e in std::fs::read_dir(testdata(group)).unwrap().flatten() {
            if e.path().join("traces.otf2").exists() {
                let name = format!("{group}_{}", e.file_name().to_string_lossy());
                let rel = Path::new("testdata")
                    .join(group)
                    .join(e.file_name())
                    .join("traces.otf2");
                out.push((name, rel));
            }
        }
    }
    out.sort();
    out
}
