//! The OpenMP patterns of patterns.md §4.7 and the idle threads of §3.5, each on a fixture
//! where it fires and a near miss where it must not, plus the thread state they rest on:
//! worker call paths below the master's fork (§3.1.3), fork/join intervals in the parallel
//! region's time (§3.2), teams of different sizes (issue 13, point 4: Scalasca aborts on
//! them), traces without fork records (§4.7.1), and hybrid traces (MPI waits on the thread
//! that called MPI). Traces are written byte by byte (tests/common/otf2_builder.rs) with 1e9
//! ticks per second; locations are numbered process by process, thread by thread.

mod common;

use common::otf2_builder::{threads_archive, Ev};
use perfexpert::analysis::Analysis;
use perfexpert::replay::Replay;
use perfexpert::rules::RuleSet;
use perfexpert::Trace;

const TOL: f64 = 1e-9;

// RegionRole and Paradigm (formats.md §A enums).
const ROLE_FUNCTION: u8 = 1;
const ROLE_PARALLEL: u8 = 5;
const ROLE_CRITICAL: u8 = 12;
const ROLE_CRITICAL_SBLOCK: u8 = 13;
const ROLE_BARRIER: u8 = 15;
const ROLE_IMPLICIT_BARRIER: u8 = 16;
const ROLE_TASK: u8 = 20;
const ROLE_POINT2POINT: u8 = 28;
const PARADIGM_USER: u8 = 1;
const PARADIGM_OPENMP: u8 = 3;
const PARADIGM_MPI: u8 = 4;

const MAIN: &str = "main";
const PAR: &str = "!$omp parallel @t.c:1";
const PAR2: &str = "!$omp parallel @t.c:10";
const EBAR: &str = "!$omp barrier @t.c:2";
const IBAR: &str = "!$omp implicit barrier @t.c:3";
const CRIT: &str = "!$omp critical @t.c:4";
const SBLOCK: &str = "!$omp critical sblock @t.c:4";
const SET_LOCK: &str = "omp_set_lock";
const UNSET_LOCK: &str = "omp_unset_lock";

/// Every OpenMP metric that a test must account for: 0 wherever it lists no value.
const WATCHED: &[&str] = &[
    "omp_management",
    "omp_fork",
    "omp_ebarrier_wait",
    "omp_ibarrier_wait",
    "omp_lock_contention_critical",
    "omp_lock_contention_api",
    "omp_idle_threads",
    "omp_limited_parallelism",
    "mpi_latesender",
];

fn region_kind(name: &str) -> (u8, u8) {
    match name {
        n if n.starts_with("!$omp parallel") => (ROLE_PARALLEL, PARADIGM_OPENMP),
        n if n.starts_with("!$omp barrier") => (ROLE_BARRIER, PARADIGM_OPENMP),
        n if n.starts_with("!$omp implicit barrier") => (ROLE_IMPLICIT_BARRIER, PARADIGM_OPENMP),
        n if n.starts_with("!$omp critical sblock") => (ROLE_CRITICAL_SBLOCK, PARADIGM_OPENMP),
        n if n.starts_with("!$omp critical") => (ROLE_CRITICAL, PARADIGM_OPENMP),
        n if n.starts_with("!$omp task ") => (ROLE_TASK, PARADIGM_OPENMP),
        n if n.starts_with("!$omp") || n.starts_with("omp_") => (ROLE_FUNCTION, PARADIGM_OPENMP),
        n if n.starts_with("MPI_") => (ROLE_POINT2POINT, PARADIGM_MPI),
        _ => (ROLE_FUNCTION, PARADIGM_USER),
    }
}

/// A threaded trace under construction: `procs[p][t]` the events of thread `t` of process
/// (MPI rank) `p`, times in seconds.
struct Tb {
    regions: Vec<String>,
    procs: Vec<Vec<Vec<(u64, Ev)>>>,
}

impl Tb {
    fn new(threads: &[usize]) -> Tb {
        Tb {
            regions: Vec::new(),
            procs: threads.iter().map(|&n| vec![Vec::new(); n]).collect(),
        }
    }

    fn region(&mut self, name: &str) -> u32 {
        match self.regions.iter().position(|r| r == name) {
            Some(i) => i as u32,
            None => {
                self.regions.push(name.to_string());
                (self.regions.len() - 1) as u32
            }
        }
    }

    fn ev(&mut self, p: usize, t: usize, at: f64, e: Ev) -> &mut Self {
        self.procs[p][t].push(((at * 1e9).round() as u64, e));
        self
    }

    fn enter(&mut self, p: usize, t: usize, at: f64, name: &str) -> &mut Self {
        let r = self.region(name);
        self.ev(p, t, at, Ev::Enter(r))
    }

    fn leave(&mut self, p: usize, t: usize, at: f64, name: &str) -> &mut Self {
        let r = self.region(name);
        self.ev(p, t, at, Ev::Leave(r))
    }

    /// A region instance without children.
    fn call(&mut self, p: usize, t: usize, b: f64, e: f64, name: &str) -> &mut Self {
        self.enter(p, t, b, name).leave(p, t, e, name)
    }

    fn run(&self) -> Run {
        let regions: Vec<(&str, u8, u8)> = self
            .regions
            .iter()
            .map(|n| {
                let (role, paradigm) = region_kind(n);
                (n.as_str(), role, paradigm)
            })
            .collect();
        let archive = threads_archive(1_000_000_000, &regions, &self.procs);
        let dir = tempfile::tempdir().unwrap();
        let anchor = archive.write(dir.path());
        let trace = perfexpert::open(&anchor).unwrap();
        assert!(trace.warnings.is_empty(), "{:?}", trace.warnings);
        let replay = Replay::new(&trace);
        let a = perfexpert::analysis::analyse(&trace, &replay, RuleSet::load(&[]).unwrap());
        Run {
            _dir: dir,
            trace,
            replay,
            a,
        }
    }
}

struct Run {
    _dir: tempfile::TempDir,
    trace: Trace,
    replay: Replay,
    a: Analysis,
}

impl Run {
    fn cnode(&self, path: &str) -> u32 {
        let n = self.replay.tree.len() as u32;
        (0..n)
            .find(|&c| self.replay.path_name(&self.trace, c) == path)
            .unwrap_or_else(|| {
                let have: Vec<String> = (0..n)
                    .map(|c| self.replay.path_name(&self.trace, c))
                    .collect();
                panic!("no call path {path}; the call paths are {have:?}")
            })
    }

    fn v(&self, metric: &str, path: &str, loc: u32) -> f64 {
        let k = self.a.rules.index_of(metric).expect("metric");
        self.a.value(k, self.cnode(path), loc)
    }

    /// Assert every row `(metric, call path, value per location)`, and that every `WATCHED`
    /// metric is 0 wherever no row names it.
    fn check(&self, rows: &[(&str, &str, &[f64])]) {
        let nloc = self.trace.events.len();
        let mut errs = Vec::new();
        for (m, p, want) in rows {
            assert_eq!(want.len(), nloc, "row {m} {p}: one value per location");
            for (l, w) in want.iter().enumerate() {
                let got = self.v(m, p, l as u32);
                if (got - w).abs() > TOL {
                    errs.push(format!("{m} at {p} on location {l}: got {got}, want {w}"));
                }
            }
        }
        for m in WATCHED {
            let k = self.a.rules.index_of(m).expect("metric");
            for c in 0..self.replay.tree.len() as u32 {
                let p = self.replay.path_name(&self.trace, c);
                if rows.iter().any(|(rm, rp, _)| rm == m && *rp == p) {
                    continue;
                }
                for l in 0..nloc as u32 {
                    let got = self.a.value(k, c, l);
                    if got.abs() > TOL {
                        errs.push(format!("{m} at {p} on location {l}: got {got}, want 0"));
                    }
                }
            }
        }
        assert!(errs.is_empty(), "\n{}", errs.join("\n"));
    }
}

/// One parallel region of two threads in `main` with an explicit and an implicit barrier:
/// fork at 1.0, the master enters the region at 1.1 and the worker at 1.2; they enter the
/// explicit barrier at 2.0 and `worker_ebar`, leave it at 3.0, enter the implicit barrier at
/// 3.0 / 3.4, leave the region at 3.5; join at 3.6. `records`: with THREAD_FORK/JOIN and
/// THREAD_TEAM_BEGIN/END (Score-P), else only the regions (old traces).
fn barrier_trace(worker_ebar: f64, records: bool) -> Run {
    let mut tb = Tb::new(&[2]);
    tb.enter(0, 0, 0.0, MAIN);
    if records {
        tb.ev(0, 0, 1.0, Ev::ThreadFork(2))
            .ev(0, 0, 1.0, Ev::ThreadTeamBegin(1))
            .ev(0, 1, 1.05, Ev::ThreadTeamBegin(1));
    }
    tb.enter(0, 0, 1.1, PAR)
        .call(0, 0, 2.0, 3.0, EBAR)
        .call(0, 0, 3.0, 3.5, IBAR)
        .leave(0, 0, 3.5, PAR);
    tb.enter(0, 1, 1.2, PAR)
        .call(0, 1, worker_ebar, 3.0, EBAR)
        .call(0, 1, 3.4, 3.5, IBAR)
        .leave(0, 1, 3.5, PAR);
    if records {
        tb.ev(0, 1, 3.55, Ev::ThreadTeamEnd(1))
            .ev(0, 0, 3.5, Ev::ThreadTeamEnd(1))
            .ev(0, 0, 3.6, Ev::ThreadJoin);
    }
    tb.leave(0, 0, 4.0, MAIN);
    // file order = time order per location
    for t in &mut tb.procs[0] {
        t.sort_by_key(|e| e.0);
    }
    tb.run()
}

const P: &str = "main/!$omp parallel @t.c:1";
const P_EBAR: &str = "main/!$omp parallel @t.c:1/!$omp barrier @t.c:2";
const P_IBAR: &str = "main/!$omp parallel @t.c:1/!$omp implicit barrier @t.c:3";

#[test]
fn barrier_waits_fork_join_and_idle_threads() {
    let r = barrier_trace(2.9, true);
    r.check(&[
        // §4.7.2: L = 2.9 (explicit), 3.4 (implicit)
        ("omp_ebarrier_wait", P_EBAR, &[0.9, 0.0]),
        ("omp_ibarrier_wait", P_IBAR, &[0.4, 0.0]),
        // §4.7.1: fork = ENTER − 1.0, join = 3.6 − LEAVE
        ("omp_fork", P, &[0.1, 0.2]),
        ("omp_management", P, &[0.2, 0.3]),
        // §3.5.3: the worker owns a CPU while the master runs main serially
        ("omp_idle_threads", "main", &[0.0, 1.4]),
    ]);
    // §3.1.3: the worker's call paths hang below the master's (one tree, one root)
    assert_eq!(r.replay.tree.len(), 4);
    // §3.2: the fork and join intervals moved from main to the parallel region on the master
    // (main: 1.1 + 0.5 − 0.2) and were added to it on the worker; both threads' inclusive time
    // of the region is join − fork = 2.6
    let close = |got: f64, want: f64, what: &str| {
        assert!((got - want).abs() < TOL, "{what}: got {got}, want {want}")
    };
    close(r.v("execution", "main", 0), 1.4, "master time in main");
    close(r.v("time", "main", 1), 1.4, "worker time in main (idle)");
    close(r.v("execution", "main", 1), 0.0, "worker execution in main");
    for (l, own) in [(0u32, 0.9 + 0.2), (1, 1.7 + 0.4 + 0.3)] {
        close(r.v("time", P, l), own, "time of the parallel region");
    }
    let incl = |l: u32| r.v("time", P, l) + r.v("time", P_EBAR, l) + r.v("time", P_IBAR, l);
    close(incl(0), 2.6, "master inclusive");
    close(incl(1), 2.6, "worker inclusive");
    // §1.3: comp = execution − omp_time at the parallel region (management taken out)
    close(
        r.v("comp", P, 1),
        2.4 - 0.3,
        "worker computation in the region",
    );
    // no visits on the worker's inherited frames
    close(r.v("visits", "main", 1), 0.0, "worker visits of main");
    close(r.v("visits", P, 1), 1.0, "worker visits of the region");
}

#[test]
fn barrier_near_miss_simultaneous_arrival() {
    let r = barrier_trace(2.0, true);
    r.check(&[
        ("omp_ibarrier_wait", P_IBAR, &[0.4, 0.0]),
        ("omp_fork", P, &[0.1, 0.2]),
        ("omp_management", P, &[0.2, 0.3]),
        ("omp_idle_threads", "main", &[0.0, 1.4]),
    ]);
}

/// §4.7.1, §5.6: without fork and team records the master's ENTER and LEAVE of the region
/// stand for the fork and the join; the worker's stack is still prefixed (§3.1.3).
#[test]
fn traces_without_fork_records() {
    let r = barrier_trace(2.9, false);
    r.check(&[
        ("omp_ebarrier_wait", P_EBAR, &[0.9, 0.0]),
        ("omp_ibarrier_wait", P_IBAR, &[0.4, 0.0]),
        ("omp_fork", P, &[0.0, 0.1]),
        ("omp_management", P, &[0.0, 0.1]),
        // master: main 1.1 + 0.5
        ("omp_idle_threads", "main", &[0.0, 1.6]),
    ]);
}

/// Two threads contend for one lock (§4.7.3): the master holds it 1.0–1.5; the worker asks at
/// `ask` (ENTER of the critical construct or of omp_set_lock) and gets it at
/// max(ask, 1.5). `api`: the lock routines instead of a critical construct.
fn lock_trace(ask: f64, api: bool) -> Run {
    let mut tb = Tb::new(&[2]);
    let got = ask.max(1.5);
    tb.enter(0, 0, 0.0, MAIN)
        .ev(0, 0, 0.5, Ev::ThreadFork(2))
        .ev(0, 0, 0.5, Ev::ThreadTeamBegin(1))
        .enter(0, 0, 0.5, PAR)
        .ev(0, 1, 0.5, Ev::ThreadTeamBegin(1))
        .enter(0, 1, 0.5, PAR);
    // (thread, ENTER of the acquiring region, acquisition, release, order)
    for (t, enter, acq, rel, order) in [(0, 1.0, 1.0, 1.5, 0), (1, ask, got, got + 0.3, 1)] {
        if api {
            tb.enter(0, t, enter, SET_LOCK)
                .ev(0, t, acq, Ev::ThreadAcquireLock(7, order))
                .leave(0, t, acq, SET_LOCK)
                .enter(0, t, rel, UNSET_LOCK)
                .ev(0, t, rel, Ev::ThreadReleaseLock(7, order))
                .leave(0, t, rel, UNSET_LOCK);
        } else {
            tb.enter(0, t, enter, CRIT)
                .ev(0, t, acq, Ev::ThreadAcquireLock(7, order))
                .call(0, t, acq, rel, SBLOCK)
                .ev(0, t, rel, Ev::ThreadReleaseLock(7, order))
                .leave(0, t, rel, CRIT);
        }
    }
    tb.leave(0, 0, 3.0, PAR)
        .ev(0, 0, 3.0, Ev::ThreadTeamEnd(1))
        .ev(0, 0, 3.0, Ev::ThreadJoin)
        .leave(0, 1, 3.0, PAR)
        .ev(0, 1, 3.0, Ev::ThreadTeamEnd(1))
        .leave(0, 0, 3.0, MAIN);
    tb.run()
}

#[test]
fn critical_contention() {
    let r = lock_trace(1.1, false);
    r.check(&[
        (
            "omp_lock_contention_critical",
            "main/!$omp parallel @t.c:1/!$omp critical @t.c:4",
            &[0.0, 0.4],
        ),
        ("omp_idle_threads", "main", &[0.0, 0.5]),
    ]);
}

#[test]
fn critical_near_miss_after_release() {
    let r = lock_trace(1.6, false);
    r.check(&[("omp_idle_threads", "main", &[0.0, 0.5])]);
}

#[test]
fn lock_api_contention() {
    let r = lock_trace(1.2, true);
    r.check(&[
        (
            "omp_lock_contention_api",
            "main/!$omp parallel @t.c:1/omp_set_lock",
            &[0.0, 0.3],
        ),
        ("omp_idle_threads", "main", &[0.0, 0.5]),
    ]);
}

#[test]
fn lock_api_near_miss_asked_at_release() {
    let r = lock_trace(1.5, true);
    r.check(&[("omp_idle_threads", "main", &[0.0, 0.5])]);
}

/// Issue 13 point 4: parallel regions with different numbers of threads (Scalasca 2.6
/// aborts). Three threads; the first region (1.0–2.0) has all three, the second (3.0–5.0)
/// only threads 0 and 1. Thread 2 is idle during the second region: limited parallelism
/// (§3.5.4), the master's inclusive time there.
#[test]
fn teams_of_different_sizes() {
    let mut tb = Tb::new(&[3]);
    tb.enter(0, 0, 0.0, MAIN);
    for (par, fork, join, n) in [(PAR, 1.0, 2.0, 3usize), (PAR2, 3.0, 5.0, 2)] {
        tb.ev(0, 0, fork, Ev::ThreadFork(n as u32));
        for t in 0..n {
            // thread t arrives at the barrier at fork + 0.1 + 0.2·t
            let b = fork + 0.1 + 0.2 * t as f64;
            tb.ev(0, t, fork, Ev::ThreadTeamBegin(1))
                .enter(0, t, fork, par)
                .call(0, t, b, join, IBAR)
                .leave(0, t, join, par)
                .ev(0, t, join, Ev::ThreadTeamEnd(1));
        }
        tb.ev(0, 0, join, Ev::ThreadJoin);
    }
    tb.leave(0, 0, 6.0, MAIN);
    let r = tb.run();
    let p2 = "main/!$omp parallel @t.c:10";
    r.check(&[
        // region 1: L = 1.5; region 2: L = 3.3
        (
            "omp_ibarrier_wait",
            "main/!$omp parallel @t.c:1/!$omp implicit barrier @t.c:3",
            &[0.4, 0.2, 0.0],
        ),
        (
            "omp_ibarrier_wait",
            "main/!$omp parallel @t.c:10/!$omp implicit barrier @t.c:3",
            &[0.2, 0.0, 0.0],
        ),
        // main on the master: 0–1, 2–3, 5–6
        ("omp_idle_threads", "main", &[0.0, 3.0, 3.0]),
        ("omp_idle_threads", p2, &[0.0, 0.0, 2.0]),
        ("omp_limited_parallelism", p2, &[0.0, 0.0, 2.0]),
    ]);
    assert_eq!(r.replay.omp.teams.len(), 2);
    assert_eq!(r.replay.omp.teams[1].members.len(), 2);
}

/// Issue 13 point 3: a hybrid trace, 2 ranks × 2 threads. Rank 1's master receives inside
/// the parallel region (an `omp master` construct) a message rank 0's master sends 1 s
/// late: Late Sender is booked on rank 1's master thread (location 2), at the call path
/// below the parallel region.
#[test]
fn hybrid_late_sender_on_the_calling_thread() {
    let mut tb = Tb::new(&[2, 2]);
    let master_recv = "main/!$omp parallel @t.c:1/!$omp master @t.c:5/MPI_Recv";
    for p in 0..2 {
        tb.enter(p, 0, 0.0, MAIN)
            .ev(p, 0, 1.0, Ev::ThreadFork(2))
            .ev(p, 0, 1.0, Ev::ThreadTeamBegin(1 + p as u32))
            .enter(p, 0, 1.0, PAR)
            .enter(p, 0, 1.0, "!$omp master @t.c:5");
        if p == 0 {
            tb.enter(0, 0, 2.0, "MPI_Send")
                .ev(
                    0,
                    0,
                    2.0,
                    Ev::MpiSend {
                        to: 1,
                        comm: 0,
                        tag: 0,
                        bytes: 8,
                    },
                )
                .leave(0, 0, 2.1, "MPI_Send");
        } else {
            tb.enter(1, 0, 1.0, "MPI_Recv")
                .ev(
                    1,
                    0,
                    2.05,
                    Ev::MpiRecv {
                        from: 0,
                        comm: 0,
                        tag: 0,
                        bytes: 8,
                    },
                )
                .leave(1, 0, 2.1, "MPI_Recv");
        }
        tb.leave(p, 0, 2.1, "!$omp master @t.c:5")
            .call(p, 0, 2.1, 2.2, IBAR)
            .leave(p, 0, 2.2, PAR)
            .ev(p, 0, 2.2, Ev::ThreadTeamEnd(1 + p as u32))
            .ev(p, 0, 2.2, Ev::ThreadJoin)
            .leave(p, 0, 3.0, MAIN)
            .ev(p, 1, 1.0, Ev::ThreadTeamBegin(1 + p as u32))
            .enter(p, 1, 1.0, PAR)
            .call(p, 1, 1.1, 2.2, IBAR)
            .leave(p, 1, 2.2, PAR)
            .ev(p, 1, 2.2, Ev::ThreadTeamEnd(1 + p as u32));
    }
    let r = tb.run();
    r.check(&[
        ("mpi_latesender", master_recv, &[0.0, 0.0, 1.0, 0.0]),
        ("omp_ibarrier_wait", P_IBAR, &[0.0, 1.0, 0.0, 1.0]),
        ("omp_idle_threads", "main", &[0.0, 1.8, 0.0, 1.8]),
    ]);
}

/// Issue 13 point 4 on a trace of the official OTF2 writer (testdata/generated/omp_teams4,
/// `tools/gen_trace.py --pattern omp-teams`, commands in its README): teams of 4 and 2
/// threads alternate. The values follow from the generator's timing model (ns): in a team of
/// 4, thread k reaches the critical section at fork + 500 + 50k + round(2000 (1 + 0.2 k/3)),
/// i.e. +2500, +2683, +2867, +3050, and the lock is held 500 ns from max(arrival + 200,
/// previous release + 100): thread 1 waits 3200 − 2683 = 517, thread 2 3800 − 2867 = 933,
/// thread 3 4400 − 3050 = 1350; in a team of 2 thread 1 arrives at +2950 and waits
/// 3200 − 2950 = 250. A team of 2 lives 4710 ns from fork to join: threads 2 and 3 owe it as
/// limited parallelism.
#[test]
fn generated_trace_with_teams_of_4_and_2_threads() {
    let trace = perfexpert::open(&common::testdata("generated/omp_teams4/traces.otf2")).unwrap();
    let replay = Replay::new(&trace);
    let a = perfexpert::analysis::analyse(&trace, &replay, RuleSet::load(&[]).unwrap());
    let sizes: Vec<usize> = replay.omp.teams.iter().map(|t| t.members.len()).collect();
    assert_eq!(sizes, [4, 2, 4, 2]);
    let r = Run {
        _dir: tempfile::tempdir().unwrap(),
        trace,
        replay,
        a,
    };
    let p = "main/!$omp parallel @gen.c:10";
    let ns = |x: f64| x * 1e-9;
    let close = |got: f64, want: f64, what: &str| {
        assert!((got - want).abs() < 1e-12, "{what}: got {got}, want {want}")
    };
    let crit = format!("{p}/!$omp critical @gen.c:12");
    for (l, want) in [0.0, 2.0 * (517.0 + 250.0), 2.0 * 933.0, 2.0 * 1350.0]
        .into_iter()
        .enumerate()
    {
        close(
            r.v("omp_lock_contention_critical", &crit, l as u32),
            ns(want),
            "critical contention",
        );
    }
    for (l, want) in [0.0, 0.0, 2.0 * 4710.0, 2.0 * 4710.0]
        .into_iter()
        .enumerate()
    {
        close(
            r.v("omp_limited_parallelism", p, l as u32),
            ns(want),
            "limited parallelism",
        );
    }
}

/// MPI called from a worker thread (MPI_THREAD_MULTIPLE, or `omp single` on another thread):
/// rank 1's thread 1 receives the message rank 0's master sends 1 s late, and rank 0's
/// thread 1 meets rank 1's master in an MPI_Barrier. The communicators name processes by
/// their master; the waits go to the threads that called MPI (§3.6).
#[test]
fn hybrid_mpi_on_worker_threads() {
    let mut tb = Tb::new(&[2, 2]);
    let recv = "main/!$omp parallel @t.c:1/MPI_Recv";
    let barrier = "main/!$omp parallel @t.c:1/MPI_Barrier";
    let world_barrier = Ev::MpiCollectiveEnd {
        op: 0,
        comm: 0,
        root: u32::MAX,
        sent: 0,
        recvd: 0,
    };
    for p in 0..2 {
        tb.enter(p, 0, 0.0, MAIN)
            .ev(p, 0, 1.0, Ev::ThreadFork(2))
            .ev(p, 0, 1.0, Ev::ThreadTeamBegin(1 + p as u32))
            .enter(p, 0, 1.0, PAR)
            .ev(p, 1, 1.0, Ev::ThreadTeamBegin(1 + p as u32))
            .enter(p, 1, 1.0, PAR);
    }
    // rank 0: the master sends at 2.0; thread 1 enters the barrier at 2.5
    tb.enter(0, 0, 2.0, "MPI_Send")
        .ev(
            0,
            0,
            2.0,
            Ev::MpiSend {
                to: 1,
                comm: 0,
                tag: 0,
                bytes: 8,
            },
        )
        .leave(0, 0, 2.1, "MPI_Send")
        .enter(0, 1, 2.5, "MPI_Barrier")
        .ev(0, 1, 2.5, Ev::MpiCollectiveBegin)
        .ev(0, 1, 2.6, world_barrier)
        .leave(0, 1, 2.6, "MPI_Barrier");
    // rank 1: thread 1 receives from 1.0; the master enters the barrier at 1.5
    tb.enter(1, 1, 1.0, "MPI_Recv")
        .ev(
            1,
            1,
            2.05,
            Ev::MpiRecv {
                from: 0,
                comm: 0,
                tag: 0,
                bytes: 8,
            },
        )
        .leave(1, 1, 2.1, "MPI_Recv")
        .enter(1, 0, 1.5, "MPI_Barrier")
        .ev(1, 0, 1.5, Ev::MpiCollectiveBegin)
        .ev(1, 0, 2.6, world_barrier)
        .leave(1, 0, 2.6, "MPI_Barrier");
    for p in 0..2 {
        for t in 0..2 {
            tb.leave(p, t, 3.0, PAR)
                .ev(p, t, 3.0, Ev::ThreadTeamEnd(1 + p as u32));
        }
        tb.ev(p, 0, 3.0, Ev::ThreadJoin).leave(p, 0, 4.0, MAIN);
    }
    let r = tb.run();
    r.check(&[
        ("mpi_latesender", recv, &[0.0, 0.0, 0.0, 1.0]),
        ("omp_idle_threads", "main", &[0.0, 2.0, 0.0, 2.0]),
    ]);
    let close = |got: f64, want: f64, what: &str| {
        assert!((got - want).abs() < TOL, "{what}: got {got}, want {want}")
    };
    close(
        r.v("mpi_barrier_wait", barrier, 2),
        1.0,
        "rank 1 master waits",
    );
    close(
        r.v("mpi_barrier_wait", barrier, 1),
        0.0,
        "rank 0 thread 1 is last",
    );
    assert_eq!(r.replay.matching.messages, 1);
    assert_eq!(r.replay.collectives.instances, 1);
}

/// §4.7.2: time a thread spends executing tasks inside a barrier is not waiting. The master
/// arrives at the implicit barrier at 3.0, 0.4 s before the worker, and runs a task there
/// from 3.1 to 3.3: it waited 0.2 s.
#[test]
fn tasks_executed_in_a_barrier_are_not_waiting() {
    let mut tb = Tb::new(&[2]);
    let task = "!$omp task @t.c:6";
    tb.enter(0, 0, 0.0, MAIN)
        .ev(0, 0, 1.0, Ev::ThreadFork(2))
        .ev(0, 0, 1.0, Ev::ThreadTeamBegin(1))
        .enter(0, 0, 1.0, PAR)
        .enter(0, 0, 3.0, IBAR)
        .call(0, 0, 3.1, 3.3, task)
        .leave(0, 0, 3.5, IBAR)
        .leave(0, 0, 3.5, PAR)
        .ev(0, 0, 3.5, Ev::ThreadTeamEnd(1))
        .ev(0, 0, 3.5, Ev::ThreadJoin)
        .leave(0, 0, 4.0, MAIN)
        .ev(0, 1, 1.0, Ev::ThreadTeamBegin(1))
        .enter(0, 1, 1.0, PAR)
        .call(0, 1, 3.4, 3.5, IBAR)
        .leave(0, 1, 3.5, PAR)
        .ev(0, 1, 3.5, Ev::ThreadTeamEnd(1));
    let r = tb.run();
    r.check(&[
        ("omp_ibarrier_wait", P_IBAR, &[0.2, 0.0]),
        ("omp_idle_threads", "main", &[0.0, 1.5]),
    ]);
}

/// Broken thread streams (a worker's team events before any fork, a team end without a
/// begin, a fork without a join, a parallel region never left, a lock released by nobody
/// who acquired it) are analysed without a panic: the unbalanced stream is repaired (§3.4)
/// and the orphan parallel region belongs to no team.
#[test]
fn broken_thread_streams_are_analysed() {
    let mut tb = Tb::new(&[3]);
    tb.enter(0, 0, 0.0, MAIN)
        .ev(0, 0, 1.0, Ev::ThreadReleaseLock(3, 0))
        .ev(0, 0, 2.0, Ev::ThreadFork(3))
        .enter(0, 0, 2.0, PAR)
        .ev(0, 0, 2.1, Ev::ThreadAcquireLock(3, 1))
        .call(0, 0, 2.5, 3.0, IBAR)
        .leave(0, 0, 3.0, PAR)
        .leave(0, 0, 4.0, MAIN);
    // thread 1: a team and a parallel region before the master's first fork, then a team
    // end without a begin, then a region it never leaves
    tb.ev(0, 1, 0.5, Ev::ThreadTeamBegin(1))
        .call(0, 1, 0.5, 0.6, PAR)
        .ev(0, 1, 0.7, Ev::ThreadTeamEnd(1))
        .ev(0, 1, 1.5, Ev::ThreadTeamEnd(1))
        .ev(0, 1, 2.0, Ev::ThreadTeamBegin(1))
        .enter(0, 1, 2.0, PAR)
        .call(0, 1, 2.2, 3.0, IBAR);
    // thread 2: only a lock acquisition, outside any region
    tb.ev(0, 2, 2.2, Ev::ThreadAcquireLock(3, 2));
    let r = tb.run();
    assert_eq!(r.replay.omp.stats.orphan_regions, 1);
    // and the report says so
    let findings = perfexpert::analysis::scores::score(
        &r.trace,
        &r.replay,
        &r.a,
        perfexpert::analysis::scores::ScoreParams::default(),
    );
    let report = perfexpert::report::Report::build(
        &r.trace,
        &r.replay,
        &r.a,
        findings,
        perfexpert::analysis::scores::ScoreParams::default(),
    );
    assert_eq!(
        report.diagnostics.warnings,
        [
            "1 parallel-region instance(s) on threads whose master had not forked: in no team, \
          no fork/join or barrier analysis"
        ]
    );
    assert_eq!(r.replay.omp.teams.len(), 1);
    assert_eq!(r.replay.omp.teams[0].members.len(), 2);
    // the region left open on thread 1 was closed at its last event (a repair)
    let repairs: u64 = r.replay.locations[1].repairs.iter().sum();
    assert_eq!(repairs, 1);
    // the orphan region has no master stack to hang below: a root of its own, so the tree
    // gets the artificial root of §3.1.4
    let paths: Vec<String> = (0..r.replay.tree.len() as u32)
        .map(|c| r.replay.path_name(&r.trace, c))
        .collect();
    assert!(
        paths.contains(&"program/!$omp parallel @t.c:1".to_string()),
        "{paths:?}"
    );
    // the barrier instance is still formed: thread 1 (at 2.2) waits for the master (2.5)
    let close = |got: f64, want: f64| assert!((got - want).abs() < TOL, "{got} vs {want}");
    let ibar = format!("program/{P_IBAR}");
    close(r.v("omp_ibarrier_wait", &ibar, 1), 0.3);
    close(r.v("omp_ibarrier_wait", &ibar, 0), 0.0);
    // the acquisition after the stray release: 1.0 − ENTER of its region (2.0) < 0, nothing
    close(
        r.v("omp_lock_contention_critical", &format!("program/{P}"), 0),
        0.0,
    );
}

/// Issue 13: OpenMP tasks suspended and resumed, on a trace of the official OTF2 writer
/// (testdata/generated/omp_tasks2, `tools/gen_trace.py --pattern omp-tasks`, 2 threads,
/// 2 iterations, W = 1000 ns, g = 100 ns; commands in its README). On each thread a producer
/// task P and a consumer task C interleave (P suspended inside `produce`, C suspended inside
/// `consume`) with THREAD_TASK_SWITCH records: one call stack per task, so no repairs, and
/// every task's call paths hang below the call path where it first ran — P below the
/// taskwait (master) or the implicit barrier (thread 1), C below P's `produce`, which it
/// interrupted. Per pair (generator docstring): P's task region 2g, produce W + g, C's task
/// region 2g, consume W + g, 6g + 2W in all. Thread 1 enters the barrier at +550 ns after its
/// fork and the master at +4100 ns (after its taskwait): thread 1 waited 3650 − 2600 (its
/// task time) = 1050 ns per iteration.
#[test]
fn generated_trace_with_interleaved_tasks() {
    let trace = perfexpert::open(&common::testdata("generated/omp_tasks2/traces.otf2")).unwrap();
    let replay = Replay::new(&trace);
    let a = perfexpert::analysis::analyse(&trace, &replay, RuleSet::load(&[]).unwrap());
    let r = Run {
        _dir: tempfile::tempdir().unwrap(),
        trace,
        replay,
        a,
    };
    for (l, s) in r.replay.locations.iter().enumerate() {
        assert_eq!(s.repairs.iter().sum::<u64>(), 0, "repairs on location {l}");
        assert_eq!(s.clamped, 0);
    }
    let (g, w) = (100u64, 1000u64);
    let par = "main/!$omp parallel @gen.c:20";
    let tw = format!("{par}/!$omp taskwait @gen.c:26");
    let ibar = format!("{par}/!$omp implicit barrier @gen.c:28");
    // (call path below the place the pair ran, exclusive ticks per pair)
    let pair = |at: &str| -> Vec<(String, u64)> {
        let p = format!("{at}/!$omp task untied @gen.c:22");
        let produce = format!("{p}/produce");
        let c = format!("{produce}/!$omp task untied @gen.c:24");
        let consume = format!("{c}/consume");
        vec![(p, 2 * g), (produce, w + g), (c, 2 * g), (consume, w + g)]
    };
    for (l, at) in [(0usize, tw.as_str()), (1, ibar.as_str())] {
        let s = &r.replay.locations[l];
        for (path, ticks) in pair(at) {
            let c = r.cnode(&path) as usize;
            assert_eq!(s.time[c], 2 * ticks, "time of {path} on location {l}");
            assert_eq!(s.visits[c], 2, "visits of {path} on location {l}");
        }
    }
    // the taskwait itself: g before the first switch and g after the last, per iteration
    let c = r.cnode(&tw) as usize;
    assert_eq!(r.replay.locations[0].time[c], 2 * 2 * g);
    // thread 1's barrier: entered at fork + 550, left at fork + 4401 + 10 (the master's
    // barrier Enter 4200, + 200 ns, + 10 ns per thread number); its tasks' 2600 ns are not
    // the barrier's
    let c = r.cnode(&ibar) as usize;
    assert_eq!(
        r.replay.locations[1].time[c],
        2 * (4410 - 550 - (6 * g + 2 * w))
    );
    let ns = |x: f64| x * 1e-9;
    r.check(&[
        ("omp_ibarrier_wait", &ibar, &[0.0, ns(2.0 * 1050.0)]),
        // fork = parallel Enter − fork (300, 350 ns); join = join − parallel Leave (209 on
        // the master, whose Leave is 1 tick after its barrier's, 200 on thread 1)
        ("omp_fork", par, &[ns(2.0 * 300.0), ns(2.0 * 350.0)]),
        ("omp_management", par, &[ns(2.0 * 509.0), ns(2.0 * 550.0)]),
        // the master runs main alone 100 ns before each fork and after the last join
        ("omp_idle_threads", "main", &[0.0, ns(300.0)]),
    ]);
}

/// Nested parallelism (patterns.md §5.6) is not modelled: a worker that forks an inner team
/// and enters a parallel region inside its outer one is analysed as a member of the outer team,
/// and the report says so instead of staying silent. A flat trace gets no such warning.
#[test]
fn nested_parallelism_is_reported_not_silently_flattened() {
    let mut tb = Tb::new(&[3]);
    tb.enter(0, 0, 0.0, MAIN)
        .ev(0, 0, 1.0, Ev::ThreadFork(2))
        .enter(0, 0, 1.0, PAR)
        .call(0, 0, 1.5, 2.0, IBAR)
        .leave(0, 0, 2.0, PAR)
        .ev(0, 0, 2.0, Ev::ThreadJoin)
        .leave(0, 0, 3.0, MAIN);
    // thread 1 of the outer team forks an inner team of 2 and runs the inner region itself
    tb.ev(0, 1, 1.0, Ev::ThreadTeamBegin(1))
        .enter(0, 1, 1.0, PAR)
        .ev(0, 1, 1.1, Ev::ThreadFork(2))
        .call(0, 1, 1.1, 1.4, PAR2)
        .ev(0, 1, 1.4, Ev::ThreadJoin)
        .call(0, 1, 1.5, 2.0, IBAR)
        .leave(0, 1, 2.0, PAR)
        .ev(0, 1, 2.0, Ev::ThreadTeamEnd(1));
    // thread 2: the inner team's other member
    tb.call(0, 2, 1.1, 1.4, PAR2);
    let r = tb.run();
    assert_eq!(r.replay.omp.stats.nested_regions, 1);
    assert_eq!(r.replay.omp.stats.worker_forks, 1);
    let params = perfexpert::analysis::scores::ScoreParams::default();
    let findings = perfexpert::analysis::scores::score(&r.trace, &r.replay, &r.a, params);
    let report = perfexpert::report::Report::build(&r.trace, &r.replay, &r.a, findings, params);
    assert!(
        report.diagnostics.warnings.iter().any(|w| w
            == "nested parallelism is not modelled: 1 parallel-region instance(s) inside \
                another, 1 fork(s) by worker threads; their threads are analysed as members \
                of the outer team"),
        "{:?}",
        report.diagnostics.warnings
    );

    // near miss: the same team without the inner fork and region
    let mut flat = Tb::new(&[2]);
    flat.enter(0, 0, 0.0, MAIN)
        .ev(0, 0, 1.0, Ev::ThreadFork(2))
        .enter(0, 0, 1.0, PAR)
        .call(0, 0, 1.5, 2.0, IBAR)
        .leave(0, 0, 2.0, PAR)
        .ev(0, 0, 2.0, Ev::ThreadJoin)
        .leave(0, 0, 3.0, MAIN);
    flat.ev(0, 1, 1.0, Ev::ThreadTeamBegin(1))
        .enter(0, 1, 1.0, PAR)
        .call(0, 1, 1.5, 2.0, IBAR)
        .leave(0, 1, 2.0, PAR)
        .ev(0, 1, 2.0, Ev::ThreadTeamEnd(1));
    let r = flat.run();
    assert_eq!(
        (
            r.replay.omp.stats.nested_regions,
            r.replay.omp.stats.worker_forks
        ),
        (0, 0)
    );
}
