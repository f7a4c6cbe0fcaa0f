//! The fast ping-pong generator (`examples/gen_pingpong`) against the official one
//! (`../shared/bench/gen_pingpong_trace.py`, PyPI `otf2` = libotf2 3.2): for the same
//! program, every file of the two archives is byte-identical once the two values the
//! official writer takes from a random source and the clock (the anchor's trace id,
//! ClockProperties' realtime timestamp) are handed to ours; `otf2-print` prints the same
//! lines for both and perfexpert writes the same JSON report.
//!
//! The shapes cover what the bytes depend on: event chunk boundaries (1 MiB chunks hold
//! about 15,000 iterations), message tags of 1 to 4 compressed bytes (iterations beyond
//! 65,536), an odd number of ranks (the last one's peer does not exist), and definition
//! records of 255 bytes or more (the long length form, 300 ranks).

mod common;

#[path = "../examples/gen_pingpong/otf2w.rs"]
#[allow(dead_code)]
mod otf2w;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Compressed unsigned integer at `b[*at..]` (formats.md A.4, little endian).
fn read_uc(b: &[u8], at: &mut usize) -> u64 {
    let n = b[*at];
    *at += 1;
    match n {
        0 => 0,
        0xff => u64::MAX,
        n => {
            let mut v = [0u8; 8];
            v[..n as usize].copy_from_slice(&b[*at..*at + n as usize]);
            *at += n as usize;
            u64::from_le_bytes(v)
        }
    }
}

/// The random trace id (anchor) and realtime timestamp (ClockProperties, the first record
/// of the global definitions) of an archive written by the official writer.
fn stamp_of(dir: &Path) -> otf2w::Stamp {
    let anchor = std::fs::read(dir.join("traces.otf2")).unwrap();
    // 46 bytes of fixed fields, three empty strings, no properties (formats.md A.2)
    assert_eq!(&anchor[46..53], &[0, 0, 0, 0, 0, 0, 0], "anchor layout");
    let trace_id = u64::from_le_bytes(anchor[53..61].try_into().unwrap());
    let defs = std::fs::read(dir.join("traces.def")).unwrap();
    assert_eq!(defs[18], 5, "ClockProperties comes first");
    let mut at = 20; // after type and length
    for _ in 0..3 {
        read_uc(&defs, &mut at); // resolution, global offset, trace length
    }
    otf2w::Stamp {
        trace_id,
        realtime_ns: read_uc(&defs, &mut at),
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.join("traces.otf2"), dir.join("traces.def")];
    let mut sub: Vec<PathBuf> = std::fs::read_dir(dir.join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sub.sort();
    out.extend(sub);
    out
}

fn otf2_print(anchor: &Path) -> Option<String> {
    let o = Command::new("otf2-print").arg(anchor).output().ok()?;
    assert!(
        o.status.success(),
        "otf2-print failed on {}",
        anchor.display()
    );
    Some(String::from_utf8(o.stdout).unwrap())
}

#[test]
fn fast_generator_writes_what_the_official_writer_writes() {
    let Some(shared) = common::shared() else {
        return;
    };
    let script = shared.join("bench/gen_pingpong_trace.py");
    if !script.exists() {
        eprintln!("SKIPPED: {} is absent", script.display());
        return;
    }
    let Some(py) = common::venv_python("the official OTF2 writer (PyPI otf2)") else {
        return;
    };
    let have_print = Command::new("otf2-print").arg("--version").output().is_ok();
    if !have_print {
        assert!(
            std::env::var_os("CI").is_none(),
            "otf2-print is missing in CI: .ci/run installs otf2-tools"
        );
        eprintln!(
            "SKIPPED (otf2-print part): otf2-print is not installed (apt-get install otf2-tools)"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    for (ranks, iterations) in [(2u32, 3u32), (3, 70_000), (300, 1)] {
        let name = format!("{ranks}x{iterations}");
        let official = tmp.path().join(format!("official_{name}"));
        let ours = tmp.path().join(format!("ours_{name}"));
        let o = Command::new(&py)
            .arg(&script)
            .arg(ranks.to_string())
            .arg(iterations.to_string())
            .arg(&official)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{}: {}",
            script.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let p = otf2w::PingPong { ranks, iterations };
        otf2w::write_archive(p, &ours, stamp_of(&official), |each| {
            (0..ranks).try_for_each(each)
        })
        .unwrap();

        // 1. the same files, byte for byte
        let (a, b) = (files(&official), files(&ours));
        let rel = |v: &[PathBuf], d: &Path| -> Vec<PathBuf> {
            v.iter()
                .map(|f| f.strip_prefix(d).unwrap().to_path_buf())
                .collect()
        };
        assert_eq!(rel(&a, &official), rel(&b, &ours), "{name}: file lists");
        for (fa, fb) in a.iter().zip(&b) {
            let (x, y) = (std::fs::read(fa).unwrap(), std::fs::read(fb).unwrap());
            let first = x.iter().zip(&y).position(|(p, q)| p != q);
            assert!(
                x == y,
                "{name}: {} differs (lengths {} and {}, first difference at byte {first:?})",
                fa.strip_prefix(&official).unwrap().display(),
                x.len(),
                y.len()
            );
        }

        // 2. the official reader prints the same events (and definitions)
        if have_print {
            let (pa, pb) = (
                otf2_print(&official.join("traces.otf2")).unwrap(),
                otf2_print(&ours.join("traces.otf2")).unwrap(),
            );
            assert_eq!(pa.lines().count(), pb.lines().count(), "{name}");
            assert!(pa == pb, "{name}: otf2-print outputs differ");
            assert_eq!(
                pa.lines()
                    .filter(|l| l.starts_with("MPI_SEND") || l.starts_with("MPI_RECV"))
                    .count() as u64,
                ranks as u64 * iterations as u64,
                "{name}: one message event per rank and iteration"
            );
        }

        // 3. perfexpert's JSON reports are the same (and say what the program does)
        // (run inside each archive's directory, so the trace's path reads the same)
        let report = |d: &Path| {
            let o = common::bin()
                .current_dir(d)
                .args(["run", "-q", "--format", "json", "traces.otf2"])
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{name}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            String::from_utf8(o.stdout).unwrap()
        };
        let (ja, jb) = (report(&official), report(&ours));
        assert!(ja == jb, "{name}: perfexpert's JSON reports differ");
        let v: serde_json::Value = serde_json::from_str(&ja).unwrap();
        assert_eq!(
            v["trace"]["events"].as_u64(),
            Some(p.events()),
            "{name}: {}",
            &ja[..ja.len().min(400)]
        );
    }
}
