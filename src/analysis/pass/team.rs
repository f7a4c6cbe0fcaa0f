//! The team pass (`on = "team"`, §4.7, §5.6): the rules on every OpenMP team (one
//! parallel-region instance), its threads the members, bound with its size, fork and join.

use super::instances::{self, secs, thread_instance, Inst};
use crate::analysis::cube::Cube;
use crate::analysis::fire::Engine;
use crate::rules::compile::Value;
use crate::rules::Trigger;

/// Runs the team rules.
pub(crate) fn run(eng: &Engine, had: &[Vec<(u32, u32)>], cube: &mut Cube) {
    instances::run_family(eng, had, cube, Trigger::Team, 3, || {
        (teams(eng), Vec::new())
    });
}

/// The replay's teams as instances.
pub(crate) fn teams(eng: &Engine) -> Vec<Inst> {
    let trace = eng.trace;
    let mut insts = Vec::with_capacity(eng.replay.omp.teams.len());
    for t in &eng.replay.omp.teams {
        let threads = t
            .members
            .iter()
            .map(|mb| (mb.loc, mb.thread, mb.enter, mb.leave, 0));
        let span = [
            Value::Num(secs(trace, t.fork)),
            Value::Num(secs(trace, t.join)),
        ];
        insts.push(thread_instance(trace, threads, span));
    }
    insts
}
