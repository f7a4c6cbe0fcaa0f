//! `perfexpert convert --to otf2` (docs/convert.md) on every trace `tools/reports.sh`
//! reports (testdata/ and `../shared/traces`: OTF2, OTF 1, Paje text): (a) the official
//! reader accepts the archive and counts, per location and kind, the events of the model
//! it was written from (`otf2-print`, Debian `otf2-tools`); (b) perfexpert reads it back
//! to the same JSON report, apart from the trace's path and format and the reader warnings
//! of the source (they name the source's files; the archive reads without any).
//!
//! Traces that cannot be converted, and why, are named in `REFUSED`; none is skipped
//! silently.

mod common;

use perfexpert::model::EventKind;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Traces `convert --to otf2` refuses (exit 2, one line), with the reason.
const REFUSED: &[(&str, &str)] = &[
    // perfexpert itself refuses to read it (as `run` does)
    ("pajengr-starpu-buggy-BAD", "unknown container"),
    // Paje traces in which nothing the model keeps happens: no locations, and the OTF2
    // library refuses an archive without locations
    ("pajeng-categories", "no locations"),
    ("pajeng-g5k", "no locations"),
    ("pajeng-ms", "no locations"),
    ("pajeng-poti-containers", "no locations"),
    ("pajeng-poti-events", "no locations"),
    ("pajeng-poti-links", "no locations"),
    ("pajeng-poti-variables", "no locations"),
    ("pajeng-simgrid-fg126", "no locations"),
];

/// Events per (location id, otf2-print's kind name) of the model of `path`.
fn model_counts(path: &Path) -> BTreeMap<(String, String), u64> {
    let t = perfexpert::formats::open(path).unwrap();
    let mut c = BTreeMap::new();
    for (l, ev) in t.defs.locations.iter().zip(&t.events) {
        for k in ev.kind.iter() {
            *c.entry((l.id.to_string(), k.print_name().to_string()))
                .or_default() += 1;
        }
    }
    c
}

/// Events per (location, kind) as `otf2-print` prints them; its stderr.
fn otf2_print(anchor: &Path) -> (BTreeMap<(String, String), u64>, String) {
    let out = Command::new("otf2-print").arg(anchor).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "otf2-print {}: {err}",
        anchor.display()
    );
    let mut c = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let is_event = f.len() >= 3
            && f[0].starts_with(|c: char| c.is_ascii_uppercase())
            && (f[0].chars()).all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
            && f[1].chars().all(|c| c.is_ascii_digit())
            && f[2].chars().all(|c| c.is_ascii_digit());
        if is_event {
            *c.entry((f[1].to_string(), f[0].to_string())).or_default() += 1;
        }
    }
    (c, err)
}

fn have_otf2_print() -> bool {
    let ok = Command::new("otf2-print").arg("--help").output().is_ok();
    if !ok {
        eprintln!("SKIPPED (otf2-print part): otf2-print is not installed (Debian otf2-tools; .ci/run installs it)");
    }
    ok
}

#[test]
fn every_shipped_trace_converts_to_an_archive_that_reads_back_alike() {
    let dir = tempfile::tempdir().unwrap();
    let print = have_otf2_print();
    let traces = common::reported_traces();
    assert!(traces.len() >= 38, "{} traces", traces.len());
    let (mut converted, mut refused) = (0, 0);
    for (k, t) in traces.iter().enumerate() {
        let out = dir.path().join(format!("t{k}"));
        let o = common::bin()
            .args(["convert", "-q", "--to", "otf2", "-o"])
            .arg(&out)
            .arg(t)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        let name = t.display().to_string();
        if let Some((_, why)) = REFUSED.iter().find(|(n, _)| name.contains(n)) {
            assert_eq!(o.status.code(), Some(2), "{name}: expected a refusal");
            assert_eq!(err.lines().count(), 1, "{name}: {err}");
            assert!(err.contains(why), "{name}: {err}");
            assert!(
                !out.exists(),
                "{name}: a refused conversion left {}",
                out.display()
            );
            refused += 1;
            continue;
        }
        assert!(o.status.success(), "convert {name}: {err}");
        assert!(
            err.lines().all(|l| l.starts_with("perfexpert: warning: ")),
            "{name}: {err}"
        );
        let anchor = out.join("traces.otf2");
        if print {
            let (got, stderr) = otf2_print(&anchor);
            assert_eq!(got, model_counts(t), "{name}: otf2-print's counts");
            // warnings allowed only for what OTF2 cannot say (docs/convert.md): a
            // communicator member without an MPI rank (Paje containers that are no rank)
            for l in stderr.lines() {
                assert!(
                    l.contains("invalid rank in Group(COMM_GROUP)"),
                    "{name}: otf2-print: {l}"
                );
            }
        }
        let (want, got) = common::converted_reports(t, &out, &name);
        assert!(
            got == want,
            "{name}: the report of the archive differs from the source's"
        );
        converted += 1;
    }
    eprintln!("{converted} traces converted and read back alike, {refused} refused as expected");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn convert(args: &[&str], input: &Path, out: &Path) -> (Option<i32>, String) {
    let o = common::bin()
        .arg("convert")
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(input)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn an_archive_out_is_replaced_only_with_force_and_never_left_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::testdata("scorep/wo");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), "me").unwrap();
    let (code, err) = convert(&["--to", "otf2"], &src, &out);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_eq!(names(&out), ["keep"]);

    // a truncated event file: one line naming it and the byte, exit 2, OUT untouched and
    // no temporary directory left
    let cut = dir.path().join("cut");
    copy_dir(&src, &cut);
    let evt = cut.join("traces/1.evt");
    let full = std::fs::read(&evt).unwrap();
    std::fs::write(&evt, &full[..full.len() - 7]).unwrap();
    let (code, err) = convert(&["-q", "--force", "--to", "otf2"], &cut, &out);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("1.evt: byte "), "{err}");
    assert_eq!(names(&out), ["keep"]);
    assert_eq!(names(dir.path()), ["cut", "out"]);

    // with --force a directory OUT is replaced by the archive
    let (code, err) = convert(&["-q", "--force", "--to", "otf2"], &src, &out);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(names(&out), ["traces", "traces.def", "traces.otf2"]);
    assert_eq!(names(dir.path()), ["cut", "out"]);
    // and so is a file
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let (code, err) = convert(&["-q", "--force", "--to", "otf2"], &src, &file);
    assert_eq!(code, Some(0), "{err}");
    assert!(file.join("traces.otf2").is_file());

    // an OUT that cannot be made (its parent is a file), a missing input: one line, exit 2
    let (code, err) = convert(
        &["-q", "--to", "otf2"],
        &src,
        &dir.path().join("cut/traces.otf2/x"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("traces.otf2/x"), "{err}");
    let (code, err) = convert(
        &["-q", "--to", "otf2"],
        &dir.path().join("none"),
        &dir.path().join("o2"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("none"), "{err}");
    assert_eq!(names(dir.path()), ["cut", "file", "out"]);
}

#[test]
fn the_archive_is_the_same_bytes_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let src = common::testdata("scorep-omp/hybrid");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for o in [&a, &b] {
        let (code, err) = convert(&["-q", "--to", "otf2"], &src, o);
        assert_eq!(code, Some(0), "{err}");
    }
    for f in [
        "traces.otf2",
        "traces.def",
        "traces/0.evt",
        "traces/4294967297.evt",
    ] {
        assert_eq!(
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
            "{f}"
        );
    }
}

/// `info --json`'s Paje counts (pj_dump's rows) and the model's events per kind.
fn paje_counts(path: &Path) -> (Vec<u64>, BTreeMap<String, u64>) {
    let v = common::info_json(path);
    let counts = ["containers", "states", "links", "events", "variables"]
        .iter()
        .map(|k| v[k].as_u64().unwrap())
        .collect();
    let kinds = (v["events_per_kind"].as_object().unwrap().iter())
        .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
        .collect();
    (counts, kinds)
}

/// OTF2 and OTF 1 traces to Paje (text and both binary variants): `pj_dump` counts the
/// text as perfexpert predicts; every form reads back with the same counts; the Enter and
/// Leave events and the paired messages of the source all arrive (as states and links).
#[test]
fn otf2_and_otf1_traces_convert_to_paje_that_pj_dump_reads_as_predicted() {
    let dir = tempfile::tempdir().unwrap();
    let have_pj_dump = Command::new("pj_dump").arg("--help").output().is_ok();
    if !have_pj_dump {
        eprintln!("SKIPPED (pj_dump part): pj_dump (Debian pajeng) is not installed");
    }
    let mut traces: Vec<PathBuf> = [
        "scorep/ls",
        "scorep/nb",
        "scorep/npb_lu_S",
        "scorep-omp/hybrid",
        "generated/alltoall5",
    ]
    .iter()
    .map(|t| common::testdata(t))
    .collect();
    if let Some(s) = common::shared() {
        traces.push(s.join("traces/public/otf1-philosophers/philosophers.otf"));
        traces.push(s.join("traces/public/sstmacro-otf2-10rank/traces.otf2"));
    }
    for t in traces {
        let name = t.display().to_string();
        let text = dir.path().join("t.paje");
        let (code, err) = convert(&["-q", "--force", "--to", "paje"], &t, &text);
        assert_eq!(code, Some(0), "{name}: {err}");
        let (counts, kinds) = paje_counts(&text);
        if have_pj_dump {
            assert_eq!(
                common::pj_dump(&text).unwrap(),
                counts,
                "{name}: pj_dump's counts"
            );
        }
        let src = perfexpert::formats::open(&t).unwrap();
        let n = |k: EventKind| -> u64 {
            src.events
                .iter()
                .map(|e| e.kind.iter().filter(|&&x| x == k).count() as u64)
                .sum()
        };
        assert_eq!(
            counts[1],
            n(EventKind::Enter),
            "{name}: one state per Enter"
        );
        assert_eq!(kinds.get("ENTER"), Some(&n(EventKind::Enter)), "{name}");
        assert_eq!(kinds.get("LEAVE"), Some(&n(EventKind::Leave)), "{name}");
        let sends = n(EventKind::MpiSend) + n(EventKind::MpiIsend);
        assert!(counts[2] <= sends, "{name}: links");
        if name.contains("testdata/scorep/") {
            // every message of these Score-P traces is matched: one link each
            assert_eq!(counts[2], sends, "{name}: links");
        }
        // binary Paje has no place for perfexpert's records: it reads back as the text
        // without them does
        let plain = dir.path().join("plain.paje");
        let src_model = perfexpert::formats::open(&t).unwrap();
        let mut f = std::fs::File::create(&plain).unwrap();
        perfexpert::convert::paje_model::to_text_with(&src_model, false, &mut f, &mut |_| {})
            .unwrap();
        drop(f);
        let plain_counts = paje_counts(&plain);
        assert_eq!(
            plain_counts.0[..3],
            counts[..3],
            "{name}: the same states and links"
        );
        for to in ["paje-binary", "paje-binary-reference"] {
            let rst = dir.path().join(format!("t-{to}.rst"));
            let (code, err) = convert(&["-q", "--force", "--to", to], &t, &rst);
            assert_eq!(code, Some(0), "{name} {to}: {err}");
            assert_eq!(paje_counts(&rst), plain_counts, "{name} {to}");
        }
    }
}

/// Binary Paje straight from the model (`paje_model::to_binary`) is the same bytes, both
/// variants, as the model's Paje text without perfexpert's records converted by the
/// Paje-to-binary writer (`paje_model::to_text_with(.., false, ..)` then `paje::to_binary`), with the same summary, on every OTF2 and
/// OTF 1 trace `tools/reports.sh` reports.
#[test]
fn binary_paje_from_the_model_is_the_bytes_of_its_text_converted() {
    use perfexpert::convert::{paje, paje_model};
    let mut n = 0;
    for t in common::reported_traces() {
        let name = t.display().to_string();
        let Ok(trace) = perfexpert::formats::open(&t) else {
            continue;
        };
        if trace.origin.format == "Paje" {
            continue;
        }
        let mut text = Vec::new();
        let s = paje_model::to_text_with(&trace, false, &mut text, &mut |_| {}).unwrap();
        for reference in [false, true] {
            let mut old = Vec::new();
            let Ok(b) = paje::to_binary(&trace.path, &text, reference, &mut old, &mut |_| {})
            else {
                panic!("{name}: the text does not convert");
            };
            let mut new = Vec::new();
            let Ok(d) = paje_model::to_binary(&trace, reference, &mut new, &mut |_| {}) else {
                panic!("{name}: the model does not convert");
            };
            assert!(old == new, "{name} (reference {reference}): bytes differ");
            let mut dropped = s.dropped.clone();
            dropped.extend(b.dropped);
            assert_eq!(
                (d.definitions, d.events, d.dropped),
                (s.definitions, b.events, dropped),
                "{name}"
            );
        }
        n += 1;
    }
    assert!(n >= 5, "only {n} OTF2/OTF 1 traces compared");
}
