//! The call-path pass (`on = "callpath"`: class time, visits, §3.5): every rule on every
//! (call path, location) with a visit or time, all rules in one walk over each location's
//! call paths.

use crate::analysis::cube::{Contribution, Cube};
use crate::analysis::fire::Engine;
use crate::replay::calltree::Callee;
use crate::replay::NONE;
use crate::rules::compile::Value;
use crate::rules::Trigger;
use rayon::prelude::*;

/// Runs the call-path rules. Each (rule, call path, location) cell gets at most one value
/// here, so the order they are added in does not matter.
pub(crate) fn run(eng: &Engine, cube: &mut Cube) {
    let cp_rules = eng.plan.by_trigger(Trigger::Callpath);
    if cp_rules.is_empty() {
        return;
    }
    let contribs: Vec<Contribution> = (0..cube.nloc())
        .into_par_iter()
        .flat_map_iter(|l| location(eng, &cp_rules, l))
        .collect();
    cube.add_all(&contribs);
}

/// What the call-path rules `cp_rules` find on location `l`.
pub(crate) fn location(eng: &Engine, cp_rules: &[usize], l: usize) -> Vec<Contribution> {
    let (trace, replay, rs) = (eng.trace, eng.replay, &eng.plan.rs);
    let st = &replay.locations[l];
    let none = |_: u16| 0.0;
    let ctx = eng.ctx(&[], &[], &[], &[], &none);
    let mut out = Vec::new();
    let mut envs: Vec<Vec<Value>> = cp_rules
        .iter()
        .map(|&k| vec![Value::None; rs.rules[k].slots as usize])
        .collect();
    // §3.5: the master of this location's process (itself without OpenMP)
    let m = replay.omp.master[l] as usize;
    let ms = &replay.locations[m];
    let res = trace.timer_resolution as f64;
    for c in 0..replay.tree.len() {
        // a worker may owe idle time where only its master was (§3.5.3)
        if st.visits[c] == 0 && st.time[c] == 0 && (m == l || (ms.time[c] == 0 && ms.incl[c] == 0))
        {
            continue;
        }
        let Callee::Region(r) = replay.tree.nodes[c].callee else {
            continue;
        };
        let sub = replay.omp.subtree[c];
        let bound = [
            Value::Num(st.time[c] as f64 / res),
            Value::Num(st.visits[c] as f64),
            Value::Region(r),
            Value::Bool(m == l),
            Value::Num(ms.time[c] as f64 / res),
            Value::Num(st.incl[c] as f64 / res),
            Value::Num(ms.incl[c] as f64 / res),
            Value::Bool(sub != 0),
            Value::Bool(sub == 2),
        ];
        for (&k, env) in cp_rules.iter().zip(&mut envs) {
            let rule = &rs.rules[k];
            env[..bound.len()].copy_from_slice(&bound);
            if !eng.prelude(rule, &ctx, env) {
                continue;
            }
            let v = rule
                .severity
                .as_ref()
                .map_or(0.0, |s| ctx.eval(s, env).num());
            if v > 0.0 {
                out.push(Contribution {
                    rule: k as u16,
                    cnode: c as u32,
                    loc: l as u32,
                    event: NONE,
                    value: v,
                    cc: false,
                    rec: false,
                });
            }
        }
    }
    out
}
