//! Helpers of the optimiser's tests: a testdata trace with its rules specialised, and the
//! agreement check of written, rewritten and compiled expressions.

use super::specialise::specialised;
use super::trace_strings;
use crate::analysis::eval::{Code, Ctx, RegionStrings};
use crate::model::Trace;
use crate::replay::Replay;
use crate::rules::compile::{Expr, Value};
use crate::rules::{Let, Rule, RuleSet};

/// A trace of `testdata/` (`name`: its directory) with its replay and `rs` specialised
/// for it, what `Ctx` reads, for the tests that evaluate rule expressions by hand.
pub(crate) struct Specialised {
    pub(crate) trace: Trace,
    pub(crate) replay: Replay,
    pub(crate) strings: Vec<String>,
    pub(crate) regions: RegionStrings,
    pub(crate) kind_names: [u32; 256],
    pub(crate) spec: RuleSet,
    pub(crate) had: Vec<Vec<(u32, u32)>>,
}

/// The trace in directory `name` of `testdata/`, and its replay.
pub(crate) fn testdata_trace(name: &str) -> (Trace, Replay) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata")
        .join(name)
        .join("traces.otf2");
    let trace = crate::open(&path).unwrap();
    let replay = Replay::new(&trace);
    (trace, replay)
}

impl Specialised {
    pub(crate) fn new(rs: &RuleSet, name: &str) -> Specialised {
        let (trace, replay) = testdata_trace(name);
        let mut interner = rs.interner.clone();
        let (regions, kind_names) = trace_strings(&mut interner, &trace);
        let spec = specialised(
            &trace,
            &replay,
            rs,
            &regions,
            &kind_names,
            &interner.strings,
        );
        Specialised {
            trace,
            replay,
            strings: interner.strings,
            regions,
            kind_names,
            spec,
            had: vec![Vec::new(); rs.rules.len()],
        }
    }

    /// A context without members, with queued instances `items`.
    pub(crate) fn ctx<'a>(
        &'a self,
        rs: &'a RuleSet,
        items: &'a [Vec<Value>],
        metric: &'a dyn Fn(u16) -> f64,
    ) -> Ctx<'a> {
        Ctx {
            trace: &self.trace,
            replay: &self.replay,
            regions: &self.regions,
            kind_names: &self.kind_names,
            regexes: &rs.regexes,
            strings: &self.strings,
            members: &[],
            member_vals: &[],
            items,
            had: &self.had,
            metric,
            shared: &[],
            clock: crate::analysis::eval::clock_of(&self.trace),
            cols: &[],
        }
    }
}

/// A context that reads `plan`'s strings on its `trace` and `replay` alone (no members,
/// queued instances, `had`, metrics or shared values).
pub(crate) fn plan_ctx<'a>(plan: &'a super::Plan, trace: &'a Trace, replay: &'a Replay) -> Ctx<'a> {
    Ctx::of_trace(
        trace,
        replay,
        &plan.regions,
        &plan.kind_names,
        &plan.rs.regexes,
        &plan.strings,
    )
}

/// The expression as written (`a`), as rewritten (`b`) and `b` compiled (`code`) give
/// the same value in `env` (`what` names the case when they do not).
pub(crate) fn agree(
    ctx: &Ctx,
    a: &Expr,
    b: &Expr,
    code: &Code,
    env: &[Value],
    what: &dyn Fn() -> String,
) {
    let x = ctx.eval(a, &mut env.to_vec());
    let y = ctx.eval(b, &mut env.to_vec());
    let z = code.run(ctx, &mut env.to_vec());
    assert!(
        same(x, y) && same(x, z),
        "{}: {x:?} {y:?} {z:?}\n{b:?}",
        what()
    );
    // the typed entry points (severity, conditions) as the value read
    let n = code.num(ctx, &mut env.to_vec());
    let t = code.truth(ctx, &mut env.to_vec());
    assert!(
        same(Value::Num(x.num()), Value::Num(n)) && x.bool() == t,
        "{}: {x:?} {n:?} {t:?}\n{b:?}",
        what()
    );
}

pub(crate) fn same(a: Value, b: Value) -> bool {
    match (a, b) {
        (Value::Num(x), Value::Num(y)) => x.to_bits() == y.to_bits() || x.is_nan() && y.is_nan(),
        _ => a == b,
    }
}

pub(crate) fn exprs(r: &Rule) -> Vec<&Expr> {
    let mut v: Vec<&Expr> = r
        .lets
        .iter()
        .map(|l| match l {
            Let::Inst(_, e) | Let::Member { expr: e, .. } => e,
        })
        .collect();
    v.extend(
        [
            &r.when,
            &r.for_members,
            &r.severity,
            &r.at,
            &r.violation,
            &r.value,
        ]
        .into_iter()
        .flatten(),
    );
    if let Some(g) = &r.group {
        v.push(&g.by);
        v.extend(&g.when);
    }
    if let Some(q) = &r.queue {
        v.push(&q.take);
    }
    v
}
