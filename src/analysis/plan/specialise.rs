//! Specialising the rules for one trace (partial evaluation): what reads only the region of
//! a call becomes a table per region, what reads nothing a constant, field chains paths.

use crate::analysis::eval::{Ctx, RegionStrings};
use crate::model::Trace;
use crate::replay::Replay;
use crate::rules::compile::{Expr, Field, Func, Value};
use crate::rules::{Let, Rule, RuleSet};

fn is_region_field(f: Field) -> bool {
    matches!(
        f,
        Field::RegionName
            | Field::RegionParadigm
            | Field::RegionRole
            | Field::RegionClass
            | Field::RegionMode
    )
}

/// Whether `e` reads nothing but region fields of `X.call`, X the event in slot `s`.
pub(crate) fn reads_only_call(e: &Expr, s: u16) -> bool {
    match e {
        Expr::Const(_) => true,
        Expr::Field(b, f) => {
            is_region_field(*f)
                && matches!(&**b, Expr::Field(x, Field::Call) if matches!(**x, Expr::Slot(t) if t == s))
        }
        Expr::Not(x) | Expr::Neg(x) | Expr::In(x, _) => reads_only_call(x, s),
        Expr::Bin(_, a, b) => reads_only_call(a, s) && reads_only_call(b, s),
        Expr::If(c, a, b) => {
            reads_only_call(c, s) && reads_only_call(a, s) && reads_only_call(b, s)
        }
        Expr::Call(f, args) if is_pure(*f) => args.iter().all(|a| reads_only_call(a, s)),
        _ => false,
    }
}

/// `e` (for which `reads_only_call(e, s)` holds) with `X.call.f` read as `X.f`: evaluated
/// with the region (or `None`) in slot `s`, it gives what `e` gives for an event in a call
/// of that region (or outside any call).
fn on_region(e: &Expr) -> Expr {
    let b = |x: &Expr| Box::new(on_region(x));
    match e {
        Expr::Field(x, f) => match &**x {
            Expr::Field(y, Field::Call) => Expr::Field(y.clone(), *f),
            _ => Expr::Field(b(x), *f),
        },
        Expr::Not(x) => Expr::Not(b(x)),
        Expr::Neg(x) => Expr::Neg(b(x)),
        Expr::In(x, l) => Expr::In(b(x), l.clone()),
        Expr::Bin(op, x, y) => Expr::Bin(*op, b(x), b(y)),
        Expr::If(c, x, y) => Expr::If(b(c), b(x), b(y)),
        Expr::Call(f, args) => Expr::Call(*f, args.iter().map(on_region).collect()),
        _ => e.clone(),
    }
}

/// Slots `s` whose call `s.call` `e` reads (with repeats).
fn call_slots(e: &Expr, out: &mut Vec<u16>) {
    match e {
        Expr::Field(b, Field::Call) if matches!(**b, Expr::Slot(_)) => {
            if let Expr::Slot(t) = **b {
                out.push(t);
            }
        }
        Expr::Field(x, _) | Expr::Not(x) | Expr::Neg(x) | Expr::In(x, _) => call_slots(x, out),
        Expr::Bin(_, a, b) => {
            call_slots(a, out);
            call_slots(b, out);
        }
        Expr::If(c, a, b) => {
            call_slots(c, out);
            call_slots(a, out);
            call_slots(b, out);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| call_slots(a, out)),
        Expr::Agg { cond, body, .. } => {
            if let Some(c) = cond {
                call_slots(c, out);
            }
            call_slots(body, out);
        }
        _ => {}
    }
}

/// `e` specialised for one trace (partial evaluation; the value of every expression in every
/// environment stays the same, expressions having no side effects):
/// * every largest subexpression that reads nothing but the region of the call around one
///   slot's event (`X.call.class == 'P2P_WAIT_MULTI'`) becomes a `Table` of its value per
///   region, made by `table` (or a constant when every region gives the same value);
/// * every subexpression that reads nothing at all is evaluated once (`konst`);
/// * field chains on slots (`R.enter.time`) become one `Path` node.
pub(crate) fn specialise(
    e: &Expr,
    table: &dyn Fn(u16, &Expr) -> Box<[Value]>,
    konst: &dyn Fn(&Expr) -> Value,
) -> Expr {
    if !matches!(
        e,
        Expr::Const(_) | Expr::Slot(_) | Expr::Path(..) | Expr::Table(..)
    ) {
        let mut slots = Vec::new();
        call_slots(e, &mut slots);
        slots.sort_unstable();
        slots.dedup();
        match slots[..] {
            [] if reads_only_call(e, u16::MAX) => return Expr::Const(konst(e)),
            [s] if reads_only_call(e, s) => {
                let t = table(s, &on_region(e));
                return if t.iter().all(|v| *v == t[0]) {
                    Expr::Const(t[0])
                } else {
                    Expr::Table(s, t)
                };
            }
            _ => {}
        }
    }
    let b = |x: &Expr| Box::new(specialise(x, table, konst));
    match e {
        Expr::Field(x, f) => match specialise(x, table, konst) {
            Expr::Slot(s) => Expr::Path(s, *f, None),
            Expr::Path(s, g, None) => Expr::Path(s, g, Some(*f)),
            y => Expr::Field(Box::new(y), *f),
        },
        Expr::Not(x) => Expr::Not(b(x)),
        Expr::Neg(x) => Expr::Neg(b(x)),
        Expr::In(x, l) => Expr::In(b(x), l.clone()),
        Expr::Bin(op, x, y) => Expr::Bin(*op, b(x), b(y)),
        Expr::If(c, x, y) => Expr::If(b(c), b(x), b(y)),
        Expr::Call(f, args) => Expr::Call(
            *f,
            args.iter().map(|a| specialise(a, table, konst)).collect(),
        ),
        Expr::Agg { .. } => with_operands(e, &|x| specialise(x, table, konst)),
        _ => e.clone(),
    }
}

/// Aggregate `e` with its condition and body rewritten by `f` (any other node as it is).
pub(crate) fn with_operands(e: &Expr, f: &dyn Fn(&Expr) -> Expr) -> Expr {
    match e {
        Expr::Agg {
            op,
            slot,
            cond,
            body,
        } => Expr::Agg {
            op: *op,
            slot: *slot,
            cond: cond.as_deref().map(|c| Box::new(f(c))),
            body: Box::new(f(body)),
        },
        _ => e.clone(),
    }
}

/// Every expression of `r` specialised (`specialise`).
pub(crate) fn specialise_rule(r: &Rule, f: &dyn Fn(&Expr) -> Expr) -> Rule {
    let o = |e: &Option<Expr>| e.as_ref().map(f);
    let mut r2 = r.clone();
    for l in &mut r2.lets {
        match l {
            Let::Inst(_, e) | Let::Member { expr: e, .. } => *e = f(e),
        }
    }
    r2.when = o(&r.when);
    r2.for_members = o(&r.for_members);
    r2.severity = o(&r.severity);
    r2.at = o(&r.at);
    r2.violation = o(&r.violation);
    r2.value = o(&r.value);
    if let Some(g) = &mut r2.group {
        g.by = f(&g.by);
        g.when = g.when.as_ref().map(f);
    }
    if let Some(q) = &mut r2.queue {
        q.take = f(&q.take);
    }
    r2
}

/// Whether `f` is a function of its arguments alone (`konst` may evaluate it).
pub(crate) fn is_pure(f: Func) -> bool {
    matches!(
        f,
        Func::Pos | Func::Min | Func::Max | Func::Abs | Func::Matches(_) | Func::Exists
    )
}

/// `orig`'s rules specialised for `trace` (`specialise`): the region-only parts evaluated
/// per region with `regions` and `kind_names` as the analysis interns them.
pub(crate) fn specialised(
    trace: &Trace,
    replay: &Replay,
    orig: &RuleSet,
    regions: &RegionStrings,
    kind_names: &[u32; 256],
    strings: &[String],
) -> RuleSet {
    let ctx = Ctx::of_trace(trace, replay, regions, kind_names, &orig.regexes, strings);
    let nreg = trace.defs.regions.len();
    let table = |s: u16, e: &Expr| -> Box<[Value]> {
        let mut env = vec![Value::None; s as usize + 1];
        (0..=nreg)
            .map(|reg| {
                env[s as usize] = if reg < nreg {
                    Value::Region(reg as u32)
                } else {
                    Value::None
                };
                ctx.eval(e, &mut env)
            })
            .collect()
    };
    let konst = |e: &Expr| ctx.eval(e, &mut [Value::None]);
    let f = |e: &Expr| specialise(e, &table, &konst);
    RuleSet {
        rules: orig.rules.iter().map(|r| specialise_rule(r, &f)).collect(),
        rc_metrics: orig.rc_metrics.clone(),
        record_causes: orig.record_causes,
        interner: Default::default(),
        regexes: orig.regexes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::eval::compile;
    use crate::analysis::plan::testing::{agree, exprs, Specialised};

    /// Every expression of every built-in rule gives the same value three ways — as written,
    /// specialised for the trace (tables, constants, paths), and compiled into closures —
    /// with events of every kind, inside and outside calls, in the trigger slots.
    #[test]
    fn specialised_and_compiled_rules_agree_with_the_rules_as_written() {
        let rs = RuleSet::load(&[]).unwrap();
        for name in [
            "scorep/mixed8",
            "scorep/nb",
            "scorep/wo",
            "scorep-omp/omp_lock",
        ] {
            let sp = Specialised::new(&rs, name);
            let (trace, spec) = (&sp.trace, &sp.spec);
            let none = |_: u16| 0.0;
            let ctx = sp.ctx(&rs, &[], &none);
            let mut checked = 0usize;
            for (r, s) in rs.rules.iter().zip(&spec.rules) {
                let (a, b) = (exprs(r), exprs(s));
                assert_eq!(a.len(), b.len());
                for (ea, eb) in a.iter().zip(&b) {
                    let code = compile(eb);
                    for (l, ev) in trace.events.iter().enumerate() {
                        let n = ev.len() as u32;
                        for i in (0..n).step_by(3) {
                            let mut env = vec![Value::None; r.slots.max(1) as usize];
                            for (j, v) in env.iter_mut().enumerate() {
                                *v = match j {
                                    0..4 => Value::Event(l as u32, (i + j as u32) % n),
                                    _ => Value::Num(j as f64),
                                };
                            }
                            agree(&ctx, ea, eb, &code, &env, &|| {
                                format!("{name} {}", r.info.id)
                            });
                            checked += 1;
                        }
                    }
                }
            }
            assert!(checked > 1000, "{name}: only {checked} evaluations");
        }
    }
}
