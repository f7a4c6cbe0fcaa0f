//! The world-call pass (`on = "world_call"`): per rule, one world-wide instance whose
//! members are every rank's first call of a region of the rule's class.

use super::instances;
use crate::analysis::cube::{Contribution, Cube};
use crate::analysis::eval::{ptr, Member, Ptr};
use crate::analysis::fire::Engine;
use crate::model::EventKind;
use crate::replay::NONE;
use crate::rules::compile::Value;
use crate::rules::Trigger;
use rayon::prelude::*;

/// Runs the world-call rules; returns the location of every member that violated the
/// clock condition.
pub(crate) fn run(eng: &Engine, had: &[Vec<(u32, u32)>], cube: &mut Cube) -> Vec<u32> {
    let (found, violators) = found(eng, had);
    cube.add_all(&found);
    violators
}

/// What the world-call rules find, in the order `run` adds it, and the violators.
pub(crate) fn found(eng: &Engine, had: &[Vec<(u32, u32)>]) -> (Vec<Contribution>, Vec<u32>) {
    let world_rules = eng.plan.by_trigger(Trigger::WorldCall);
    let firsts = first_calls(eng, &world_rules);
    let (mut found, mut violators) = (Vec::new(), Vec::new());
    for (w, &k) in world_rules.iter().enumerate() {
        let members = members(eng, &firsts[w]);
        let n = members.len() as f64;
        let insts = vec![(members, [Value::Num(n), Value::None, Value::None])];
        let (c, v, _) = instances::flat(instances::run_each(eng, had, &[k], &insts, 1, &[]));
        found.extend(c);
        violators.extend(v);
    }
    (found, violators)
}

/// The members of a world-call instance: per rank in rank order, its call that begins at
/// `first[location]`.
fn members(eng: &Engine, first: &[Option<usize>]) -> Vec<Member> {
    let mut members = Vec::new();
    let mut ranked: Vec<(u32, usize)> = eng
        .trace
        .defs
        .locations
        .iter()
        .enumerate()
        .filter_map(|(l, loc)| loc.rank.map(|r| (r, l)))
        .collect();
    ranked.sort_unstable();
    for (rank, l) in ranked {
        let Some(i) = first[l] else { continue };
        let leave = ptr(eng.replay, Ptr::Exit, l as u32, i as u32);
        members.push(Member {
            loc: l as u32,
            event: i as u32,
            begin: eng.seconds(l as u32, i as u32),
            end: eng.seconds(l as u32, if leave == NONE { i as u32 } else { leave }),
            sent: 0.0,
            recv: 0.0,
            rank,
            tasks: 0.0,
        });
    }
    members
}

/// Per world rule and rank location: its first call of a region of the rule's class,
/// found for up to 64 rules in one parallel walk of the locations (a bit per rule in a
/// per-region mask).
fn first_calls(eng: &Engine, world_rules: &[usize]) -> Vec<Vec<Option<usize>>> {
    let nloc = eng.trace.events.len();
    let mut firsts: Vec<Vec<Option<usize>>> = vec![vec![None; nloc]; world_rules.len()];
    for (c, chunk) in world_rules.chunks(64).enumerate() {
        let mask: Vec<u64> = eng
            .plan
            .regions
            .iter()
            .map(|r| {
                let class = &eng.plan.strings[r[3] as usize];
                chunk.iter().enumerate().fold(0u64, |m, (j, &k)| {
                    let of = eng.plan.rs.rules[k].class.as_deref().unwrap_or_default() == class;
                    m | (of as u64) << j
                })
            })
            .collect();
        let found: Vec<Vec<Option<usize>>> = (0..nloc)
            .into_par_iter()
            .map(|l| first_in(eng, l, &mask, chunk.len()))
            .collect();
        for (l, f) in found.into_iter().enumerate() {
            for (j, i) in f.into_iter().enumerate() {
                firsts[c * 64 + j][l] = i;
            }
        }
    }
    firsts
}

/// On location `l` (none unless it is a rank), per rule `j < n` of a chunk: the first
/// ENTER of a region whose bit `j` is set in `mask`.
fn first_in(eng: &Engine, l: usize, mask: &[u64], n: usize) -> Vec<Option<usize>> {
    let all = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
    let mut first = vec![None; n];
    if eng.trace.defs.locations[l].rank.is_none() {
        return first;
    }
    let ev = &eng.trace.events[l];
    let mut want = all;
    for (i, (&kind, &a)) in ev.kind.iter().zip(ev.arg.iter()).enumerate() {
        if kind != EventKind::Enter {
            continue;
        }
        let m = mask[a as usize] & want;
        if m != 0 {
            for (j, f) in first.iter_mut().enumerate() {
                if m >> j & 1 == 1 {
                    *f = Some(i);
                }
            }
            want &= !m;
            if want == 0 {
                break;
            }
        }
    }
    first
}
