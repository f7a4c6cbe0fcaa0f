//! The timeline's data: each location's time walked event by event, each stretch between two
//! events given to the call path active there and split into classes (the call path's
//! region class, less the wait-state shares of that call path on that location), summed per
//! pixel column of the finest zoom level, then per coarser level; per frame window; per
//! process (the pies). Small traces also keep every stretch (exact tooltips).

use super::{ClassRule, LocationRow, COMPUTATION, MPI, MPI_SYNC, OPENMP, OPENMP_SYNC};
use crate::analysis::{trunc_usize, Analysis};
use crate::model::times::{Block, BLOCK};
use crate::model::{classify::classify, EventKind, Paradigm, RegionRole, TimesRef, Trace};
use crate::replay::calltree::{Callee, NO_CNODE};
use crate::replay::{CnodeSlice, Replay};
use rayon::prelude::*;

// `Acc::levels` takes a location's classes as bits of a `u16`.
const _: () = assert!(super::MAX_CLASSES <= 16);

/// The coarsest level's columns (the page's timeline is about this wide).
pub const COLUMNS: u32 = 1024;
/// Zoom levels double the columns while all levels hold at most this many cells.
pub const CELL_BUDGET: u64 = 800_000;
/// At most this many levels (zoom ×2^(LEVELS-1)).
pub const MAX_LEVELS: usize = 8;
/// Traces of at most this many events keep every stretch.
pub const PIECE_LIMIT: u64 = 30_000;

/// One zoom level: per location, its cells run-length coded as repeated (cell, call path + 1,
/// run) with the call path and run as LEB128 varints; a cell is `class << 4 | share`, the
/// dominant class and its share of the column in sixteenths (1..15), `0xF0` when the
/// location has no time there. The call path is that of the longest stretch in the column.
#[derive(Clone, Debug)]
pub struct Level {
    pub columns: u32,
    pub rows: Vec<Vec<u8>>,
}

/// One stretch between two events of a location.
#[derive(Clone, Debug)]
pub struct Piece {
    /// Position in `Views::locations`.
    pub row: u32,
    pub start_s: f64,
    pub end_s: f64,
    pub cnode: u32,
    pub class: u8,
    /// The wait-state classes' shares of it.
    pub waits: Vec<(u8, f32)>,
}

pub(crate) struct Out {
    pub rows: Vec<LocationRow>,
    pub levels: Vec<Level>,
    pub pieces: Vec<Piece>,
    pub cnodes: Vec<u32>,
    pub states: Vec<Vec<(u8, u8)>>,
}

/// The base class of each call path's region.
fn base_classes(trace: &Trace, replay: &Replay) -> Vec<u8> {
    let work = [RegionRole::LOOP, RegionRole::TASK, RegionRole::TASK_UNTIED];
    (replay.tree.nodes.iter())
        .map(|n| match n.callee {
            Callee::ArtificialRoot => COMPUTATION,
            Callee::Region(r) => {
                let reg = &trace.defs.regions[r as usize];
                match classify(reg).0 {
                    "COLL_BARRIER" => MPI_SYNC,
                    "OMP_EBARRIER" | "OMP_IBARRIER" | "OMP_CRITICAL" => OPENMP_SYNC,
                    "OMP_PARALLEL" => COMPUTATION,
                    _ if reg.paradigm == Paradigm::MPI => MPI,
                    _ if reg.paradigm == Paradigm::OPENMP && !work.contains(&reg.role) => OPENMP,
                    _ => COMPUTATION,
                }
            }
        })
        .collect()
}

/// The finest columns and the levels: coarsest `COLUMNS` (fewer for a run of fewer ticks),
/// doubled while the budget holds.
fn level_columns(nloc: usize, span: u64) -> Vec<u32> {
    let mut cols = vec![(COLUMNS as u64).min(span.max(1)) as u32];
    let mut cells = nloc as u64 * cols[0] as u64;
    while cols.len() < MAX_LEVELS {
        let next = cols[cols.len() - 1] as u64 * 2;
        if next > span || cells + nloc as u64 * next > CELL_BUDGET {
            break;
        }
        cells += nloc as u64 * next;
        cols.push(next as u32);
    }
    cols
}

/// The wait-state cells of one location that its timeline reads: (call path, class,
/// the class's own severity there in seconds: its rule's value less its wait-state
/// children's), where positive, by call path then class. The single process reads them from
/// its analysis; a job's rank 0 from the assembled one, for each location's owner.
pub(crate) type WaitCell = (u32, u8, f64);

/// `WaitCell`s of location `l` (of `ncnodes` call paths) from the analysis `a`.
pub(crate) fn wait_cells(
    a: &Analysis,
    classes: &[ClassRule],
    l: u32,
    ncnodes: usize,
) -> Vec<WaitCell> {
    let mut out = Vec::new();
    for c in 0..ncnodes as u32 {
        for (j, (_, w)) in classes.iter().enumerate() {
            let Some((k, kids)) = w else { continue };
            let v = a.value(*k, c, l) - kids.iter().map(|&q| a.value(q, c, l)).sum::<f64>();
            if v > 0.0 {
                out.push((c, j as u8, v));
            }
        }
    }
    out
}

pub(super) fn compute(
    trace: &Trace,
    replay: &Replay,
    a: &Analysis,
    classes: &[ClassRule],
    span: (u64, u64),
    windows: &[u64],
) -> Out {
    let ctx = Timeline::new(
        trace,
        replay,
        classes.len(),
        span,
        trace.event_count(),
        windows,
    );
    let ncn = replay.tree.nodes.len();
    let per_loc: Vec<LocOut> = (0..trace.events.len())
        .into_par_iter()
        .map(|l| ctx.walk(l, &wait_cells(a, classes, l as u32, ncn)))
        .collect();
    ctx.assemble(per_loc)
}

/// The timeline's walk of each location over a run's span, its zoom levels and frame
/// windows (made once; `walk` per location, `assemble` of all of them in location order).
pub(crate) struct Timeline<'a> {
    trace: &'a Trace,
    replay: &'a Replay,
    ncls: usize,
    base: Vec<u8>,
    /// Per call path: the call path active after its ENTER (itself) and after its LEAVE
    /// (its parent, `NO_CNODE` at the root) with their base classes.
    act: Vec<[(u32, u8); 2]>,
    t0: u64,
    span: u64,
    /// Each level's columns, coarsest first.
    cols: Vec<u32>,
    finest: u32,
    windows: &'a [u64],
    keep_pieces: bool,
}

/// One location's part of the timeline (`Timeline::walk`).
pub(crate) struct LocOut {
    /// Ticks per class.
    pub by_class: Vec<f64>,
    /// Each level's row, coarsest first.
    pub rows: Vec<Vec<u8>>,
    /// Per frame window: the dominant class and its share.
    pub states: Vec<(u8, u8)>,
    pub pieces: Vec<Piece>,
    /// The call paths the rows name, sorted.
    pub used: Vec<u32>,
}

/// The finest columns of one location as they fill.
struct Acc {
    ncls: usize,
    fine: Vec<Fine>,
    width: f64,
    /// `1 / width`, made once.
    inv: f64,
}

impl<'a> Timeline<'a> {
    /// Over the run's `(t0, t1)` and frame `windows`, with `ncls` classes; `events` the
    /// trace's event count (small traces keep every piece).
    pub(crate) fn new(
        trace: &'a Trace,
        replay: &'a Replay,
        ncls: usize,
        (t0, t1): (u64, u64),
        events: u64,
        windows: &'a [u64],
    ) -> Timeline<'a> {
        let cols = level_columns(trace.events.len(), t1.saturating_sub(t0));
        let base = base_classes(trace, replay);
        let act = (replay.tree.nodes.iter().enumerate())
            .map(|(c, n)| {
                let up = n.parent.map_or((NO_CNODE, 0), |p| (p, base[p as usize]));
                [(c as u32, base[c]), up]
            })
            .collect();
        Timeline {
            trace,
            replay,
            ncls,
            base,
            act,
            t0,
            span: t1.saturating_sub(t0).max(1),
            finest: cols[cols.len() - 1],
            cols,
            windows,
            keep_pieces: events <= PIECE_LIMIT,
        }
    }

    /// Every location's part (`walk`), in location order, as the views' rows, levels,
    /// pieces, call paths named and frame states.
    pub(crate) fn assemble(&self, per_loc: Vec<LocOut>) -> Out {
        let nloc = per_loc.len();
        let res = self.trace.timer_resolution.max(1) as f64;
        let mut out = Out {
            rows: Vec::with_capacity(nloc),
            levels: (self.cols.iter())
                .map(|&c| Level {
                    columns: c,
                    rows: Vec::with_capacity(nloc),
                })
                .collect(),
            pieces: Vec::new(),
            cnodes: Vec::new(),
            states: vec![Vec::with_capacity(nloc); self.windows.len().saturating_sub(1)],
        };
        let mut used = std::collections::BTreeSet::new();
        for (l, lo) in per_loc.into_iter().enumerate() {
            out.rows.push(LocationRow {
                index: l,
                rank: self.trace.defs.locations.get(l).and_then(|d| d.rank),
                by_class: lo.by_class.iter().map(|&t| t / res).collect(),
            });
            used.extend(lo.used);
            for (lev, row) in out.levels.iter_mut().zip(lo.rows) {
                lev.rows.push(row);
            }
            for (f, s) in out.states.iter_mut().zip(lo.states) {
                f.push(s);
            }
            out.pieces.extend(lo.pieces);
        }
        out.cnodes = used.into_iter().collect();
        out
    }

    /// The fork and join intervals of the teams location `l` is in, with the parallel
    /// region's call path: they are part of the region's time (patterns.md §3.2, as the
    /// replay books them), even where the thread has no event yet.
    fn fork_join(&self, l: usize) -> Vec<(u64, u64, u32)> {
        let ev = &self.trace.events[l];
        let ls = &self.replay.locations[l];
        let mut out = Vec::new();
        for team in &self.replay.omp.teams {
            for mb in team.members.iter().filter(|m| m.loc as usize == l) {
                let pc = ls.cnode(mb.enter as usize);
                if pc == NO_CNODE {
                    continue;
                }
                let te = ev.time.get(mb.enter as usize);
                if te > team.fork {
                    out.push((team.fork, te, pc));
                }
                if mb.leave != crate::replay::NONE {
                    let tl = ev.time.get(mb.leave as usize);
                    if team.join > tl {
                        out.push((tl, team.join, pc));
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Every stretch of location `l` with its call path: from each event to the next, the
    /// call path active there, except in fork and join intervals (`fork_join`), which are
    /// given as stretches of their own at the end.
    fn stretches(&self, l: usize, f: &mut impl OnStretch) {
        let ev = &self.trace.events[l];
        let (time, kind) = (ev.time.view(), &ev.kind[..]);
        let ls = &self.replay.locations[l];
        let nodes = &self.replay.tree.nodes;
        // the call path active from event `i` to the next one (`Timeline::active`, its columns
        // looked up once per location)
        let active = |i: usize| {
            let c = ls.cnode(i);
            if c == NO_CNODE || kind[i] != EventKind::Leave {
                return c;
            }
            nodes[c as usize].parent.unwrap_or(NO_CNODE)
        };
        let fj = self.fork_join(l);
        if fj.is_empty() {
            // no team: every stretch is the active call path's (the common case, walked
            // without the fork and join bookkeeping)
            for_pairs(time, |i, a, b| {
                if b > a {
                    let c = active(i);
                    if c != NO_CNODE {
                        f.on(a, b, c);
                    }
                }
            });
            return;
        }
        let mut emit = |a: u64, b: u64, c: u32| {
            if c != NO_CNODE && b > a {
                f.on(a, b, c);
            }
        };
        let mut cur = 0;
        for_pairs(time, |i, mut a, b| {
            if b <= a {
                return;
            }
            let c = active(i);
            while cur < fj.len() && fj[cur].1 <= a {
                cur += 1;
            }
            let mut j = cur;
            while a < b {
                match fj.get(j) {
                    Some(&(s, e, _)) if s < b => {
                        emit(a, s.max(a), c);
                        a = a.max(e);
                        j += 1;
                    }
                    _ => {
                        emit(a, b, c);
                        a = b;
                    }
                }
            }
        });
        for (s, e, pc) in fj {
            emit(s, e, pc);
        }
    }

    /// Per call path: the wait classes' shares of its time on location `l`, from its wait
    /// cells (`wait_cells`).
    fn wait_shares(&self, l: usize, cells: &[WaitCell]) -> Vec<Vec<(u8, f32)>> {
        let mut out = vec![Vec::new(); self.base.len()];
        if cells.is_empty() {
            // no wait state here: no need to know the call paths' time
            return out;
        }
        let mut excl = Excl(vec![0u64; self.base.len()]);
        self.stretches(l, &mut excl);
        let excl = excl.0;
        let res = self.trace.timer_resolution.max(1) as f64;
        for &(c, j, v) in cells {
            match excl.get(c as usize) {
                Some(&t) if t != 0 => out[c as usize].push((j, (v * res / t as f64) as f32)),
                _ => {}
            }
        }
        for o in &mut out {
            let sum: f32 = o.iter().map(|x| x.1).sum();
            if sum > 1.0 {
                o.iter_mut().for_each(|x| x.1 /= sum);
            }
        }
        out
    }

    /// Location `l`'s part of the timeline, its wait states as `cells` say.
    pub(crate) fn walk(&self, l: usize, cells: &[WaitCell]) -> LocOut {
        if cells.is_empty() && !self.keep_pieces {
            if let Some(out) = self.walk_whole(l) {
                return out;
            }
        }
        self.walk_parts(l, cells)
    }

    /// `walk`, each stretch split into its call path's parts (`walk_whole` the case of one
    /// part).
    fn walk_parts(&self, l: usize, cells: &[WaitCell]) -> LocOut {
        let ncls = self.ncls;
        let shares = self.wait_shares(l, cells);
        let nwin = self.windows.len().saturating_sub(1);
        // window 0's bounds
        let at = |w: usize| self.windows.get(w).copied().unwrap_or(0);
        // per call path, the classes a stretch of it is split into (the same for each of
        // its stretches: made once)
        let parts = (shares.iter().zip(&self.base))
            .map(|(waits, &base)| {
                let rest = 1.0 - waits.iter().map(|x| x.1 as f64).sum::<f64>();
                let mut parts = Vec::with_capacity(waits.len() + 1);
                parts.push((base, rest.max(0.0)));
                parts.extend(waits.iter().map(|&(j, s)| (j, s as f64)));
                parts
            })
            .collect();
        let mut sums = Sums {
            acc: Acc::new(
                ncls,
                self.finest as usize,
                self.span as f64 / self.finest as f64,
            ),
            win: vec![0.0f64; nwin * ncls],
            by_class: vec![0.0f64; ncls],
            wcur: 0,
            wspan: (at(0), at(1.min(nwin))),
            windows: self.windows,
            t0: self.t0,
            parts,
            pieces: self.keep_pieces.then(|| Pieces {
                row: l as u32,
                res: self.trace.timer_resolution.max(1) as f64,
                base: &self.base,
                shares: &shares,
                out: Vec::new(),
            }),
        };
        self.stretches(l, &mut sums);
        let Sums {
            acc,
            win,
            by_class,
            pieces,
            ..
        } = sums;
        let states = (0..nwin)
            .map(|w| {
                let len = (self.windows[w + 1] - self.windows[w]).max(1) as f64;
                dominant(&win[w * ncls..(w + 1) * ncls], len)
            })
            .collect();
        let classes = positive(by_class.iter().map(|&t| t > 0.0));
        let (rows, used) = acc.levels(self.finest, classes);
        LocOut {
            by_class,
            rows,
            states,
            pieces: pieces.map_or_else(Vec::new, |p| p.out),
            used,
        }
    }
}

impl Timeline<'_> {
    /// `walk` of a location with no wait state, no team and no piece kept (`None` when it is
    /// in a team or a sum reaches 2^53 ticks): every stretch is its call path's base class
    /// whole (`parts` = [(base, 1.0)], and `x * 1.0` is `x`), so the sums per class and per
    /// frame window add whole ticks, exact in any order below 2^53: they are kept as
    /// integers (saturating); the columns' cells, whose sums are not exact, are added in
    /// the order `walk_parts` adds them.
    fn walk_whole(&self, l: usize) -> Option<LocOut> {
        if !self.fork_join(l).is_empty() {
            return None;
        }
        let (ncls, t0) = (self.ncls, self.t0);
        let ev = &self.trace.events[l];
        let mut ticks = Ticks::new(self.windows, t0);
        let mut acc = Acc::new(
            ncls,
            self.finest as usize,
            self.span as f64 / self.finest as f64,
        );
        // the call-path column as stored: the walk made for each width
        let (time, kind) = (ev.time.view(), &ev.kind[..]);
        match self.replay.locations[l].view().cnodes() {
            CnodeSlice::Narrow(cn) => self.whole_walk(time, kind, cn, &mut ticks, &mut acc),
            CnodeSlice::Wide(cn) => self.whole_walk(time, kind, cn, &mut ticks, &mut acc),
        }
        let (by_class, win) = ticks.sums(ncls)?;
        let nwin = win.len();
        let states = (0..nwin)
            .map(|w| {
                let len = (self.windows[w + 1] - self.windows[w]).max(1) as f64;
                let sums: Vec<f64> = win[w].iter().map(|&t| t as f64).collect();
                dominant(&sums, len)
            })
            .collect();
        let classes = positive(by_class.iter().map(|&t| t > 0));
        let (rows, used) = acc.levels(self.finest, classes);
        Some(LocOut {
            by_class: by_class.iter().map(|&t| t as f64).collect(),
            rows,
            states,
            pieces: Vec::new(),
            used,
        })
    }
}

impl Timeline<'_> {
    /// `walk_whole`'s walk: each stretch from event `i` to the next (the pairs of the events
    /// that have a kind and a call path) with the call path active from `i` on (`stretches`)
    /// and its class, added to `ticks` and `acc`. A block's times are decoded first into a
    /// buffer after the last time before it, then its pairs walked zipped with the kinds
    /// and call paths: one loop, no bounds check an event, its state in registers
    /// (issue 26).
    #[inline(always)]
    fn whole_walk<C: RawCnode>(
        &self,
        time: TimesRef<'_>,
        kind: &[EventKind],
        cn: &[C],
        ticks: &mut Ticks<'_>,
        acc: &mut Acc,
    ) {
        let (t0, act) = (self.t0, &self.act[..]);
        // the pairs walked: event `i` and the next, for each `i` below `n`
        let n = (kind.len().min(cn.len())).min(time.len().saturating_sub(1));
        let Some(mut prev) = time.first() else {
            return;
        };
        // the column fraction of the last stretch's end (the next one's start, mostly)
        let mut last = (u64::MAX, 0.0f64);
        // the column the last stretch ended in (`Col`)
        let mut col = Col::NONE;
        let (inv, width, nf) = (acc.inv, acc.width, col_f64(acc.fine.len()));
        // `buf[0]` the time before the block's (`prev`), then the block's
        let mut buf = [0u64; BLOCK + 1];
        let mut i = 0usize;
        let mut k = 0usize;
        while i < n {
            // the block's times after `prev` (the first block's first time is `prev`)
            let skip = usize::from(k == 0);
            let m = match time.block(k) {
                Block::Narrow(b, offs) => {
                    let offs = offs.get(skip..).unwrap_or(&[]);
                    for (x, &o) in buf[1..].iter_mut().zip(offs) {
                        *x = b + o as u64;
                    }
                    offs.len().min(BLOCK)
                }
                Block::Wide(ts) => {
                    let ts = ts.get(skip..).unwrap_or(&[]);
                    let m = ts.len().min(BLOCK);
                    buf[1..=m].copy_from_slice(&ts[..m]);
                    m
                }
            };
            k += 1;
            buf[0] = prev;
            prev = buf[m];
            let m = m.min(n - i);
            let (ks, cs) = (&kind[i..i + m], &cn[i..i + m]);
            i += m;
            for ((w, &kd), &c) in buf[..=m].windows(2).zip(ks).zip(cs) {
                let (a0, b0) = (w[0], w[1]);
                if b0 <= a0 {
                    continue;
                }
                // the call path active from the event on and its class (no call path: past
                // the table, `RawCnode`)
                let Some(pair) = act.get(c.index()) else {
                    continue;
                };
                let (c, k) = pair[usize::from(kd == EventKind::Leave)];
                if c == NO_CNODE {
                    continue;
                }
                let k = usize::from(k & 15);
                let (a, b) = ticks.add(a0, b0, k);
                let x0 = if a == last.0 {
                    last.1
                } else {
                    f64_of(a - t0) * inv
                };
                let x1 = f64_of(b - t0) * inv;
                last = (b, x1);
                if x0 >= col.lo && x1 <= col.hi {
                    // within the last stretch's column: `add_whole`'s one column, its overlap
                    // `x1 - x0` (`overlap` of fractions within the column's edges), put
                    // without `overlap`'s test of it: `b > a`, so `x1 >= x0` (the conversion
                    // and the product by `inv > 0` keep the order) and `d * width` is +0.0
                    // where not positive, which adds nothing to a cell (a sum of such
                    // terms, never -0.0) and is no longest stretch (`Fine::longest`)
                    acc.fine[col.col].put(k, (x1 - x0) * width, c);
                } else if x0 >= col.lo && x0 < col.hi && x1 < nf {
                    // from the last stretch's column on into a later one (`add_whole`'s
                    // columns: `first` is `col.col`, `last` before the end)
                    col = acc.cross(col, (x0, x1), c, k);
                } else {
                    acc.add_whole((x0, x1), c, k);
                    col = Col::of(x1, acc.fine.len());
                }
            }
        }
    }
}

/// A call-path column's word (`replay::CnodeSlice`) as an index into `Timeline::act`: a
/// call path's own index; no call path (`NO_CNODE`, or a narrow column's `u16::MAX`, whose
/// call tree has fewer call paths) past the table's end.
trait RawCnode: Copy {
    fn index(self) -> usize;
}

impl RawCnode for u16 {
    #[inline(always)]
    fn index(self) -> usize {
        usize::from(self)
    }
}

impl RawCnode for u32 {
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

/// The whole ticks of a location's stretches per class (`walk_whole`), over the run and per
/// frame window (a class index is below 16). A stretch within the current window (and
/// after `t0`) is added to `cur`, the window's ticks since its last `flush`, the others as
/// `walk_parts` adds them: saturating sums of whole ticks, the same totals in any order
/// (and any saturated one is past 2^53, `sums`).
struct Ticks<'t> {
    windows: &'t [u64],
    nwin: usize,
    t0: u64,
    win: Vec<[u64; 16]>,
    by_class: [u64; 16],
    cur: [u64; 16],
    wcur: usize,
    /// Window `wcur`'s bounds.
    wspan: (u64, u64),
    /// The stretches added to `cur`: from `lo` (at least `t0`) until `hi`.
    lo: u64,
    hi: u64,
}

impl<'t> Ticks<'t> {
    fn new(windows: &'t [u64], t0: u64) -> Ticks<'t> {
        let nwin = windows.len().saturating_sub(1);
        let at = |w: usize| windows.get(w).copied().unwrap_or(0);
        let wspan = (at(0), at(1.min(nwin)));
        Ticks {
            windows,
            nwin,
            t0,
            win: vec![[0u64; 16]; nwin],
            by_class: [0; 16],
            cur: [0; 16],
            wcur: 0,
            wspan,
            lo: wspan.0.max(t0),
            hi: wspan.1,
        }
    }

    /// Stretch `[a0, b0)` of class `k`; its ticks from `t0` on (`a0`, `b0` at least `t0`).
    #[inline(always)]
    fn add(&mut self, a0: u64, b0: u64, k: usize) -> (u64, u64) {
        if a0 >= self.lo && b0 <= self.hi {
            self.cur[k] = self.cur[k].saturating_add(b0 - a0);
            return (a0, b0);
        }
        self.add_other(a0, b0, k)
    }

    /// `cur` added to window `wcur` and to the run's sums.
    fn flush(&mut self) {
        if let Some(row) = self.win.get_mut(self.wcur) {
            for ((w, by), c) in row.iter_mut().zip(&mut self.by_class).zip(&mut self.cur) {
                *w = w.saturating_add(*c);
                *by = by.saturating_add(*c);
                *c = 0;
            }
        }
    }

    /// `add` of a stretch not within the current window.
    #[inline(never)]
    fn add_other(&mut self, a0: u64, b0: u64, k: usize) -> (u64, u64) {
        self.flush();
        let (windows, nwin, t0) = (self.windows, self.nwin, self.t0);
        self.by_class[k] = self.by_class[k].saturating_add(b0 - a0);
        let (a, b) = (a0.max(t0), b0.max(t0));
        if a < self.wspan.0 || a >= self.wspan.1 {
            self.wcur = (windows.partition_point(|&x| x <= a)).clamp(1, nwin.max(1)) - 1;
            self.wspan = (windows[self.wcur], windows[(self.wcur + 1).min(nwin)]);
            (self.lo, self.hi) = (self.wspan.0.max(t0), self.wspan.1);
        }
        if b <= self.wspan.1 && a >= self.wspan.0 {
            let x = &mut self.win[self.wcur][k];
            *x = x.saturating_add(b - a);
        } else {
            let mut w = self.wcur;
            while w < nwin && windows[w] < b {
                let o = b.min(windows[w + 1]).saturating_sub(a.max(windows[w]));
                self.win[w][k] = self.win[w][k].saturating_add(o);
                w += 1;
            }
        }
        (a, b)
    }

    /// The ticks per class (`ncls` of them) over the run and per window; `None` when a sum
    /// reaches 2^53. Every sum is of whole ticks, each term and partial sum at most its
    /// total: below 2^53 the float sums of `walk_parts` were exact (else, a time column
    /// going back and forth over a long run, they are made as `walk_parts` makes them).
    fn sums(mut self, ncls: usize) -> Option<(Vec<u64>, Vec<Vec<u64>>)> {
        self.flush();
        let by_class = self.by_class[..ncls].to_vec();
        let win: Vec<Vec<u64>> = self.win.iter().map(|w| w[..ncls].to_vec()).collect();
        if by_class
            .iter()
            .chain(win.iter().flatten())
            .any(|&t| t >= 1 << 53)
        {
            return None;
        }
        Some((by_class, win))
    }
}

/// `f(i, t[i], t[i + 1])` for each event `i` but the last of a location whose times are
/// `t`, in order (`TimesRef::pairs`), read a run at a time (`TimesRef::for_each`: a narrow
/// block's base held and its offsets read in a tight loop). `f` has one call site, so it is
/// inlined into the loop and its captured state stays in registers (issue 26).
#[inline(always)]
fn for_pairs(t: TimesRef<'_>, mut f: impl FnMut(usize, u64, u64)) {
    let Some(mut prev) = t.first() else {
        return;
    };
    t.for_each(|j, x| {
        if j != 0 {
            f(j - 1, prev, x);
        }
        prev = x;
    });
}

/// What is done with each stretch of a location (`Timeline::stretches`): a trait, not a
/// closure, so that the walk's sums are inlined into the loop over the events.
trait OnStretch {
    /// Stretch `[a, b)` (`a < b`) of call path `c`.
    fn on(&mut self, a: u64, b: u64, c: u32);
}

/// The exclusive ticks per call path (`Timeline::wait_shares`).
struct Excl(Vec<u64>);

impl OnStretch for Excl {
    #[inline(always)]
    fn on(&mut self, a: u64, b: u64, c: u32) {
        if let Some(x) = self.0.get_mut(c as usize) {
            *x += b - a;
        }
    }
}

/// Every stretch kept (small traces: exact tooltips).
struct Pieces<'t> {
    row: u32,
    res: f64,
    base: &'t [u8],
    shares: &'t [Vec<(u8, f32)>],
    out: Vec<Piece>,
}

/// One location's sums as its stretches come (`Timeline::walk`): the finest columns, the
/// frame windows' sums (windows × classes) with the current window `wcur` and its bounds,
/// ticks per class.
struct Sums<'t> {
    acc: Acc,
    win: Vec<f64>,
    by_class: Vec<f64>,
    wcur: usize,
    wspan: (u64, u64),
    windows: &'t [u64],
    t0: u64,
    /// Per call path, the classes a stretch of it is split into.
    parts: Vec<Vec<(u8, f64)>>,
    pieces: Option<Pieces<'t>>,
}

impl OnStretch for Sums<'_> {
    #[inline(always)]
    fn on(&mut self, a0: u64, b0: u64, c: u32) {
        let ncls = self.acc.ncls;
        let nwin = self.windows.len().saturating_sub(1);
        let t0 = self.t0;
        let parts = &self.parts[c as usize][..];
        let dt = f64_of(b0 - a0);
        let (a, b) = (a0.max(t0), b0.max(t0));
        // the frame windows this stretch overlaps (stretches come in time order but for
        // the fork and join intervals at the end)
        if a < self.wspan.0 || a >= self.wspan.1 {
            self.wcur = (self.windows.partition_point(|&x| x <= a)).clamp(1, nwin.max(1)) - 1;
            self.wspan = (
                self.windows[self.wcur],
                self.windows[(self.wcur + 1).min(nwin)],
            );
        }
        let wcur = self.wcur;
        // within window `wcur` (never with no window, a < b)
        let inside = b <= self.wspan.1 && a >= self.wspan.0;
        match self.acc.single(a - t0, b - t0) {
            Some((col, o)) if inside && a0 >= t0 => {
                // the common case, one column of one window, not clipped: the three
                // sums in one pass over the parts, each sum in its own order as below
                // (the window's overlap is `dt` here)
                let f = &mut self.acc.fine[col];
                let w = &mut self.win[wcur * ncls..(wcur + 1) * ncls];
                for &(k, s) in parts {
                    let p = dt * s;
                    self.by_class[k as usize] += p;
                    w[k as usize] += p;
                    f.t[usize::from(k & 15)] += (o * s) as f32;
                }
                f.longest(o, c);
            }
            _ => {
                for &(k, s) in parts {
                    self.by_class[k as usize] += dt * s;
                }
                self.acc.add(a - t0, b - t0, c, parts);
                let sums = (&mut self.win[..], ncls);
                add_windows(sums, self.windows, (wcur, inside), (a, b), parts);
            }
        }
        if let Some(p) = &mut self.pieces {
            p.out.push(Piece {
                row: p.row,
                start_s: (a - t0) as f64 / p.res,
                end_s: (b - t0) as f64 / p.res,
                cnode: c,
                class: p.base[c as usize],
                waits: p.shares[c as usize].clone(),
            });
        }
    }
}

/// `x as f64` (the same value), through the signed conversion where `x` is below 2^63: one
/// instruction, not the unsigned conversion's sequence.
#[inline(always)]
fn f64_of(x: u64) -> f64 {
    if x >> 63 == 0 {
        x as i64 as f64
    } else {
        f64_of_large(x)
    }
}

/// `x as f64` past 2^63 (`f64_of`), apart: the common case is not made to compute it too.
#[cold]
#[inline(never)]
fn f64_of_large(x: u64) -> f64 {
    x as f64
}

/// Stretch `[a, b)` split as `parts` added to the frame windows' sums `win` (windows ×
/// classes): all to window `wcur` when it lies `inside` it, else to each window it overlaps
/// from `wcur` on.
fn add_windows(
    (win, ncls): (&mut [f64], usize),
    windows: &[u64],
    (wcur, inside): (usize, bool),
    (a, b): (u64, u64),
    parts: &[(u8, f64)],
) {
    let nwin = windows.len().saturating_sub(1);
    if inside {
        let o = (b - a) as f64;
        for &(k, s) in parts {
            win[wcur * ncls + k as usize] += o * s;
        }
        return;
    }
    let mut w = wcur;
    while w < nwin && windows[w] < b {
        let o = b.min(windows[w + 1]).saturating_sub(a.max(windows[w]));
        for &(k, s) in parts {
            win[w * ncls + k as usize] += o as f64 * s;
        }
        w += 1;
    }
}

/// The dominant class of `times` and its share of `len` in percent; (15, 0) when empty.
fn dominant(times: &[f64], len: f64) -> (u8, u8) {
    let mut best = (15u8, 0.0f64);
    for (k, &t) in times.iter().enumerate() {
        if t > best.1 {
            best = (k as u8, t);
        }
    }
    (best.0, round_pct(100.0 * best.1 / len))
}

/// `x.round().clamp(0.0, 100.0) as u8` (the same value), without a call to libm's `round`
/// per column (the target has no rounding instruction): below 100, `x` less its truncation
/// is exact.
#[inline]
fn round_pct(x: f64) -> u8 {
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    if x >= 100.0 {
        return 100;
    }
    // 0 < x < 100: the cast truncates, exact
    let t = x as u8;
    t + u8::from(x - f64::from(t) >= 0.5)
}

/// One finest column as it fills: ticks per class (a class index is below 16; a class
/// never added has 0.0 there), its longest stretch's length and call path.
#[derive(Clone, Copy)]
struct Fine {
    t: [f32; 16],
    best: (f32, u32),
}

impl Fine {
    const EMPTY: Fine = Fine {
        t: [0.0; 16],
        best: (0.0, NO_CNODE),
    };

    /// Its longest stretch so far, given one of `o` ticks of call path `c`.
    #[inline(always)]
    fn longest(&mut self, o: f64, c: u32) {
        if o as f32 > self.best.0 {
            self.best = (o as f32, c);
        }
    }

    /// `o` ticks (positive) of class `k` and call path `c`.
    #[inline(always)]
    fn put(&mut self, k: usize, o: f64, c: u32) {
        self.t[k & 15] += o as f32;
        self.longest(o, c);
    }
}

/// Column `col` as an `f64` (the same value: the finest columns are fewer than 2^32,
/// `level_columns`), one conversion instruction, not the unsigned `usize` sequence.
#[inline(always)]
fn col_f64(col: usize) -> f64 {
    col as u32 as f64
}

// `col_f64` is exact on every finest column.
const _: () = assert!((COLUMNS as u64) << (MAX_LEVELS - 1) < 1 << 32);

impl Acc {
    fn new(ncls: usize, columns: usize, width: f64) -> Acc {
        Acc {
            ncls,
            fine: vec![Fine::EMPTY; columns],
            width,
            inv: 1.0 / width,
        }
    }

    /// The columns stretch `[a, b)` (ticks from the run's start) spans, as fractions.
    #[inline]
    fn span(&self, a: u64, b: u64) -> (f64, f64) {
        (f64_of(a) * self.inv, f64_of(b) * self.inv)
    }

    /// The overlap of span `(x0, x1)` with column `col`, in ticks.
    /// (`min` and `max` as comparisons: the same values, `col` is never NaN and a NaN
    /// `x0` or `x1` gives the column's edge either way.)
    #[inline]
    fn overlap(&self, (x0, x1): (f64, f64), col: usize) -> f64 {
        let (c0, c1) = (col_f64(col), col_f64(col) + 1.0);
        let d = if x1 < c1 { x1 } else { c1 } - if x0 > c0 { x0 } else { c0 };
        if d > 0.0 {
            d * self.width
        } else {
            0.0
        }
    }

    /// The column of stretch `[a, b)` and its overlap there when it lies in one column and
    /// the overlap is positive (what `add` would find).
    #[inline]
    fn single(&self, a: u64, b: u64) -> Option<(usize, f64)> {
        let n = self.fine.len();
        let x = self.span(a, b);
        let first = trunc_usize(x.0).min(n - 1);
        // `add`'s last column is `first` when ⌈x1⌉ ≤ first + 1, i.e. x1 ≤ first + 1
        if first + 1 < n && x.1 > col_f64(first + 1) {
            return None;
        }
        let o = self.overlap(x, first);
        (o > 0.0).then_some((first, o))
    }

    /// Stretch `[a, b)` (ticks from the run's start) of call path `c`, split as `parts`.
    fn add(&mut self, a: u64, b: u64, c: u32, parts: &[(u8, f64)]) {
        let n = self.fine.len();
        let x = self.span(a, b);
        let first = trunc_usize(x.0).min(n - 1);
        let last = (ceil_usize(x.1).max(first + 1) - 1).min(n - 1);
        for col in first..=last {
            let o = self.overlap(x, col);
            if o <= 0.0 {
                continue;
            }
            let f = &mut self.fine[col];
            for &(k, s) in parts {
                f.t[usize::from(k & 15)] += (o * s) as f32;
            }
            f.longest(o, c);
        }
    }

    /// `add` of a stretch of class `k` whole (`parts` = [(k, 1.0)]) spanning the column
    /// fractions `x` (`span`).
    #[inline(always)]
    fn add_whole(&mut self, x: (f64, f64), c: u32, k: usize) {
        let n = self.fine.len();
        let first = trunc_usize(x.0).min(n - 1);
        // one column (`single`'s test; `add`'s last column is then `first`)
        if first + 1 >= n || x.1 <= col_f64(first + 1) {
            let o = self.overlap(x, first);
            if o > 0.0 {
                self.fine[first].put(k, o, c);
            }
            return;
        }
        let last = (ceil_usize(x.1).max(first + 1) - 1).min(n - 1);
        for (col, f) in self.fine[first..=last].iter_mut().enumerate() {
            let (c0, c1) = (col_f64(first + col), col_f64(first + col) + 1.0);
            // `overlap`
            let d = if x.1 < c1 { x.1 } else { c1 } - if x.0 > c0 { x.0 } else { c0 };
            if d > 0.0 && d * self.width > 0.0 {
                f.put(k, d * self.width, c);
            }
        }
    }

    /// `add_whole` of a stretch of class `k` spanning the column fractions `(x0, x1)` from
    /// column `col` (`col.lo ≤ x0 < col.hi`) into a later one before the last column's
    /// end (`col.hi < x1 < columns`): its columns are `col.col` to ⌈x1⌉ - 1 and its
    /// overlaps (`overlap`) `col.hi - x0` in the first, 1 in the whole ones, `x1 - last` in
    /// the last. The column `x1` lies in (`Col::of`).
    #[inline]
    fn cross(&mut self, col: Col, (x0, x1): (f64, f64), c: u32, k: usize) -> Col {
        let width = self.width;
        let put = |f: &mut Fine, d: f64| {
            if d > 0.0 && d * width > 0.0 {
                f.put(k, d * width, c);
            }
        };
        // ⌊x1⌋, exact: 0 < x1 < columns < 2^32
        let t = x1 as u32 as usize;
        let tf = col_f64(t);
        // the last column and its left edge (`tf - 1.0` exact: 1 < x1)
        let (last, lf) = if tf < x1 { (t, tf) } else { (t - 1, tf - 1.0) };
        if let [first, mid @ .., end] = &mut self.fine[col.col..=last] {
            put(first, col.hi - x0);
            for f in mid {
                put(f, 1.0);
            }
            put(end, x1 - lf);
        }
        Col {
            col: t,
            lo: tf,
            hi: col_f64(t + 1),
        }
    }

    /// Each level's row, coarsest first, and the call paths they name, in one pass over the
    /// finest columns. A coarser column's class sums are its finest columns' cells added one
    /// by one from 0 in column order: a level's running sum starts as a copy of its left
    /// half's sum (the finer level's, just complete) and goes on over its right half's
    /// cells (the additions of the finer level's sums, in their order, done once); its
    /// longest stretch is the first longest of its halves'. The classes read are `classes`
    /// (bit `k`: class `k`), those with positive ticks over the location (`positive`: a
    /// positive cell's term `o * s` has its stretch's `dt * s` positive), each column's
    /// read whole: a class never added to a column has 0.0 there, and adding 0.0 to a sum
    /// of ticks (never -0.0) leaves its bits.
    fn levels(&self, finest: u32, classes: u16) -> (Vec<Vec<u8>>, Vec<u32>) {
        let Classes(u, m) = Classes::of(classes);
        // the running sums as 4 lanes (the common case: few classes) or 16
        if m <= 4 {
            self.levels_in::<4>(finest, &u[..m])
        } else {
            self.levels_in::<16>(finest, &u[..m])
        }
    }

    /// `levels` over the classes `u` (ascending, at most `W`), each level's running sums
    /// as `W` lanes, lane `i` class `u[i]` (the lanes past `u` stay 0.0, unread).
    fn levels_in<const W: usize>(&self, finest: u32, u: &[usize]) -> (Vec<Vec<u8>>, Vec<u32>) {
        let cols = (finest as usize).min(self.fine.len());
        // the coarser levels: halved while wider than `COLUMNS` and even
        let mut coarse = 0usize;
        while (cols >> coarse) > COLUMNS as usize && (cols >> coarse) % 2 == 0 {
            coarse += 1;
        }
        let mut runs0 = Runs::new(self.width);
        // the coarser levels 1..=coarse (`up[l - 1]`)
        let mut up: Vec<Coarser<W>> = (1..=coarse)
            .map(|l| Coarser {
                run: [0.0f64; W],
                left: (0.0f32, NO_CNODE),
                runs: Runs::new(self.width * (1usize << l) as f64),
            })
            .collect();
        let adding = (1usize << coarse) - 1;
        // the classes as `first_max_of` names them
        let mut named = [0u8; W];
        for (n, &k) in named.iter_mut().zip(u) {
            *n = k as u8;
        }
        let named = &named[..u.len().min(W)];
        // every finest column up to `cols` (all of them when there is none)
        let end = if cols == 0 { self.fine.len() } else { cols };
        for (j, f) in self.fine[..end].iter().enumerate() {
            let mut cell = [0.0f64; W];
            for (x, &k) in cell.iter_mut().zip(u) {
                *x = f.t[k & 15] as f64;
            }
            let best = f.best;
            runs0.push(first_max_of(named, &cell), best);
            // the levels whose right half column `j` is in (bit l - 1 of `j` set)
            let mut bits = j & adding;
            while bits != 0 {
                let l = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(c) = up.get_mut(l) {
                    for (x, &v) in c.run.iter_mut().zip(&cell) {
                        *x += v;
                    }
                }
            }
            // the levels whose column ends at `j` (the low bits of `j` all set), finer first
            let ends = (!j).trailing_zeros() as usize;
            let mut b = best;
            for c in up.iter_mut().take(ends) {
                b = if b.0 > c.left.0 { b } else { c.left };
                c.runs.push(first_max_of(named, &c.run), b);
            }
            // the next level's left half is complete: its running sum starts as a copy
            if ends < coarse {
                let run = if ends == 0 { cell } else { up[ends - 1].run };
                up[ends].left = b;
                up[ends].run = run;
            }
        }
        let mut per_level = Vec::with_capacity(coarse + 1);
        let mut used = Vec::new();
        for runs in up.into_iter().rev().map(|c| c.runs).chain([runs0]) {
            let (row, named) = runs.out();
            per_level.push(row);
            used.extend(named);
        }
        used.sort_unstable();
        used.dedup();
        (per_level, used)
    }
}

/// A coarser level of `Acc::levels` as its columns fill: the running sums of its current
/// column, the longest stretch of that column's left half, and its row.
struct Coarser<const W: usize> {
    run: [f64; W],
    left: (f32, u32),
    runs: Runs,
}

/// The classes whose ticks are positive (`pos`, per class), as bits (`Acc::levels`).
fn positive(pos: impl Iterator<Item = bool>) -> u16 {
    let mut m = 0u16;
    for (k, p) in pos.enumerate().take(16) {
        if p {
            m |= 1 << k;
        }
    }
    m
}

/// The classes a mask sets, lowest first, and how many (`Acc::levels`).
struct Classes([usize; 16], usize);

impl Classes {
    fn of(mut mask: u16) -> Classes {
        let mut out = Classes([0; 16], 0);
        while let Some(k) = next_bit(&mut mask) {
            out.0[out.1] = k;
            out.1 += 1;
        }
        out
    }
}

/// The first largest of the class sums `sums` (of the classes `u`, ascending) and its
/// class; (15, 0.0) when none is positive (`dominant`'s choice: the classes not set are
/// 0.0).
#[inline(always)]
fn first_max_of(u: &[u8], sums: &[f64]) -> (u8, f64) {
    let mut best = (15u8, 0.0f64);
    for (&k, &x) in u.iter().zip(sums) {
        if x > best.1 {
            best = (k, x);
        }
    }
    best
}

/// The lowest bit set in `m`, cleared (the classes of a `mask` one by one, lowest first).
#[inline(always)]
fn next_bit(m: &mut u16) -> Option<usize> {
    if *m == 0 {
        return None;
    }
    let k = m.trailing_zeros() as usize;
    *m &= *m - 1;
    Some(k)
}

/// A finest column `col` with its edges as column fractions `[lo, hi]` (`Acc::span`); a
/// span within them lies in that column alone (`Acc::add_whole`'s one column).
#[derive(Clone, Copy)]
struct Col {
    col: usize,
    lo: f64,
    hi: f64,
}

impl Col {
    /// No column: no span lies within it.
    const NONE: Col = Col {
        col: 0,
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    /// The column of fraction `x` of `n` columns (the one `add_whole` starts a span at `x`
    /// in: truncated, at most the last); `NONE` past the last column's edge.
    #[inline]
    fn of(x: f64, n: usize) -> Col {
        let col = trunc_usize(x);
        if col >= n {
            return Col::NONE;
        }
        Col {
            col,
            lo: col_f64(col),
            hi: col_f64(col + 1),
        }
    }
}

/// One level's row as its columns come (of `len` ticks each): runs of equal (cell, call
/// path + 1) (`Level`).
struct Runs {
    len: f64,
    out: Vec<u8>,
    /// The current run: cell, call path + 1, length (0: none yet).
    run: (u8, u32, u32),
    /// The call paths the runs written name (a call path once per run: the caller sorts and
    /// deduplicates).
    used: Vec<u32>,
    /// A share in percent in sixteenths, once per percent.
    sixteenths: [u8; 101],
}

impl Runs {
    fn new(len: f64) -> Runs {
        Runs {
            len,
            out: Vec::new(),
            run: (0, 0, 0),
            used: Vec::new(),
            sixteenths: std::array::from_fn(|pct| {
                (pct as f64 * 15.0 / 100.0).round().clamp(1.0, 15.0) as u8
            }),
        }
    }

    /// The next column: its first largest class sum `(k, t)` (`first_max_of`) and its longest
    /// stretch `best`.
    #[inline(always)]
    fn push(&mut self, (k, t): (u8, f64), best: (f32, u32)) {
        let cell = if k == 15 {
            0xF0
        } else {
            k << 4 | self.sixteenths[round_pct(100.0 * t / self.len) as usize]
        };
        let cn = if best.1 == NO_CNODE { 0 } else { best.1 + 1 };
        if self.run.2 > 0 && self.run.0 == cell && self.run.1 == cn {
            self.run.2 += 1;
        } else {
            if self.run.2 > 0 {
                self.write();
            }
            self.run = (cell, cn, 1);
        }
    }

    /// The current run written, its call path (if any) to `used`.
    fn write(&mut self) {
        push_run(&mut self.out, self.run);
        if self.run.1 != 0 {
            self.used.push(self.run.1 - 1);
        }
    }

    /// The row and the call paths it names (each once per run).
    fn out(mut self) -> (Vec<u8>, Vec<u32>) {
        if self.run.2 > 0 {
            self.write();
        }
        (self.out, self.used)
    }
}

/// `x.ceil() as usize` for `x ≥ 0` (saturating like the cast), without a call to libm's
/// `ceil` per stretch (the target has no rounding instruction): the same value.
#[inline]
fn ceil_usize(x: f64) -> usize {
    let t = trunc_usize(x);
    if (t as f64) < x {
        t.saturating_add(1)
    } else {
        t
    }
}

fn push_run(out: &mut Vec<u8>, (cell, cnode, n): (u8, u32, u32)) {
    out.push(cell);
    varint(out, cnode);
    varint(out, n);
}

fn varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_double_within_the_budget() {
        assert_eq!(level_columns(16, 1 << 40), [1024, 2048, 4096, 8192, 16384]);
        assert_eq!(level_columns(64, 1 << 40), [1024, 2048, 4096]);
        assert_eq!(level_columns(1, 500), [500]);
    }

    #[test]
    fn ceil_usize_is_the_cast_of_ceil() {
        for x in [
            0.0,
            0.25,
            1.0,
            1.5,
            2.999,
            3.0,
            16383.99,
            1e17,
            1e300,
            f64::MAX,
        ] {
            assert_eq!(ceil_usize(x), x.ceil() as usize, "{x}");
        }
    }

    /// `walk_whole` gives `walk_parts`' values to the bit, on every location of every
    /// shipped trace it takes (as a big trace would: no pieces kept).
    #[test]
    fn a_whole_walk_is_the_split_walk() {
        let mut compared = 0;
        for (group, file) in [
            ("scorep", "traces.otf2"),
            ("scorep-omp", "traces.otf2"),
            ("generated", "traces.otf2"),
            ("smpi", "trace.paje"),
        ] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("testdata")
                .join(group);
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let path = e.path().join(file);
                if !path.exists() {
                    continue;
                }
                let trace = crate::formats::open(&path).unwrap();
                let replay = Replay::new(&trace);
                let (t0, t1) = trace.time_span().unwrap_or((0, 0));
                let win = super::super::traffic::windows(&[], t0, t1);
                let tl = Timeline::new(&trace, &replay, 7, (t0, t1), u64::MAX, &win.bounds);
                for l in 0..trace.events.len() {
                    let Some(whole) = tl.walk_whole(l) else {
                        continue;
                    };
                    let parts = tl.walk_parts(l, &[]);
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&whole.by_class), bits(&parts.by_class), "{path:?} {l}");
                    assert_eq!(whole.rows, parts.rows, "{path:?} {l}");
                    assert_eq!(whole.states, parts.states, "{path:?} {l}");
                    assert_eq!(whole.used, parts.used, "{path:?} {l}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 100, "{compared}");
    }

    /// `levels` by the definition: each coarser column's class sums its finest cells added
    /// one by one from 0 in column order, its longest stretch the first longest of them.
    fn levels_by_definition(acc: &Acc) -> (Vec<Vec<u8>>, Vec<u32>) {
        let n = acc.fine.len();
        let mut coarse = 0;
        while (n >> coarse) > COLUMNS as usize && (n >> coarse) % 2 == 0 {
            coarse += 1;
        }
        let (mut rows, mut used) = (Vec::new(), Vec::new());
        for l in 0..=coarse {
            let g = 1usize << l;
            let mut runs = Runs::new(acc.width * g as f64);
            for c in 0..n / g {
                let (mut s, mut best) = ([0.0f64; 16], acc.fine[c * g].best);
                for f in &acc.fine[c * g..(c + 1) * g] {
                    for (x, &t) in s.iter_mut().zip(&f.t) {
                        *x += t as f64;
                    }
                    if f.best.0 > best.0 {
                        best = f.best;
                    }
                }
                let all: Vec<u8> = (0..16).collect();
                runs.push(first_max_of(&all, &s), best);
                // every column's call path, not the runs' (`Runs::out`)
                if best.1 != NO_CNODE {
                    used.push(best.1);
                }
            }
            rows.push(runs.out().0);
        }
        rows.reverse();
        used.sort_unstable();
        used.dedup();
        (rows, used)
    }

    /// The one pass of `levels` gives the sums, shares and call paths of the definition, to
    /// the bit: few classes (4 lanes) and many (16), ties of the longest stretches, empty
    /// columns, a width that is not a power of two.
    #[test]
    fn levels_are_their_definition() {
        // a 64-bit linear congruential generator's high bits
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = (state.wrapping_mul(6_364_136_223_846_793_005)).wrapping_add(1);
            state >> 29
        };
        for (cols, classes) in [(8192usize, 0b1011u16), (4096, 0x7f), (3000, 0b11), (700, 1)] {
            let mut acc = Acc::new(7, cols, 13.7);
            for f in acc.fine.iter_mut() {
                if next() % 5 == 0 {
                    continue;
                }
                for k in 0..16 {
                    if classes & (1 << k) != 0 && next() % 3 != 0 {
                        // ticks of very different sizes: the sums round
                        let x = (next() % 1_000_000) as f32 / 7.0;
                        f.put(
                            k,
                            (x / (1 + next() % 1000) as f32) as f64,
                            (next() % 9) as u32,
                        );
                    }
                }
            }
            assert_eq!(
                acc.levels(cols as u32, classes),
                levels_by_definition(&acc),
                "{cols}"
            );
        }
    }

    #[test]
    fn a_stretch_is_split_over_columns_and_classes() {
        let mut acc = Acc::new(2, 4, 10.0);
        // 5..25 ticks: half a column, a whole one, half a column; a quarter waiting
        acc.add(5, 25, 7, &[(0, 0.75), (1, 0.25)]);
        let time: Vec<f32> = acc.fine.iter().flat_map(|f| f.t[..2].to_vec()).collect();
        assert_eq!(time, [3.75, 1.25, 7.5, 2.5, 3.75, 1.25, 0.0, 0.0]);
        assert_eq!(acc.fine[1].best, (10.0, 7));
        let (rows, used) = acc.levels(4, 0b11);
        assert_eq!(used, [7]);
        // one level (4 columns ≤ COLUMNS): class 0 at 6/16 share (37.5 % rounds to 6),
        // then 12/16, 6/16, then no data
        assert_eq!(rows, [vec![0x06, 8, 1, 0x0B, 8, 1, 0x06, 8, 1, 0xF0, 0, 1]]);
    }
}
