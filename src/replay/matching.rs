//! Point-to-point message matching (patterns.md §5.3) and the request links of non-blocking
//! operations (§5.2): `sendptr`/`recvptr`, `completion(S)` and `request(R)`.

use super::NONE;
use crate::model::{CommIdx, EventKind, KindsIn, LocIdx, Trace};
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
}

impl Sides {
    #[inline]
    fn at(&self, j: usize) -> (LocIdx, u32) {
        (self.loc.get(j).copied().unwrap_or(self.only), self.event[j])
    }

    fn len(&self) -> usize {
        self.event.len()
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
            trace.events[s.0 as usize].time[s.1 as usize]
        } else {
            self.time[s.2]
        }
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

/// Collect one process's sides (in location order, then event order) and its request
/// links, then sort them.
#[inline(never)]
fn collect(
    trace: &Trace,
    me: LocIdx,
    locs: Vec<LocIdx>,
    in_mpi: &(impl Fn(usize, usize) -> bool + Sync),
) -> Proc {
    let threaded = locs.len() > 1;
    let mut p = Proc {
        me,
        links: Vec::with_capacity(locs.len()),
        sends: Sides::default(),
        recvs: Sides::default(),
        unresolved: 0,
        ignored: 0,
        locs,
    };
    let (mut send_loc, mut recv_loc) = (Vec::new(), Vec::new());
    // the runs and whether the sides are in order, noted as they come (most traces have
    // them in event order: then no sort)
    let (mut send_b, mut recv_b) = (Runs::default(), Runs::default());
    for &l in &p.locs {
        let ev = &trace.events[l as usize];
        let nmsg = ev.msg.peer.len();
        let mut links = MsgLinks {
            partner: crate::model::spill::filled(nmsg, EventRef::NONE).into(),
            ..Default::default()
        };
        let first_send = p.sends.event.len();
        let mut pending_isend: HashMap<u64, u32> = HashMap::new(); // request → msg index
        let mut posted_irecv: HashMap<u64, u32> = HashMap::new(); // request → IRECV_REQUEST
        let (kinds, arg) = (&ev.kind[..], &ev.arg[..]);
        let (peers, comms, tags) = (&ev.msg.peer[..], &ev.msg.comm[..], &ev.msg.tag[..]);
        // most events are none of the kinds below (MpiSend ..= MpiRequestCancelled): passed
        // over 8 a word
        let matched = KindsIn::new(kinds, 0, EventKind::MpiSend, EventKind::MpiRequestCancelled);
        for i in matched {
            let kind = kinds[i];
            match kind {
                EventKind::MpiSend
                | EventKind::MpiIsend
                | EventKind::MpiRecv
                | EventKind::MpiIrecv => {
                    if !in_mpi(l as usize, i) {
                        p.ignored += 1; // §4.1.3: a record outside any MPI call
                        continue;
                    }
                    let k = arg[i] as usize;
                    let (comm, tag) = (comms[k], tags[k]);
                    let Some(peer) = trace.defs.comms[comm as usize].location_of(peers[k], me)
                    else {
                        p.unresolved += 1;
                        continue;
                    };
                    let mut order = i as u32;
                    match kind {
                        EventKind::MpiIsend => {
                            if let Some(r) = ev.msg(i).and_then(|m| m.request) {
                                pending_isend.insert(r, k as u32);
                            }
                        }
                        EventKind::MpiIrecv => {
                            let m = ev.msg(i).and_then(|m| m.request);
                            if let Some(q) = m.and_then(|r| posted_irecv.remove(&r)) {
                                links.set_request_event(k, q);
                                order = q; // posting order (§5.3.2)
                            }
                        }
                        _ => {}
                    }
                    let at = if threaded { ev.time[order as usize] } else { 0 };
                    let key = (comm, peer, tag, at, order, l);
                    let (side, locv, b) =
                        if matches!(kind, EventKind::MpiSend | EventKind::MpiIsend) {
                            (&mut p.sends, &mut send_loc, &mut send_b)
                        } else {
                            (&mut p.recvs, &mut recv_loc, &mut recv_b)
                        };
                    b.note(side.event.len(), key);
                    side.event.push(i as u32);
                    if threaded {
                        locv.push(l);
                    }
                }
                EventKind::MpiIrecvRequest => {
                    if let Some(&r) = ev.fields(i).first() {
                        posted_irecv.insert(r, i as u32);
                    }
                }
                EventKind::MpiIsendComplete => {
                    if let Some(k) = ev.fields(i).first().and_then(|r| pending_isend.remove(r)) {
                        links.set_request_event(k as usize, i as u32);
                    }
                }
                EventKind::MpiRequestCancelled => {
                    let Some(&r) = ev.fields(i).first() else {
                        continue;
                    };
                    if let Some(k) = pending_isend.remove(&r) {
                        links.set_cancelled(k as usize);
                    }
                    posted_irecv.remove(&r);
                }
                _ => {}
            }
        }
        // §4.1.4: a cancelled send takes part in nothing
        if !links.cancelled.is_empty() {
            let mut kept = first_send;
            for j in first_send..p.sends.event.len() {
                let i = p.sends.event[j] as usize;
                if !links.cancelled(ev.arg[i] as usize) {
                    p.sends.event[kept] = p.sends.event[j];
                    if threaded {
                        send_loc[kept] = send_loc[j];
                    }
                    kept += 1;
                }
            }
            p.sends.event.truncate(kept);
            send_b.sorted = false; // runs found again below
            send_loc.truncate(kept);
        }
        p.links.push(links);
        ev.release_resident();
    }
    p.sends.loc = send_loc;
    p.recvs.loc = recv_loc;
    p.sends.only = me;
    p.recvs.only = me;
    for (recv, b) in [(false, send_b), (true, recv_b)] {
        if b.sorted {
            let s = if recv { &mut p.recvs } else { &mut p.sends };
            s.runs = b.runs;
        } else {
            sort_sides(trace, &mut p, recv, threaded);
        }
    }
    p
}

type Key = (CommIdx, LocIdx, u32, u64, u32, LocIdx);

/// The runs of one direction's sides as they are collected, and whether they came in order.
struct Runs {
    runs: Vec<Run>,
    /// The last side's key (at first the least key there is).
    prev: Key,
    sorted: bool,
}

impl Default for Runs {
    fn default() -> Runs {
        Runs {
            runs: Vec::new(),
            prev: (0, 0, 0, 0, 0, 0),
            sorted: true,
        }
    }
}

impl Runs {
    /// Side `j` has sort key `k`.
    #[inline]
    fn note(&mut self, j: usize, k: Key) {
        match self.runs.last_mut() {
            Some(r) if (r.comm, r.peer) == (k.0, k.1) => r.end = j as u32 + 1,
            _ => self.runs.push(Run {
                comm: k.0,
                peer: k.1,
                start: j as u32,
                end: j as u32 + 1,
            }),
        }
        if self.prev > k {
            self.sorted = false;
        }
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
        let at = if threaded { ev.time[order as usize] } else { 0 };
        (comm, peer, tag, at, order, l)
    };
    let s = if recv { &mut p.recvs } else { &mut p.sends };
    let runs = |s: &Sides| -> (Vec<Run>, bool) {
        let mut b = Runs::default();
        for j in 0..s.len() {
            let (l, i) = s.at(j);
            b.note(j, key(l, i));
        }
        (b.runs, b.sorted)
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

/// Walk a run of sends and the run of receives of the same (communicator, sender,
/// receiver) together: within one tag the n-th send meets the n-th receive (§5.3.2).
/// `on(send, recv)` sees every pair, and every side left alone with `None` for the other,
/// as (location, event, position in its `Sides`).
fn walk(
    trace: &Trace,
    sends: &Sides,
    sr: Option<Run>,
    recvs: &Sides,
    rr: Option<Run>,
    mut on: impl FnMut(Option<Side>, Option<Side>),
) {
    let at = |s: &Sides, j: usize| {
        let (l, i) = s.at(j);
        (l, i, j)
    };
    let (mut a, ae) = sr.map_or((0, 0), |r| (r.start as usize, r.end as usize));
    let (mut b, be) = rr.map_or((0, 0), |r| (r.start as usize, r.end as usize));
    while a < ae && b < be {
        let (s, r) = (at(sends, a), at(recvs, b));
        let ts = sends.tag(trace, s);
        let tr = recvs.tag(trace, r);
        match ts.cmp(&tr) {
            std::cmp::Ordering::Less => {
                on(Some(s), None);
                a += 1;
            }
            std::cmp::Ordering::Greater => {
                on(None, Some(r));
                b += 1;
            }
            std::cmp::Ordering::Equal => {
                on(Some(s), Some(r));
                a += 1;
                b += 1;
            }
        }
    }
    for j in a..ae {
        on(Some(at(sends, j)), None);
    }
    for j in b..be {
        on(None, Some(at(recvs, j)));
    }
}

/// A side as `walk` hands it on: location, event, position in its `Sides`.
type Side = (LocIdx, u32, usize);

/// What one process found while matching its receives (or its sends).
#[derive(Default)]
struct Found {
    stats: MatchStats,
    violating: BTreeSet<u32>,
    unmatched: BTreeSet<u32>,
}

/// Match every receive to its send. `in_mpi(l, i)` says whether event `i` of location `l`
/// lies inside an MPI call (§4.1.3). Returns the links per location, the statistics, the
/// locations touched by clock-condition violations and those with unmatched messages.
/// `master[l]` is the location standing for `l`'s process in the communicators (the process's
/// master thread; `l` itself without threads).
///
/// Per process, its sends and its receives are sorted into non-overtaking order (4 bytes a
/// side); then each process pairs its receives with the sends of their senders, and each
/// sender its sends with the receives of their receivers, both in parallel and each writing
/// only its own locations' links.
pub fn match_messages(
    trace: &Trace,
    in_mpi: &(impl Fn(usize, usize) -> bool + Sync),
    master: &[u32],
) -> (Vec<MsgLinks>, MatchStats, Violators, Vec<u32>) {
    let m = collect_share(trace, in_mpi, master, None).pair(trace, Vec::new());
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
/// `None`; a share holds whole processes).
pub fn collect_share(
    trace: &Trace,
    in_mpi: &(impl Fn(usize, usize) -> bool + Sync),
    master: &[u32],
    keep: Option<&[bool]>,
) -> Share {
    let nloc = trace.events.len();
    let (proc_of, groups) = processes(nloc, master, keep);
    let procs: Vec<Proc> = groups
        .into_par_iter()
        .map(|(me, locs)| collect(trace, me, locs, in_mpi))
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
    let slot = |locs: &[LocIdx], l: LocIdx| {
        if locs.len() == 1 {
            0
        } else {
            locs.binary_search(&l).unwrap_or(0)
        }
    };
    // receives: each process with the sends of its senders
    let found: Vec<Found> = all_links
        .par_iter_mut()
        .zip(sides.par_iter())
        .map(|((locs, links), (me, _, recvs))| {
            let mut f = Found::default();
            let mut partner = partners(links);
            for rr in &recvs.runs {
                let (sends, sr) = match peer_proc(rr.peer) {
                    Some((_, s, _)) => (s, s.run(rr.comm, *me)),
                    None => (recvs, None),
                };
                walk(trace, sends, sr, recvs, Some(*rr), |s, r| match (s, r) {
                    (Some(s), Some(r)) => {
                        let (ts, tr) = (sends.time(trace, s), recvs.time(trace, r));
                        if ts > tr {
                            f.stats.clock_violations += 1;
                            f.stats.max_violation_ticks = f.stats.max_violation_ticks.max(ts - tr);
                            f.violating.insert(s.0);
                            f.violating.insert(r.0);
                        }
                        let k = msg_index(trace, r.0, r.1);
                        partner[slot(locs, r.0)][k] = EventRef {
                            loc: s.0,
                            event: s.1,
                        };
                        f.stats.messages += 1;
                    }
                    (None, Some(r)) => {
                        f.stats.unmatched_receives += 1;
                        f.unmatched.insert(r.0);
                    }
                    _ => {}
                });
            }
            release(trace, locs);
            f
        })
        .collect();
    // sends: each process with the receives of its receivers
    let found_s: Vec<Found> = all_links
        .par_iter_mut()
        .zip(sides.par_iter())
        .map(|((locs, links), (me, sends, _))| {
            let mut f = Found::default();
            let mut partner = partners(links);
            for sr in &sends.runs {
                let (recvs, rr) = match peer_proc(sr.peer) {
                    Some((_, _, r)) => (r, r.run(sr.comm, *me)),
                    None => (sends, None),
                };
                walk(trace, sends, Some(*sr), recvs, rr, |s, r| match (s, r) {
                    (Some(s), Some(r)) => {
                        let k = msg_index(trace, s.0, s.1);
                        partner[slot(locs, s.0)][k] = EventRef {
                            loc: r.0,
                            event: r.1,
                        };
                    }
                    (Some(s), None) => {
                        f.stats.unmatched_sends += 1;
                        f.unmatched.insert(s.0);
                    }
                    _ => {}
                });
            }
            release(trace, locs);
            f
        })
        .collect();
    let mut all = Found::default();
    for f in found.into_iter().chain(found_s) {
        all.add(f);
    }
    all
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
