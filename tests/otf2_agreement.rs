//! Agreement with the official OTF2 reader (otf2-print 3.0 and the `otf2` Python bindings):
//! every OTF2 trace in ../shared/traces has an expected.json with their counts; we must
//! agree exactly on events in total, per kind and per location, first/last timestamp and
//! timer resolution (issue: "Every trace that the official reader accepts, we read").

mod common;

use perfexpert::cli::info::Info;
use serde_json::Value;
use std::path::Path;

fn otf2_traces(shared: &Path) -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for group in ["traces/public", "traces/scorep", "traces/scorep-omp"] {
        let Ok(rd) = std::fs::read_dir(shared.join(group)) else {
            continue;
        };
        for e in rd.flatten() {
            let exp = e.path().join("expected.json");
            let Ok(text) = std::fs::read_to_string(&exp) else {
                continue;
            };
            let v: Value = serde_json::from_str(&text).expect("expected.json is JSON");
            if v["format"].as_str().is_some_and(|f| f.starts_with("OTF2")) {
                dirs.push(e.path());
            }
        }
    }
    dirs.sort();
    dirs
}

fn check(dir: &Path) -> Vec<String> {
    let exp: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let anchor = dir.join(exp["anchor_file"].as_str().unwrap_or("traces.otf2"));
    let trace = match perfexpert::open(&anchor) {
        Ok(t) => t,
        Err(e) => return vec![format!("{}: read failed: {e}", dir.display())],
    };
    let info = Info::of(&trace);
    let mut bad = Vec::new();
    let mut eq = |what: &str, ours: Value, theirs: &Value| {
        if !theirs.is_null() && &ours != theirs {
            bad.push(format!(
                "{}: {what}: ours {ours}, official {theirs}",
                dir.display()
            ));
        }
    };
    eq("events", info.events.into(), &exp["events_total"]);
    eq(
        "events per kind",
        serde_json::to_value(&info.events_per_kind).unwrap(),
        &exp["events_per_kind"],
    );
    eq("locations", info.locations.len().into(), &exp["locations"]);
    eq(
        "first timestamp",
        info.first_timestamp.into(),
        &exp["first_timestamp"],
    );
    eq(
        "last timestamp",
        info.last_timestamp.into(),
        &exp["last_timestamp"],
    );
    eq(
        "timer resolution",
        info.timer_resolution.into(),
        &exp["timer_resolution"],
    );
    if let Some(per) = exp["events_per_location"].as_object() {
        eq(
            "events per location",
            serde_json::to_value(&info.events_per_location).unwrap(),
            &Value::Object(per.clone()),
        );
    }
    if let Some(per) = exp["per_location"].as_array() {
        for l in per {
            let id = l["ref"].as_u64().unwrap();
            let ours = info.locations.iter().find(|x| x.id == id).map(|x| x.events);
            eq(
                &format!("events of location {id}"),
                ours.into(),
                &l["events_read"],
            );
        }
    }
    bad
}

#[test]
fn generated_fixtures_agree_with_the_official_reader() {
    let mut dirs: Vec<_> = std::fs::read_dir(common::testdata("generated"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").exists())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 5, "found {} generated fixtures", dirs.len());
    let bad: Vec<String> = dirs.iter().flat_map(|d| check(d)).collect();
    assert!(bad.is_empty(), "disagreements:\n{}", bad.join("\n"));
}

#[test]
fn every_otf2_trace_agrees_with_the_official_reader() {
    let Some(shared) = common::shared() else {
        return;
    };
    let dirs = otf2_traces(&shared);
    assert!(
        dirs.len() >= 15,
        "expected the 4 public and 11+ Score-P OTF2 traces, found {}",
        dirs.len()
    );
    let bad: Vec<String> = dirs.iter().flat_map(|d| check(d)).collect();
    assert!(bad.is_empty(), "disagreements:\n{}", bad.join("\n"));
    eprintln!("{} OTF2 traces agree with the official reader", dirs.len());
}
