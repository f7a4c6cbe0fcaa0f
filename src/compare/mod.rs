//! `perfexpert compare A B`: two runs aligned event by event (issue 22). Each run is read
//! and analysed as usual (`analysis::pipeline::analyse_trace`), its symbol sequences taken
//! (`alphabet`); paired locations are aligned optimally (`align`, in parallel); the result
//! lists edits (`edits`), time differences of matched calls (`timing`) and how the wait-state
//! findings changed (`findings`); `text` and `html` format it, JSON is its serde form
//! (docs/compare-json.md). The layer sits beside `report`: it reads the model, the replay and
//! the analysis and formats its own result; only `cli` names it.

pub mod align;
pub mod alphabet;
pub mod edits;
pub mod findings;
pub mod gate;
pub mod html;
pub mod text;
pub mod timing;

use crate::analysis::pipeline::{analyse_trace, Options as AnalysisOptions, Refusal};
use crate::error::{Error, Result};
use crate::rules::RuleSet;
use align::{Alignment, Mode, Scoring, Step};
use alphabet::{Alphabet, LocSeq, Run};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use std::path::Path;

/// How to compare.
#[derive(Clone, Debug)]
pub struct Options {
    pub scoring: Scoring,
    pub mode: Mode,
    pub alphabet: Alphabet,
    /// Explicit pairs of locations (`--map A=B`): names, `RANK` or `RANK:THREAD`.
    pub map: Vec<(String, String)>,
}

/// The JSON document of docs/compare-json.md.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub format_version: u32,
    pub a: String,
    pub b: String,
    pub a_format: String,
    pub b_format: String,
    pub scoring: ScoringOut,
    pub alphabet: Alphabet,
    /// Matched symbols over the longer side's symbols, over all pairs.
    pub similarity: f64,
    pub locations: Vec<PairResult>,
    pub unpaired_a: Vec<String>,
    pub unpaired_b: Vec<String>,
    pub edit_groups: Vec<edits::EditGroup>,
    pub time_differences: Vec<timing::TimeDifference>,
    pub findings: findings::FindingChanges,
}

#[derive(Debug, Serialize)]
pub struct ScoringOut {
    #[serde(rename = "match")]
    pub matched: i64,
    pub mismatch: i64,
    pub gap: i64,
    pub mode: Mode,
}

/// One aligned pair of locations.
#[derive(Debug, Serialize)]
pub struct PairResult {
    pub rank: u32,
    pub thread: u32,
    pub a_location: String,
    pub b_location: String,
    pub a_symbols: u64,
    pub b_symbols: u64,
    pub score: i64,
    pub matches: u64,
    pub similarity: f64,
    /// Always true: the score is the optimum for the scoring (no heuristic is used).
    pub optimal: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// DP cells computed and symbols matched by trimming (how much work the optimum took).
    pub dp_cells: u64,
    pub trimmed: u64,
    pub edits: Vec<edits::Edit>,
    /// A's time axis for the HTML strip: first ENTER and last LEAVE, in seconds.
    #[serde(skip)]
    pub a_span_s: (f64, f64),
    /// B − A of the matched calls (outermost calls left out) that start in each of
    /// `SHADE_BINS` equal parts of A's time axis (the HTML strip's shading).
    #[serde(skip)]
    pub shade: Vec<f64>,
}

/// Parts of a location's time axis the HTML strip shades.
pub const SHADE_BINS: usize = 100;

/// Read and analyse one run, keeping what the comparison needs.
pub fn read_run(path: &Path, alphabet: Alphabet) -> Result<Run> {
    let trace = crate::formats::open(path)?;
    let rules = RuleSet::load(&[])?;
    let outcome = analyse_trace(trace, AnalysisOptions::new(rules), |w| {
        Run::of(&w, alphabet)
    })
    .map_err(|e| match e {
        Refusal::Error(e) => e,
        other => Error::Usage(format!("{}: {other:?}", path.display())),
    })?;
    Ok(outcome.view)
}

/// Pairs of location indices (A, B) and the unpaired ones of each side.
pub type Pairing = (Vec<(usize, usize)>, Vec<usize>, Vec<usize>);

/// Pair locations: the `--map` pairs first, then the rest by (rank, thread).
pub fn pair(a: &Run, b: &Run, map: &[(String, String)]) -> Result<Pairing> {
    let find = |run: &Run, side: &str, spec: &str| -> Result<usize> {
        let by_rank = |r: u32, t: u32| {
            run.locations
                .iter()
                .position(|l| l.rank == r && l.thread == t)
        };
        let hit = match spec.split_once(':') {
            Some((r, t)) => match (r.parse(), t.parse()) {
                (Ok(r), Ok(t)) => by_rank(r, t),
                _ => None,
            },
            None => spec.parse().ok().and_then(|r| by_rank(r, 0)),
        }
        .or_else(|| run.locations.iter().position(|l| l.name == spec))
        .or_else(|| {
            let tail: Vec<usize> = (0..run.locations.len())
                .filter(|&i| run.locations[i].name.rsplit('/').next() == Some(spec))
                .collect();
            (tail.len() == 1).then(|| tail[0])
        });
        hit.ok_or_else(|| {
            Error::Usage(format!(
                "--map: {side} ({}) has no location '{spec}' (expected RANK, RANK:THREAD or a \
                 location name such as '{}')",
                run.path,
                run.locations.first().map_or("", |l| l.name.as_str())
            ))
        })
    };
    let mut pairs = Vec::new();
    let (mut used_a, mut used_b) = (
        vec![false; a.locations.len()],
        vec![false; b.locations.len()],
    );
    for (x, y) in map {
        let (i, j) = (find(a, "A", x)?, find(b, "B", y)?);
        if used_a[i] || used_b[j] {
            return Err(Error::Usage(format!(
                "--map {x}={y}: a location is paired twice"
            )));
        }
        used_a[i] = true;
        used_b[j] = true;
        pairs.push((i, j));
    }
    let key_b: HashMap<(u32, u32), usize> = b
        .locations
        .iter()
        .enumerate()
        .filter(|(j, _)| !used_b[*j])
        .map(|(j, l)| ((l.rank, l.thread), j))
        .collect();
    for (i, l) in a.locations.iter().enumerate() {
        if used_a[i] {
            continue;
        }
        if let Some(&j) = key_b.get(&(l.rank, l.thread)) {
            if !used_b[j] {
                used_a[i] = true;
                used_b[j] = true;
                pairs.push((i, j));
            }
        }
    }
    pairs.sort();
    let rest = |u: &[bool]| (0..u.len()).filter(|&k| !u[k]).collect::<Vec<_>>();
    Ok((pairs, rest(&used_a), rest(&used_b)))
}

/// Symbol ids shared by both runs: B's local ids mapped into A's table (new ones appended).
fn shared_keys(a: &Run, b: &Run) -> Vec<u32> {
    let mut ids: HashMap<&str, u32> = a
        .symbols
        .iter()
        .enumerate()
        .map(|(k, s)| (s.as_str(), k as u32))
        .collect();
    b.symbols
        .iter()
        .map(|s| {
            let next = ids.len() as u32;
            *ids.entry(s.as_str()).or_insert(next)
        })
        .collect()
}

/// The symbol sequences perfexpert aligns for each pair (B's in A's numbering), for judges.
pub fn sequences(a: &Run, b: &Run, pairs: &[(usize, usize)]) -> Vec<(Vec<u32>, Vec<u32>)> {
    let map = shared_keys(a, b);
    pairs
        .iter()
        .map(|&(i, j)| {
            let sb = b.locations[j]
                .keys
                .iter()
                .map(|&k| map[k as usize])
                .collect();
            (a.locations[i].keys.clone(), sb)
        })
        .collect()
}

/// Compare two read runs. `done` is called once per aligned pair (for a progress bar).
pub fn compare(a: &Run, b: &Run, opts: &Options, done: &(dyn Fn() + Sync)) -> Result<Comparison> {
    let (pairs, ua, ub) = pair(a, b, &opts.map)?;
    let map = shared_keys(a, b);
    let results: Vec<(PairResult, Vec<timing::TimeDifference>)> = pairs
        .par_iter()
        .map(|&(i, j)| {
            let r = compare_pair(a, &a.locations[i], b, &b.locations[j], &map, opts);
            done();
            r
        })
        .collect();
    let mut locations = Vec::with_capacity(results.len());
    let mut diffs = Vec::new();
    let mut groups = Vec::new();
    for (p, d) in results {
        groups.extend(edits::group(p.rank, p.thread, &p.edits));
        diffs.extend(d);
        locations.push(p);
    }
    let (m, l) = locations.iter().fold((0u64, 0u64), |(m, l), p| {
        (m + p.matches, l + p.a_symbols.max(p.b_symbols))
    });
    let names = |run: &Run, v: &[usize]| {
        v.iter()
            .map(|&k| run.locations[k].name.clone())
            .collect::<Vec<_>>()
    };
    Ok(Comparison {
        format_version: 1,
        a: a.path.clone(),
        b: b.path.clone(),
        a_format: a.format.clone(),
        b_format: b.format.clone(),
        scoring: ScoringOut {
            matched: opts.scoring.matched,
            mismatch: opts.scoring.mismatch,
            gap: opts.scoring.gap,
            mode: opts.mode,
        },
        alphabet: opts.alphabet,
        similarity: if l == 0 { 1.0 } else { m as f64 / l as f64 },
        locations,
        unpaired_a: names(a, &ua),
        unpaired_b: names(b, &ub),
        edit_groups: groups,
        time_differences: timing::rank(diffs),
        findings: findings::join(&a.findings, &b.findings),
    })
}

fn compare_pair(
    a: &Run,
    la: &LocSeq,
    b: &Run,
    lb: &LocSeq,
    map: &[u32],
    opts: &Options,
) -> (PairResult, Vec<timing::TimeDifference>) {
    let kb: Vec<u32> = lb.keys.iter().map(|&k| map[k as usize]).collect();
    let (al, work): (Alignment, align::Work) = align::align(&la.keys, &kb, opts.scoring, opts.mode);
    let matches: u64 = al
        .steps
        .iter()
        .filter(|(s, _)| *s == Step::Match)
        .map(|&(_, n)| n as u64)
        .sum();
    let longer = la.keys.len().max(kb.len()) as u64;
    let ed = edits::edits(
        &al,
        &edits::Side { run: a, seq: la },
        &edits::Side { run: b, seq: lb },
    );
    let diffs = timing::of_pair(&al, (a, la), lb, la.rank, la.thread);
    let a_span_s = (
        la.enter_s.first().copied().unwrap_or(0.0),
        la.leave_s.iter().copied().fold(0.0, f64::max),
    );
    let mut shade = vec![0.0; SHADE_BINS];
    let width = (a_span_s.1 - a_span_s.0).max(f64::MIN_POSITIVE);
    edits::walk(&al, |s, i, j| {
        if s != Step::Match {
            return;
        }
        let outer = a
            .callpaths
            .get(la.cnode[i] as usize)
            .is_none_or(|p| !p.contains('/'));
        if !outer {
            let bin = ((la.enter_s[i] - a_span_s.0) / width * SHADE_BINS as f64) as usize;
            shade[bin.min(SHADE_BINS - 1)] +=
                (lb.leave_s[j] - lb.enter_s[j]) - (la.leave_s[i] - la.enter_s[i]);
        }
    });
    (
        PairResult {
            rank: la.rank,
            thread: la.thread,
            a_location: la.name.clone(),
            b_location: lb.name.clone(),
            a_symbols: la.keys.len() as u64,
            b_symbols: kb.len() as u64,
            score: al.score,
            matches,
            similarity: if longer == 0 {
                1.0
            } else {
                matches as f64 / longer as f64
            },
            optimal: true,
            reason: None,
            dp_cells: work.cells,
            trimmed: work.trimmed,
            edits: ed,
            a_span_s,
            shade,
        },
        diffs,
    )
}

impl Comparison {
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(std::io::Error::other)?;
        writeln!(out)
    }
}
