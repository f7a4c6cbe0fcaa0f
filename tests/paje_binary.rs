//! The binary Paje reader (formats.md §F) on every case of `../shared/traces/paje-binary`
//! (both variants, both layouts): `info` counts and the whole `run` report equal to those of
//! the text trace each file was converted from; bad input (every cut offset and flipped
//! byte of one case, unknown field types, string references out of range, missing
//! definitions) is one line naming the file and byte offset, exit 2, never a panic.

mod common;

use serde_json::Value;
use std::path::{Path, PathBuf};

fn json_of(args: &[&str], path: &Path) -> Value {
    let o = common::bin().args(args).arg(path).output().unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// (case name, binary files, text original) of every case.
fn cases(shared: &Path) -> Vec<(String, Vec<PathBuf>, PathBuf)> {
    let dir = shared.join("traces/paje-binary");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let exp = e.path().join("expected.json");
        if !exp.exists() {
            continue;
        }
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&exp).unwrap()).unwrap();
        let src = shared.join(j["source_text_trace"].as_str().unwrap());
        let mut files: Vec<PathBuf> = std::fs::read_dir(e.path())
            .unwrap()
            .flatten()
            .map(|f| f.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rst"))
            .collect();
        files.sort();
        out.push((e.file_name().to_string_lossy().into_owned(), files, src));
    }
    out.sort();
    out
}

const COUNTS: [&str; 6] = [
    "containers",
    "states",
    "links",
    "events",
    "variables",
    "model_events",
];

#[test]
fn counts_equal_the_text_originals_in_every_case() {
    let Some(shared) = common::shared() else {
        return;
    };
    let cases = cases(&shared);
    assert_eq!(cases.len(), 22);
    let mut files = 0;
    for (name, bins, text) in cases {
        let want = json_of(&["info", "--json"], &text);
        for b in &bins {
            let got = json_of(&["info", "--json"], b);
            for k in COUNTS {
                assert_eq!(got[k], want[k], "{name} {} {k}", b.display());
            }
            assert_eq!(got["format"], "Paje");
            assert!(got["format_version"]
                .as_str()
                .unwrap()
                .starts_with("binary (libRastro"));
            files += 1;
        }
    }
    // 20 converted cases in two variants, 2 shipped legacy files
    assert_eq!(files, 20 * 2 + 2);
}

#[test]
fn the_shipped_legacy_files_are_read_with_a_warning() {
    let Some(shared) = common::shared() else {
        return;
    };
    for c in ["categories", "ms"] {
        let f = shared.join(format!(
            "traces/paje-binary/poti-shipped-{c}/rastro-5-5-{c}.rst"
        ));
        let o = common::bin()
            .args(["info", "--json"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(o.status.success());
        let j: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(j["format_version"]
            .as_str()
            .unwrap()
            .contains("time-stamped layout"));
        let w = serde_json::to_string(&j["warnings"]).unwrap();
        assert!(
            w.contains("PajeAddVariable") && w.contains("exchanged"),
            "{c}: {w}"
        );
    }
}

/// The report without what names the file (and the legacy files' AddVariable warning).
fn report_sans_origin(mut v: Value) -> Value {
    for k in ["path", "format", "creator", "size", "bytes"] {
        if let Some(o) = v["trace"].as_object_mut() {
            o.remove(k);
        }
    }
    drop_addvariable_warning(&mut v);
    v
}

fn drop_addvariable_warning(v: &mut Value) {
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if k == "warnings" {
                    if let Value::Array(a) = x {
                        a.retain(|w| !w.to_string().contains("PajeAddVariable"));
                    }
                }
                drop_addvariable_warning(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(drop_addvariable_warning),
        _ => {}
    }
}

#[test]
fn reports_equal_the_text_originals_in_every_case() {
    let Some(shared) = common::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, bins, text) in cases(&shared) {
        // paje2rst drops SimGrid's message sizes (formats.md §F.2.7): compare with the text
        // trace without them, the same information
        let text = without_link_sizes(&text, dir.path());
        let want = report_sans_origin(json_of(&["run", "--format", "json"], &text));
        for b in &bins {
            let got = report_sans_origin(json_of(&["run", "--format", "json"], b));
            if got != want {
                let (g, w) = (got.to_string(), want.to_string());
                let k = g.bytes().zip(w.bytes()).take_while(|(a, b)| a == b).count();
                panic!(
                    "{name} {}: reports differ at byte {k}: {} | {}",
                    b.display(),
                    &g[k.saturating_sub(80)..(k + 80).min(g.len())],
                    &w[k.saturating_sub(80)..(k + 80).min(w.len())]
                );
            }
        }
    }
}

/// `text` itself, or a copy in `dir` without the `Size` field of its PajeStartLink
/// definition (SimGrid's `display-sizes`), the field dropped from every StartLink line.
fn without_link_sizes(text: &Path, dir: &Path) -> PathBuf {
    let src = std::fs::read_to_string(text).unwrap();
    let mut out = String::new();
    let (mut id, mut in_link, mut nfield, mut size_at) = (None, false, 0, None);
    for line in src.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with('%') {
            if w.len() == 3 && w[0] == "%EventDef" && w[1] == "PajeStartLink" {
                (id, in_link, nfield) = (Some(w[2].to_string()), true, 0);
            } else if w.first() == Some(&"%EndEventDef") {
                in_link = false;
            } else if in_link && w.len() == 3 && w[0] == "%" {
                if w[1] == "Size" {
                    size_at = Some(nfield);
                    continue;
                }
                nfield += 1;
            }
        } else if let (Some(id), Some(k)) = (&id, size_at) {
            if w.first() == Some(&id.as_str()) && w.len() > k + 1 {
                let mut w = w.clone();
                w.remove(k + 1);
                out.push_str(&w.join(" "));
                out.push('\n');
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    if size_at.is_none() {
        return text.to_path_buf();
    }
    let p = dir.join(text.file_name().unwrap());
    std::fs::write(&p, out).unwrap();
    p
}

fn read(path: &Path) -> Result<perfexpert::Trace, perfexpert::Error> {
    perfexpert::open(path)
}

/// One line naming the file and a byte offset.
fn assert_clean(e: &perfexpert::Error, file: &Path, what: &str) {
    let m = e.to_string();
    assert!(!m.contains('\n'), "{what}: {m}");
    assert!(m.contains(&file.display().to_string()), "{what}: {m}");
    assert!(m.contains(": byte "), "{what}: {m}");
}

#[test]
fn every_cut_offset_is_an_error_naming_the_byte() {
    let Some(shared) = common::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for v in ["standard", "reference"] {
        let full =
            std::fs::read(shared.join(format!("traces/paje-binary/smpi-late_sender/{v}.rst")))
                .unwrap();
        let f = dir.path().join(format!("{v}.rst"));
        // cuts below 4 bytes are not recognised as binary Paje at all
        for cut in 4..full.len() {
            std::fs::write(&f, &full[..cut]).unwrap();
            match read(&f) {
                Ok(_) => panic!("{v} cut at {cut} of {} read as complete", full.len()),
                Err(e) => assert_clean(&e, &f, &format!("{v} cut at {cut}")),
            }
        }
        for cut in 0..4 {
            std::fs::write(&f, &full[..cut]).unwrap();
            assert!(read(&f).is_err());
        }
    }
}

#[test]
fn flipped_bytes_give_an_error_or_a_complete_read() {
    let Some(shared) = common::shared() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut errors = 0;
    for v in ["standard", "reference"] {
        let full =
            std::fs::read(shared.join(format!("traces/paje-binary/smpi-late_sender/{v}.rst")))
                .unwrap();
        let f = dir.path().join(format!("{v}.rst"));
        for i in 0..full.len() {
            for flip in [0xffu8, 0x01, 0x80] {
                let mut bad = full.clone();
                bad[i] ^= flip;
                std::fs::write(&f, &bad).unwrap();
                if let Err(e) = read(&f) {
                    let m = e.to_string();
                    assert!(
                        !m.contains('\n') && m.contains(&f.display().to_string()),
                        "{m}"
                    );
                    errors += 1;
                }
            }
        }
    }
    assert!(errors > 1000, "{errors}");
}

/// A little-endian rastro event: type, item codes, then the items' bytes (already in
/// class order), padded to 4.
fn ev(ty: u32, codes: &[u32], data: &[u8]) -> Vec<u8> {
    let mut words = Vec::new();
    let mut w0 = ty << 18;
    for (k, &c) in codes.iter().take(4).enumerate() {
        w0 |= c << (12 - 4 * k);
    }
    let rest: Vec<u32> = codes.iter().skip(4).copied().collect();
    if rest.is_empty() {
        w0 |= 0x2_0000;
    }
    words.push(w0);
    for (j, chunk) in rest.chunks(7).enumerate() {
        let mut w = 0;
        for (k, &c) in chunk.iter().enumerate() {
            w |= c << (24 - 4 * k);
        }
        if (j + 1) * 7 >= rest.len() {
            w |= 0x2000_0000;
        }
        words.push(w);
    }
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    out.extend_from_slice(data);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}

fn s(x: &str) -> Vec<u8> {
    let mut v = x.as_bytes().to_vec();
    v.push(0);
    while v.len() % 4 != 0 {
        v.push(0);
    }
    v
}

fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn init() -> Vec<u8> {
    let mut d = vec![0u8; 16];
    d.extend(s("vm"));
    let mut e = ev(16383, &[4, 4, 1], &d);
    e[2] |= 1; // TIME_SET
    e
}

fn stop() -> Vec<u8> {
    ev(16382, &[], &[])
}

/// A file with DefineContainerType's 999 (with `def`'s field types) and one event.
fn file_with(def: &[u32], event: Vec<u8>) -> Vec<u8> {
    let mut f = init();
    f.extend(ev(999, &vec![7; def.len()], &u32s(def)));
    f.extend(event);
    f.extend(stop());
    f
}

fn expect_error(bytes: &[u8], says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.rst");
    std::fs::write(&f, bytes).unwrap();
    let o = common::bin().args(["info"]).arg(&f).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("t.rst: byte "), "{err}");
    assert!(err.contains(says), "{err}");
}

#[test]
fn hand_made_files_decode_and_bad_ones_are_named() {
    // a good one first: DefineContainerType "1" under "0" named "MPI"
    let good = file_with(
        &[0, 11, 0, 3, 0, 2, 0],
        ev(0, &[1, 1, 1], &[s("1"), s("0"), s("\"MPI\"")].concat()),
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("good.rst");
    std::fs::write(&f, &good).unwrap();
    let t = read(&f).unwrap();
    assert_eq!(t.paje.unwrap().containers, 1);
    assert_eq!(t.defs.record_counts["PajeDefineContainerType"], 1);
    // unknown field type 9
    expect_error(
        &file_with(&[0, 11, 0, 3, 9, 2, 0], vec![]),
        "unknown field type 9",
    );
    // a definition that lacks a mandatory field
    expect_error(
        &file_with(&[0, 11, 0, 2, 0], vec![]),
        "mandatory field Type",
    );
    // an event without a definition
    expect_error(
        &file_with(&[0, 11, 0, 3, 0, 2, 0], ev(10, &[1], &s("x"))),
        "PajePushState (rastro type 10) without a definition",
    );
    // items that do not fit the definition
    expect_error(
        &file_with(
            &[0, 11, 0, 3, 0, 2, 0],
            ev(0, &[1, 1], &[s("1"), s("0")].concat()),
        ),
        "its definition (type 999 at byte 24) needs s s s",
    );
    // a string reference out of range (reference variant: one 888 entry, index 5)
    let mut refd = init();
    refd.extend(ev(999, &[7; 7], &u32s(&[0, 11, 0, 3, 0, 2, 0])));
    refd.extend(ev(888, &[1], &s("0")));
    let mut w = Vec::new();
    for i in [0u16, 0, 5] {
        w.extend(i.to_le_bytes());
    }
    refd.extend(ev(0, &[5, 5, 5], &w));
    refd.extend(stop());
    expect_error(&refd, "refers to string 5, but only 1 string(s)");
    // an unknown item type code
    expect_error(
        &file_with(&[0, 11, 0, 3, 0, 2, 0], ev(0, &[9], &[0; 4])),
        "unknown item type code 9",
    );
    // bytes after STOP
    let mut after = good.clone();
    after.extend(stop());
    expect_error(&after, "after the STOP event");
    // no STOP
    expect_error(&good[..good.len() - 4], "without the STOP event");
}
