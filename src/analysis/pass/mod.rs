//! The passes over the replay, one per trigger family, in the order `analyse` runs them:
//! call paths; the per-location pass of events, receives and sends (`location`, with the
//! triggers' bindings in `event` and `p2p`); the instance families (`instances`:
//! collectives, world calls, teams, thread barriers); then sums and derived metrics. `share`:
//! the same passes over what one process of `run --mpi` owns, and the job's cube.

pub(crate) mod callpath;
pub(crate) mod collective;
pub(crate) mod derived;
pub(crate) mod event;
pub(crate) mod instances;
pub(crate) mod location;
pub(crate) mod memo;
pub(crate) mod p2p;
pub(crate) mod share;
pub(crate) mod team;
pub(crate) mod thread_barrier;
pub(crate) mod world;
