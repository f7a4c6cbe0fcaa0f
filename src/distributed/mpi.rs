//! The `Transport` over the system MPI (rsmpi): `MPI_Allgather` of the byte counts, then
//! `MPI_Allgatherv` of the bytes, on `MPI_COMM_WORLD`.

use super::Transport;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::cell::Cell;

/// MPI, initialised for this process (finalised when dropped).
pub struct Mpi {
    world: SimpleCommunicator,
    bytes: Cell<u64>,
    rounds: Cell<u64>,
    // dropped last: MPI_Finalize
    _universe: mpi::environment::Universe,
}

impl Mpi {
    /// `MPI_Init`; `None` when MPI was already initialised.
    pub fn init() -> Option<Mpi> {
        let universe = mpi::initialize()?;
        Some(Mpi {
            world: universe.world(),
            bytes: Cell::new(0),
            rounds: Cell::new(0),
            _universe: universe,
        })
    }
}

impl Transport for Mpi {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let p = self.size();
        // one byte more on every side: an empty Rust slice's pointer (1) is Open MPI's
        // MPI_IN_PLACE
        let mut send = Vec::with_capacity(mine.len() + 1);
        send.extend_from_slice(mine);
        send.push(0);
        self.rounds.set(self.rounds.get() + 1);
        let mut lens = vec![0u64; p];
        self.world
            .all_gather_into(&(send.len() as u64), &mut lens[..]);
        let total: u64 = lens.iter().sum();
        if total > i32::MAX as u64 {
            // every process sees the same lengths, so every process refuses
            return Err(format!(
                "one exchange of {total} bytes exceeds what one MPI_Allgatherv carries (2 GiB)"
            ));
        }
        let counts: Vec<i32> = lens.iter().map(|&n| n as i32).collect();
        let displs: Vec<i32> = (counts.iter())
            .scan(0i32, |at, &n| {
                let d = *at;
                *at += n;
                Some(d)
            })
            .collect();
        let mut buf = vec![0u8; total as usize];
        {
            let mut part = PartitionMut::new(&mut buf[..], &counts[..], &displs[..]);
            self.world.all_gather_varcount_into(&send[..], &mut part);
        }
        let sent = (send.len() * (p - 1)) as u64;
        let received = total - send.len() as u64;
        self.bytes
            .set(self.bytes.get() + sent + received + 16 * (p as u64 - 1));
        Ok((0..p)
            .map(|r| {
                let d = displs[r] as usize;
                buf[d..d + counts[r] as usize - 1].to_vec()
            })
            .collect())
    }

    fn all_to_all(&self, mut to: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
        let p = self.size();
        to.resize(p, Vec::new());
        // one byte more to every rank: no count is 0 and no buffer empty (an empty Rust
        // slice's pointer is Open MPI's MPI_IN_PLACE)
        let lens: Vec<u64> = to.iter().map(|v| v.len() as u64 + 1).collect();
        self.rounds.set(self.rounds.get() + 1);
        let mut theirs = vec![0u64; p];
        self.world.all_to_all_into(&lens[..], &mut theirs[..]);
        let (out_total, in_total) = (lens.iter().sum::<u64>(), theirs.iter().sum::<u64>());
        let most = [out_total, in_total].into_iter().max().unwrap_or(0);
        // every process learns whether any process's exchange is too large
        let mut worst = vec![0u64; p];
        self.world.all_gather_into(&most, &mut worst[..]);
        if worst.iter().any(|&n| n > i32::MAX as u64) {
            return Err(format!(
                "one exchange of {} bytes exceeds what one MPI_Alltoallv carries (2 GiB)",
                worst.iter().max().unwrap_or(&0)
            ));
        }
        let displs = |c: &[i32]| -> Vec<i32> {
            c.iter()
                .scan(0i32, |at, &n| {
                    let d = *at;
                    *at += n;
                    Some(d)
                })
                .collect()
        };
        let send_counts: Vec<i32> = lens.iter().map(|&n| n as i32).collect();
        let recv_counts: Vec<i32> = theirs.iter().map(|&n| n as i32).collect();
        let (send_displs, recv_displs) = (displs(&send_counts), displs(&recv_counts));
        let mut send = Vec::with_capacity(out_total as usize);
        for v in &to {
            send.extend_from_slice(v);
            send.push(0);
        }
        drop(to);
        let mut buf = vec![0u8; in_total as usize];
        {
            let part = Partition::new(&send[..], &send_counts[..], &send_displs[..]);
            let mut into = PartitionMut::new(&mut buf[..], &recv_counts[..], &recv_displs[..]);
            self.world.all_to_all_varcount_into(&part, &mut into);
        }
        let me = self.rank();
        let moved = out_total - lens[me] + in_total - theirs[me];
        self.bytes
            .set(self.bytes.get() + moved + 16 * (p as u64 - 1));
        Ok((0..p)
            .map(|r| {
                let d = recv_displs[r] as usize;
                buf[d..d + recv_counts[r] as usize - 1].to_vec()
            })
            .collect())
    }

    fn bytes_exchanged(&self) -> u64 {
        self.bytes.get()
    }

    fn rounds(&self) -> u64 {
        self.rounds.get()
    }
}
