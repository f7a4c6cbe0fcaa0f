//! The cube the passes fill (metric x call path x location, patterns.md §4) with the
//! instance statistics and worst instances of each finding, and the final step that makes
//! it the `Analysis`: the metrics in report order over the metric tree, the statistics as maps.

use crate::model::{Paradigm, Trace};
use crate::replay::{Replay, NONE};
use crate::rules::{Rule, RuleSet, Trigger};
use std::collections::HashMap;
use std::sync::Arc;

/// One value a rule instance adds to the cube.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Contribution {
    pub(crate) rule: u16,
    pub(crate) cnode: u32,
    pub(crate) loc: u32,
    /// The event of `loc` the value is attributed to (the rule's `at`); NONE for class time.
    pub(crate) event: u32,
    pub(crate) value: f64,
    /// Touched by a clock-condition violation (§6.2).
    pub(crate) cc: bool,
    /// From a reconstructed collective instance (§5.4, §6.2 `sev_rec`).
    pub(crate) rec: bool,
}

/// What the passes add to the cube (`Cube::add`).
#[derive(Clone, Copy)]
pub(crate) enum Found<'a> {
    One(&'a Contribution),
    /// A pass's own (rule, call path) cell on the given location.
    Own(&'a Cell, u32),
    /// The clock-touched share of one instance of (rule, call path).
    Cc(u16, u32, f64),
    /// `One`, with the tick of its event given (gathered from the process holding it:
    /// `run --mpi`).
    Timed(&'a Contribution, u64),
}

/// Per finding (metric, call path): instances and their clock-touched share (§6.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FindingStats {
    pub n: u64,
    pub sev_cc: f64,
    /// Severity from reconstructed collective instances (§6.2).
    pub sev_rec: f64,
}

/// How many of its worst instances each finding keeps.
pub const WORST_K: usize = 5;

/// One instance of a finding: where, when (the tick of the event its value is attributed
/// to, the rule's `at`) and how much (in the metric's unit).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Instance {
    pub loc: u32,
    pub event: u32,
    pub time: u64,
    pub value: f64,
}

impl Instance {
    /// Worse first: larger value, then lower location, earlier time, lower event index — a
    /// total order, so the kept instances do not depend on the order they were offered in.
    #[inline]
    fn worse_than(&self, o: &Instance) -> bool {
        // `total_cmp` finds two values equal exactly when their bits are
        if self.value.to_bits() == o.value.to_bits() {
            return (self.loc, self.time, self.event) < (o.loc, o.time, o.event);
        }
        self.value.total_cmp(&o.value) == std::cmp::Ordering::Greater
    }
}

/// The `WORST_K` worst instances of one finding, worst first (a bounded insertion list).
#[derive(Clone, Copy, Debug, Default)]
pub struct Worst {
    n: u8,
    items: [Instance; WORST_K],
}

impl Worst {
    #[inline]
    pub fn offer(&mut self, x: Instance) {
        self.offer_kept(x);
    }

    /// `offer`, telling whether `x` was kept. A refused `x` stays refused with every
    /// instance of the same value ranked after it (same location, no earlier time, a later
    /// event): the list only ever holds worse-ranked instances than when it refused `x`.
    #[inline]
    fn offer_kept(&mut self, x: Instance) -> bool {
        if self.n as usize == WORST_K {
            let last = &self.items[WORST_K - 1];
            // a smaller number is never worse (where `<` holds, `total_cmp` agrees)
            if x.value < last.value || !x.worse_than(last) {
                return false;
            }
        }
        self.insert(x);
        true
    }

    /// `offer` of an instance that is kept.
    #[inline(never)]
    fn insert(&mut self, x: Instance) {
        let n = self.n as usize;
        // shift the better-ranked ones down until x's place
        let mut i = n.min(WORST_K - 1);
        while i > 0 && x.worse_than(&self.items[i - 1]) {
            self.items[i] = self.items[i - 1];
            i -= 1;
        }
        self.items[i] = x;
        if n < WORST_K {
            self.n += 1;
        }
    }

    pub fn instances(&self) -> &[Instance] {
        &self.items[..self.n as usize]
    }
}

/// Clock-condition violations (patterns.md §7.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Violations {
    /// Messages whose send is later than their receive.
    pub p2p: u64,
    /// (instance, member) pairs where the member ended before the reference begin time.
    pub collective: u64,
    /// The largest point-to-point violation in seconds.
    pub max_p2p_s: f64,
    /// Locations touched by any violation.
    pub locations: u64,
}

/// The analysed trace: every metric's values per call path and location.
/// A wait state of a rule with a point-to-point `[cause]` (docs/rules.md, "Wait states with
/// a cause"): where the stored instance was booked, and the event of the other process it
/// waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CausedWait {
    pub rule: u16,
    pub loc: u32,
    pub event: u32,
    /// (location, event) of the partner (`[cause] partner`).
    pub partner: (u32, u32),
}

/// A collective instance (an index into the replay's instances) that a rule with a
/// collective `[cause]` accepted (its `when` held).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct CausedColl {
    pub instance: u32,
    pub rule: u16,
}

pub struct Analysis {
    /// Metric ids in report order (depth-first over the metric tree), omitted ones left out.
    pub order: Vec<usize>,
    /// `values[rule][cnode * nloc + loc]` (exclusive in call paths, inclusive in metrics).
    pub values: Vec<Vec<f64>>,
    pub stats: Vec<HashMap<u32, FindingStats>>,
    /// Per rule, per call path: the worst instances (only metrics computed by instances).
    pub worst: Vec<HashMap<u32, Worst>>,
    pub violations: Violations,
    pub nloc: usize,
    pub ncnode: usize,
    pub rules: RuleSet,
    /// The instances of rules with a `[cause]`, sorted: point-to-point by (location, event,
    /// rule), collective by (instance, rule).
    pub waits: Vec<CausedWait>,
    pub colls: Vec<CausedColl>,
    /// With phase windows (`analyse_phased`): per window, the values of the wait-state
    /// rules booked in it, (rule, call path) → per location; empty without windows.
    pub phase_values: Vec<PhaseValues>,
}

/// The wait-state values of one phase window: (rule, call path) → value per location.
pub type PhaseValues = HashMap<(u16, u32), Vec<f64>>;

/// The phase windows the rule passes book wait-state instances into, by the time of the
/// event each instance is attributed to (its `at`, the event the cube books it at): window
/// `p` holds the times `bounds[p-1] <= t < bounds[p]` (the first from the start, the last to
/// the end).
#[derive(Debug)]
pub(crate) struct PhaseBook {
    /// The starts of the windows after the first, increasing.
    pub(crate) bounds: Vec<u64>,
    /// Per rule: whether it is a wait state (unit seconds, computed by a pattern).
    pub(crate) wait: Vec<bool>,
}

impl PhaseBook {
    /// The windows that start at `bounds` (after the first) for `rules`; none without bounds.
    pub(crate) fn new(rules: &[Rule], bounds: &[u64]) -> Option<Arc<PhaseBook>> {
        if bounds.is_empty() {
            return None;
        }
        let wait = (rules.iter())
            .map(|r| r.info.unit == crate::rules::Unit::Sec && is_pattern(r.on))
            .collect();
        Some(Arc::new(PhaseBook {
            bounds: bounds.to_vec(),
            wait,
        }))
    }

    /// The window of tick `t`.
    #[inline]
    pub(crate) fn window(&self, t: u64) -> usize {
        self.bounds.partition_point(|&b| b <= t)
    }
}

/// A cell's values per phase window (`Cell`), for the wait-state rules when windows are
/// booked.
pub(crate) struct CellPhases {
    book: Arc<PhaseBook>,
    sums: Vec<f64>,
}

impl Analysis {
    #[inline]
    pub fn value(&self, rule: usize, cnode: u32, loc: u32) -> f64 {
        self.values[rule][cnode as usize * self.nloc + loc as usize]
    }
}

/// One (rule, call path) finding of a pass's own location, accumulated while the pass walks.
pub(crate) struct Cell {
    pub(crate) rule: u16,
    pub(crate) cnode: u32,
    /// The values added in event order, starting from 0.0.
    sum: f64,
    n: u64,
    worst: Worst,
    /// The sums per phase window (in event order, from 0.0), when windows are booked and
    /// the rule is a wait state (`Cells::push`).
    phases: Option<Box<CellPhases>>,
}

impl Cell {
    #[inline(always)]
    pub(crate) fn new(rule: u16, cnode: u32) -> Cell {
        Cell {
            rule,
            cnode,
            sum: 0.0,
            n: 0,
            worst: Worst::default(),
            phases: None,
        }
    }

    /// A cell summed elsewhere (`run --mpi`: by the process owning its location): its
    /// sum, count and worst instances.
    pub(crate) fn from_parts(rule: u16, cnode: u32, sum: f64, n: u64, worst: &[Instance]) -> Cell {
        let mut c = Cell::new(rule, cnode);
        (c.sum, c.n) = (sum, n);
        worst.iter().for_each(|x| c.worst.offer(*x));
        c
    }

    /// The sum, count and worst instances (`from_parts` read back).
    pub(crate) fn parts(&self) -> (f64, u64, &[Instance]) {
        (self.sum, self.n, self.worst.instances())
    }

    /// The sums per phase window (empty without windows or for a rule that is no wait state).
    pub(crate) fn phase_sums(&self) -> &[f64] {
        self.phases.as_ref().map_or(&[], |ph| &ph.sums)
    }

    /// A cell summed elsewhere (`from_parts`) gets its sums per window `sums` (`phase_sums`
    /// read back) in the windows of `book`.
    pub(crate) fn set_phase_sums(&mut self, book: &Arc<PhaseBook>, sums: Vec<f64>) {
        self.phases = Some(Box::new(CellPhases {
            book: book.clone(),
            sums,
        }));
    }

    /// One more instance of the finding.
    #[inline(always)]
    pub(crate) fn add(&mut self, x: Instance) {
        self.add_kept(x);
    }

    /// `add`, telling whether the worst instances kept `x` (`Worst::offer_kept`).
    #[inline(always)]
    pub(crate) fn add_kept(&mut self, x: Instance) -> bool {
        self.sum += x.value;
        self.n += 1;
        let kept = self.worst.offer_kept(x);
        self.add_phase(x);
        kept
    }

    /// `add` of an instance the worst instances would refuse (of the same value as one
    /// they refused, ranked after it: `Worst::offer_kept`): its sums alone.
    #[inline(always)]
    pub(crate) fn add_refused(&mut self, x: Instance) {
        self.sum += x.value;
        self.n += 1;
        self.add_phase(x);
    }

    /// `x`'s value added to the sum of its phase window, when windows are booked.
    #[inline(always)]
    fn add_phase(&mut self, x: Instance) {
        if let Some(ph) = &mut self.phases {
            let p = ph.book.window(x.time);
            ph.sums[p] += x.value;
        }
    }
}

/// A location pass's cells (`Acc::cells`): a vector of `Cell` that gives each new cell of a
/// wait-state rule its sums per phase window when windows are booked.
#[derive(Default)]
pub(crate) struct Cells {
    cells: Vec<Cell>,
    book: Option<Arc<PhaseBook>>,
}

impl Cells {
    pub(crate) fn new(book: Option<Arc<PhaseBook>>) -> Cells {
        Cells {
            cells: Vec::new(),
            book,
        }
    }

    pub(crate) fn push(&mut self, mut c: Cell) {
        if let Some(book) = &self.book {
            if book.wait.get(c.rule as usize) == Some(&true) {
                c.phases = Some(Box::new(CellPhases {
                    book: book.clone(),
                    sums: vec![0.0; book.bounds.len() + 1],
                }));
            }
        }
        self.cells.push(c);
    }
}

impl std::ops::Deref for Cells {
    type Target = [Cell];
    fn deref(&self) -> &[Cell] {
        &self.cells
    }
}

impl std::ops::DerefMut for Cells {
    fn deref_mut(&mut self) -> &mut [Cell] {
        &mut self.cells
    }
}

/// What the passes found so far: `Analysis::values` (allocated per rule on its first
/// value), the instance statistics per (rule, call path) dense while adding, and the worst
/// instances of each finding.
pub(crate) struct Cube<'a> {
    trace: &'a Trace,
    /// The rules the cube is indexed by (those of the plan).
    rules: &'a [Rule],
    nloc: usize,
    ncnode: usize,
    /// `values[rule][cnode * nloc + loc]` (empty: no value yet).
    pub(crate) values: Vec<Vec<f64>>,
    /// Per rule, per call path (dense while adding; a map per rule in the result).
    dense_stats: Vec<Vec<FindingStats>>,
    /// Per rule, per call path: index + 1 into `worst` (0: none yet), so a finding's top-K
    /// is allocated once, on its first instance.
    worst_idx: Vec<Vec<u32>>,
    worst: Vec<(u16, u32, Worst)>,
    /// The instances of rules with a `[cause]` (`Analysis::waits`, `colls`).
    pub(crate) waits: Vec<CausedWait>,
    pub(crate) colls: Vec<CausedColl>,
    /// The phase windows booked (`set_windows`), and their values.
    book: Option<Arc<PhaseBook>>,
    phase_values: Vec<PhaseValues>,
}

impl<'a> Cube<'a> {
    /// An empty cube for `rules` over the call paths and locations of `trace`.
    pub(crate) fn new(trace: &'a Trace, replay: &Replay, rules: &'a [Rule]) -> Cube<'a> {
        let nrules = rules.len();
        Cube {
            trace,
            rules,
            nloc: trace.events.len(),
            ncnode: replay.tree.len(),
            values: vec![Vec::new(); nrules],
            dense_stats: vec![Vec::new(); nrules],
            worst_idx: vec![Vec::new(); nrules],
            worst: Vec::new(),
            waits: Vec::new(),
            colls: Vec::new(),
            book: None,
            phase_values: Vec::new(),
        }
    }

    /// Book the wait-state instances also per phase window: `bounds` are the starts of the
    /// windows after the first (none: no windows).
    pub(crate) fn set_windows(&mut self, bounds: &[u64]) {
        self.book = PhaseBook::new(self.rules, bounds);
        if self.book.is_some() {
            self.phase_values = vec![HashMap::new(); bounds.len() + 1];
        }
    }

    /// The phase windows booked, for the location passes' cells.
    pub(crate) fn book(&self) -> Option<Arc<PhaseBook>> {
        self.book.clone()
    }

    /// Adds `value` of (rule, call path, location) to window `p`.
    fn book_window(&mut self, p: usize, rule: u16, cnode: u32, loc: u32, value: f64) {
        let nloc = self.nloc;
        let row = (self.phase_values[p].entry((rule, cnode))).or_insert_with(|| vec![0.0; nloc]);
        row[loc as usize] += value;
    }

    /// Whether none of a pass's own `cells` of location `loc` has a value yet, so its sums
    /// can be added as they are (`Found::Own`), bit for bit the one-by-one sums.
    pub(crate) fn unwritten(&self, cells: &[Cell], loc: u32) -> bool {
        let nloc = self.nloc;
        cells.iter().all(|c| {
            self.values[c.rule as usize]
                .get(c.cnode as usize * nloc + loc as usize)
                .is_none_or(|v| *v == 0.0)
        })
    }

    pub(crate) fn nloc(&self) -> usize {
        self.nloc
    }

    pub(crate) fn ncnode(&self) -> usize {
        self.ncnode
    }

    /// Every instance of `found`, one by one, in order.
    pub(crate) fn add_all(&mut self, found: &[Contribution]) {
        for c in found {
            self.add(Found::One(c));
        }
    }

    /// Adds what the rules found to the cube, the instance counts and the worst instances:
    /// one instance, a pass's own sum for one (rule, call path) (the cube cell must still
    /// be 0.0, so the sum is bit for bit the one-by-one sum), or the clock-touched share of
    /// one.
    pub(crate) fn add(&mut self, f: Found) {
        let (ncnode, nloc) = (self.ncnode, self.nloc);
        let (rule, cnode) = match f {
            Found::One(c) | Found::Timed(c, _) => (c.rule, c.cnode),
            Found::Own(c, _) => (c.rule, c.cnode),
            Found::Cc(rule, cnode, v) => {
                let d = &mut self.dense_stats[rule as usize];
                if d.is_empty() {
                    d.resize(ncnode, FindingStats::default());
                }
                d[cnode as usize].sev_cc += v;
                return;
            }
        };
        let (loc, value) = match f {
            Found::One(c) | Found::Timed(c, _) => (c.loc, c.value),
            Found::Own(c, loc) => (loc, c.sum),
            Found::Cc(..) => return,
        };
        let v = &mut self.values[rule as usize];
        if v.is_empty() {
            v.resize(ncnode * nloc, 0.0);
        }
        v[cnode as usize * nloc + loc as usize] += value;
        if let Some(book) = &self.book {
            if book.wait[rule as usize] {
                self.book_windows(f, rule, cnode, loc);
            }
        }
        // instance counts exist only for pattern instances, not for class time (§6.2)
        if self.rules[rule as usize].on == Trigger::Callpath {
            return;
        }
        let d = &mut self.dense_stats[rule as usize];
        if d.is_empty() {
            d.resize(ncnode, FindingStats::default());
        }
        let s = &mut d[cnode as usize];
        let one;
        let offers: &[Instance] = match f {
            Found::One(c) | Found::Timed(c, _) => {
                s.n += 1;
                if c.cc {
                    s.sev_cc += c.value;
                }
                if c.rec {
                    s.sev_rec += c.value;
                }
                if c.event == NONE {
                    return;
                }
                let time = match f {
                    Found::Timed(_, t) => t,
                    _ => self.trace.events[c.loc as usize].time.get(c.event as usize),
                };
                one = [Instance {
                    loc: c.loc,
                    event: c.event,
                    time,
                    value: c.value,
                }];
                &one
            }
            Found::Own(c, _) => {
                s.n += c.n;
                c.worst.instances()
            }
            Found::Cc(..) => return,
        };
        let wi = &mut self.worst_idx[rule as usize];
        if wi.is_empty() {
            wi.resize(ncnode, 0);
        }
        let slot = &mut wi[cnode as usize];
        if *slot == 0 {
            self.worst.push((rule, cnode, Worst::default()));
            *slot = self.worst.len() as u32;
        }
        // the top K of a union is the top K of the parts' top Ks (a total order)
        for x in offers {
            self.worst[*slot as usize - 1].2.offer(*x);
        }
    }

    /// `add`'s booking of a wait-state instance (or a pass's own cell) in the windows.
    #[inline(never)]
    fn book_windows(&mut self, f: Found, rule: u16, cnode: u32, loc: u32) {
        let Some(book) = self.book.clone() else {
            return;
        };
        match f {
            Found::One(c) if c.event != NONE => {
                let t = self.trace.events[c.loc as usize].time.get(c.event as usize);
                self.book_window(book.window(t), rule, cnode, loc, c.value);
            }
            Found::Timed(c, t) if c.event != NONE => {
                self.book_window(book.window(t), rule, cnode, loc, c.value);
            }
            Found::Own(c, _) => {
                for (p, &v) in c.phases.iter().flat_map(|ph| ph.sums.iter().enumerate()) {
                    if v != 0.0 {
                        self.book_window(p, rule, cnode, loc, v);
                    }
                }
            }
            _ => {}
        }
    }

    /// The analysis: every metric's values (zeros where none), the statistics and worst
    /// instances as maps per rule, the metrics in report `order`.
    pub(crate) fn finish(
        self,
        order: Vec<usize>,
        violations: Violations,
        rules: RuleSet,
    ) -> Analysis {
        let (ncnode, nloc) = (self.ncnode, self.nloc);
        let mut values = self.values;
        for v in values.iter_mut() {
            if v.is_empty() {
                v.resize(ncnode * nloc, 0.0);
            }
        }
        let stats: Vec<HashMap<u32, FindingStats>> = self
            .dense_stats
            .into_iter()
            .map(|d| {
                d.into_iter()
                    .enumerate()
                    .filter(|(_, s)| s.n > 0)
                    .map(|(c, s)| (c as u32, s))
                    .collect()
            })
            .collect();
        let mut worst_map: Vec<HashMap<u32, Worst>> = vec![HashMap::new(); self.rules.len()];
        for (k, c, w) in self.worst {
            worst_map[k as usize].insert(c, w);
        }
        let mut waits = self.waits;
        waits.sort_by_key(|w| (w.loc, w.event, w.rule));
        let mut colls = self.colls;
        colls.sort_unstable();
        Analysis {
            order,
            values,
            stats,
            worst: worst_map,
            violations,
            nloc,
            ncnode,
            rules,
            waits,
            colls,
            phase_values: self.phase_values,
        }
    }
}

/// Whether rules on `on` are patterns with instances of their own (not class time, sums or
/// derived metrics): with unit seconds, their metrics are wait states (`scores::Finding`).
pub(crate) fn is_pattern(on: Trigger) -> bool {
    !matches!(on, Trigger::Callpath | Trigger::Sum | Trigger::Derived)
}

/// Report order: depth-first over the metric tree (`children` per rule), siblings by
/// `order`; metrics of a paradigm the trace lacks are omitted with their subtree (§1.1.6).
pub(crate) fn report_order(trace: &Trace, rules: &[Rule], children: &[Vec<usize>]) -> Vec<usize> {
    let nrules = rules.len();
    let has_paradigm = |p: &str| {
        let want = match p {
            "mpi" => Paradigm::MPI,
            "openmp" => Paradigm::OPENMP,
            _ => return true,
        };
        trace.defs.regions.iter().any(|r| r.paradigm == want)
    };
    let mut roots: Vec<usize> = (0..nrules)
        .filter(|&k| rules[k].info.parent.is_none())
        .collect();
    let sort = |v: &mut Vec<usize>| v.sort_by_key(|&k| (rules[k].info.order, k));
    sort(&mut roots);
    let mut order = Vec::new();
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(k) = stack.pop() {
        if rules[k]
            .info
            .paradigm
            .as_deref()
            .is_some_and(|p| !has_paradigm(p))
        {
            continue;
        }
        order.push(k);
        let mut kids = children[k].clone();
        sort(&mut kids);
        stack.extend(kids.into_iter().rev());
    }
    order
}

impl Violations {
    /// §7.1: the replay's point-to-point violations, and the collective ones once per
    /// (instance, member) as the passes found them (`coll_violators`: each one's location),
    /// whichever rules saw them.
    pub(crate) fn of(trace: &Trace, replay: &Replay, coll_violators: &[u32]) -> Violations {
        let m = replay.matching;
        let touched: std::collections::BTreeSet<u32> = coll_violators
            .iter()
            .chain(&replay.p2p_violators)
            .copied()
            .collect();
        Violations {
            collective: coll_violators.len() as u64,
            p2p: m.clock_violations,
            max_p2p_s: m.max_violation_ticks as f64 / trace.timer_resolution as f64,
            locations: touched.len() as u64,
        }
    }
}
