//! The instance families' common engine (collectives, world calls, teams, thread
//! barriers): each rule on each instance, its lets per member, its severity per member,
//! a violated member touching the whole instance (§6.2), and the rules it feeds.

use crate::analysis::cube::{CausedColl, Contribution, Cube};
use crate::analysis::eval::Member;
use crate::analysis::fire::{Engine, Frame};
use crate::analysis::pass::location::LocPass;
use crate::model::Trace;
use crate::replay::NONE;
use crate::rules::causes::Cause;
use crate::rules::compile::Value;
use crate::rules::{Let, Trigger};
use rayon::prelude::*;

/// One instance: its members and the trigger's bindings (the first `nbind` of them).
pub(crate) type Inst = (Vec<Member>, [Value; 3]);

/// Runs the rules of `trigger`, if it has any, on the instances `insts` makes (and per
/// instance whether it is reconstructed, `run`), each bound with its first `nbind`
/// values, and adds what they find to the cube. Returns the clock-condition violators
/// (`run`).
pub(crate) fn run_family(
    eng: &Engine,
    had: &[Vec<(u32, u32)>],
    cube: &mut Cube,
    trigger: Trigger,
    nbind: usize,
    insts: impl FnOnce() -> (Vec<Inst>, Vec<bool>),
) -> Vec<u32> {
    let rules = eng.plan.by_trigger(trigger);
    if rules.is_empty() {
        return Vec::new();
    }
    let (insts, rec) = insts();
    let (c, v, colls) = flat(run_each(eng, had, &rules, &insts, nbind, &rec));
    cube.add_all(&c);
    cube.colls.extend(colls);
    v
}

/// What `run_each` found, all instances together: the instances found, the location of
/// every (instance, member) pair whose member violated the clock condition, and the
/// instances accepted by rules with a collective `[cause]`.
#[allow(clippy::type_complexity)]
pub(crate) fn flat(per: Vec<PerInstance>) -> (Vec<Contribution>, Vec<u32>, Vec<CausedColl>) {
    let ccv: Vec<u32> = per.iter().flat_map(|p| p.1.iter().copied()).collect();
    let colls: Vec<CausedColl> = per.iter().flat_map(|p| p.2.iter().copied()).collect();
    (per.into_iter().flat_map(|p| p.0).collect(), ccv, colls)
}

/// What `run_each` finds on one instance (`flat`).
pub(crate) type PerInstance = (Vec<Contribution>, Vec<u32>, Vec<CausedColl>);

/// Runs rules `rule_ids` on every instance of `insts` (`rec`: per instance, whether it is
/// reconstructed, §5.4; missing: not); what each instance found, in `insts` order (`flat`).
pub(crate) fn run_each(
    eng: &Engine,
    had: &[Vec<(u32, u32)>],
    rule_ids: &[usize],
    insts: &[Inst],
    nbind: usize,
    rec: &[bool],
) -> Vec<PerInstance> {
    insts
        .par_iter()
        .enumerate()
        .map(|(ii, (members, bind))| {
            let rec = rec.get(ii).copied().unwrap_or(false);
            let mut out = Vec::new();
            let mut violated = vec![false; members.len()];
            let mut colls = Vec::new();
            for &k in rule_ids {
                let one = OneInstance {
                    members,
                    bind: &bind[..nbind],
                    rec,
                    had,
                };
                if one.fire(eng, k, &mut violated, &mut out)
                    && eng.plan.rs.record_causes
                    && matches!(eng.plan.rs.rules[k].cause, Some(Cause::Collective(_)))
                {
                    colls.push(CausedColl {
                        instance: ii as u32,
                        rule: k as u16,
                    });
                }
            }
            let locs: Vec<u32> = members
                .iter()
                .zip(&violated)
                .filter(|(_, &v)| v)
                .map(|(m, _)| m.loc)
                .collect();
            (out, locs, colls)
        })
        .collect()
}

/// One instance as a rule sees it.
struct OneInstance<'a> {
    members: &'a [Member],
    /// The trigger's bindings, slots from 0.
    bind: &'a [Value],
    /// Reconstructed (§5.4, §6.2 `sev_rec`).
    rec: bool,
    had: &'a [Vec<(u32, u32)>],
}

impl OneInstance<'_> {
    /// Rule `k` on this instance: its instances to `out` (the rules it feeds right after
    /// them), the members that violated the clock condition marked in `violated`. Returns
    /// whether the rule's `when` held.
    fn fire(
        &self,
        eng: &Engine,
        k: usize,
        violated: &mut [bool],
        out: &mut Vec<Contribution>,
    ) -> bool {
        let (members, had) = (self.members, self.had);
        let rule = &eng.plan.rs.rules[k];
        let none = |_: u16| 0.0;
        let mut env = vec![Value::None; rule.slots as usize];
        env[..self.bind.len()].copy_from_slice(self.bind);
        let member_vals = self.lets(eng, k, &mut env);
        let ctx = eng.ctx(members, &member_vals, &[], had, &none);
        if let Some(w) = &rule.when {
            if !ctx.eval(w, &mut env).bool() {
                return false;
            }
        }
        // instances of the rules fed by this one
        let mut fed_out = Vec::new();
        let mut touched = false;
        let mut mine = Vec::new();
        for (m, member_violated) in violated.iter_mut().enumerate() {
            if let Some(mv) = rule.member_var {
                env[mv as usize] = Value::Member(m as u32);
            }
            if rule
                .for_members
                .as_ref()
                .is_some_and(|f| !ctx.eval(f, &mut env).bool())
            {
                continue;
            }
            if rule
                .violation
                .as_ref()
                .is_some_and(|v| ctx.eval(v, &mut env).bool())
            {
                touched = true;
                *member_violated = true;
            }
            let sev = rule
                .severity
                .as_ref()
                .map_or(0.0, |s| ctx.eval(s, &mut env).num());
            if sev.is_nan() || sev <= 0.0 {
                continue;
            }
            let at = rule
                .at
                .as_ref()
                .map_or(Value::None, |a| ctx.eval(a, &mut env));
            if let Some((cnode, loc, event)) = eng.cnode_of(at) {
                mine.push(Contribution {
                    rule: k as u16,
                    cnode,
                    loc,
                    event,
                    value: sev,
                    cc: false,
                    rec: self.rec,
                });
                if !eng.plan.fed[k].is_empty() {
                    env[rule.at_slot as usize] = at;
                    env[rule.value_slot as usize] = Value::Num(sev);
                    let fr = Frame {
                        members,
                        member_vals: &member_vals,
                        items: &[],
                        had,
                    };
                    let mut pass = LocPass::new(loc, eng.plan.rs.rules.len());
                    eng.feed(k, &env, &mut pass, fr);
                    fed_out.extend(pass.out);
                }
            }
        }
        // §6.2: an instance with any violated member is touched as a whole
        for c in &mut mine {
            c.cc = touched;
        }
        out.extend(mine);
        out.append(&mut fed_out);
        true
    }

    /// Rule `k`'s lets, in order: instance lets into `env`, member lets per member (the
    /// result).
    fn lets(&self, eng: &Engine, k: usize, env: &mut [Value]) -> Vec<Vec<Value>> {
        let (members, had) = (self.members, self.had);
        let rule = &eng.plan.rs.rules[k];
        let none = |_: u16| 0.0;
        let mut member_vals = vec![vec![Value::None; rule.member_slots as usize]; members.len()];
        for l in &rule.lets {
            match l {
                Let::Inst(s, e) => {
                    let ctx = eng.ctx(members, &member_vals, &[], had, &none);
                    env[*s as usize] = ctx.eval(e, env);
                }
                Let::Member { slot, var, expr } => {
                    let vals: Vec<Value> = (0..members.len())
                        .map(|m| {
                            let ctx = eng.ctx(members, &member_vals, &[], had, &none);
                            env[*var as usize] = Value::Member(m as u32);
                            ctx.eval(expr, env)
                        })
                        .collect();
                    for (m, v) in vals.into_iter().enumerate() {
                        member_vals[m][*slot as usize] = v;
                    }
                }
            }
        }
        member_vals
    }
}

/// Ticks `t` of `trace` in seconds since its start.
pub(crate) fn secs(trace: &Trace, t: u64) -> f64 {
    (t as f64 - trace.global_offset as f64) / trace.timer_resolution as f64
}

/// Thread `thread` of a team or barrier instance: its call from event `enter` to `leave`
/// (`NONE`: still open, it ends where it began) on location `loc`, `tasks` ticks of it
/// spent executing tasks.
fn thread_member(
    trace: &Trace,
    loc: u32,
    thread: u32,
    enter: u32,
    leave: u32,
    tasks: u64,
) -> Member {
    let ev = &trace.events[loc as usize];
    let end = if leave == NONE { enter } else { leave };
    Member {
        loc,
        event: enter,
        begin: secs(trace, ev.time.get(enter as usize)),
        end: secs(trace, ev.time.get(end as usize)),
        sent: 0.0,
        recv: 0.0,
        rank: thread,
        tasks: tasks as f64 / trace.timer_resolution as f64,
    }
}

/// A team or barrier instance whose members are `threads` (location, thread, ENTER, LEAVE,
/// task ticks: `thread_member`), bound with its size and `more`.
pub(crate) fn thread_instance(
    trace: &Trace,
    threads: impl Iterator<Item = (u32, u32, u32, u32, u64)>,
    more: [Value; 2],
) -> Inst {
    let ms: Vec<Member> = threads
        .map(|(loc, thread, enter, leave, tasks)| {
            thread_member(trace, loc, thread, enter, leave, tasks)
        })
        .collect();
    let n = ms.len() as f64;
    (ms, [Value::Num(n), more[0], more[1]])
}
