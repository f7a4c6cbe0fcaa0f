//! `perfexpert run --memory-limit SIZE` holds: the peak resident set of a run, measured by
//! the kernel (`wait4`'s `ru_maxrss`, as `/usr/bin/time` does), not by timing. Alone in its
//! test binary, so that no other test's processes compete with the run for the CPU while
//! it is measured.

mod common;

#[path = "../examples/gen_pingpong/otf2w.rs"]
#[allow(dead_code)]
mod otf2w;

/// The spill announcement: exactly one line on stderr.
fn spill_lines(err: &str) -> usize {
    err.lines()
        .filter(|l| l.starts_with("perfexpert: ") && l.contains("more than --memory-limit"))
        .count()
}

/// Peak resident set of a finished child, from the kernel (`wait4`'s `ru_maxrss`), in bytes;
/// its exit code, stdout and stderr. Two threads, as the floor is reckoned for.
#[cfg(target_os = "linux")]
fn run_measured(args: &[&str]) -> (i32, String, String, u64) {
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which gives its rusage
    let child = common::bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("RAYON_NUM_THREADS", "2")
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let (mut out, mut err) = (child.stdout.unwrap(), child.stderr.unwrap());
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).unwrap();
        s
    });
    let mut e = String::new();
    std::io::Read::read_to_string(&mut err, &mut e).unwrap();
    let o = reader.join().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for the child we spawned, which
    // nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, o, e, usage.ru_maxrss as u64 * 1024)
}

/// `--memory-limit` holds, on a generated trace of 5 M events (16 ranks), peaks measured by
/// the kernel, not by timing:
/// (b) a limit below the floor (what cannot go to the spill file): the one line says so
///     with the floor in MB before the run, and `--memory-limit-strict` exits 2 with no
///     report;
/// (a) a limit just above that stated floor keeps the peak resident set within the limit
///     + 10 % (the larger peak of two runs), with the same report as without a limit.
#[cfg(target_os = "linux")]
#[test]
fn the_peak_stays_within_a_limit_above_the_floor() {
    use perfexpert::model::spill::{floor_bytes, RunShape, RESIDENT_BYTES_PER_EVENT};
    let tmp = tempfile::tempdir().unwrap();
    let p = otf2w::PingPong {
        ranks: 16,
        iterations: 62_500,
    };
    let stamp = otf2w::Stamp {
        trace_id: 1,
        realtime_ns: 0,
    };
    otf2w::write_archive(p, tmp.path(), stamp, |each| (0..p.ranks).try_for_each(each)).unwrap();
    let trace = tmp.path().join("traces.otf2");
    let t = trace.to_str().unwrap();
    let per_rank = 5 * 62_500 + 2;
    let shape = RunShape::new(&[per_rank; 16], 2, false);
    let (floor, need) = (floor_bytes(&shape), shape.events * RESIDENT_BYTES_PER_EVENT);
    assert!(
        floor + (4 << 20) < need,
        "the trace is big enough to spill above its floor"
    );

    // (b) below the floor: said before the run, with the floor; strict refuses
    let (code, plain, err, _) = run_measured(&["run", "-q", t]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err, _) = run_measured(&["run", "-q", "--memory-limit=1M", t]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(spill_lines(&err), 1, "{err}");
    let stated = common::mb_after(&err, "and about ");
    assert_eq!(stated, floor >> 20, "{err}");
    assert!(
        err.contains(&format!("the run goes on at about {stated} MB")),
        "{err}"
    );
    assert_eq!(out, plain, "the same report at the floor");
    let (code, out, err, _) =
        run_measured(&["run", "-q", "--memory-limit=1M", "--memory-limit-strict", t]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "no report: {out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(common::mb_after(&err, "below the about "), stated, "{err}");

    // (a) just above the stated floor: the peak stays within the limit + 10 %, the larger
    // of two runs (where the passes fault the columns back varies from run to run)
    let limit = (stated + 1) << 20;
    let arg = format!("--memory-limit={limit}");
    let mut peak = 0;
    for _ in 0..2 {
        let (code, out, err, p) = run_measured(&["run", "-q", &arg, t]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(spill_lines(&err), 1, "{err}");
        assert!(!err.contains("even with the event columns"), "{err}");
        assert_eq!(out, plain, "the same report under the limit");
        peak = peak.max(p);
    }
    eprintln!(
        "floor {stated} MB, limit {} MB, peak {} MB",
        limit >> 20,
        peak >> 20
    );
    assert!(
        peak <= limit + limit / 10,
        "peak {peak} bytes over --memory-limit {limit} + 10 %"
    );
}
