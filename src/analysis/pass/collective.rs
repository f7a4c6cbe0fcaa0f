//! The collective pass (`on = "collective"`, §5.5 pass D): the rules on every complete
//! collective instance the replay matched, its members' begin and end times and payloads.

use super::instances::{self, Inst};
use crate::analysis::cube::Cube;
use crate::analysis::eval::{ptr, Member, Ptr};
use crate::analysis::fire::Engine;
use crate::model::EventKind;
use crate::replay::NONE;
use crate::rules::compile::Value;
use crate::rules::Trigger;

/// Runs the collective rules; returns the location of every (instance, member) pair that
/// violated the clock condition.
pub(crate) fn run(eng: &Engine, had: &[Vec<(u32, u32)>], cube: &mut Cube) -> Vec<u32> {
    instances::run_family(eng, had, cube, Trigger::Collective, 3, || collectives(eng))
}

/// The replay's collective instances with their bindings (operation, size, root), and per
/// instance whether its communicator was reconstructed by a reader (§5.4: lower precision,
/// §6.3 ρ).
pub(crate) fn collectives(eng: &Engine) -> (Vec<Inst>, Vec<bool>) {
    let (trace, replay) = (eng.trace, eng.replay);
    let mut instances: Vec<Inst> = Vec::new();
    let mut reconstructed: Vec<bool> = Vec::new();
    for inst in &replay.instances {
        reconstructed.push(
            trace.defs.comms[inst.comm as usize].flags & crate::model::COMM_FLAG_RECONSTRUCTED != 0,
        );
        let mut members = Vec::with_capacity(inst.members.len());
        let mut op = 0;
        let mut root = u32::MAX;
        for (rank, m) in inst.members.iter().enumerate() {
            let Some(c) = trace.events[m.loc as usize].coll(m.event as usize) else {
                continue;
            };
            op = c.op;
            root = c.root;
            // a reconstructed instance (§5.4) has no payload in the trace: unknown bytes
            // count as > 0 for the payload tests of the patterns
            let rec = reconstructed.last() == Some(&true);
            let known = |b: u64| if rec && b == 0 { 1.0 } else { b as f64 };
            members.push(Member {
                loc: m.loc,
                event: m.event,
                begin: begin_of(eng, m.loc, m.event),
                end: eng.seconds(m.loc, m.event),
                sent: known(c.sent),
                recv: known(c.received),
                rank: rank as u32,
                tasks: 0.0,
            });
        }
        let root_v = if root >= 0xFFFF_FFFD {
            -1.0
        } else {
            root as f64
        };
        instances.push((
            members,
            [
                Value::Str(eng.plan.op_names[op as usize]),
                Value::Num(inst.members.len() as f64),
                Value::Num(root_v),
            ],
        ));
    }
    (instances, reconstructed)
}

/// When the member whose call ends at event `end` of location `l` began: its COLL_BEGIN
/// inside the same call, else the call's ENTER (§4.1.5).
fn begin_of(eng: &Engine, l: u32, end: u32) -> f64 {
    let ev = &eng.trace.events[l as usize];
    let enter = ptr(eng.replay, Ptr::Enter, l, end);
    let mut j = end as usize;
    while j > 0 && enter != NONE && j > enter as usize {
        j -= 1;
        if ev.kind[j] == EventKind::MpiCollectiveBegin
            && ptr(eng.replay, Ptr::Enter, l, j as u32) == enter
        {
            return eng.seconds(l, j as u32);
        }
    }
    let b = if enter == NONE { end } else { enter };
    eng.seconds(l, b)
}
