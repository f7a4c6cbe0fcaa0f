//! A `Transport` between threads of one process: the distributed code run as P "processes"
//! in a test without MPI.

use super::Transport;
use std::sync::{Barrier, Mutex};

struct Shared {
    slots: Mutex<Vec<Vec<u8>>>,
    /// `all_to_all`: what rank r sends to rank s in `matrix[r][s]`.
    matrix: Mutex<Vec<Vec<Vec<u8>>>>,
    barrier: Barrier,
}

/// One thread's end of the in-process job.
pub struct Local<'a> {
    rank: usize,
    size: usize,
    shared: &'a Shared,
    bytes: std::cell::Cell<u64>,
    rounds: std::cell::Cell<u64>,
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
        self.rounds.set(self.rounds.get() + 1);
        Ok(all)
    }

    fn all_to_all(&self, mut to: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, String> {
        to.resize(self.size, Vec::new());
        let sent: usize = to.iter().map(Vec::len).sum::<usize>() - to[self.rank].len();
        if let Ok(mut m) = self.shared.matrix.lock() {
            m[self.rank] = to;
        }
        self.shared.barrier.wait();
        let got: Vec<Vec<u8>> = (self.shared.matrix.lock())
            .map(|m| m.iter().map(|row| row[self.rank].clone()).collect())
            .unwrap_or_default();
        self.shared.barrier.wait();
        let theirs: usize = got.iter().map(Vec::len).sum::<usize>() - got[self.rank].len();
        self.bytes.set(self.bytes.get() + (sent + theirs) as u64);
        self.rounds.set(self.rounds.get() + 1);
        Ok(got)
    }

    fn bytes_exchanged(&self) -> u64 {
        self.bytes.get()
    }

    fn rounds(&self) -> u64 {
        self.rounds.get()
    }
}

/// Run `f` on `p` threads, each with its rank's transport; the results in rank order.
pub fn run<R: Send>(p: usize, f: impl Fn(&dyn Transport) -> R + Sync) -> Vec<R> {
    let shared = Shared {
        slots: Mutex::new(vec![Vec::new(); p]),
        matrix: Mutex::new(vec![vec![Vec::new(); p]; p]),
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
                        rounds: Default::default(),
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

/// Run `f` on `p` threads as processes, each on its share of the trace at `path` (the
/// partition's, read by `formats::open_share`); the results in rank order.
pub fn on_shares<R: Send>(
    path: &std::path::Path,
    p: usize,
    f: impl Fn(&crate::model::Trace, &[bool], &dyn Transport) -> Result<R, String> + Sync,
) -> Vec<Result<R, String>> {
    run(p, |t| {
        let rank = t.rank();
        let pick = |d: &crate::model::Definitions| super::partition::share(d, p, rank);
        let (trace, keep) =
            crate::formats::open_share(path, None, &pick).map_err(|e| e.to_string())?;
        f(&trace, &keep, t)
    })
}

/// Every testdata trace (OTF2 anchors and Paje files), sorted: what the unit tests of the
/// distributed replay run at P = 1..4.
#[cfg(test)]
pub fn testdata_traces() -> Vec<std::path::PathBuf> {
    let mut paths = Vec::new();
    for dir in [
        "testdata/scorep",
        "testdata/scorep-omp",
        "testdata/generated",
        "testdata/smpi",
    ] {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            for f in ["traces.otf2", "trace.paje", "trace-sizes.paje"] {
                if e.path().join(f).is_file() {
                    paths.push(e.path().join(f));
                }
            }
        }
    }
    paths.sort();
    assert!(paths.len() >= 30, "{paths:?}");
    paths
}
