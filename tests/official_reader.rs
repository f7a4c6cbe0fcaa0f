//! Live cross-check with the official reader: `otf2-print` (Debian's otf2-tools, installed by
//! .ci/run) on every OTF2 trace in testdata/ must count the same events per kind and per
//! location as `perfexpert info --json`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn anchors(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            anchors(&p, out);
        } else if p.extension().is_some_and(|x| x == "otf2") {
            out.push(p);
        }
    }
}

/// (events per kind, events per location) as otf2-print counts them (formats.md A.11).
type Counts = (BTreeMap<String, u64>, BTreeMap<String, u64>);

fn otf2_print(anchor: &Path) -> Counts {
    let out = Command::new("otf2-print").arg(anchor).output().unwrap();
    assert!(
        out.status.success(),
        "otf2-print failed on {}",
        anchor.display()
    );
    let mut kinds = BTreeMap::new();
    let mut locs = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let is_event = f.len() >= 3
            && f[0].starts_with(|c: char| c.is_ascii_uppercase())
            && f[0]
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && f[1].chars().all(|c| c.is_ascii_digit())
            && f[2].chars().all(|c| c.is_ascii_digit());
        if is_event {
            *kinds.entry(f[0].to_string()).or_default() += 1;
            *locs.entry(f[1].to_string()).or_default() += 1;
        }
    }
    (kinds, locs)
}

fn ours(anchor: &Path) -> Counts {
    let out = common::bin()
        .arg("info")
        .arg("--json")
        .arg(anchor)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let map = |k: &str| -> BTreeMap<String, u64> {
        v[k].as_object()
            .unwrap()
            .iter()
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
            .filter(|(_, n)| *n > 0)
            .collect()
    };
    (map("events_per_kind"), map("events_per_location"))
}

#[test]
fn otf2_print_counts_what_we_count() {
    if Command::new("otf2-print")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var_os("CI").is_none(),
            "otf2-print is missing in CI: .ci/run installs otf2-tools"
        );
        eprintln!("SKIPPED: otf2-print is not installed (apt-get install otf2-tools)");
        return;
    }
    let mut all = Vec::new();
    anchors(&common::testdata(""), &mut all);
    all.sort();
    assert!(
        all.len() >= 11,
        "found {} OTF2 traces in testdata",
        all.len()
    );
    for a in &all {
        assert_eq!(ours(a), otf2_print(a), "{}", a.display());
    }
    eprintln!("{} traces agree with otf2-print", all.len());
}
