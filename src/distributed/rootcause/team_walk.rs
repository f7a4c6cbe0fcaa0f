//! Scalasca's critical path of a run with thread teams over a `Transport`, equal to the
//! single-process one (`analysis::rootcause::omp::walk`) to the bit: the single process's
//! `omp::Walk` runs on the process holding the locations it looks at and is handed on
//! (one `all_gather`) where it must look at a location held elsewhere. A team's members
//! are all held by one process, so only the waits at MPI points (and the rare path that is
//! on threads of two processes at once) move it.

use super::super::ghost::Ghosted;
use super::super::wire::{Reader, Writer};
use super::super::Transport;
use crate::analysis::rootcause::omp::{Active, Next, PathCtx, Walk};

/// This process's part of the critical path of a job with thread teams (`on.sync.omp`) from
/// `start` (location, event in the owner's numbering; `u32::MAX`: the location's end), at
/// most `limit` steps.
pub(super) fn walk(
    on: &PathCtx,
    g: &Ghosted,
    (held, start, limit): (&[bool], (usize, u32), u64),
    t: &dyn Transport,
) -> Result<super::PathPart, String> {
    let (nloc, ncn) = (on.trace.events.len(), on.replay.tree.len());
    let mut prof = vec![0.0; ncn * nloc];
    let mut steps = Vec::new();
    let owner = |l: usize| g.owner.get(l).copied().unwrap_or(0) as usize;
    let mut walk = Walk::new(start, limit);
    let mut holder = owner(start.0);
    loop {
        let mut w = Writer::default();
        if holder == t.rank() {
            let at = walk.advance(on, &|l| held.get(l) == Some(&true), &mut prof, &mut steps);
            put(&mut w, &walk, at);
        }
        let got = t.all_gather(&w.0)?;
        let b = got.get(holder).map_or(&[][..], |b| &b[..]);
        let read = get(&mut Reader::new(b), limit, nloc);
        match read.map_err(|e| format!("rank {holder}: {e}"))? {
            None => return Ok((prof, steps)),
            Some((l, next)) => {
                walk = next;
                holder = owner(l);
            }
        }
    }
}

/// The walk handed on: 0 when done; else 1, the location to go on at, the steps so far,
/// and each location the path is on (location, end, what its segment ends at: tag 0 not
/// known yet, 1 an MPI wait, 2 the start, 3 a barrier, 4 a fork; two numbers; the key).
fn put(w: &mut Writer, walk: &Walk, at: Option<usize>) {
    let Some(l) = at else {
        w.u32(0);
        return;
    };
    w.u32(1);
    w.u32(l as u32);
    w.u64(walk.steps);
    w.u32(walk.active.len() as u32);
    for a in &walk.active {
        w.u32(a.loc as u32);
        w.u32(a.end);
        let (tag, x, y) = match a.next.map(|n| n.0) {
            None => (0, 0, 0),
            Some(Next::Mpi(j)) => (1, j as u32, 0),
            Some(Next::Start(from)) => (2, from, 0),
            Some(Next::Barrier(b, j)) => (3, b as u32, j as u32),
            Some(Next::Fork(team, j)) => (4, team as u32, j as u32),
        };
        [tag, x, y].into_iter().for_each(|v| w.u32(v));
        (a.next.map_or([0; 4], |n| n.1))
            .into_iter()
            .for_each(|v| w.u32(v));
    }
}

fn get(r: &mut Reader, limit: u64, nloc: usize) -> Result<Option<(usize, Walk)>, String> {
    let loc = |r: &mut Reader| -> Result<usize, String> {
        let l = r.u32()? as usize;
        (l < nloc)
            .then_some(l)
            .ok_or_else(|| format!("the critical path goes on at location {l} of {nloc}"))
    };
    if r.u32()? == 0 {
        return Ok(None);
    }
    let at = loc(r)?;
    let steps = r.u64()?;
    let mut active = Vec::new();
    for _ in 0..r.u32()? {
        let (l, end) = (loc(r)?, r.u32()?);
        let (tag, x, y) = (r.u32()?, r.u32()?, r.u32()?);
        let key = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
        let next = match tag {
            0 => None,
            1 => Some(Next::Mpi(x as usize)),
            2 => Some(Next::Start(x)),
            3 => Some(Next::Barrier(x as usize, y as usize)),
            4 => Some(Next::Fork(x as usize, y as usize)),
            _ => return Err(format!("a critical-path segment of kind {tag}")),
        };
        active.push(Active {
            loc: l,
            end,
            next: next.map(|n| (n, key)),
        });
    }
    let walk = Walk {
        active,
        steps,
        limit,
    };
    Ok(Some((at, walk)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::rootcause::{omp, sync};
    use crate::distributed::local;
    use crate::replay::Replay;
    use crate::rules::RuleSet;

    /// The walk handed on between two pretend processes at every location it may not look
    /// at (a process holding the even locations, one the odd, so even a team's threads are
    /// split, which `run --mpi` never does), through `put` and `get`: the same steps and
    /// profile, to the bit, as the walk over the whole trace, on every testdata trace with
    /// thread teams.
    #[test]
    fn a_walk_handed_on_anywhere_is_the_whole_walk() {
        let (mut traces, mut handoffs) = (0, 0);
        for path in local::testdata_traces() {
            let trace = crate::formats::open(&path).unwrap_or_else(|e| panic!("{e}"));
            let replay = Replay::new(&trace);
            let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
            let a = crate::analysis::analyse(&trace, &replay, rules);
            let res = trace.timer_resolution.max(1) as f64;
            let sync = sync::synchpoints(&trace, &replay, res, &a);
            let (Some(o), Some(start)) = (sync.omp.as_ref(), omp::start(&trace, &replay, &sync))
            else {
                continue;
            };
            let on = PathCtx {
                trace: &trace,
                replay: &replay,
                sync: &sync,
                o,
                res,
            };
            let (nloc, ncn) = (trace.events.len(), replay.tree.len());
            let limit = trace.events.iter().map(|e| e.len() as u64).sum::<u64>() + 1;
            let run = |split: bool, handoffs: &mut usize| {
                let (mut prof, mut steps) = (vec![0.0; ncn * nloc], Vec::new());
                let mut walk = Walk::new(start, limit);
                let mut side = start.0 % 2;
                loop {
                    let held = |l: usize| !split || l % 2 == side;
                    let at = walk.advance(&on, &held, &mut prof, &mut steps);
                    let mut w = Writer::default();
                    put(&mut w, &walk, at);
                    match get(&mut Reader::new(&w.0), limit, nloc).unwrap() {
                        None => break,
                        Some((l, next)) => {
                            assert_ne!(l % 2, side);
                            (walk, side) = (next, l % 2);
                            *handoffs += 1;
                        }
                    }
                }
                let bits: Vec<u64> = prof.iter().map(|x| x.to_bits()).collect();
                (bits, steps)
            };
            let want = run(false, &mut 0);
            assert_eq!(run(true, &mut handoffs), want, "{}", path.display());
            traces += 1;
        }
        assert!(
            traces >= 6 && handoffs > 50,
            "{traces} traces, {handoffs} handoffs"
        );
    }
}
