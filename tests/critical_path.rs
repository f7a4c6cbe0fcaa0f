//! The critical path, what-if, the wait and traffic matrices and the overhead classes
//! (issue 14): hand-built traces where the answer is known by hand (times in seconds, a timer
//! of 1e9 ticks per second), and the Score-P traces of ../shared (the path never exceeds the
//! run; it equals the run where one rank computes while the others wait).

mod common;

use common::otf2_builder::{mpi_ranks_archive, Ev};
use perfexpert::analysis::critical_path::{critical_path, Graph};
use perfexpert::analysis::matrices::{traffic_matrix, wait_matrix};
use perfexpert::replay::Replay;
use perfexpert::Trace;

const TOL: f64 = 1e-9;
const ROLE_FUNCTION: u8 = 1;
const ROLE_BARRIER: u8 = 15;
const ROLE_ONE2ALL: u8 = 23;
const ROLE_POINT2POINT: u8 = 28;
const PARADIGM_USER: u8 = 1;
const PARADIGM_MPI: u8 = 4;

fn kind(name: &str) -> (u8, u8) {
    match name {
        "MPI_Barrier" => (ROLE_BARRIER, PARADIGM_MPI),
        "MPI_Bcast" => (ROLE_ONE2ALL, PARADIGM_MPI),
        n if n.starts_with("MPI_") => (ROLE_POINT2POINT, PARADIGM_MPI),
        _ => (ROLE_FUNCTION, PARADIGM_USER),
    }
}

const REGIONS: [&str; 8] = [
    "main",
    "work",
    "MPI_Send",
    "MPI_Recv",
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Ssend",
    "MPI_Bsend",
];

fn reg(name: &str) -> u32 {
    REGIONS.iter().position(|r| *r == name).unwrap() as u32
}

fn t(s: f64) -> u64 {
    (s * 1e9).round() as u64
}

fn en(s: f64, r: &str) -> (u64, Ev) {
    (t(s), Ev::Enter(reg(r)))
}
fn lv(s: f64, r: &str) -> (u64, Ev) {
    (t(s), Ev::Leave(reg(r)))
}

/// A blocking send from inside MPI_Send at `s0`..`s1`.
fn send(s0: f64, s1: f64, to: u32, bytes: u64) -> Vec<(u64, Ev)> {
    send_in("MPI_Send", s0, s1, to, bytes)
}

/// A send from inside the call `name` at `s0`..`s1`.
fn send_in(name: &str, s0: f64, s1: f64, to: u32, bytes: u64) -> Vec<(u64, Ev)> {
    vec![
        en(s0, name),
        (
            t(s0),
            Ev::MpiSend {
                to,
                comm: 0,
                tag: 0,
                bytes,
            },
        ),
        lv(s1, name),
    ]
}

/// A blocking receive: MPI_Recv entered at `s0`, message received at `s1`, left at `s2`.
fn recv(s0: f64, s1: f64, s2: f64, from: u32, bytes: u64) -> Vec<(u64, Ev)> {
    vec![
        en(s0, "MPI_Recv"),
        (
            t(s1),
            Ev::MpiRecv {
                from,
                comm: 0,
                tag: 0,
                bytes,
            },
        ),
        lv(s2, "MPI_Recv"),
    ]
}

/// A collective call: entered at `s0`, ended at `s1`.
fn coll(name: &str, op: u8, root: u32, s0: f64, s1: f64) -> Vec<(u64, Ev)> {
    vec![
        en(s0, name),
        (t(s0), Ev::MpiCollectiveBegin),
        (
            t(s1),
            Ev::MpiCollectiveEnd {
                op,
                comm: 0,
                root,
                sent: 0,
                recvd: 0,
            },
        ),
        lv(s1, name),
    ]
}

fn work(s0: f64, s1: f64) -> Vec<(u64, Ev)> {
    vec![en(s0, "work"), lv(s1, "work")]
}

fn build(ranks: Vec<Vec<Vec<(u64, Ev)>>>) -> (tempfile::TempDir, Trace) {
    let regions: Vec<(&str, u8, u8)> = REGIONS
        .iter()
        .map(|n| {
            let (role, p) = kind(n);
            (*n, role, p)
        })
        .collect();
    let streams: Vec<Vec<(u64, Ev)>> = ranks.into_iter().map(|r| r.concat()).collect();
    let world: Vec<u64> = (0..streams.len() as u64).collect();
    let archive = mpi_ranks_archive(1_000_000_000, &regions, &[world], &streams);
    let dir = tempfile::tempdir().unwrap();
    let anchor = archive.write(dir.path());
    let trace = perfexpert::open(&anchor).unwrap();
    (dir, trace)
}

fn share(list: &[perfexpert::analysis::critical_path::Share], name: &str) -> f64 {
    list.iter()
        .find(|s| s.name == name)
        .map_or(0.0, |s| s.time_s)
}

/// Rank 0 works 3 s and sends; rank 1 works 1 s, then waits in MPI_Recv until 3.5 s, and
/// works on until 5 s. The path: rank 0's work (3 s), the message (3 → 3.5), rank 1's
/// MPI_Recv (3.5 → 3.6) and work (3.6 → 5): 5 s, the whole run; rank 1's wait is not on it.
fn late_sender() -> (tempfile::TempDir, Trace) {
    build(vec![
        vec![
            vec![en(0.0, "main")],
            work(0.0, 3.0),
            send(3.0, 3.1, 1, 1000),
            vec![lv(4.0, "main")],
        ],
        vec![
            vec![en(0.0, "main")],
            work(0.0, 1.0),
            recv(1.0, 3.5, 3.6, 0, 1000),
            work(3.6, 5.0),
            vec![lv(5.0, "main")],
        ],
    ])
}

#[test]
fn a_late_sender_puts_the_sender_on_the_path() {
    let (_d, trace) = late_sender();
    let replay = Replay::new(&trace);
    let cp = critical_path(&trace, &replay, &["work".into(), "MPI_Recv".into()]).unwrap();
    assert!((cp.length_s - 5.0).abs() < TOL, "{}", cp.length_s);
    assert!((cp.duration_s - 5.0).abs() < TOL);
    assert!(
        (share(&cp.regions, "work") - 4.4).abs() < TOL,
        "{:?}",
        cp.regions
    );
    assert!(
        (share(&cp.regions, "MPI_Recv") - 0.6).abs() < TOL,
        "{:?}",
        cp.regions
    );
    assert!(share(&cp.regions, "MPI_Send").abs() < TOL);
    assert!(share(&cp.regions, "main").abs() < TOL);
    // per rank: 3 s on rank 0, 2 s on rank 1
    let on = |r: u32| {
        cp.locations
            .iter()
            .find(|l| l.rank == Some(r))
            .map_or(0.0, |l| l.time_s)
    };
    assert!((on(0) - 3.0).abs() < TOL && (on(1) - 2.0).abs() < TOL);
    // two stretches: rank 0 from the start, rank 1 after the message
    assert_eq!(cp.segments.len(), 2, "{:?}", cp.segments);
    assert_eq!((cp.segments[0].location, cp.segments[0].via), (0, "start"));
    assert_eq!(
        (cp.segments[1].location, cp.segments[1].via),
        (1, "message")
    );
    assert!((cp.segments[1].start_s - 3.0).abs() < TOL);
    assert!((cp.segments[1].end_s - 5.0).abs() < TOL);
    // what if `work` took no time: rank 0's MPI_Send (0.1) and main (0.9) remain: 1 s
    assert_eq!(cp.what_if[0].region, "work");
    assert!(
        (cp.what_if[0].length_s - 1.0).abs() < TOL,
        "{:?}",
        cp.what_if
    );
    assert!((cp.what_if[0].saved_s - 4.0).abs() < TOL);
    // what if MPI_Recv took no time: rank 1 would still wait for rank 0 (0.5 s saved: the
    // message and the receive are gone, rank 1's 1.4 s of work stay)
    assert!(
        (cp.what_if[1].length_s - 4.4).abs() < TOL,
        "{:?}",
        cp.what_if
    );
    // an unknown region is an error naming it
    assert_eq!(
        critical_path(&trace, &replay, &["nope".into()]).unwrap_err(),
        "nope"
    );
}

#[test]
fn wait_and_traffic_matrices_of_a_late_sender() {
    let (_d, trace) = late_sender();
    let replay = Replay::new(&trace);
    let g = Graph::new(&trace, &replay);
    let w = wait_matrix(&trace, &g);
    assert_eq!(w.ranks, 2);
    // rank 1 waits 2 s (1 → 3) for rank 0: 40 % of the 5 s run
    assert!(w.rows[0].waits_for.is_empty() && w.rows[0].total_s == 0.0);
    assert_eq!(w.rows[1].waits_for.len(), 1);
    assert_eq!(w.rows[1].waits_for[0].rank, 0);
    assert!((w.rows[1].waits_for[0].time_s - 2.0).abs() < TOL);
    assert!((w.rows[1].waits_for[0].percent - 40.0).abs() < 1e-6);
    assert!((w.rows[1].total_percent - 40.0).abs() < 1e-6);
    let m = traffic_matrix(&trace, &replay);
    assert_eq!(m.cells.len(), 1);
    let c = &m.cells[0];
    assert_eq!((c.from, c.to, c.count, c.bytes), (0, 1, 1, 1000));
    // send call entered at 3 s, receive call left at 3.6 s
    assert!((c.rate_bytes_per_s.unwrap() - 1000.0 / 0.6).abs() < 1e-6);
    assert_eq!(m.communicators.len(), 1);
    assert_eq!(m.communicators[0].communicator, "MPI_COMM_WORLD");
}

/// Rank 0 works 1 s, then sends in `send_call` from 1 s to 4.1 s and works on until 6 s;
/// rank 1 computes until 4 s before it posts the receive (4 → 4.1 s) and ends at 4.5 s.
fn late_receiver(send_call: &str) -> (tempfile::TempDir, Trace) {
    build(vec![
        vec![
            vec![en(0.0, "main")],
            work(0.0, 1.0),
            send_in(send_call, 1.0, 4.1, 1, 8),
            work(4.1, 6.0),
            vec![lv(6.0, "main")],
        ],
        vec![
            vec![en(0.0, "main")],
            work(0.0, 4.0),
            recv(4.0, 4.05, 4.1, 0, 8),
            work(4.1, 4.5),
            vec![lv(4.5, "main")],
        ],
    ])
}

/// A synchronous send that waits for a late receiver depends on the receive's ENTER: the
/// path is rank 1's 4 s of computation, the last 0.1 s of MPI_Ssend (after the receive was
/// posted) and rank 0's 1.9 s of work; rank 0's 3 s blocked in MPI_Ssend are not on it.
#[test]
fn a_late_receiver_puts_the_receivers_computation_on_the_path() {
    let (_d, trace) = late_receiver("MPI_Ssend");
    let replay = Replay::new(&trace);
    let cp = critical_path(&trace, &replay, &["work".into(), "MPI_Ssend".into()]).unwrap();
    assert!((cp.length_s - 6.0).abs() < TOL, "{}", cp.length_s);
    assert!((cp.duration_s - 6.0).abs() < TOL);
    assert!(
        (share(&cp.regions, "work") - 5.9).abs() < TOL,
        "{:?}",
        cp.regions
    );
    assert!(
        (share(&cp.regions, "MPI_Ssend") - 0.1).abs() < TOL,
        "{:?}",
        cp.regions
    );
    let on = |r: u32| {
        cp.locations
            .iter()
            .find(|l| l.rank == Some(r))
            .map_or(0.0, |l| l.time_s)
    };
    assert!((on(1) - 4.0).abs() < TOL && (on(0) - 2.0).abs() < TOL);
    assert_eq!(cp.segments.len(), 2, "{:?}", cp.segments);
    assert_eq!((cp.segments[0].location, cp.segments[0].via), (1, "start"));
    assert_eq!(
        (cp.segments[1].location, cp.segments[1].via),
        (0, "message")
    );
    assert!(
        (cp.segments[1].start_s - 4.0).abs() < TOL,
        "{:?}",
        cp.segments
    );
    // without any work only the send after the receive was posted remains (rank 0: 0.1 s;
    // rank 1: the 0.1 s receive after the send started)
    assert!(
        (cp.what_if[0].length_s - 0.1).abs() < TOL,
        "{:?}",
        cp.what_if
    );
    // without MPI_Ssend: rank 1's 4 s, then rank 0's 1.9 s
    assert!(
        (cp.what_if[1].length_s - 5.9).abs() < TOL,
        "{:?}",
        cp.what_if
    );
    // rank 0 waits 3 s for rank 1 (50 % of the run)
    let g = Graph::new(&trace, &replay);
    let w = wait_matrix(&trace, &g);
    assert_eq!(w.rows[0].waits_for.len(), 1, "{:?}", w.rows[0]);
    assert_eq!(w.rows[0].waits_for[0].rank, 1);
    assert!((w.rows[0].waits_for[0].time_s - 3.0).abs() < TOL);
    assert!(w.rows[1].waits_for.is_empty(), "{:?}", w.rows[1]);
}

/// A buffered send never waits for the receiver (patterns.md §4.3): MPI_Bsend's 3.1 s are
/// rank 0's own time, and the path stays on rank 0.
#[test]
fn a_buffered_send_does_not_depend_on_the_receiver() {
    let (_d, trace) = late_receiver("MPI_Bsend");
    let replay = Replay::new(&trace);
    let cp = critical_path(&trace, &replay, &[]).unwrap();
    assert!((cp.length_s - 6.0).abs() < TOL, "{}", cp.length_s);
    assert!(
        (share(&cp.regions, "MPI_Bsend") - 3.1).abs() < TOL,
        "{:?}",
        cp.regions
    );
    assert_eq!(cp.locations.len(), 1, "{:?}", cp.locations);
    assert_eq!(cp.locations[0].rank, Some(0));
}

/// Three ranks meet in a barrier; rank 2 computes 2 s, the others 0.5 s and wait. The path is
/// rank 2 throughout and as long as the run.
#[test]
fn one_rank_computes_while_the_others_wait_at_a_barrier() {
    let rank = |w: f64| {
        vec![
            vec![en(0.0, "main")],
            work(0.0, w),
            coll("MPI_Barrier", 0, u32::MAX, w, 2.1),
            vec![lv(2.2, "main")],
        ]
    };
    let (_d, trace) = build(vec![rank(0.5), rank(0.5), rank(2.0)]);
    let replay = Replay::new(&trace);
    let cp = critical_path(&trace, &replay, &["work".into()]).unwrap();
    assert!((cp.length_s - 2.2).abs() < TOL, "{}", cp.length_s);
    assert!((cp.length_s - cp.duration_s).abs() < TOL);
    assert_eq!(cp.locations.len(), 1, "{:?}", cp.locations);
    assert_eq!(cp.locations[0].rank, Some(2));
    assert!((share(&cp.regions, "work") - 2.0).abs() < TOL);
    assert!((share(&cp.regions, "MPI_Barrier") - 0.1).abs() < TOL);
    // without work, rank 2 would reach the barrier at once: what remains is the barrier's
    // own 0.1 s after the last arrival and main's 0.1 s after it
    assert!(
        (cp.what_if[0].length_s - 0.2).abs() < TOL,
        "{:?}",
        cp.what_if
    );
    let g = Graph::new(&trace, &replay);
    let w = wait_matrix(&trace, &g);
    for r in 0..2 {
        assert_eq!(w.rows[r].waits_for.len(), 1);
        assert_eq!(w.rows[r].waits_for[0].rank, 2);
        assert!((w.rows[r].waits_for[0].time_s - 1.5).abs() < TOL);
    }
    assert!(w.rows[2].waits_for.is_empty());
}

/// A broadcast waits only for its root: rank 1 (not the root) arrives last, nobody waits for
/// it; rank 2 waits for the root, rank 0, which arrives at 1 s.
#[test]
fn a_broadcast_depends_on_its_root_only() {
    let rank = |w: f64| {
        vec![
            vec![en(0.0, "main")],
            work(0.0, w),
            coll("MPI_Bcast", 1, 0, w, 1.5_f64.max(w + 0.1)),
            vec![lv(3.0, "main")],
        ]
    };
    let (_d, trace) = build(vec![rank(1.0), rank(2.0), rank(0.2)]);
    let replay = Replay::new(&trace);
    let g = Graph::new(&trace, &replay);
    let w = wait_matrix(&trace, &g);
    assert!(w.rows[0].waits_for.is_empty(), "{:?}", w.rows[0]);
    assert!(w.rows[1].waits_for.is_empty(), "{:?}", w.rows[1]);
    assert_eq!(w.rows[2].waits_for.len(), 1);
    assert_eq!(w.rows[2].waits_for[0].rank, 0);
    assert!((w.rows[2].waits_for[0].time_s - 0.8).abs() < TOL);
}

#[test]
fn the_path_never_exceeds_the_run_on_the_scorep_traces() {
    let Some(shared) = common::shared() else {
        return;
    };
    let dir = shared.join("traces/scorep");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        if !e.path().join("traces.otf2").exists() {
            continue;
        }
        let trace = perfexpert::open(&e.path()).unwrap();
        let replay = Replay::new(&trace);
        let cp = critical_path(&trace, &replay, &["MPI_Init".into()]).unwrap();
        let name = e.file_name().to_string_lossy().to_string();
        assert!(cp.length_s > 0.0, "{name}");
        assert!(
            cp.length_s <= cp.duration_s + TOL,
            "{name}: {} > {}",
            cp.length_s,
            cp.duration_s
        );
        assert!(cp.what_if[0].length_s <= cp.length_s + TOL, "{name}");
        assert_eq!(cp.broken_dependencies, 0, "{name}");
        // the shares add up to the length
        let sum: f64 = cp.regions.iter().map(|s| s.time_s).sum();
        assert!((sum - cp.length_s).abs() < 1e-6, "{name}");
        let seg: f64 = cp.segments.iter().map(|s| s.length_s).sum();
        assert!((seg - cp.length_s).abs() < 1e-6, "{name}");
        if name == "barrier" {
            // rank r sleeps (r+1)·50 ms before each of 3 barriers: rank 3 computes while the
            // others wait, so the path is rank 3 and as long as the run
            assert!((cp.length_s - cp.duration_s).abs() < TOL, "{}", cp.length_s);
            // after the start-up delay (rank 0 began 222 ms before the last process to reach
            // MPI_Init), every step of the path is on rank 3
            assert_eq!(cp.locations[0].rank, Some(3));
            assert!(cp.locations[0].percent > 78.9, "{:?}", cp.locations);
            let startup = cp.regions.iter().find(|s| s.name == "(process start-up)");
            let startup = startup.map_or(0.0, |s| s.time_s);
            assert!(
                (cp.locations[0].time_s + startup - cp.length_s).abs() < 1e-4,
                "{:?} {startup}",
                cp.locations
            );
        }
        n += 1;
    }
    assert!(n >= 12, "{n} traces");
}

/// The longest path taken event by event (`longest`, as a what-if does) and with runs of
/// uneventful events taken at once (`path`, the report's) are the same, and the path's edges
/// add up to its length, on every shipped trace with dependencies; the path is the same with
/// one thread and with two halves of the locations walked at once.
#[test]
fn the_fast_longest_path_equals_the_event_by_event_one() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
    let mut n = 0;
    for group in ["scorep", "scorep-omp", "generated"] {
        for e in std::fs::read_dir(root.join(group)).unwrap().flatten() {
            if !e.path().join("traces.otf2").exists() {
                continue;
            }
            let trace = perfexpert::open(&e.path()).unwrap();
            let replay = Replay::new(&trace);
            let g = Graph::new(&trace, &replay);
            let name = e.path().display().to_string();
            let (fast, slow) = (g.path(), g.longest(&|_| false));
            assert_eq!(fast.length, slow.length, "{name}");
            // one thread, or two halves of the locations walked at once: the same path
            let serial = format!("{:?}", pool(1).install(|| g.path()));
            for threads in [2, 3] {
                let p = pool(threads).install(|| g.path());
                assert_eq!(format!("{p:?}"), serial, "{name}, {threads} threads");
            }
            assert!(fast.length > 0, "{name}");
            for p in [&fast, &slow] {
                let mut sum = 0;
                g.for_each_step(p, &|_| false, &mut |s| sum += s.weight);
                assert_eq!(sum, p.length, "{name}");
            }
            n += 1;
        }
    }
    assert!(n >= 20, "{n} traces");
}

/// A pool of `threads` threads.
fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Scalasca value of `metric` per rank (summed over call paths) from a trace_dump.csv.
fn scout_per_rank(csv: &std::path::Path, metric: &str) -> std::collections::BTreeMap<u32, f64> {
    let mut out = std::collections::BTreeMap::new();
    for line in std::fs::read_to_string(csv).unwrap().lines() {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() >= 7 && f[0] == metric {
            *out.entry(f[3].parse().unwrap()).or_insert(0.0) += f[6].parse::<f64>().unwrap();
        }
    }
    out
}

/// Where the only waits are Late Sender (ls) or Wait at Barrier (barrier) and Wait at
/// Finalize, each rank's row total of the wait matrix is Scalasca's value for that rank.
#[test]
fn wait_matrix_rows_agree_with_scalasca_where_one_pattern_waits() {
    let Some(shared) = common::shared() else {
        return;
    };
    for (name, metric) in [("ls", "mpi_latesender"), ("barrier", "mpi_barrier_wait")] {
        let dir = shared.join("traces/scorep").join(name);
        let trace = perfexpert::open(&dir).unwrap();
        let replay = Replay::new(&trace);
        let g = Graph::new(&trace, &replay);
        let w = wait_matrix(&trace, &g);
        let scout = scout_per_rank(&dir.join("trace_dump.csv"), metric);
        let fin = scout_per_rank(&dir.join("trace_dump.csv"), "mpi_finalize_wait");
        for row in &w.rows {
            let want = scout.get(&row.rank).copied().unwrap_or(0.0)
                + fin.get(&row.rank).copied().unwrap_or(0.0);
            assert!(
                (row.total_s - want).abs() < 1e-6,
                "{name} rank {}: {} vs scout {want}",
                row.rank,
                row.total_s
            );
        }
    }
}

/// A corrupt trace whose messages form a cycle (each rank receives before it sends, from the
/// other, all at the same tick so that no source is later than its target): no order
/// satisfies both dependencies; one is dropped and counted, never a hang. (Sources later than
/// their target, the usual form of such a trace, are no dependency at all.)
#[test]
fn a_dependency_cycle_is_broken_and_counted() {
    let rank = |peer: u32| {
        vec![
            vec![en(0.0, "main")],
            recv(1.0, 1.0, 1.0, peer, 8),
            send(1.0, 1.0, peer, 8),
            vec![lv(2.0, "main")],
        ]
    };
    let (_d, trace) = build(vec![rank(1), rank(0)]);
    let replay = Replay::new(&trace);
    // also with the two ranks walked at once, each waiting for the other
    for threads in [1, 2] {
        let cp = pool(threads)
            .install(|| critical_path(&trace, &replay, &[]))
            .unwrap();
        assert_eq!(cp.broken_dependencies, 1);
        assert!(cp.length_s <= cp.duration_s + TOL);
    }
}

/// The overhead classes split exactly what the metric tree calls overhead: per call path,
/// data movement + synchronisation + control + unidentified = MPI time + measurement
/// overhead, and Late Sender time counts as synchronisation, not data movement.
#[test]
fn overhead_classes_partition_the_overhead() {
    let Some(shared) = common::shared() else {
        return;
    };
    let trace = perfexpert::open(&shared.join("traces/scorep/ls")).unwrap();
    let replay = Replay::new(&trace);
    let rules = perfexpert::rules::RuleSet::load(&[]).unwrap();
    let a = perfexpert::analysis::analyse(&trace, &replay, rules);
    let o = perfexpert::analysis::overheads::overheads(&a);
    let sum = |id: &str, c: u32| -> f64 {
        a.rules
            .index_of(id)
            .map_or(0.0, |k| (0..a.nloc as u32).map(|l| a.value(k, c, l)).sum())
    };
    assert!(!o.callpaths.is_empty());
    for c in &o.callpaths {
        let parts =
            c.data_movement_s + c.synchronisation_s + c.control_of_parallelism_s + c.unidentified_s;
        let want = sum("mpi", c.callpath) + sum("overhead", c.callpath);
        assert!((parts - want).abs() < 1e-9, "{c:?}: {parts} vs {want}");
        let ls = sum("mpi_latesender", c.callpath);
        assert!(c.synchronisation_s + 1e-12 >= ls, "{c:?}");
    }
    // ls: 0.900 s of Late Sender and 0.600 s of Wait at Finalize are synchronisation
    assert!(
        (o.total.synchronisation_s - 1.500).abs() < 1e-3,
        "{:?}",
        o.total
    );
}

/// Planted phases: 1 s of computation on 4 ranks, then 0.5 s of late-sender exchanges
/// (ranks 0 → 1 and 2 → 3, five rounds of 0.1 s in which the sender computes 0.09 s), then
/// 1 s of computation. With 100 bins of 25 ms the boundaries are found within one bin of
/// 1 s and 1.5 s; the middle phase alone holds the Late Sender time (2 × 5 × 0.09 = 0.9 s;
/// a boundary one bin off moves at most 2 × 25 ms of it into a neighbour).
#[test]
fn planted_phases_are_found_and_analysed_alone() {
    let rank = |r: u32| {
        let mut evs = vec![vec![en(0.0, "main")], work(0.0, 1.0)];
        for k in 0..5 {
            let t = 1.0 + 0.1 * k as f64;
            if r % 2 == 0 {
                evs.push(work(t, t + 0.09));
                evs.push(send(t + 0.09, t + 0.095, r + 1, 64));
            } else {
                evs.push(recv(t, t + 0.095, t + 0.1, r - 1, 64));
            }
        }
        evs.push(work(1.5, 2.5));
        evs.push(vec![lv(2.5, "main")]);
        evs
    };
    let (_d, trace) = build((0..4).map(rank).collect());
    let ph = perfexpert::analysis::phases::detect(&trace);
    assert_eq!(ph.len(), 3, "{ph:?}");
    let s = |t: u64| t as f64 / 1e9;
    assert!((s(ph[1].start) - 1.0).abs() <= 0.025 + TOL, "{ph:?}");
    assert!((s(ph[2].start) - 1.5).abs() <= 0.025 + TOL, "{ph:?}");
    assert_eq!(ph[0].start, 0);
    assert_eq!(s(ph[2].end), 2.5);
    let opts = perfexpert::analysis::pipeline::Options {
        phases: true,
        ..perfexpert::analysis::pipeline::Options::new(
            perfexpert::rules::RuleSet::load(&[]).unwrap(),
        )
    };
    let entries = perfexpert::analyse_trace(trace.clone(), opts, |_| ())
        .unwrap()
        .extras
        .phases
        .unwrap();
    for e in [&entries[0], &entries[2]] {
        assert!(e.findings.iter().all(|f| f.2 <= 0.05 + TOL), "{e:?}");
        assert_eq!(e.regions[0].0, "work");
    }
    let top = &entries[1].findings[0];
    assert_eq!(top.0, "mpi_latesender");
    assert_eq!(top.1, "main/MPI_Recv");
    assert!((top.2 - 0.9).abs() <= 0.05 + TOL, "{top:?}");
    // --phase 2 from the command line analyses that phase alone, --phase 4 is refused
    let o = common::bin()
        .args(["run", "--top", "1", "--phase", "2"])
        .arg(&trace.path)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("MPI Late Sender"), "{out}");
    assert!(out.contains("phase 2 of 3 only"), "{out}");
    let o = common::bin()
        .args(["run", "--phase", "4"])
        .arg(&trace.path)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--phase 4:") && err.contains("has 3 phase(s)"),
        "{err}"
    );
}

/// Near miss of the planted phases: a run that never changes (4 ranks, 2,000 identical
/// rounds of 0.5 ms — computation, then a message; the run ends 7 ns after 1 s so that bin
/// edges fall at slightly different points of the rounds) has boundary scores of
/// floating-point noise only (about 4e-15). The mean + 2σ test alone made that noise five
/// phases here, and three on the uniform benchmark ping-pong; the noise floor keeps it one.
#[test]
fn a_run_that_never_changes_is_one_phase() {
    let rank = |r: u32| {
        let mut evs = vec![vec![en(0.0, "main")]];
        for k in 0..2000 {
            let t = k as f64 * 0.0005;
            if r % 2 == 0 {
                evs.push(work(t, t + 0.0003));
                evs.push(send(t + 0.0003, t + 0.0004, r + 1, 64));
            } else {
                evs.push(work(t, t + 0.0002));
                evs.push(recv(t + 0.0002, t + 0.0004, t + 0.00045, r - 1, 64));
            }
        }
        evs.push(vec![lv(1.000000007, "main")]);
        evs
    };
    let (_d, trace) = build((0..4).map(rank).collect());
    let ph = perfexpert::analysis::phases::detect(&trace);
    assert_eq!(ph.len(), 1, "{ph:?}");
}
