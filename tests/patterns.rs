//! The pattern semantics of patterns.md §4, pinned down by the worked examples of §9 (9.1 to
//! 9.10) and, for every wait-state metric, one fixture where it fires and near misses where it
//! must not. Traces are written byte by byte (tests/common/otf2_builder.rs) with a timer of
//! 1e9 ticks per second, so the times of the examples (seconds) are exact in ticks.
//!
//! `Run::check` asserts the listed values and also that every pattern, count and byte metric
//! (`WATCHED`) is 0 at every call path and location that is not listed, as §9 demands ("every
//! metric/call path/rank not listed must be 0").

mod common;

use common::otf2_builder::{mpi_ranks_archive, Ev};
use perfexpert::analysis::scores::{score, Finding, ScoreParams};
use perfexpert::analysis::Analysis;
use perfexpert::replay::Replay;
use perfexpert::rules::RuleSet;
use perfexpert::Trace;

const TOL: f64 = 1e-9;
const TICKS_PER_SECOND: f64 = 1e9;

// RegionRole and Paradigm (formats.md §A enums).
const ROLE_FUNCTION: u8 = 1;
const ROLE_BARRIER: u8 = 15;
const ROLE_COLL_ONE2ALL: u8 = 23;
const ROLE_COLL_ALL2ONE: u8 = 24;
const ROLE_COLL_ALL2ALL: u8 = 25;
const ROLE_COLL_OTHER: u8 = 26;
const ROLE_POINT2POINT: u8 = 28;
const PARADIGM_USER: u8 = 1;
const PARADIGM_MPI: u8 = 4;

// CollectiveOp (formats.md §A enums).
const BARRIER: u8 = 0;
const BCAST: u8 = 1;
const ALLTOALLV: u8 = 9;
const ALLREDUCE: u8 = 11;
const REDUCE: u8 = 12;
const SCAN: u8 = 14;
const EXSCAN: u8 = 15;
/// The root field of a rootless collective (OTF2_UNDEFINED_UINT32).
const NO_ROOT: u32 = u32::MAX;

/// Every wait-state metric, count and byte metric: 0 wherever a test does not list it.
const WATCHED: &[&str] = &[
    "mpi_latesender",
    "mpi_latesender_wo",
    "mpi_lswo_different",
    "mpi_lswo_same",
    "mpi_latereceiver",
    "mpi_barrier_wait",
    "mpi_barrier_completion",
    "mpi_wait_nxn",
    "mpi_nxn_completion",
    "mpi_latebroadcast",
    "mpi_earlyreduce",
    "mpi_earlyscan",
    "mpi_init_completion",
    "mpi_finalize_wait",
    "mpi_sls_count",
    "mpi_cls_count",
    "mpi_slswo_count",
    "mpi_clswo_count",
    "mpi_slr_count",
    "mpi_clr_count",
    "syncs_send",
    "syncs_recv",
    "comms_send",
    "comms_recv",
    "bytes_sent",
    "bytes_rcvd",
    "syncs_coll",
    "comms_cxch",
    "comms_csrc",
    "comms_cdst",
    "bytes_cout",
    "bytes_cin",
];

/// (RegionRole, Paradigm) of a region, as Score-P defines it.
fn region_kind(name: &str) -> (u8, u8) {
    match name {
        "MPI_Barrier" => (ROLE_BARRIER, PARADIGM_MPI),
        "MPI_Bcast" | "MPI_Scatter" | "MPI_Scatterv" => (ROLE_COLL_ONE2ALL, PARADIGM_MPI),
        "MPI_Reduce" | "MPI_Gather" | "MPI_Gatherv" => (ROLE_COLL_ALL2ONE, PARADIGM_MPI),
        "MPI_Allreduce" | "MPI_Allgather" | "MPI_Alltoall" | "MPI_Alltoallv" => {
            (ROLE_COLL_ALL2ALL, PARADIGM_MPI)
        }
        "MPI_Scan" | "MPI_Exscan" => (ROLE_COLL_OTHER, PARADIGM_MPI),
        "MPI_Init" | "MPI_Init_thread" | "MPI_Finalize" => (ROLE_FUNCTION, PARADIGM_MPI),
        n if n.starts_with("MPI_") => (ROLE_POINT2POINT, PARADIGM_MPI),
        _ => (ROLE_FUNCTION, PARADIGM_USER),
    }
}

fn ticks(seconds: f64) -> u64 {
    (seconds * TICKS_PER_SECOND).round() as u64
}

/// A trace under construction: one location per rank, regions by name, communicator 0 =
/// MPI_COMM_WORLD with every rank.
struct Tb {
    regions: Vec<String>,
    comms: Vec<Vec<u64>>,
    ranks: Vec<Vec<(u64, Ev)>>,
}

impl Tb {
    fn new(nranks: usize) -> Tb {
        Tb {
            regions: Vec::new(),
            comms: vec![(0..nranks as u64).collect()],
            ranks: vec![Vec::new(); nranks],
        }
    }

    /// A further communicator with these world ranks (its rank i is `members[i]`).
    fn comm(&mut self, members: &[u64]) -> u32 {
        self.comms.push(members.to_vec());
        (self.comms.len() - 1) as u32
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

    fn r(&mut self, rank: usize) -> Rank<'_> {
        Rank { tb: self, rank }
    }

    /// Write, read, replay and analyse.
    fn run(&self) -> Run {
        let regions: Vec<(&str, u8, u8)> = self
            .regions
            .iter()
            .map(|n| {
                let (role, paradigm) = region_kind(n);
                (n.as_str(), role, paradigm)
            })
            .collect();
        let archive =
            mpi_ranks_archive(TICKS_PER_SECOND as u64, &regions, &self.comms, &self.ranks);
        let dir = tempfile::tempdir().unwrap();
        let anchor = archive.write(dir.path());
        let trace = perfexpert::open(&anchor).unwrap();
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

/// The events of one rank, in file order; times in seconds.
struct Rank<'a> {
    tb: &'a mut Tb,
    rank: usize,
}

impl Rank<'_> {
    fn ev(self, t: f64, e: Ev) -> Self {
        self.tb.ranks[self.rank].push((ticks(t), e));
        self
    }
    fn enter(self, t: f64, name: &str) -> Self {
        let r = self.tb.region(name);
        self.ev(t, Ev::Enter(r))
    }
    fn leave(self, t: f64, name: &str) -> Self {
        let r = self.tb.region(name);
        self.ev(t, Ev::Leave(r))
    }
    /// `SEND(dst, tag, bytes)` on MPI_COMM_WORLD.
    fn send(self, t: f64, to: u32, tag: u32, bytes: u64) -> Self {
        self.ev(
            t,
            Ev::MpiSend {
                to,
                comm: 0,
                tag,
                bytes,
            },
        )
    }
    /// `RECV(src, tag, bytes)` on MPI_COMM_WORLD.
    fn recv(self, t: f64, from: u32, tag: u32, bytes: u64) -> Self {
        self.ev(
            t,
            Ev::MpiRecv {
                from,
                comm: 0,
                tag,
                bytes,
            },
        )
    }
    fn isend(self, t: f64, to: u32, tag: u32, bytes: u64, req: u64) -> Self {
        self.ev(
            t,
            Ev::MpiIsend {
                to,
                comm: 0,
                tag,
                bytes,
                req,
            },
        )
    }
    fn isend_complete(self, t: f64, req: u64) -> Self {
        self.ev(t, Ev::MpiIsendComplete(req))
    }
    fn irecv_request(self, t: f64, req: u64) -> Self {
        self.ev(t, Ev::MpiIrecvRequest(req))
    }
    fn irecv(self, t: f64, from: u32, tag: u32, bytes: u64, req: u64) -> Self {
        self.ev(
            t,
            Ev::MpiIrecv {
                from,
                comm: 0,
                tag,
                bytes,
                req,
            },
        )
    }
    fn cancelled(self, t: f64, req: u64) -> Self {
        self.ev(t, Ev::MpiRequestCancelled(req))
    }
    /// `ENTER name = COLL_BEGIN` at `b`, `COLL_END(op, comm, root, sent, recvd) = LEAVE` at `e`.
    #[allow(clippy::too_many_arguments)]
    fn coll(
        self,
        name: &str,
        b: f64,
        e: f64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        recvd: u64,
    ) -> Self {
        self.enter(b, name)
            .ev(b, Ev::MpiCollectiveBegin)
            .ev(
                e,
                Ev::MpiCollectiveEnd {
                    op,
                    comm,
                    root,
                    sent,
                    recvd,
                },
            )
            .leave(e, name)
    }
    /// A call without records inside: ENTER at `b`, LEAVE at `e`.
    fn call(self, name: &str, b: f64, e: f64) -> Self {
        self.enter(b, name).leave(e, name)
    }
    /// `ENTER name; SEND(to, tag, bytes)` at `b`, `LEAVE` at `e`.
    fn send_call(self, name: &str, b: f64, e: f64, to: u32, tag: u32, bytes: u64) -> Self {
        self.enter(b, name).send(b, to, tag, bytes).leave(e, name)
    }
    /// `ENTER name` at `b`, `RECV(from, tag, bytes)` at `t`, `LEAVE` at `e`.
    #[allow(clippy::too_many_arguments)]
    fn recv_call(
        self,
        name: &str,
        b: f64,
        t: f64,
        e: f64,
        from: u32,
        tag: u32,
        bytes: u64,
    ) -> Self {
        self.enter(b, name).recv(t, from, tag, bytes).leave(e, name)
    }
}

/// The value of `metric` at the call path named `path` (regions joined by `/`) on location
/// `loc`, in the metric's unit (seconds for time metrics).
fn value(a: &Analysis, replay: &Replay, trace: &Trace, metric: &str, path: &str, loc: u32) -> f64 {
    let k = a
        .rules
        .index_of(metric)
        .unwrap_or_else(|| panic!("no metric {metric}"));
    let c = cnode(replay, trace, path);
    a.value(k, c, loc)
}

fn cnode(replay: &Replay, trace: &Trace, path: &str) -> u32 {
    let n = replay.tree.len() as u32;
    (0..n)
        .find(|&c| replay.path_name(trace, c) == path)
        .unwrap_or_else(|| {
            let have: Vec<String> = (0..n).map(|c| replay.path_name(trace, c)).collect();
            panic!("no call path {path}; the call paths are {have:?}")
        })
}

struct Run {
    _dir: tempfile::TempDir,
    trace: Trace,
    replay: Replay,
    a: Analysis,
}

type Row<'a> = (&'a str, &'a str, &'a [f64]);

impl Run {
    fn v(&self, metric: &str, path: &str, loc: u32) -> f64 {
        value(&self.a, &self.replay, &self.trace, metric, path, loc)
    }

    /// Assert every row `(metric, call path, value per rank)` and that every `WATCHED` metric
    /// is 0 wherever no row names it; reports all differences at once.
    fn check(&self, rows: &[Row]) {
        let nloc = self.trace.events.len();
        let mut errs = Vec::new();
        for (m, p, want) in rows {
            assert_eq!(want.len(), nloc, "row {m} {p}: one value per rank");
            for (l, w) in want.iter().enumerate() {
                let got = self.v(m, p, l as u32);
                if (got - w).abs() > TOL {
                    errs.push(format!("{m} at {p} on r{l}: got {got}, want {w}"));
                }
            }
        }
        for m in WATCHED {
            let k = self
                .a
                .rules
                .index_of(m)
                .unwrap_or_else(|| panic!("no metric {m}"));
            for c in 0..self.replay.tree.len() as u32 {
                let p = self.replay.path_name(&self.trace, c);
                if rows.iter().any(|(rm, rp, _)| rm == m && *rp == p) {
                    continue;
                }
                for l in 0..nloc as u32 {
                    let got = self.a.value(k, c, l);
                    if got.abs() > TOL {
                        errs.push(format!("{m} at {p} on r{l}: got {got}, want 0"));
                    }
                }
            }
        }
        assert!(errs.is_empty(), "\n{}", errs.join("\n"));
    }

    fn findings(&self) -> Vec<Finding> {
        score(&self.trace, &self.replay, &self.a, ScoreParams::default())
    }

    fn finding(&self, metric: &str, path: &str) -> Finding {
        let c = cnode(&self.replay, &self.trace, path);
        self.findings()
            .into_iter()
            .find(|f| f.metric == metric && f.callpath == c)
            .unwrap_or_else(|| panic!("no finding ({metric}, {path})"))
    }
}

fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() <= TOL, "{what}: got {got}, want {want}");
}

// ---------------------------------------------------------------------------------------------
// §9 worked examples
// ---------------------------------------------------------------------------------------------

/// §9.1 Late Sender, 2 ranks.
fn ex_9_1() -> Tb {
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 5.0, 6.0, 1, 0, 8)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 2.0, 6.5, 7.0, 0, 0, 8)
        .leave(10.0, "main");
    tb
}

#[test]
fn ex_9_1_late_sender() {
    let run = ex_9_1().run();
    // time main: r0 5 + 4 = 9, r1 2 + 3 = 5. Late Sender on r1: t(Es) − t(Er) = 5 − 2 = 3.
    // Late Receiver 0: t(Lc) = 6 > t(Eq) = 2, but idle = 2 − 5 < 0.
    run.check(&[
        ("time", "main", &[9.0, 5.0]),
        ("time", "main/MPI_Send", &[1.0, 0.0]),
        ("time", "main/MPI_Recv", &[0.0, 5.0]),
        ("visits", "main", &[1.0, 1.0]),
        ("visits", "main/MPI_Send", &[1.0, 0.0]),
        ("visits", "main/MPI_Recv", &[0.0, 1.0]),
        ("execution", "main", &[9.0, 5.0]),
        ("comp", "main", &[9.0, 5.0]),
        ("execution", "main/MPI_Send", &[1.0, 0.0]),
        ("mpi", "main/MPI_Send", &[1.0, 0.0]),
        ("mpi_point2point", "main/MPI_Send", &[1.0, 0.0]),
        ("execution", "main/MPI_Recv", &[0.0, 5.0]),
        ("mpi", "main/MPI_Recv", &[0.0, 5.0]),
        ("mpi_point2point", "main/MPI_Recv", &[0.0, 5.0]),
        ("mpi_communication", "main/MPI_Send", &[1.0, 0.0]),
        ("mpi_communication", "main/MPI_Recv", &[0.0, 5.0]),
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 3.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 1.0]),
    ]);
}

#[test]
fn ex_9_1_scores() {
    let run = ex_9_1().run();
    let f = run.finding("mpi_latesender", "main/MPI_Recv");
    // D = Σ time = 9 + 1 + 5 + 5 = 20; s = 3 / 20 = 0.15; a = 1/2 (r1 of r0, r1);
    // ι = 1 − mean(0, 3) / 3 = 0.5; g = min(1, 0.15 / 0.1) = 1; σ = 0.6 + 0.1 + 0.1 = 0.8.
    // κ = ρ = ψ = 1, τ = min(1, 3 / (10 · 1e-9)) = 1, π = 1.
    close(f.severity, 3.0, "severity");
    close(f.s, 0.15, "s");
    close(f.a, 0.5, "a");
    close(f.imbalance, 0.5, "imbalance");
    close(f.significance, 0.8, "significance");
    close(f.kappa, 1.0, "kappa");
    close(f.rho, 1.0, "rho");
    close(f.tau, 1.0, "tau");
    close(f.psi, 1.0, "psi");
    close(f.precision, 1.0, "precision");
    assert_eq!(f.n, 1);
}

/// §9.2 Late Receiver, 2 ranks: r0 sends with `send` and leaves it at `leave`.
fn ex_9_2(send: &str, leave: f64) -> Run {
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call(send, 1.0, leave, 1, 0, 1024)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 5.0, 5.5, 6.0, 0, 0, 1024)
        .leave(10.0, "main");
    tb.run()
}

/// The rows of §9.2 with the Late Receiver value `lr` at `main/<send>`.
fn ex_9_2_check(run: &Run, send: &str, leave: f64, lr: f64) {
    let p = format!("main/{send}");
    let count = if lr > 0.0 { 1.0 } else { 0.0 };
    run.check(&[
        ("time", "main", &[1.0 + 10.0 - leave, 9.0]),
        ("time", &p, &[leave - 1.0, 0.0]),
        ("time", "main/MPI_Recv", &[0.0, 1.0]),
        ("mpi_latereceiver", &p, &[lr, 0.0]),
        ("mpi_clr_count", &p, &[count, 0.0]),
        ("comms_send", &p, &[1.0, 0.0]),
        ("bytes_sent", &p, &[1024.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 1024.0]),
    ]);
}

#[test]
fn ex_9_2_late_receiver_ssend() {
    // t(Lc) = 6 > t(Eq) = 5: idle = t(Eq) − t(Ec) = 5 − 1 = 4 on r0 at main/MPI_Ssend.
    // Late Sender 0: idle = 1 − 5 < 0.
    ex_9_2_check(&ex_9_2("MPI_Ssend", 6.0), "MPI_Ssend", 6.0, 4.0);
}

#[test]
fn ex_9_2_variant_send_is_identical() {
    // MPI_Send is a blocking send too (§2.2 is_blocking_send): 5 − 1 = 4.
    ex_9_2_check(&ex_9_2("MPI_Send", 6.0), "MPI_Send", 6.0, 4.0);
}

#[test]
fn ex_9_2_variant_bsend_and_rsend_have_no_late_receiver() {
    // §4.3.4: MPI_Bsend and MPI_Rsend are no blocking sends: no Late Receiver.
    for send in ["MPI_Bsend", "MPI_Rsend"] {
        ex_9_2_check(&ex_9_2(send, 6.0), send, 6.0, 0.0);
    }
}

#[test]
fn ex_9_2_variant_eager_send_has_no_late_receiver() {
    // MPI_Send leaves at 4: t(Lc) = 4 ≤ t(Eq) = 5 → idle = 0 (§4.3.3).
    ex_9_2_check(&ex_9_2("MPI_Send", 4.0), "MPI_Send", 4.0, 0.0);
}

/// §9.3 Late Sender, wrong order, different sources, 3 ranks.
fn ex_9_3() -> Tb {
    let mut tb = Tb::new(3);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 10.0, 11.0, 2, 0, 8)
        .leave(20.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .send_call("MPI_Send", 1.0, 2.0, 2, 0, 8)
        .leave(20.0, "main");
    tb.r(2)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 3.0, 10.5, 11.0, 0, 0, 8)
        .recv_call("MPI_Recv", 12.0, 12.2, 13.0, 1, 0, 8)
        .leave(20.0, "main");
    tb
}

#[test]
fn ex_9_3_late_sender_wrong_order_different_sources() {
    let run = ex_9_3().run();
    // First receive: Late Sender 10 − 3 = 7, buffered with t(S_B) = 10, source 0.
    // Second receive: 1 − 12 < 0, no Late Sender; its send time 1 < 10, so the buffered
    // instance becomes wrong order, source 0 ≠ 1 → different sources: 7.
    // mpi_lswo_same must be 0 (the near miss of mpi_lswo_same).
    run.check(&[
        ("time", "main", &[19.0, 19.0, 11.0]),
        ("time", "main/MPI_Send", &[1.0, 1.0, 0.0]),
        ("time", "main/MPI_Recv", &[0.0, 0.0, 9.0]),
        ("visits", "main/MPI_Recv", &[0.0, 0.0, 2.0]),
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_latesender_wo", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_lswo_different", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("mpi_clswo_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 0.0, 2.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 0.0, 16.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 8.0, 0.0]),
    ]);
}

#[test]
fn ex_9_3b_late_sender_wrong_order_same_source() {
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 1.0, 2.0, 1, 1, 8)
        .send_call("MPI_Send", 10.0, 11.0, 1, 2, 8)
        .leave(20.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 3.0, 10.5, 11.0, 0, 2, 8)
        .recv_call("MPI_Recv", 12.0, 12.1, 13.0, 0, 1, 8)
        .leave(20.0, "main");
    let run = tb.run();
    // Matching is per tag: tag 2 (sent at 10) ↔ first receive: Late Sender 10 − 3 = 7.
    // The second receive's send (tag 1) is at 1 < 10 → wrong order, same source: 7.
    // mpi_lswo_different must be 0 (the near miss of mpi_lswo_different). The counts of
    // both messages follow from §4.9 (the abbreviated example does not list them).
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 7.0]),
        ("mpi_latesender_wo", "main/MPI_Recv", &[0.0, 7.0]),
        ("mpi_lswo_same", "main/MPI_Recv", &[0.0, 7.0]),
        ("mpi_lswo_different", "main/MPI_Recv", &[0.0, 0.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 1.0]),
        ("mpi_clswo_count", "main/MPI_Recv", &[0.0, 1.0]),
        ("comms_send", "main/MPI_Send", &[2.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[16.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 2.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 16.0]),
    ]);
}

/// §9.4 Barrier, 3 ranks; r0 ends at `e0`.
fn ex_9_4(e0: f64) -> Run {
    let mut tb = Tb::new(3);
    for (r, b, e) in [(0, 1.0, e0), (1, 3.0, 7.5), (2, 6.0, 8.0)] {
        tb.r(r)
            .enter(0.0, "main")
            .coll("MPI_Barrier", b, e, BARRIER, 0, NO_ROOT, 0, 0)
            .leave(10.0, "main");
    }
    tb.run()
}

#[test]
fn ex_9_4_barrier_wait_and_completion() {
    let run = ex_9_4(7.0);
    // L = 6, EE = 7. wait = min(6, e_i) − b_i: r0 6 − 1 = 5, r1 6 − 3 = 3, r2 0.
    // completion = e_i − max(7, min(6, e_i)): r0 0, r1 7.5 − 7 = 0.5, r2 8 − 7 = 1.
    run.check(&[
        ("time", "main", &[4.0, 5.5, 8.0]),
        ("time", "main/MPI_Barrier", &[6.0, 4.5, 2.0]),
        ("mpi_sync_collective", "main/MPI_Barrier", &[6.0, 4.5, 2.0]),
        ("mpi_barrier_wait", "main/MPI_Barrier", &[5.0, 3.0, 0.0]),
        (
            "mpi_barrier_completion",
            "main/MPI_Barrier",
            &[0.0, 0.5, 1.0],
        ),
        ("syncs_coll", "main/MPI_Barrier", &[1.0, 1.0, 1.0]),
    ]);
    assert_eq!((run.a.violations.collective, run.a.violations.p2p), (0, 0));
}

#[test]
fn ex_9_4b_barrier_with_clock_violation() {
    let run = ex_9_4(5.5);
    // L = 6 > e_0 = 5.5 (one collective violation, member r0), EE = 5.5.
    // r0: wait = min(6, 5.5) − 1 = 4.5, completion = 5.5 − max(5.5, 5.5) = 0;
    // r1: wait = 3, completion = 7.5 − max(5.5, 6) = 1.5; r2: wait 0, completion 8 − 6 = 2.
    run.check(&[
        ("time", "main", &[5.5, 5.5, 8.0]),
        ("time", "main/MPI_Barrier", &[4.5, 4.5, 2.0]),
        ("mpi_barrier_wait", "main/MPI_Barrier", &[4.5, 3.0, 0.0]),
        (
            "mpi_barrier_completion",
            "main/MPI_Barrier",
            &[0.0, 1.5, 2.0],
        ),
        ("syncs_coll", "main/MPI_Barrier", &[1.0, 1.0, 1.0]),
    ]);
    // ccv_coll = 1, ccv_p2p = 0
    assert_eq!((run.a.violations.collective, run.a.violations.p2p), (1, 0));
    // both findings come from the one touched instance: κ = 0, π = 0
    for m in ["mpi_barrier_wait", "mpi_barrier_completion"] {
        let f = run.finding(m, "main/MPI_Barrier");
        close(f.kappa, 0.0, &format!("{m} kappa"));
        close(f.precision, 0.0, &format!("{m} precision"));
    }
}

#[test]
fn ex_9_5_wait_nxn_allreduce() {
    let mut tb = Tb::new(3);
    for (r, b, e) in [(0, 2.0, 10.0), (1, 4.0, 10.0), (2, 9.0, 10.5)] {
        tb.r(r)
            .enter(0.0, "main")
            .coll("MPI_Allreduce", b, e, ALLREDUCE, 0, NO_ROOT, 8, 8)
            .leave(12.0, "main");
    }
    let run = tb.run();
    // Phase 1: L = 9, EE = 10 > 9 → everyone is a sync member.
    // wait = min(9, e_i) − b_i: r0 9 − 2 = 7, r1 9 − 4 = 5, r2 0.
    // completion = e_i − max(10, min(9, e_i)): r0 0, r1 0, r2 10.5 − 10 = 0.5.
    run.check(&[
        ("time", "main", &[4.0, 6.0, 10.5]),
        ("time", "main/MPI_Allreduce", &[8.0, 6.0, 1.5]),
        ("mpi_collective", "main/MPI_Allreduce", &[8.0, 6.0, 1.5]),
        ("mpi_wait_nxn", "main/MPI_Allreduce", &[7.0, 5.0, 0.0]),
        ("mpi_nxn_completion", "main/MPI_Allreduce", &[0.0, 0.0, 0.5]),
        ("comms_cxch", "main/MPI_Allreduce", &[1.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
    ]);
}

#[test]
fn ex_9_5_variant_size_one_communicators() {
    // The same three calls, each on a communicator of size 1 (the rank alone): no wait, no
    // completion (§4.5.0); counts and bytes stay (§4.9 applies to every COLL_END).
    let mut tb = Tb::new(3);
    for (r, b, e) in [(0, 2.0, 10.0), (1, 4.0, 10.0), (2, 9.0, 10.5)] {
        let c = tb.comm(&[r as u64]);
        tb.r(r)
            .enter(0.0, "main")
            .coll("MPI_Allreduce", b, e, ALLREDUCE, c, NO_ROOT, 8, 8)
            .leave(12.0, "main");
    }
    let run = tb.run();
    run.check(&[
        ("mpi_wait_nxn", "main/MPI_Allreduce", &[0.0, 0.0, 0.0]),
        ("mpi_nxn_completion", "main/MPI_Allreduce", &[0.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Allreduce", &[1.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
    ]);
}

/// §9.6 Late Broadcast, root r1, 3 ranks; the root sends `root_sent` bytes.
fn ex_9_6(root_sent: u64) -> Run {
    let mut tb = Tb::new(3);
    for (r, b, e, sent, recvd) in [
        (0, 1.0, 6.0, 0, 100),
        (1, 5.0, 6.0, root_sent, 0),
        (2, 7.0, 7.5, 0, 100),
    ] {
        tb.r(r)
            .enter(0.0, "main")
            .coll("MPI_Bcast", b, e, BCAST, 0, 1, sent, recvd)
            .leave(10.0, "main");
    }
    tb.run()
}

#[test]
fn ex_9_6_late_broadcast() {
    let run = ex_9_6(200);
    // Lr = b_root = 5. r0 waits (recv 100 > 0, 1 < 5): min(5, 6) − 1 = 4; r2 does not
    // (7 ≥ 5); the root gets min(5, 6) − 5 = 0.
    run.check(&[
        ("time", "main", &[5.0, 9.0, 9.5]),
        ("time", "main/MPI_Bcast", &[5.0, 1.0, 0.5]),
        ("mpi_collective", "main/MPI_Bcast", &[5.0, 1.0, 0.5]),
        ("mpi_latebroadcast", "main/MPI_Bcast", &[4.0, 0.0, 0.0]),
        ("comms_cdst", "main/MPI_Bcast", &[1.0, 0.0, 1.0]),
        ("comms_csrc", "main/MPI_Bcast", &[0.0, 1.0, 0.0]),
        ("bytes_cin", "main/MPI_Bcast", &[100.0, 0.0, 100.0]),
        ("bytes_cout", "main/MPI_Bcast", &[0.0, 200.0, 0.0]),
    ]);
}

#[test]
fn ex_9_6_variant_root_sends_nothing() {
    let run = ex_9_6(0);
    // Payload test of §4.5.2: sent_root = 0 → the instance is skipped. The root's COLL_END
    // with sent = received = 0 is a synchronisation (§4.9).
    run.check(&[
        ("mpi_latebroadcast", "main/MPI_Bcast", &[0.0, 0.0, 0.0]),
        ("comms_cdst", "main/MPI_Bcast", &[1.0, 0.0, 1.0]),
        ("syncs_coll", "main/MPI_Bcast", &[0.0, 1.0, 0.0]),
        ("bytes_cin", "main/MPI_Bcast", &[100.0, 0.0, 100.0]),
    ]);
}

#[test]
fn ex_9_7_early_reduce() {
    let mut tb = Tb::new(3);
    for (r, b, e, sent, recvd) in [
        (0, 1.0, 7.0, 8, 24),
        (1, 4.0, 4.5, 8, 0),
        (2, 6.0, 6.5, 8, 0),
    ] {
        tb.r(r)
            .enter(0.0, "main")
            .coll("MPI_Reduce", b, e, REDUCE, 0, 0, sent, recvd)
            .leave(10.0, "main");
    }
    let run = tb.run();
    // L = 6 (r2, the latest sender), root begin 1 < 6 → sync members r0 (root) and r2.
    // r0: min(6, 7) − 1 = 5 (not the "earliest sender" 4 − 1 = 3); r2: min(6, 6.5) − 6 = 0.
    run.check(&[
        ("time", "main", &[4.0, 9.5, 9.5]),
        ("time", "main/MPI_Reduce", &[6.0, 0.5, 0.5]),
        ("mpi_collective", "main/MPI_Reduce", &[6.0, 0.5, 0.5]),
        ("mpi_earlyreduce", "main/MPI_Reduce", &[5.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Reduce", &[1.0, 0.0, 0.0]),
        ("comms_csrc", "main/MPI_Reduce", &[0.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Reduce", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Reduce", &[24.0, 0.0, 0.0]),
    ]);
}

/// §9.8: r0 and r2 send with MPI_Isend + MPI_Wait to r1, which receives with two MPI_Irecv
/// and then waits for both (one MPI_Waitall if `waitall`, else one MPI_Wait per request).
fn ex_9_8(waitall: bool) -> Tb {
    let mut tb = Tb::new(3);
    tb.r(0)
        .enter(0.0, "main")
        .enter(8.0, "MPI_Isend")
        .isend(8.0, 1, 0, 16, 1)
        .leave(8.5, "MPI_Isend")
        .enter(9.0, "MPI_Wait")
        .isend_complete(9.5, 1)
        .leave(10.0, "MPI_Wait")
        .leave(20.0, "main");
    tb.r(2)
        .enter(0.0, "main")
        .enter(5.0, "MPI_Isend")
        .isend(5.0, 1, 0, 16, 1)
        .leave(5.5, "MPI_Isend")
        .enter(6.0, "MPI_Wait")
        .isend_complete(6.2, 1)
        .leave(6.5, "MPI_Wait")
        .leave(20.0, "main");
    let r1 = tb
        .r(1)
        .enter(0.0, "main")
        .enter(1.0, "MPI_Irecv")
        .irecv_request(1.0, 7)
        .leave(1.2, "MPI_Irecv")
        .enter(1.3, "MPI_Irecv")
        .irecv_request(1.3, 8)
        .leave(1.5, "MPI_Irecv");
    if waitall {
        r1.enter(2.0, "MPI_Waitall")
            .irecv(5.6, 2, 0, 16, 8)
            .irecv(8.6, 0, 0, 16, 7)
            .leave(9.0, "MPI_Waitall")
            .leave(20.0, "main");
    } else {
        r1.enter(2.0, "MPI_Wait")
            .irecv(5.6, 2, 0, 16, 8)
            .leave(5.7, "MPI_Wait")
            .enter(5.8, "MPI_Wait")
            .irecv(8.6, 0, 0, 16, 7)
            .leave(9.0, "MPI_Wait")
            .leave(20.0, "main");
    }
    tb
}

#[test]
fn ex_9_8_late_sender_in_waitall() {
    let run = ex_9_8(true).run();
    // Candidates in the Waitall: from r2 5 − 2 = 3, from r0 8 − 2 = 6; only the maximum
    // counts, once (§4.2.5). No wrong order (the instance enters the buffer at the LEAVE).
    // No Late Receiver: r0 t(Lc) = 10 > t(Eq) = 1 but 1 − 9 < 0; r2 1.3 − 6 < 0.
    run.check(&[
        ("time", "main", &[18.5, 12.6, 19.0]),
        ("time", "main/MPI_Isend", &[0.5, 0.0, 0.5]),
        ("time", "main/MPI_Wait", &[1.0, 0.0, 0.5]),
        ("time", "main/MPI_Irecv", &[0.0, 0.4, 0.0]),
        ("time", "main/MPI_Waitall", &[0.0, 7.0, 0.0]),
        ("mpi_point2point", "main/MPI_Waitall", &[0.0, 7.0, 0.0]),
        ("visits", "main/MPI_Irecv", &[0.0, 2.0, 0.0]),
        ("mpi_latesender", "main/MPI_Waitall", &[0.0, 6.0, 0.0]),
        ("mpi_cls_count", "main/MPI_Waitall", &[0.0, 1.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[1.0, 0.0, 1.0]),
        ("bytes_sent", "main/MPI_Isend", &[16.0, 0.0, 16.0]),
        ("comms_recv", "main/MPI_Waitall", &[0.0, 2.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Waitall", &[0.0, 32.0, 0.0]),
    ]);
}

#[test]
fn ex_9_8_variant_one_wait_per_request() {
    let run = ex_9_8(false).run();
    // First Wait: 5 − 2 = 3; second Wait: 8 − 5.8 = 2.2; both at main/MPI_Wait: 5.2, two
    // instances. Time in main between the Irecvs and the Waits is no waiting time.
    run.check(&[
        ("time", "main/MPI_Wait", &[1.0, 6.9, 0.5]),
        ("mpi_latesender", "main/MPI_Wait", &[0.0, 5.2, 0.0]),
        ("mpi_cls_count", "main/MPI_Wait", &[0.0, 2.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[1.0, 0.0, 1.0]),
        ("bytes_sent", "main/MPI_Isend", &[16.0, 0.0, 16.0]),
        ("comms_recv", "main/MPI_Wait", &[0.0, 2.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Wait", &[0.0, 32.0, 0.0]),
    ]);
}

/// §9.9 Initialization completion and Wait at Finalize, 2 ranks.
fn ex_9_9() -> Tb {
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .call("MPI_Init", 0.0, 2.0)
        .call("MPI_Finalize", 10.0, 15.0)
        .leave(15.5, "main");
    tb.r(1)
        .enter(0.0, "main")
        .call("MPI_Init", 0.5, 3.0)
        .call("MPI_Finalize", 14.0, 15.2)
        .leave(15.5, "main");
    tb
}

#[test]
fn ex_9_9_init_completion_and_finalize_wait() {
    let run = ex_9_9().run();
    // Init: L = 0.5, EE = 2: completion = e_i − max(2, min(0.5, e_i)): r0 0, r1 3 − 2 = 1.
    // Finalize: L = 14, EE = 15: wait = min(14, e_i) − b_i: r0 14 − 10 = 4, r1 0.
    run.check(&[
        ("time", "main", &[8.5, 11.8]),
        ("time", "main/MPI_Init", &[2.0, 2.5]),
        ("mpi_init_exit", "main/MPI_Init", &[2.0, 2.5]),
        ("time", "main/MPI_Finalize", &[5.0, 1.2]),
        ("mpi_init_exit", "main/MPI_Finalize", &[5.0, 1.2]),
        ("mpi_init_completion", "main/MPI_Init", &[0.0, 1.0]),
        ("mpi_finalize_wait", "main/MPI_Finalize", &[4.0, 0.0]),
    ]);
}

#[test]
fn ex_9_10_sendrecv_and_barrier_on_size_one_communicator() {
    let mut tb = Tb::new(2);
    let s = tb.comm(&[0]);
    tb.r(0)
        .enter(0.0, "main")
        .enter(2.0, "MPI_Sendrecv")
        .send(2.0, 1, 0, 8)
        .recv(5.5, 1, 0, 8)
        .leave(6.0, "MPI_Sendrecv")
        // COLL_BEGIN at the ENTER (§9 conventions)
        .coll("MPI_Barrier", 7.0, 7.5, BARRIER, s, NO_ROOT, 0, 0)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .enter(5.0, "MPI_Sendrecv")
        .send(5.0, 0, 0, 8)
        .recv(5.2, 0, 0, 8)
        .leave(6.0, "MPI_Sendrecv")
        .leave(10.0, "main");
    let run = tb.run();
    // r0 receives r1's message: Es = 5 (r1's Sendrecv), Er = 2 → Late Sender 3.
    // r1: 2 − 5 < 0. No Late Receiver (Sendrecv is no blocking send); no barrier wait or
    // completion (size-1 communicator). bytes_sent/bytes_rcvd follow from §4.9.
    run.check(&[
        ("time", "main", &[5.5, 9.0]),
        ("time", "main/MPI_Sendrecv", &[4.0, 1.0]),
        ("mpi_point2point", "main/MPI_Sendrecv", &[4.0, 1.0]),
        ("time", "main/MPI_Barrier", &[0.5, 0.0]),
        ("mpi_sync_collective", "main/MPI_Barrier", &[0.5, 0.0]),
        ("mpi_latesender", "main/MPI_Sendrecv", &[3.0, 0.0]),
        ("mpi_cls_count", "main/MPI_Sendrecv", &[1.0, 0.0]),
        ("comms_send", "main/MPI_Sendrecv", &[1.0, 1.0]),
        ("comms_recv", "main/MPI_Sendrecv", &[1.0, 1.0]),
        ("bytes_sent", "main/MPI_Sendrecv", &[8.0, 8.0]),
        ("bytes_rcvd", "main/MPI_Sendrecv", &[8.0, 8.0]),
        ("syncs_coll", "main/MPI_Barrier", &[1.0, 0.0]),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Late Sender (§4.2)
// ---------------------------------------------------------------------------------------------

/// r0 sends 8 bytes with MPI_Send entered at `es` (record at `es`, leave at `ls`); r1 receives
/// in MPI_Recv entered at 2, record at 6.5, leaving at 7.
fn p2p(es: f64, ls: f64, bytes: u64) -> Tb {
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", es, ls, 1, 0, bytes)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 2.0, 6.5, 7.0, 0, 0, bytes)
        .leave(10.0, "main");
    tb
}

#[test]
fn late_sender_near_miss_send_starts_before_the_receive() {
    // Es = 1 < Er = 2: idle = 1 − 2 < 0 → no instance, no count. (Late Receiver: the send
    // leaves at 1.5 ≤ Eq = 2 → 0.)
    let run = p2p(1.0, 1.5, 8).run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 0.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
    ]);
}

#[test]
fn late_sender_near_miss_equal_enter_times() {
    // Es = Er = 2: idle = 0 → no value and no instance count (§4.1.1).
    let run = p2p(2.0, 2.5, 8).run();
    run.check(&[
        ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
    ]);
}

#[test]
fn late_sender_clamped_at_receive_leave_on_clock_violation() {
    // The send enters at 8, after the receive left (7): t(S) = 8 > t(R) = 6.5, one p2p
    // violation. Step 2 clamps ts = min(8, t(Lr) = 7) = 7: Late Sender 7 − 2 = 5.
    // Late Receiver: t(Lc) = 8.5 > t(Eq) = 2 but 2 − 8 < 0 → 0.
    let run = p2p(8.0, 8.5, 8).run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 5.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 1.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
    ]);
    assert_eq!((run.a.violations.p2p, run.a.violations.collective), (1, 0));
    // the instance is touched by the violation: κ = 0 (§6.2, §6.3)
    let f = run.finding("mpi_latesender", "main/MPI_Recv");
    close(f.kappa, 0.0, "kappa");
}

/// r1 posts an MPI_Irecv at 0.5 and completes it in `completion` (entered at 2, IRECV at
/// 2.5, leave 3); r0's MPI_Send enters at 2.4.
fn completed_in(completion: &str) -> Run {
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 2.4, 2.45, 1, 0, 8)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .enter(0.5, "MPI_Irecv")
        .irecv_request(0.5, 1)
        .leave(1.0, "MPI_Irecv")
        .enter(2.0, completion)
        .irecv(2.5, 0, 0, 8, 1)
        .leave(3.0, completion)
        .leave(10.0, "main");
    tb.run()
}

#[test]
fn late_sender_in_mpi_wait() {
    // Er = enter(MPI_Wait) = 2, Es = 2.4: Late Sender 0.4 at main/MPI_Wait.
    // (Late Receiver: t(Lc) = 2.45 > t(Eq) = 0.5, 0.5 − 2.4 < 0 → 0.)
    let run = completed_in("MPI_Wait");
    run.check(&[
        ("mpi_latesender", "main/MPI_Wait", &[0.0, 0.4]),
        ("mpi_cls_count", "main/MPI_Wait", &[0.0, 1.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Wait", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Wait", &[0.0, 8.0]),
    ]);
}

#[test]
fn late_sender_near_miss_receive_completed_in_mpi_test() {
    // The same with MPI_Test: receives completed in MPI_Test* never produce Late Sender
    // (§4.2.1); the counts stay.
    for test in ["MPI_Test", "MPI_Testall"] {
        let run = completed_in(test);
        let p = format!("main/{test}");
        run.check(&[
            ("mpi_latesender", &p, &[0.0, 0.0]),
            ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
            ("bytes_sent", "main/MPI_Send", &[8.0, 0.0]),
            ("comms_recv", &p, &[0.0, 1.0]),
            ("bytes_rcvd", &p, &[0.0, 8.0]),
        ]);
    }
}

#[test]
fn late_sender_multi_wait_counts_once_with_the_max() {
    // §9.8 reduced to the point: two late receives in one MPI_Waitall (3 and 6) give one
    // instance of 6, not 9, and one count.
    let run = ex_9_8(true).run();
    close(
        run.v("mpi_latesender", "main/MPI_Waitall", 1),
        6.0,
        "latesender",
    );
    close(
        run.v("mpi_cls_count", "main/MPI_Waitall", 1),
        1.0,
        "cls count",
    );
    let f = run.finding("mpi_latesender", "main/MPI_Waitall");
    assert_eq!(f.n, 1, "one instance per multi-wait call (§6.2)");
}

// ---------------------------------------------------------------------------------------------
// Late Sender, wrong order (§4.2.4)
// ---------------------------------------------------------------------------------------------

#[test]
fn lswo_near_miss_receives_in_send_order() {
    // §9.3 with r2 receiving r1's message (sent at 1) first: 1 − 3 < 0, no Late Sender; then
    // r0's (sent at 10) in a receive entered at 5: Late Sender 10 − 5 = 5, buffered, but no
    // later receive has an earlier send → no wrong order.
    let mut tb = Tb::new(3);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 10.0, 11.0, 2, 0, 8)
        .leave(20.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .send_call("MPI_Send", 1.0, 2.0, 2, 0, 8)
        .leave(20.0, "main");
    tb.r(2)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 3.0, 3.5, 4.0, 1, 0, 8)
        .recv_call("MPI_Recv", 5.0, 10.5, 11.0, 0, 0, 8)
        .leave(20.0, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 0.0, 5.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 0.0, 2.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 0.0, 16.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 8.0, 0.0]),
    ]);
}

#[test]
fn lswo_found_by_a_receive_completed_in_mpi_test() {
    // §9.3, but r2's second receive (r1's message, sent at 1) is an MPI_Irecv completed in
    // MPI_Test: no Late Sender for it, yet its wrong-order processing happens (§4.2.4):
    // the buffered instance (send at 10 > 1, 10 − 3 = 7) becomes wrong order.
    let mut tb = Tb::new(3);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 10.0, 11.0, 2, 0, 8)
        .leave(20.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .send_call("MPI_Send", 1.0, 2.0, 2, 0, 8)
        .leave(20.0, "main");
    tb.r(2)
        .enter(0.0, "main")
        .enter(2.5, "MPI_Irecv")
        .irecv_request(2.5, 1)
        .leave(2.6, "MPI_Irecv")
        .recv_call("MPI_Recv", 3.0, 10.5, 11.0, 0, 0, 8)
        .enter(12.0, "MPI_Test")
        .irecv(12.2, 1, 0, 8, 1)
        .leave(13.0, "MPI_Test")
        .leave(20.0, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_latesender_wo", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_lswo_different", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("mpi_clswo_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 0.0, 8.0]),
        ("comms_recv", "main/MPI_Test", &[0.0, 0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Test", &[0.0, 0.0, 8.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 8.0, 0.0]),
    ]);
}

#[test]
fn lswo_of_a_multi_wait_instance_uses_the_chosen_message() {
    // §9.8, then r1 receives a message (tag 1) that r2 sent at 1 with MPI_Send. The Waitall's
    // instance entered the buffer at its LEAVE with the maximum's send (r0's ISEND at 8);
    // 8 > 1 → wrong order 6 at main/MPI_Waitall, sources 0 ≠ 2 → different.
    let mut tb = ex_9_8(true);
    // r2's extra send goes before its Isend (different tag, so the order does not matter)
    let r2 = std::mem::take(&mut tb.ranks[2]);
    tb.r(2)
        .enter(0.0, "main")
        .send_call("MPI_Send", 1.0, 1.1, 1, 1, 8);
    tb.ranks[2].extend(r2.into_iter().skip(1));
    let main_leave = tb.ranks[1].pop().unwrap();
    tb.r(1).recv_call("MPI_Recv", 12.0, 12.5, 13.0, 2, 1, 8);
    tb.ranks[1].push(main_leave);
    let run = tb.run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Waitall", &[0.0, 6.0, 0.0]),
        ("mpi_latesender_wo", "main/MPI_Waitall", &[0.0, 6.0, 0.0]),
        ("mpi_lswo_different", "main/MPI_Waitall", &[0.0, 6.0, 0.0]),
        ("mpi_cls_count", "main/MPI_Waitall", &[0.0, 1.0, 0.0]),
        ("mpi_clswo_count", "main/MPI_Waitall", &[0.0, 1.0, 0.0]),
        ("comms_recv", "main/MPI_Waitall", &[0.0, 2.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Waitall", &[0.0, 32.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[1.0, 0.0, 1.0]),
        ("bytes_sent", "main/MPI_Isend", &[16.0, 0.0, 16.0]),
        ("comms_send", "main/MPI_Send", &[0.0, 0.0, 1.0]),
        ("bytes_sent", "main/MPI_Send", &[0.0, 0.0, 8.0]),
    ]);
}

#[test]
fn lswo_buffer_holds_the_last_100_instances() {
    // r1 receives 101 messages from r2, each a Late Sender: the k-th receive enters at
    // 10 + 3k and the send at 10 + 3k + 1 (idle 1), except the first, whose send enters at
    // 10.5 (idle 0.5). Each of these sends is later than the one before, so nothing is wrong
    // order yet. Then r1 receives r0's message, sent at 0.5 — earlier than all 101. The
    // buffer holds the last 100 (the oldest, 0.5, was dropped): wrong order 100 · 1 = 100
    // with 100 counts (keeping the oldest instead would give 0.5 + 99 = 99.5).
    let mut tb = Tb::new(3);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 0.5, 0.6, 1, 0, 8)
        .leave(500.0, "main");
    tb.r(1).enter(0.0, "main");
    tb.r(2).enter(0.0, "main");
    for k in 0..101 {
        let b = 10.0 + 3.0 * k as f64;
        let es = if k == 0 { b + 0.5 } else { b + 1.0 };
        tb.r(1).recv_call("MPI_Recv", b, b + 1.5, b + 2.0, 2, 0, 8);
        tb.r(2).send_call("MPI_Send", es, b + 1.2, 1, 0, 8);
    }
    tb.r(1)
        .recv_call("MPI_Recv", 400.0, 400.5, 401.0, 0, 0, 8)
        .leave(500.0, "main");
    tb.r(2).leave(500.0, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 100.5, 0.0]),
        ("mpi_latesender_wo", "main/MPI_Recv", &[0.0, 100.0, 0.0]),
        ("mpi_lswo_different", "main/MPI_Recv", &[0.0, 100.0, 0.0]),
        ("mpi_cls_count", "main/MPI_Recv", &[0.0, 101.0, 0.0]),
        ("mpi_clswo_count", "main/MPI_Recv", &[0.0, 100.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 102.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 816.0, 0.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 0.0, 101.0]),
        ("bytes_sent", "main/MPI_Send", &[8.0, 0.0, 808.0]),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Late Receiver (§4.3)
// ---------------------------------------------------------------------------------------------

/// r0: Isend(s) to r1 (and r2) completed in `completion` entered at 2 and left at 8; the
/// receivers enter MPI_Recv at 5 (r1) and 7 (r2).
fn isends_completed_in(completion: &str, to_r2: bool) -> Run {
    let n = if to_r2 { 3 } else { 2 };
    let mut tb = Tb::new(n);
    let mut r0 = tb
        .r(0)
        .enter(0.0, "main")
        .enter(1.0, "MPI_Isend")
        .isend(1.0, 1, 0, 8, 1)
        .leave(1.1, "MPI_Isend");
    if to_r2 {
        r0 = r0
            .enter(1.2, "MPI_Isend")
            .isend(1.2, 2, 0, 8, 2)
            .leave(1.3, "MPI_Isend");
    }
    r0 = r0.enter(2.0, completion).isend_complete(5.5, 1);
    if to_r2 {
        r0 = r0.isend_complete(7.5, 2);
    }
    r0.leave(8.0, completion).leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 5.0, 5.2, 5.5, 0, 0, 8)
        .leave(10.0, "main");
    if to_r2 {
        tb.r(2)
            .enter(0.0, "main")
            .recv_call("MPI_Recv", 7.0, 7.2, 7.5, 0, 0, 8)
            .leave(10.0, "main");
    }
    tb.run()
}

#[test]
fn late_receiver_isend_completed_in_mpi_wait() {
    // C = ISEND_COMPLETE in MPI_Wait (Ec = 2, Lc = 8), Q = the RECV (Eq = 5): 8 > 5 →
    // idle = 5 − 2 = 3 at main/MPI_Wait on r0 (§4.3.4, is_wait_single).
    let run = isends_completed_in("MPI_Wait", false);
    run.check(&[
        ("mpi_latereceiver", "main/MPI_Wait", &[3.0, 0.0]),
        ("mpi_clr_count", "main/MPI_Wait", &[1.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Isend", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
    ]);
}

#[test]
fn late_receiver_near_miss_isend_completed_in_mpi_test() {
    // The same send completed in MPI_Test: no Late Receiver (§4.3.4, "anything else").
    let run = isends_completed_in("MPI_Test", false);
    run.check(&[
        ("mpi_latereceiver", "main/MPI_Test", &[0.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Isend", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
    ]);
}

#[test]
fn late_receiver_multi_wait_counts_once_with_the_max() {
    // Two sends completed in one MPI_Waitall (Ec = 2, Lc = 8): to r1 (Eq = 5) 5 − 2 = 3,
    // to r2 (Eq = 7) 7 − 2 = 5. The call has no Late Sender candidate, so the maximum 5 is
    // added once at main/MPI_Waitall, one instance (§4.3.4).
    let run = isends_completed_in("MPI_Waitall", true);
    run.check(&[
        ("mpi_latereceiver", "main/MPI_Waitall", &[5.0, 0.0, 0.0]),
        ("mpi_clr_count", "main/MPI_Waitall", &[1.0, 0.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[2.0, 0.0, 0.0]),
        ("bytes_sent", "main/MPI_Isend", &[16.0, 0.0, 0.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0, 8.0]),
    ]);
    let f = run.finding("mpi_latereceiver", "main/MPI_Waitall");
    assert_eq!(f.n, 1, "one instance per multi-wait call (§6.2)");
}

#[test]
fn late_receiver_near_miss_multi_wait_with_a_late_sender() {
    // r0's MPI_Waitall (2..8) completes its Isend to r1 (Late Receiver candidate 5 − 2 = 3)
    // and an Irecv from r2, whose MPI_Send enters at 4: Late Sender 4 − 2 = 2 in the
    // Waitall. A multi-wait with a Late Sender candidate reports no Late Receiver (§4.3.4).
    // r2's send: t(Lc) = 6.1 > t(Eq) = 0.5 (the Irecv), 0.5 − 4 < 0 → no Late Receiver.
    let mut tb = Tb::new(3);
    tb.r(0)
        .enter(0.0, "main")
        .enter(0.5, "MPI_Irecv")
        .irecv_request(0.5, 3)
        .leave(0.6, "MPI_Irecv")
        .enter(1.0, "MPI_Isend")
        .isend(1.0, 1, 0, 8, 1)
        .leave(1.1, "MPI_Isend")
        .enter(2.0, "MPI_Waitall")
        .isend_complete(5.5, 1)
        .irecv(6.0, 2, 0, 8, 3)
        .leave(8.0, "MPI_Waitall")
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 5.0, 5.2, 5.5, 0, 0, 8)
        .leave(10.0, "main");
    tb.r(2)
        .enter(0.0, "main")
        .send_call("MPI_Send", 4.0, 6.1, 0, 0, 8)
        .leave(10.0, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Waitall", &[2.0, 0.0, 0.0]),
        ("mpi_cls_count", "main/MPI_Waitall", &[1.0, 0.0, 0.0]),
        ("mpi_latereceiver", "main/MPI_Waitall", &[0.0, 0.0, 0.0]),
        ("comms_recv", "main/MPI_Waitall", &[1.0, 0.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Waitall", &[8.0, 0.0, 0.0]),
        ("comms_send", "main/MPI_Isend", &[1.0, 0.0, 0.0]),
        ("bytes_sent", "main/MPI_Isend", &[8.0, 0.0, 0.0]),
        ("comms_send", "main/MPI_Send", &[0.0, 0.0, 1.0]),
        ("bytes_sent", "main/MPI_Send", &[0.0, 0.0, 8.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0, 0.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0, 0.0]),
    ]);
}

#[test]
fn late_receiver_uses_the_irecv_request() {
    // r0: MPI_Ssend 1..6. r1 posts MPI_Irecv at 5 (IRECV_REQUEST) and completes it in
    // MPI_Wait 7..7.5. Q is the IRECV_REQUEST (§4.3.2): t(Lc) = 6 > t(Eq) = 5 → idle =
    // 5 − 1 = 4. (With the Wait's ENTER, 7, it would be 0: t(Lc) = 6 ≤ 7.)
    // Late Sender on r1: Es = 1 < Er = 7 → 0.
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Ssend", 1.0, 6.0, 1, 0, 8)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .enter(5.0, "MPI_Irecv")
        .irecv_request(5.0, 1)
        .leave(5.1, "MPI_Irecv")
        .enter(7.0, "MPI_Wait")
        .irecv(7.2, 0, 0, 8, 1)
        .leave(7.5, "MPI_Wait")
        .leave(10.0, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_latereceiver", "main/MPI_Ssend", &[4.0, 0.0]),
        ("mpi_clr_count", "main/MPI_Ssend", &[1.0, 0.0]),
        ("comms_send", "main/MPI_Ssend", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Ssend", &[8.0, 0.0]),
        ("comms_recv", "main/MPI_Wait", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Wait", &[0.0, 8.0]),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Barrier (§4.4), N x N (§4.5.1), 1-to-N (§4.5.2), N-to-1 (§4.5.3), scan (§4.5.4)
// ---------------------------------------------------------------------------------------------

/// One collective `name`/`op` per rank with (begin, end, sent, received, root).
fn collective(name: &str, op: u8, root: u32, calls: &[(f64, f64, u64, u64)]) -> Run {
    let mut tb = Tb::new(calls.len());
    for (r, &(b, e, sent, recvd)) in calls.iter().enumerate() {
        tb.r(r)
            .enter(0.0, "main")
            .coll(name, b, e, op, 0, root, sent, recvd)
            .leave(20.0, "main");
    }
    tb.run()
}

#[test]
fn barrier_near_miss_all_enter_and_leave_together() {
    // b_i = 2, e_i = 3 for all: L = 2, EE = 3 → wait = 0, completion = 3 − 3 = 0.
    let run = collective("MPI_Barrier", BARRIER, NO_ROOT, &[(2.0, 3.0, 0, 0); 3]);
    run.check(&[
        ("mpi_barrier_wait", "main/MPI_Barrier", &[0.0, 0.0, 0.0]),
        (
            "mpi_barrier_completion",
            "main/MPI_Barrier",
            &[0.0, 0.0, 0.0],
        ),
        ("syncs_coll", "main/MPI_Barrier", &[1.0, 1.0, 1.0]),
    ]);
}

#[test]
fn barrier_uses_coll_end_not_leave() {
    // §4.1.5: the end time is COLL_END, written before the LEAVE. All enter at 2; COLL_END
    // at 3 (r0) and 3.5 (r1), every LEAVE at 4: EE = 3 → completion r1 = 3.5 − 3 = 0.5 (with
    // the LEAVE times it would be 0).
    let mut tb = Tb::new(2);
    for (r, ce) in [(0, 3.0), (1, 3.5)] {
        tb.r(r)
            .enter(0.0, "main")
            .enter(2.0, "MPI_Barrier")
            .ev(2.0, Ev::MpiCollectiveBegin)
            .ev(
                ce,
                Ev::MpiCollectiveEnd {
                    op: BARRIER,
                    comm: 0,
                    root: NO_ROOT,
                    sent: 0,
                    recvd: 0,
                },
            )
            .leave(4.0, "MPI_Barrier")
            .leave(10.0, "main");
    }
    let run = tb.run();
    run.check(&[
        ("mpi_barrier_completion", "main/MPI_Barrier", &[0.0, 0.5]),
        ("syncs_coll", "main/MPI_Barrier", &[1.0, 1.0]),
    ]);
}

#[test]
fn wait_nxn_near_miss_all_enter_together() {
    // b_i = 2 for all, e_i = 3: L = 2 < EE = 3 → all sync, wait 0, completion 0.
    let run = collective("MPI_Allreduce", ALLREDUCE, NO_ROOT, &[(2.0, 3.0, 8, 8); 3]);
    run.check(&[
        ("mpi_wait_nxn", "main/MPI_Allreduce", &[0.0, 0.0, 0.0]),
        ("mpi_nxn_completion", "main/MPI_Allreduce", &[0.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Allreduce", &[1.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
    ]);
}

#[test]
fn wait_nxn_phase_2() {
    // r0 (1..3, sent 0, recv 8), r1 (2..5, sent 8, recv 8), r2 (4..5, sent 0, recv 8).
    // Phase 1: L = 4, EE = 3 ≤ 4 → phase 2: L = max b over senders = 2 (j = r1);
    // sync: r0 (recv > 0, 1 < 2), r1 (= j); r2 not (4 ≥ 2). EE = min(3, 5) = 3.
    // r0: wait = min(2, 3) − 1 = 1, completion = 3 − max(3, 2) = 0;
    // r1: wait = min(2, 5) − 2 = 0, completion = 5 − max(3, 2) = 2.
    let run = collective(
        "MPI_Allreduce",
        ALLREDUCE,
        NO_ROOT,
        &[(1.0, 3.0, 0, 8), (2.0, 5.0, 8, 8), (4.0, 5.0, 0, 8)],
    );
    run.check(&[
        ("mpi_wait_nxn", "main/MPI_Allreduce", &[1.0, 0.0, 0.0]),
        ("mpi_nxn_completion", "main/MPI_Allreduce", &[0.0, 2.0, 0.0]),
        ("comms_cdst", "main/MPI_Allreduce", &[1.0, 0.0, 1.0]),
        ("comms_cxch", "main/MPI_Allreduce", &[0.0, 1.0, 0.0]),
        ("bytes_cout", "main/MPI_Allreduce", &[0.0, 8.0, 0.0]),
        ("bytes_cin", "main/MPI_Allreduce", &[8.0, 8.0, 8.0]),
    ]);
}

#[test]
fn wait_nxn_member_without_payload_takes_no_part() {
    // §4.5.1 payload test: r2 (sent = received = 0) enters last, at 9, but takes no part.
    // Over r0 (2..10) and r1 (4..10): L = 4, EE = 10 > 4 → wait r0 = 4 − 2 = 2, r1 0;
    // completion 10 − max(10, 4) = 0. (Counting r2 would give L = 9 and r0 7.)
    let run = collective(
        "MPI_Allreduce",
        ALLREDUCE,
        NO_ROOT,
        &[(2.0, 10.0, 8, 8), (4.0, 10.0, 8, 8), (9.0, 10.5, 0, 0)],
    );
    run.check(&[
        ("mpi_wait_nxn", "main/MPI_Allreduce", &[2.0, 0.0, 0.0]),
        ("mpi_nxn_completion", "main/MPI_Allreduce", &[0.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Allreduce", &[1.0, 1.0, 0.0]),
        ("syncs_coll", "main/MPI_Allreduce", &[0.0, 0.0, 1.0]),
        ("bytes_cout", "main/MPI_Allreduce", &[8.0, 8.0, 0.0]),
        ("bytes_cin", "main/MPI_Allreduce", &[8.0, 8.0, 0.0]),
    ]);
}

#[test]
fn wait_nxn_near_miss_alltoallv_is_not_analysed() {
    // §9.5's times with MPI_Alltoallv: skipped entirely (§4.5.0), the counts stay.
    let run = collective(
        "MPI_Alltoallv",
        ALLTOALLV,
        NO_ROOT,
        &[(2.0, 10.0, 8, 8), (4.0, 10.0, 8, 8), (9.0, 10.5, 8, 8)],
    );
    run.check(&[
        ("mpi_wait_nxn", "main/MPI_Alltoallv", &[0.0, 0.0, 0.0]),
        ("mpi_nxn_completion", "main/MPI_Alltoallv", &[0.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Alltoallv", &[1.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Alltoallv", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Alltoallv", &[8.0, 8.0, 8.0]),
    ]);
}

#[test]
fn late_broadcast_near_miss_root_enters_first() {
    // Root r1 begins at 1, the others at 3 and 5: b_i ≥ Lr = 1 → nobody waits.
    let run = collective(
        "MPI_Bcast",
        BCAST,
        1,
        &[(3.0, 6.0, 0, 100), (1.0, 6.0, 200, 0), (5.0, 7.5, 0, 100)],
    );
    run.check(&[
        ("mpi_latebroadcast", "main/MPI_Bcast", &[0.0, 0.0, 0.0]),
        ("comms_cdst", "main/MPI_Bcast", &[1.0, 0.0, 1.0]),
        ("comms_csrc", "main/MPI_Bcast", &[0.0, 1.0, 0.0]),
        ("bytes_cin", "main/MPI_Bcast", &[100.0, 0.0, 100.0]),
        ("bytes_cout", "main/MPI_Bcast", &[0.0, 200.0, 0.0]),
    ]);
}

#[test]
fn early_reduce_near_miss_root_enters_last() {
    // Root r0 begins at 6 after the senders (1, 4): L = 6 = b_root (the root is a sender,
    // sent 8 > 0), b_root < L is false → nothing.
    let run = collective(
        "MPI_Reduce",
        REDUCE,
        0,
        &[(6.0, 7.0, 8, 24), (1.0, 6.5, 8, 0), (4.0, 6.5, 8, 0)],
    );
    run.check(&[
        ("mpi_earlyreduce", "main/MPI_Reduce", &[0.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Reduce", &[1.0, 0.0, 0.0]),
        ("comms_csrc", "main/MPI_Reduce", &[0.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Reduce", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Reduce", &[24.0, 0.0, 0.0]),
    ]);
}

#[test]
fn early_reduce_near_miss_root_receives_nothing() {
    // §9.7's times, but the root records 0 received bytes: payload test fails → skipped.
    let run = collective(
        "MPI_Reduce",
        REDUCE,
        0,
        &[(1.0, 7.0, 8, 0), (4.0, 4.5, 8, 0), (6.0, 6.5, 8, 0)],
    );
    run.check(&[
        ("mpi_earlyreduce", "main/MPI_Reduce", &[0.0, 0.0, 0.0]),
        ("comms_csrc", "main/MPI_Reduce", &[1.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Reduce", &[8.0, 8.0, 8.0]),
    ]);
}

#[test]
fn early_scan_fires() {
    // Scan, all send and receive 8. b = (5, 1, 3), e = 9 for all.
    // r0: L_0 = 5, 5 < 5 false. r1: L_1 = max(5, 1) = 5 → min(5, 9) − 1 = 4.
    // r2: L_2 = max(5, 1, 3) = 5 → 5 − 3 = 2. Exscan follows the same rule.
    for (name, op) in [("MPI_Scan", SCAN), ("MPI_Exscan", EXSCAN)] {
        let run = collective(
            name,
            op,
            NO_ROOT,
            &[(5.0, 9.0, 8, 8), (1.0, 9.0, 8, 8), (3.0, 9.0, 8, 8)],
        );
        let p = format!("main/{name}");
        run.check(&[
            ("mpi_earlyscan", &p, &[0.0, 4.0, 2.0]),
            ("comms_cxch", &p, &[1.0, 1.0, 1.0]),
            ("bytes_cout", &p, &[8.0, 8.0, 8.0]),
            ("bytes_cin", &p, &[8.0, 8.0, 8.0]),
        ]);
    }
}

#[test]
fn early_scan_near_miss_ranks_enter_in_rank_order() {
    // b = (1, 3, 5): L_i = b_i for every i → b_i < L_i is false → nothing.
    let run = collective(
        "MPI_Scan",
        SCAN,
        NO_ROOT,
        &[(1.0, 9.0, 8, 8), (3.0, 9.0, 8, 8), (5.0, 9.0, 8, 8)],
    );
    run.check(&[
        ("mpi_earlyscan", "main/MPI_Scan", &[0.0, 0.0, 0.0]),
        ("comms_cxch", "main/MPI_Scan", &[1.0, 1.0, 1.0]),
        ("bytes_cout", "main/MPI_Scan", &[8.0, 8.0, 8.0]),
        ("bytes_cin", "main/MPI_Scan", &[8.0, 8.0, 8.0]),
    ]);
}

// ---------------------------------------------------------------------------------------------
// MPI_Init / MPI_Finalize (§4.8)
// ---------------------------------------------------------------------------------------------

#[test]
fn init_finalize_near_miss_all_together() {
    // Init 0..2 and Finalize 10..15 on both ranks: L = b_i, EE = e_i → 0 and 0.
    let mut tb = Tb::new(2);
    for r in 0..2 {
        tb.r(r)
            .enter(0.0, "main")
            .call("MPI_Init", 0.0, 2.0)
            .call("MPI_Finalize", 10.0, 15.0)
            .leave(15.5, "main");
    }
    let run = tb.run();
    run.check(&[
        ("mpi_init_completion", "main/MPI_Init", &[0.0, 0.0]),
        ("mpi_finalize_wait", "main/MPI_Finalize", &[0.0, 0.0]),
    ]);
}

#[test]
fn init_finalize_near_miss_single_rank() {
    // §4.8: a single-rank run produces 0 for both.
    let mut tb = Tb::new(1);
    tb.r(0)
        .enter(0.0, "main")
        .call("MPI_Init", 0.5, 3.0)
        .call("MPI_Finalize", 10.0, 15.0)
        .leave(15.5, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_init_completion", "main/MPI_Init", &[0.0]),
        ("mpi_finalize_wait", "main/MPI_Finalize", &[0.0]),
    ]);
}

// ---------------------------------------------------------------------------------------------
// Counts and bytes (§4.9), MPI-API guard (§4.1.3), cancelled sends (§4.1.4)
// ---------------------------------------------------------------------------------------------

#[test]
fn counts_zero_byte_late_sender_is_a_synchronisation() {
    // §9.1 with a zero-byte message: Late Sender 3 as before (§4.2 "zero-byte messages"),
    // counted in mpi_sls_count, not mpi_cls_count; the send and receive are syncs.
    let run = p2p(5.0, 6.0, 0).run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 3.0]),
        ("mpi_sls_count", "main/MPI_Recv", &[0.0, 1.0]),
        ("syncs_send", "main/MPI_Send", &[1.0, 0.0]),
        ("syncs_recv", "main/MPI_Recv", &[0.0, 1.0]),
    ]);
}

#[test]
fn counts_zero_byte_late_receiver() {
    // §9.2 (MPI_Ssend) with a zero-byte message: Late Receiver 4, counted in mpi_slr_count.
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Ssend", 1.0, 6.0, 1, 0, 0)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 5.0, 5.5, 6.0, 0, 0, 0)
        .leave(10.0, "main");
    let run = tb.run();
    run.check(&[
        ("mpi_latereceiver", "main/MPI_Ssend", &[4.0, 0.0]),
        ("mpi_slr_count", "main/MPI_Ssend", &[1.0, 0.0]),
        ("syncs_send", "main/MPI_Ssend", &[1.0, 0.0]),
        ("syncs_recv", "main/MPI_Recv", &[0.0, 1.0]),
    ]);
}

#[test]
fn counts_zero_byte_wrong_order() {
    // §9.3 with zero-byte messages: the same times, counted as syncs.
    let mut tb = ex_9_3();
    for r in &mut tb.ranks {
        for (_, e) in r.iter_mut() {
            match e {
                Ev::MpiSend { bytes, .. } | Ev::MpiRecv { bytes, .. } => *bytes = 0,
                _ => {}
            }
        }
    }
    let run = tb.run();
    run.check(&[
        ("mpi_latesender", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_latesender_wo", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_lswo_different", "main/MPI_Recv", &[0.0, 0.0, 7.0]),
        ("mpi_sls_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("mpi_slswo_count", "main/MPI_Recv", &[0.0, 0.0, 1.0]),
        ("syncs_recv", "main/MPI_Recv", &[0.0, 0.0, 2.0]),
        ("syncs_send", "main/MPI_Send", &[1.0, 1.0, 0.0]),
    ]);
}

#[test]
fn counts_receive_side_uses_the_send_record_bytes() {
    // §4.9: syncs_recv/comms_recv and bytes_rcvd follow the *send* record. Message 1: the
    // send says 0 bytes, the receive 8 → a sync, 0 bytes. Message 2: the send says 100, the
    // receive 64 → a communication of 100 bytes. (Both sends are eager: no Late Receiver;
    // both receives are entered after the sends: no Late Sender.)
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Send", 1.0, 1.1, 1, 0, 0)
        .send_call("MPI_Send", 2.0, 2.1, 1, 1, 100)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 3.0, 3.1, 3.2, 0, 0, 8)
        .recv_call("MPI_Recv", 4.0, 4.1, 4.2, 0, 1, 64)
        .leave(10.0, "main");
    let run = tb.run();
    run.check(&[
        ("syncs_send", "main/MPI_Send", &[1.0, 0.0]),
        ("comms_send", "main/MPI_Send", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Send", &[100.0, 0.0]),
        ("syncs_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 100.0]),
    ]);
}

#[test]
fn mpi_api_guard_send_outside_mpi_takes_part_in_nothing() {
    // §4.1.3: r0's SEND record lies in `main` (paradigm USER), not in an MPI call: no send
    // count, no bytes, no match, so r1's receive (entered at 2, the send at 5) gets no Late
    // Sender and no count of a Late Sender; one ignored record.
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send(5.0, 1, 0, 8)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 2.0, 6.5, 7.0, 0, 0, 8)
        .leave(10.0, "main");
    let run = tb.run();
    assert_eq!(run.replay.matching.ignored_records, 1);
    assert_eq!(run.replay.matching.messages, 0);
    for m in [
        "syncs_send",
        "comms_send",
        "bytes_sent",
        "mpi_latereceiver",
        "mpi_slr_count",
        "mpi_clr_count",
    ] {
        close(run.v(m, "main", 0), 0.0, m);
    }
    for m in [
        "mpi_latesender",
        "mpi_latesender_wo",
        "mpi_sls_count",
        "mpi_cls_count",
    ] {
        close(run.v(m, "main/MPI_Recv", 1), 0.0, m);
    }
}

#[test]
fn mpi_api_guard_receive_outside_mpi_takes_part_in_nothing() {
    // §4.1.3: r1's RECV record lies in `main`: no receive count, no bytes, no Late Sender;
    // r0's send (in MPI_Ssend, so it is processed: counted) finds no partner and so no
    // Late Receiver.
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .send_call("MPI_Ssend", 1.0, 6.0, 1, 0, 8)
        .leave(10.0, "main");
    tb.r(1)
        .enter(0.0, "main")
        .recv(5.5, 0, 0, 8)
        .leave(10.0, "main");
    let run = tb.run();
    assert_eq!(run.replay.matching.ignored_records, 1);
    assert_eq!(run.replay.matching.messages, 0);
    run.check(&[
        ("comms_send", "main/MPI_Ssend", &[1.0, 0.0]),
        ("bytes_sent", "main/MPI_Ssend", &[8.0, 0.0]),
    ]);
}

#[test]
fn cancelled_isend_takes_part_in_nothing() {
    // §4.1.4: r0's Isend (8 bytes to r1, which never receives it) is cancelled: no matching,
    // no counts, so not an unmatched send either.
    let mut tb = Tb::new(2);
    tb.r(0)
        .enter(0.0, "main")
        .enter(1.0, "MPI_Isend")
        .isend(1.0, 1, 0, 8, 1)
        .leave(1.1, "MPI_Isend")
        .call("MPI_Cancel", 2.0, 2.1)
        .enter(3.0, "MPI_Wait")
        .cancelled(3.5, 1)
        .leave(4.0, "MPI_Wait")
        .leave(10.0, "main");
    tb.r(1).call("main", 0.0, 10.0);
    let run = tb.run();
    assert_eq!(
        (
            run.replay.matching.messages,
            run.replay.matching.unmatched_sends
        ),
        (0, 0)
    );
    run.check(&[]);
}

#[test]
fn unmatched_receive_counts_with_its_own_bytes() {
    // §4.9 (perfexpert): an unmatched receive (r0 never sends) takes part in no pattern but
    // counts in comms_recv and bytes_rcvd with the receive record's own byte count.
    let mut tb = Tb::new(2);
    tb.r(0).call("main", 0.0, 10.0);
    tb.r(1)
        .enter(0.0, "main")
        .recv_call("MPI_Recv", 2.0, 6.5, 7.0, 0, 0, 8)
        .leave(10.0, "main");
    let run = tb.run();
    assert_eq!(run.replay.matching.unmatched_receives, 1);
    run.check(&[
        ("comms_recv", "main/MPI_Recv", &[0.0, 1.0]),
        ("bytes_rcvd", "main/MPI_Recv", &[0.0, 8.0]),
    ]);
    // §6.2: r1 has an unmatched message, so its share of a finding halves the repair factor:
    // time at main is 10 s on r0 and 10 − (7 − 2) = 5 s on r1 (MPI_Recv runs 2 → 7),
    // ψ = 1 − 0.5 · 5 / 15.
    assert_eq!(run.replay.unmatched_locations, vec![1]);
    let f = run
        .findings()
        .into_iter()
        .find(|f| f.metric == "time" && f.callpath == 0)
        .unwrap();
    assert!(
        (f.psi - (1.0 - 0.5 * 5.0 / 15.0)).abs() < 1e-9,
        "psi {}",
        f.psi
    );
}

/// §9.11: example §9.1 written as `.cubex` — metric ids in pre-order of §1.2 (`time` first),
/// cnodes by first ENTER (main, main/MPI_Recv, main/MPI_Send), locations r0, r1, and the
/// exact bytes of `0.index` and `0.data` for `time`.
#[test]
fn ex_9_11_cube_round_trip() {
    use perfexpert::report::cubex::Cube;
    let run = ex_9_1().run();
    let cube = Cube::from_analysis(&run.trace, &run.replay, &run.a);
    assert_eq!(cube.metrics[0].id, "time");
    assert_eq!(cube.metrics[1].id, "execution");
    let paths: Vec<String> = (0..cube.cnodes.len()).map(|c| cube.path(c)).collect();
    assert_eq!(paths, ["main", "main/MPI_Recv", "main/MPI_Send"]);
    let (index, data) = cube.metric_files(0);
    let mut want_index = b"CUBEX.INDEX".to_vec();
    want_index.extend_from_slice(&1u32.to_le_bytes());
    want_index.extend_from_slice(&[0, 0, 1]);
    for n in [3u32, 0, 1, 2] {
        want_index.extend_from_slice(&n.to_le_bytes());
    }
    assert_eq!(index, want_index);
    let mut want_data = b"CUBEX.DATA".to_vec();
    for v in [9.0f64, 5.0, 0.0, 5.0, 1.0, 0.0] {
        want_data.extend_from_slice(&v.to_le_bytes());
    }
    assert_eq!(data.len(), 58);
    assert_eq!(data, want_data);
    // and back through the archive: time at main/MPI_Recv on location 1 is 5
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("ex.cubex");
    let mut bytes = Vec::new();
    cube.write(&mut bytes, 0).unwrap();
    std::fs::write(&p, bytes).unwrap();
    let back = Cube::read(&p).unwrap();
    assert_eq!(back.value(0, 1, 1), 5.0);
    assert_eq!(back, cube);
    // a metric that is zero everywhere still gets files, with one row for cnode 0 (§8.7)
    let k = cube
        .metrics
        .iter()
        .position(|m| m.id == "mpi_barrier_wait")
        .unwrap();
    let (index, data) = cube.metric_files(k);
    assert_eq!(&index[18..], &[1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(data.len(), 10 + 8 * 2);
}

// ---------------------------------------------------------------------------------------------
// The worst instances of a finding (issue 14: the HTML report's timeline)
// ---------------------------------------------------------------------------------------------

#[test]
fn worst_instances_keep_the_five_largest_ties_by_location_then_time() {
    // pairs 0→1 and 2→3, four messages each; the receiver enters MPI_Recv at 10·i, the sender
    // its MPI_Send d seconds later, so each receive is a Late Sender instance of d seconds,
    // attributed to the receive record at 10·i + d + 0.5
    let mut tb = Tb::new(4);
    for (from, to, delays) in [(0, 1, [1.0, 4.0, 2.0, 3.0]), (2, 3, [3.0, 1.0, 4.0, 2.0])] {
        let mut s = tb.r(from).enter(0.0, "main");
        for (i, d) in delays.iter().enumerate() {
            let t = 10.0 * i as f64 + d;
            s = s.send_call("MPI_Send", t, t + 0.5, to as u32, 0, 8);
        }
        s.leave(50.0, "main");
        let mut r = tb.r(to).enter(0.0, "main");
        for (i, d) in delays.iter().enumerate() {
            let b = 10.0 * i as f64;
            r = r.recv_call("MPI_Recv", b, b + d + 0.5, b + d + 1.0, from as u32, 0, 8);
        }
        r.leave(50.0, "main");
    }
    let run = tb.run();
    let f = run.finding("mpi_latesender", "main/MPI_Recv");
    assert_eq!(f.n, 8);
    close(f.severity, 20.0, "severity");
    let got: Vec<(u64, u32, f64, f64)> = f
        .worst_instances
        .iter()
        .map(|w| (w.location, w.rank, w.time_s, w.value))
        .collect();
    // 4 s on rank 1 (at 14.5) and rank 3 (at 24.5): the lower location first; then 3 s on
    // rank 1 (at 33.5) before rank 3's earlier one (at 3.5); then 2 s on rank 1 (at 22.5);
    // rank 3's 2 s and both 1 s instances are not kept
    assert_eq!(
        got,
        vec![
            (1, 1, 14.5, 4.0),
            (3, 2, 24.5, 4.0),
            (1, 3, 33.5, 3.0),
            (3, 4, 3.5, 3.0),
            (1, 5, 22.5, 2.0),
        ]
    );
    // class time and sums have no instances of their own
    assert!(run
        .finding("time", "main/MPI_Recv")
        .worst_instances
        .is_empty());
    assert!(run
        .finding("mpi", "main/MPI_Recv")
        .worst_instances
        .is_empty());
}

#[test]
fn worst_instances_are_ordered_bounded_and_inside_the_run_on_every_shipped_trace() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    for (name, rel) in common::shipped_traces() {
        let trace = perfexpert::open(&root.join(&rel)).unwrap();
        let replay = Replay::new(&trace);
        let a = perfexpert::analysis::analyse(&trace, &replay, RuleSet::load(&[]).unwrap());
        let (first, last) = trace.time_span().unwrap();
        let res = trace.timer_resolution as f64;
        let sec = |t: u64| t.saturating_sub(first) as f64 / res;
        let (t0, t1) = (0.0, sec(last));
        let index: std::collections::HashMap<u64, usize> = (trace.defs.locations.iter())
            .enumerate()
            .map(|(i, l)| (l.id, i))
            .collect();
        for f in score(&trace, &replay, &a, ScoreParams::default()) {
            let w = &f.worst_instances;
            let what = format!("{name}: {} at call path {}", f.metric, f.callpath);
            assert_eq!(w.len() as u64, f.n.min(5), "{what}");
            seen += w.len();
            let mut sum = 0.0;
            for (i, x) in w.iter().enumerate() {
                assert_eq!(x.rank as usize, i + 1, "{what}");
                assert!(
                    x.value > 0.0 && x.value <= f.severity * (1.0 + 1e-12),
                    "{what}"
                );
                assert!(x.time_s >= t0 && x.time_s <= t1, "{what}: {} s", x.time_s);
                let l = index[&x.location];
                // the time is that of an event of the location, at the finding's call path
                let ticks = &trace.events[l].time;
                assert!(
                    (0..ticks.len()).any(|e| sec(ticks.get(e)) == x.time_s
                        && replay.locations[l].cnode(e) == f.callpath),
                    "{what}: no event at {} s",
                    x.time_s
                );
                sum += x.value;
                if let Some(y) = w.get(i + 1) {
                    let ordered = x.value > y.value
                        || (x.value == y.value
                            && (index[&x.location], x.time_s) <= (index[&y.location], y.time_s));
                    assert!(ordered, "{what}: #{} and #{}", x.rank, y.rank);
                }
            }
            assert!(sum <= f.severity * (1.0 + 1e-9), "{what}");
        }
    }
    assert!(seen > 0, "no instances at all");
}
