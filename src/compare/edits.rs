//! The edits of one aligned pair of locations, in the user's words (insert, delete,
//! substitute with indices, regions, call path and times), grouped into runs of alike edits,
//! and the matched pairs walked for the time differences.

use super::align::{Alignment, Step};
use super::alphabet::{LocSeq, Run};
use serde::Serialize;

/// One edit of an alignment. `a`/`b` are 0-based symbol indices of the location.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Edit {
    pub op: Op,
    pub a: Option<u64>,
    pub b: Option<u64>,
    pub a_region: Option<String>,
    pub b_region: Option<String>,
    /// The call path of A's symbol (B's for an insert).
    pub callpath: String,
    pub a_time_s: Option<f64>,
    pub b_time_s: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// In B only.
    Insert,
    /// In A only.
    Delete,
    /// Aligned, different symbols.
    Substitute,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::Delete => "delete",
            Op::Substitute => "substitute",
        }
    }
}

/// A run of alike edits (same op, regions and call path, no other edit between them) on
/// one pair of locations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EditGroup {
    pub rank: u32,
    pub thread: u32,
    pub op: Op,
    pub a_region: Option<String>,
    pub b_region: Option<String>,
    pub callpath: String,
    pub count: u64,
    /// First and last symbol index in A (B), where the op has one.
    pub a_first: Option<u64>,
    pub a_last: Option<u64>,
    pub b_first: Option<u64>,
    pub b_last: Option<u64>,
    /// The first and last edit's time (A's, or B's for inserts).
    pub first_time_s: f64,
    pub last_time_s: f64,
}

/// The two sides of a pair, with the runs they come from.
pub struct Side<'a> {
    pub run: &'a Run,
    pub seq: &'a LocSeq,
}

impl Side<'_> {
    fn symbol(&self, i: usize) -> String {
        self.run.symbols[self.seq.keys[i] as usize].clone()
    }
    fn callpath(&self, i: usize) -> String {
        self.run
            .callpaths
            .get(self.seq.cnode[i] as usize)
            .cloned()
            .unwrap_or_default()
    }
}

/// Calls `each(step, i, j)` for every column of the alignment (i, j the indices of the
/// symbols in A and B; for an insert `i` is where it goes, for a delete `j`).
pub fn walk(al: &Alignment, mut each: impl FnMut(Step, usize, usize)) {
    let (mut i, mut j) = (0usize, 0usize);
    for &(s, n) in &al.steps {
        for _ in 0..n {
            each(s, i, j);
            match s {
                Step::Match | Step::Substitute => {
                    i += 1;
                    j += 1;
                }
                Step::Insert => j += 1,
                Step::Delete => i += 1,
            }
        }
    }
}

/// The edits of an alignment.
pub fn edits(al: &Alignment, a: &Side<'_>, b: &Side<'_>) -> Vec<Edit> {
    let mut out = Vec::new();
    walk(al, |s, i, j| {
        let e = match s {
            Step::Match => return,
            Step::Substitute => Edit {
                op: Op::Substitute,
                a: Some(i as u64),
                b: Some(j as u64),
                a_region: Some(a.symbol(i)),
                b_region: Some(b.symbol(j)),
                callpath: a.callpath(i),
                a_time_s: Some(a.seq.enter_s[i]),
                b_time_s: Some(b.seq.enter_s[j]),
            },
            Step::Delete => Edit {
                op: Op::Delete,
                a: Some(i as u64),
                b: None,
                a_region: Some(a.symbol(i)),
                b_region: None,
                callpath: a.callpath(i),
                a_time_s: Some(a.seq.enter_s[i]),
                b_time_s: None,
            },
            Step::Insert => Edit {
                op: Op::Insert,
                a: None,
                b: Some(j as u64),
                a_region: None,
                b_region: Some(b.symbol(j)),
                callpath: b.callpath(j),
                a_time_s: None,
                b_time_s: Some(b.seq.enter_s[j]),
            },
        };
        out.push(e);
    });
    out
}

/// Consecutive alike edits of one location as groups, in order.
pub fn group(rank: u32, thread: u32, edits: &[Edit]) -> Vec<EditGroup> {
    let mut out: Vec<EditGroup> = Vec::new();
    for e in edits {
        let t = e.a_time_s.or(e.b_time_s).unwrap_or(0.0);
        if let Some(g) = out.last_mut() {
            if g.op == e.op
                && g.a_region == e.a_region
                && g.b_region == e.b_region
                && g.callpath == e.callpath
            {
                g.count += 1;
                g.a_last = e.a.or(g.a_last);
                g.b_last = e.b.or(g.b_last);
                g.last_time_s = t;
                continue;
            }
        }
        out.push(EditGroup {
            rank,
            thread,
            op: e.op,
            a_region: e.a_region.clone(),
            b_region: e.b_region.clone(),
            callpath: e.callpath.clone(),
            count: 1,
            a_first: e.a,
            a_last: e.a,
            b_first: e.b,
            b_last: e.b,
            first_time_s: t,
            last_time_s: t,
        });
    }
    out
}
