//! Bad input never panics and never yields a partial result: truncated, corrupted, missing
//! and foreign files get exit status 2 and one line naming the file, the place and what
//! was expected.

mod common;

use std::path::{Path, PathBuf};

/// A private copy of a small real trace (Score-P, 4 ranks) to damage.
fn copy_trace(dir: &Path) -> PathBuf {
    let src = common::testdata("scorep/ls");
    std::fs::copy(src.join("traces.otf2"), dir.join("traces.otf2")).unwrap();
    std::fs::copy(src.join("traces.def"), dir.join("traces.def")).unwrap();
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    for e in std::fs::read_dir(src.join("traces")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join("traces").join(p.file_name().unwrap())).unwrap();
    }
    dir.join("traces.otf2")
}

/// The shortest prefix that is still a complete file: up to and including END_OF_FILE
/// (0x02); what writers put after it (END_OF_BUFFER, padding) is not part of the stream.
fn complete_from(full: &[u8]) -> usize {
    assert_eq!(full.iter().rev().take(3).filter(|&&b| b == 0x02).count(), 1);
    full.iter().rposition(|&b| b == 0x02).unwrap() + 1
}

/// Run `perfexpert info` and return (exit code, stdout, stderr).
fn info(anchor: &Path) -> (i32, String, String) {
    let out = common::bin().arg("info").arg(anchor).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_clean_error(code: i32, stdout: &str, stderr: &str, names: &str, says: &str) {
    assert_eq!(code, 2, "exit status; stderr: {stderr}");
    assert!(
        stdout.is_empty(),
        "no partial output on error, got: {stdout}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(names), "{stderr:?} should name {names}");
    assert!(stderr.contains(says), "{stderr:?} should say {says}");
}

#[test]
fn a_truncated_event_file_is_an_error_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = copy_trace(dir.path());
    let evt = dir.path().join("traces/1.evt");
    let full = std::fs::read(&evt).unwrap();
    for cut in 0..complete_from(&full) {
        std::fs::write(&evt, &full[..cut]).unwrap();
        match perfexpert::open(&anchor) {
            Ok(t) => panic!(
                "cut at {cut} of {}: read {} events as if complete",
                full.len(),
                t.event_count()
            ),
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("1.evt"), "cut at {cut}: {msg}");
                if cut > 0 {
                    assert!(msg.contains(": byte "), "cut at {cut}: {msg}");
                }
            }
        }
    }
    std::fs::write(&evt, &full[..full.len() / 2]).unwrap();
    let (code, out, err) = info(&anchor);
    assert_clean_error(code, &out, &err, "1.evt", "expected");
}

#[test]
fn truncated_definitions_and_anchor_are_errors_at_every_offset() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = copy_trace(dir.path());
    for name in ["traces.def", "traces.otf2", "traces/2.def"] {
        let path = dir.path().join(name);
        let full = std::fs::read(&path).unwrap();
        for cut in 0..complete_from(&full) {
            std::fs::write(&path, &full[..cut]).unwrap();
            match perfexpert::open(&anchor) {
                Ok(_) => panic!("{name} cut at {cut} of {} read as complete", full.len()),
                Err(e) => {
                    let file = Path::new(name).file_name().unwrap().to_str().unwrap();
                    assert!(e.to_string().contains(file), "{name} cut at {cut}: {e}");
                }
            }
        }
        std::fs::write(&path, &full).unwrap();
    }
    assert!(perfexpert::open(&anchor).is_ok());
}

#[test]
fn flipped_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = copy_trace(dir.path());
    // every byte of the small files, every 5th of the 11 KB global definitions
    for (name, stride) in [
        ("traces/0.evt", 1),
        ("traces/3.def", 1),
        ("traces.otf2", 1),
        ("traces.def", 5),
    ] {
        let path = dir.path().join(name);
        let full = std::fs::read(&path).unwrap();
        for i in (0..full.len()).step_by(stride) {
            for flip in [0xffu8, 0x01, 0x80] {
                let mut bad = full.clone();
                bad[i] ^= flip;
                std::fs::write(&path, &bad).unwrap();
                // Either a complete, well-formed read (the byte was a value) or an error;
                // a panic fails the test.
                if let Err(e) = perfexpert::open(&anchor) {
                    assert_eq!(e.to_string().lines().count(), 1);
                }
            }
        }
        std::fs::write(&path, &full).unwrap();
    }
}

#[test]
fn a_missing_global_definition_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = copy_trace(dir.path());
    std::fs::remove_file(dir.path().join("traces.def")).unwrap();
    let (code, out, err) = info(&anchor);
    assert_clean_error(code, &out, &err, "traces.def", "cannot open");
}

#[test]
fn a_missing_event_file_of_a_location_with_events_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = copy_trace(dir.path());
    std::fs::remove_file(dir.path().join("traces/2.evt")).unwrap();
    let (code, out, err) = info(&anchor);
    assert_clean_error(code, &out, &err, "2.evt", "missing event file");
}

#[test]
fn empty_garbage_and_foreign_anchors_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let anchor = copy_trace(dir.path());
    for (content, says) in [
        (&b""[..], "empty file"),
        (&b"\x00\x01garbage garbage"[..], "unrecognised content"),
        // a Paje header is Paje whatever the file's name (issue 11): here a truncated one
        (
            &b"%EventDef PajeDefineContainerType 0\n"[..],
            "traces.otf2:1: the file ends inside the %EventDef of line 1",
        ),
        (&b"\x03\x42OTF2\x00\x09"[..], "anchor format version"),
        (
            &b"\x03\x42OTF2\x00\x03\x02\x02"[..],
            "unexpected end of data",
        ),
    ] {
        std::fs::write(&anchor, content).unwrap();
        let (code, out, err) = info(&anchor);
        assert_clean_error(code, &out, &err, "traces.otf2", says);
    }
}

#[test]
fn missing_paths_unknown_options_and_subcommands_exit_2() {
    let (code, out, err) = info(Path::new("no/such/trace.otf2"));
    assert_clean_error(code, &out, &err, "no/such/trace.otf2", "cannot open");
    for args in [
        &["info", "--frobnicate", "x"][..],
        &["frobnicate"][..],
        &[][..],
    ] {
        let o = common::bin().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_directory_is_searched_for_its_single_anchor() {
    let dir = tempfile::tempdir().unwrap();
    copy_trace(dir.path());
    let (code, out, _) = info(dir.path());
    assert_eq!(code, 0);
    assert!(out.contains("events      92"), "{out}");
    let empty = tempfile::tempdir().unwrap();
    let (code, out, err) = info(empty.path());
    assert_clean_error(code, &out, &err, "", "expected an OTF2 anchor file");
}
