//! `perfexpert compare`'s scores judged by an aligner nobody here wrote: Biopython's
//! `PairwiseAligner` (PyPI `biopython`, in the project's venv made by `tools/venv.sh`) on the
//! very symbol sequences perfexpert aligned (`--dump-symbols`), global and semi-global (end
//! gaps free): every shipped trace against itself, ping-pong pairs with planted
//! substitutions (each found as one `substitute`), `tools/gen_trace.py` pairs where one run
//! is a shortened or longer version of the other, and random mutations through the library.

mod common;

#[path = "../examples/gen_pingpong/otf2w.rs"]
#[allow(dead_code)]
mod otf2w;

use common::{perfexpert, shipped_traces, venv_python};
use perfexpert::compare::align::{align, Mode, Scoring};
use std::path::{Path, PathBuf};

/// Symbol sequences, one pair per location pair.
type Pairs = Vec<(Vec<u32>, Vec<u32>)>;

/// Biopython's optimal scores (global, semi-global) of each pair of sequences.
fn judge(py: &Path, pairs: &[(Vec<u32>, Vec<u32>)], sc: Scoring) -> Vec<(i64, i64)> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("pairs.txt");
    let mut text = String::new();
    for (a, b) in pairs {
        for s in [a, b] {
            let line: Vec<String> = s.iter().map(u32::to_string).collect();
            text.push_str(&line.join(" "));
            text.push('\n');
        }
    }
    std::fs::write(&input, text).unwrap();
    let script = r#"
import sys
from Bio.Align import PairwiseAligner
m, x, g = (int(v) for v in sys.argv[2].split(","))
lines = open(sys.argv[1]).read().split("\n")
glob = PairwiseAligner(mode="global", match_score=m, mismatch_score=x, gap_score=g)
semi = PairwiseAligner(mode="global", match_score=m, mismatch_score=x, gap_score=g)
semi.end_gap_score = 0
for k in range(0, len(lines) - 1, 2):
    a = [int(v) for v in lines[k].split()]
    b = [int(v) for v in lines[k + 1].split()]
    if not a or not b:
        # Biopython needs both non-empty: all gaps, end gaps (free) in semi-global
        print(g * (len(a) + len(b)), 0)
        continue
    print(int(glob.score(a, b)), int(semi.score(a, b)))
"#;
    let o = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .arg(&input)
        .arg(format!("{},{},{}", sc.matched, sc.mismatch, sc.gap))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Vec<i64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            (v[0], v[1])
        })
        .collect()
}

fn python() -> Option<PathBuf> {
    let py = venv_python("the Biopython judge of perfexpert compare")?;
    let ok = std::process::Command::new(&py)
        .args(["-c", "import Bio.Align"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: biopython is not in the venv (tools/requirements.txt)");
        return None;
    }
    Some(py)
}

/// One `compare` run: its JSON and the symbol sequences it aligned.
fn compare(a: &str, b: &str, extra: &[&str]) -> (serde_json::Value, Pairs) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    let dump = dir.path().join("symbols.txt");
    let mut args = vec![
        "compare",
        a,
        b,
        "-q",
        "--format",
        "json",
        "-o",
        json.to_str().unwrap(),
        "--dump-symbols",
        dump.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let (code, _, err) = perfexpert(&args);
    assert_eq!(code, 0, "{a} {b} {extra:?}: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let lines: Vec<Vec<u32>> = std::fs::read_to_string(&dump)
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
        .collect();
    let pairs = lines
        .chunks(2)
        .map(|c| (c[0].clone(), c[1].clone()))
        .collect();
    (v, pairs)
}

fn scores(v: &serde_json::Value) -> Vec<i64> {
    v["locations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["score"].as_i64().unwrap())
        .collect()
}

/// Both modes of a pair of runs against the judge; returns the global JSON.
fn judged(py: &Path, a: &str, b: &str, sc: Scoring) -> serde_json::Value {
    let score = format!("--score={},{},{}", sc.matched, sc.mismatch, sc.gap);
    let (g, pairs) = compare(a, b, &[&score]);
    let (s, pairs_s) = compare(a, b, &[&score, "--semi-global"]);
    assert_eq!(pairs, pairs_s);
    let want = judge(py, &pairs, sc);
    let got_g = scores(&g);
    let got_s = scores(&s);
    assert_eq!(got_g.len(), want.len(), "{a} {b}");
    for (k, (wg, ws)) in want.iter().enumerate() {
        assert_eq!(got_g[k], *wg, "{a} vs {b}, pair {k}, global, {sc:?}");
        assert_eq!(got_s[k], *ws, "{a} vs {b}, pair {k}, semi-global, {sc:?}");
        assert_eq!(g["locations"][k]["optimal"], true);
    }
    g
}

#[test]
fn every_shipped_trace_against_itself() {
    let Some(py) = python() else { return };
    for (name, path) in shipped_traces() {
        let p = path.to_str().unwrap();
        let g = judged(&py, p, p, Scoring::default());
        for l in g["locations"].as_array().unwrap() {
            let n = l["a_symbols"].as_i64().unwrap();
            assert_eq!(l["score"].as_i64().unwrap(), 2 * n, "{name}");
            assert_eq!(l["matches"].as_i64().unwrap(), n, "{name}");
            assert!(l["edits"].as_array().unwrap().is_empty(), "{name}");
        }
        for d in g["time_differences"].as_array().unwrap() {
            assert_eq!(d["diff_s"].as_f64().unwrap(), 0.0, "{name}: {d}");
        }
    }
}

#[test]
fn shipped_traces_against_each_other_other_scorings_and_formats() {
    let Some(py) = python() else { return };
    let t = |s: &str| format!("testdata/{s}");
    let pairs = [
        (t("scorep/mixed2"), t("scorep/mixed8")),
        (t("scorep/ls"), t("scorep/lr")),
        (t("scorep/nb"), t("scorep/nxn")),
        (t("generated/mixed3"), t("generated/ring4")),
    ];
    let other = Scoring {
        matched: 3,
        mismatch: -2,
        gap: -2,
    };
    for (a, b) in &pairs {
        judged(&py, a, b, Scoring::default());
        judged(&py, a, b, other);
    }
    // a Paje trace against OTF2 traces
    let smpi: Vec<PathBuf> = shipped_traces()
        .into_iter()
        .filter(|(n, _)| n.starts_with("smpi"))
        .map(|(_, p)| p)
        .collect();
    if let Some(p) = smpi.first() {
        judged(
            &py,
            p.to_str().unwrap(),
            &t("scorep/mixed8"),
            Scoring::default(),
        );
    }
}

fn write_pingpong(dir: &Path, ranks: u32, iterations: u32, plant: u32) -> Vec<(u32, u32)> {
    let p = otf2w::PingPong { ranks, iterations };
    let planted = otf2w::plant_places(p, plant);
    let stamp = otf2w::Stamp {
        trace_id: 1,
        realtime_ns: 2,
    };
    otf2w::write_archive_planted(p, &planted, dir, stamp, |each| {
        (0..ranks).try_for_each(each)
    })
    .unwrap();
    planted
}

#[test]
fn planted_substitutions_are_found_as_one_substitute_each() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    write_pingpong(&a, 4, 1500, 0);
    let planted = write_pingpong(&b, 4, 1500, 12);
    assert_eq!(planted.len(), 12);
    let g = judged(
        &py,
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        Scoring::default(),
    );
    let mut found = Vec::new();
    for l in g["locations"].as_array().unwrap() {
        let rank = l["rank"].as_u64().unwrap() as u32;
        for e in l["edits"].as_array().unwrap() {
            assert_eq!(e["op"], "substitute", "{e}");
            assert_eq!(e["a_region"], "compute");
            assert_eq!(e["b_region"], "compute_planted");
            assert_eq!(e["a"], e["b"]);
            assert_eq!(e["callpath"], "main/compute");
            // main is symbol 0, iteration i's compute symbol 1 + 2i
            let i = (e["a"].as_u64().unwrap() - 1) / 2;
            found.push((rank, i as u32));
        }
    }
    found.sort();
    assert_eq!(found, planted);
}

#[test]
fn generated_runs_shortened_and_changed() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let gen = |name: &str, args: &[&str]| {
        let out = dir.path().join(name);
        let o = std::process::Command::new(&py)
            .arg("tools/gen_trace.py")
            .arg(&out)
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out.to_str().unwrap().to_string()
    };
    let long = gen(
        "long",
        &["--ranks", "3", "--iterations", "12", "--pattern", "mixed"],
    );
    let short = gen(
        "short",
        &["--ranks", "3", "--iterations", "9", "--pattern", "mixed"],
    );
    let ring = gen(
        "ring",
        &["--ranks", "4", "--iterations", "10", "--pattern", "ring"],
    );
    judged(&py, &long, &short, Scoring::default());
    judged(&py, &short, &ring, Scoring::default());
    // the shortened run: semi-global matches all of it, no edit but the free end
    let (s, _) = compare(&long, &short, &["--semi-global"]);
    for l in s["locations"].as_array().unwrap() {
        let n = l["b_symbols"].as_i64().unwrap();
        assert_eq!(l["matches"].as_i64().unwrap(), n, "{l}");
        assert_eq!(l["score"].as_i64().unwrap(), 2 * n);
    }
}

fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

#[test]
fn random_mutations() {
    let Some(py) = python() else { return };
    let mut seed = 2026u64;
    let mut pairs = Vec::new();
    for k in 0..40u64 {
        let n = 50 + lcg(&mut seed) % 1500;
        let alphabet = 2 + k % 9;
        let a: Vec<u32> = (0..n).map(|_| (lcg(&mut seed) % alphabet) as u32).collect();
        let rate = [0, 1, 5, 10, 30, 100][k as usize % 6];
        let mut b = Vec::new();
        for &x in &a {
            if lcg(&mut seed) % 100 < rate {
                match lcg(&mut seed) % 3 {
                    0 => b.push((lcg(&mut seed) % alphabet) as u32),
                    1 => {}
                    _ => {
                        b.push(x);
                        b.push((lcg(&mut seed) % alphabet) as u32);
                    }
                }
            } else {
                b.push(x);
            }
        }
        pairs.push((a, b));
    }
    pairs.push((vec![], vec![1, 2, 3]));
    pairs.push((vec![4], vec![]));
    for sc in [
        Scoring::default(),
        Scoring {
            matched: 1,
            mismatch: 0,
            gap: -3,
        },
        Scoring {
            matched: 4,
            mismatch: -1,
            gap: 0,
        },
    ] {
        let want = judge(&py, &pairs, sc);
        for (k, (a, b)) in pairs.iter().enumerate() {
            let (g, _) = align(a, b, sc, Mode::Global);
            let (s, _) = align(a, b, sc, Mode::SemiGlobal);
            assert_eq!(g.score, want[k].0, "pair {k}, global, {sc:?}");
            assert_eq!(s.score, want[k].1, "pair {k}, semi-global, {sc:?}");
            assert_eq!(g.rescore(a, b, sc, Mode::Global), g.score);
            assert_eq!(s.rescore(a, b, sc, Mode::SemiGlobal), s.score);
        }
    }
}
