//! The second half of the Paje simulation: what happens to containers, state stacks, links
//! and variable pieces once every name of an event is resolved to an index (`mod.rs` resolves
//! types, containers and state values and hands over an `Op` per event). Text traces apply
//! the ops as they are resolved; binary traces resolve on the decoding thread and apply them
//! here on a second one, so the two halves run side by side.

use super::header::Kind;
use super::lex;
use super::FxMap;
use crate::error::{Error, Place, Result, Warning};
use crate::model::events::EventsFiller;
use crate::model::*;
use std::path::Path;

/// What an op does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Code {
    /// PajeCreateContainer: the next container index (`ty`, `c` = parent, name from the
    /// batch's `names`).
    Container,
    /// A new region, made when a state value is first used (`ty` = collective op or
    /// u32::MAX, `c` = point-to-point or wait/test, `x` = its name starts with `MPI_I`).
    Region,
    Destroy,
    NewEvent,
    /// The state events, `x` = the region of the value (Set, Push).
    SetState,
    PushState,
    PopState,
    ResetState,
    SetVariable,
    AddVariable,
    SubVariable,
    /// The link ends, `x` = the start or end container; key and `Size` from the batch's
    /// `keys` (paired here, `Pairing`).
    StartLink,
    EndLink,
    /// A definition with a Time field: it only moves the end of the trace.
    Time,
    /// The first error of the file: the batch's `err`.
    Err,
}

/// One resolved Paje event: 24 bytes, so that handing them from the decoding thread to the
/// simulation moves little memory between the cores (the rarely needed parts live in side
/// vectors of the batch).
#[derive(Clone, Copy, Debug)]
pub(super) struct Op {
    pub code: Code,
    pub ty: u32,
    pub c: u32,
    pub x: u32,
    pub t: u64,
}

/// A link end's key, its `Size` (0 if none) and its pairing slot (`Pairing::slot`). A
/// StartLink's key is split (`split_key`) by the simulation, where it is needed: on the
/// binary read's decoding thread, the busier of the two, it cost ~5 % of that thread.
#[derive(Default)]
pub(super) struct LinkEnd {
    pub key: LinkKey,
    pub size: u64,
    pub slot: u32,
}

impl LinkEnd {
    #[inline(always)]
    /// The end of `key` with `size`; its slot is given by `Pairing::slot` afterwards.
    pub fn new(key: &[u8], size: u64) -> LinkEnd {
        LinkEnd {
            key: LinkKey::of(key),
            size,
            slot: 0,
        }
    }
}

/// Fault in the `bytes` bytes of whole pages at `start` for writing (`MADV_POPULATE_WRITE`,
/// Linux 5.14 and later; elsewhere, or if it fails, nothing happens and the writer's own
/// first touch faults them in). The pages are column memory the simulation thread reserved
/// (`Sim::populate`): populating a page never changes what it holds, and a range freed or
/// reused since is at worst populated for its new owner or refused by the kernel.
fn populate(start: usize, bytes: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: MADV_POPULATE_WRITE only maps pages (as a write fault would) and never writes
    // to them; the range needs no particular owner (see above).
    unsafe {
        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_POPULATE_WRITE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

/// Column memory the simulation reserved (`Sim::populate`) and not yet faulted in, as whole
/// pages, oldest first, shared by the two threads of the binary read: whichever would wait
/// for the other (the simulation for a batch, the decoder for room in the channel) faults
/// in the next piece (`step`) meanwhile, so the kernel's first touch of the model's pages
/// goes to whichever thread has time, not to one of them whatever the balance.
#[derive(Default)]
pub(super) struct Pending(std::sync::Mutex<std::collections::VecDeque<(usize, usize)>>);

/// Bytes `Pending::step` faults in at a time (whole pages): short enough that a batch
/// arriving meanwhile waits little.
const POPULATE_STEP: usize = 64 << 12;

impl Pending {
    fn queue(&self) -> std::sync::MutexGuard<'_, std::collections::VecDeque<(usize, usize)>> {
        // a panic of the other thread while it held the lock leaves a queue of plain ranges
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue the whole pages inside each (address, bytes) range of `ranges`, emptied.
    pub fn add(&self, ranges: &mut Vec<(usize, usize)>) {
        if ranges.is_empty() {
            return;
        }
        const PAGE: usize = 4096;
        let mut q = self.queue();
        for (at, bytes) in ranges.drain(..) {
            let (start, end) = (at.next_multiple_of(PAGE), (at + bytes) & !(PAGE - 1));
            if end > start {
                q.push_back((start, end - start));
            }
        }
    }

    /// Fault in the next piece of the oldest range; false when nothing is left.
    pub fn step(&self) -> bool {
        let piece = {
            let mut q = self.queue();
            let Some(r) = q.front_mut() else {
                return false;
            };
            let n = r.1.min(POPULATE_STEP);
            let piece = (r.0, n);
            (r.0, r.1) = (r.0 + n, r.1 - n);
            if r.1 == 0 {
                q.pop_front();
            }
            piece
        };
        populate(piece.0, piece.1);
        true
    }
}

/// Whether the first `len` bytes of two keys are equal.
fn same_prefix(a: &LinkKey, b: &LinkKey, len: usize) -> bool {
    a.with_bytes(|x| b.with_bytes(|y| x.get(..len) == y.get(..len)))
}

/// Ops in file order with their lines (or byte offsets), link ends, container names and the
/// error that ends the file, if any.
#[derive(Default)]
pub(super) struct Batch {
    pub ops: Vec<Op>,
    pub lines: Vec<u64>,
    pub keys: Vec<LinkEnd>,
    pub names: Vec<String>,
    pub err: Option<Box<Error>>,
}

impl Batch {
    pub fn with_capacity(n: usize) -> Batch {
        Batch {
            ops: Vec::with_capacity(n),
            lines: Vec::with_capacity(n),
            keys: Vec::with_capacity(n / 4),
            names: Vec::new(),
            err: None,
        }
    }

    #[inline(always)]
    pub fn push(&mut self, code: Code, ty: u32, c: u32, x: u32, t: u64, line: u64) {
        self.ops.push(Op { code, ty, c, x, t });
        self.lines.push(line);
    }

    pub fn clear(&mut self) {
        self.ops.clear();
        self.lines.clear();
        self.keys.clear();
        self.names.clear();
        self.err = None;
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Read one word of every cache line of the ops and keys before they are used: the
    /// decoding thread wrote them on the other core, and independent loads fetch them many
    /// at a time where the simulation's dependent ones would wait for each in turn.
    #[inline]
    fn touch(&self) {
        let mut acc = 0u64;
        for op in self.ops.iter().step_by(2) {
            acc ^= op.t;
        }
        for k in self.keys.iter().step_by(2) {
            acc ^= k.size;
        }
        std::hint::black_box(acc);
    }
}

pub(super) struct Container {
    pub name: String,
    pub ty: u32,
    pub parent: Option<u32>,
    pub destroyed: bool,
    /// (state type or u32::MAX for "messages only", location)
    pub locs: Vec<(u32, u32)>,
    /// (event, variable or link type, time of its last event): the time-order check.
    last: Vec<(u32, u64)>,
    /// (variable type, start time of its current piece).
    pieces: Vec<(u32, u64)>,
}

impl Container {
    pub fn new(name: String, ty: u32, parent: Option<u32>) -> Container {
        Container {
            name,
            ty,
            parent,
            destroyed: false,
            locs: Vec::new(),
            last: Vec::new(),
            pieces: Vec::new(),
        }
    }
}

/// Set the value of `key` in a short association list; the old value, if any.
#[inline]
fn replace(list: &mut Vec<(u32, u64)>, key: u32, v: u64) -> Option<u64> {
    match list.iter_mut().find(|x| x.0 == key) {
        Some(x) => Some(std::mem::replace(&mut x.1, v)),
        None => {
            list.push((key, v));
            None
        }
    }
}

/// Events a location stages before they go to its columns (`Loc::event`).
const STAGE: usize = 32;

/// Bytes ahead of the end of each column of `EventsFiller::spare` (time, kind, arg; the
/// four message columns) that a flush prefetches (`Loc::flush`): what the next flush
/// writes and a line to spare; two lines of each message column (a few messages).
const PREFETCH: [usize; 7] = [
    STAGE * 8 + 64,
    STAGE + 64,
    STAGE * 4 + 64,
    128,
    128,
    128,
    128,
];

/// Ask for the cache lines of `bytes` bytes at address `at` (column memory not yet
/// written) for writing, ahead of the writes. Only a hint: nothing is read or written.
#[inline(always)]
fn prefetch_write(at: usize, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        // a plain loop: `step_by` of a range cost more instructions than the prefetches
        let (mut a, end) = (at, at.saturating_add(bytes));
        while a < end {
            // SAFETY: a prefetch never faults and has no effect on memory or on the
            // program's values, whatever the address (SSE, part of x86_64's baseline).
            unsafe { _mm_prefetch::<_MM_HINT_ET0>(a as *const i8) };
            a = a.saturating_add(64);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (at, bytes);
}

/// One location being filled.
pub(super) struct Loc {
    pub container: u32,
    pub events: EventsFiller,
    /// Its latest events' core columns (time, kind, arg), `staged` of them, not yet in
    /// `events`: a location's events come a few at a time between those of 63 others, and
    /// columns written value by value keep hundreds of lines half-written in the cache
    /// (the columns of all locations start at the same offset in their pages and fill at
    /// the same pace, so their lines compete for the same cache sets); staged here, next to
    /// the location's other fields, they go to the columns `STAGE` at a time (`flush`).
    /// Message and collective payloads go straight to their columns (their indices are
    /// the columns' lengths, which staging leaves alone).
    staged: u32,
    st_time: [u64; STAGE],
    st_kind: [EventKind; STAGE],
    st_arg: [u32; STAGE],
    /// Open states: how many, the region of the innermost (`top`, when `depth` > 0) and those
    /// of the others, outermost first (`below`): SMPI's states nest one deep, so a state costs
    /// no vector push and pop.
    depth: u32,
    top: RegionIdx,
    below: Vec<RegionIdx>,
    /// Time of the last state change (time-order check per (container, type)).
    last: u64,
    /// States entered so far: identifies the current state instance (64 bits: it never
    /// comes back to an earlier instance's number).
    enters: u64,
    /// The last StartLink sent from here whose key splits (`split_key`), to spot SimGrid's
    /// duplicated links (see `Loc::start_link`).
    last_start: Option<LastStart>,
}

/// A StartLink of a location's current state instance (`Loc::start_link`): state
/// instance, time, key and, once split (`split_key`), the length of its prefix + 1 (`cut`,
/// 0 while the key is not split yet) and its counter.
struct LastStart {
    inst: u64,
    t: u64,
    key: LinkKey,
    cut: u32,
    n: u64,
}

/// A key's split (`split_key`): the length of its prefix + 1 and its counter.
fn split_link_key(key: &LinkKey) -> Option<(u32, u64)> {
    key.with_bytes(|k| split_key(k).map(|(p, n)| (p.len() as u32 + 1, n)))
}

impl Loc {
    fn new(container: u32) -> Loc {
        Loc {
            container,
            events: EventsFiller::default(),
            staged: 0,
            st_time: [0; STAGE],
            st_kind: [EventKind::Enter; STAGE],
            st_arg: [0; STAGE],
            depth: 0,
            top: 0,
            below: Vec::new(),
            last: 0,
            enters: 0,
            last_start: None,
        }
    }

    /// Open a state of region `r`.
    #[inline(always)]
    fn open(&mut self, r: RegionIdx) {
        if self.depth > 0 {
            self.below.push(self.top);
        }
        self.top = r;
        self.depth += 1;
    }

    /// Close the innermost open state: its region.
    #[inline(always)]
    fn close(&mut self) -> Option<RegionIdx> {
        if self.depth == 0 {
            return None;
        }
        let r = self.top;
        self.depth -= 1;
        if let Some(below) = self.below.pop() {
            self.top = below;
        }
        Some(r)
    }

    /// The region of the innermost open state.
    #[inline(always)]
    fn innermost(&self) -> Option<RegionIdx> {
        (self.depth > 0).then_some(self.top)
    }

    /// A StartLink at `t` with `key` sent from here inside a state: whether it is the
    /// second of a link SimGrid wrote twice (`tracing/smpi/internals` writes every user
    /// MPI_Isend as two links with consecutive keys, same time, same state instance:
    /// testdata/smpi/README.md), i.e. whether the last StartLink whose key splits came from
    /// the same state instance at the same time with the same prefix and the counter before.
    /// Only a second StartLink of one state instance can be such a duplicate, so the first
    /// is kept unsplit (`cut` 0) and split when a second one comes: an entry of an earlier
    /// instance is never compared again (`enters` does not wrap), so one whose key would not
    /// split may stand in for it until then.
    #[inline]
    fn start_link(&mut self, t: u64, key: &LinkKey) -> bool {
        let inst = self.enters;
        if !matches!(&self.last_start, Some(ls) if ls.inst == inst) {
            self.last_start = Some(LastStart {
                inst,
                t,
                key: key.clone(),
                cut: 0,
                n: 0,
            });
            return false;
        }
        self.start_link_again(t, key)
    }

    /// `start_link` past the first StartLink of the state instance: both keys split.
    #[cold]
    #[inline(never)]
    fn start_link_again(&mut self, t: u64, key: &LinkKey) -> bool {
        if let Some(ls) = self.last_start.as_mut().filter(|ls| ls.cut == 0) {
            match split_link_key(&ls.key) {
                Some((cut, n)) => (ls.cut, ls.n) = (cut, n),
                None => self.last_start = None,
            }
        }
        let Some((cut, n)) = split_link_key(key) else {
            return false;
        };
        let duplicate = matches!(&self.last_start,
            Some(ls) if ls.t == t && n == ls.n.wrapping_add(1) && ls.cut == cut
                && same_prefix(&ls.key, key, cut as usize - 1));
        self.last_start = Some(LastStart {
            inst: self.enters,
            t,
            key: key.clone(),
            cut,
            n,
        });
        duplicate
    }

    /// Stage an event (`staged`), moving the stage to the columns first if it is full.
    #[inline(always)]
    fn event(&mut self, t: u64, kind: EventKind, arg: u32, g: &mut Growth) {
        let mut n = self.staged as usize;
        if n >= STAGE {
            self.flush(g);
            n = 0;
        }
        self.st_time[n] = t;
        self.st_kind[n] = kind;
        self.st_arg[n] = arg;
        self.staged = n as u32 + 1;
    }

    /// Move the staged events to the columns, reserving ahead (`Growth::reserve`) when
    /// they do not fit.
    #[inline(never)]
    fn flush(&mut self, g: &mut Growth) {
        let n = (self.staged as usize).min(STAGE);
        if self.events.room() < n {
            g.reserve(&mut self.events, n == STAGE);
        }
        if n == STAGE {
            // the common case: a full stage, copied as whole arrays
            self.events
                .extend_events_n(&self.st_time, &self.st_kind, &self.st_arg);
        } else {
            self.events
                .extend_events(&self.st_time[..n], &self.st_kind[..n], &self.st_arg[..n]);
        }
        self.staged = 0;
        // the lines the next flush writes (and the messages until then), asked for now:
        // fresh column memory comes from far (faulted in on the other core), and the
        // location's next flush is dozens of other locations' events away
        for ((at, bytes), ahead) in self.events.spare().into_iter().zip(PREFETCH) {
            prefetch_write(at, bytes.min(ahead));
        }
    }

    /// Close the innermost open state at `t`, if any: its Leave, after the collective's end
    /// when its region is a blocking MPI collective.
    #[inline(always)]
    fn leave_top(&mut self, regions: &[RegionInfo], t: u64, g: &mut Growth) {
        let Some(r) = self.close() else { return };
        if let Some(&RegionInfo {
            coll: Some(op),
            root,
            ..
        }) = regions.get(r as usize)
        {
            // the region for now (the reconstructed communicator in `finish`); the trace
            // holds no payload: unknown, stored as 0 (the analysis treats unknown payloads of
            // reconstructed instances as > 0)
            let i = self.events.coll_end(op, r, root);
            self.event(t, EventKind::MpiCollectiveEnd, i, g);
        }
        self.event(t, EventKind::Leave, r, g);
    }

    /// Close every open state at `t`.
    fn leave_all(&mut self, regions: &[RegionInfo], t: u64, g: &mut Growth) {
        while self.depth > 0 {
            self.leave_top(regions, t, g);
        }
    }
}

/// What the simulation needs to know of a region: Some(op) for blocking MPI collectives and
/// the root its end records; whether it is MPI point-to-point (or wait/test); whether its
/// name starts with `MPI_I`.
#[derive(Clone, Copy)]
struct RegionInfo {
    coll: Option<u8>,
    p2p: bool,
    isend: bool,
    root: u32,
}

/// `sim` (a `&mut Sim`) split into its locations, regions and counts and the `Growth` their
/// columns reserve by (`&mut`): borrows of disjoint fields, so one location grows while the
/// regions are read. A macro, not a method, so the borrows stay split in the caller.
macro_rules! split {
    ($sim:expr) => {{
        let Sim {
            locs,
            regions,
            size,
            at,
            populate,
            early,
            counts,
            ..
        } = $sim;
        let g = Growth {
            size: *size,
            at: *at,
            populate,
            early,
        };
        (locs, regions, counts, g)
    }};
}

/// How the columns of a location grow once full (`Growth::reserve`): the file's size and the
/// byte offset of the batch being applied (binary Paje; 0: unknown), the reserved memory
/// for the decoding thread to fault in, and how many more locations may reserve room
/// before their rate is known (`EARLY`).
struct Growth<'a> {
    size: u64,
    at: u64,
    populate: &'a mut Vec<(usize, usize)>,
    early: &'a mut u32,
}

/// Events a location holds before its fill rate is trusted (`Growth::reserve`).
const MIN: usize = 1 << 16;

/// Locations of a binary read that reserve room for `MIN` events at their first full stage
/// (`Growth::reserve`), the budget over all locations: each such reservation maps up to
/// three or four regions of address space (columns of more than glibc's mmap threshold), so
/// a trace of tens of thousands of small containers must not make one per location (the
/// kernel's `vm.max_map_count`, 65,530 by default); past the budget, columns double as in
/// the text read.
const EARLY: u32 = 1024;

impl Growth<'_> {
    /// A location's columns are full: if the binary read is far enough into the file,
    /// reserve what the location will hold by the end at the rate it has filled so far
    /// (one step, in huge pages: no copy per doubling, few page faults), at least a quarter
    /// more. Before that, at its first flush of a full stage (`first_stage`: the location
    /// is filling, not closing), room for `MIN` events at once while the budget `EARLY`
    /// lasts (addresses only, no page is faulted in until written), where the columns' own
    /// doubling would copy them a dozen times (the text read, which knows no file size:
    /// always).
    #[cold]
    #[inline(never)]
    fn reserve(&mut self, ev: &mut EventsFiller, first_stage: bool) {
        let n = ev.len();
        if self.size == 0 || self.at == 0 {
            return;
        }
        if n < MIN {
            if n == 0 && first_stage && *self.early > 0 {
                *self.early -= 1;
                // at most one event per byte still to come (as below); messages and
                // collectives are rarer than events (a fifth and a tenth of SMPI's)
                let more = MIN.min(self.size.saturating_sub(self.at) as usize);
                ev.reserve(more, more / 4, more / 8);
            }
            return;
        }
        let rate = self.size as f64 / self.at as f64;
        // at most one event per byte still to come (an event of the file takes 4 bytes or
        // more and adds at most three to a location): a bound whatever the rate says
        let more = ((n as f64 * rate * 1.02) as usize)
            .saturating_sub(n)
            .min(self.size.saturating_sub(self.at) as usize)
            .max(n / 4);
        let part = |k: usize| (k as f64 * more as f64 / n as f64) as usize;
        ev.reserve(more, part(ev.msgs()), part(ev.colls()));
        // the pages of what the rate says will be written (not the margins) are faulted
        // in ahead of the writes (`Pending`), by whichever thread would otherwise wait
        let expect = ((n as f64 * rate) as usize).saturating_sub(n).min(more);
        for (at, bytes) in ev.spare() {
            let part = (bytes as f64 * expect as f64 / more.max(1) as f64) as usize;
            if part >= 1 << 16 {
                self.populate.push((at, part));
            }
        }
    }
}

/// A SimGrid SMPI key `<src>_<dst>_<tag>_<n>`: (`<src>_<dst>_<tag>`, n).
pub(super) fn split_key(k: &[u8]) -> Option<(&[u8], u64)> {
    let cut = k.iter().rposition(|&b| b == b'_')?;
    Some((&k[..cut], lex::uint(&k[cut + 1..])?))
}

/// A link key: short ones inline in three aligned words (no allocation per link; the last
/// byte holds the length), long ones boxed.
#[derive(Clone, PartialEq, Eq)]
pub(super) enum LinkKey {
    Short([u64; 3]),
    Long(Box<[u8]>),
}

impl std::hash::Hash for LinkKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            LinkKey::Short(w) => {
                h.write_u64(w[0]);
                h.write_u64(w[1]);
                h.write_u64(w[2]);
            }
            LinkKey::Long(b) => h.write(b),
        }
    }
}

impl Default for LinkKey {
    fn default() -> Self {
        LinkKey::Short([0; 3])
    }
}

impl LinkKey {
    #[inline(always)]
    pub fn of(k: &[u8]) -> LinkKey {
        if k.len() <= 23 {
            // each word loaded from the key's own bytes: copied into a zeroed array first,
            // the words' loads waited for the copy's stores (a stalled store forward: 6 % of
            // the decoding thread's samples on the 520 MB trace); the length in the last byte.
            // Inlined: a key returned through memory was loaded again 16 bytes at a time,
            // another stalled store forward
            let w = |i: usize| word(k.get(8 * i..).unwrap_or(&[]));
            LinkKey::Short([w(0), w(1), w(2) | (k.len() as u64) << 56])
        } else {
            LinkKey::Long(Box::from(k))
        }
    }

    /// `f` of the key's bytes.
    #[inline]
    fn with_bytes<R>(&self, f: impl FnOnce(&[u8]) -> R) -> R {
        match self {
            LinkKey::Short(w) => {
                let mut a = [0u8; 24];
                for (i, x) in w.iter().enumerate() {
                    a[8 * i..8 * i + 8].copy_from_slice(&x.to_le_bytes());
                }
                f(&a[..a[23] as usize])
            }
            LinkKey::Long(b) => f(b),
        }
    }
}

/// The first 8 bytes of `s` (fewer: the rest zero) as a little-endian word, from loads of
/// its own bytes (two overlapping loads where it is shorter: their common bytes are equal).
#[inline(always)]
fn word(s: &[u8]) -> u64 {
    let n = s.len();
    let at = |i: usize, w: usize| -> u64 {
        match (s.get(i..i + w), w) {
            (Some(b), 4) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
            (Some(b), 2) => u16::from_le_bytes([b[0], b[1]]) as u64,
            (Some(b), _) => b[0] as u64,
            (None, _) => 0,
        }
    };
    if let Some(b) = s.first_chunk::<8>() {
        u64::from_le_bytes(*b)
    } else if n >= 4 {
        at(0, 4) | at(n - 4, 4) << (8 * (n - 4))
    } else if n >= 2 {
        at(0, 2) | at(n - 2, 2) << (8 * (n - 2))
    } else {
        at(0, 1)
    }
}

/// Which link ends pair up: the two ends with the same (container, type, key) get the same
/// slot, a small number reused once the pair is complete, so the simulation keeps its open
/// halves in a vector indexed by slot and the hashing of keys happens where the names are
/// resolved (on the decoding thread of the binary read). It follows the simulation's rule
/// exactly: an end whose key is open with the other kind of end closes the pair; with the
/// same kind it gets that slot too, and the simulation stops there with its error.
///
/// Keys of up to 23 bytes (`LinkKey::Short`, all of SimGrid's) live in an open-addressing
/// table of their words (linear probing, backward-shift removal: no tombstones, no
/// allocation per link); longer ones in a hash map.
#[derive(Default)]
pub(super) struct Pairing {
    table: Vec<Open>,
    /// Entries in `table`.
    used: usize,
    long: FxMap<LongEnd, (u32, bool)>,
    free: Vec<u32>,
    next: u32,
}

/// A link end of a key longer than 23 bytes: container, type, key.
type LongEnd = (u32, u32, Box<[u8]>);

/// An open link end in `Pairing::table`: its container, type, key words, slot and kind
/// (`state & 3` 0: an empty entry, 1: a StartLink, 2: an EndLink) with its home above the
/// kind (`Pairing::home` in the table's current size, `HOMES`: `remove` moves entries back
/// without hashing them again).
#[derive(Clone, Copy, Default)]
struct Open {
    w: [u64; 3],
    c: u32,
    ty: u32,
    slot: u32,
    state: u32,
}

/// Tables of `Pairing` up to this size keep each entry's home in its `state`.
const HOMES: usize = 1 << 30;

impl Pairing {
    /// The slot of a StartLink (`start`) or EndLink of type `ty` on container `c`.
    #[inline]
    pub fn slot(&mut self, c: u32, ty: u32, key: &LinkKey, start: bool) -> u32 {
        match key {
            LinkKey::Short(w) => self.short(c, ty, w, start),
            LinkKey::Long(b) => self.long(c, ty, b, start),
        }
    }

    #[inline]
    fn home(&self, c: u32, ty: u32, w: &[u64; 3]) -> usize {
        let h =
            (w[0] ^ w[1].rotate_left(21) ^ w[2].rotate_left(42) ^ ((c as u64) << 32 | ty as u64))
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 32) as usize & (self.table.len() - 1)
    }

    #[inline]
    fn short(&mut self, c: u32, ty: u32, w: &[u64; 3], start: bool) -> u32 {
        // at most half full (short probe runs and few entries moved back on removal)
        if (self.used + 1) * 2 > self.table.len() {
            self.grow();
        }
        let mask = self.table.len() - 1;
        let home = self.home(c, ty, w);
        let mut i = home;
        loop {
            let e = self.table[i];
            if e.state == 0 {
                let slot = self.take_slot();
                self.table[i] = Open {
                    w: *w,
                    c,
                    ty,
                    slot,
                    state: (if start { 1 } else { 2 }) | (home as u32) << 2,
                };
                self.used += 1;
                return slot;
            }
            // word by word: the key's words were just stored one by one, and a load of two
            // of them at once (the arrays' `==`) would wait for both stores to complete
            if e.w[0] == w[0] && e.w[1] == w[1] && e.w[2] == w[2] && e.c == c && e.ty == ty {
                if (e.state & 3 == 1) != start {
                    self.remove(i);
                    self.free.push(e.slot);
                }
                return e.slot;
            }
            i = (i + 1) & mask;
        }
    }

    /// Empty entry `i`, moving later entries of its probe run back (no tombstones).
    fn remove(&mut self, mut i: usize) {
        let mask = self.table.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.table[j];
            if e.state == 0 {
                break;
            }
            let k = match self.table.len() <= HOMES {
                true => (e.state >> 2) as usize,
                false => self.home(e.c, e.ty, &e.w),
            };
            // entry j may move to i unless its home lies cyclically in (i, j]
            let stays = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !stays {
                self.table[i] = e;
                i = j;
            }
        }
        self.table[i] = Open::default();
        self.used -= 1;
    }

    #[cold]
    fn grow(&mut self) {
        let old = std::mem::take(&mut self.table);
        self.table = vec![Open::default(); (old.len() * 2).max(256)];
        let mask = self.table.len() - 1;
        for mut e in old.into_iter().filter(|e| e.state != 0) {
            let home = self.home(e.c, e.ty, &e.w);
            e.state = e.state & 3 | (home as u32) << 2;
            let mut i = home;
            while self.table[i].state != 0 {
                i = (i + 1) & mask;
            }
            self.table[i] = e;
        }
    }

    fn take_slot(&mut self) -> u32 {
        new_slot(&mut self.free, &mut self.next)
    }

    fn long(&mut self, c: u32, ty: u32, key: &[u8], start: bool) -> u32 {
        use std::collections::hash_map::Entry;
        match self.long.entry((c, ty, Box::from(key))) {
            Entry::Occupied(o) => {
                let (slot, s) = *o.get();
                if s != start {
                    o.remove();
                    self.free.push(slot);
                }
                slot
            }
            Entry::Vacant(v) => {
                let slot = new_slot(&mut self.free, &mut self.next);
                v.insert((slot, start));
                slot
            }
        }
    }
}

/// A free pairing slot, or the next new one.
fn new_slot(free: &mut Vec<u32>, next: &mut u32) -> u32 {
    free.pop().unwrap_or_else(|| {
        *next += 1;
        *next - 1
    })
}

/// One half of a link waiting for the other (in its pairing slot).
struct Half {
    start: bool,
    /// Message size from the StartLink's `Size` field (0 if none).
    bytes: u64,
    /// The message event it produced: (location, message index).
    msg: Option<(u32, u32)>,
    /// A StartLink SimGrid wrote twice for one message: neither half is a message.
    duplicate: bool,
}

/// The simulation's state: containers, locations and their events, open link halves,
/// counts.
pub(super) struct Sim<'p> {
    path: &'p Path,
    /// Binary Paje: the `line` of errors and warnings is a byte offset.
    binary: bool,
    digits: u32,
    pub containers: Vec<Container>,
    pub locs: Vec<Loc>,
    /// Per container: the first of its (state type, location) pairs (`Container::locs`), or
    /// location u32::MAX while it has none: most lookups in one dense table.
    first_loc: Vec<(u32, u32)>,
    regions: Vec<RegionInfo>,
    /// Open link halves by pairing slot, and how many there are.
    halves: Vec<Option<Half>>,
    open: u64,
    pub counts: PajeCounts,
    pairs: u32,
    /// Binary Paje: the file's size, and the byte offset of the batch being applied, from
    /// which `reserve` estimates how many events a location will hold (0: unknown).
    pub size: u64,
    at: u64,
    /// Address ranges of reserved column memory not yet written, to be faulted in by
    /// whichever thread has time (`Pending`), queued there after each batch.
    pub populate: Vec<(usize, usize)>,
    /// Locations that may still reserve room before their rate is known (`EARLY`).
    early: u32,
    pub end_time: u64,
    order_warnings: u64,
    first_order_warning: Option<String>,
}

impl<'p> Sim<'p> {
    pub fn new(path: &'p Path, binary: bool, digits: u32) -> Sim<'p> {
        Sim {
            path,
            binary,
            digits,
            // the implicit root container `0`
            containers: vec![Container::new("0".into(), 0, None)],
            locs: Vec::new(),
            first_loc: vec![(u32::MAX, u32::MAX)],
            regions: Vec::new(),
            halves: Vec::new(),
            open: 0,
            counts: PajeCounts {
                containers: 1,
                ..Default::default()
            },
            pairs: 0,
            size: 0,
            at: 0,
            populate: Vec::new(),
            early: EARLY,
            end_time: 0,
            order_warnings: 0,
            first_order_warning: None,
        }
    }

    fn err(&self, line: u64, what: impl Into<String>) -> Error {
        let place = if self.binary {
            Place::Byte(line)
        } else {
            Place::Line(line)
        };
        Error::format(self.path, place, what)
    }

    /// Apply the ops of a batch, in file order (the batch is left as it is).
    pub fn apply(&mut self, b: &mut Batch) -> Result<()> {
        b.touch();
        if self.binary {
            self.at = b.lines.first().copied().unwrap_or(0);
        }
        let (mut keys, mut names) = (0, 0);
        for (i, op) in b.ops.iter().enumerate() {
            let Op { code, ty, c, x, t } = *op;
            self.time(t);
            let lines = &b.lines;
            match code {
                // one arm per kind: `state` is specialised for each
                Code::PushState => self.state(Kind::PushState, ty, c, x, t, lines, i)?,
                Code::PopState => self.state(Kind::PopState, ty, c, x, t, lines, i)?,
                Code::SetState => self.state(Kind::SetState, ty, c, x, t, lines, i)?,
                Code::ResetState => self.state(Kind::ResetState, ty, c, x, t, lines, i)?,
                Code::StartLink | Code::EndLink => {
                    let end = &b.keys[keys];
                    keys += 1;
                    let start = code == Code::StartLink;
                    self.link(start, ty, c, x, end, t, lines, i)?;
                }
                Code::Container => {
                    let name = std::mem::take(&mut b.names[names]);
                    names += 1;
                    self.containers.push(Container::new(name, ty, Some(c)));
                    self.first_loc.push((u32::MAX, u32::MAX));
                    self.counts.containers += 1;
                }
                Code::Region => {
                    let coll = (ty != u32::MAX).then_some(ty as u8);
                    self.regions.push(RegionInfo {
                        coll,
                        p2p: c != 0,
                        isend: x != 0,
                        root: match coll {
                            Some(op) if super::mpi::rooted(op) => 0,
                            _ => u32::MAX,
                        },
                    });
                }
                Code::Destroy => {
                    let locs: Vec<u32> = self.containers[c as usize]
                        .locs
                        .iter()
                        .map(|x| x.1)
                        .collect();
                    for l in locs {
                        self.leave_all(l, t);
                    }
                    self.containers[c as usize].destroyed = true;
                }
                Code::NewEvent => {
                    let last = replace(&mut self.containers[c as usize].last, ty, t).unwrap_or(0);
                    if t < last {
                        self.order_warning(last, t, "an event", c, b.lines[i]);
                    }
                    self.counts.events += 1;
                }
                Code::SetVariable | Code::AddVariable | Code::SubVariable => {
                    let kind = match code {
                        Code::SetVariable => Kind::SetVariable,
                        Code::AddVariable => Kind::AddVariable,
                        _ => Kind::SubVariable,
                    };
                    self.variable(kind, ty, c, t, b.lines[i])?;
                }
                Code::Time => {}
                Code::Err => {
                    return Err(b.err.take().map_or_else(
                        || self.err(b.lines[i], "internal error: an error op without its error"),
                        |e| *e,
                    ))
                }
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn time(&mut self, t: u64) {
        if t > self.end_time {
            self.end_time = t;
        }
    }

    /// The location of (container, state type); `u32::MAX` = the container's message location.
    #[inline(always)]
    fn loc(&mut self, c: u32, stype: u32) -> u32 {
        match self.first_loc.get(c as usize) {
            // a (u32::MAX, l) pair is only ever the first (see `new_loc`)
            Some(&(st, l)) if l != u32::MAX && (st == stype || stype == u32::MAX) => l,
            _ => self.new_loc(c, stype),
        }
    }

    /// `loc` past its first pair: another pair of the container, or a new location.
    #[cold]
    #[inline(never)]
    fn new_loc(&mut self, c: u32, stype: u32) -> u32 {
        let cont = &mut self.containers[c as usize];
        let l = if let Some(&(_, l)) = cont.locs.iter().find(|x| x.0 == stype) {
            l
        } else if let (u32::MAX, Some(&(_, l))) = (stype, cont.locs.first()) {
            l
        } else if let Some(x) = cont.locs.iter_mut().find(|x| x.0 == u32::MAX) {
            // a location made for messages before the first state: it takes this type
            x.0 = stype;
            x.1
        } else {
            let l = self.locs.len() as u32;
            cont.locs.push((stype, l));
            self.locs.push(Loc::new(c));
            l
        };
        self.first_loc[c as usize] = cont.locs[0];
        l
    }

    /// An event at `t` earlier than the previous one at `last` (`t < last`).
    #[cold]
    fn order_warning(&mut self, last: u64, t: u64, what: &str, c: u32, line: u64) {
        self.order_warnings += 1;
        if self.first_order_warning.is_none() {
            self.first_order_warning = Some(format!(
                "{} {line}: {what} of container '{}' at {} s is earlier than the previous one at {} s",
                if self.binary { "byte" } else { "line" },
                self.containers[c as usize].name,
                t as f64 / 10f64.powi(self.digits as i32),
                last as f64 / 10f64.powi(self.digits as i32),
            ));
        }
    }

    /// Close every open state of location `l` at `t`.
    pub fn leave_all(&mut self, l: u32, t: u64) {
        let (locs, regions, _, mut g) = split!(self);
        locs[l as usize].leave_all(regions, t, &mut g);
    }

    /// PajeSetState, PajePushState, PajePopState, PajeResetState: Enter and Leave events.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn state(
        &mut self,
        kind: Kind,
        ty: u32,
        c: u32,
        r: RegionIdx,
        t: u64,
        lines: &[u64],
        i: usize,
    ) -> Result<()> {
        let l = self.loc(c, ty) as usize;
        let last = self.locs[l].last;
        if t < last {
            self.order_warning(last, t, "a state change", c, lines[i]);
        }
        if kind == Kind::PopState && self.locs[l].depth == 0 {
            return Err(self.err(
                lines[i],
                format!(
                    "PajePopState on container '{}' whose state stack is empty",
                    self.containers[c as usize].name
                ),
            ));
        }
        let (locs, regions, counts, mut g) = split!(self);
        let g = &mut g;
        let loc = &mut locs[l];
        loc.last = t.max(last);
        match kind {
            Kind::PushState | Kind::SetState => {
                if kind == Kind::SetState {
                    loc.leave_all(regions, t, g);
                }
                loc.open(r);
                loc.event(t, EventKind::Enter, r, g);
                loc.enters += 1;
                counts.states += 1;
            }
            Kind::PopState => loc.leave_top(regions, t, g),
            _ => loc.leave_all(regions, t, g),
        }
        Ok(())
    }

    /// PajeSetVariable, PajeAddVariable, PajeSubVariable: counted as pj_dump counts pieces.
    #[inline]
    fn variable(&mut self, kind: Kind, ty: u32, c: u32, t: u64, line: u64) -> Result<()> {
        let last = replace(&mut self.containers[c as usize].last, ty, t).unwrap_or(0);
        if t < last {
            self.order_warning(last, t, "a variable change", c, line);
        }
        // a change at the start time of the current piece modifies it (formats.md §C.4)
        match replace(&mut self.containers[c as usize].pieces, ty, t) {
            Some(start) if start == t => {}
            Some(_) => self.counts.variables += 1,
            None => {
                if kind != Kind::SetVariable {
                    return Err(self.err(
                        line,
                        format!(
                            "{} on container '{}' before any PajeSetVariable of that variable",
                            kind, self.containers[c as usize].name
                        ),
                    ));
                }
                self.counts.variables += 1;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn link(
        &mut self,
        start: bool,
        ty: u32,
        c: u32,
        e: u32,
        end: &LinkEnd,
        t: u64,
        lines: &[u64],
        i: usize,
    ) -> Result<()> {
        let last = replace(&mut self.containers[c as usize].last, ty, t).unwrap_or(0);
        if t < last {
            self.order_warning(last, t, "a link end", c, lines[i]);
        }
        let slot = end.slot as usize;
        if slot >= self.halves.len() {
            self.halves.resize_with(slot + 1, || None);
        }
        let other = self.halves[slot].take();
        if let Some(h) = &other {
            if h.start == start {
                return Err(self.err(
                    lines[i],
                    format!(
                        "link key '{}' is already open with a {} on this container and type",
                        end.key
                            .with_bytes(|k| String::from_utf8_lossy(k).into_owned()),
                        if start {
                            "PajeStartLink"
                        } else {
                            "PajeEndLink"
                        }
                    ),
                ));
            }
        }
        let bytes = if start {
            end.size
        } else {
            other.as_ref().map_or(0, |h| h.bytes)
        };
        // a message end only inside an MPI point-to-point or wait state
        let mut msg = None;
        let mut duplicate = false;
        let l = self.first_loc.get(e as usize).map_or(u32::MAX, |x| x.1);
        let (locs, regions, _, mut g) = split!(self);
        if let Some(loc) = locs.get_mut(l as usize) {
            if let Some(r) = loc.innermost() {
                if start {
                    // the second of a link SimGrid wrote twice is no message of its own
                    duplicate = loc.start_link(t, &end.key);
                } else {
                    duplicate = other.as_ref().is_some_and(|h| h.duplicate);
                }
                let info = regions[r as usize];
                if info.p2p && !duplicate {
                    let kind = match (start, info.isend) {
                        (true, true) => EventKind::MpiIsend,
                        (true, false) => EventKind::MpiSend,
                        (false, _) => EventKind::MpiRecv,
                    };
                    let i = loc.events.msg(Msg {
                        peer: u32::MAX,
                        comm: 0,
                        tag: 0,
                        bytes,
                        request: None,
                    });
                    loc.event(t, kind, i, &mut g);
                    msg = Some((l, i));
                }
            }
        }
        match other {
            Some(h) => {
                self.open -= 1;
                self.counts.links += 1;
                if let (Some((la, ia)), Some((lb, ib))) = (h.msg, msg) {
                    // paired by key: a tag unique to the pair makes the replay's matching
                    // (comm, from, to, tag, order) pair exactly these two (patterns.md §5.3.6)
                    let tag = self.pairs;
                    self.pairs = self.pairs.wrapping_add(1);
                    for (l, i, peer) in [(la, ia, lb), (lb, ib, la)] {
                        self.locs[l as usize]
                            .events
                            .set_peer_tag(i as usize, peer, tag);
                    }
                }
            }
            None => {
                self.open += 1;
                self.halves[slot] = Some(Half {
                    start,
                    bytes,
                    msg,
                    duplicate,
                });
            }
        }
        Ok(())
    }

    /// States still open close at the end of the trace (as PajeNG closes containers); the
    /// warnings about events out of time order and link halves without the other half.
    pub fn close(&mut self, warnings: &mut Vec<Warning>) {
        let end = self.end_time;
        for l in 0..self.locs.len() as u32 {
            self.leave_all(l, end);
            let (locs, _, _, mut g) = split!(self);
            locs[l as usize].flush(&mut g);
        }
        let file = self.path.display().to_string();
        if self.order_warnings > 0 {
            warnings.push(Warning {
                file: file.clone(),
                message: format!(
                    "{} event(s) are not time-ordered within their container and type (PajeNG rejects this; perfexpert keeps the file order); first at {}",
                    self.order_warnings,
                    self.first_order_warning.as_deref().unwrap_or("?")
                ),
            });
        }
        if self.open > 0 {
            warnings.push(Warning {
                file: file.clone(),
                message: format!(
                    "{} link half/halves without the other half (not counted as links)",
                    self.open
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A short key's words are its bytes in order, zero after them, the length in the last
    /// byte, whatever its length and wherever it starts; `with_bytes` gives the key back.
    #[test]
    fn short_keys_are_their_bytes() {
        let bytes: Vec<u8> = (0..64u32).map(|i| (i * 37 + 11) as u8 | 1).collect();
        for from in 0..8 {
            for n in 0..=23 {
                let k = &bytes[from..from + n];
                let mut a = [0u8; 24];
                a[..n].copy_from_slice(k);
                a[23] = n as u8;
                let w = |i: usize| u64::from_le_bytes(a[8 * i..8 * i + 8].try_into().unwrap());
                match LinkKey::of(k) {
                    LinkKey::Short(x) => assert_eq!(x, [w(0), w(1), w(2)], "{n} bytes"),
                    LinkKey::Long(_) => panic!("{n} bytes: a long key"),
                }
                assert!(LinkKey::of(k).with_bytes(|b| b == k));
            }
        }
        assert!(matches!(LinkKey::of(&bytes[..24]), LinkKey::Long(_)));
    }

    /// A binary read of many small containers (three times the budget, each with a full
    /// stage of states): only `EARLY` of their locations reserve room for `MIN` events
    /// before their rate is known, the others' columns double as they fill.
    #[test]
    fn early_room_has_a_budget() {
        let mut sim = Sim::new(Path::new("many.rst"), true, 9);
        sim.size = 1 << 30;
        let mut b = Batch::with_capacity(1 << 16);
        b.push(Code::Region, u32::MAX, 0, 0, 0, 1);
        let n = 3 * EARLY;
        for k in 1..=n {
            b.names.push(format!("c{k}"));
            b.push(Code::Container, 1, 0, 0, 0, 1);
        }
        for c in 1..=n {
            for _ in 0..=STAGE / 2 {
                b.push(Code::PushState, 2, c, 0, 1, 1);
                b.push(Code::PopState, 2, c, 0, 1, 1);
            }
        }
        assert!(sim.apply(&mut b).is_ok());
        assert_eq!(sim.locs.len(), n as usize);
        let early = sim.locs.iter().filter(|l| l.events.room() >= MIN / 2);
        assert_eq!(early.count(), EARLY as usize);
        assert!(sim.locs.iter().all(|l| l.events.len() == STAGE));
    }

    /// `Pairing` against the rule it implements, kept in a plain map, over many random
    /// link ends of few distinct keys (long probe runs, removals in their middle, growth).
    #[test]
    fn pairing_follows_the_rule() {
        let mut p = Pairing::default();
        let mut model: std::collections::HashMap<(u32, u32, Vec<u8>), (u32, bool)> =
            Default::default();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200_000 {
            let (c, ty) = (rnd(3) as u32, rnd(2) as u32);
            let k = rnd(300);
            let key = if k % 7 == 0 {
                format!("a-long-key-of-more-than-23-bytes-{k}")
            } else {
                format!("{}_{}_1_{k}", k % 5, k % 3)
            };
            let start = rnd(2) == 0;
            let slot = p.slot(c, ty, &LinkKey::of(key.as_bytes()), start);
            let m = (c, ty, key.into_bytes());
            match model.get(&m).copied() {
                Some((s, was)) => {
                    assert_eq!(slot, s);
                    if was != start {
                        model.remove(&m);
                    }
                }
                None => {
                    assert!(
                        model.values().all(|&(s, _)| s != slot),
                        "slot {slot} in use"
                    );
                    model.insert(m, (slot, start));
                }
            }
        }
        assert_eq!(p.used + p.long.len(), model.len());
    }
}
