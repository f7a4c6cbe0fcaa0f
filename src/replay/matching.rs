//! Point-to-point message matching (patterns.md §5.3) and the request links of non-blocking
//! operations (§5.2): `sendptr`/`recvptr`, `completion(S)` and `request(R)`.

use super::{LocationState, NONE};
use crate::model::times::Cursor;
use crate::model::{CommIdx, EventKind, Events, KindsIn, LocIdx, TimesRef, Trace};
use rayon::prelude::*;
use std::collections::{BTreeSet, HashMap};

/// The other end of a message, or of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct EventRef {
    pub loc: LocIdx,
    pub event: u32,
}

// SAFETY: `repr(C)` of two u32: no padding, every bit pattern valid (for `--memory-limit`'s
// spill file, `MsgLinks::partner`).
unsafe impl crate::model::spill::Pod for EventRef {}

impl EventRef {
    pub const NONE: EventRef = EventRef {
        loc: NONE,
        event: NONE,
    };

    pub fn is_some(&self) -> bool {
        self.loc != NONE
    }
}

/// Per location, indexed like `Events::msg` (the message payload index).
#[derive(Clone, Debug, Default)]
pub struct MsgLinks {
    /// For a send: its receive (`recvptr`); for a receive: its send (`sendptr`). On the heap,
    /// or with `--memory-limit` in the spill file beside the location's events.
    pub partner: crate::model::spill::Column<EventRef>,
    /// For an ISEND: its ISEND_COMPLETE event; for an IRECV: its IRECV_REQUEST event.
    /// Empty when the location has no such link (read it with `request_event`).
    request_event: Vec<u32>,
    /// The ISEND was cancelled (§4.1.4). Empty when the location cancelled none.
    cancelled: Vec<bool>,
}

impl MsgLinks {
    /// Message `k`'s request link: for an ISEND its ISEND_COMPLETE event, for an IRECV its
    /// IRECV_REQUEST event; `NONE` when the trace has none.
    #[inline]
    pub fn request_event(&self, k: usize) -> u32 {
        self.request_event.get(k).copied().unwrap_or(NONE)
    }

    /// Message `k` is an ISEND that was cancelled (§4.1.4): it takes part in nothing.
    #[inline]
    pub fn cancelled(&self, k: usize) -> bool {
        self.cancelled.get(k).copied().unwrap_or(false)
    }

    /// Links from their columns (`distributed::ghost`: another process's links, renumbered);
    /// `request_event` all `NONE` and `cancelled` all false may be given empty.
    pub fn from_parts(
        partner: Vec<EventRef>,
        request_event: Vec<u32>,
        cancelled: Vec<bool>,
    ) -> MsgLinks {
        let request_event = if request_event.iter().all(|&e| e == NONE) {
            Vec::new()
        } else {
            request_event
        };
        let cancelled = if cancelled.iter().any(|&c| c) {
            cancelled
        } else {
            Vec::new()
        };
        MsgLinks {
            partner: partner.into(),
            request_event,
            cancelled,
        }
    }

    fn set_request_event(&mut self, k: usize, e: u32) {
        if self.request_event.is_empty() {
            self.request_event = vec![NONE; self.partner.len()];
        }
        self.request_event[k] = e;
    }

    fn set_cancelled(&mut self, k: usize) {
        if self.cancelled.is_empty() {
            self.cancelled = vec![false; self.partner.len()];
        }
        self.cancelled[k] = true;
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MatchStats {
    pub messages: u64,
    pub unmatched_sends: u64,
    pub unmatched_receives: u64,
    /// Send/receive records whose peer rank does not resolve to a location.
    pub unresolved_peers: u64,
    /// Send/receive records outside any MPI call (§4.1.3).
    pub ignored_records: u64,
    /// Messages whose send record is later than their receive (patterns.md §7.1).
    pub clock_violations: u64,
    /// The largest such difference, in ticks.
    pub max_violation_ticks: u64,
    /// Locations that sent or received such a message.
    pub violation_locations: u64,
}

/// Locations that sent or received a message violating the clock condition, ascending.
pub type Violators = Vec<u32>;

/// One process's sides of one direction (its sends or its receives), sorted into MPI's
/// non-overtaking order (§5.3.2): by communicator, peer process, tag, then program order
/// on the sender and posting order on the receiver (for a thread of a multi-threaded
/// process the posting timestamp first, since threads of one process share a clock, then
/// the event's position, then its location). 4 bytes a side (the event) when the process
/// has one location, 8 when it has more; no global list of all sides is ever built.
#[derive(Default)]
struct Sides {
    event: Vec<u32>,
    /// The events' locations; empty when the process has one location (`only`).
    loc: Vec<LocIdx>,
    only: LocIdx,
    /// Maximal runs of one (communicator, peer process), ascending by both.
    runs: Vec<Run>,
    /// A remote process's sides (`run --mpi`): their tags and times, which this process's
    /// trace does not hold; empty for a process read here.
    tag: Vec<u32>,
    time: Vec<u64>,
}

#[derive(Clone, Copy)]
struct Run {
    comm: CommIdx,
    peer: LocIdx,
    start: u32,
    end: u32,
    /// The tag of the run's first side, and whether every side has it (then a run of the
    /// other direction with the same one tag pairs side by side, no tag read).
    tag: u32,
    one_tag: bool,
}

impl Run {
    /// A run of one side at `j`.
    fn new(comm: CommIdx, peer: LocIdx, tag: u32, j: usize) -> Run {
        Run {
            comm,
            peer,
            start: j as u32,
            end: j as u32 + 1,
            tag,
            one_tag: true,
        }
    }
}

impl Sides {
    #[inline]
    fn at(&self, j: usize) -> (LocIdx, u32) {
        (self.loc.get(j).copied().unwrap_or(self.only), self.event[j])
    }

    fn len(&self) -> usize {
        self.event.len()
    }

    /// Side `i` of location `l` with sort key `key`, noted in `b` (its runs, its order).
    #[inline(always)]
    fn push<K: SortKey>(&mut self, b: &mut Runs<K>, key: K, i: usize, l: LocIdx) {
        b.note(self.event.len(), key);
        self.event.push(i as u32);
        if K::THREADED {
            self.loc.push(l);
        }
    }

    fn run(&self, comm: CommIdx, peer: LocIdx) -> Option<Run> {
        let k = self
            .runs
            .binary_search_by(|r| (r.comm, r.peer).cmp(&(comm, peer)))
            .ok()?;
        Some(self.runs[k])
    }

    /// The tag of side `s` (of this `Sides`).
    #[inline(always)]
    fn tag(&self, trace: &Trace, s: Side) -> u32 {
        if self.tag.is_empty() {
            let ev = &trace.events[s.0 as usize];
            ev.msg.tag[ev.arg[s.1 as usize] as usize]
        } else {
            self.tag[s.2]
        }
    }

    /// The time of side `s` (of this `Sides`).
    #[inline(always)]
    fn time(&self, trace: &Trace, s: Side) -> u64 {
        if self.time.is_empty() {
            trace.events[s.0 as usize].time.get(s.1 as usize)
        } else {
            self.time[s.2]
        }
    }
}

/// A `Sides` as pairing reads it (`Merge`): side `j`, a side's tag, time and payload index,
/// and the slot of its location among its process's locations.
trait Read: Copy {
    fn at(&self, j: usize) -> Side;
    fn tag(&self, s: Side) -> u32;
    fn time(&self, s: Side) -> u64;
    /// A reader of sides' times read in event order (a location's block held: `Cursor`).
    type Clock;
    fn clock(&self) -> Self::Clock;
    /// `time(s)` through `c`, a clock of this `Read`.
    fn time_in(&self, c: &mut Self::Clock, s: Side) -> u64;
    /// The side's payload index (a side of a process read here).
    fn msg(&self, s: Side) -> usize;
    /// The slot of the side's location among `locs`, its process's locations.
    fn slot(&self, locs: &[LocIdx], s: Side) -> usize;
}

/// The sides of a process of one location read here, with the location's columns taken
/// once (not per side through the trace).
#[derive(Clone, Copy)]
struct One<'a> {
    event: &'a [u32],
    l: LocIdx,
    arg: &'a [u32],
    tag: &'a [u32],
    time: TimesRef<'a>,
}

/// Any sides: of a process of threads (a location per side), or shipped from another
/// process (their tags and times with them).
#[derive(Clone, Copy)]
struct Any<'a> {
    s: &'a Sides,
    trace: &'a Trace,
}

/// `s` as `One` where it is the sides of a process of one location read here.
fn one<'a>(trace: &'a Trace, s: &'a Sides) -> Option<One<'a>> {
    let ev = trace.events.get(s.only as usize)?;
    (s.loc.is_empty() && s.tag.is_empty()).then(|| One {
        event: &s.event[..],
        l: s.only,
        arg: &ev.arg[..],
        tag: &ev.msg.tag[..],
        time: ev.time.view(),
    })
}

impl<'a> Read for One<'a> {
    #[inline(always)]
    fn at(&self, j: usize) -> Side {
        (self.l, self.event[j], j)
    }

    #[inline(always)]
    fn tag(&self, s: Side) -> u32 {
        self.tag[self.arg[s.1 as usize] as usize]
    }

    #[inline(always)]
    fn time(&self, s: Side) -> u64 {
        self.time.get(s.1 as usize)
    }

    type Clock = Cursor<'a>;

    #[inline(always)]
    fn clock(&self) -> Cursor<'a> {
        self.time.cursor()
    }

    #[inline(always)]
    fn time_in(&self, c: &mut Cursor<'a>, s: Side) -> u64 {
        c.get(s.1 as usize)
    }

    #[inline(always)]
    fn msg(&self, s: Side) -> usize {
        self.arg[s.1 as usize] as usize
    }

    #[inline(always)]
    fn slot(&self, _: &[LocIdx], _: Side) -> usize {
        0
    }
}

impl Read for Any<'_> {
    #[inline(always)]
    fn at(&self, j: usize) -> Side {
        let (l, i) = self.s.at(j);
        (l, i, j)
    }

    #[inline(always)]
    fn tag(&self, s: Side) -> u32 {
        self.s.tag(self.trace, s)
    }

    #[inline(always)]
    fn time(&self, s: Side) -> u64 {
        self.s.time(self.trace, s)
    }

    type Clock = ();

    #[inline(always)]
    fn clock(&self) {}

    #[inline(always)]
    fn time_in(&self, _: &mut (), s: Side) -> u64 {
        self.time(s)
    }

    #[inline(always)]
    fn msg(&self, s: Side) -> usize {
        msg_index(self.trace, s.0, s.1)
    }

    #[inline(always)]
    fn slot(&self, locs: &[LocIdx], s: Side) -> usize {
        if locs.len() == 1 {
            0
        } else {
            locs.binary_search(&s.0).unwrap_or(0)
        }
    }
}

/// One run of a pass of `pair`, given the two runs' sides as whatever `Read` fits them.
trait RunPass {
    fn run<S: Read, R: Read>(&mut self, sends: S, recvs: R);
}

/// `p` run over `sends` and `recvs`, each read as `One` where it can be (one code path per
/// pair of kinds, no branch on the kind per side).
fn with_reads(trace: &Trace, sends: &Sides, recvs: &Sides, p: &mut impl RunPass) {
    let (s, r) = (Any { s: sends, trace }, Any { s: recvs, trace });
    match (one(trace, sends), one(trace, recvs)) {
        (Some(s), Some(r)) => p.run(s, r),
        (Some(s), None) => p.run(s, r),
        (None, Some(r)) => p.run(s, r),
        (None, None) => p.run(s, r),
    }
}

/// One process: its locations (ascending), their links, its sends and receives.
struct Proc {
    me: LocIdx,
    locs: Vec<LocIdx>,
    links: Vec<MsgLinks>,
    sends: Sides,
    recvs: Sides,
    unresolved: u64,
    ignored: u64,
}

/// The payload index, communicator and tag of message event `i` of location `l`.
#[inline]
fn payload(trace: &Trace, l: LocIdx, i: u32) -> (usize, CommIdx, u32) {
    let ev = &trace.events[l as usize];
    let k = ev.arg[i as usize] as usize;
    (k, ev.msg.comm[k], ev.msg.tag[k])
}

/// The payload index of message event `i` of location `l`.
#[inline]
fn msg_index(trace: &Trace, l: LocIdx, i: u32) -> usize {
    trace.events[l as usize].arg[i as usize] as usize
}

/// Each location's partner column as a slice, written through while pairing (one
/// `DerefMut` per location, not one per message).
fn partners(links: &mut [MsgLinks]) -> Vec<&mut [EventRef]> {
    links.iter_mut().map(|x| &mut x.partner[..]).collect()
}

/// Which regions are MPI calls (`mpi[r]`): a message record counts only inside one
/// (§4.1.3).
pub(super) fn mpi_regions(trace: &Trace) -> Vec<bool> {
    (trace.defs.regions.iter())
        .map(|r| r.paradigm == crate::model::Paradigm::MPI)
        .collect()
}

/// A location's blocking sides as pass A notes them on its way (what `blocking_sides`
/// finds, without a pass of its own): the events of the sends and receives inside an MPI
/// call, in event order, and how many such records lie outside one.
#[derive(Default)]
pub(super) struct Blocking {
    sends: Vec<u32>,
    recvs: Vec<u32>,
    ignored: u64,
}

/// What pass A noted of a location's message records for `collect`.
#[derive(Default)]
pub(super) enum Noted {
    /// Nothing (`collect` finds the sides itself).
    #[default]
    Off,
    /// A record of another kind than blocking sends, receives and REQUEST_TESTs came (the
    /// location goes event by event).
    Other,
    Blocking(Blocking),
}

/// Pass A's noting of a location's blocking sides (`Noted`), each message record with the
/// region of the instance enclosing it.
pub(super) struct Noter<'a> {
    mpi: &'a [bool],
    pub(super) noted: Noted,
}

impl<'a> Noter<'a> {
    /// Noting the sides of a location of `nmsg` messages (`mpi` as `mpi_regions` makes it;
    /// empty: noting nothing).
    pub(super) fn new(mpi: &'a [bool], nmsg: usize) -> Noter<'a> {
        let noted = if mpi.is_empty() {
            Noted::Off
        } else {
            // as `collect_in` presizes them: half the messages a side
            Noted::Blocking(Blocking {
                sends: Vec::with_capacity(nmsg.div_ceil(2)),
                recvs: Vec::with_capacity(nmsg.div_ceil(2)),
                ignored: 0,
            })
        };
        Noter { mpi, noted }
    }

    /// Event `i` of kind `kind`, inside an instance of `region` (`RegionIdx::MAX`: outside
    /// any, or in a frame entered by nobody here).
    #[inline(always)]
    pub(super) fn note(&mut self, kind: EventKind, i: usize, region: crate::model::RegionIdx) {
        let (lo, hi) = (
            EventKind::MpiSend as u8,
            EventKind::MpiRequestCancelled as u8,
        );
        if (kind as u8).wrapping_sub(lo) <= hi - lo {
            self.side(kind, i, region);
        }
    }

    #[inline(always)]
    fn side(&mut self, kind: EventKind, i: usize, region: crate::model::RegionIdx) {
        let Noted::Blocking(b) = &mut self.noted else {
            return;
        };
        let to = match kind {
            EventKind::MpiSend => &mut b.sends,
            EventKind::MpiRecv => &mut b.recvs,
            EventKind::MpiRequestTest => return,
            _ => {
                self.noted = Noted::Other;
                return;
            }
        };
        if self.mpi.get(region as usize) == Some(&true) {
            to.push(i as u32);
        } else {
            b.ignored += 1;
        }
    }
}

/// Collect one process's sides (in location order, then event order) and its request
/// links, then sort them. `states` the locations' pass-A pointer columns, `mpi[r]` whether
/// region `r` is an MPI call: a message record counts only inside one (§4.1.3); `noted`
/// what pass A noted of each location's records (empty: nothing).
fn collect(
    trace: &Trace,
    (me, locs, noted): (LocIdx, Vec<LocIdx>, Vec<Noted>),
    states: &[LocationState],
    mpi: &[bool],
) -> Proc {
    if locs.len() > 1 {
        collect_in::<Key>(trace, (me, locs, noted), states, mpi)
    } else {
        collect_in::<OneKey>(trace, (me, locs, noted), states, mpi)
    }
}

/// The sides pass A noted (`b`) appended to the sends' and receives' `Sides` (events only;
/// moved where they are the first); how many records lay outside an MPI call.
fn take_noted(b: Blocking, [sends, recvs]: [&mut Sides; 2]) -> u64 {
    for (to, from) in [(&mut sends.event, b.sends), (&mut recvs.event, b.recvs)] {
        if to.is_empty() {
            *to = from;
        } else {
            to.extend_from_slice(&from);
        }
    }
    b.ignored
}

/// A location's pending non-blocking requests while `collect_in` walks it: request → the
/// ISEND's message index, request → the IRECV_REQUEST event.
#[derive(Default)]
struct Requests {
    pending_isend: HashMap<u64, u32>,
    posted_irecv: HashMap<u64, u32>,
}

impl Requests {
    /// An ISEND or IRECV (`kind`), event `i` with payload `k`: its order among its
    /// process's sides (an IRECV's posting order, §5.3.2; else `i`), its request link set.
    #[inline(never)]
    fn side(
        &mut self,
        ev: &Events,
        i: usize,
        k: usize,
        kind: EventKind,
        links: &mut MsgLinks,
    ) -> u32 {
        let request = ev.msg(i).and_then(|m| m.request);
        if kind == EventKind::MpiIsend {
            if let Some(r) = request {
                self.pending_isend.insert(r, k as u32);
            }
        } else if let Some(q) = request.and_then(|r| self.posted_irecv.remove(&r)) {
            links.set_request_event(k, q);
            return q;
        }
        i as u32
    }

    /// An IRECV_REQUEST, ISEND_COMPLETE or REQUEST_CANCELLED (`kind`), event `i`.
    #[inline(never)]
    fn other(&mut self, ev: &Events, i: usize, kind: EventKind, links: &mut MsgLinks) {
        let Some(&r) = ev.fields(i).first() else {
            return;
        };
        match kind {
            EventKind::MpiIrecvRequest => {
                self.posted_irecv.insert(r, i as u32);
            }
            EventKind::MpiIsendComplete => {
                if let Some(k) = self.pending_isend.remove(&r) {
                    links.set_request_event(k as usize, i as u32);
                }
            }
            EventKind::MpiRequestCancelled => {
                if let Some(k) = self.pending_isend.remove(&r) {
                    links.set_cancelled(k as usize);
                }
                self.posted_irecv.remove(&r);
            }
            _ => {}
        }
    }
}

/// `collect` of a process with more than one location (`THREADED`: its sides note their
/// locations, and the posting times order them first) or with one.
#[inline(never)]
fn collect_in<K: SortKey>(
    trace: &Trace,
    (me, locs, mut noted): (LocIdx, Vec<LocIdx>, Vec<Noted>),
    states: &[LocationState],
    mpi: &[bool],
) -> Proc {
    let threaded = K::THREADED;
    let mut p = Proc {
        me,
        links: Vec::with_capacity(locs.len()),
        sends: Sides::default(),
        recvs: Sides::default(),
        unresolved: 0,
        ignored: 0,
        locs,
    };
    // the runs and whether the sides are in order, noted as they come (most traces have
    // them in event order: then no sort)
    let (mut send_b, mut recv_b) = (Runs::<K>::default(), Runs::<K>::default());
    let (mut ignored, mut unresolved) = (0, 0);
    for (slot, &l) in p.locs.iter().enumerate() {
        let ev = &trace.events[l as usize];
        let nmsg = ev.msg.peer.len();
        let mut links = MsgLinks {
            partner: crate::model::spill::filled(nmsg, EventRef::NONE).into(),
            ..Default::default()
        };
        let noted = noted.get_mut(slot).map(std::mem::take).unwrap_or_default();
        // most processes send about as often as they receive: room for half the messages
        // a side, so the columns do not double (and hold both copies) while they grow
        for side in [&mut p.sends, &mut p.recvs] {
            if !matches!(noted, Noted::Blocking(_)) {
                side.event.reserve_exact(nmsg.div_ceil(2));
            }
            if threaded {
                side.loc.reserve_exact(nmsg.div_ceil(2));
            }
        }
        let first_send = p.sends.event.len();
        let (kinds, arg) = (&ev.kind[..], &ev.arg[..]);
        let ptr = states.get(l as usize).map_or(&[][..], |s| &s.ptr[..]);
        // a location whose messages are blocking: its sides found in one tight pass (or
        // as pass A noted them) and keyed in another (fewer values live at once); else
        // event by event
        let r0 = p.recvs.event.len();
        let blocking = match noted {
            Noted::Blocking(b) => Some(take_noted(b, [&mut p.sends, &mut p.recvs])),
            Noted::Other => None,
            Noted::Off => blocking_sides(kinds, ptr, arg, mpi, [&mut p.sends, &mut p.recvs]),
        };
        if let Some(n) = blocking {
            ignored += n;
            unresolved += keyed(&mut p.sends, &mut send_b, first_send, trace, l, me);
            unresolved += keyed(&mut p.recvs, &mut recv_b, r0, trace, l, me);
        } else {
            let mut requests = Requests::default();
            let (peers, comms, tags) = payload_columns(ev);
            let mut peer_of = PeerOf::default();
            // most events are none of the kinds below (MpiSend ..= MpiRequestCancelled):
            // passed over 8 a word
            let matched =
                KindsIn::new(kinds, 0, EventKind::MpiSend, EventKind::MpiRequestCancelled);
            for i in matched {
                let kind = kinds[i];
                let send = match kind {
                    EventKind::MpiSend | EventKind::MpiIsend => true,
                    EventKind::MpiRecv | EventKind::MpiIrecv => false,
                    _ => {
                        requests.other(ev, i, kind, &mut links);
                        continue;
                    }
                };
                if !in_mpi(ptr, arg, mpi, i) {
                    ignored += 1; // §4.1.3: a record outside any MPI call
                    continue;
                }
                let k = arg[i] as usize;
                let (comm, tag, rank) = (comms[k], tags[k], peers[k]);
                let Some(peer) = peer_of.get(trace, me, comm, rank) else {
                    unresolved += 1;
                    continue;
                };
                let order = if matches!(kind, EventKind::MpiIsend | EventKind::MpiIrecv) {
                    requests.side(ev, i, k, kind, &mut links)
                } else {
                    i as u32
                };
                // one location: no time, the location the same for all sides (`OneKey`)
                let at = if threaded {
                    ev.time.get(order as usize)
                } else {
                    0
                };
                let key = K::new(comm, peer, tag, at, order, l);
                if send {
                    p.sends.push(&mut send_b, key, i, l);
                } else {
                    p.recvs.push(&mut recv_b, key, i, l);
                }
            }
        }
        // §4.1.4: a cancelled send takes part in nothing
        if !links.cancelled.is_empty() {
            drop_cancelled(&mut p.sends, &ev.arg, &links, first_send);
            send_b.unsorted = true; // runs found again below
        }
        p.links.push(links);
        ev.release_resident();
    }
    p.ignored = ignored;
    p.unresolved = unresolved;
    p.sends.only = me;
    p.recvs.only = me;
    for (recv, b) in [(false, send_b), (true, recv_b)] {
        if !b.unsorted {
            let s = if recv { &mut p.recvs } else { &mut p.sends };
            s.runs = b.runs;
        } else {
            sort_sides(trace, &mut p, recv, threaded);
        }
    }
    p
}

/// The peer, tag and communicator columns of `ev`'s messages at one length (one bounds
/// check a message, not three).
fn payload_columns(ev: &Events) -> (&[u32], &[CommIdx], &[u32]) {
    let (peers, comms, tags) = (&ev.msg.peer[..], &ev.msg.comm[..], &ev.msg.tag[..]);
    let m = peers.len().min(comms.len()).min(tags.len());
    (&peers[..m], &comms[..m], &tags[..m])
}

/// §4.1.3: the region of the instance enclosing event `i` (`enterptr`, from pass A's
/// pointer column `ptr`; `arg` the region column) is an MPI call (`mpi[region]`).
#[inline(always)]
fn in_mpi(ptr: &[u32], arg: &[u32], mpi: &[bool], i: usize) -> bool {
    match ptr.get(i) {
        Some(&e) if e != NONE => {
            let r = arg.get(e.min(i as u32) as usize);
            r.and_then(|&r| mpi.get(r as usize)) == Some(&true)
        }
        _ => false,
    }
}

/// The peer process of a message's (communicator, rank) as its process sees it, the last
/// one remembered (consecutive messages mostly share it).
struct PeerOf(CommIdx, u32, Option<LocIdx>);

impl Default for PeerOf {
    fn default() -> PeerOf {
        PeerOf(CommIdx::MAX, 0, None)
    }
}

impl PeerOf {
    /// The location standing for the process of `rank` in `comm` (`me` the asking process).
    #[inline(always)]
    fn get(&mut self, trace: &Trace, me: LocIdx, comm: CommIdx, rank: u32) -> Option<LocIdx> {
        if (comm, rank) != (self.0, self.1) {
            let c = &trace.defs.comms[comm as usize];
            *self = PeerOf(comm, rank, c.location_of(rank, me));
        }
        self.2
    }
}

/// `collect`'s first pass over a location whose message records are blocking sends and
/// receives (and REQUEST_TESTs, which take part in nothing): the events of those inside an
/// MPI call (§4.1.3) appended to the sends' and receives' `Sides` (events only), the count
/// of the others; `None`, nothing appended, at a record of another kind (non-blocking ones
/// and their requests go event by event).
#[inline(never)]
fn blocking_sides(
    kinds: &[EventKind],
    ptr: &[u32],
    arg: &[u32],
    mpi: &[bool],
    [sends, recvs]: [&mut Sides; 2],
) -> Option<u64> {
    let (sends, recvs) = (&mut sends.event, &mut recvs.event);
    let (s0, r0) = (sends.len(), recvs.len());
    let mut ignored = 0;
    for i in KindsIn::new(kinds, 0, EventKind::MpiSend, EventKind::MpiRequestCancelled) {
        let to = match kinds[i] {
            EventKind::MpiSend => &mut *sends,
            EventKind::MpiRecv => &mut *recvs,
            EventKind::MpiRequestTest => continue,
            _ => {
                sends.truncate(s0);
                recvs.truncate(r0);
                return None;
            }
        };
        if in_mpi(ptr, arg, mpi, i) {
            to.push(i as u32);
        } else {
            ignored += 1;
        }
    }
    Some(ignored)
}

/// `collect`'s second pass after `blocking_sides`: location `l`'s sides of `s` from `first`
/// on (events in order) keyed and noted in `b`, those whose peer rank resolves to no
/// location dropped; how many were.
#[inline(never)]
fn keyed<K: SortKey>(
    s: &mut Sides,
    b: &mut Runs<K>,
    first: usize,
    trace: &Trace,
    l: LocIdx,
    me: LocIdx,
) -> u64 {
    let ev = &trace.events[l as usize];
    let (peers, comms, tags) = payload_columns(ev);
    let (arg, time) = (&ev.arg[..], ev.time.view());
    let mut peer_of = PeerOf::default();
    let (mut kept, mut unresolved) = (first, 0);
    for j in first..s.event.len() {
        let i = s.event[j];
        let k = arg[i as usize] as usize;
        let (comm, tag, rank) = (comms[k], tags[k], peers[k]);
        let Some(peer) = peer_of.get(trace, me, comm, rank) else {
            unresolved += 1;
            continue;
        };
        let at = if K::THREADED { time.get(i as usize) } else { 0 };
        b.note(kept, K::new(comm, peer, tag, at, i, l));
        s.event[kept] = i;
        kept += 1;
    }
    s.event.truncate(kept);
    if K::THREADED {
        s.loc.resize(kept, l);
    }
    unresolved
}

/// The sends from `first` on (a location's, `arg` its column) without the cancelled ones.
fn drop_cancelled(s: &mut Sides, arg: &[u32], links: &MsgLinks, first: usize) {
    let threaded = !s.loc.is_empty();
    let mut kept = first;
    for j in first..s.event.len() {
        let i = s.event[j] as usize;
        if !links.cancelled(arg[i] as usize) {
            s.event[kept] = s.event[j];
            if threaded {
                s.loc[kept] = s.loc[j];
            }
            kept += 1;
        }
    }
    s.event.truncate(kept);
    s.loc.truncate(kept);
}

/// A side's sort key as `Runs` notes it: keys compare as the sides' places in
/// non-overtaking order; the least key is the default.
trait SortKey: Copy + Default + Ord {
    /// The key of a process with more than one location (its sides note their locations,
    /// and the posting times order them first).
    const THREADED: bool;
    fn new(comm: CommIdx, peer: LocIdx, tag: u32, at: u64, order: u32, l: LocIdx) -> Self;
    /// The communicator, peer process and tag.
    fn head(&self) -> (CommIdx, LocIdx, u32);
}

/// A side's place in non-overtaking order, (communicator, peer process, tag, posting time,
/// order, location), packed most significant first into two words: keys compare as the
/// tuples do, in a few instructions.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Key(u128, u128);

impl SortKey for Key {
    const THREADED: bool = true;

    #[inline(always)]
    fn new(comm: CommIdx, peer: LocIdx, tag: u32, at: u64, order: u32, l: LocIdx) -> Key {
        Key(
            (comm as u128) << 96 | (peer as u128) << 64 | (tag as u128) << 32 | (at >> 32) as u128,
            ((at as u32) as u128) << 64 | (order as u128) << 32 | l as u128,
        )
    }

    #[inline(always)]
    fn head(&self) -> (CommIdx, LocIdx, u32) {
        OneKey(self.0).head()
    }
}

/// The key of a side of a process of one location, where the posting time and the
/// location are the same for all sides: (communicator, peer process, tag, order) in one
/// word, ordered among such keys as `Key` orders them.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
struct OneKey(u128);

impl SortKey for OneKey {
    const THREADED: bool = false;

    #[inline(always)]
    fn new(comm: CommIdx, peer: LocIdx, tag: u32, _: u64, order: u32, _: LocIdx) -> OneKey {
        OneKey((comm as u128) << 96 | (peer as u128) << 64 | (tag as u128) << 32 | order as u128)
    }

    #[inline(always)]
    fn head(&self) -> (CommIdx, LocIdx, u32) {
        (
            (self.0 >> 96) as u32,
            (self.0 >> 64) as u32,
            (self.0 >> 32) as u32,
        )
    }
}

/// The runs of one direction's sides as they are collected, and whether they came in order.
#[derive(Default)]
struct Runs<K> {
    runs: Vec<Run>,
    /// The last side's key (at first the least key there is).
    prev: K,
    /// Out of order (the default: in order).
    unsorted: bool,
}

impl<K: SortKey> Runs<K> {
    /// Side `j` has sort key `k`.
    #[inline(always)]
    fn note(&mut self, j: usize, k: K) {
        let (comm, peer, tag) = k.head();
        match self.runs.last_mut() {
            Some(r) if r.comm == comm && r.peer == peer => {
                r.end = j as u32 + 1;
                r.one_tag &= r.tag == tag;
            }
            _ => self.runs.push(Run::new(comm, peer, tag, j)),
        }
        self.unsorted |= self.prev > k;
        self.prev = k;
    }
}

/// Sort one direction of a process's sides into non-overtaking order and find its runs.
fn sort_sides(trace: &Trace, p: &mut Proc, recv: bool, threaded: bool) {
    let me = p.me;
    let links = &p.links;
    let locs = &p.locs;
    let key = |l: LocIdx, i: u32| {
        let (k, comm, tag) = payload(trace, l, i);
        let ev = &trace.events[l as usize];
        let peer = trace.defs.comms[comm as usize]
            .location_of(ev.msg.peer[k], me)
            .unwrap_or(NONE);
        let mut order = i;
        if recv {
            let slot = if locs.len() == 1 {
                0
            } else {
                locs.binary_search(&l).unwrap_or(0)
            };
            let q = links[slot].request_event(k);
            if q != NONE {
                order = q; // posting order (§5.3.2)
            }
        }
        let at = if threaded {
            ev.time.get(order as usize)
        } else {
            0
        };
        Key::new(comm, peer, tag, at, order, l)
    };
    let s = if recv { &mut p.recvs } else { &mut p.sends };
    let runs = |s: &Sides| -> (Vec<Run>, bool) {
        let mut b = Runs::<Key>::default();
        for j in 0..s.len() {
            let (l, i) = s.at(j);
            b.note(j, key(l, i));
        }
        (b.runs, !b.unsorted)
    };
    let (found, sorted) = runs(s);
    if sorted {
        s.runs = found;
        return;
    }
    drop(found);
    if threaded {
        let mut v: Vec<(LocIdx, u32)> =
            s.loc.iter().copied().zip(s.event.iter().copied()).collect();
        v.sort_by_cached_key(|a| key(a.0, a.1));
        for (j, (l, i)) in v.into_iter().enumerate() {
            s.loc[j] = l;
            s.event[j] = i;
        }
    } else {
        // each key once (a key costs a payload and a rank lookup), not once per comparison
        s.event.sort_by_cached_key(|&a| key(me, a));
    }
    s.runs = runs(s).0;
}

/// A run of sends and the run of receives of the same (communicator, sender, receiver)
/// walked together: within one tag the n-th send meets the n-th receive (§5.3.2). Yields
/// every pair, and every side left alone with `None` for the other.
struct Merge<S, R> {
    sends: S,
    recvs: R,
    a: usize,
    ae: usize,
    b: usize,
    be: usize,
    /// Both runs have one tag, the same: the sides pair by position (no tag read).
    same: bool,
}

fn merge<S: Read, R: Read>(sends: S, sr: Option<Run>, recvs: R, rr: Option<Run>) -> Merge<S, R> {
    let (a, ae) = sr.map_or((0, 0), |r| (r.start as usize, r.end as usize));
    let (b, be) = rr.map_or((0, 0), |r| (r.start as usize, r.end as usize));
    let same = matches!((sr, rr), (Some(x), Some(y)) if x.one_tag && y.one_tag && x.tag == y.tag);
    Merge {
        sends,
        recvs,
        a,
        ae,
        b,
        be,
        same,
    }
}

impl<S: Read, R: Read> Iterator for Merge<S, R> {
    type Item = (Option<Side>, Option<Side>);

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        let s = (self.a < self.ae).then(|| self.sends.at(self.a));
        let r = (self.b < self.be).then(|| self.recvs.at(self.b));
        let ord = match (s, r) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(_), Some(_)) if self.same => std::cmp::Ordering::Equal,
            (Some(s), Some(r)) => self.sends.tag(s).cmp(&self.recvs.tag(r)),
        };
        Some(match ord {
            std::cmp::Ordering::Less => {
                self.a += 1;
                (s, None)
            }
            std::cmp::Ordering::Greater => {
                self.b += 1;
                (None, r)
            }
            std::cmp::Ordering::Equal => {
                self.a += 1;
                self.b += 1;
                (s, r)
            }
        })
    }
}

/// A side as `Merge` hands it on: location, event, position in its `Sides`.
type Side = (LocIdx, u32, usize);

/// What one process found while matching its receives (or its sends).
#[derive(Default)]
struct Found {
    stats: MatchStats,
    violating: BTreeSet<u32>,
    unmatched: BTreeSet<u32>,
}

/// Match every receive to its send; a send or receive record counts only inside an MPI call
/// (§4.1.3), as the pointer column of `states` (pass A) says. Returns the links per location, the statistics, the
/// locations touched by clock-condition violations and those with unmatched messages.
/// `master[l]` is the location standing for `l`'s process in the communicators (the process's
/// master thread; `l` itself without threads).
///
/// Per process, its sends and its receives are sorted into non-overtaking order (4 bytes a
/// side); then each process pairs its receives with the sends of their senders, and each
/// sender its sends with the receives of their receivers, both in parallel and each writing
/// only its own locations' links.
///
/// `noted[l]`: what pass A noted of location `l`'s message records (`Noted::Off` where it
/// is missing).
pub(super) fn match_messages(
    trace: &Trace,
    states: &[LocationState],
    master: &[u32],
    noted: Vec<Noted>,
) -> (Vec<MsgLinks>, MatchStats, Violators, Vec<u32>) {
    let m = collect_noted(trace, states, master, None, noted).pair(trace, Vec::new());
    (m.links, m.stats, m.violators, m.unmatched)
}

/// One process's sides as the pairing reads them: its master location, sends, receives.
type ProcSides = (LocIdx, Sides, Sides);
/// One process's locations (ascending) and their links.
type Own = (Vec<LocIdx>, Vec<MsgLinks>);

/// The processes of a share of the locations (all when `keep` is `None`), collected and
/// sorted, ready to be paired (`Share::pair`). `run --mpi` ships the runs whose peer
/// process is elsewhere (`Share::outgoing`) to that process's owner and pairs with what the
/// owners of its peers shipped (issue 24).
pub struct Share {
    nloc: usize,
    /// Which locations are held here (all when empty).
    keep: Vec<bool>,
    proc_of: Vec<u32>,
    links: Vec<Own>,
    sides: Vec<ProcSides>,
    unresolved: u64,
    ignored: u64,
}

/// A run of one process's sends (or receives) to (from) one peer process on one
/// communicator, as the owner of that process ships it to the owner of the peer: its sides
/// in non-overtaking order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteRun {
    /// The process (its master location) whose sides these are.
    pub proc: LocIdx,
    /// Receives (else sends).
    pub recv: bool,
    pub comm: CommIdx,
    /// The peer process (its master location).
    pub peer: LocIdx,
    /// Per side: location, event, tag, time.
    pub sides: Vec<(LocIdx, u32, u32, u64)>,
}

/// What matching found: the links of the locations held (the others' empty), the
/// statistics, the locations touched by clock-condition violations and those with
/// unmatched messages — over the share's processes (for `run --mpi` partial: the job sums
/// them; `violation_locations` is left to who unites the locations).
#[derive(Clone, Debug, Default)]
pub struct Matched {
    pub links: Vec<MsgLinks>,
    pub stats: MatchStats,
    pub violators: Violators,
    pub unmatched: Vec<u32>,
}

/// The processes of a share: the process of each master location, and each process's
/// master location and locations (ascending), for the locations `keep` selects (all when
/// `None`).
fn processes(
    nloc: usize,
    master: &[u32],
    keep: Option<&[bool]>,
) -> (Vec<u32>, Vec<(LocIdx, Vec<LocIdx>)>) {
    let mut proc_of = vec![NONE; nloc];
    let mut groups: Vec<(LocIdx, Vec<LocIdx>)> = Vec::new();
    for l in 0..nloc {
        if keep.is_some_and(|k| k.get(l) != Some(&true)) {
            continue;
        }
        let m = master.get(l).map_or(l, |&m| m as usize);
        let m = if m < nloc { m } else { l };
        if proc_of[m] == NONE {
            proc_of[m] = groups.len() as u32;
            groups.push((m as LocIdx, Vec::new()));
        }
        groups[proc_of[m] as usize].1.push(l as LocIdx);
    }
    (proc_of, groups)
}

/// Collect and sort the sides of the processes of the locations `keep` selects (all when
/// `None`; a share holds whole processes); `states[l]` location `l`'s pass-A state (its
/// pointer column says which records lie inside an MPI call, §4.1.3).
pub fn collect_share(
    trace: &Trace,
    states: &[LocationState],
    master: &[u32],
    keep: Option<&[bool]>,
) -> Share {
    collect_noted(trace, states, master, keep, Vec::new())
}

/// `collect_share` with what pass A noted of each location's message records (`noted[l]`,
/// `Noted::Off` where it is missing).
fn collect_noted(
    trace: &Trace,
    states: &[LocationState],
    master: &[u32],
    keep: Option<&[bool]>,
    mut noted: Vec<Noted>,
) -> Share {
    let nloc = trace.events.len();
    let (proc_of, groups) = processes(nloc, master, keep);
    let mpi = mpi_regions(trace);
    let groups: Vec<(LocIdx, Vec<LocIdx>, Vec<Noted>)> = (groups.into_iter())
        .map(|(me, locs)| {
            let n = (locs.iter())
                .map(|&l| noted.get_mut(l as usize).map(std::mem::take))
                .map(Option::unwrap_or_default)
                .collect();
            (me, locs, n)
        })
        .collect();
    let procs: Vec<Proc> = groups
        .into_par_iter()
        .map(|g| collect(trace, g, states, &mpi))
        .collect();
    let unresolved = procs.iter().map(|p| p.unresolved).sum();
    let ignored = procs.iter().map(|p| p.ignored).sum();
    let (links, sides) = procs
        .into_iter()
        .map(|p| ((p.locs, p.links), (p.me, p.sends, p.recvs)))
        .unzip();
    Share {
        nloc,
        keep: keep.map(<[bool]>::to_vec).unwrap_or_default(),
        proc_of,
        links,
        sides,
        unresolved,
        ignored,
    }
}

impl Share {
    fn holds(&self, l: LocIdx) -> bool {
        self.keep.is_empty() || self.keep.get(l as usize) == Some(&true)
    }

    /// The runs whose peer process is not held here, to be shipped to its owner.
    pub fn outgoing(&self, trace: &Trace) -> Vec<RemoteRun> {
        let mut out = Vec::new();
        for (me, sends, recvs) in &self.sides {
            for (recv, s) in [(false, sends), (true, recvs)] {
                for r in s.runs.iter().filter(|r| !self.holds(r.peer)) {
                    let range = r.start as usize..r.end as usize;
                    out.push(RemoteRun {
                        proc: *me,
                        recv,
                        comm: r.comm,
                        peer: r.peer,
                        sides: (range.map(|j| {
                            let (l, i) = s.at(j);
                            (l, i, s.tag(trace, (l, i, j)), s.time(trace, (l, i, j)))
                        }))
                        .collect(),
                    });
                }
            }
        }
        out
    }

    /// Pair the receives and sends held here with the sends and receives of their peers:
    /// the processes held here, or those of `remote` (the runs the owners of the other
    /// processes shipped here, each process's runs in their order).
    pub fn pair(self, trace: &Trace, remote: Vec<RemoteRun>) -> Matched {
        let Share {
            nloc,
            keep,
            proc_of,
            mut links,
            sides,
            unresolved,
            ignored,
        } = self;
        let mut theirs: HashMap<LocIdx, ProcSides> = HashMap::new();
        for run in remote {
            let p = theirs
                .entry(run.proc)
                .or_insert_with(|| (run.proc, Sides::default(), Sides::default()));
            let s = if run.recv { &mut p.2 } else { &mut p.1 };
            let start = s.len() as u32;
            let tag = run.sides.first().map_or(0, |x| x.2);
            let one_tag = run.sides.iter().all(|x| x.2 == tag);
            for (l, i, tag, time) in run.sides {
                s.loc.push(l);
                s.event.push(i);
                s.tag.push(tag);
                s.time.push(time);
            }
            s.runs.push(Run {
                comm: run.comm,
                peer: run.peer,
                start,
                end: s.len() as u32,
                tag,
                one_tag,
            });
        }
        let held = |l: LocIdx| keep.is_empty() || keep.get(l as usize) == Some(&true);
        let peer_proc = |l: LocIdx| -> Option<&ProcSides> {
            if held(l) {
                let k = *proc_of.get(l as usize)?;
                sides.get(k as usize)
            } else {
                theirs.get(&l)
            }
        };
        let f = pair(trace, &mut links, &sides, &peer_proc);
        drop(sides);
        drop(theirs);
        let mut stats = f.stats;
        stats.unresolved_peers = unresolved;
        stats.ignored_records = ignored;
        stats.violation_locations = f.violating.len() as u64;
        let mut all: Vec<MsgLinks> = vec![MsgLinks::default(); nloc];
        for (locs, ls) in links.iter_mut() {
            for (&l, x) in locs.iter().zip(ls.drain(..)) {
                all[l as usize] = x;
            }
        }
        Matched {
            links: all,
            stats,
            violators: f.violating.into_iter().collect(),
            unmatched: f.unmatched.into_iter().collect(),
        }
    }
}

/// Each process's receives with the sends of their senders, then each sender's sends with
/// the receives of their receivers (`peer_proc`: a peer process's sides), in parallel, each
/// process writing only its own locations' links; what they found, summed.
fn pair<'s>(
    trace: &Trace,
    all_links: &mut [Own],
    sides: &[ProcSides],
    peer_proc: &(dyn Fn(LocIdx) -> Option<&'s ProcSides> + Sync),
) -> Found {
    // receives: each process with the sends of its senders
    let found: Vec<Found> = all_links
        .par_iter_mut()
        .zip(sides.par_iter())
        .map(|((locs, links), (me, _, recvs))| {
            let mut p = Pass {
                locs,
                partner: partners(links),
                f: Found::default(),
                runs: (None, None),
            };
            for rr in &recvs.runs {
                let (sends, sr) = match peer_proc(rr.peer) {
                    Some((_, s, _)) => (s, s.run(rr.comm, *me)),
                    None => (recvs, None),
                };
                p.runs = (sr, Some(*rr));
                with_reads(trace, sends, recvs, &mut Receives(&mut p));
            }
            release(trace, locs);
            p.f
        })
        .collect();
    // sends: each process with the receives of its receivers
    let found_s: Vec<Found> = all_links
        .par_iter_mut()
        .zip(sides.par_iter())
        .map(|((locs, links), (me, sends, _))| {
            let mut p = Pass {
                locs,
                partner: partners(links),
                f: Found::default(),
                runs: (None, None),
            };
            for sr in &sends.runs {
                let (recvs, rr) = match peer_proc(sr.peer) {
                    Some((_, _, r)) => (r, r.run(sr.comm, *me)),
                    None => (sends, None),
                };
                p.runs = (Some(*sr), rr);
                with_reads(trace, sends, recvs, &mut Sends(&mut p));
            }
            release(trace, locs);
            p.f
        })
        .collect();
    let mut all = Found::default();
    for f in found.into_iter().chain(found_s) {
        all.add(f);
    }
    all
}

/// One process's pass of `pair`: its locations, their partner columns, what it found, and
/// the run of sends and the run of receives being paired.
struct Pass<'a> {
    locs: &'a [LocIdx],
    partner: Vec<&'a mut [EventRef]>,
    f: Found,
    runs: (Option<Run>, Option<Run>),
}

impl Pass<'_> {
    /// Each pair of the runs being paired (`merge`), in order, given to `f` with the pass.
    #[inline(always)]
    fn each_pair<S: Read, R: Read>(
        &mut self,
        sends: S,
        recvs: R,
        mut f: impl FnMut(&mut Self, (Option<Side>, Option<Side>)),
    ) {
        let m = merge(sends, self.runs.0, recvs, self.runs.1);
        if m.same {
            // the n-th send meets the n-th receive, the longer run's rest alone: what
            // `Merge` yields for such runs, without its per-pair choice
            let n = (m.ae - m.a).min(m.be - m.b);
            for j in 0..n {
                f(self, (Some(sends.at(m.a + j)), Some(recvs.at(m.b + j))));
            }
            for j in m.a + n..m.ae {
                f(self, (Some(sends.at(j)), None));
            }
            for j in m.b + n..m.be {
                f(self, (None, Some(recvs.at(j))));
            }
            return;
        }
        for pair in m {
            f(self, pair);
        }
    }

    /// Side `x` (read through `from`) gets `to` as its partner (`sendptr` of a receive,
    /// `recvptr` of a send).
    fn link<X: Read>(&mut self, from: X, x: Side, to: Side) {
        let k = from.msg(x);
        self.partner[from.slot(self.locs, x)][k] = EventRef {
            loc: to.0,
            event: to.1,
        };
    }
}

/// The receives' pass: each receive's send (`sendptr`), the clock condition, the counts.
struct Receives<'p, 'a>(&'p mut Pass<'a>);

impl RunPass for Receives<'_, '_> {
    fn run<S: Read, R: Read>(&mut self, sends: S, recvs: R) {
        // the sides' times in event order (each run's sides are)
        let (mut cs, mut cr) = (sends.clock(), recvs.clock());
        // (inlined at each of `each_pair`'s calls, as it was while times were plain u64s)
        self.0.each_pair(
            sends,
            recvs,
            #[inline(always)]
            |p, pair| match pair {
                (Some(s), Some(r)) => {
                    let (ts, tr) = (sends.time_in(&mut cs, s), recvs.time_in(&mut cr, r));
                    if ts > tr {
                        p.f.violation(s.0, r.0, ts - tr);
                    }
                    p.link(recvs, r, s);
                    p.f.stats.messages += 1;
                }
                (None, Some(r)) => {
                    p.f.stats.unmatched_receives += 1;
                    p.f.unmatched.insert(r.0);
                }
                _ => {}
            },
        );
    }
}

/// The sends' pass: each send's receive (`recvptr`), the unmatched sends.
struct Sends<'p, 'a>(&'p mut Pass<'a>);

impl RunPass for Sends<'_, '_> {
    fn run<S: Read, R: Read>(&mut self, sends: S, recvs: R) {
        self.0.each_pair(sends, recvs, |p, pair| match pair {
            (Some(s), Some(r)) => p.link(sends, s, r),
            (Some(s), None) => {
                p.f.stats.unmatched_sends += 1;
                p.f.unmatched.insert(s.0);
            }
            _ => {}
        });
    }
}

/// A process's locations are walked: spilled, they leave memory again (`--memory-limit`).
fn release(trace: &Trace, locs: &[LocIdx]) {
    for &l in locs {
        if let Some(ev) = trace.events.get(l as usize) {
            ev.release_resident();
        }
    }
}

impl Found {
    /// A message from location `s` to `r` whose send is `d` ticks after its receive (§7.1).
    #[cold]
    fn violation(&mut self, s: LocIdx, r: LocIdx, d: u64) {
        self.stats.clock_violations += 1;
        self.stats.max_violation_ticks = self.stats.max_violation_ticks.max(d);
        self.violating.insert(s);
        self.violating.insert(r);
    }

    /// `f` added to what was found so far.
    fn add(&mut self, f: Found) {
        let (s, t) = (&mut self.stats, &f.stats);
        s.messages += t.messages;
        s.unmatched_sends += t.unmatched_sends;
        s.unmatched_receives += t.unmatched_receives;
        s.clock_violations += t.clock_violations;
        s.max_violation_ticks = s.max_violation_ticks.max(t.max_violation_ticks);
        self.violating.extend(f.violating);
        self.unmatched.extend(f.unmatched);
    }
}
