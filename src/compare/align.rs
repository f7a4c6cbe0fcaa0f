//! Optimal pairwise alignment of two symbol sequences under Needleman–Wunsch scoring (match α,
//! mismatch β, linear gap γ), global or semi-global (end gaps free), in memory linear in the
//! sequence lengths (Hirschberg's divide and conquer).
//!
//! Exact speedups, each keeping the optimum:
//! * global mode: identical prefixes and suffixes are matched without a DP (an optimal
//!   alignment that matches them always exists when α ≥ β and α ≥ 2γ; see `trim`);
//! * the DP runs in a band of diagonals that a score bound proves wide enough: a path that
//!   reaches diagonal k needs at least g(k) gap columns, so it scores at most
//!   α(n+m−g)/2 + γg; diagonals where that bound is below a known achievable score are left
//!   out (`band_for`). Hirschberg's split gives each half its exact optimal score, so every
//!   sub-problem gets the tightest proven band;
//! * the two halves of every split and the forward/backward passes run in parallel (rayon).
//!
//! When α ≤ 2γ or α < β (gaps or mismatches as good as matches) there is no bound: no
//! trimming, no band, the full matrix, still in linear space.

use rayon::join;

/// Needleman–Wunsch scores: match α, mismatch β, gap γ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Scoring {
    #[serde(rename = "match")]
    pub matched: i64,
    pub mismatch: i64,
    pub gap: i64,
}

impl Default for Scoring {
    fn default() -> Scoring {
        Scoring {
            matched: 2,
            mismatch: -1,
            gap: -1,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Global,
    /// End gaps (before the first and after the last symbol of either sequence) are free.
    SemiGlobal,
}

/// One column kind of an alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Match,
    Substitute,
    /// A symbol of B only.
    Insert,
    /// A symbol of A only.
    Delete,
}

/// An alignment: its score and its columns, run-length encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alignment {
    pub score: i64,
    pub steps: Vec<(Step, u32)>,
}

impl Alignment {
    fn push(&mut self, s: Step, n: u32) {
        if n == 0 {
            return;
        }
        match self.steps.last_mut() {
            Some((last, k)) if *last == s && k.checked_add(n).is_some() => *k += n,
            _ => self.steps.push((s, n)),
        }
    }

    fn append(&mut self, other: Alignment) {
        for (s, n) in other.steps {
            self.push(s, n);
        }
    }

    /// The score of these columns under `sc`. In semi-global mode end gaps are free: a gap
    /// in B before B's first or after its last symbol, likewise in A (as the DP with a free
    /// first row and column and the best cell of the last row or column counts them).
    pub fn rescore(&self, a: &[u32], b: &[u32], sc: Scoring, mode: Mode) -> i64 {
        let (mut i, mut j, mut total) = (0usize, 0usize, 0i64);
        let semi = mode == Mode::SemiGlobal;
        for &(s, n) in &self.steps {
            let n = n as usize;
            match s {
                Step::Match | Step::Substitute => {
                    for t in 0..n {
                        total += if a[i + t] == b[j + t] {
                            sc.matched
                        } else {
                            sc.mismatch
                        };
                    }
                    i += n;
                    j += n;
                }
                Step::Insert => {
                    let end = semi && (i == 0 || i == a.len());
                    j += n;
                    total += if end { 0 } else { sc.gap * n as i64 };
                }
                Step::Delete => {
                    let end = semi && (j == 0 || j == b.len());
                    i += n;
                    total += if end { 0 } else { sc.gap * n as i64 };
                }
            }
        }
        total
    }
}

/// What the aligner did to find the optimum (for the report).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// DP cells computed.
    pub cells: u64,
    /// Symbols matched by prefix/suffix trimming without a DP.
    pub trimmed: u64,
}

const NEG: i64 = i64::MIN / 4;
/// Sub-problems up to this many band cells are solved with a traceback matrix (1 byte a cell).
const DIRECT_CELLS: u64 = 1 << 18;
/// Sub-problems above this many cells split their work between two threads.
const PARALLEL_CELLS: u64 = 1 << 20;

/// The optimal alignment of `a` and `b`.
pub fn align(a: &[u32], b: &[u32], sc: Scoring, mode: Mode) -> (Alignment, Work) {
    match mode {
        Mode::Global => align_global(a, b, sc),
        Mode::SemiGlobal => align_semi_global(a, b, sc),
    }
}

/// Trimming and the band need α ≥ 2γ (two gaps never beat a match) and α ≥ β.
fn bounded(sc: Scoring) -> bool {
    sc.matched >= 2 * sc.gap && sc.matched >= sc.mismatch && sc.matched - 2 * sc.gap > 0
}

fn align_global(a: &[u32], b: &[u32], sc: Scoring) -> (Alignment, Work) {
    let mut work = Work::default();
    // Identical prefix: if a[0] == b[0], some optimal alignment pairs them (exchange
    // argument: pairing them instead of a[0]–b[j] with b[..j] gapped loses nothing as α ≥ β;
    // instead of gapping both, gains α − 2γ ≥ 0). The same holds at the end.
    let (pre, suf) = if bounded(sc) { trim(a, b) } else { (0, 0) };
    work.trimmed = (pre + suf) as u64;
    let (ca, cb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);
    let mut out = Alignment {
        score: 0,
        steps: Vec::new(),
    };
    out.push(Step::Match, pre as u32);
    let core = core_global(ca, cb, sc, &mut work);
    out.append(core.clone());
    out.push(Step::Match, suf as u32);
    out.score = core.score + (pre + suf) as i64 * sc.matched;
    (out, work)
}

/// Lengths of the common prefix and (on what is left) common suffix.
fn trim(a: &[u32], b: &[u32]) -> (usize, usize) {
    let pre = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[pre..], &b[pre..]);
    let suf = ra
        .iter()
        .rev()
        .zip(rb.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    (pre, suf)
}

/// The global alignment of a core with no known score: a narrow band's optimum is an
/// achievable score, which proves the band the exact optimum needs.
fn core_global(a: &[u32], b: &[u32], sc: Scoring, work: &mut Work) -> Alignment {
    let (n, m) = (a.len() as i64, b.len() as i64);
    if n == 0 || m == 0 {
        return gaps_only(a.len(), b.len(), sc);
    }
    let full = (-n, m);
    let band = if bounded(sc) {
        let d = m - n;
        // an achievable score in O(n): pair a[i] with b[i], gap the rest
        let straight: i64 = a
            .iter()
            .zip(b)
            .map(|(x, y)| if x == y { sc.matched } else { sc.mismatch })
            .sum::<i64>()
            + sc.gap * d.abs();
        let mut achievable = straight;
        let mut proven = band_for(n, m, achievable, sc);
        // better achievable scores, from the optimum in a narrow band widened four-fold
        // while the band they prove is much wider (its cost stays a fraction of the DP's)
        let mut half = 32;
        while proven.1 - proven.0 > 8 * half && 2 * half < n + m {
            let narrow = ((d.min(0) - half).max(-n), (d.max(0) + half).min(m));
            let (row, lo_j) = last_row(a, b, narrow, sc, false);
            work.cells += n as u64 * (narrow.1 - narrow.0 + 1) as u64;
            achievable = achievable.max(row[(m - lo_j) as usize]);
            proven = band_for(n, m, achievable, sc);
            half *= 4;
        }
        proven
    } else {
        full
    };
    let (al, cells) = hirschberg(a, b, band, sc);
    work.cells += cells;
    al
}

/// The diagonals (j − i) that a path of score ≥ `score` can touch, for sequences of lengths
/// `n` and `m` (see the module comment); the whole matrix when the scoring gives no bound.
fn band_for(n: i64, m: i64, score: i64, sc: Scoring) -> (i64, i64) {
    if !bounded(sc) {
        return (-n, m);
    }
    let d = m - n;
    // g ≤ (α(n+m) − 2S)/(α − 2γ) gap columns; reaching diagonal k costs |k| + |d − k|
    let gmax = (sc.matched * (n + m) - 2 * score).div_euclid(sc.matched - 2 * sc.gap);
    let extra = ((gmax - d.abs()).max(0)) / 2;
    ((d.min(0) - extra).max(-n), (d.max(0) + extra).min(m))
}

fn gaps_only(n: usize, m: usize, sc: Scoring) -> Alignment {
    let mut al = Alignment {
        score: sc.gap * (n + m) as i64,
        steps: Vec::new(),
    };
    al.push(Step::Delete, n as u32);
    al.push(Step::Insert, m as u32);
    al
}

/// Read access to a sequence forwards or backwards, so one DP serves both passes.
trait Seq: Sync {
    fn len(&self) -> usize;
    fn at(&self, i: usize) -> u32;
}

struct Fwd<'a>(&'a [u32]);
struct Rev<'a>(&'a [u32]);

impl Seq for Fwd<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn at(&self, i: usize) -> u32 {
        self.0[i]
    }
}

impl Seq for Rev<'_> {
    #[inline(always)]
    fn len(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn at(&self, i: usize) -> u32 {
        self.0[self.0.len() - 1 - i]
    }
}

/// The DP scores of the last row (i = a.len()) for the columns j of the band, as
/// (scores, first j); diagonals `band` = (lo, hi) of j − i. `free_start`: the first row and
/// column score 0 (semi-global), else γ per gap.
fn last_row(
    a: &[u32],
    b: &[u32],
    band: (i64, i64),
    sc: Scoring,
    free_start: bool,
) -> (Vec<i64>, i64) {
    let (n, m) = (a.len() as i64, b.len() as i64);
    let (lo, hi) = band;
    let w = (hi - lo + 1) as usize;
    let mut row = vec![NEG; w + 1];
    // row 0: j = lo + d
    for (d, slot) in row.iter_mut().enumerate().take(w) {
        let j = lo + d as i64;
        if (0..=m).contains(&j) {
            *slot = if free_start { 0 } else { sc.gap * j };
        }
    }
    let (alpha, beta, gap) = (sc.matched, sc.mismatch, sc.gap);
    for i in 1..=n {
        let ai = a[i as usize - 1];
        let base = i + lo; // j of slot 0
        let d_lo = (-base).max(0);
        let d_hi = (m - base).min(w as i64 - 1);
        if d_lo > d_hi {
            continue;
        }
        let mut left = NEG;
        let mut d = d_lo as usize;
        if base + d_lo == 0 {
            // first column
            let v = if free_start { 0 } else { gap * i };
            row[d] = v;
            left = v;
            d += 1;
        }
        if d > d_hi as usize {
            continue;
        }
        // slots d..=d_hi are columns j = base + d, reading b[j − 1]; the slice lengths let
        // the compiler drop the bounds checks of the hot loop
        let j0 = (base + d as i64) as usize;
        let bs = &b[j0 - 1..(base + d_hi) as usize];
        let cells = &mut row[d..d_hi as usize + 2];
        let k_n = bs.len();
        assert!(cells.len() == k_n + 1);
        for k in 0..k_n {
            let s = if ai == bs[k] { alpha } else { beta };
            let v = (cells[k] + s).max(cells[k + 1] + gap).max(left + gap);
            cells[k] = v;
            left = v;
        }
    }
    // the last row's columns: j = n + lo + d
    let first_j = (n + lo).max(0);
    let last_j = (n + hi).min(m);
    let from = (first_j - (n + lo)) as usize;
    let to = (last_j - (n + lo)) as usize;
    let out = if from <= to {
        row[from..=to].to_vec()
    } else {
        Vec::new()
    };
    (out, first_j)
}

/// Hirschberg's linear-space global alignment inside a proven band; returns the alignment
/// and the cells computed.
fn hirschberg(a: &[u32], b: &[u32], band: (i64, i64), sc: Scoring) -> (Alignment, u64) {
    let (n, m) = (a.len() as i64, b.len() as i64);
    if n == 0 || m == 0 {
        return (gaps_only(a.len(), b.len(), sc), 0);
    }
    let band = (band.0.max(-n), band.1.min(m));
    let w = (band.1 - band.0 + 1) as u64;
    let cells = (n as u64 + 1) * w;
    if cells <= DIRECT_CELLS || n == 1 {
        return (direct(a, b, band, sc), cells);
    }
    let mid = n / 2;
    let d = m - n;
    // backward: reversed sequences, diagonal k becomes d − k
    let rband = (d - band.1, d - band.0);
    let (a1, a2) = a.split_at(mid as usize);
    let fwd = || last_row(a1, b, band, sc, false);
    let bwd = || {
        let ra: Vec<u32> = a2.iter().rev().copied().collect();
        let rb: Vec<u32> = b.iter().rev().copied().collect();
        last_row(&ra, &rb, rband, sc, false)
    };
    let ((f, fj), (g, gj)) = if cells > PARALLEL_CELLS {
        join(fwd, bwd)
    } else {
        (fwd(), bwd())
    };
    // g[t] is the score from (mid, j) to (n, m) with j = m − (gj + t)
    let mut best = (NEG, 0i64);
    for (t, &fv) in f.iter().enumerate() {
        let j = fj + t as i64;
        let r = m - j - gj;
        if r < 0 || r as usize >= g.len() || fv <= NEG / 2 {
            continue;
        }
        let gv = g[r as usize];
        if gv <= NEG / 2 {
            continue;
        }
        if fv + gv > best.0 {
            best = (fv + gv, j);
        }
    }
    let j = best.1 as usize;
    let (sl, sr) = (
        f[(best.1 - fj) as usize],
        best.0 - f[(best.1 - fj) as usize],
    );
    let (b1, b2) = b.split_at(j);
    let left = || hirschberg(a1, b1, band_for(mid, j as i64, sl, sc), sc);
    let right = || hirschberg(a2, b2, band_for(n - mid, m - j as i64, sr, sc), sc);
    let ((mut la, lc), (ra, rc)) = if cells > PARALLEL_CELLS {
        join(left, right)
    } else {
        (left(), right())
    };
    debug_assert_eq!(la.score, sl);
    debug_assert_eq!(ra.score, sr);
    la.append(ra);
    la.score = best.0;
    (la, cells + lc + rc)
}

/// The banded DP with a traceback matrix (2 bits a cell in a byte), for small sub-problems.
fn direct(a: &[u32], b: &[u32], band: (i64, i64), sc: Scoring) -> Alignment {
    let (n, m) = (a.len() as i64, b.len() as i64);
    let (lo, hi) = band;
    let w = (hi - lo + 1) as usize;
    const DIAG: u8 = 0;
    const UP: u8 = 1; // a symbol of A only: delete
    const LEFT: u8 = 2; // a symbol of B only: insert
    let mut dir = vec![255u8; (n as usize + 1) * w];
    let mut row = vec![NEG; w + 1];
    for d in 0..w {
        let j = lo + d as i64;
        if (0..=m).contains(&j) {
            row[d] = sc.gap * j;
            dir[d] = LEFT;
        }
    }
    for i in 1..=n {
        let ai = a[i as usize - 1];
        let base = i + lo;
        let d_lo = (-base).max(0);
        let d_hi = (m - base).min(w as i64 - 1);
        let mut left = NEG;
        let off = i as usize * w;
        for d in d_lo.max(0)..=d_hi {
            let d = d as usize;
            let j = base + d as i64;
            let (v, k) = if j == 0 {
                (sc.gap * i, UP)
            } else {
                let s = if ai == b[j as usize - 1] {
                    sc.matched
                } else {
                    sc.mismatch
                };
                let diag = row[d] + s;
                let up = row[d + 1] + sc.gap;
                let lf = left + sc.gap;
                if diag >= up && diag >= lf {
                    (diag, DIAG)
                } else if up >= lf {
                    (up, UP)
                } else {
                    (lf, LEFT)
                }
            };
            row[d] = v;
            dir[off + d] = k;
            left = v;
        }
    }
    let score = row[(m - n - lo) as usize];
    let mut rev: Vec<Step> = Vec::with_capacity((n + m) as usize);
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        let d = (j - i - lo) as usize;
        match dir[i as usize * w + d] {
            DIAG => {
                rev.push(if a[i as usize - 1] == b[j as usize - 1] {
                    Step::Match
                } else {
                    Step::Substitute
                });
                i -= 1;
                j -= 1;
            }
            UP => {
                rev.push(Step::Delete);
                i -= 1;
            }
            _ => {
                rev.push(Step::Insert);
                j -= 1;
            }
        }
    }
    let mut al = Alignment {
        score,
        steps: Vec::new(),
    };
    for s in rev.into_iter().rev() {
        al.push(s, 1);
    }
    al
}

/// Semi-global: a forward pass finds the best end cell (last row or column), a backward pass
/// from it the best start cell (first row or column); between them the alignment is global
/// with the same score, solved by `hirschberg` in its proven band; the ends are free gaps.
fn align_semi_global(a: &[u32], b: &[u32], sc: Scoring) -> (Alignment, Work) {
    let (n, m) = (a.len(), b.len());
    let mut work = Work::default();
    if n == 0 || m == 0 {
        let mut al = gaps_only(n, m, sc);
        al.score = 0;
        return (al, work);
    }
    // No semi-global alignment scores above α·min(n, m) (end gaps are 0, inner gaps ≤ 0,
    // a column ≤ α): a global optimum that reaches it with its end gaps free is optimal
    // (identical runs, one run a shortened version of the other).
    if sc.matched >= 0 && bounded(sc) {
        let (mut g, w) = align_global(a, b, sc);
        let s = g.rescore(a, b, sc, Mode::SemiGlobal);
        if s == sc.matched * n.min(m) as i64 {
            g.score = s;
            return (g, w);
        }
        work = w;
    }
    let (ie, je, score) = best_end(&Fwd(a), &Fwd(b), sc, true);
    work.cells += ((n + 1) * (m + 1)) as u64;
    let (pa, pb) = (&a[..ie], &b[..je]);
    // backward from exactly (ie, je): gaps there are not free, the start is
    let (rs, rjs, _) = best_end(&Rev(pa), &Rev(pb), sc, false);
    work.cells += ((ie + 1) * (je + 1)) as u64;
    let (is, js) = (ie - rs, je - rjs);
    let (ca, cb) = (&a[is..ie], &b[js..je]);
    let mut al = Alignment {
        score: 0,
        steps: Vec::new(),
    };
    al.push(Step::Delete, is as u32);
    al.push(Step::Insert, js as u32);
    if score > 0 || (!ca.is_empty() && !cb.is_empty()) {
        let band = band_for(ca.len() as i64, cb.len() as i64, score, sc);
        let (core, cells) = hirschberg(ca, cb, band, sc);
        work.cells += cells;
        debug_assert_eq!(core.score, score);
        al.append(core);
    } else {
        // nothing aligned: the whole of both is end gaps
        al.push(Step::Delete, (ie - is) as u32);
        al.push(Step::Insert, (je - js) as u32);
    }
    al.push(Step::Delete, (n - ie) as u32);
    al.push(Step::Insert, (m - je) as u32);
    al.score = score;
    (al, work)
}

/// The full DP (first row and column free when `free_start`, else γ a gap): (i, j, score)
/// of the best cell of the last row or last column (ties: the largest i + j).
fn best_end(a: &impl Seq, b: &impl Seq, sc: Scoring, free_start: bool) -> (usize, usize, i64) {
    let (n, m) = (a.len(), b.len());
    let g = if free_start { 0 } else { sc.gap };
    let mut row: Vec<i64> = (0..=m as i64).map(|j| g * j).collect();
    let mut best = (0usize, 0usize, NEG);
    let consider = |i: usize, j: usize, v: i64, best: &mut (usize, usize, i64)| {
        if v > best.2 || (v == best.2 && i + j > best.0 + best.1) {
            *best = (i, j, v);
        }
    };
    for i in 1..=n {
        let ai = a.at(i - 1);
        let mut diag = row[0];
        row[0] = g * i as i64;
        let mut left = row[0];
        for (j, cell) in row.iter_mut().enumerate().skip(1) {
            let s = if ai == b.at(j - 1) {
                sc.matched
            } else {
                sc.mismatch
            };
            let up = *cell;
            let v = (diag + s).max(up + sc.gap).max(left + sc.gap);
            diag = up;
            *cell = v;
            left = v;
        }
        consider(i, m, row[m], &mut best);
    }
    for (j, &v) in row.iter().enumerate() {
        consider(n, j, v, &mut best);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook O(nm) DP, the reference of the tests.
    fn reference(a: &[u32], b: &[u32], sc: Scoring, mode: Mode) -> i64 {
        let free = mode == Mode::SemiGlobal;
        let (n, m) = (a.len(), b.len());
        let mut h = vec![vec![0i64; m + 1]; n + 1];
        for (j, cell) in h[0].iter_mut().enumerate() {
            *cell = if free { 0 } else { sc.gap * j as i64 };
        }
        for i in 1..=n {
            h[i][0] = if free { 0 } else { sc.gap * i as i64 };
            for j in 1..=m {
                let s = if a[i - 1] == b[j - 1] {
                    sc.matched
                } else {
                    sc.mismatch
                };
                h[i][j] = (h[i - 1][j - 1] + s)
                    .max(h[i - 1][j] + sc.gap)
                    .max(h[i][j - 1] + sc.gap);
            }
        }
        if free {
            let last_col = (0..=n).map(|i| h[i][m]).max().unwrap();
            last_col.max(*h[n].iter().max().unwrap())
        } else {
            h[n][m]
        }
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    fn mutate(a: &[u32], rate: u64, alphabet: u64, seed: &mut u64) -> Vec<u32> {
        let mut b = Vec::new();
        for &x in a {
            if lcg(seed) % 100 < rate {
                match lcg(seed) % 3 {
                    0 => b.push((lcg(seed) % alphabet) as u32),
                    1 => {}
                    _ => {
                        b.push(x);
                        b.push((lcg(seed) % alphabet) as u32);
                    }
                }
            } else {
                b.push(x);
            }
        }
        b
    }

    fn check(a: &[u32], b: &[u32], sc: Scoring, mode: Mode) {
        let (al, _) = align(a, b, sc, mode);
        let want = reference(a, b, sc, mode);
        assert_eq!(al.score, want, "{a:?} {b:?} {sc:?} {mode:?}");
        assert_eq!(al.rescore(a, b, sc, mode), want, "{al:?}");
        let (ca, cb) = al.steps.iter().fold((0, 0), |(x, y), &(s, k)| match s {
            Step::Match | Step::Substitute => (x + k, y + k),
            Step::Insert => (x, y + k),
            Step::Delete => (x + k, y),
        });
        assert_eq!((ca as usize, cb as usize), (a.len(), b.len()));
    }

    #[test]
    fn random_pairs_score_as_the_textbook_dp() {
        let mut seed = 7u64;
        let scorings = [
            Scoring::default(),
            Scoring {
                matched: 1,
                mismatch: -3,
                gap: -2,
            },
            Scoring {
                matched: 5,
                mismatch: 4,
                gap: 0,
            },
            Scoring {
                matched: -1,
                mismatch: -2,
                gap: -1,
            },
        ];
        for round in 0..300 {
            let n = (lcg(&mut seed) % 60) as usize;
            let alphabet = 1 + lcg(&mut seed) % 5;
            let a: Vec<u32> = (0..n).map(|_| (lcg(&mut seed) % alphabet) as u32).collect();
            let b = if round % 3 == 0 {
                (0..lcg(&mut seed) % 60)
                    .map(|_| (lcg(&mut seed) % alphabet) as u32)
                    .collect()
            } else {
                mutate(&a, 20, alphabet, &mut seed)
            };
            for sc in scorings {
                check(&a, &b, sc, Mode::Global);
                check(&a, &b, sc, Mode::SemiGlobal);
            }
        }
    }

    #[test]
    fn long_pairs_go_through_the_banded_hirschberg_exactly() {
        let mut seed = 99u64;
        for rate in [0, 1, 10, 40] {
            let a: Vec<u32> = (0..3000).map(|_| (lcg(&mut seed) % 7) as u32).collect();
            let b = mutate(&a, rate, 7, &mut seed);
            check(&a, &b, Scoring::default(), Mode::Global);
            check(&a, &b, Scoring::default(), Mode::SemiGlobal);
        }
        // unrelated and of very different lengths
        let a: Vec<u32> = (0..2500).map(|_| (lcg(&mut seed) % 3) as u32).collect();
        let b: Vec<u32> = (0..700).map(|_| (lcg(&mut seed) % 3) as u32).collect();
        check(&a, &b, Scoring::default(), Mode::Global);
        check(&b, &a, Scoring::default(), Mode::Global);
    }

    #[test]
    fn a_substitution_is_one_substitute() {
        let a: Vec<u32> = (0..5000).map(|i| i % 2).collect();
        let mut b = a.clone();
        b[1001] = 9;
        let (al, work) = align(&a, &b, Scoring::default(), Mode::Global);
        assert_eq!(
            al.steps,
            vec![
                (Step::Match, 1001),
                (Step::Substitute, 1),
                (Step::Match, 3998)
            ]
        );
        assert_eq!(al.score, 2 * 4999 - 1);
        assert!(work.cells < 100, "trimming leaves one column: {work:?}");
    }
}
