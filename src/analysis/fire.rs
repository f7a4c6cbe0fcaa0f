//! Firing one rule on one trigger: the `Engine` (the plan on its trace) evaluates a rule's
//! lets and `when` (after its prefilter), its severity and group, and emits the instance
//! into the pass's own accumulator or its list (`LocPass`).

use crate::analysis::cube::{CausedWait, Contribution, Instance};
use crate::analysis::eval::{self, ptr, Code, Ctx, LocCols, Member, Ptr};
use crate::analysis::pass::location::LocPass;
use crate::analysis::plan::{Plan, Prefilter, RuleCode};
use crate::model::Trace;
use crate::replay::calltree::NO_CNODE;
use crate::replay::Replay;
use crate::rules::causes::Cause;
use crate::rules::compile::{Expr, Value};
use crate::rules::{Let, Rule};

/// The plan on its trace: what every pass fires rules with.
pub(crate) struct Engine<'a> {
    pub(crate) trace: &'a Trace,
    pub(crate) replay: &'a Replay,
    pub(crate) plan: &'a Plan,
    /// Every location's columns as the severity guards read them (`Ctx::cols`).
    cols: Vec<LocCols<'a>>,
}

/// A trigger slot's call region not looked up yet (`Engine::prefiltered_when`).
pub(crate) const UNSEEN: u32 = u32::MAX;
/// A trigger slot with no enclosing call (or no event) in that cache.
pub(crate) const NO_CALL: u32 = u32::MAX - 1;

/// What expressions can read besides their environment: the members of the current
/// collective or world-call instance and their per-member bindings, the queued instances
/// taken so far on this location (`Value::Item` indexes them), and `had()`.
#[derive(Clone, Copy)]
pub(crate) struct Frame<'b> {
    pub(crate) members: &'b [Member],
    pub(crate) member_vals: &'b [Vec<Value>],
    pub(crate) items: &'b [Vec<Value>],
    pub(crate) had: &'b [Vec<(u32, u32)>],
}

impl<'b> Frame<'b> {
    pub(crate) fn events(items: &'b [Vec<Value>], had: &'b [Vec<(u32, u32)>]) -> Frame<'b> {
        Frame {
            members: &[],
            member_vals: &[],
            items,
            had,
        }
    }
}

impl<'a> Engine<'a> {
    /// The plan on its trace, every location's columns taken once (`eval::loc_cols`).
    pub(crate) fn new(trace: &'a Trace, replay: &'a Replay, plan: &'a Plan) -> Engine<'a> {
        Engine {
            trace,
            replay,
            plan,
            cols: eval::loc_cols(trace, replay),
        }
    }
}

impl Engine<'_> {
    pub(crate) fn ctx<'b>(
        &'b self,
        members: &'b [Member],
        member_vals: &'b [Vec<Value>],
        items: &'b [Vec<Value>],
        had: &'b [Vec<(u32, u32)>],
        metric: &'b dyn Fn(u16) -> f64,
    ) -> Ctx<'b> {
        Ctx {
            trace: self.trace,
            replay: self.replay,
            regions: &self.plan.regions,
            kind_names: &self.plan.kind_names,
            regexes: &self.plan.rs.regexes,
            strings: &self.plan.strings,
            members,
            member_vals,
            items,
            had,
            metric,
            shared: &[],
            clock: eval::clock_of(self.trace),
            cols: &self.cols,
        }
    }

    pub(crate) fn frame_ctx<'b>(
        &'b self,
        fr: Frame<'b>,
        metric: &'b dyn Fn(u16) -> f64,
    ) -> Ctx<'b> {
        self.ctx(fr.members, fr.member_vals, fr.items, fr.had, metric)
    }

    /// The call path, location and event an `at` value names.
    pub(crate) fn cnode_of(&self, v: Value) -> Option<(u32, u32, u32)> {
        match v {
            Value::Event(l, i) => {
                let c = ptr(self.replay, Ptr::Cnode, l, i);
                (c != NO_CNODE).then_some((c, l, i))
            }
            _ => None,
        }
    }

    /// Evaluate the instance-level lets and `when` of a non-collective rule; false = skip.
    pub(crate) fn prelude(&self, rule: &Rule, ctx: &Ctx, env: &mut [Value]) -> bool {
        self.prelude_when(rule, rule.when.as_ref(), ctx, env)
    }

    fn prelude_when(&self, rule: &Rule, when: Option<&Expr>, ctx: &Ctx, env: &mut [Value]) -> bool {
        for l in &rule.lets {
            if let Let::Inst(s, e) = l {
                env[*s as usize] = ctx.eval(e, env);
            }
        }
        when.is_none_or(|w| ctx.eval(w, env).bool())
    }

    /// `prelude_when` with a rule's compiled code.
    #[inline(always)]
    fn prelude_code(
        &self,
        code: &RuleCode,
        when: Option<&Code>,
        ctx: &Ctx,
        env: &mut [Value],
    ) -> bool {
        for (s, c) in &code.lets {
            env[*s as usize] = c.run(ctx, env);
        }
        when.is_none_or(|w| w.truth(ctx, env))
    }

    /// The checks of rule `k`'s prefilter on the events bound in `env`, and the rest of its
    /// `when` (its whole `when` without a prefilter); `None`: the rule does not fire.
    /// `regions` caches, per trigger slot, the index into a check's table of that slot's
    /// call region (`UNSEEN`: not looked up yet) across the rules of one trigger event: the
    /// slots hold the same events for all of them.
    #[inline(always)]
    pub(crate) fn prefiltered_when<'c>(
        &self,
        prefilter: &'c Option<Prefilter>,
        code: &'c RuleCode,
        env: &[Value],
        regions: &mut [u32; 4],
    ) -> Option<Option<&'c Code>> {
        let Some(p) = prefilter else {
            return Some(code.when.as_ref());
        };
        for (s, mask) in &p.checks {
            let r = match regions.get_mut(*s as usize) {
                Some(c) if *c != UNSEEN => *c,
                c => {
                    let r = match env[*s as usize] {
                        Value::Event(l, i) => {
                            eval::call_region(self.trace, self.replay, l, i).unwrap_or(NO_CALL)
                        }
                        _ => NO_CALL,
                    };
                    if let Some(c) = c {
                        *c = r;
                    }
                    r
                }
            };
            // the last entry is for "no enclosing call"
            let r = if r == NO_CALL {
                mask.len() - 1
            } else {
                r as usize
            };
            if !mask[r] {
                return None;
            }
        }
        Some(p.rest_code.as_ref())
    }

    /// Fire a rule fed by another's instances, or a queue consumer with a taken instance,
    /// in `env` (the event, receive and send passes try their own rules folded per kind,
    /// with their prefilters, `KindRule`).
    pub(crate) fn fire(&self, k: usize, env: &mut [Value], pass: &mut LocPass, fr: Frame) {
        let code = &self.plan.code[k];
        let none = |_: u16| 0.0;
        let ctx = self.frame_ctx(fr, &none);
        self.fire_when(k, code, code.when.as_ref(), env, pass, &fr, &ctx);
    }

    /// `fire` once the prefilter passed, with rule `k`'s `code` (its own or folded for
    /// the kind of its trigger event); `when` is what is left of the rule's `when`; `ctx`
    /// is `fr`'s (`frame_ctx`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fire_when(
        &self,
        k: usize,
        code: &RuleCode,
        when: Option<&Code>,
        env: &mut [Value],
        pass: &mut LocPass,
        fr: &Frame,
        ctx: &Ctx,
    ) {
        let first = &mut pass.first[k];
        if (code.guard.as_ref()).is_some_and(|g| !g.may_keep(ctx, env, first)) {
            return;
        }
        self.fire_kept(k, code, when, env, pass, fr, ctx);
    }

    /// `fire_when` where the rule's guard (if any) held: out of line, the walks' loops
    /// small (the guard fails on most triggers of most walks).
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn fire_kept(
        &self,
        k: usize,
        code: &RuleCode,
        when: Option<&Code>,
        env: &mut [Value],
        pass: &mut LocPass,
        fr: &Frame,
        ctx: &Ctx,
    ) {
        if !self.prelude_code(code, when, ctx, env) {
            return;
        }
        let Some(sev_e) = &code.severity else { return };
        let sev = sev_e.num(ctx, env);
        // the clock condition is read only for an instance that is kept (expressions have
        // no side effects, so the order of evaluation does not matter)
        let violated =
            |env: &mut [Value]| code.violation.as_ref().is_some_and(|v| v.truth(ctx, env));
        if let Some((by, gw)) = &code.group {
            if gw.as_ref().is_none_or(|w| w.truth(ctx, env)) {
                match by.run(ctx, env) {
                    Value::Event(l, key) if l == pass.loc => {
                        let slot = pass.groups.entry((k, key)).or_insert((
                            f64::NEG_INFINITY,
                            Vec::new(),
                            false,
                        ));
                        if sev > slot.0 {
                            let cc = violated(env);
                            *slot = (sev, env.to_vec(), cc);
                        }
                        return;
                    }
                    // groups live per location: a key on another one groups nothing, the
                    // instance is stored at once (docs/rules.md, Groups)
                    Value::Event(..) => {}
                    _ => return,
                }
            }
        }
        if sev.is_nan() || sev <= 0.0 {
            return; // emit would drop it (§4.1.1)
        }
        let cc = violated(env);
        self.emit(k, code, sev, cc, env, pass, fr, ctx);
    }

    /// Record one instance of rule `k` and feed the rules that consume its instances.
    /// `ctx` is `fr`'s (`frame_ctx`), built once by the caller.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn emit(
        &self,
        k: usize,
        code: &RuleCode,
        sev: f64,
        cc: bool,
        env: &mut [Value],
        pass: &mut LocPass,
        fr: &Frame,
        ctx: &Ctx,
    ) {
        if sev.is_nan() || sev <= 0.0 {
            return; // §4.1.1
        }
        let Some(at_e) = &code.at else { return };
        let at = at_e.run(ctx, env);
        let Value::Event(loc, event) = at else { return };
        let Some((cnode, time)) = self.at_of(loc, event, pass) else {
            return;
        };
        if self.plan.partner[k] {
            // a wait state with a cause: the root-cause analysis reads it (docs/rules.md)
            if let Some(Cause::Partner(p)) = &self.plan.rs.rules[k].cause {
                if let Value::Event(pl, pe) = ctx.eval(p, env) {
                    pass.waits.push(CausedWait {
                        rule: k as u16,
                        loc,
                        event,
                        partner: (pl, pe),
                    });
                }
            }
        }
        self.book(k, (loc, event, cnode, time), sev, cc, pass);
        // the instance as the rules it feeds and the queues it joins see it (most rules have
        // neither)
        if self.plan.feeds[k] {
            let rule = &self.plan.rs.rules[k];
            env[rule.at_slot as usize] = at;
            env[rule.value_slot as usize] = Value::Num(sev);
            self.feed(k, env, pass, *fr);
        }
    }

    /// `fire_when` of a rule whose instances are only booked (`KindRule::plain`: no group,
    /// no `[cause]` recorded, no rule or queue fed, its `at` the value of slot `at`): the
    /// same steps in the same order, without those that cannot apply.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn fire_plain(
        &self,
        k: usize,
        code: &RuleCode,
        when: Option<&Code>,
        at: usize,
        env: &mut [Value],
        pass: &mut LocPass,
        ctx: &Ctx,
    ) {
        let Some(sev) = self.plain_sev(code, when, (&mut *env, &mut pass.first[k]), ctx) else {
            return;
        };
        let cc = code.violation.as_ref().is_some_and(|v| v.truth(ctx, env));
        let Value::Event(loc, event) = env[at] else {
            return;
        };
        if let Some((cnode, time)) = self.at_of(loc, event, pass) {
            self.book(k, (loc, event, cnode, time), sev, cc, pass);
        }
    }

    /// The severity of the instance a rule whose instances are only booked keeps on the
    /// trigger in `env` (`fire_plain`'s first steps; `first`: the rule's `LocPass::first`):
    /// its lets and `when` (the rest of it after the prefilter) hold and the severity is
    /// positive; `None` otherwise.
    #[inline(always)]
    pub(crate) fn plain_sev(
        &self,
        code: &RuleCode,
        when: Option<&Code>,
        (env, first): (&mut [Value], &mut u8),
        ctx: &Ctx,
    ) -> Option<f64> {
        if (code.guard.as_ref()).is_some_and(|g| !g.may_keep(ctx, env, first)) {
            return None;
        }
        if !self.prelude_code(code, when, ctx, env) {
            return None;
        }
        let sev = code.severity.as_ref()?.num(ctx, env);
        // not `sev > 0.0`: NaN is dropped too (§4.1.1)
        (!(sev.is_nan() || sev <= 0.0)).then_some(sev)
    }

    /// The call path and time of event `event` of location `loc`, an instance's `at`
    /// (`None`: outside any call, the instance is dropped), looked up once for the
    /// instances of the rules fired on one trigger that name the same event.
    #[inline(always)]
    pub(crate) fn at_of(&self, loc: u32, event: u32, pass: &mut LocPass) -> Option<(u32, u64)> {
        let (cnode, time) = match pass.at {
            (l, i, c, t) if (l, i) == (loc, event) => (c, t),
            _ => {
                let c = ptr(self.replay, Ptr::Cnode, loc, event);
                let t = self.trace.events[loc as usize].time.get(event as usize);
                pass.at = (loc, event, c, t);
                (c, t)
            }
        };
        (cnode != NO_CNODE).then_some((cnode, time))
    }

    /// Books an instance of rule `k` at `(loc, event, cnode, time)` with value `sev`
    /// (`cc`: clock-touched): into the pass's own cell, or its list.
    #[inline(always)]
    pub(crate) fn book(
        &self,
        k: usize,
        at: (u32, u32, u32, u64),
        sev: f64,
        cc: bool,
        pass: &mut LocPass,
    ) {
        let (loc, event, cnode, time) = at;
        match &mut pass.acc {
            // the frequent case, inline: an instance of the pass's own location
            Some(acc) if loc == pass.loc => {
                if cc {
                    acc.cc.push((k as u16, cnode, sev));
                }
                acc.cell(k, cnode, self.replay.tree.len()).add(Instance {
                    loc,
                    event,
                    time,
                    value: sev,
                });
            }
            _ => self.listed(k, cnode, loc, event, sev, cc, pass),
        }
    }

    /// `emit` of an instance kept in the pass's list: one of another location, or every
    /// one when the pass does not accumulate.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn listed(
        &self,
        k: usize,
        cnode: u32,
        loc: u32,
        event: u32,
        sev: f64,
        cc: bool,
        pass: &mut LocPass,
    ) {
        if let Some(acc) = &mut pass.acc {
            // its clock-touched share is summed across locations (`acc.cc`), not listed
            if cc {
                acc.cc.push((k as u16, cnode, sev));
            }
        }
        let cc = cc && pass.acc.is_none();
        pass.out.push(Contribution {
            rule: k as u16,
            cnode,
            loc,
            event,
            value: sev,
            cc,
            rec: false,
        });
    }

    /// The time of event `i` of location `l` in seconds (`Ctx::seconds`).
    pub(crate) fn seconds(&self, l: u32, i: u32) -> f64 {
        let none = |_: u16| 0.0;
        self.ctx(&[], &[], &[], &[], &none).seconds(l, i)
    }
}
