//! `perfexpert run --mpi` as a real MPI job (issue 24), run by `cargo test --features mpi`:
//! for every shipped trace (MPI, OpenMP and hybrid), P = 1, 2, 3 and 4 processes under
//! `mpirun` write the text report of the single-process run byte for byte, also of one phase
//! (`--phase K`), and the JSON, Cube and HTML reports and the `--root-causes` text too; and a
//! failing process (an unreadable file in its share, a bad rule, a refused memory limit)
//! ends the job with exit 2 and its one line printed once. Prints SKIPPED without `mpirun`.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The Cube archive's member times of every run here, so that two runs' archives compare.
const EPOCH: &str = "1700000000";

/// `mpirun` on PATH; without it, a SKIPPED line (the caller's test then returns).
fn mpirun() -> Option<PathBuf> {
    let found = (std::env::var_os("PATH").iter())
        .flat_map(std::env::split_paths)
        .map(|d| d.join("mpirun"))
        .find(|p| p.is_file());
    if found.is_none() {
        println!("SKIPPED: no mpirun on PATH (apt-get install openmpi-bin libopenmpi-dev)");
    }
    found
}

fn job(mpirun: &Path, p: usize, args: &[&str]) -> Output {
    Command::new(mpirun)
        .args(["--oversubscribe", "-np", &p.to_string()])
        .arg(env!("CARGO_BIN_EXE_perfexpert"))
        .args(["run", "--mpi", "-q"])
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        // as root (containers, CI) Open MPI's mpirun wants these
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs")
}

/// The shipped traces: testdata's, and ../shared's when it is there.
fn traces() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![
        PathBuf::from("testdata/scorep"),
        PathBuf::from("testdata/scorep-omp"),
        PathBuf::from("testdata/generated"),
        PathBuf::from("testdata/smpi"),
    ];
    let shared = Path::new("../shared/traces");
    if shared.is_dir() {
        for d in ["scorep", "smpi", "public"] {
            dirs.push(shared.join(d));
        }
    } else {
        println!("SKIPPED: ../shared is absent; only the testdata/ traces");
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut subs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        subs.sort();
        for s in subs.into_iter().filter(|s| s.is_dir()) {
            let mut files: Vec<PathBuf> = walk(&s);
            files.sort();
            let anchor = |ext: &str| {
                files
                    .iter()
                    .find(|f| f.extension().is_some_and(|x| x == ext))
            };
            if let Some(a) = anchor("otf2").or_else(|| anchor("otf")) {
                out.push(a.clone());
            } else {
                out.extend(
                    files
                        .iter()
                        .filter(|f| f.extension().is_some_and(|x| x == "paje"))
                        .cloned(),
                );
            }
        }
    }
    out
}

/// The shipped traces the single process reads (the others it refuses, and so does the job),
/// each with whether it has OpenMP.
fn readable_traces() -> Vec<(PathBuf, bool)> {
    (traces().into_iter())
        .filter_map(|t| {
            let trace = perfexpert::open(&t).ok()?;
            let omp = perfexpert::replay::omp::has_openmp(&trace);
            Some((t, omp))
        })
        .collect()
}

fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "traces") {
                    out.extend(walk(&p));
                }
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// The single-process `run -q` with `args`.
fn single(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfexpert"))
        .args(["run", "-q"])
        .args(args)
        .env("SOURCE_DATE_EPOCH", EPOCH)
        .output()
        .expect("runs")
}

#[test]
fn every_process_count_writes_the_single_process_text_report() {
    let Some(mpirun) = mpirun() else {
        return;
    };
    let (mut checked, mut openmp) = (0, 0);
    for (t, omp) in readable_traces() {
        openmp += omp as usize;
        let ts = t.to_string_lossy().into_owned();
        // the options of the text report on the testdata traces, the default elsewhere
        let mut args = vec![ts.as_str()];
        if ts.starts_with("testdata/") {
            args.extend(["--top", "50", "--call-tree", "--metric", "mpi_latesender"]);
            args.push("--critical-path");
        }
        same_as_single(&mpirun, 1..=4, &args);
        checked += 1;
    }
    assert!(
        checked >= 10 && openmp >= 5,
        "only {checked} traces checked"
    );
    println!("{checked} traces at P = 1..4, {openmp} of them with OpenMP");
}

/// The job of each process count of `ps` with `args` writes the single-process report.
fn same_as_single(mpirun: &Path, ps: std::ops::RangeInclusive<usize>, args: &[&str]) {
    let want = single(args);
    assert!(want.status.success(), "{args:?}");
    for p in ps {
        let o = job(mpirun, p, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{args:?}, P = {p}: {err}");
        assert!(
            o.stdout == want.stdout,
            "{args:?}, P = {p}: the report differs from the single-process one"
        );
    }
}

/// `--root-causes --format text,json,cubex,html -o DIR` under `--mpi`: for every shipped
/// trace (MPI, OpenMP and hybrid) and P = 1..4, the four files are the single-process ones
/// byte for byte (the Cube archive's member times fixed by `SOURCE_DATE_EPOCH`).
#[test]
fn every_process_count_writes_the_single_process_json_cube_and_html() {
    let Some(mpirun) = mpirun() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let files = ["report.txt", "report.json", "report.cubex", "report.html"];
    let (mut checked, mut openmp) = (0, 0);
    for (t, omp) in readable_traces() {
        openmp += omp as usize;
        let ts = t.to_string_lossy().into_owned();
        let run = |p: usize, dir: &Path| {
            let d = dir.to_string_lossy().into_owned();
            let args = [
                ts.as_str(),
                "--root-causes",
                "--format",
                "text,json,cubex,html",
                "-o",
                d.as_str(),
            ];
            let o = match p {
                0 => single(&args),
                _ => job(&mpirun, p, &args),
            };
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "{ts}, P = {p}: {err}");
        };
        let one = tmp.path().join("one");
        run(0, &one);
        for p in 1..=4 {
            let many = tmp.path().join(format!("p{p}"));
            run(p, &many);
            for f in files {
                let (a, b) = (std::fs::read(one.join(f)), std::fs::read(many.join(f)));
                let (a, b) = (a.expect("single"), b.expect("job"));
                assert!(
                    a == b,
                    "{ts}, P = {p}: {f} differs from the single-process one"
                );
            }
            std::fs::remove_dir_all(&many).expect("rm");
        }
        std::fs::remove_dir_all(&one).expect("rm");
        checked += 1;
    }
    assert!(
        checked >= 10 && openmp >= 5,
        "only {checked} traces checked, {openmp} with OpenMP"
    );
    println!("{checked} traces at P = 1..4 ({openmp} with OpenMP): text, JSON, Cube and HTML");
}

/// `--phase K` under `--mpi`: the first and the last phase of traces with several (MPI,
/// OpenMP, hybrid) give the single-process report, with the critical path; a phase beyond
/// the last is refused with the single-process line.
#[test]
fn one_phase_gives_the_single_process_report() {
    let Some(mpirun) = mpirun() else {
        return;
    };
    for (trace, phases) in [
        ("testdata/scorep/ls", 5),
        ("testdata/generated/ring4", 3),
        ("testdata/scorep-omp/hybrid", 4),
        ("testdata/scorep-omp/omp_barrier", 2),
    ] {
        for k in ["1".to_string(), phases.to_string()] {
            let args = [trace, "--phase", &k, "--critical-path", "--top", "50"];
            same_as_single(&mpirun, 2..=4, &args);
        }
        let beyond = (phases + 1).to_string();
        let want = single(&[trace, "--phase", &beyond]);
        let line = String::from_utf8_lossy(&want.stderr).trim_end().to_string();
        assert!(line.starts_with("perfexpert: --phase"), "{line}");
        let o = job(&mpirun, 3, &[trace, "--phase", &beyond]);
        fails_once(&o, &line["perfexpert: ".len()..]);
    }
}

/// `--matrices-csv` and `--what-if` under `--mpi`: the single-process CSV files and critical
/// path, and an unknown what-if region refused with the single-process line.
#[test]
fn the_matrices_and_what_ifs_are_the_single_process_ones() {
    let Some(mpirun) = mpirun() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("perfexpert-mpi-csv-{}", std::process::id()));
    let (one, many) = (dir.join("one"), dir.join("many"));
    let (one_s, many_s) = (one.to_string_lossy(), many.to_string_lossy());
    let trace = "testdata/scorep/ls";
    let args = |d: &str| {
        let a = [
            trace,
            "--matrices-csv",
            d,
            "--what-if",
            "MPI_Recv",
            "--what-if",
            "MPI_Send",
        ];
        a.map(String::from).to_vec()
    };
    let a1 = args(&one_s);
    let want = single(&a1.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(want.status.success());
    for p in [2, 3] {
        let an = args(&many_s);
        let o = job(
            &mpirun,
            p,
            &an.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(o.stdout == want.stdout, "P = {p}: the report differs");
        for f in ["wait_matrix.csv", "traffic_matrix.csv"] {
            let (a, b) = (std::fs::read(one.join(f)), std::fs::read(many.join(f)));
            assert_eq!(a.unwrap(), b.unwrap(), "P = {p}: {f}");
        }
        std::fs::remove_dir_all(&many).unwrap();
    }
    let o = job(&mpirun, 2, &[trace, "--what-if", "no_such_region"]);
    fails_once(&o, "--what-if no_such_region: no region of that name");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Exit 2, and `needle` in exactly one line of stderr (printed once, by rank 0).
fn fails_once(o: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("perfexpert:"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].contains(needle), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_failing_process_ends_the_job_with_its_one_line() {
    let Some(mpirun) = mpirun() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = Path::new("testdata/scorep/npb_lu_S");
    std::fs::create_dir(dir.path().join("traces")).expect("mkdir");
    for f in ["traces.otf2", "traces.def"] {
        std::fs::copy(src.join(f), dir.path().join(f)).expect("copy");
    }
    for l in 0..4 {
        for ext in ["def", "evt"] {
            let f = format!("traces/{l}.{ext}");
            std::fs::copy(src.join(&f), dir.path().join(&f)).expect("copy");
        }
    }
    // location 3's events cut short: at P = 4 only process 3 reads them
    let evt = dir.path().join("traces/3.evt");
    let len = std::fs::metadata(&evt).expect("evt").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&evt)
        .expect("open");
    f.set_len(len / 2).expect("truncate");
    drop(f);
    let anchor = dir.path().join("traces.otf2");
    let a = anchor.to_string_lossy().into_owned();
    let out = dir.path().join("profile.txt");
    let o = job(&mpirun, 4, &[&a, "-o", &out.to_string_lossy()]);
    fails_once(&o, "3.evt");
    assert!(err_names_process(&o, 3));
    assert!(std::fs::read_dir(dir.path())
        .expect("ls")
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().contains("profile")));
    // every process fails alike: the line once, from rank 0
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[rule]]\nid = \"x\"\nwhen = \"E.\"\n").expect("write");
    let o = job(
        &mpirun,
        3,
        &["testdata/scorep/ls", "--rules", &bad.to_string_lossy()],
    );
    fails_once(&o, "bad.toml");
    let o = job(
        &mpirun,
        2,
        &[
            "testdata/scorep/ls",
            "--memory-limit",
            "1K",
            "--memory-limit-strict",
        ],
    );
    fails_once(&o, "--memory-limit");
    // a rule reading a partner's partner: deeper than the ghost events carry
    let deep = dir.path().join("deep.toml");
    std::fs::write(
        &deep,
        "id = \"deep_partner\"\nname = \"Deep\"\nparent = \"mpi_latesender\"\nunit = \"sec\"\n\
         paradigm = \"mpi\"\norder = 9\non = \"receive\"\nseverity = \"S.recv.time - R.time\"\n\
         at = \"R\"\ndescription = \"d\"\ndiagnosis = \"d\"\n",
    )
    .expect("write");
    let o = job(
        &mpirun,
        2,
        &["testdata/scorep/ls", "--rules", &deep.to_string_lossy()],
    );
    fails_once(&o, "deep_partner");
}

fn err_names_process(o: &Output, r: usize) -> bool {
    String::from_utf8_lossy(&o.stderr).contains(&format!("process {r} of"))
}

#[test]
fn without_a_launcher_it_says_so() {
    let o = Command::new(env!("CARGO_BIN_EXE_perfexpert"))
        .args(["run", "--mpi", "testdata/scorep/ls"])
        .env_remove("OMPI_COMM_WORLD_SIZE")
        .env_remove("PMI_RANK")
        .env_remove("PMI_SIZE")
        .env_remove("PMIX_RANK")
        .env_remove("MV2_COMM_WORLD_RANK")
        .output()
        .expect("runs");
    fails_once(&o, "not started by an MPI launcher");
}
