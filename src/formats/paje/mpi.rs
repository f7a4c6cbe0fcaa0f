//! SimGrid/SMPI state names → MPI regions (patterns.md §2.1.2, role table §2.2.3).

use crate::model::{Paradigm, RegionRole};

/// The canonical MPI name of a Paje state value, if it is an MPI call: `PMPI_Send` →
/// `MPI_Send`, `action_allReduce` → `MPI_Allreduce`, `MPI_Recv` as is, and with `smpi` (a
/// state of SimGrid's SMPI state type `MPI_STATE`) the bare names of older SimGrid releases,
/// `send` → `MPI_Send`. Bare names of other traces (SimGrid actors also `send`) stay as they are.
pub fn canonical(value: &str, smpi: bool) -> Option<String> {
    if value.starts_with("MPI_") {
        return Some(value.to_string());
    }
    if let Some(rest) = value.strip_prefix("PMPI_") {
        return Some(format!("MPI_{rest}"));
    }
    match value {
        "smpi_replay_run_init" => return Some("MPI_Init".into()),
        "smpi_replay_run_finalize" => return Some("MPI_Finalize".into()),
        _ => {}
    }
    let lower = value.to_ascii_lowercase();
    let bare = match lower
        .strip_prefix("action_")
        .or_else(|| lower.strip_prefix("smpi_"))
    {
        Some(b) => b,
        None if smpi => &lower,
        None => return None,
    };
    const TABLE: [(&str, &str); 21] = [
        ("send", "Send"),
        ("recv", "Recv"),
        ("isend", "Isend"),
        ("irecv", "Irecv"),
        ("wait", "Wait"),
        ("waitall", "Waitall"),
        ("waitany", "Waitany"),
        ("test", "Test"),
        ("barrier", "Barrier"),
        ("bcast", "Bcast"),
        ("reduce", "Reduce"),
        ("allreduce", "Allreduce"),
        ("alltoall", "Alltoall"),
        ("alltoallv", "Alltoallv"),
        ("gather", "Gather"),
        ("allgather", "Allgather"),
        ("allgatherv", "Allgatherv"),
        ("scatter", "Scatter"),
        ("reducescatter", "Reduce_scatter"),
        ("init", "Init"),
        ("finalize", "Finalize"),
    ];
    TABLE
        .iter()
        .find(|(k, _)| *k == bare)
        .map(|(_, v)| format!("MPI_{v}"))
}

/// Role of an MPI region from its canonical name (§2.2.3).
pub fn role(canonical: &str) -> RegionRole {
    let n = canonical.strip_prefix("MPI_").unwrap_or(canonical);
    // the non-blocking variant: `Iallreduce` → `Allreduce`
    let base: Option<String> = n.strip_prefix('I').and_then(|b| {
        let mut c = b.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
    });
    let is =
        |names: &[&str]| names.contains(&n) || base.as_deref().is_some_and(|b| names.contains(&b));
    if is(&["Barrier"]) {
        RegionRole::BARRIER
    } else if is(&["Bcast", "Scatter", "Scatterv"]) {
        RegionRole::COLL_ONE2ALL
    } else if is(&["Reduce", "Gather", "Gatherv"]) {
        RegionRole::COLL_ALL2ONE
    } else if is(&[
        "Allgather",
        "Allgatherv",
        "Allreduce",
        "Alltoall",
        "Alltoallv",
        "Alltoallw",
        "Reduce_scatter",
        "Reduce_scatter_block",
    ]) || n.starts_with("Neighbor_")
    {
        RegionRole::COLL_ALL2ALL
    } else if is(&["Scan", "Exscan"]) {
        RegionRole::COLL_OTHER
    } else if [
        "Send",
        "Ssend",
        "Bsend",
        "Rsend",
        "Isend",
        "Issend",
        "Ibsend",
        "Irsend",
        "Recv",
        "Irecv",
        "Sendrecv",
        "Sendrecv_replace",
        "Probe",
        "Iprobe",
        "Mprobe",
        "Improbe",
        "Mrecv",
        "Imrecv",
        "Send_init",
        "Ssend_init",
        "Bsend_init",
        "Rsend_init",
        "Recv_init",
        "Start",
        "Startall",
    ]
    .contains(&n)
    {
        RegionRole::POINT2POINT
    } else if ["Put", "Get", "Rput", "Rget"].contains(&n) {
        RegionRole(29) // rma
    } else if [
        "Accumulate",
        "Get_accumulate",
        "Fetch_and_op",
        "Compare_and_swap",
        "Raccumulate",
        "Rget_accumulate",
    ]
    .contains(&n)
    {
        RegionRole(14) // atomic
    } else if n.starts_with("File_") {
        RegionRole::FILE_IO
    } else {
        RegionRole::FUNCTION
    }
}

/// `OTF2_CollectiveOp` of a blocking collective, by canonical name (None: not one).
pub fn collective_op(canonical: &str) -> Option<u8> {
    let n = canonical.strip_prefix("MPI_")?.to_ascii_lowercase();
    Some(match n.as_str() {
        "barrier" => 0,
        "bcast" => 1,
        "gather" => 2,
        "gatherv" => 3,
        "scatter" => 4,
        "scatterv" => 5,
        "allgather" => 6,
        "allgatherv" => 7,
        "alltoall" => 8,
        "alltoallv" => 9,
        "alltoallw" => 10,
        "allreduce" => 11,
        "reduce" => 12,
        "reduce_scatter" => 13,
        "scan" => 14,
        "exscan" => 15,
        "reduce_scatter_block" => 16,
        _ => return None,
    })
}

/// Whether a collective has a root (1-to-N, N-to-1).
pub fn rooted(op: u8) -> bool {
    matches!(op, 1..=5 | 12)
}

/// Paradigm and role of a state value (§2.1.2): MPI if it maps to an MPI name.
pub fn classify(value: &str, smpi: bool) -> (String, Paradigm, RegionRole) {
    match canonical(value, smpi) {
        Some(c) => {
            let r = role(&c);
            (c, Paradigm::MPI, r)
        }
        None => (value.to_string(), Paradigm::USER, RegionRole::FUNCTION),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smpi_names_map_to_mpi() {
        let c = |v: &str| canonical(v, true);
        assert_eq!(c("PMPI_Recv").as_deref(), Some("MPI_Recv"));
        assert_eq!(c("action_allReduce").as_deref(), Some("MPI_Allreduce"));
        assert_eq!(c("allReduce").as_deref(), Some("MPI_Allreduce"));
        assert_eq!(c("action_Irecv").as_deref(), Some("MPI_Irecv"));
        assert_eq!(c("smpi_replay_run_init").as_deref(), Some("MPI_Init"));
        assert_eq!(c("computing"), None);
        assert_eq!(c("Initializing"), None);
        // SimGrid actor states (not SMPI) keep their names
        assert_eq!(canonical("send", false), None);
        assert_eq!(canonical("PMPI_Send", false).as_deref(), Some("MPI_Send"));
        assert_eq!(canonical("action_send", false).as_deref(), Some("MPI_Send"));
        assert_eq!(role("MPI_Bcast"), RegionRole::COLL_ONE2ALL);
        assert_eq!(role("MPI_Iallreduce"), RegionRole::COLL_ALL2ALL);
        assert_eq!(role("MPI_Isend"), RegionRole::POINT2POINT);
        assert_eq!(role("MPI_Waitall"), RegionRole::FUNCTION);
        assert_eq!(collective_op("MPI_Alltoall"), Some(8));
        assert_eq!(collective_op("MPI_Ibarrier"), None);
    }
}
