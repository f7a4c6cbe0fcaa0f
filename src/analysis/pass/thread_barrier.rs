//! The thread-barrier pass (`on = "thread_barrier"`, §4.7, §5.6): the rules on every
//! barrier instance of a team (explicit or implicit), the threads that reached it the
//! members, with the time they spent executing tasks inside it.

use super::instances::{self, thread_instance, Inst};
use crate::analysis::cube::Cube;
use crate::analysis::eval::{ptr, Ptr};
use crate::analysis::fire::Engine;
use crate::rules::compile::Value;
use crate::rules::Trigger;

/// Runs the thread-barrier rules.
pub(crate) fn run(eng: &Engine, had: &[Vec<(u32, u32)>], cube: &mut Cube) {
    let barriers = || (barriers(eng), Vec::new());
    instances::run_family(eng, had, cube, Trigger::ThreadBarrier, 1, barriers);
}

/// The replay's thread barriers as instances: a thread's call ends at its LEAVE.
pub(crate) fn barriers(eng: &Engine) -> Vec<Inst> {
    let replay = eng.replay;
    let exit = |loc: u32, enter: u32| ptr(replay, Ptr::Exit, loc, enter);
    replay
        .omp
        .barriers
        .iter()
        .map(|b| {
            let threads = b
                .members
                .iter()
                .map(|m| (m.loc, m.thread, m.enter, exit(m.loc, m.enter), m.tasks));
            thread_instance(eng.trace, threads, [Value::None, Value::None])
        })
        .collect()
}
