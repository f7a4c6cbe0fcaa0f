//! Sharing the common subexpressions of the rules tried on one kind of event: each is
//! evaluated at most once per event (`Expr::Shared`).

use super::specialise::is_pure;
use crate::rules::compile::{Expr, Field, Value};
use crate::rules::{Let, Rule};

/// Whether `e` reads nothing but the trigger events, slots `0..n` (whose values all rules
/// tried on one event share), and is worth keeping: more than a constant, a slot or a
/// region table (the prefilter reads those), or a leaf the typed code reads in place (a
/// time of a slot's event or of its call's ENTER or LEAVE, its bytes: `typed::Num`), which
/// costs less read again than a shared value's first evaluation out of line.
fn shareable(e: &Expr, n: u16) -> bool {
    fn reads(e: &Expr, n: u16) -> bool {
        match e {
            Expr::Const(_) => true,
            Expr::Slot(s) | Expr::Path(s, ..) | Expr::Table(s, _) => *s < n,
            Expr::Field(a, f) => {
                !matches!(f, Field::MemberLet(_) | Field::ItemSlot(_)) && reads(a, n)
            }
            Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => reads(a, n),
            Expr::Bin(_, a, b) => reads(a, n) && reads(b, n),
            Expr::If(a, b, c) => reads(a, n) && reads(b, n) && reads(c, n),
            Expr::Call(f, args) => is_pure(*f) && args.iter().all(|a| reads(a, n)),
            Expr::Agg { .. } | Expr::Shared(..) => false,
        }
    }
    let in_place = matches!(
        e,
        Expr::Path(_, Field::Time | Field::Bytes, None)
            | Expr::Path(_, Field::Enter | Field::Leave, Some(Field::Time))
    );
    !in_place && !matches!(e, Expr::Const(_) | Expr::Slot(_) | Expr::Table(..)) && reads(e, n)
}

/// Every expression of `r` that its trial on an event evaluates (`exprs` of the tests).
fn rule_exprs_mut(r: &mut Rule) -> Vec<&mut Expr> {
    let mut v: Vec<&mut Expr> = Vec::new();
    for l in &mut r.lets {
        if let Let::Inst(_, e) = l {
            v.push(e);
        }
    }
    v.extend(
        [&mut r.when, &mut r.severity, &mut r.at, &mut r.violation]
            .into_iter()
            .flatten(),
    );
    if let Some(g) = &mut r.group {
        v.push(&mut g.by);
        v.extend(g.when.as_mut());
    }
    v
}

/// Common subexpressions of the rules tried on one kind of event (folded for it): every
/// largest subexpression that reads only the trigger events (slots `0..n`, `shareable`)
/// and occurs more than once among them becomes `Expr::Shared`, evaluated at most once
/// per event (expressions have no side effects and never fail, so evaluating one where
/// another rule reaches it first gives every rule the same value). Returns the number of
/// shared values.
pub(crate) fn share(rules: &mut [&mut Rule], n: u16) -> u16 {
    // the distinct shareable subexpressions, with how often each occurs
    fn count(e: &Expr, n: u16, seen: &mut Vec<(Expr, u32)>) {
        if shareable(e, n) {
            match seen.iter_mut().find(|(x, _)| same_expr(x, e)) {
                Some((_, c)) => *c += 1,
                None => seen.push((e.clone(), 1)),
            }
        }
        match e {
            Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => count(a, n, seen),
            Expr::Bin(_, a, b) => {
                count(a, n, seen);
                count(b, n, seen);
            }
            Expr::If(a, b, c) => {
                count(a, n, seen);
                count(b, n, seen);
                count(c, n, seen);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| count(a, n, seen)),
            _ => {}
        }
    }
    // `ids`: per entry of `seen`, its shared value once given one
    fn replace(
        e: &mut Expr,
        n: u16,
        seen: &[(Expr, u32)],
        ids: &mut [Option<u16>],
        next: &mut u16,
    ) {
        if shareable(e, n) {
            if let Some(k) = seen.iter().position(|(x, c)| *c > 1 && same_expr(x, e)) {
                let j = *ids[k].get_or_insert_with(|| {
                    *next += 1;
                    *next - 1
                });
                let inner = std::mem::replace(e, Expr::Const(Value::None));
                *e = Expr::Shared(j, Box::new(inner));
                return;
            }
        }
        match e {
            Expr::Field(a, _) | Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => {
                replace(a, n, seen, ids, next)
            }
            Expr::Bin(_, a, b) => {
                replace(a, n, seen, ids, next);
                replace(b, n, seen, ids, next);
            }
            Expr::If(a, b, c) => {
                replace(a, n, seen, ids, next);
                replace(b, n, seen, ids, next);
                replace(c, n, seen, ids, next);
            }
            Expr::Call(_, args) => args.iter_mut().for_each(|a| replace(a, n, seen, ids, next)),
            _ => {}
        }
    }
    let mut seen = Vec::new();
    for r in rules.iter_mut() {
        for e in rule_exprs_mut(r) {
            count(e, n, &mut seen);
        }
    }
    let (mut ids, mut next) = (vec![None; seen.len()], 0u16);
    for r in rules.iter_mut() {
        for e in rule_exprs_mut(r) {
            replace(e, n, &seen, &mut ids, &mut next);
        }
    }
    next
}

/// Whether `a` and `b` are the same expression, constants bit for bit (`0.0` and `-0.0`
/// are different constants: `x + 0.0` and `x + -0.0` differ for `x = -0.0`).
pub(crate) fn same_expr(a: &Expr, b: &Expr) -> bool {
    fn value(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Num(x), Value::Num(y)) => x.to_bits() == y.to_bits(),
            _ => a == b,
        }
    }
    fn values(a: &[Value], b: &[Value]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value(x, y))
    }
    match (a, b) {
        (Expr::Const(x), Expr::Const(y)) => value(x, y),
        (Expr::Slot(x), Expr::Slot(y)) => x == y,
        (Expr::Path(s, f, g), Expr::Path(t, h, i)) => s == t && f == h && g == i,
        (Expr::Table(s, x), Expr::Table(t, y)) => s == t && values(x, y),
        (Expr::Field(x, f), Expr::Field(y, g)) => f == g && same_expr(x, y),
        (Expr::Not(x), Expr::Not(y)) | (Expr::Neg(x), Expr::Neg(y)) => same_expr(x, y),
        (Expr::In(x, l), Expr::In(y, m)) => values(l, m) && same_expr(x, y),
        (Expr::Bin(o, x, y), Expr::Bin(p, z, w)) => o == p && same_expr(x, z) && same_expr(y, w),
        (Expr::If(c, x, y), Expr::If(d, z, w)) => {
            same_expr(c, d) && same_expr(x, z) && same_expr(y, w)
        }
        (Expr::Call(f, x), Expr::Call(g, y)) => {
            f == g && x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_expr(a, b))
        }
        // never shared (`shareable`)
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::compile::BinOp;

    /// Sharing tells expressions apart as evaluation does: constants bit for bit.
    #[test]
    fn same_expr_compares_constants_bit_for_bit() {
        let sum = |c: f64| {
            Expr::Bin(
                BinOp::Add,
                Box::new(Expr::Path(0, Field::Bytes, None)),
                Box::new(Expr::Const(Value::Num(c))),
            )
        };
        assert!(same_expr(&sum(0.0), &sum(0.0)));
        assert!(!same_expr(&sum(0.0), &sum(-0.0)));
        assert!(!same_expr(&sum(1.0), &sum(2.0)));
        let path = |f| Expr::Path(0, f, None);
        assert!(!same_expr(&path(Field::Bytes), &path(Field::Tag)));
        assert!(!same_expr(
            &Expr::Path(0, Field::Bytes, None),
            &Expr::Path(1, Field::Bytes, None)
        ));
    }
}
