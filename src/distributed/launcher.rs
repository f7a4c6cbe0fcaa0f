//! Was this process started by an MPI launcher? `run --mpi` refuses in one line otherwise
//! (an MPI library started alone becomes a job of one process, which is not what was meant).

/// The environment variables MPI launchers set in every process they start: Open MPI's
/// `mpirun`, MPICH's and Intel MPI's Hydra (PMI), PMIx launchers (Open MPI 5, `srun
/// --mpi=pmix`), Slurm's PMI2 (`srun --mpi=pmi2`), MVAPICH.
pub const VARIABLES: &[&str] = &[
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
];

/// The first launcher variable set in the environment, if any.
pub fn detect() -> Option<&'static str> {
    detect_in(|v| std::env::var_os(v).is_some())
}

/// `detect` over any environment (`has` says whether a variable is set).
pub fn detect_in(has: impl Fn(&str) -> bool) -> Option<&'static str> {
    VARIABLES.iter().copied().find(|v| has(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_are_found_by_their_variables() {
        assert_eq!(detect_in(|_| false), None);
        assert_eq!(
            detect_in(|v| v == "OMPI_COMM_WORLD_SIZE"),
            Some("OMPI_COMM_WORLD_SIZE")
        );
        assert_eq!(detect_in(|v| v == "PMIX_RANK"), Some("PMIX_RANK"));
        // Slurm alone (srun without an MPI plugin) is no MPI launcher
        assert_eq!(detect_in(|v| v == "SLURM_PROCID"), None);
    }
}
