//! The EARL-style replay (patterns.md §5): call stacks and the global call tree, enter/exit
//! pairing (`enterptr`/`exitptr`), exclusive time and visits (§3), repairs of unbalanced
//! streams (§3.4). Pass A of §5.5 runs in parallel over locations.

pub mod calltree;
pub mod collectives;
pub mod matching;
pub mod omp;

use crate::model::spill::Column;
use crate::model::times::Cursor;
use crate::model::{EventKind, Events, RegionIdx, TimesRef, Trace};
use calltree::{CallTree, CnodeIdx, LocalTree, NO_CNODE};
use rayon::prelude::*;

/// No event (an absent pointer).
pub const NONE: u32 = u32::MAX;

/// What pass A leaves for one location.
///
/// The pointers of §5.1 are one column: `ptr[i]` is, for an ENTER, its LEAVE (`i` itself
/// when it has none), and for any other event the ENTER of the enclosing instance (`NONE`
/// outside any region). An ENTER's LEAVE comes after it and an enclosing ENTER before the
/// event, so `enterptr`/`exitptr` follow from the one column (4 bytes an event, not 8).
/// Read them with [`LocationState::enterptr`], [`LocationState::exitptr`] and
/// [`LocationState::cnode`].
#[derive(Clone, Debug, Default)]
pub struct LocationState {
    /// On the heap, or with `--memory-limit` in the spill file beside the location's events.
    ptr: Column<u32>,
    /// The call path of the region instance enclosing each event (for an ENTER the call
    /// path it opens, for a LEAVE the one it closes); `NO_CNODE` outside any region.
    cnode: CnodeColumn,
    /// Exclusive time per call path in ticks (indexed by global call path).
    pub time: Vec<u64>,
    pub visits: Vec<u64>,
    /// Instances closed by a repair (§3.4), per call path.
    pub repairs: Vec<u64>,
    /// Events whose timestamp went backwards and was clamped (§3.4.5).
    pub clamped: u64,
    /// Measurement pauses (MEASUREMENT_OFF … ON): their time is attributed to nothing (§3.2).
    pub gaps: u64,
    /// Inclusive time per call path in ticks (the sum of `time` over its subtree).
    pub incl: Vec<u64>,
}

impl LocationState {
    /// `enterptr(i)`: the ENTER of the region instance enclosing event `i` (for an ENTER
    /// itself; `NONE` outside any region).
    #[inline]
    pub fn enterptr(&self, i: usize) -> u32 {
        self.view().enterptr(i)
    }

    /// `exitptr(i)` for an ENTER: its LEAVE (`NONE` if the stream ended or was repaired
    /// without one; then the instance closed at the time given by the repair). `NONE` for
    /// every other event.
    #[inline]
    pub fn exitptr(&self, i: usize) -> u32 {
        self.view().exitptr(i)
    }

    /// The call path of the region instance enclosing event `i` (for an ENTER the call path
    /// it opens, for a LEAVE the one it closes); `NO_CNODE` outside any region.
    #[inline]
    pub fn cnode(&self, i: usize) -> CnodeIdx {
        self.view().cnode(i)
    }

    /// The pointer and call-path columns as slices, taken once for many reads (a walk over
    /// the location's events): the same `enterptr`, `exitptr` and `cnode`.
    #[inline]
    pub fn view(&self) -> LocView<'_> {
        LocView {
            ptr: &self.ptr,
            cnode: match &self.cnode {
                CnodeColumn::Narrow(v) => CnodeSlice::Narrow(v),
                CnodeColumn::Wide(v) => CnodeSlice::Wide(v),
            },
        }
    }

    /// How many events the columns cover.
    pub fn len(&self) -> usize {
        self.ptr.len()
    }

    /// A state from its pointer and call-path columns alone (`distributed::ghost`: the
    /// columns of another process's events, renumbered): `ptr[i]` is an ENTER's LEAVE (or
    /// `i` itself without one), another event's ENTER, or `NONE`.
    pub fn from_columns(ptr: Vec<u32>, cnode: Vec<CnodeIdx>) -> LocationState {
        LocationState {
            ptr: Column::from(ptr),
            cnode: CnodeColumn::Wide(Column::from(cnode)),
            ..Default::default()
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ptr.is_empty()
    }
}

/// A location's pointer and call-path columns as slices (`LocationState::view`).
#[derive(Clone, Copy, Debug)]
pub struct LocView<'a> {
    ptr: &'a [u32],
    cnode: CnodeSlice<'a>,
}

/// The call-path column as it is stored (`LocView::cnodes`, for a walk's own loop over
/// it): 2 bytes an event, `NO_CNODE` stored as `u16::MAX` (a narrow column's call tree has
/// fewer than 65,535 call paths, so that is no call path's index), or 4 bytes.
#[derive(Clone, Copy, Debug)]
pub enum CnodeSlice<'a> {
    Narrow(&'a [u16]),
    Wide(&'a [u32]),
}

impl<'a> LocView<'a> {
    /// The call-path column as it is stored (`cnode(i)` reads it).
    #[inline]
    pub fn cnodes(&self) -> CnodeSlice<'a> {
        self.cnode
    }
}

impl LocView<'_> {
    /// `LocationState::enterptr`.
    #[inline]
    pub fn enterptr(&self, i: usize) -> u32 {
        match self.ptr[i] {
            NONE => NONE,
            p if p as usize >= i => i as u32,
            p => p,
        }
    }

    /// `LocationState::exitptr`.
    #[inline]
    pub fn exitptr(&self, i: usize) -> u32 {
        match self.ptr[i] {
            NONE => NONE,
            p if p as usize > i => p,
            _ => NONE,
        }
    }

    /// `LocationState::cnode`.
    #[inline]
    pub fn cnode(&self, i: usize) -> CnodeIdx {
        match self.cnode {
            CnodeSlice::Narrow(v) => match v[i] {
                NARROW_NONE => NO_CNODE,
                c => c as CnodeIdx,
            },
            CnodeSlice::Wide(v) => v[i],
        }
    }
}

/// The call-path column: 2 bytes an event while the call tree has fewer than 65,535 call
/// paths (all traces we know), 4 bytes otherwise.
#[derive(Clone, Debug)]
enum Cnodes {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for Cnodes {
    fn default() -> Cnodes {
        Cnodes::Narrow(Vec::new())
    }
}

const NARROW_NONE: u16 = u16::MAX;

/// The call-path column of a replayed location: `Cnodes` once merged, read-only, on the
/// heap or (`--memory-limit`) in the spill file.
#[derive(Clone, Debug)]
enum CnodeColumn {
    Narrow(Column<u16>),
    Wide(Column<u32>),
}

impl Default for CnodeColumn {
    fn default() -> CnodeColumn {
        CnodeColumn::Narrow(Column::new())
    }
}

impl CnodeColumn {
    fn spillable(&mut self) -> &mut dyn crate::model::spill::Spillable {
        match self {
            CnodeColumn::Narrow(v) => v,
            CnodeColumn::Wide(v) => v,
        }
    }
}

impl From<Cnodes> for CnodeColumn {
    fn from(c: Cnodes) -> CnodeColumn {
        match c {
            Cnodes::Narrow(v) => CnodeColumn::Narrow(v.into()),
            Cnodes::Wide(v) => CnodeColumn::Wide(v.into()),
        }
    }
}

impl Cnodes {
    /// A column of `n` call paths, each written later by `set` (in huge pages where it is
    /// large).
    fn zeroed(n: usize) -> Cnodes {
        Cnodes::Narrow(zeroed(n))
    }

    #[cfg(test)]
    fn get(&self, i: usize) -> CnodeIdx {
        match self {
            Cnodes::Narrow(v) => match v[i] {
                NARROW_NONE => NO_CNODE,
                c => c as CnodeIdx,
            },
            Cnodes::Wide(v) => v[i],
        }
    }

    /// Event `i`'s call path (`NO_CNODE`: none).
    #[inline(always)]
    fn set(&mut self, i: usize, c: CnodeIdx) {
        match self {
            Cnodes::Narrow(v) if c < NARROW_NONE as CnodeIdx => v[i] = c as u16,
            Cnodes::Narrow(_) => self.set_rare(i, c),
            Cnodes::Wide(v) => v[i] = c,
        }
    }

    /// `set` of `NO_CNODE`, or of a call path beyond 16 bits (the column widened first).
    #[cold]
    fn set_rare(&mut self, i: usize, c: CnodeIdx) {
        if c != NO_CNODE {
            self.widen();
        }
        match self {
            Cnodes::Narrow(v) => v[i] = NARROW_NONE,
            Cnodes::Wide(v) => v[i] = c,
        }
    }

    fn widen(&mut self) {
        if let Cnodes::Narrow(v) = self {
            let w = v
                .iter()
                .map(|&c| match c {
                    NARROW_NONE => NO_CNODE,
                    c => c as CnodeIdx,
                })
                .collect();
            *self = Cnodes::Wide(w);
        }
    }

    /// Local call-path ids to global ones (`map`), narrow when `ncn` global call paths fit.
    fn remap(&mut self, map: &[CnodeIdx], ncn: usize) {
        if ncn >= NARROW_NONE as usize {
            self.widen();
        }
        // the local ids are often the global ones already (one walk less over the column)
        let same = map.iter().enumerate().all(|(k, &g)| g as usize == k);
        match self {
            Cnodes::Narrow(v) => {
                let mut moved = (map.iter().enumerate().take(NARROW_NONE as usize))
                    .filter(|&(k, &g)| g as usize != k);
                let one = match (moved.next(), moved.next()) {
                    (Some((k, &g)), None) => Some((k as u16, g as u16)),
                    _ => None,
                };
                if let (true, Some((from, to))) = (ncn < NARROW_NONE as usize, one) {
                    // one call path renumbered (often where locations differ in one call):
                    // a compare and a select a value, many at a time
                    for c in v.iter_mut() {
                        let hit = ((*c == from) as u16).wrapping_neg();
                        *c ^= (*c ^ to) & hit;
                    }
                } else if ncn < NARROW_NONE as usize && !same {
                    // every 16-bit value's new one (`NARROW_NONE` stays): a load a call path,
                    // no branch and no bounds check
                    let mut to: Box<[u16; 1 << 16]> = Box::new([NARROW_NONE; 1 << 16]);
                    for (k, &g) in map.iter().enumerate().take(NARROW_NONE as usize) {
                        to[k] = g as u16;
                    }
                    for c in v.iter_mut() {
                        *c = to[*c as usize];
                    }
                }
            }
            Cnodes::Wide(v) => {
                if !same {
                    for c in v.iter_mut() {
                        if *c != NO_CNODE {
                            *c = map[*c as usize];
                        }
                    }
                }
                if ncn < NARROW_NONE as usize {
                    let n = v
                        .iter()
                        .map(|&c| match c {
                            NO_CNODE => NARROW_NONE,
                            c => c as u16,
                        })
                        .collect();
                    *self = Cnodes::Narrow(n);
                }
            }
        }
    }
}

/// The replay state over the whole trace.
#[derive(Clone, Debug, Default)]
pub struct Replay {
    pub tree: CallTree,
    pub locations: Vec<LocationState>,
    /// Per location, indexed like `Events::msg`: `sendptr`/`recvptr` and request links.
    pub msg_links: Vec<matching::MsgLinks>,
    pub matching: matching::MatchStats,
    /// Locations touched by point-to-point clock-condition violations (§7.1).
    pub p2p_violators: Vec<u32>,
    /// Locations with unmatched sends or receives (§5.3.4), ascending.
    pub unmatched_locations: Vec<u32>,
    /// Collective-operation instances (§5.4).
    pub instances: Vec<collectives::Instance>,
    pub collectives: collectives::CollStats,
    /// Threads: masters, teams, barrier instances, lock order (§5.6).
    pub omp: omp::OmpState,
}

struct PassA {
    local: LocalTree,
    state: LocationState,
    /// The call-path column with local ids, until the merge (`state.cnode` after it).
    cnode: Cnodes,
    /// Per local call path (before merging).
    time: Vec<u64>,
    visits: Vec<u64>,
    repairs: Vec<u64>,
    /// The location's blocking sides for matching, when asked.
    noted: matching::Noted,
}

/// What a worker thread needs from its master (§3.1.3): the master's stack at each fork,
/// and which regions are parallel regions.
struct Worker<'a> {
    forks: &'a [omp::ForkStack],
    kinds: &'a [omp::OmpRegion],
}

/// A call-stack frame: (region, local call path, index of the ENTER; `NONE` for a frame of
/// the master's stack that a worker inherits).
type Frame = (RegionIdx, CnodeIdx, u32);

/// Pass A over one location, event by event: the clock, the call stack of the active task,
/// the worker's inherited prefix, and the columns and per-call-path counts it fills.
struct Walk<'w> {
    worker: Option<Worker<'w>>,
    local: LocalTree,
    cnode: Cnodes,
    ptr: Vec<u32>,
    /// Per local call path.
    time: Vec<u64>,
    visits: Vec<u64>,
    repairs: Vec<u64>,
    stack: Vec<Frame>,
    /// One call stack per task (issue 13): `stack` is the active task's.
    tasks: omp::TaskStacks<Frame>,
    last_t: u64,
    clamped: u64,
    paused: bool,
    gaps: u64,
    /// §3.1.3: a worker's frames below `base` are its master's stack at the fork (entered
    /// by nobody here: no visits, no time); `by_enter`: the prefix was pushed at the ENTER
    /// of a parallel region (traces without THREAD_TEAM_BEGIN) and goes with its LEAVE.
    base: usize,
    by_enter: bool,
    /// The blocking sides of matching noted on the way (`matching::Noter`).
    noter: matching::Noter<'w>,
}

/// What pass A writes for one event: its pointer and its call path (`NONE`, `NO_CNODE`
/// outside any region).
type Cell = (u32, CnodeIdx);

const OUTSIDE: Cell = (NONE, NO_CNODE);

/// A column of `n` zeros (in huge pages where it is large): pass A writes each event's cell
/// once, in event order (an ENTER's pointer again at its LEAVE).
fn zeroed<T: Copy + Default>(n: usize) -> Vec<T> {
    // zeroed memory from the allocator: a large column's pages stay untouched (not resident)
    // until pass A writes them, as they would if it were pushed event by event
    let v = vec![T::default(); n];
    crate::model::spill::advise_huge_full(&v);
    v
}

/// Local call paths below which `Walk::plain` runs (its call-path column is narrow).
const PLAIN_NODES: usize = NARROW_NONE as usize;

/// What follows an ENTER in `Walk::plain`.
enum Leaf {
    /// Its LEAVE, at this time.
    Pair(u64),
    /// A point-to-point record of this kind, then its LEAVE at this time.
    Triple(EventKind, u64),
    /// Anything else.
    No,
}

/// Whether ENTER `i` (of region `arg`, at time `t`) opens a leaf instance: its LEAVE next,
/// or after one point-to-point record (MPI_SEND ..= MPI_REQUEST_CANCELLED), its events'
/// times in order (the next events' times read through `times`, the walk's cursor).
#[inline(always)]
fn leaf(
    times: &mut Cursor<'_>,
    (kinds, args): (&[EventKind], &[u32]),
    (i, arg, t): (usize, u32, u64),
) -> Leaf {
    let mut at = |j: usize| Some((*kinds.get(j)?, *args.get(j)?, times.try_get(j)?));
    let Some((k1, a1, t1)) = at(i + 1) else {
        return Leaf::No;
    };
    if t1 < t {
        return Leaf::No;
    }
    if k1 == EventKind::Leave && a1 == arg {
        return Leaf::Pair(t1);
    }
    let p2p = (EventKind::MpiSend as u8)..=(EventKind::MpiRequestCancelled as u8);
    match at(i + 2) {
        Some((EventKind::Leave, a2, t2)) if p2p.contains(&(k1 as u8)) && a2 == arg && t2 >= t1 => {
            Leaf::Triple(k1, t2)
        }
        _ => Leaf::No,
    }
}

/// Pass A over one location (`mpi` as `matching::mpi_regions` makes it: its blocking sides
/// noted for matching; empty: not).
fn pass_a<'w>(ev: &Events, worker: Option<Worker<'w>>, mpi: &'w [bool]) -> PassA {
    let mut w = Walk::new(ev, worker, mpi);
    // the three columns side by side
    let cols = (ev.time.view(), &ev.kind[..], &ev.arg[..]);
    let n = cols.0.len().min(cols.1.len()).min(cols.2.len());
    let mut i = 0;
    while i < n {
        if w.plain_ok() {
            i = w.plain(cols, i);
            if i >= n {
                break;
            }
        }
        let (t, kind, arg) = (w.clock(cols.0.get(i)), cols.1[i], cols.2[i]);
        let (p, c) = match kind {
            EventKind::ThreadTeamBegin if w.worker.is_some() && w.stack.is_empty() => {
                w.team_begin(t)
            }
            EventKind::ThreadTeamEnd if w.base > 0 && !w.by_enter => w.team_end(),
            EventKind::Enter => w.enter(i, arg, t),
            EventKind::Leave => w.leave(i, arg),
            kind => w.other(ev, i, kind),
        };
        w.ptr[i] = p;
        w.cnode.set(i, c);
        i += 1;
    }
    w.finish()
}

impl<'w> Walk<'w> {
    fn new(ev: &Events, worker: Option<Worker<'w>>, mpi: &'w [bool]) -> Walk<'w> {
        let n = ev.len();
        Walk {
            worker,
            local: LocalTree::default(),
            cnode: Cnodes::zeroed(n),
            ptr: zeroed(n),
            time: Vec::new(),
            visits: Vec::new(),
            repairs: Vec::new(),
            stack: Vec::new(),
            tasks: Default::default(),
            last_t: ev.time.first().unwrap_or(0),
            clamped: 0,
            paused: false,
            gaps: 0,
            base: 0,
            by_enter: false,
            noter: matching::Noter::new(mpi, ev.msg.peer.len()),
        }
    }

    /// Whether `plain` may run: no worker thread (no inherited frames), the implicit task,
    /// not paused, the call-path column narrow with room for new call paths.
    #[inline]
    fn plain_ok(&self) -> bool {
        self.worker.is_none()
            && self.base == 0
            && self.tasks.floor() == 0
            && !self.paused
            && matches!(self.cnode, Cnodes::Narrow(_))
            && self.time.len() < PLAIN_NODES
    }

    /// Pass A's common case from event `i` on, while `plain_ok` holds: ENTERs of call paths
    /// among the recent lookups, LEAVEs of the region on top of the stack and events that
    /// change no state, in time order, what `clock`, `enter`, `leave` and `other` do for
    /// them, with the stack's top and the clock in locals. Returns the first event it leaves
    /// to them (an ENTER of another or a new call path, a LEAVE that needs a search or a
    /// repair, or of a frame it did not push, a clock going backwards, a task event, a
    /// measurement pause).
    ///
    /// The frames it pushes are not in `stack`: each one's ENTER's pointer, open, holds the
    /// ENTER of the frame below it (`NONE`: none), the frame's region and call path are its
    /// ENTER's in the columns; a frame of `stack` is an ENTER whose pointer is itself. Those
    /// still open when it returns go onto `stack` (`Walk::unlink`).
    #[inline(never)]
    fn plain(
        &mut self,
        (times, kinds, args): (TimesRef<'_>, &[EventKind], &[u32]),
        mut i: usize,
    ) -> usize {
        let Cnodes::Narrow(cn) = &mut self.cnode else {
            return i;
        };
        let Some(recent) = self.local.recent() else {
            return i;
        };
        let n = (times.len().min(kinds.len()).min(args.len()))
            .min(self.ptr.len())
            .min(cn.len());
        let (kinds, args) = (&kinds[..n], &args[..n]);
        // the times read in order (and a leaf's next one or two ahead): a block's base held
        let mut times = times.prefix(n).cursor();
        let (cn, ptr) = (&mut cn[..n], &mut self.ptr[..n]);
        // the counts of every local call path (the recent lookups give no other)
        let nodes = self.time.len().min(self.visits.len());
        let (time, visits) = (&mut self.time[..nodes], &mut self.visits[..nodes]);
        let noter = &mut self.noter;
        // the top frame's ENTER and call path (`NONE`, `NO_CNODE`: the stack is empty; no
        // time counts to it, and it gives `OUTSIDE` as a cell)
        let (mut top, mut c_top) = self.stack.last().map_or((NONE, NO_CNODE), |f| (f.2, f.1));
        let mut last_t = self.last_t;
        while i < n {
            let (t, kind, arg) = (times.get(i), kinds[i], args[i]);
            if t < last_t {
                break;
            }
            // the time since the last event to the call path on top (`clock`), once the
            // event is known to be handled here
            let mut tick = |c: CnodeIdx| {
                if let Some(x) = time.get_mut(c as usize) {
                    *x += t - last_t;
                }
                last_t = t;
            };
            let (p, c) = match kind {
                EventKind::Enter => {
                    let Some(c) = calltree::recent_child(recent, c_top, arg) else {
                        break;
                    };
                    let Some(v) = visits.get_mut(c as usize) else {
                        break;
                    };
                    *v += 1;
                    tick(c_top);
                    // a leaf instance whole (the top unchanged after it): what the ENTER, a
                    // point-to-point record in it and its LEAVE would do one by one
                    match leaf(&mut times, (kinds, args), (i, arg, t)) {
                        Leaf::Pair(t1) => {
                            if let Some(x) = time.get_mut(c as usize) {
                                *x += t1 - t;
                            }
                            last_t = t1;
                            (ptr[i], cn[i]) = (i as u32 + 1, c as u16);
                            if let (Some(p), Some(q)) = (ptr.get_mut(i + 1), cn.get_mut(i + 1)) {
                                (*p, *q) = (i as u32, c as u16);
                            }
                            i += 2;
                            continue;
                        }
                        Leaf::Triple(k1, t2) => {
                            if let Some(x) = time.get_mut(c as usize) {
                                *x += t2 - t;
                            }
                            last_t = t2;
                            noter.note(k1, i + 1, arg);
                            let (p, q) = (ptr.get_mut(i..i + 3), cn.get_mut(i..i + 3));
                            if let (Some([p0, p1, p2]), Some([q0, q1, q2])) = (p, q) {
                                (*p0, *p1, *p2) = (i as u32 + 2, i as u32, i as u32);
                                (*q0, *q1, *q2) = (c as u16, c as u16, c as u16);
                            }
                            i += 3;
                            continue;
                        }
                        Leaf::No => {}
                    }
                    // the pointer links the frame below until the LEAVE
                    let below = top;
                    (top, c_top) = (i as u32, c);
                    (below, c as u16)
                }
                EventKind::Leave => {
                    // (the empty stack's `NONE` is no event)
                    let e = top as usize;
                    let (Some(&region), Some(&below)) = (args.get(e), ptr.get(e)) else {
                        break;
                    };
                    if region != arg || below == top {
                        break;
                    }
                    tick(c_top);
                    let c = c_top;
                    // the ENTER's own pointer: this LEAVE
                    if let Some(p) = ptr.get_mut(e) {
                        *p = i as u32;
                    }
                    top = below;
                    c_top = cn.get(below as usize).map_or(NO_CNODE, |&c| c as CnodeIdx);
                    (e as u32, c as u16)
                }
                EventKind::MeasurementOnOff => break,
                k if omp::is_task_kind(k) => break,
                _ => {
                    tick(c_top);
                    let region = args.get(top as usize).map_or(RegionIdx::MAX, |&r| r);
                    noter.note(kind, i, region);
                    // `NO_CNODE as u16` is `NARROW_NONE`
                    (top, c_top as u16)
                }
            };
            ptr[i] = p;
            cn[i] = c;
            i += 1;
        }
        self.last_t = last_t;
        self.unlink(top, args);
        i
    }

    /// The frames `plain` pushed and left open, from the top one's ENTER `top` down, onto
    /// `stack` (each ENTER's pointer itself again).
    fn unlink(&mut self, mut top: u32, args: &[u32]) {
        let Cnodes::Narrow(cn) = &self.cnode else {
            return;
        };
        let from = self.stack.len();
        while let Some(&below) = self.ptr.get(top as usize) {
            let e = top as usize;
            if below == top {
                break;
            }
            self.ptr[e] = top;
            let (Some(&region), Some(&c)) = (args.get(e), cn.get(e)) else {
                break;
            };
            self.stack.push((region, c as CnodeIdx, top));
            top = below;
        }
        self.stack[from..].reverse();
    }

    /// The event's time, clamped to the previous one (§3.4.5); the time since then goes to
    /// the call path on top of the stack (not while paused, not to an inherited frame).
    #[inline(always)]
    fn clock(&mut self, mut t: u64) -> u64 {
        if t < self.last_t {
            t = self.last_t;
            self.clamped += 1;
        }
        if let Some(&(_, c, _)) = self.stack.last() {
            if !self.paused && self.stack.len() > self.base {
                self.time[c as usize] += t - self.last_t;
            }
        }
        self.last_t = t;
        t
    }

    /// The local call path of `region` called from the top of the stack.
    #[inline(always)]
    fn call_path(&mut self, region: RegionIdx, t: u64) -> CnodeIdx {
        let parent = self.stack.last().map_or(NO_CNODE, |s| s.1);
        let c = self.local.child(parent, region, t);
        if c as usize == self.time.len() {
            self.time.push(0);
            self.visits.push(0);
            self.repairs.push(0);
        }
        c
    }

    /// A worker's stack starts with its master's at the last fork at or before `t`; the
    /// new stack depth (0: no worker, no fork).
    fn push_prefix(&mut self, t: u64) -> usize {
        let Some(forks) = self.worker.as_ref().map(|w| w.forks) else {
            return 0;
        };
        let k = forks.partition_point(|f| f.time <= t);
        let Some(f) = k.checked_sub(1).map(|k| &forks[k]) else {
            return 0;
        };
        for &r in &f.stack {
            let c = self.call_path(r, t);
            self.stack.push((r, c, NONE));
        }
        self.stack.len()
    }

    /// Frames closed by a repair (§3.4).
    #[inline]
    fn repaired(&mut self, frames: Vec<Frame>) {
        for (_, c, _) in frames {
            self.repairs[c as usize] += 1;
        }
    }

    /// The stack's top as a cell of an event that is no ENTER or LEAVE: the enclosing
    /// instance's ENTER and call path.
    #[inline(always)]
    fn top(&self) -> Cell {
        match self.stack.last() {
            Some(&(_, c, e)) => (e, c),
            None => OUTSIDE,
        }
    }

    fn team_begin(&mut self, t: u64) -> Cell {
        self.base = self.push_prefix(t);
        self.by_enter = false;
        (NONE, self.top().1)
    }

    fn team_end(&mut self) -> Cell {
        let open = self.tasks.finish(&mut self.stack);
        self.repaired(open);
        while self.stack.len() > self.base {
            if let Some((_, c, _)) = self.stack.pop() {
                self.repairs[c as usize] += 1;
            }
        }
        let c = self.top().1;
        self.stack.clear();
        self.base = 0;
        (NONE, c)
    }

    #[inline(always)]
    fn enter(&mut self, i: usize, region: RegionIdx, t: u64) -> Cell {
        if self.stack.is_empty()
            && self
                .worker
                .as_ref()
                .is_some_and(|w| w.kinds.get(region as usize) == Some(&omp::OmpRegion::Parallel))
        {
            self.base = self.push_prefix(t);
            self.by_enter = self.base > 0;
        }
        let c = self.call_path(region, t);
        self.visits[c as usize] += 1;
        self.stack.push((region, c, i as u32));
        (i as u32, c)
    }

    #[inline(always)]
    fn leave(&mut self, i: usize, region: RegionIdx) -> Cell {
        let lo = self.base.max(self.tasks.floor());
        // nearly always the top frame's region (no search, nothing above to repair)
        let top = self.stack.len().checked_sub(1).filter(|&k| k >= lo);
        let found = match top.map(|k| (k, self.stack[k].0 == region)) {
            Some((k, true)) => Some(k - lo),
            _ => self.stack[lo..].iter().rposition(|s| s.0 == region),
        };
        let cell = match found {
            Some(k) => {
                let k = k + lo;
                // §3.4.2: instances above the one left are closed here too
                while self.stack.len() > k + 1 {
                    if let Some((_, c, _)) = self.stack.pop() {
                        self.repairs[c as usize] += 1;
                    }
                }
                match self.stack.pop() {
                    Some((_, c, e)) => {
                        // the ENTER's own pointer, pushed at the ENTER (`e` < `i`)
                        if let Some(p) = self.ptr.get_mut(e as usize) {
                            *p = i as u32;
                        }
                        (e, c)
                    }
                    None => OUTSIDE,
                }
            }
            None => {
                // §3.4.3: a LEAVE of a region not on the stack is ignored
                match self.stack.last() {
                    Some(&(_, c, e)) => {
                        self.repairs[c as usize] += 1;
                        (e, c)
                    }
                    None => OUTSIDE,
                }
            }
        };
        if self.by_enter && self.base > 0 && self.stack.len() == self.base {
            self.stack.clear();
            self.base = 0;
            self.by_enter = false;
        }
        cell
    }

    /// Any other event: task switches and completions, the enclosing instance, pauses.
    #[inline(always)]
    fn other(&mut self, ev: &Events, i: usize, kind: EventKind) -> Cell {
        if omp::is_task_kind(kind) {
            let open = match omp::task_event(ev, i) {
                Some(omp::TaskEvent::Switch(k)) => {
                    self.tasks.switch(k, &mut self.stack);
                    Vec::new()
                }
                Some(omp::TaskEvent::Complete(k)) => self.tasks.complete(k, &mut self.stack),
                None => Vec::new(),
            };
            self.repaired(open);
        }
        let cell = self.top();
        // the enclosing instance's region (none in a frame entered by nobody here)
        let region = match self.stack.last() {
            Some(&(r, _, e)) if e != NONE => r,
            _ => RegionIdx::MAX,
        };
        self.noter.note(kind, i, region);
        if kind == EventKind::MeasurementOnOff {
            // OTF2 MeasurementMode: 1 ON, 2 OFF
            let off = ev.fields(i).first() == Some(&2);
            if off && !self.paused {
                self.gaps += 1;
            }
            self.paused = off;
        }
        cell
    }

    /// §3.4.4: instances still open at the end close at the last event (the inherited
    /// prefix is not the worker's own).
    fn finish(mut self) -> PassA {
        let open = self.tasks.finish(&mut self.stack);
        self.repaired(open);
        for (_, c, _) in self.stack.drain(..).skip(self.base) {
            self.repairs[c as usize] += 1;
        }
        PassA {
            local: self.local,
            cnode: self.cnode,
            state: LocationState {
                ptr: self.ptr.into(),
                clamped: self.clamped,
                gaps: self.gaps,
                ..Default::default()
            },
            time: self.time,
            visits: self.visits,
            repairs: self.repairs,
            noted: self.noter.noted,
        }
    }
}

/// Pass A over the locations `keep` selects (all when `None`; the others get the pass of
/// an empty location), the masters' fork stacks first: the workers' call paths hang below
/// them (§3.1.3); `mpi` as `pass_a` reads it.
fn pass_a_all(
    trace: &Trace,
    master: &[u32],
    kinds: &[omp::OmpRegion],
    keep: Option<&[bool]>,
    mpi: &[bool],
) -> Vec<PassA> {
    let kept = |l: usize| keep.is_none_or(|k| k.get(l) == Some(&true));
    let mut has_workers = vec![false; trace.events.len()];
    for (l, &m) in master.iter().enumerate() {
        if m as usize != l {
            has_workers[m as usize] = true;
        }
    }
    let forks: Vec<Vec<omp::ForkStack>> = (0..trace.events.len())
        .into_par_iter()
        .map(|l| {
            if has_workers[l] && kept(l) {
                omp::fork_stacks(&trace.events[l], kinds)
            } else {
                Vec::new()
            }
        })
        .collect();
    let empty = Events::default();
    trace
        .events
        .par_iter()
        .enumerate()
        .map(|(l, ev)| {
            let ev = if kept(l) { ev } else { &empty };
            let m = master[l] as usize;
            let worker = (m != l).then(|| Worker {
                forks: &forks[m],
                kinds,
            });
            let mut p = pass_a(ev, worker, mpi);
            ev.spill_beside(&mut [&mut p.state.ptr]);
            ev.release_resident();
            p
        })
        .collect()
}

/// What pass A found on one location, before the call-tree merge: its local call tree and
/// the exclusive time, visits and repairs per local call path.
#[derive(Clone, Debug, Default)]
pub struct LocalPass {
    pub tree: LocalTree,
    pub time: Vec<u64>,
    pub visits: Vec<u64>,
    pub repairs: Vec<u64>,
    /// The pointer column (`enterptr`, `exitptr`; no call paths before the merge), on
    /// the process that replayed the location; not exchanged.
    pub state: LocationState,
    /// The call-path column (local ids); not exchanged.
    pub cnode: LocalCnodes,
}

/// Pass A over the locations `keep` selects (the others: empty), as `Replay::new` runs it:
/// what a process of `run --mpi` computes for its share before the call trees are merged
/// (issue 24, `distributed`).
pub fn local_passes(trace: &Trace, keep: &[bool]) -> Vec<LocalPass> {
    let (master, _) = omp::masters(trace, omp::has_openmp(trace));
    let kinds = if omp::has_openmp(trace) {
        omp::region_kinds(trace)
    } else {
        Vec::new()
    };
    pass_a_all(trace, &master, &kinds, Some(keep), &[])
        .into_iter()
        .map(|p| LocalPass {
            tree: p.local,
            time: p.time,
            visits: p.visits,
            repairs: p.repairs,
            state: p.state,
            cnode: LocalCnodes(p.cnode),
        })
        .collect()
}

/// A location's pass-A state with its call paths merged (`map`: local → global call path,
/// `ncn` global call paths): the call-path column renumbered (and stored beside the
/// location's events), time, visits and repairs per global call path.
fn merged(
    ev: &Events,
    mut s: LocationState,
    mut cnode: Cnodes,
    (time, visits, repairs): (&[u64], &[u64], &[u64]),
    map: &[CnodeIdx],
    ncn: usize,
) -> LocationState {
    cnode.remap(map, ncn);
    s.cnode = cnode.into();
    ev.spill_beside(&mut [s.cnode.spillable()]);
    let scatter = |v: &[u64]| {
        let mut out = vec![0u64; ncn];
        for (k, &x) in v.iter().enumerate() {
            out[map[k] as usize] += x;
        }
        out
    };
    s.time = scatter(time);
    s.visits = scatter(visits);
    s.repairs = scatter(repairs);
    s
}

impl LocalPass {
    /// The location's replay state once the call trees are merged (`map`: its local call
    /// paths → global ones, `ncn` global call paths), as `Replay::new` makes it; `ev` its
    /// events.
    pub fn into_state(self, ev: &Events, map: &[CnodeIdx], ncn: usize) -> LocationState {
        let counts = (&self.time[..], &self.visits[..], &self.repairs[..]);
        merged(ev, self.state, self.cnode.0, counts, map, ncn)
    }
}

/// A location's call-path column before the merge (local call-path ids), for
/// `LocalPass::into_state`.
#[derive(Clone, Debug, Default)]
pub struct LocalCnodes(Cnodes);

impl Replay {
    /// Pass A of §5.5 over every location, then the call-tree merge.
    pub fn new(trace: &Trace) -> Replay {
        let openmp = omp::has_openmp(trace);
        let (master, thread) = omp::masters(trace, openmp);
        let kinds = if openmp {
            omp::region_kinds(trace)
        } else {
            Vec::new()
        };
        let mpi = matching::mpi_regions(trace);
        let mut parts = pass_a_all(trace, &master, &kinds, None, &mpi);
        let noted: Vec<matching::Noted> = (parts.iter_mut())
            .map(|p| std::mem::take(&mut p.noted))
            .collect();
        let locals: Vec<LocalTree> = parts.iter().map(|p| p.local.clone()).collect();
        let loc_ids: Vec<u64> = trace.defs.locations.iter().map(|l| l.id).collect();
        let region_ids: Vec<u64> = trace.defs.regions.iter().map(|r| r.id).collect();
        let (tree, maps) = calltree::merge(&locals, &loc_ids, &region_ids);
        let ncn = tree.len();
        let locations = parts
            .into_par_iter()
            .zip(maps.par_iter())
            .enumerate()
            .map(|(l, (p, map))| {
                let counts = (&p.time[..], &p.visits[..], &p.repairs[..]);
                merged(&trace.events[l], p.state, p.cnode, counts, map, ncn)
            })
            .collect();
        let mut locations: Vec<LocationState> = locations;
        let kinds = openmp.then_some(&kinds[..]);
        let omp = omp::state(
            trace,
            &tree,
            &mut locations,
            kinds,
            (master, thread),
            |_| true,
        );
        let (mut msg_links, matching, p2p_violators, unmatched_locations) =
            matching::match_messages(trace, &locations, &omp.master, noted);
        for (ev, links) in trace.events.iter().zip(&mut msg_links) {
            ev.spill_beside(&mut [&mut links.partner]);
        }
        let (instances, collectives) = collectives::instances(trace, &omp.master);
        Replay {
            tree,
            locations,
            msg_links,
            matching,
            p2p_violators,
            unmatched_locations,
            instances,
            collectives,
            omp,
        }
    }

    /// The call path as region names joined by `/` (as Cube tools print it).
    pub fn path_name(&self, trace: &Trace, c: CnodeIdx) -> String {
        self.tree
            .path(c)
            .iter()
            .map(|callee| match callee {
                calltree::Callee::Region(r) => trace.defs.regions[*r as usize].name.as_str(),
                calltree::Callee::ArtificialRoot => "program",
            })
            .collect::<Vec<_>>()
            .join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(ptr: Vec<u32>) -> LocationState {
        let n = ptr.len();
        LocationState {
            ptr: ptr.into(),
            cnode: Cnodes::Narrow(vec![NARROW_NONE; n]).into(),
            ..Default::default()
        }
    }

    #[test]
    fn one_pointer_column_gives_both_pointers() {
        // 0 ENTER a (left at 3), 1 SEND inside a, 2 ENTER b (never left), 3 LEAVE a,
        // 4 an event outside any region
        let s = state(vec![3, 0, 2, 0, NONE]);
        let enter: Vec<u32> = (0..5).map(|i| s.enterptr(i)).collect();
        let exit: Vec<u32> = (0..5).map(|i| s.exitptr(i)).collect();
        assert_eq!(enter, [0, 0, 2, 0, NONE]);
        assert_eq!(exit, [3, NONE, NONE, NONE, NONE]);
    }

    #[test]
    fn call_path_column_renumbers_one_or_many_call_paths() {
        let column = || Cnodes::Narrow(vec![0, 1, 2, NARROW_NONE, 2, 1]);
        let got = |c: &Cnodes| (0..6).map(|i| c.get(i)).collect::<Vec<_>>();
        // one call path moved (the compare-and-select walk)
        let mut c = column();
        c.remap(&[0, 1, 3], 4);
        assert_eq!(got(&c), [0, 1, 3, NO_CNODE, 3, 1]);
        // two moved (the table)
        let mut c = column();
        c.remap(&[0, 2, 1], 3);
        assert_eq!(got(&c), [0, 2, 1, NO_CNODE, 1, 2]);
        // none moved
        let mut c = column();
        c.remap(&[0, 1, 2], 3);
        assert_eq!(got(&c), [0, 1, 2, NO_CNODE, 2, 1]);
    }

    #[test]
    fn call_path_column_widens_and_narrows() {
        let mut c = Cnodes::zeroed(3);
        c.set(0, 7);
        c.set(1, NO_CNODE);
        assert!(matches!(c, Cnodes::Narrow(_)));
        // a local call path beyond 16 bits widens the column, keeping what it held
        c.set(2, 70_000);
        assert!(matches!(c, Cnodes::Wide(_)));
        assert_eq!((c.get(0), c.get(1), c.get(2)), (7, NO_CNODE, 70_000));
        // merged into a small global tree: narrow again
        let mut map = vec![0; 70_001];
        map[7] = 1;
        map[70_000] = 2;
        c.remap(&map, 3);
        assert!(matches!(c, Cnodes::Narrow(_)));
        assert_eq!((c.get(0), c.get(1), c.get(2)), (1, NO_CNODE, 2));
        // a large global tree: wide
        let mut map = vec![0; 3];
        map[1] = 65_535;
        map[2] = 100_000;
        c.remap(&map, 100_001);
        assert!(matches!(c, Cnodes::Wide(_)));
        assert_eq!((c.get(0), c.get(1), c.get(2)), (65_535, NO_CNODE, 100_000));
    }
}
