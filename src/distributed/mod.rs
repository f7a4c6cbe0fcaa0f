//! `perfexpert run --mpi` (issue 24): the analysis as an MPI job. P processes split the
//! trace's locations (`partition`: whole location groups, balanced by declared event counts),
//! each reads only its share's event files and replays them; what crosses processes goes
//! through a `Transport` (`mpi.rs`, the system MPI through rsmpi, with the `mpi` feature;
//! `local.rs`, threads in one process, for the tests) as the byte records of `wire`.
//! Faults are agreed on collectively (`agree`) before anything is written.
//!
//! Distributed so far: the read and pass A of each share, the call trees exchanged and merged
//! as the single-process replay merges them, the OpenMP teams of each share, the call-path
//! profile summed on every process (`core`); point-to-point matching and collective
//! instances (`messages`); the ghost events of other processes that the rules read through
//! partner references (`ghost`); the rule passes over what each process owns and the cube
//! gathered to rank 0 in the single-process order (`analyse`): the text report
//! (docs/distributed.md).

pub mod analyse;
pub mod core;
pub mod critical_path;
pub mod extras;
pub mod ghost;
pub mod launcher;
pub mod local;
pub mod messages;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod partition;
pub mod rootcause;
pub mod views;
pub mod wire;

/// How the processes of a job exchange bytes: one collective at a time, every process
/// calling it in the same order.
pub trait Transport {
    /// This process's rank, from 0.
    fn rank(&self) -> usize;
    /// How many processes the job has.
    fn size(&self) -> usize;
    /// Every process's `mine`, in rank order, on every process (an error, the same on every
    /// process, when the transport cannot carry that much).
    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, String>;
    /// `to[r]` sent to rank `r` (one vector per rank, empty for nothing); what every rank
    /// sent to this one, in rank order (an error, the same on every process, when the
    /// transport cannot carry that much).
    fn all_to_all(&self, to: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String>;
    /// The bytes this process has sent and received through the transport so far.
    fn bytes_exchanged(&self) -> u64;
    /// The exchanges (`all_gather`, `all_to_all`) this process has taken part in so far:
    /// the job's rounds, each a fixed handful of MPI collectives.
    fn rounds(&self) -> u64;
}

/// Agree on success: every process hands in its outcome; if any failed, every process gets
/// the message of the lowest failing rank (so rank 0 can print it once), else its own value.
pub fn agree<T>(t: &dyn Transport, outcome: Result<T, String>) -> Result<T, Failed> {
    let mine = match &outcome {
        Ok(_) => Vec::new(),
        Err(m) if m.is_empty() => b"(no message)".to_vec(),
        Err(m) => m.as_bytes().to_vec(),
    };
    let all = t
        .all_gather(&mine)
        .map_err(|message| Failed { rank: 0, message })?;
    match all.iter().position(|m| !m.is_empty()) {
        None => outcome.map_err(|m| Failed {
            rank: t.rank(),
            message: m,
        }),
        Some(r) => Err(Failed {
            rank: r,
            message: String::from_utf8_lossy(&all[r]).into_owned(),
        }),
    }
}

/// The failure a job agreed on: the lowest failing rank and its one-line message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failed {
    pub rank: usize,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lowest_failing_rank_is_agreed_on_everywhere() {
        let got = local::run(4, |t| {
            let r = t.rank();
            let outcome = if r == 1 || r == 3 {
                Err(format!("rank {r} failed"))
            } else {
                Ok(r)
            };
            agree(t, outcome)
        });
        for g in &got {
            assert_eq!(
                g,
                &Err(Failed {
                    rank: 1,
                    message: "rank 1 failed".into()
                })
            );
        }
        let ok = local::run(3, |t| agree(t, Ok::<_, String>(t.rank())));
        assert_eq!(ok, vec![Ok(0), Ok(1), Ok(2)]);
    }
}
