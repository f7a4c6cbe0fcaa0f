//! Sums and derived metrics (`on = "sum"`, `on = "derived"`, §1): computed over the whole
//! cube once the passes are done, children and dependencies first.

use crate::analysis::cube::Cube;
use crate::analysis::fire::Engine;
use crate::rules::compile::Value;
use crate::rules::{Rule, Trigger};
use rayon::prelude::*;

/// Fills the values of the sum and derived rules, each once all the metrics it reads are
/// done.
pub(crate) fn run(eng: &Engine, cube: &mut Cube) {
    let rules = &eng.plan.rs.rules;
    let mut done: Vec<bool> = rules
        .iter()
        .map(|r| !matches!(r.on, Trigger::Sum | Trigger::Derived))
        .collect();
    loop {
        let mut progressed = false;
        for k in 0..rules.len() {
            if done[k] {
                continue;
            }
            let rule = &rules[k];
            let deps: Vec<usize> = match rule.on {
                Trigger::Sum => eng.plan.children[k].clone(),
                _ => rule.uses_metrics.iter().map(|&m| m as usize).collect(),
            };
            if !deps.iter().all(|&d| done[d]) {
                continue;
            }
            let v = values_of(eng, rule, &deps, cube);
            cube.values[k] = v;
            done[k] = true;
            progressed = true;
        }
        if !progressed {
            break;
        }
    }
}

/// The values of sum or derived `rule` over every (call path, location), from those of
/// the metrics `deps` it reads.
fn values_of(eng: &Engine, rule: &Rule, deps: &[usize], cube: &Cube) -> Vec<f64> {
    let values = &cube.values;
    let mut v = vec![0.0; cube.ncnode() * cube.nloc()];
    if rule.on == Trigger::Sum {
        for &d in deps {
            if !values[d].is_empty() {
                for (a, b) in v.iter_mut().zip(&values[d]) {
                    *a += b;
                }
            }
        }
    } else if let Some(e) = &rule.value {
        v.par_iter_mut().enumerate().for_each(|(idx, out)| {
            let metric = |m: u16| values[m as usize].get(idx).copied().unwrap_or(0.0);
            let ctx = eng.ctx(&[], &[], &[], &[], &metric);
            let mut env = vec![Value::None; rule.slots.max(1) as usize];
            if !eng.prelude(rule, &ctx, &mut env) {
                *out = 0.0;
                return;
            }
            let x = ctx.eval(e, &mut env).num();
            // §1.3 comp: rounding residue in (−1e-12, 0) is stored as 0
            *out = if x.is_nan() || (x < 0.0 && x > -1e-12) {
                0.0
            } else {
                x
            };
        });
    }
    v
}
