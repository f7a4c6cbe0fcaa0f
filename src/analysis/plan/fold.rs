//! Folding a rule for the kind of its trigger event: the fields the kind decides become
//! constants, and what then reads only constants is evaluated (`fold_kinds`).

use super::specialise::{is_pure, with_operands};
use crate::rules::compile::{BinOp, Expr, Field, Value};

/// `e` (specialised, `specialise`) for trigger events of known kinds, partial evaluation
/// again (the value in every environment whose slots hold events of those kinds stays the
/// same): a field of a slot's event that the kind decides (`field`, from
/// `eval::kind_field`: the bytes of an event that is no message, whether a blocking send
/// was cancelled) becomes its constant; then every node that reads nothing but constants
/// is evaluated (`konst`), and `&&`, `||` and `if` with a constant operand are reduced as
/// `eval` would reduce them (an operand of `&&`/`||` is a boolean or absent: the type
/// check).
pub(crate) fn fold_kinds(
    e: &Expr,
    field: &dyn Fn(u16, Field) -> Option<Value>,
    konst: &dyn Fn(&Expr) -> Value,
) -> Expr {
    let f = |x: &Expr| fold_kinds(x, field, konst);
    let k = |x: &Expr| match x {
        Expr::Const(v) => Some(*v),
        _ => None,
    };
    // a node whose operands are constants is one
    let done = |x: Expr| -> Expr {
        let all = match &x {
            Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => k(a).is_some(),
            Expr::Bin(_, a, b) => k(a).is_some() && k(b).is_some(),
            Expr::Call(g, args) => is_pure(*g) && args.iter().all(|a| k(a).is_some()),
            _ => false,
        };
        if all {
            Expr::Const(konst(&x))
        } else {
            x
        }
    };
    match e {
        Expr::Path(s, g, h) => match field(*s, *g) {
            None => e.clone(),
            Some(v) => match h {
                None => Expr::Const(v),
                Some(h) => done(Expr::Field(Box::new(Expr::Const(v)), *h)),
            },
        },
        Expr::Field(x, g) => done(Expr::Field(Box::new(f(x)), *g)),
        Expr::Not(x) => done(Expr::Not(Box::new(f(x)))),
        Expr::Neg(x) => done(Expr::Neg(Box::new(f(x)))),
        Expr::In(x, l) => done(Expr::In(Box::new(f(x)), l.clone())),
        Expr::Bin(op @ (BinOp::And | BinOp::Or), a, b) => {
            let and = *op == BinOp::And;
            let x = f(a);
            match k(&x) {
                // `false && y`, `true || y`: y is not read
                Some(Value::Bool(v)) if v != and => Expr::Const(Value::Bool(v)),
                // `true && y`, `false || y`: y, a boolean or absent
                Some(Value::Bool(_)) => f(b),
                Some(_) => Expr::Const(Value::None),
                None => {
                    let y = f(b);
                    match k(&y) {
                        // `x && true`, `x || false`: x, a boolean or absent
                        Some(Value::Bool(v)) if v == and => x,
                        _ => Expr::Bin(*op, Box::new(x), Box::new(y)),
                    }
                }
            }
        }
        Expr::Bin(op, a, b) => done(Expr::Bin(*op, Box::new(f(a)), Box::new(f(b)))),
        Expr::If(c, a, b) => {
            let c = f(c);
            match k(&c) {
                Some(Value::Bool(true)) => f(a),
                Some(Value::Bool(false)) => f(b),
                Some(_) => Expr::Const(Value::None),
                None => Expr::If(Box::new(c), Box::new(f(a)), Box::new(f(b))),
            }
        }
        Expr::Call(g, args) => done(Expr::Call(*g, args.iter().map(f).collect())),
        Expr::Agg { .. } => with_operands(e, &f),
        Expr::Shared(j, x) => Expr::Shared(*j, Box::new(f(x))),
        Expr::Const(_) | Expr::Slot(_) | Expr::Table(..) => e.clone(),
    }
}

#[cfg(test)]
mod tests {
    use crate::analysis::eval::{self, Ctx};
    use crate::analysis::plan::testing::testdata_trace;
    use crate::analysis::plan::trace_strings;
    use crate::model::EventKind;
    use crate::rules::compile::{Field, Interner};

    /// `eval::kind_field` gives what `Ctx::event_field` reads, on every event of every
    /// OTF2 trace in `testdata/` (blocking and non-blocking messages, cancelled requests,
    /// collectives, locks), for every field it claims the kind decides.
    #[test]
    fn kind_field_agrees_with_event_field_on_every_event() {
        let fields = [
            Field::Time,
            Field::Enter,
            Field::Leave,
            Field::Call,
            Field::Bytes,
            Field::Tag,
            Field::Rank,
            Field::Kind,
            Field::Send,
            Field::Recv,
            Field::Sent,
            Field::Received,
            Field::Cancelled,
            Field::LastRelease,
            Field::RegionName,
            Field::MemberBegin,
            Field::ItemSlot(0),
        ];
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata");
        let mut names = Vec::new();
        for group in ["generated", "scorep", "scorep-omp"] {
            for d in std::fs::read_dir(root.join(group)).unwrap() {
                let d = d.unwrap().path();
                if d.join("traces.otf2").exists() {
                    names.push(format!(
                        "{group}/{}",
                        d.file_name().unwrap().to_string_lossy()
                    ));
                }
            }
        }
        assert!(names.len() >= 20, "{names:?}");
        let (mut decided, mut kinds_seen) = (0u64, std::collections::BTreeSet::new());
        for name in &names {
            let (trace, replay) = testdata_trace(name);
            let mut interner = Interner::default();
            let (regions, kind_names) = trace_strings(&mut interner, &trace);
            let ctx = Ctx::of_trace(
                &trace,
                &replay,
                &regions,
                &kind_names,
                &[],
                &interner.strings,
            );
            for (l, ev) in trace.events.iter().enumerate() {
                for i in 0..ev.len() {
                    let kind = ev.kind[i];
                    kinds_seen.insert(kind as u8);
                    for f in fields {
                        if let Some(v) = eval::kind_field(kind, f, &kind_names) {
                            let got = ctx.event_field(l as u32, i as u32, f);
                            assert_eq!(got, v, "{name}: location {l}, event {i} ({kind:?}), {f:?}");
                            decided += 1;
                        }
                    }
                }
            }
        }
        // the traces hold the kinds whose fields the folding decides
        for k in [
            EventKind::MpiSend,
            EventKind::MpiIsend,
            EventKind::MpiRecv,
            EventKind::MpiIrecv,
            EventKind::MpiCollectiveEnd,
            EventKind::ThreadAcquireLock,
            EventKind::Enter,
        ] {
            assert!(
                kinds_seen.contains(&(k as u8)),
                "no {k:?} event in testdata"
            );
        }
        assert!(decided > 100_000, "{decided}");
    }
}
