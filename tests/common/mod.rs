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

/// Run the perfexpert binary from the project root: (exit code, stdout, stderr).
pub fn perfexpert(args: &[&str]) -> (i32, String, String) {
    let o = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Every trace shipped in testdata/: the OTF2 traces of testdata/scorep, testdata/scorep-omp
/// and testdata/generated, and the SimGrid SMPI Paje traces of testdata/smpi:
/// (group_name, path relative to the project root, as a user there would type it), sorted.
pub fn shipped_traces() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for (group, file) in [
        ("scorep", "traces.otf2"),
        ("scorep-omp", "traces.otf2"),
        ("generated", "traces.otf2"),
        ("smpi", "trace.paje"),
    ] {
        for e in std::fs::read_dir(testdata(group)).unwrap().flatten() {
            if e.path().join(file).exists() {
                let name = format!("{group}_{}", e.file_name().to_string_lossy());
                let rel = Path::new("testdata")
                    .join(group)
                    .join(e.file_name())
                    .join(file);
                out.push((name, rel));
            }
        }
    }
    out.sort();
    out
}

/// The python of the project's virtual environment (`tools/venv.sh` makes it from
/// tools/requirements.txt: otf2, pycubexr, pandas), or `None` with a clear `SKIPPED` on
/// stderr when it cannot be made (PyPI unreachable, no python3-venv). Made once per test
/// binary.
pub fn venv_python(why: &str) -> Option<PathBuf> {
    static PY: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let r = PY.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let o = std::process::Command::new("bash")
            .arg(root.join("tools/venv.sh"))
            .output()
            .map_err(|e| format!("cannot run bash: {e}"))?;
        let py = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if o.status.success() && !py.is_empty() {
            Ok(PathBuf::from(py))
        } else {
            let err = String::from_utf8_lossy(&o.stderr);
            let tail: Vec<&str> = err.lines().rev().take(3).collect();
            Err(format!(
                "tools/venv.sh failed (is PyPI reachable?): {}",
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ))
        }
    });
    match r {
        Ok(p) => Some(p.clone()),
        Err(e) => {
            eprintln!("SKIPPED: {why}: the Python environment is missing: {e}");
            None
        }
    }
}

/// Debian's chromium (or `chromium-browser`) on `PATH`, or `None` after a SKIPPED line saying what was `unchecked`.
pub fn chromium(unchecked: &str) -> Option<PathBuf> {
    for c in ["chromium", "chromium-browser"] {
        for dir in std::env::var("PATH").unwrap_or_default().split(':') {
            let p = Path::new(dir).join(c);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    eprintln!(
        "SKIPPED: chromium is not installed (.ci/run installs Debian's `chromium`); {unchecked}"
    );
    None
}

/// `url` in headless chromium, with the flags this sandbox needs (no GPU, no network of its
/// own, a new profile) and `extra` (window size, `--screenshot=`, `--dump-dom`, ...): its
/// stdout, the console lines (messages and uncaught errors, logged on stderr as
/// `...:CONSOLE(line)] "text", source: ...` at warning level or above) and all of stderr.
pub fn headless(chrome: &Path, url: &str, extra: &[&str]) -> (String, Vec<String>, String) {
    let profile = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(extra)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    let console = (err.lines())
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        console,
        err,
    )
}

/// The traces of tools/reports.sh, in its order.
pub fn reported_traces() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let dirs = |p: PathBuf| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|r| {
                r.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let paje_files = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "paje"))
            .collect();
        v.sort();
        v
    };
    let mut groups: Vec<PathBuf> = ["scorep", "scorep-omp", "smpi", "generated"]
        .iter()
        .map(|g| root.join("testdata").join(g))
        .collect();
    let shared = shared();
    if let Some(s) = &shared {
        for g in ["scorep", "scorep-omp", "smpi", "public"] {
            groups.push(s.join("traces").join(g));
        }
    }
    for g in groups {
        for d in dirs(g.clone()) {
            if d.join("trace.paje").exists() {
                out.extend(paje_files(&d));
            } else if g.ends_with("public") {
                let mut found = Vec::new();
                find(&d, &mut found);
                found.sort();
                out.extend(found.into_iter().next());
            } else {
                out.push(d);
            }
        }
    }
    out
}

/// The trace files below a public trace's folder (`*.otf2`, `*.otf`, `*.trace`, `*.paje`).
fn find(d: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            find(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| ["otf2", "otf", "trace", "paje"].iter().any(|k| x == *k))
        {
            out.push(p);
        }
    }
}

/// `perfexpert run -q --format json PATH`, without the trace's path and format.
pub fn json_report(path: &Path) -> serde_json::Value {
    let o = bin()
        .args(["run", "-q", "--format", "json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "run {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in ["path", "format"] {
        v["trace"].as_object_mut().unwrap().remove(k);
    }
    v
}

/// The number of MB after `before` in a message ("about N MB").
pub fn mb_after(err: &str, before: &str) -> u64 {
    let at = err
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in {err}"))
        + before.len();
    let n = err[at..].split(" MB").next().unwrap_or_default();
    n.parse().unwrap_or_else(|_| panic!("{n:?} in {err}"))
}

/// `perfexpert info --json PATH`, which must succeed.
pub fn info_json(path: &Path) -> serde_json::Value {
    let o = bin().args(["info", "--json"]).arg(path).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `pj_dump PATH`'s rows per kind, in the order Container, State, Link, Event, Variable, or
/// None when `pj_dump` (Debian package `pajeng`) is not installed; it must read the file.
pub fn pj_dump(path: &Path) -> Option<Vec<u64>> {
    let o = std::process::Command::new("pj_dump")
        .arg(path)
        .output()
        .ok()?;
    assert!(
        o.status.success(),
        "pj_dump {}: {}",
        path.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut c = vec![0u64; 5];
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let k = ["Container", "State", "Link", "Event", "Variable"]
            .iter()
            .position(|k| line.split(',').next() == Some(k));
        if let Some(k) = k {
            c[k] += 1;
        }
    }
    Some(c)
}

/// The JSON reports of a trace `src` and of its conversion `out`, the conversion's with no
/// reader warning and the source's warnings dropped (they name the source's files), so the
/// two compare equal when the conversion kept everything.
pub fn converted_reports(
    src: &Path,
    out: &Path,
    name: &str,
) -> (serde_json::Value, serde_json::Value) {
    let (mut want, got) = (json_report(src), json_report(out));
    let none = serde_json::Value::Array(vec![]);
    assert_eq!(got["diagnostics"]["warnings"], none, "{name}");
    want["diagnostics"]["warnings"] = none;
    (want, got)
}

/// The stage names of a run's `-v` or `--timings` lines in their one documented order:
/// stages that run side by side end in either order, so each pair or group is put back in
/// that order here (each side keeps its own order):
/// - the built-in rules' loading and the reading of the trace;
/// - the replay and the phase detection;
/// - after the rules, the payload readers (the traffic matrix) and the root causes, the
///   scores and the phase summaries.
pub fn stages_in_order(mut s: Vec<String>) -> Vec<String> {
    if let Some(k) = s.iter().position(|x| x == "read") {
        if s.get(k + 1).is_some_and(|x| x == "rules") {
            s.swap(k, k + 1);
        }
    }
    if let Some(k) = s.iter().position(|x| x == "phase detection") {
        if s.get(k + 1).is_some_and(|x| x == "replay") {
            s.swap(k, k + 1);
        }
    }
    if let Some(k) = s.iter().position(|x| x == "rules evaluated") {
        let after = ["critical path", "wait matrix", "overheads", "written"];
        let end = s[k..]
            .iter()
            .position(|x| after.contains(&x.as_str()))
            .map_or(s.len(), |e| k + e);
        let (payload, rest): (Vec<String>, Vec<String>) = s[k + 1..end]
            .iter()
            .cloned()
            .partition(|x| x == "traffic matrix");
        s.splice(k + 1..end, rest.into_iter().chain(payload));
    }
    s
}
