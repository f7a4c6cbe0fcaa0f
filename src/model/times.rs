//! The event time column (`Events::time`): u64 ticks in about 4 bytes an event.
//!
//! Events come in blocks of `BLOCK` (256); each block has a u64 base word and each event a
//! u32 offset (`off`, a spillable `Column<u32>`). A block is *narrow* when every time in it
//! is its first time plus an offset below 2^32 and that first time is below 2^63: the base is
//! that first time. Any other block — a span of 2^32 ticks or more, a time below the block's
//! first (clock violations are kept as they are, and reported by the readers), a time with
//! the top bit set — is *wide*: its times are kept as they are in `wide`, and its base word is
//! `WIDE | index of its first time in wide` (its offsets are not read). A read is one
//! predictable branch: `b = base[i >> SHIFT]`, then `b + off[i]` or `wide[b ^ WIDE + i % BLOCK]`.
//! Every value reads back bit for bit.

use super::spill::{Column, Spillable};

/// log2 of the events of a block.
pub const SHIFT: u32 = 8;
/// Events of a block.
pub const BLOCK: usize = 1 << SHIFT;
const MASK: usize = BLOCK - 1;
/// The flag of a wide block's base word.
const WIDE: u64 = 1 << 63;

/// A location's event times (see the module documentation).
#[derive(Clone, Default)]
pub struct Times {
    base: Vec<u64>,
    off: Column<u32>,
    wide: Vec<u64>,
}

/// A block's times: a base and its offsets, or the times themselves.
#[derive(Clone, Copy, Debug)]
pub enum Block<'a> {
    Narrow(u64, &'a [u32]),
    Wide(&'a [u64]),
}

/// The offset word of time `t` appended after `off` (the column so far), the block's base
/// word started or the block made wide on the way (its times so far copied to `wide`).
#[inline(always)]
fn encode(base: &mut Vec<u64>, wide: &mut Vec<u64>, off: &[u32], t: u64) -> u32 {
    let n = off.len();
    if n & MASK == 0 {
        if t & WIDE == 0 {
            base.push(t);
        } else {
            base.push(WIDE | wide.len() as u64);
            wide.push(t);
        }
        return 0;
    }
    let Some(last) = base.last_mut() else {
        unreachable!("a block is under way, so it has its base word")
    };
    let b = *last;
    if b & WIDE == 0 {
        let d = t.wrapping_sub(b);
        if d >> 32 == 0 {
            return d as u32;
        }
        *last = widen(wide, b, &off[n & !MASK..]);
    }
    wide.push(t);
    0
}

/// A narrow block of base `b` and offsets `offs` made wide: its times appended to `wide`,
/// the new base word returned.
#[cold]
#[inline(never)]
fn widen(wide: &mut Vec<u64>, b: u64, offs: &[u32]) -> u64 {
    let w = WIDE | wide.len() as u64;
    wide.extend(offs.iter().map(|&o| b + o as u64));
    w
}

/// Times `ts` appended: `off` grows by `ts.len()` words, `base` and `wide` as `encode`
/// grows them one time at a time, a block's times at once where they fit its base.
#[inline]
fn encode_all(base: &mut Vec<u64>, wide: &mut Vec<u64>, off: &mut Vec<u32>, ts: &[u64]) {
    let mut ts = ts;
    while !ts.is_empty() {
        let n = off.len();
        let (seg, rest) = ts.split_at((BLOCK - (n & MASK)).min(ts.len()));
        ts = rest;
        // the block's base word: its first time where the block starts here
        let fresh = n & MASK == 0;
        let b = match base.last() {
            Some(&b) if !fresh => b,
            _ => seg[0],
        };
        if b & WIDE != 0 && !fresh {
            wide.extend_from_slice(seg);
            off.resize(n + seg.len(), 0);
            continue;
        }
        // a fresh block's first time with the top bit set fails here too
        let far = seg.iter().fold(b & WIDE, |a, &t| a | t.wrapping_sub(b));
        if far >> 32 == 0 {
            if fresh {
                base.push(b);
            }
            off.extend(seg.iter().map(|&t| t.wrapping_sub(b) as u32));
        } else {
            for &t in seg {
                let o = encode(base, wide, off, t);
                off.push(o);
            }
        }
    }
}

impl Times {
    /// Room for `n` events.
    pub fn with_capacity(n: usize) -> Times {
        Times {
            base: Vec::with_capacity(n.div_ceil(BLOCK)),
            off: Column::with_capacity(n),
            wide: Vec::new(),
        }
    }

    /// The columns a filler built (`TimesFiller::finish`).
    fn from_parts(base: Vec<u64>, off: Vec<u32>, wide: Vec<u64>) -> Times {
        Times {
            base,
            off: off.into(),
            wide,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.off.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.off.is_empty()
    }

    /// A copyable view for reading (hot loops keep it in registers).
    #[inline(always)]
    pub fn view(&self) -> TimesRef<'_> {
        TimesRef {
            base: &self.base,
            off: &self.off,
            wide: &self.wide,
        }
    }

    /// The time of event `i` (panics when `i` is out of range, as `slice[i]` does).
    #[inline(always)]
    pub fn get(&self, i: usize) -> u64 {
        // the fields read here only (the wide vector where a block is wide)
        let o = self.off[i];
        // SAFETY: `i < off.len() <= base.len() * BLOCK` (every block that has an event has
        // its base word: `encode`, `encode_all`, `map_in_place` keep it so, and nothing else
        // changes the lengths), so `i >> SHIFT < base.len()`.
        let b = unsafe { *self.base.get_unchecked(i >> SHIFT) };
        if b & WIDE == 0 {
            b + o as u64
        } else {
            self.view().wide_at(b, i)
        }
    }

    /// The time of event `i`, `None` when out of range (`slice::get`).
    #[inline]
    pub fn try_get(&self, i: usize) -> Option<u64> {
        self.view().try_get(i)
    }

    #[inline]
    pub fn first(&self) -> Option<u64> {
        self.view().first()
    }

    #[inline]
    pub fn last(&self) -> Option<u64> {
        self.view().last()
    }

    /// The times in order.
    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        self.view().iter()
    }

    /// The blocks in order.
    pub fn blocks(&self) -> impl Iterator<Item = Block<'_>> + '_ {
        let v = self.view();
        (0..self.base.len()).map(move |k| v.block(k))
    }

    /// `slice::partition_point` over the times.
    pub fn partition_point(&self, pred: impl FnMut(u64) -> bool) -> usize {
        self.view().partition_point(pred)
    }

    /// The first `i` with `time[i + 1] < time[i]` (`windows(2).position(|w| w[1] < w[0])`).
    pub fn first_decrease(&self) -> Option<usize> {
        self.view().first_decrease()
    }

    /// Whether the times never decrease.
    pub fn non_decreasing(&self) -> bool {
        self.first_decrease().is_none()
    }

    /// Appends `t`.
    #[inline]
    pub fn push(&mut self, t: u64) {
        let o = encode(&mut self.base, &mut self.wide, &self.off, t);
        self.off.push(o);
    }

    /// Every time `t` replaced by `f(t)`, in order (the clock correction): each block encoded
    /// again (narrow where its new times fit, wide otherwise).
    pub fn map_in_place(&mut self, mut f: impl FnMut(u64) -> u64) {
        let old_base = std::mem::take(&mut self.base);
        let old_wide = std::mem::take(&mut self.wide);
        let mut base = Vec::with_capacity(old_base.len());
        let mut wide = Vec::new();
        let mut buf = [0u64; BLOCK];
        let off: &mut [u32] = &mut self.off;
        for (chunk, &b) in off.chunks_mut(BLOCK).zip(&old_base) {
            let ts = &mut buf[..chunk.len()];
            if b & WIDE == 0 {
                for (t, &o) in ts.iter_mut().zip(chunk.iter()) {
                    *t = f(b + o as u64);
                }
            } else {
                let w = (b ^ WIDE) as usize;
                for (t, &x) in ts.iter_mut().zip(&old_wide[w..w + chunk.len()]) {
                    *t = f(x);
                }
            }
            let b0 = ts[0];
            let far = ts.iter().fold(b0 & WIDE, |a, &t| a | t.wrapping_sub(b0));
            if far >> 32 == 0 {
                base.push(b0);
                for (o, &t) in chunk.iter_mut().zip(ts.iter()) {
                    *o = (t - b0) as u32;
                }
            } else {
                base.push(WIDE | wide.len() as u64);
                wide.extend_from_slice(ts);
                chunk.fill(0);
            }
        }
        self.base = base;
        self.wide = wide;
    }

    /// Bytes of heap memory held.
    pub fn heap_bytes(&self) -> usize {
        self.base.capacity() * 8 + self.off.capacity() * 4 + self.wide.capacity() * 8
    }

    pub fn shrink_to_fit(&mut self) {
        self.base.shrink_to_fit();
        self.off.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    /// The per-event column as the spill file takes it (base words and wide blocks stay on
    /// the heap); storing it keeps its length, and with it what `get` relies on.
    pub fn spillable(&mut self) -> &mut dyn Spillable {
        &mut self.off
    }

    /// The per-event column (its spill state: `Column::release_resident`, `spill_beside`).
    pub fn offsets(&self) -> &Column<u32> {
        &self.off
    }

    /// The times as a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
}

impl From<Vec<u64>> for Times {
    fn from(v: Vec<u64>) -> Times {
        Times::from(&v[..])
    }
}

impl From<&[u64]> for Times {
    fn from(v: &[u64]) -> Times {
        let mut f = TimesFiller::with_capacity(v.len());
        f.extend(v);
        f.finish()
    }
}

impl FromIterator<u64> for Times {
    fn from_iter<I: IntoIterator<Item = u64>>(it: I) -> Times {
        let it = it.into_iter();
        let mut f = TimesFiller::with_capacity(it.size_hint().0);
        // a block's worth at a time through `encode_all` (fewer instructions a time than
        // `push`)
        let mut buf = [0u64; BLOCK];
        let mut k = 0;
        for t in it {
            buf[k] = t;
            k += 1;
            if k == BLOCK {
                f.extend(&buf);
                k = 0;
            }
        }
        f.extend(&buf[..k]);
        f.finish()
    }
}

impl PartialEq for Times {
    fn eq(&self, o: &Times) -> bool {
        self.len() == o.len() && self.iter().eq(o.iter())
    }
}
impl Eq for Times {}

impl PartialEq<Vec<u64>> for Times {
    fn eq(&self, o: &Vec<u64>) -> bool {
        self.len() == o.len() && self.iter().eq(o.iter().copied())
    }
}

impl<const N: usize> PartialEq<[u64; N]> for Times {
    fn eq(&self, o: &[u64; N]) -> bool {
        self.len() == N && self.iter().eq(o.iter().copied())
    }
}

impl std::fmt::Debug for Times {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Times {
    type Item = u64;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// A copyable view of `Times` for reading.
#[derive(Clone, Copy)]
pub struct TimesRef<'a> {
    base: &'a [u64],
    off: &'a [u32],
    wide: &'a [u64],
}

impl<'a> TimesRef<'a> {
    #[inline]
    pub fn len(self) -> usize {
        self.off.len()
    }

    #[inline]
    pub fn is_empty(self) -> bool {
        self.off.is_empty()
    }

    /// The first `n` events' times (all of them when there are fewer).
    #[inline]
    pub fn prefix(self, n: usize) -> TimesRef<'a> {
        TimesRef {
            off: &self.off[..n.min(self.off.len())],
            ..self
        }
    }

    /// The time of event `i` (panics when `i` is out of range).
    #[inline(always)]
    pub fn get(self, i: usize) -> u64 {
        let o = self.off[i];
        // SAFETY: `i < off.len() <= base.len() * BLOCK`: a view is a `Times`' (see
        // `Times::get`) or a prefix of one (`prefix`: fewer offsets, the same base words).
        let b = unsafe { *self.base.get_unchecked(i >> SHIFT) };
        if b & WIDE == 0 {
            b + o as u64
        } else {
            self.wide_at(b, i)
        }
    }

    /// A wide block's time (its last block's slots past the end are past `wide`'s end).
    #[inline(never)]
    fn wide_at(self, b: u64, i: usize) -> u64 {
        self.wide[(b ^ WIDE) as usize + (i & MASK)]
    }

    #[inline]
    pub fn try_get(self, i: usize) -> Option<u64> {
        (i < self.len()).then(|| self.get(i))
    }

    #[inline]
    pub fn first(self) -> Option<u64> {
        self.try_get(0)
    }

    #[inline]
    pub fn last(self) -> Option<u64> {
        self.len().checked_sub(1).map(|i| self.get(i))
    }

    #[inline]
    pub fn iter(self) -> Iter<'a> {
        Iter::new(self, 0, self.len())
    }

    /// The times of events `from..to`, in order.
    #[inline]
    pub fn range(self, from: usize, to: usize) -> Iter<'a> {
        let end = to.min(self.len());
        Iter::new(self, from.min(end), end)
    }

    /// A reader for reads in order or near each other (see `Cursor`).
    #[inline]
    pub fn cursor(self) -> Cursor<'a> {
        Cursor {
            t: self,
            base: 0,
            start: 0,
            offs: &[],
        }
    }

    /// `f(i, time[i])` for every event `i` in order, a run at a time (`run`: a narrow
    /// block's base held, its offsets read in a tight loop; `f` inlined once).
    #[inline(always)]
    pub fn for_each(self, mut f: impl FnMut(usize, u64)) {
        let (n, mut i) = (self.len(), 0);
        while i < n {
            let (b, to) = self.run(i, n);
            for (j, &o) in self.off[i..to].iter().enumerate() {
                f(i + j, b.wrapping_add(o as u64));
            }
            i = to;
        }
    }

    /// The run of events from `i` (below `end <= len`) read as `base + offset` (wrapping):
    /// its base and end — `i`'s narrow block to its end or `end`, or `i` alone in a wide
    /// block (the base its time minus its offset).
    #[inline]
    fn run(self, i: usize, end: usize) -> (u64, usize) {
        let b = self.base[i >> SHIFT];
        if b & WIDE == 0 {
            (b, ((i | MASK) + 1).min(end))
        } else {
            (self.wide_at(b, i).wrapping_sub(self.off[i] as u64), i + 1)
        }
    }

    /// Each event's time with the next one's (`slice::windows(2)`, as arrays).
    #[inline]
    pub fn pairs(self) -> impl Iterator<Item = [u64; 2]> + 'a {
        let mut it = self.iter();
        let mut prev = it.next();
        it.map(move |t| {
            let p = prev.unwrap_or(t);
            prev = Some(t);
            [p, t]
        })
    }

    /// Block `k` (panics when out of range).
    #[inline]
    pub fn block(self, k: usize) -> Block<'a> {
        let b = self.base[k];
        let from = k << SHIFT;
        let to = (from + BLOCK).min(self.off.len());
        if b & WIDE == 0 {
            Block::Narrow(b, &self.off[from..to])
        } else {
            let w = (b ^ WIDE) as usize;
            Block::Wide(&self.wide[w..w + (to - from)])
        }
    }

    /// `slice::partition_point`: the first `i` where `pred(time[i])` is false, the times
    /// partitioned by `pred`.
    pub fn partition_point(self, mut pred: impl FnMut(u64) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// See `Times::first_decrease`.
    pub fn first_decrease(self) -> Option<usize> {
        let mut prev = self.first()?;
        for k in 0..self.base.len() {
            let from = k << SHIFT;
            match self.block(k) {
                Block::Narrow(b, offs) => {
                    // a narrow block never decreases across its first time's edge unless it
                    // starts below the last block's end; inside, where its offsets do
                    if b < prev {
                        return Some(from - 1);
                    }
                    if !sorted(offs) {
                        if let Some(j) = offs.windows(2).position(|w| w[1] < w[0]) {
                            return Some(from + j);
                        }
                    }
                    prev = b + *offs.last().unwrap_or(&0) as u64;
                }
                Block::Wide(ts) => {
                    if ts[0] < prev {
                        return Some(from - 1);
                    }
                    if !sorted(ts) {
                        if let Some(j) = ts.windows(2).position(|w| w[1] < w[0]) {
                            return Some(from + j);
                        }
                    }
                    prev = *ts.last().unwrap_or(&prev);
                }
            }
        }
        None
    }
}

/// Whether `v` never decreases: neighbours compared without a branch each.
#[inline]
fn sorted<T: PartialOrd>(v: &[T]) -> bool {
    let next = v.get(1..).unwrap_or(&[]);
    v.iter().zip(next).fold(true, |ok, (x, y)| ok & (x <= y))
}

/// The times of a range of events, in order, read a run at a time: a narrow block's offsets
/// from the next event to the block's (or the range's) end are read as `base + offset`, the
/// base held (`TimesRef::run`), so a time is a load and an add; a wide block's times one by
/// one (each its own run).
#[derive(Clone)]
pub struct Iter<'a> {
    t: TimesRef<'a>,
    /// The front run's base: `base + offs[j]` (wrapping) is its `j`-th time.
    base: u64,
    /// The front run's offsets not yet read: events `next - offs.len()..next`.
    offs: std::slice::Iter<'a, u32>,
    /// The first event after the front run.
    next: usize,
    /// The end of the range.
    end: usize,
}

impl<'a> Iter<'a> {
    #[inline]
    fn new(t: TimesRef<'a>, from: usize, end: usize) -> Iter<'a> {
        Iter {
            t,
            base: 0,
            offs: [].iter(),
            next: from,
            end,
        }
    }

    /// The next run (the front run read to its end), its first time.
    #[inline(never)]
    fn refill(&mut self) -> Option<u64> {
        let i = self.next;
        if i >= self.end {
            return None;
        }
        let (base, to) = self.t.run(i, self.end);
        let offs = self.t.off.get(i..to)?;
        self.base = base;
        self.next = to;
        self.offs = offs.iter();
        self.offs.next().map(|&o| base.wrapping_add(o as u64))
    }
}

impl Iterator for Iter<'_> {
    type Item = u64;

    #[inline(always)]
    fn next(&mut self) -> Option<u64> {
        match self.offs.next() {
            Some(&o) => Some(self.base.wrapping_add(o as u64)),
            None => self.refill(),
        }
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.offs.len() + (self.end - self.next);
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<u64> {
        if self.next < self.end {
            self.end -= 1;
            Some(self.t.get(self.end))
        } else {
            // the rest is the front run's
            let o = self.offs.next_back()?;
            self.next -= 1;
            self.end -= 1;
            Some(self.base.wrapping_add(*o as u64))
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// A reader of `TimesRef` for reads in order or near each other (`TimesRef::cursor`): it
/// holds the run of the last read (`TimesRef::run`: a narrow block, or one time of a wide
/// one), so a read inside it is a compare, a load and an add; any other read loads its run.
#[derive(Clone, Copy)]
pub struct Cursor<'a> {
    t: TimesRef<'a>,
    /// The run's base: `base + offs[j]` (wrapping) is event `start + j`'s time.
    base: u64,
    start: usize,
    offs: &'a [u32],
}

impl<'a> Cursor<'a> {
    /// The time of event `i` (panics when `i` is out of range, as `TimesRef::get`).
    #[inline(always)]
    pub fn get(&mut self, i: usize) -> u64 {
        match self.offs.get(i.wrapping_sub(self.start)) {
            Some(&o) => self.base.wrapping_add(o as u64),
            None => self.seek(i),
        }
    }

    /// The time of event `i`, `None` when out of range.
    #[inline(always)]
    pub fn try_get(&mut self, i: usize) -> Option<u64> {
        match self.offs.get(i.wrapping_sub(self.start)) {
            Some(&o) => Some(self.base.wrapping_add(o as u64)),
            None => (i < self.t.len()).then(|| self.seek(i)),
        }
    }

    /// Event `i`'s run loaded (a narrow block whole, reads going back find it too), its
    /// time (panics when `i` is out of range).
    #[inline(never)]
    fn seek(&mut self, i: usize) -> u64 {
        let o = self.t.off[i];
        // SAFETY: `i < off.len()`, just read (see `TimesRef::get`)
        let b = unsafe { *self.t.base.get_unchecked(i >> SHIFT) };
        let (base, from, to) = if b & WIDE == 0 {
            let from = i & !MASK;
            (b, from, (from + BLOCK).min(self.t.len()))
        } else {
            (self.t.wide_at(b, i).wrapping_sub(o as u64), i, i + 1)
        };
        self.base = base;
        self.start = from;
        self.offs = &self.t.off[from..to];
        base.wrapping_add(o as u64)
    }

    /// The view read.
    #[inline]
    pub fn times(&self) -> TimesRef<'a> {
        self.t
    }
}

/// `Times` while a reader fills it: plain vectors (`EventsFiller`).
#[derive(Default)]
pub struct TimesFiller {
    base: Vec<u64>,
    pub(crate) off: Vec<u32>,
    wide: Vec<u64>,
}

impl TimesFiller {
    pub fn with_capacity(n: usize) -> TimesFiller {
        TimesFiller {
            base: Vec::with_capacity(n.div_ceil(BLOCK)),
            off: Vec::with_capacity(n),
            wide: Vec::new(),
        }
    }

    /// The offset column's own vector, for growing it (the caller keeps its length).
    pub(crate) fn off_mut(&mut self) -> &mut Vec<u32> {
        &mut self.off
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.off.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.off.is_empty()
    }

    /// The offset word of `t` as the next time, base and wide words updated: the caller
    /// appends it to the offset column (`off_mut`) itself.
    #[inline(always)]
    pub(crate) fn word(&mut self, t: u64) -> u32 {
        encode(&mut self.base, &mut self.wide, &self.off, t)
    }

    #[inline]
    pub fn push(&mut self, t: u64) {
        let o = self.word(t);
        self.off.push(o);
    }

    /// Appends `ts`.
    #[inline]
    pub fn extend(&mut self, ts: &[u64]) {
        encode_all(&mut self.base, &mut self.wide, &mut self.off, ts);
    }

    pub fn finish(self) -> Times {
        Times::from_parts(self.base, self.off, self.wide)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: &[u64]) {
        let by_push = {
            let mut t = Times::default();
            for &x in v {
                t.push(x);
            }
            t
        };
        let by_extend = Times::from(v);
        let by_pieces = {
            let mut f = TimesFiller::default();
            for c in v.chunks(37) {
                f.extend(c);
            }
            f.finish()
        };
        let by_collect: Times = v.iter().copied().collect();
        for t in [&by_push, &by_extend, &by_pieces, &by_collect] {
            assert_eq!(t.len(), v.len());
            assert_eq!(t.to_vec(), v);
            for (i, &x) in v.iter().enumerate() {
                assert_eq!(t.get(i), x, "at {i}");
                assert!(t.view().block(i >> SHIFT).len_check());
            }
            assert_eq!(t.try_get(v.len()), None);
            assert_eq!(t.first(), v.first().copied());
            assert_eq!(t.last(), v.last().copied());
            assert_eq!(
                t.iter().rev().collect::<Vec<_>>(),
                v.iter().rev().copied().collect::<Vec<_>>()
            );
            assert_eq!(t.first_decrease(), v.windows(2).position(|w| w[1] < w[0]));
            check_readers(t.view(), v);
        }
        // the clock correction's re-encoding: any map reads back as the map of the times
        for f in [
            |t: u64| t.wrapping_add(5),
            |t: u64| t.wrapping_sub(1 << 40),
            |t: u64| t / 3,
            |t: u64| u64::MAX - t,
        ] {
            let mut t = by_extend.clone();
            t.map_in_place(f);
            let want: Vec<u64> = v.iter().map(|&x| f(x)).collect();
            assert_eq!(t.to_vec(), want);
        }
        if v.windows(2).all(|w| w[0] <= w[1]) {
            for probe in v.iter().copied().chain([0, u64::MAX]) {
                assert_eq!(
                    by_extend.partition_point(|t| t < probe),
                    v.partition_point(|&t| t < probe)
                );
            }
        }
    }

    /// The sequential readers of `t` (whose times are `v`): ranges, both ends of an
    /// iterator at once, a cursor forwards, backwards and jumping.
    fn check_readers(t: TimesRef<'_>, v: &[u64]) {
        let n = v.len();
        let cuts = [
            0,
            1,
            2,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            n / 2,
            n.saturating_sub(1),
            n,
            n + 3,
        ];
        for from in cuts {
            for to in cuts {
                let want: Vec<u64> = v.get(from..to.min(n)).unwrap_or(&[]).to_vec();
                let it = t.range(from, to);
                assert_eq!(it.len(), want.len(), "{from}..{to}");
                assert_eq!(it.collect::<Vec<_>>(), want, "{from}..{to}");
                // from both ends, by turns (one, then one from the back, ...)
                let (mut it, mut got_front, mut got_back) = (t.range(from, to), vec![], vec![]);
                let mut k = 0;
                loop {
                    let x = if k % 3 == 2 {
                        it.next_back().map(|x| got_back.push(x))
                    } else {
                        it.next().map(|x| got_front.push(x))
                    };
                    if x.is_none() {
                        break;
                    }
                    assert_eq!(it.len(), want.len() - got_front.len() - got_back.len());
                    k += 1;
                }
                got_back.reverse();
                got_front.extend(got_back);
                assert_eq!(got_front, want, "{from}..{to} from both ends");
            }
        }
        let mut seen = Vec::with_capacity(n);
        t.for_each(|i, x| seen.push((i, x)));
        assert_eq!(seen, v.iter().copied().enumerate().collect::<Vec<_>>());
        let mut c = t.cursor();
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(c.get(i), x, "cursor at {i}");
        }
        for (i, &x) in v.iter().enumerate().rev() {
            assert_eq!(c.try_get(i), Some(x), "cursor back at {i}");
        }
        assert_eq!(c.try_get(n), None);
        assert_eq!(c.try_get(usize::MAX), None);
        for i in (0..n).step_by(BLOCK / 2 + 3) {
            assert_eq!(c.get(i), v[i]);
            assert_eq!(c.try_get(n + i), None);
            assert_eq!(c.get(n - 1 - i), v[n - 1 - i]);
        }
    }

    impl Block<'_> {
        fn len_check(&self) -> bool {
            match self {
                Block::Narrow(_, o) => !o.is_empty() && o.len() <= BLOCK,
                Block::Wide(w) => !w.is_empty() && w.len() <= BLOCK,
            }
        }
    }

    /// A small deterministic generator (no dependency).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn edges() {
        check(&[]);
        check(&[7]);
        check(&[u64::MAX]);
        check(&[0, u64::MAX, 0, u64::MAX]);
        check(&[u64::MAX; 300]);
        check(&[1 << 63; 257]);
        check(&[(1 << 63) - 1, 1 << 63]);
        for n in [BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK, 3 * BLOCK + 5] {
            let v: Vec<u64> = (0..n as u64).map(|i| i * 10).collect();
            check(&v);
            // a gap of 2^32 at every position near the block edges
            for at in [1, BLOCK - 1, BLOCK, BLOCK + 1, n - 1] {
                if at < n {
                    let mut w = v.clone();
                    for x in &mut w[at..] {
                        *x += 1 << 32;
                    }
                    check(&w);
                    let mut w = v.clone();
                    for x in &mut w[at..] {
                        *x += (1 << 32) - 1 - 10 * (n as u64);
                    }
                    check(&w);
                    let mut w = v.clone();
                    w[at] = w[at].wrapping_sub(11); // a decrease
                    check(&w);
                }
            }
        }
    }

    /// Random walks against a plain vector: small steps, big gaps, going back, the top bit.
    #[test]
    fn random_walks() {
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..200 {
            let n = (r.next() % 2000) as usize;
            let mut t = match round % 4 {
                0 => 0,
                1 => r.next() >> 1,
                2 => u64::MAX - (r.next() % 100_000),
                _ => (1 << 63) - (r.next() % 100_000),
            };
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let x = r.next();
                t = match x % 100 {
                    0 => t.wrapping_add(x >> (x % 64)),
                    1 => t.wrapping_sub(x % 1000),
                    2 => x,
                    _ => t.wrapping_add(x % 5000),
                };
                v.push(t);
            }
            check(&v);
        }
    }

    /// A cursor's random walks against a plain vector: steps near the last read (either
    /// way, across block edges), jumps anywhere, reads past the end; narrow and wide blocks.
    #[test]
    fn cursor_random_walks() {
        let mut r = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..100 {
            let n = 1 + (r.next() % 3000) as usize;
            let mut t = r.next() >> (1 + round % 3);
            let v: Vec<u64> = (0..n)
                .map(|_| {
                    let x = r.next();
                    t = match x % 50 {
                        0 => t.wrapping_add(1 << 33),
                        1 => t.wrapping_sub(x % 100),
                        _ => t.wrapping_add(x % 1000),
                    };
                    t
                })
                .collect();
            let times = Times::from(&v[..]);
            let mut c = times.view().cursor();
            let mut i = (r.next() as usize) % n;
            for _ in 0..4000 {
                let x = r.next();
                i = match x % 10 {
                    0 => (x >> 8) as usize % (n + 2),
                    1..=3 => i.saturating_sub((x >> 8) as usize % 4),
                    _ => i + (x >> 8) as usize % 4,
                };
                assert_eq!(c.try_get(i), v.get(i).copied(), "round {round}, at {i}");
                if i < n {
                    assert_eq!(c.get(i), v[i]);
                } else {
                    i = (x >> 16) as usize % n;
                }
            }
        }
    }

    #[test]
    fn equality_is_by_value() {
        let v: Vec<u64> = (0..600).map(|i| i * 3).collect();
        let mut a = Times::from(&v[..]);
        let b = Times::from(&v[..]);
        a.map_in_place(|t| t);
        assert_eq!(a, b);
        assert_eq!(a, v);
        let mut c = b.clone();
        c.map_in_place(|t| t + 1);
        assert_ne!(c, b);
    }
}
