//! Time differences of matched calls: per call path and rank, the total duration (ENTER to
//! LEAVE, inclusive) of the calls the alignment matched, in A and in B, ranked by |B − A|.
//! Only matched instances count, so "what got slower" is not blurred by calls that exist in
//! one run only.

use super::align::{Alignment, Step};
use super::alphabet::{LocSeq, Run};
use super::edits::walk;
use serde::Serialize;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimeDifference {
    pub rank: u32,
    pub thread: u32,
    /// A's call path of the matched calls.
    pub callpath: String,
    /// Matched calls.
    pub calls: u64,
    pub a_s: f64,
    pub b_s: f64,
    pub diff_s: f64,
}

/// The time differences of one aligned pair, per A call path, in call-path order.
pub fn of_pair(
    al: &Alignment,
    (ra, a): (&Run, &LocSeq),
    b: &LocSeq,
    rank: u32,
    thread: u32,
) -> Vec<TimeDifference> {
    let mut per: HashMap<u32, (u64, f64, f64)> = HashMap::new();
    walk(al, |s, i, j| {
        if s == Step::Match {
            let e = per.entry(a.cnode[i]).or_insert((0, 0.0, 0.0));
            e.0 += 1;
            e.1 += a.leave_s[i] - a.enter_s[i];
            e.2 += b.leave_s[j] - b.enter_s[j];
        }
    });
    let mut keys: Vec<_> = per.into_iter().collect();
    keys.sort_by_key(|(c, _)| *c);
    keys.into_iter()
        .map(|(c, (calls, ta, tb))| TimeDifference {
            rank,
            thread,
            callpath: ra.callpaths.get(c as usize).cloned().unwrap_or_default(),
            calls,
            a_s: ta,
            b_s: tb,
            diff_s: tb - ta,
        })
        .collect()
}

/// All pairs' differences, largest |B − A| first (ties: rank, thread, call path).
pub fn rank(mut all: Vec<TimeDifference>) -> Vec<TimeDifference> {
    all.sort_by(|x, y| {
        y.diff_s
            .abs()
            .total_cmp(&x.diff_s.abs())
            .then(x.rank.cmp(&y.rank))
            .then(x.thread.cmp(&y.thread))
            .then(x.callpath.cmp(&y.callpath))
    });
    all
}
