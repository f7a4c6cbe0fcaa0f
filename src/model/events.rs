//! Per-location event columns (struct of arrays).
//!
//! Every event costs about 9 bytes in the three core columns (`time`, `Times`: a u32 offset
//! from a u64 base word per block of 256 events; `kind` u8, `arg` u32). Enter/Leave keep
//! their region in `arg`; point-to-point and collective events keep a 16/17-byte payload in
//! their own columns, so no Enter/Leave/Send/Recv/collective event takes more than 26 bytes. Every other kind keeps its fields, in record order, as u64
//! words in `extra` (`arg` is the offset of a length word followed by the fields).

use super::defs::{CommIdx, RegionIdx};
use super::event_kind::EventKind;
use super::spill::{Column, Spill, Spillable};
pub use super::times::{Block, Times, TimesFiller, TimesRef};

/// A column of byte counts: u32 each, with the rare larger value kept aside.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByteColumn {
    small: Column<u32>,
    /// (index, value) for values that do not fit in 32 bits, in index order.
    large: Vec<(u32, u64)>,
}

impl ByteColumn {
    pub fn with_capacity(n: usize) -> ByteColumn {
        ByteColumn {
            small: Column::with_capacity(n),
            large: Vec::new(),
        }
    }

    #[inline]
    pub fn push(&mut self, v: u64) {
        if v < u32::MAX as u64 {
            self.small.push(v as u32);
        } else {
            self.large.push((self.small.len() as u32, v));
            self.small.push(u32::MAX);
        }
    }

    #[inline]
    pub fn get(&self, i: usize) -> u64 {
        match self.small[i] {
            u32::MAX => match self.large.binary_search_by_key(&(i as u32), |&(k, _)| k) {
                Ok(k) => self.large[k].1,
                Err(_) => u32::MAX as u64,
            },
            v => v as u64,
        }
    }

    pub fn len(&self) -> usize {
        self.small.len()
    }

    pub fn is_empty(&self) -> bool {
        self.small.is_empty()
    }

    fn heap_bytes(&self) -> usize {
        self.small.capacity() * 4 + self.large.capacity() * 16
    }

    fn shrink_to_fit(&mut self) {
        self.small.shrink_to_fit();
        self.large.shrink_to_fit();
    }
}

/// Point-to-point message payloads (MpiSend, MpiRecv, MpiIsend, MpiIrecv).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MsgColumns {
    /// The peer's rank in `comm` (receiver of a send, sender of a receive).
    pub peer: Column<u32>,
    pub comm: Column<CommIdx>,
    pub tag: Column<u32>,
    pub bytes: ByteColumn,
    /// (message index, request id) of the non-blocking ones, in index order.
    pub request: Vec<(u32, u64)>,
}

/// Collective-operation payloads (MpiCollectiveEnd, NonBlockingCollectiveComplete).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CollColumns {
    /// `OTF2_CollectiveOp`.
    pub op: Column<u8>,
    pub comm: Column<CommIdx>,
    /// Rank of the root in `comm`, or one of the `CollectiveRoot` specials (u32::MAX = none).
    pub root: Column<u32>,
    pub sent: ByteColumn,
    pub received: ByteColumn,
    /// (collective index, request id) of the non-blocking ones, in index order.
    pub request: Vec<(u32, u64)>,
}

/// One attribute attached to an event (formats.md A.6): key, `OTF2_Type`, raw value bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attribute {
    pub key: u32,
    pub ty: u8,
    pub value: u64,
}

/// A point-to-point message as one event sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Msg {
    pub peer: u32,
    pub comm: CommIdx,
    pub tag: u32,
    pub bytes: u64,
    pub request: Option<u64>,
}

/// A collective operation's end as one member sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coll {
    pub op: u8,
    pub comm: CommIdx,
    pub root: u32,
    pub sent: u64,
    pub received: u64,
    pub request: Option<u64>,
}

/// The events of one location.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Clock-corrected timestamps in ticks (non-decreasing in a well-formed trace).
    pub time: Times,
    pub kind: Column<EventKind>,
    /// Region (Enter/Leave), payload index (messages, collectives), `extra` offset (others),
    /// or the raw record type (Unknown).
    pub arg: Column<u32>,
    pub msg: MsgColumns,
    pub coll: CollColumns,
    pub extra: Column<u64>,
    /// (event index, start in `attributes`) for events that carry attributes, in index order.
    pub attribute_index: Vec<(u32, u32)>,
    pub attributes: Vec<Attribute>,
}

impl Events {
    pub fn with_capacity(n: usize) -> Events {
        Events {
            time: Times::with_capacity(n),
            kind: Column::with_capacity(n),
            arg: Column::with_capacity(n),
            ..Events::default()
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.time.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    #[inline]
    pub fn push_region(&mut self, time: u64, kind: EventKind, region: RegionIdx) {
        self.time.push(time);
        self.kind.push(kind);
        self.arg.push(region);
    }

    #[inline]
    pub fn push_msg(&mut self, time: u64, kind: EventKind, m: Msg) {
        let i = self.msg.peer.len() as u32;
        self.msg.peer.push(m.peer);
        self.msg.comm.push(m.comm);
        self.msg.tag.push(m.tag);
        self.msg.bytes.push(m.bytes);
        if let Some(r) = m.request {
            self.msg.request.push((i, r));
        }
        self.time.push(time);
        self.kind.push(kind);
        self.arg.push(i);
    }

    #[inline]
    pub fn push_coll(&mut self, time: u64, kind: EventKind, c: Coll) {
        let i = self.coll.op.len() as u32;
        self.coll.op.push(c.op);
        self.coll.comm.push(c.comm);
        self.coll.root.push(c.root);
        self.coll.sent.push(c.sent);
        self.coll.received.push(c.received);
        if let Some(r) = c.request {
            self.coll.request.push((i, r));
        }
        self.time.push(time);
        self.kind.push(kind);
        self.arg.push(i);
    }

    /// Push an event whose fields go to `extra`; returns false if `extra` outgrew 32-bit offsets.
    #[inline]
    pub fn push_extra(&mut self, time: u64, kind: EventKind, fields: &[u64]) -> bool {
        let Ok(off) = u32::try_from(self.extra.len()) else {
            return false;
        };
        self.extra.push(fields.len() as u64);
        self.extra.extend_from_slice(fields);
        self.time.push(time);
        self.kind.push(kind);
        self.arg.push(off);
        true
    }

    #[inline]
    pub fn push_unknown(&mut self, time: u64, record_type: u8) {
        self.time.push(time);
        self.kind.push(EventKind::Unknown);
        self.arg.push(record_type as u32);
    }

    /// Attach attributes to the event about to be pushed next.
    pub fn attach_attributes(&mut self, attrs: &[Attribute]) {
        if attrs.is_empty() {
            return;
        }
        self.attribute_index
            .push((self.time.len() as u32, self.attributes.len() as u32));
        self.attributes.extend_from_slice(attrs);
    }

    /// The region of an Enter or Leave event.
    #[inline]
    pub fn region(&self, i: usize) -> Option<RegionIdx> {
        matches!(self.kind[i], EventKind::Enter | EventKind::Leave).then(|| self.arg[i])
    }

    /// Frees the point-to-point payload columns (peer, communicator, tag, bytes) when no
    /// later stage reads them: `msg` is `None` from then on. The message indices in `arg`,
    /// and with them the replay's message links, stay valid.
    pub fn free_msg_payloads(&mut self) {
        let request = std::mem::take(&mut self.msg.request);
        self.msg = MsgColumns {
            request,
            ..MsgColumns::default()
        };
    }

    /// The message of a point-to-point event (`None` after `free_msg_payloads`).
    pub fn msg(&self, i: usize) -> Option<Msg> {
        if !matches!(
            self.kind[i],
            EventKind::MpiSend | EventKind::MpiRecv | EventKind::MpiIsend | EventKind::MpiIrecv
        ) {
            return None;
        }
        let k = self.arg[i] as usize;
        let m = &self.msg;
        // `None` also once the payloads were freed (`free_msg_payloads`)
        let peer = *m.peer.get(k)?;
        Some(Msg {
            peer,
            comm: m.comm[k],
            tag: m.tag[k],
            bytes: m.bytes.get(k),
            request: lookup(&m.request, k),
        })
    }

    /// The collective operation of an MpiCollectiveEnd or NonBlockingCollectiveComplete event.
    pub fn coll(&self, i: usize) -> Option<Coll> {
        if !matches!(
            self.kind[i],
            EventKind::MpiCollectiveEnd | EventKind::NonBlockingCollectiveComplete
        ) {
            return None;
        }
        let k = self.arg[i] as usize;
        let c = &self.coll;
        Some(Coll {
            op: c.op[k],
            comm: c.comm[k],
            root: c.root[k],
            sent: c.sent.get(k),
            received: c.received.get(k),
            request: lookup(&c.request, k),
        })
    }

    /// The fields of an event of any other kind, in record order (formats.md A.10.1),
    /// mapped to global ids; array fields are preceded by their count.
    pub fn fields(&self, i: usize) -> &[u64] {
        match self.kind[i] {
            EventKind::Enter
            | EventKind::Leave
            | EventKind::MpiSend
            | EventKind::MpiRecv
            | EventKind::MpiIsend
            | EventKind::MpiIrecv
            | EventKind::MpiCollectiveEnd
            | EventKind::NonBlockingCollectiveComplete
            | EventKind::Unknown => &[],
            _ => {
                let off = self.arg[i] as usize;
                let n = self.extra.get(off).copied().unwrap_or(0) as usize;
                self.extra.get(off + 1..off + 1 + n).unwrap_or(&[])
            }
        }
    }

    /// The attributes attached to event `i`.
    pub fn attributes_of(&self, i: usize) -> &[Attribute] {
        let Ok(k) = self
            .attribute_index
            .binary_search_by_key(&(i as u32), |&(e, _)| e)
        else {
            return &[];
        };
        let start = self.attribute_index[k].1 as usize;
        let end = self
            .attribute_index
            .get(k + 1)
            .map_or(self.attributes.len(), |&(_, s)| s as usize);
        &self.attributes[start..end]
    }

    /// Bytes of heap memory these columns hold.
    pub fn heap_bytes(&self) -> usize {
        self.time.heap_bytes()
            + self.kind.capacity()
            + self.arg.capacity() * 4
            + self.msg.peer.capacity() * 12
            + self.msg.bytes.heap_bytes()
            + self.msg.request.capacity() * 16
            + self.coll.op.capacity() * 9
            + self.coll.sent.heap_bytes()
            + self.coll.received.heap_bytes()
            + self.coll.request.capacity() * 16
            + self.extra.capacity() * 8
            + self.attribute_index.capacity() * 8
            + self.attributes.capacity() * std::mem::size_of::<Attribute>()
    }

    /// Move the columns to the spill file (`--memory-limit`): they stay readable as before,
    /// resident only while used. The sparse side tables (requests, large byte counts,
    /// attributes) stay on the heap.
    pub fn spill(&mut self, spill: &Spill) -> std::io::Result<()> {
        let cols: &mut [&mut dyn Spillable] = &mut [
            self.time.spillable(),
            &mut self.arg,
            &mut self.msg.peer,
            &mut self.msg.comm,
            &mut self.msg.tag,
            &mut self.msg.bytes.small,
            &mut self.coll.comm,
            &mut self.coll.root,
            &mut self.coll.sent.small,
            &mut self.coll.received.small,
            &mut self.extra,
            &mut self.kind,
            &mut self.coll.op,
        ];
        spill.store(cols)
    }

    /// Spilled columns: drop them from the resident set once a pass is done with this
    /// location (`Column::release_resident`; they were stored as one region).
    #[inline(never)]
    pub fn release_resident(&self) {
        self.time.offsets().release_resident();
    }

    /// Spilled columns: store `cols` (the replay's columns of this location) in the same spill
    /// file, released with these (`Column::spill_beside`); nothing when they are on the heap.
    pub fn spill_beside(&self, cols: &mut [&mut dyn Spillable]) {
        self.time.offsets().spill_beside(cols);
    }

    /// Are the core columns in the spill file?
    pub fn is_spilled(&self) -> bool {
        self.time.offsets().is_spilled()
    }

    pub fn shrink_to_fit(&mut self) {
        self.time.shrink_to_fit();
        self.kind.shrink_to_fit();
        self.arg.shrink_to_fit();
        self.msg.peer.shrink_to_fit();
        self.msg.comm.shrink_to_fit();
        self.msg.tag.shrink_to_fit();
        self.msg.bytes.shrink_to_fit();
        self.msg.request.shrink_to_fit();
        self.coll.op.shrink_to_fit();
        self.coll.comm.shrink_to_fit();
        self.coll.root.shrink_to_fit();
        self.coll.sent.shrink_to_fit();
        self.coll.received.shrink_to_fit();
        self.coll.request.shrink_to_fit();
        self.extra.shrink_to_fit();
    }
}

/// A location's events while a reader decodes them: the columns every event or message
/// writes are plain vectors (a push costs what a `Vec`'s does, with no look at where a
/// column lives), the rare ones are `Events`' own; `finish` makes the `Events`, equal to
/// what `Events`' own pushes in the same order give.
#[derive(Default)]
pub struct EventsFiller {
    time: TimesFiller,
    kind: Vec<EventKind>,
    arg: Vec<u32>,
    peer: Vec<u32>,
    comm: Vec<CommIdx>,
    tag: Vec<u32>,
    bytes: Vec<u32>,
    large_bytes: Vec<(u32, u64)>,
    msg_request: Vec<(u32, u64)>,
    /// The collectives' columns but their requests (those and the large byte counts are
    /// `rest`'s own).
    coll_op: Vec<u8>,
    coll_comm: Vec<CommIdx>,
    coll_root: Vec<u32>,
    sent: Vec<u32>,
    received: Vec<u32>,
    /// Collectives' requests, `extra` and attributes (its core, message and other collective
    /// columns stay empty; `coll.sent` and `coll.received` hold only the large values).
    rest: Events,
    /// The columns that grow together have the same length (core: time, kind, arg; messages:
    /// peer, comm, tag, bytes; collectives: op, comm, root, sent, received): the smallest
    /// capacity of each group (`sync_caps` after any change), below which a push writes
    /// every column of the group with one check (`append`).
    cap: usize,
    msg_cap: usize,
    coll_cap: usize,
}

/// `x` appended to `v`, whose length is `n`, without a capacity check.
///
/// # Safety
/// `n == v.len()` and `n < v.capacity()`.
#[inline(always)]
unsafe fn append<T>(v: &mut Vec<T>, n: usize, x: T) {
    // SAFETY: (the caller's contract) slot `n` lies inside the allocation and holds no value
    // yet; the length then covers exactly the values written.
    unsafe {
        v.as_mut_ptr().add(n).write(x);
        v.set_len(n + 1);
    }
}

/// Room for one more value in `v` if it is full, in huge pages where it is large
/// (`spill::advise_huge`).
fn grow_full<T>(v: &mut Vec<T>) {
    if v.len() == v.capacity() {
        v.reserve(1);
        super::spill::advise_huge(v);
    }
}

/// The positions, from `from` on, of the events whose kind lies in `lo..=hi`, in order: the
/// kind column read 8 kinds a word (every kind is below 128), the others passed over without
/// a branch of their own (cheaper than `memchr` where such events are frequent).
pub struct KindsIn<'a> {
    bytes: &'a [u8],
    /// Where the next word starts.
    next: usize,
    /// The hits of the word that starts at `base` not yet handed out: the high bit of each
    /// byte.
    hits: u64,
    base: usize,
    lo: u8,
    hi: u8,
}

const ONES: u64 = 0x0101_0101_0101_0101;

impl<'a> KindsIn<'a> {
    pub fn new(kinds: &'a [EventKind], from: usize, lo: EventKind, hi: EventKind) -> KindsIn<'a> {
        KindsIn {
            bytes: super::spill::bytes_of(kinds),
            next: from,
            hits: 0,
            base: from,
            lo: lo as u8,
            hi: hi as u8,
        }
    }
}

impl Iterator for KindsIn<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        loop {
            if self.hits != 0 {
                let d = (self.hits.trailing_zeros() / 8) as usize;
                self.hits &= self.hits - 1;
                return Some(self.base + d);
            }
            let Some(w) = self.bytes.get(self.next..self.next + 8) else {
                break;
            };
            let mut word = [0u8; 8];
            word.copy_from_slice(w);
            let v = u64::from_le_bytes(word);
            // per byte, its low 7 bits plus (128 − bound) carry into its high bit exactly
            // when they reach the bound (no carry leaves the byte); bytes ≥ 128 never hit
            let t = v & (ONES * 0x7f);
            let at_least_lo = t + ONES * (0x80 - self.lo as u64);
            let above_hi = t + ONES * (0x80 - (self.hi as u64 + 1).min(0x80));
            self.hits = at_least_lo & !above_hi & !v & (ONES * 0x80);
            self.base = self.next;
            self.next += 8;
        }
        // the last few kinds, one by one
        while let Some(&k) = self.bytes.get(self.next) {
            self.next += 1;
            if (self.lo..=self.hi).contains(&k) {
                return Some(self.next - 1);
            }
        }
        None
    }
}

/// `v.extend_from_slice(xs)`, growing the buffer in huge pages where it is large.
#[inline(always)]
fn put_all<T: Copy>(v: &mut Vec<T>, xs: &[T]) {
    if v.capacity() - v.len() < xs.len() {
        grow_by(v, xs.len());
    }
    v.extend_from_slice(xs);
}

#[cold]
#[inline(never)]
fn grow_by<T>(v: &mut Vec<T>, n: usize) {
    v.reserve(n);
    super::spill::advise_huge(v);
}

/// An empty vector for `n` values (in huge pages where it is large: filled to `n` when the
/// declared count is right, `spill::advise_huge_full`).
fn with_room<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    super::spill::advise_huge_full(&v);
    v
}

/// The `bytes` column's value of message `i` of `b` bytes; `b` itself goes to `large`
/// when it does not fit.
#[inline(always)]
fn small_bytes(large: &mut Vec<(u32, u64)>, i: u32, b: u64) -> u32 {
    if b >= u32::MAX as u64 {
        large.push((i, b));
    }
    b.min(u32::MAX as u64) as u32
}

impl EventsFiller {
    /// Room for `n` events (the message columns grow as messages come).
    pub fn with_capacity(n: usize) -> EventsFiller {
        let mut f = EventsFiller {
            time: TimesFiller::with_capacity(0),
            kind: with_room(n),
            arg: with_room(n),
            ..EventsFiller::default()
        };
        *f.time.off_mut() = with_room(n);
        f.sync_caps();
        f
    }

    /// `cap`, `msg_cap` and `coll_cap` from the columns' capacities.
    fn sync_caps(&mut self) {
        self.cap = self.time.off.capacity();
        self.cap = self.cap.min(self.kind.capacity()).min(self.arg.capacity());
        self.msg_cap = self.peer.capacity().min(self.comm.capacity());
        self.msg_cap = self
            .msg_cap
            .min(self.tag.capacity())
            .min(self.bytes.capacity());
        self.coll_cap = self.coll_op.capacity().min(self.coll_comm.capacity());
        self.coll_cap = (self.coll_cap.min(self.coll_root.capacity()))
            .min(self.sent.capacity())
            .min(self.received.capacity());
    }

    /// One more event fits in the core columns (each one full grows), then `sync_caps`.
    #[cold]
    #[inline(never)]
    fn grow_core(&mut self) {
        grow_full(self.time.off_mut());
        grow_full(&mut self.kind);
        grow_full(&mut self.arg);
        self.sync_caps();
    }

    /// One more message fits, like `grow_core`.
    #[cold]
    #[inline(never)]
    fn grow_msgs(&mut self) {
        grow_full(&mut self.peer);
        grow_full(&mut self.comm);
        grow_full(&mut self.tag);
        grow_full(&mut self.bytes);
        self.sync_caps();
    }

    /// One more collective fits, like `grow_core`.
    #[cold]
    #[inline(never)]
    fn grow_colls(&mut self) {
        grow_full(&mut self.coll_op);
        grow_full(&mut self.coll_comm);
        grow_full(&mut self.coll_root);
        grow_full(&mut self.sent);
        grow_full(&mut self.received);
        self.sync_caps();
    }

    #[inline(always)]
    fn event(&mut self, time: u64, kind: EventKind, arg: u32) {
        let n = self.time.len();
        if n >= self.cap {
            self.grow_core();
        }
        // the time's offset word (base and wide words updated: those vectors grow by
        // themselves)
        let w = self.time.word(time);
        // SAFETY: the three core columns (the time's offsets, kind, arg) all have length `n`
        // (they grow only here and in `extend_events`, by as many values each) and `cap` >
        // `n` is at most the capacity of each (`sync_caps`; capacities never shrink).
        unsafe {
            append(self.time.off_mut(), n, w);
            append(&mut self.kind, n, kind);
            append(&mut self.arg, n, arg);
        }
    }

    /// `Events::push_region`.
    #[inline(always)]
    pub fn push_region(&mut self, time: u64, kind: EventKind, region: RegionIdx) {
        self.event(time, kind, region);
    }

    /// `Events::push_msg`.
    #[inline(always)]
    pub fn push_msg(&mut self, time: u64, kind: EventKind, m: Msg) {
        let i = self.msg(m);
        self.event(time, kind, i);
    }

    /// The payload of a message whose event the caller appends itself (`extend_events`,
    /// with this index as its `arg`): the message columns of `push_msg` alone.
    #[inline(always)]
    pub fn msg(&mut self, m: Msg) -> u32 {
        let n = self.peer.len();
        let i = n as u32;
        // column by column, not through `extend_messages` with slices of one (a call and a
        // memcpy per column per message)
        if n >= self.msg_cap {
            self.grow_msgs();
        }
        let small = small_bytes(&mut self.large_bytes, i, m.bytes);
        // SAFETY: the four message columns all have length `n` (they grow only here and in
        // `extend_messages`, by as many values each) and `msg_cap` > `n` is at most the
        // capacity of each (`sync_caps`).
        unsafe {
            append(&mut self.peer, n, m.peer);
            append(&mut self.comm, n, m.comm);
            append(&mut self.tag, n, m.tag);
            append(&mut self.bytes, n, small);
        }
        if let Some(r) = m.request {
            self.msg_request.push((i, r));
        }
        i
    }

    /// Messages pushed so far (the index the next one gets).
    #[inline]
    pub fn messages(&self) -> usize {
        self.peer.len()
    }

    /// The payloads of messages whose events `extend_events` appends next, in order, as
    /// columns (peer, communicator, tag; byte counts; (index, request) of the non-blocking
    /// ones): what `push_msg` would store for each, with the events left out.
    /// (Columns of unequal lengths are cut to the shortest.)
    pub fn extend_messages(&mut self, ptc: [&[u32]; 3], bytes: &[u64], requests: &[(u32, u64)]) {
        let i = self.peer.len() as u32;
        let m = ptc.iter().map(|c| c.len()).fold(bytes.len(), usize::min);
        let bytes = &bytes[..m];
        if self.msg_cap - self.peer.len().min(self.msg_cap) < m {
            self.msg_room(m);
        }
        put_all(&mut self.peer, &ptc[0][..m]);
        put_all(&mut self.comm, &ptc[1][..m]);
        put_all(&mut self.tag, &ptc[2][..m]);
        if self.bytes.capacity() - self.bytes.len() < bytes.len() {
            grow_by(&mut self.bytes, bytes.len());
        }
        // the small values in one pass (no branch), the rare large ones in another
        let small = bytes.iter().map(|&b| b.min(u32::MAX as u64) as u32);
        self.bytes.extend(small);
        for (k, &b) in bytes.iter().enumerate() {
            if b >= u32::MAX as u64 {
                self.large_bytes.push((i + k as u32, b));
            }
        }
        self.msg_request.extend_from_slice(requests);
        self.sync_caps();
    }

    /// Room for `m` more messages in the message columns (each alike): for as many as the
    /// declared events would hold at the messages' share of the events so far (with a
    /// sixteenth more, at most one a declared event), at least twice as many as now, so a
    /// reader that appends its events before their messages grows them about once.
    #[cold]
    #[inline(never)]
    fn msg_room(&mut self, m: usize) {
        let have = self.peer.len() + m;
        let events = self.time.len().max(1);
        let share = (have as u128 * self.cap.max(events) as u128 / events as u128) as usize;
        let at_end = share.saturating_add(share / 16).min(self.cap.max(have));
        let want = at_end.max(2 * self.peer.len()).max(have);
        fn room<T>(v: &mut Vec<T>, want: usize) {
            if v.capacity() < want {
                v.reserve_exact(want - v.len());
                super::spill::advise_huge(v);
            }
        }
        room(&mut self.peer, want);
        room(&mut self.comm, want);
        room(&mut self.tag, want);
        room(&mut self.bytes, want);
        self.sync_caps();
    }

    /// Events appended as `time`, `kind` and `arg` columns side by side (a message's `arg`
    /// its index, its payload stored by `extend_messages`; columns of unequal lengths are
    /// cut to the shortest).
    pub fn extend_events(&mut self, time: &[u64], kind: &[EventKind], arg: &[u32]) {
        let n = time.len().min(kind.len()).min(arg.len());
        let off = self.time.off_mut();
        if off.capacity() - off.len() < n {
            grow_by(off, n);
        }
        self.time.extend(&time[..n]);
        put_all(&mut self.kind, &kind[..n]);
        put_all(&mut self.arg, &arg[..n]);
        self.sync_caps();
    }

    /// `extend_events` of exactly `N` events (a reader's events staged in arrays): where
    /// they fit, copies of a size known when compiled, without a call and a capacity check
    /// per column.
    #[inline(always)]
    pub fn extend_events_n<const N: usize>(
        &mut self,
        time: &[u64; N],
        kind: &[EventKind; N],
        arg: &[u32; N],
    ) {
        let n = self.time.len();
        if self.room() < N {
            self.extend_events(time, kind, arg);
            return;
        }
        // the times through their encoder (within the offsets' capacity: no growth)
        self.time.extend(time);
        // SAFETY: the kind and arg columns both have length `n` (the core columns grow
        // together) and `cap` ≥ `n + N` (`room`) is at most the capacity of each
        // (`sync_caps`): the `N` slots after `n` lie inside each allocation, hold no value yet
        // and are aligned for an array of the column's type; the lengths then cover exactly
        // the values written.
        unsafe {
            self.kind
                .as_mut_ptr()
                .add(n)
                .cast::<[EventKind; N]>()
                .write(*kind);
            self.arg.as_mut_ptr().add(n).cast::<[u32; N]>().write(*arg);
            self.kind.set_len(n + N);
            self.arg.set_len(n + N);
        }
    }

    /// `Events::push_coll`.
    #[inline]
    pub fn push_coll(&mut self, time: u64, kind: EventKind, c: Coll) {
        let i = self.coll_op.len() as u32;
        let co = &mut self.rest.coll;
        let sent = small_bytes(&mut co.sent.large, i, c.sent);
        let received = small_bytes(&mut co.received.large, i, c.received);
        if let Some(r) = c.request {
            co.request.push((i, r));
        }
        self.coll(c.op, c.comm, c.root, sent, received);
        self.event(time, kind, i);
    }

    /// `push_coll` of a collective's end with no payload (both byte counts 0) and no
    /// request: the columns written directly.
    #[inline(always)]
    pub fn push_coll_end(&mut self, time: u64, kind: EventKind, op: u8, comm: CommIdx, root: u32) {
        let i = self.coll_end(op, comm, root);
        self.event(time, kind, i);
    }

    /// The payload of `push_coll_end` alone, for a caller that appends the event itself
    /// (`extend_events`, with this index as its `arg`).
    #[inline(always)]
    pub fn coll_end(&mut self, op: u8, comm: CommIdx, root: u32) -> u32 {
        let i = self.coll_op.len() as u32;
        self.coll(op, comm, root, 0, 0);
        i
    }

    /// A collective's columns (byte counts as `small_bytes` gives them).
    #[inline(always)]
    fn coll(&mut self, op: u8, comm: CommIdx, root: u32, sent: u32, received: u32) {
        let n = self.coll_op.len();
        if n >= self.coll_cap {
            self.grow_colls();
        }
        // SAFETY: the five collective columns all have length `n` (they grow only here) and
        // `coll_cap` > `n` is at most the capacity of each (`sync_caps`).
        unsafe {
            append(&mut self.coll_op, n, op);
            append(&mut self.coll_comm, n, comm);
            append(&mut self.coll_root, n, root);
            append(&mut self.sent, n, sent);
            append(&mut self.received, n, received);
        }
    }

    /// `Events::push_extra`.
    pub fn push_extra(&mut self, time: u64, kind: EventKind, fields: &[u64]) -> bool {
        let Ok(off) = u32::try_from(self.rest.extra.len()) else {
            return false;
        };
        self.rest.extra.push(fields.len() as u64);
        self.rest.extra.extend_from_slice(fields);
        self.event(time, kind, off);
        true
    }

    /// `Events::push_unknown`.
    pub fn push_unknown(&mut self, time: u64, record_type: u8) {
        self.event(time, EventKind::Unknown, record_type as u32);
    }

    /// `Events::attach_attributes`.
    pub fn attach_attributes(&mut self, attrs: &[Attribute]) {
        if attrs.is_empty() {
            return;
        }
        let r = &mut self.rest;
        r.attribute_index
            .push((self.time.len() as u32, r.attributes.len() as u32));
        r.attributes.extend_from_slice(attrs);
    }

    /// Room for `events` more events, `msgs` more messages and `colls` more collectives, in
    /// one step and in huge pages where large (`spill::advise_huge_full`): for a reader that
    /// can estimate how many are still to come (the Paje read, from how far into the file it
    /// is).
    pub fn reserve(&mut self, events: usize, msgs: usize, colls: usize) {
        fn more<T>(v: &mut Vec<T>, n: usize) {
            v.reserve_exact(n);
            super::spill::advise_huge_full(v);
        }
        more(self.time.off_mut(), events);
        more(&mut self.kind, events);
        more(&mut self.arg, events);
        more(&mut self.peer, msgs);
        more(&mut self.comm, msgs);
        more(&mut self.tag, msgs);
        more(&mut self.bytes, msgs);
        more(&mut self.coll_op, colls);
        more(&mut self.coll_comm, colls);
        more(&mut self.coll_root, colls);
        more(&mut self.sent, colls);
        more(&mut self.received, colls);
        self.sync_caps();
    }

    /// The unused capacity of the columns every event or message writes, as (address, bytes)
    /// ranges: for a reader that has another thread fault their pages in ahead of the writes
    /// (the binary Paje read, after `reserve`). Addresses only; nothing is read or written.
    pub fn spare(&self) -> [(usize, usize); 7] {
        fn s<T>(v: &Vec<T>) -> (usize, usize) {
            let z = std::mem::size_of::<T>();
            (
                (v.as_ptr() as usize) + v.len() * z,
                (v.capacity() - v.len()) * z,
            )
        }
        let (a, b, c) = (s(&self.time.off), s(&self.kind), s(&self.arg));
        [
            a,
            b,
            c,
            s(&self.peer),
            s(&self.comm),
            s(&self.tag),
            s(&self.bytes),
        ]
    }

    /// Events that fit before the columns grow.
    #[inline]
    pub fn room(&self) -> usize {
        self.cap.saturating_sub(self.time.len())
    }

    /// Messages pushed so far (the index `push_msg` gives the next one).
    pub fn msgs(&self) -> usize {
        self.peer.len()
    }

    /// Collectives pushed so far.
    pub fn colls(&self) -> usize {
        self.coll_op.len()
    }

    /// Set the peer and tag of message `i` once its other end is known (a reader that pairs
    /// messages after pushing them, as the Paje simulation does).
    pub fn set_peer_tag(&mut self, i: usize, peer: u32, tag: u32) {
        self.peer[i] = peer;
        self.tag[i] = tag;
    }

    /// Events decoded so far.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// The columns as `Events`.
    pub fn finish(self) -> Events {
        let mut e = self.rest;
        e.time = self.time.finish();
        e.kind = self.kind.into();
        e.arg = self.arg.into();
        e.msg = MsgColumns {
            peer: self.peer.into(),
            comm: self.comm.into(),
            tag: self.tag.into(),
            bytes: ByteColumn {
                small: self.bytes.into(),
                large: self.large_bytes,
            },
            request: self.msg_request,
        };
        let co = std::mem::take(&mut e.coll);
        e.coll = CollColumns {
            op: self.coll_op.into(),
            comm: self.coll_comm.into(),
            root: self.coll_root.into(),
            sent: ByteColumn {
                small: self.sent.into(),
                large: co.sent.large,
            },
            received: ByteColumn {
                small: self.received.into(),
                large: co.received.large,
            },
            request: co.request,
        };
        e
    }
}

fn lookup(pairs: &[(u32, u64)], k: usize) -> Option<u64> {
    pairs
        .binary_search_by_key(&(k as u32), |&(i, _)| i)
        .ok()
        .map(|j| pairs[j].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_in_finds_every_kind_of_the_range() {
        let all = EventKind::ALL;
        // every kind next to every other, at every offset in a word, and a short tail
        let kinds: Vec<EventKind> = (0..all.len() * 3 + 5)
            .map(|j| all[(j * 7 + j / all.len()) % all.len()])
            .collect();
        for (lo, hi) in [
            (14, 21),
            (18, 19),
            (13, 19),
            (0, 0),
            (92, 92),
            (0, 92),
            (30, 12),
        ] {
            for from in [0, 1, 7, 8, 9, kinds.len() - 3, kinds.len(), kinds.len() + 4] {
                let want: Vec<usize> = (from..kinds.len())
                    .filter(|&j| (lo..=hi).contains(&(kinds[j] as u8)))
                    .collect();
                let (l, h) = (
                    EventKind::ALL.iter().find(|k| **k as u8 == lo),
                    EventKind::ALL.iter().find(|k| **k as u8 == hi),
                );
                let (Some(&l), Some(&h)) = (l, h) else {
                    continue;
                };
                let got: Vec<usize> = KindsIn::new(&kinds, from, l, h).collect();
                assert_eq!(got, want, "{lo}..={hi} from {from}");
            }
        }
    }

    #[test]
    fn byte_column_keeps_large_values() {
        let mut c = ByteColumn::default();
        c.push(5);
        c.push(u64::MAX);
        c.push(u32::MAX as u64);
        c.push(7);
        assert_eq!(
            (0..4).map(|i| c.get(i)).collect::<Vec<_>>(),
            vec![5, u64::MAX, u32::MAX as u64, 7]
        );
    }

    #[test]
    fn payloads_round_trip() {
        let mut e = Events::default();
        e.push_region(1, EventKind::Enter, 3);
        let m = Msg {
            peer: 1,
            comm: 0,
            tag: 9,
            bytes: 1 << 40,
            request: Some(77),
        };
        e.push_msg(2, EventKind::MpiIsend, m);
        e.attach_attributes(&[Attribute {
            key: 2,
            ty: 4,
            value: 9,
        }]);
        assert!(e.push_extra(3, EventKind::ProgramEnd, &[5]));
        e.push_region(4, EventKind::Leave, 3);
        assert_eq!(e.region(0), Some(3));
        assert_eq!(e.msg(1), Some(m));
        assert_eq!(e.fields(2), &[5]);
        assert_eq!(e.attributes_of(2).len(), 1);
        assert!(e.attributes_of(1).is_empty());
        assert_eq!(e.region(3), Some(3));
    }

    /// The reader's filler gives the columns `Events`' own pushes give, every kind of push,
    /// large byte counts and requests included.
    #[test]
    fn filler_equals_pushes() {
        let mut e = Events::default();
        let mut f = EventsFiller::with_capacity(2);
        let m = |bytes, request| Msg {
            peer: 3,
            comm: 1,
            tag: 7,
            bytes,
            request,
        };
        let c = Coll {
            op: 2,
            comm: 0,
            root: u32::MAX,
            sent: 1 << 33,
            received: 8,
            request: Some(4),
        };
        let a = [Attribute {
            key: 1,
            ty: 4,
            value: 2,
        }];
        e.push_region(1, EventKind::Enter, 5);
        f.push_region(1, EventKind::Enter, 5);
        e.push_msg(2, EventKind::MpiIsend, m(u64::MAX, Some(9)));
        f.push_msg(2, EventKind::MpiIsend, m(u64::MAX, Some(9)));
        e.attach_attributes(&a);
        f.attach_attributes(&a);
        e.push_msg(3, EventKind::MpiRecv, m(12, None));
        f.push_msg(3, EventKind::MpiRecv, m(12, None));
        e.push_coll(4, EventKind::MpiCollectiveEnd, c);
        f.push_coll(4, EventKind::MpiCollectiveEnd, c);
        let end = Coll {
            op: 3,
            comm: 2,
            root: 0,
            sent: 0,
            received: 0,
            request: None,
        };
        e.push_coll(4, EventKind::MpiCollectiveEnd, end);
        f.push_coll_end(4, EventKind::MpiCollectiveEnd, 3, 2, 0);
        assert!(e.push_extra(5, EventKind::ProgramEnd, &[6, 7]));
        assert!(f.push_extra(5, EventKind::ProgramEnd, &[6, 7]));
        e.push_unknown(6, 200);
        f.push_unknown(6, 200);
        e.push_region(7, EventKind::Leave, 5);
        f.push_region(7, EventKind::Leave, 5);
        assert_eq!(f.len(), 8);
        assert_eq!(f.finish(), e);
    }

    /// The time's offset, kind and arg: 9 bytes an event, and a base word a block.
    #[test]
    fn core_columns_are_nine_bytes_per_event() {
        assert_eq!(
            std::mem::size_of::<u32>()
                + std::mem::size_of::<EventKind>()
                + std::mem::size_of::<u32>(),
            9
        );
        let mut e = Events::with_capacity(4096);
        for i in 0..4096u64 {
            e.push_region(i << 20, EventKind::Enter, 0);
        }
        e.shrink_to_fit();
        assert_eq!(e.heap_bytes(), 4096 * 9 + 16 * 8);
    }

    /// A location's times survive the spill file: the offsets mapped, base words and wide
    /// blocks on the heap.
    #[test]
    fn times_read_back_after_spilling() {
        let dir = std::env::temp_dir();
        let Ok(spill) = Spill::new(&dir, None) else {
            return; // no writable temporary directory: nothing to check here
        };
        let mut e = Events::default();
        let times: Vec<u64> = (0..1000u64)
            .map(|i| match i {
                300..=320 => u64::MAX - i,
                _ => i * 1_000_000_007,
            })
            .collect();
        for &t in &times {
            e.push_region(t, EventKind::Enter, 1);
        }
        let before = e.clone();
        e.spill(&spill).expect("spill");
        assert!(e.is_spilled());
        assert_eq!(e.time, times);
        assert_eq!(e, before);
    }
}
