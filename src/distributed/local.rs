//! A `Transport` between threads of one process: the distributed code run as P "processes"
//! in a test without MPI.

use super::Transport;
use std::sync::{Barrier, Mutex};

struct Shared {
    slots: Mutex<Vec<Vec<u8>>>,
    barrier: Barrier,
}

/// One thread's end of the in-process job.
pub struct Local<'a> {
    rank: usize,
    size: usize,
    shared: &'a Shared,
    bytes: std::cell::Cell<u64>,
}

impl Transport for Local<'_> {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        if let Ok(mut s) = self.shared.slots.lock() {
            s[self.rank] = mine.to_vec();
        }
        self.shared.barrier.wait();
        let all = self
            .shared
            .slots
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        // nobody writes the next round's slot before everyone has read this one
        self.shared.barrier.wait();
        let theirs: usize = all.iter().map(Vec::len).sum::<usize>() - mine.len();
        let sent = mine.len() * (self.size - 1);
        self.bytes.set(self.bytes.get() + (sent + theirs) as u64);
        Ok(all)
    }

    fn bytes_exchanged(&self) -> u64 {
        self.bytes.get()
    }
}

/// Run `f` on `p` threads, each with its rank's transport; the results in rank order.
pub fn run<R: Send>(p: usize, f: impl Fn(&dyn Transport) -> R + Sync) -> Vec<R> {
    let shared = Shared {
        slots: Mutex::new(vec![Vec::new(); p]),
        barrier: Barrier::new(p),
    };
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..p)
            .map(|rank| {
                let (shared, f) = (&shared, &f);
                s.spawn(move || {
                    f(&Local {
                        rank,
                        size: p,
                        shared,
                        bytes: Default::default(),
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}
