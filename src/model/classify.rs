//! Region classification for the patterns (patterns.md §2.2): the pattern class of an MPI or
//! OpenMP region and the mode of a send. Rules read them as `region.class` / `region.mode`.

use crate::model::{Paradigm, Region, RegionRole};

/// (class, send mode) of a region, as upper-case strings (§2.2).
pub fn classify(r: &Region) -> (&'static str, &'static str) {
    if r.paradigm == Paradigm::MEASUREMENT_SYSTEM {
        return ("INTERNAL", "");
    }
    if r.paradigm == Paradigm::OPENMP {
        let n = r.canonical_name.to_lowercase();
        let n = n.split(" @").next().unwrap_or("").trim();
        let class = if n == "!$omp parallel" || r.role == RegionRole::PARALLEL {
            "OMP_PARALLEL"
        } else if n == "!$omp barrier" || r.role == RegionRole::BARRIER {
            "OMP_EBARRIER"
        } else if n == "!$omp ibarrier"
            || n == "!$omp implicit barrier"
            || r.role == RegionRole::IMPLICIT_BARRIER
        {
            "OMP_IBARRIER"
        } else if r.role == RegionRole(12) || r.role == RegionRole(13) {
            "OMP_CRITICAL"
        } else {
            "OMP_OTHER"
        };
        return (class, "");
    }
    if r.paradigm != Paradigm::MPI {
        return ("USER", "");
    }
    let lower = r.canonical_name.to_lowercase();
    let n = lower.strip_prefix("mpi_").unwrap_or(&lower);
    let class = match n {
        "init" | "init_thread" => "MPI_INIT",
        "finalize" => "MPI_FINALIZE",
        "barrier" => "COLL_BARRIER",
        "bcast" | "scatter" | "scatterv" => "COLL_1TON",
        "reduce" | "gather" | "gatherv" => "COLL_NTO1",
        "allgather"
        | "allgatherv"
        | "allreduce"
        | "alltoall"
        | "alltoallv"
        | "alltoallw"
        | "reduce_scatter"
        | "reduce_scatter_block" => "COLL_NTON",
        "scan" | "exscan" => "COLL_SCAN",
        _ if n.starts_with("sendrecv") => "P2P_SENDRECV",
        _ if n.contains("send") => "P2P_SEND",
        "recv" | "irecv" | "recv_init" => "P2P_RECV",
        "test" | "testany" => "P2P_TEST_SINGLE",
        "testall" | "testsome" => "P2P_TEST_MULTI",
        "wait" | "waitany" => "P2P_WAIT_SINGLE",
        "waitall" | "waitsome" => "P2P_WAIT_MULTI",
        "cancel" | "get_count" => "P2P_OTHER",
        _ if n.starts_with("buffer")
            || n.starts_with("request")
            || n.starts_with("start")
            || n.contains("probe") =>
        {
            "P2P_OTHER"
        }
        _ if n.starts_with("file") => "IO",
        "put" | "accumulate" | "get" => "RMA_COMM",
        _ if n.starts_with("win_") => "RMA_SYNC",
        _ => "MPI_OTHER",
    };
    let mode = match class {
        "P2P_SEND" if n.starts_with('i') => "NONBLOCKING",
        "P2P_SEND" if n.contains("init") => "PERSISTENT",
        "P2P_SEND" if n.starts_with("ssend") => "SYNCHRONOUS",
        "P2P_SEND" if n.starts_with("bsend") => "BUFFERED",
        "P2P_SEND" if n.starts_with("rsend") => "READY",
        "P2P_SEND" => "STANDARD",
        "P2P_RECV" if n == "irecv" => "NONBLOCKING",
        "P2P_RECV" if n == "recv_init" => "PERSISTENT",
        "P2P_RECV" => "BLOCKING",
        _ => "",
    };
    (class, mode)
}

pub use crate::model::collective_op_name;
