//! Memoised rule lists: a list of rules tried on one kind of trigger event (`PassRules::lists`)
//! whose instances are only booked at the trigger event itself, and whose `when` and
//! severity read the trigger only through a few inputs (`inputs`) besides the region of its
//! call, gives the same instances for every trigger with the same kind, region, call path
//! and input values. The walk evaluates the inputs, and the rules only for a key it has not
//! met (`pass::memo`).

use super::passes::KindRule;
use super::share::same_expr;
use super::specialise::is_pure;
use crate::analysis::eval::{
    compile, exists_path, exists_path_in, if_exists_path, value_bits, Code, Ctx,
};
use crate::model::Events;
use crate::rules::compile::{Expr, Field, Func, Value};
use crate::rules::{Let, Rule};

/// The inputs of a memoised list, compiled: their values, with the kind, region and call
/// path of the trigger event, decide what its rules book.
pub(crate) struct MemoSpec {
    pub(crate) inputs: Vec<Input>,
    /// Whether an input is a shared value (read through the walk's shared cells, fresh
    /// for each trigger).
    pub(crate) shared: bool,
}

/// One input of a memoised list, compiled.
pub(crate) enum Input {
    /// `if exists(X.f) then X.f.g else y` (`X` in slot `s`): the path read in place, `y`
    /// (its code) only where `X.f` is absent — no closure between the walk and the columns
    /// (the receive's bytes, `if exists(E.send) then E.send.bytes else E.bytes`).
    Exists(usize, Field, Field, Code),
    /// `X.f` of the trigger event (`X` in slot 0) for a field `own_field` takes: read in
    /// place where the walk has its location's events at hand (`bits_at`).
    Own(Field, Code),
    /// Any other input.
    Code(Code),
}

/// The fields an `Input::Own` reads: those `Ctx::event_field_in` gives as `Code::bits`
/// reads them (a number or nothing).
fn own_field(f: Field) -> bool {
    matches!(f, Field::Bytes | Field::Tag)
}

impl Input {
    fn of(e: &Expr) -> Input {
        match e {
            Expr::If(k, a, b) => match if_exists_path(k, a) {
                Some((s, f, g)) => Input::Exists(s, f, g, compile(b)),
                None => Input::Code(compile(e)),
            },
            Expr::Path(0, f, None) if own_field(*f) => Input::Own(*f, compile(e)),
            e => Input::Code(compile(e)),
        }
    }

    /// `bits` where the trigger event in slot 0 is event `i` of location `l`, whose events
    /// `ev` the walk has at hand: slot 0's own fields read in place, without the location
    /// looked up on each trigger.
    #[inline(always)]
    pub(crate) fn bits_at(
        &self,
        c: &Ctx,
        env: &mut [Value],
        (ev, l, i): (&Events, u32, u32),
    ) -> (u64, u64) {
        debug_assert!(env[0] == Value::Event(l, i));
        match self {
            Input::Exists(0, f, g, y) => match exists_path_in(c, (ev, l, i), *f, *g) {
                Some(x) => value_bits(x.map_or(Value::None, Value::Num)),
                None => y.bits(c, env),
            },
            Input::Own(f, _) => value_bits(c.event_field_in(ev, l, i, *f)),
            _ => self.bits(c, env),
        }
    }

    /// The input's value in `env` as a memo key's tag and bits (`Code::bits`): the value
    /// of the expression, or a finer one (an `else` branch that gives no number is kept
    /// as it is where typed code would read it as absent), so one key is one value.
    #[inline(always)]
    pub(crate) fn bits(&self, c: &Ctx, env: &mut [Value]) -> (u64, u64) {
        match self {
            Input::Exists(s, f, g, y) => match exists_path(c, env[*s], *f, *g) {
                Some(x) => value_bits(x.map_or(Value::None, Value::Num)),
                None => y.bits(c, env),
            },
            Input::Own(_, code) | Input::Code(code) => code.bits(c, env),
        }
    }
}

/// The most inputs a memoised list has (a key's size, `pass::memo`).
pub(crate) const MAX_INPUTS: usize = 4;

/// Whether `e` is an input: a value read from the trigger events (slots `0..n`) by one
/// node — a slot, a field or field chain of one, `exists` of one of those, `if
/// exists(X.f) then X.f.g else y` of an input `y` (one read of `X.f`, `typed`), or the
/// region table of a trigger slot other than 0 (slot 0's region is in the key).
fn is_input(e: &Expr, n: u16) -> bool {
    match e {
        Expr::Slot(s) | Expr::Path(s, ..) => *s < n,
        Expr::Table(s, _) => *s != 0 && *s < n,
        Expr::Field(a, f) => {
            !matches!(f, Field::MemberLet(_) | Field::ItemSlot(_)) && is_input(a, n)
        }
        Expr::Call(Func::Exists, args) => args.len() == 1 && is_input(&args[0], n),
        Expr::If(k, a, b) => {
            if_exists_path(k, a).is_some_and(|(s, ..)| s < n as usize) && is_input(b, n)
        }
        _ => false,
    }
}

/// The inputs of `e` added to `out` (`is_input`, each once); false if `e` reads anything
/// else than its inputs, constants and slot 0's region table (a queued instance, a
/// member, `had`, `metric`).
fn inputs_of(e: &Expr, n: u16, deep: bool, out: &mut Vec<Expr>) -> bool {
    if is_input(e, n) {
        if !out.iter().any(|x| same_expr(x, e)) {
            out.push(e.clone());
        }
        return true;
    }
    match e {
        Expr::Const(_) => true,
        Expr::Table(s, _) => *s == 0,
        // a shared value's own inputs (a region table of slot 0 in it is decided by the
        // key), else the shared value itself: read without its cell, no closure of its own
        Expr::Shared(_, x) => {
            let mut inner = Vec::new();
            if deep && inputs_of(x, n, deep, &mut inner) {
                for i in inner {
                    if !out.iter().any(|y| same_expr(y, &i)) {
                        out.push(i);
                    }
                }
            } else if !out.iter().any(|y| same_expr(y, e)) {
                out.push(e.clone());
            }
            true
        }
        Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => inputs_of(a, n, deep, out),
        Expr::Bin(_, a, b) => inputs_of(a, n, deep, out) && inputs_of(b, n, deep, out),
        Expr::If(a, b, c) => [a, b, c].iter().all(|x| inputs_of(x, n, deep, out)),
        Expr::Call(f, args) => is_pure(*f) && args.iter().all(|a| inputs_of(a, n, deep, out)),
        _ => false,
    }
}

/// The inputs of rule `r` (folded for one kind, `n` trigger slots) if its instances are a
/// function of them: no lets, group, queue or clock condition, `at` the trigger event
/// (slot 0), `when` and severity read only inputs (`inputs_of`); `None` otherwise. Two
/// ways: its shared values' own inputs (fewer reads, maybe more inputs), and its shared
/// values as inputs.
pub(crate) fn memo_inputs(r: &Rule, n: u16) -> Option<[Vec<Expr>; 2]> {
    let lets = r.lets.iter().any(|l| matches!(l, Let::Inst(..)));
    if lets || r.group.is_some() || r.queue.is_some() || r.violation.is_some() {
        return None;
    }
    if !matches!(r.at, Some(Expr::Slot(0))) {
        return None;
    }
    let exprs = [&r.when, &r.severity];
    let way = |deep: bool| {
        let mut out = Vec::new();
        (exprs.iter().copied().flatten())
            .all(|e| inputs_of(e, n, deep, &mut out))
            .then_some(out)
    };
    Some([way(true)?, way(false)?])
}

/// The spec of the list `list` (indices into `folded`): every rule of it only books its
/// instances at the trigger event (`plain` slot 0, after `mark_plain`), without a
/// prefilter left, and has inputs (`KindRule::inputs`), at most `MAX_INPUTS` in all (the
/// shared values' own inputs if they are few enough, else the shared values); `None`
/// otherwise.
pub(crate) fn memo_spec(list: &[usize], folded: &[KindRule]) -> Option<MemoSpec> {
    for &j in list {
        let r = &folded[j];
        let no_prefilter = matches!(&r.code, Some((_, None)));
        if r.plain != Some(0) || !no_prefilter || r.inputs.is_none() {
            return None;
        }
    }
    let way = |w: usize| {
        let mut inputs: Vec<Expr> = Vec::new();
        for r in list.iter().filter_map(|&j| folded[j].inputs.as_ref()) {
            for e in &r[w] {
                if !inputs.iter().any(|x| same_expr(x, e)) {
                    inputs.push(e.clone());
                }
            }
        }
        (inputs.len() <= MAX_INPUTS).then_some(inputs)
    };
    let inputs = way(0).or_else(|| way(1))?;
    (!list.is_empty()).then(|| MemoSpec {
        inputs: inputs.iter().map(Input::of).collect(),
        shared: inputs.iter().any(|e| matches!(e, Expr::Shared(..))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::plan::testing::Specialised;
    use crate::rules::RuleSet;

    /// An `if exists(X.f) then X.f.g else X.bytes` input read in place (`Input::Exists`)
    /// and the trigger's own `X.bytes`, `X.tag` (`Input::Own`) give the key their code
    /// gives (`Code::bits`), on every event of the shipped traces, read either way: the
    /// point-to-point fields of the receive and send rules and others.
    #[test]
    fn exists_inputs_give_the_keys_of_their_code() {
        let rs = RuleSet::load(&[]).unwrap();
        let none = |_: u16| 0.0;
        let paths = [
            (Field::Send, Field::Bytes),
            (Field::Recv, Field::Bytes),
            (Field::Send, Field::Tag),
            (Field::Enter, Field::Time),
        ];
        for name in [
            "scorep/mixed8",
            "scorep/nb",
            "scorep/wo",
            "scorep/ls",
            "scorep/lr",
        ] {
            let s = Specialised::new(&rs, name);
            let ctx = s.ctx(&rs, &[], &none);
            for (f, g) in paths {
                let e = Expr::If(
                    Box::new(Expr::Call(Func::Exists, vec![Expr::Path(0, f, None)])),
                    Box::new(Expr::Path(0, f, Some(g))),
                    Box::new(Expr::Path(0, Field::Bytes, None)),
                );
                let input = Input::of(&e);
                assert!(matches!(input, Input::Exists(..)), "{f:?} {g:?}");
                same_keys(
                    &s,
                    &ctx,
                    &input,
                    &compile(&e),
                    &format!("{name} {f:?} {g:?}"),
                );
            }
            for f in [Field::Bytes, Field::Tag] {
                let e = Expr::Path(0, f, None);
                let input = Input::of(&e);
                assert!(matches!(input, Input::Own(..)), "{f:?}");
                same_keys(&s, &ctx, &input, &compile(&e), &format!("{name} {f:?}"));
            }
        }
    }

    /// `input` gives the key `code` gives on every event of `s`'s trace, read by `bits`
    /// and by `bits_at`.
    fn same_keys(s: &Specialised, ctx: &Ctx, input: &Input, code: &Code, what: &str) {
        for (l, ev) in s.trace.events.iter().enumerate() {
            for i in 0..ev.kind.len() {
                let mut env = [Value::Event(l as u32, i as u32)];
                let want = code.bits(ctx, &mut env);
                assert_eq!(input.bits(ctx, &mut env), want, "{what} {l} {i}");
                let at = (ev, l as u32, i as u32);
                assert_eq!(input.bits_at(ctx, &mut env, at), want, "{what} {l} {i}");
            }
        }
    }
}
