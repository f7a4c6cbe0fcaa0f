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

/// Peak resident set of a finished child, from the kernel (`wait4`'s `ru_maxrss`), in bytes.
#[cfg(target_os = "linux")]
fn run_measured(args: &[&str]) -> (i32, String, u64) {
    #[allow(clippy::zombie_processes)] // reaped by wait4 below, which gives its rusage
    let child = common::bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.unwrap(), &mut err).unwrap();
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
    (code, err, usage.ru_maxrss as u64 * 1024)
}

/// `--memory-limit` holds: on a generated trace of 5 M events, a limit between the floor
/// (what cannot go to the spill file) and what the trace needs in memory keeps the peak
/// resident set within the limit + 10 % (measured by the kernel, not by timing).
#[cfg(target_os = "linux")]
#[test]
fn the_peak_stays_within_a_limit_above_the_floor() {
    use perfexpert::model::spill::{floor_bytes, RESIDENT_BYTES_PER_EVENT};
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
    let events = 16 * (5 * 62_500 + 2);
    let (floor, need) = (floor_bytes(events), events * RESIDENT_BYTES_PER_EVENT);
    assert!(
        floor < need,
        "the trace is big enough to spill above its floor"
    );
    let limit = floor + (need - floor) / 2;
    let arg = format!("--memory-limit={limit}");
    let (code, err, peak) = run_measured(&["run", "-q", &arg, trace.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(spill_lines(&err), 1, "{err}");
    assert!(!err.contains("even with the event columns"), "{err}");
    eprintln!("limit {} MB, peak {} MB", limit >> 20, peak >> 20);
    assert!(
        peak <= limit + limit / 10,
        "peak {peak} bytes over --memory-limit {limit} + 10 %"
    );
}
