//! Point-to-point message matching (patterns.md §5.3) and the request links of non-blocking
//! operations (§5.2): `sendptr`/`recvptr`, `completion(S)` and `request(R)`.

use super::NONE;
use crate::model::{CommIdx, EventKind, LocIdx, Trace};
use rayon::prelude::*;
use std::collections::HashMap;

/// The other end of a message, or of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRef {
    pub loc: LocIdx,
    pub event: u32,
}

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
    /// For a send: its receive (`recvptr`); for a receive: its send (`sendptr`).
    pub partner: Vec<EventRef>,
    /// For an ISEND: its ISEND_COMPLETE event; for an IRECV: its IRECV_REQUEST event
    /// (`NONE` when the trace has none).
    pub request_event: Vec<u32>,
    /// The ISEND was cancelled (§4.1.4): it takes part in nothing.
    pub cancelled: Vec<bool>,
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

/// One side of a message, sortable into MPI's non-overtaking order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Side {
    comm: CommIdx,
    /// The sending and receiving processes: the locations of the ranks (their master
    /// threads; any thread of a process may call MPI, §3.6).
    from: LocIdx,
    to: LocIdx,
    tag: u32,
    /// Program order on the sender, posting order on the receiver: for a thread of a
    /// multi-threaded process the posting timestamp first (threads of one process share a
    /// clock), 0 otherwise; then the event's position on its location. (Two fields, not a
    /// tuple: the same order, 40 bytes a side instead of 48.)
    order_time: u64,
    order: u32,
    /// The location that recorded the event.
    loc: LocIdx,
    event: u32,
    msg: u32,
}

// 12 M events hold about 2.4 M sides at the matching's peak
const _: () = assert!(std::mem::size_of::<Side>() == 40);

impl Side {
    const EMPTY: Side = Side {
        comm: 0,
        from: 0,
        to: 0,
        tag: 0,
        order_time: 0,
        order: 0,
        loc: 0,
        event: 0,
        msg: 0,
    };
}

/// One location's sides, written in place into its part of the all-location lists: how
/// many it wrote there.
struct LocSides {
    nsend: usize,
    nrecv: usize,
    links: MsgLinks,
    unresolved: u64,
    ignored: u64,
}

fn sides(
    trace: &Trace,
    l: usize,
    in_mpi: &(dyn Fn(usize, usize) -> bool + Sync),
    master: &[u32],
    threaded: bool,
    sends: &mut [Side],
    recvs: &mut [Side],
) -> LocSides {
    let ev = &trace.events[l];
    let nmsg = ev.msg.peer.len();
    let mut links = MsgLinks {
        partner: vec![EventRef::NONE; nmsg],
        request_event: vec![NONE; nmsg],
        cancelled: vec![false; nmsg],
    };
    // `sends` has room for every MPI_SEND/MPI_ISEND record of the location, `recvs` for
    // every MPI_RECV/MPI_IRECV one
    let (mut ns, mut nr) = (0, 0);
    let mut pending_isend: HashMap<u64, u32> = HashMap::new(); // request → msg index
    let mut posted_irecv: HashMap<u64, u32> = HashMap::new(); // request → IRECV_REQUEST event
    let (mut unresolved, mut ignored) = (0, 0);
    // the process this location belongs to, as the communicators name it
    let me = master.get(l).copied().unwrap_or(l as u32) as LocIdx;
    for i in 0..ev.len() {
        match ev.kind[i] {
            EventKind::MpiSend | EventKind::MpiIsend | EventKind::MpiRecv | EventKind::MpiIrecv => {
                let Some(m) = ev.msg(i) else { continue };
                if !in_mpi(l, i) {
                    ignored += 1; // §4.1.3: a record outside any MPI call
                    continue;
                }
                let k = ev.arg[i];
                let Some(peer) = trace.defs.comms[m.comm as usize].location_of(m.peer, me) else {
                    unresolved += 1;
                    continue;
                };
                let is_send = matches!(ev.kind[i], EventKind::MpiSend | EventKind::MpiIsend);
                let mut order = i as u32;
                let at = |j: u32| if threaded { ev.time[j as usize] } else { 0 };
                if ev.kind[i] == EventKind::MpiIsend {
                    if let Some(r) = m.request {
                        pending_isend.insert(r, k);
                    }
                }
                if ev.kind[i] == EventKind::MpiIrecv {
                    if let Some(q) = m.request.and_then(|r| posted_irecv.remove(&r)) {
                        links.request_event[k as usize] = q;
                        order = q; // posting order (§5.3.2)
                    }
                }
                let (from, to) = if is_send { (me, peer) } else { (peer, me) };
                let s = Side {
                    comm: m.comm,
                    from,
                    to,
                    tag: m.tag,
                    order_time: at(order),
                    order,
                    loc: l as LocIdx,
                    event: i as u32,
                    msg: k,
                };
                if is_send {
                    sends[ns] = s;
                    ns += 1;
                } else {
                    recvs[nr] = s;
                    nr += 1;
                }
            }
            EventKind::MpiIrecvRequest => {
                if let Some(&r) = ev.fields(i).first() {
                    posted_irecv.insert(r, i as u32);
                }
            }
            EventKind::MpiIsendComplete => {
                if let Some(k) = ev.fields(i).first().and_then(|r| pending_isend.remove(r)) {
                    links.request_event[k as usize] = i as u32;
                }
            }
            EventKind::MpiRequestCancelled => {
                let Some(&r) = ev.fields(i).first() else {
                    continue;
                };
                if let Some(k) = pending_isend.remove(&r) {
                    links.cancelled[k as usize] = true;
                }
                posted_irecv.remove(&r);
            }
            _ => {}
        }
    }
    let cancelled = &links.cancelled;
    let mut kept = 0;
    for j in 0..ns {
        if !cancelled[sends[j].msg as usize] {
            sends[kept] = sends[j];
            kept += 1;
        }
    }
    LocSides {
        nsend: kept,
        nrecv: nr,
        links,
        unresolved,
        ignored,
    }
}

/// Match every receive to its send. `in_mpi(l, i)` says whether event `i` of location `l`
/// lies inside an MPI call (§4.1.3). Returns the links per location, the statistics, the
/// locations touched by clock-condition violations and those with unmatched messages.
/// `master[l]` is the location standing for `l`'s process in the communicators (the process's
/// master thread; `l` itself without threads).
pub fn match_messages(
    trace: &Trace,
    in_mpi: &(dyn Fn(usize, usize) -> bool + Sync),
    master: &[u32],
) -> (Vec<MsgLinks>, MatchStats, Violators, Vec<u32>) {
    let mut threads = vec![0u32; trace.events.len()];
    for &m in master {
        if let Some(n) = threads.get_mut(m as usize) {
            *n += 1;
        }
    }
    // The sides of all locations in two lists, each location writing into its own part
    // (room for each of its send and receive records), then closed up in location order:
    // the sides are held once, not once per location and again in the lists.
    let room: Vec<(usize, usize)> = trace
        .events
        .par_iter()
        .map(|ev| {
            ev.kind.iter().fold((0, 0), |(s, r), k| match k {
                EventKind::MpiSend | EventKind::MpiIsend => (s + 1, r),
                EventKind::MpiRecv | EventKind::MpiIrecv => (s, r + 1),
                _ => (s, r),
            })
        })
        .collect();
    let mut sends = vec![Side::EMPTY; room.iter().map(|r| r.0).sum()];
    let mut recvs = vec![Side::EMPTY; room.iter().map(|r| r.1).sum()];
    let mut parts: Vec<(&mut [Side], &mut [Side])> = Vec::with_capacity(room.len());
    let (mut srest, mut rrest) = (&mut sends[..], &mut recvs[..]);
    for &(s, r) in &room {
        let (a, b) = std::mem::take(&mut srest).split_at_mut(s);
        let (c, d) = std::mem::take(&mut rrest).split_at_mut(r);
        parts.push((a, c));
        (srest, rrest) = (b, d);
    }
    let per: Vec<LocSides> = parts
        .into_par_iter()
        .enumerate()
        .map(|(l, (s, r))| {
            let m = master.get(l).map_or(l, |&m| m as usize);
            let threaded = threads.get(m).is_some_and(|&n| n > 1);
            sides(trace, l, in_mpi, master, threaded, s, r)
        })
        .collect();
    let mut stats = MatchStats {
        unresolved_peers: per.iter().map(|p| p.unresolved).sum(),
        ignored_records: per.iter().map(|p| p.ignored).sum(),
        ..Default::default()
    };
    let (mut ws, mut wr, mut os, mut or) = (0, 0, 0, 0);
    let mut links: Vec<MsgLinks> = Vec::with_capacity(per.len());
    for (p, &(s, r)) in per.into_iter().zip(&room) {
        sends.copy_within(os..os + p.nsend, ws);
        recvs.copy_within(or..or + p.nrecv, wr);
        (ws, wr, os, or) = (ws + p.nsend, wr + p.nrecv, os + s, or + r);
        links.push(p.links);
    }
    sends.truncate(ws);
    recvs.truncate(wr);
    // (comm, from, to, tag, order): the n-th send of a key meets the n-th receive (§5.3.2)
    sends.par_sort_unstable();
    recvs.par_sort_unstable();
    let key = |s: &Side| (s.comm, s.from, s.to, s.tag);
    let (mut a, mut b) = (0, 0);
    let mut violating = std::collections::BTreeSet::new();
    let mut unmatched = std::collections::BTreeSet::new();
    while a < sends.len() && b < recvs.len() {
        let (s, r) = (sends[a], recvs[b]);
        match key(&s).cmp(&key(&r)) {
            std::cmp::Ordering::Less => {
                stats.unmatched_sends += 1;
                unmatched.insert(s.loc);
                a += 1;
            }
            std::cmp::Ordering::Greater => {
                stats.unmatched_receives += 1;
                unmatched.insert(r.loc);
                b += 1;
            }
            std::cmp::Ordering::Equal => {
                let ts = trace.events[s.loc as usize].time[s.event as usize];
                let tr = trace.events[r.loc as usize].time[r.event as usize];
                if ts > tr {
                    stats.clock_violations += 1;
                    stats.max_violation_ticks = stats.max_violation_ticks.max(ts - tr);
                    violating.insert(s.loc);
                    violating.insert(r.loc);
                }
                links[s.loc as usize].partner[s.msg as usize] = EventRef {
                    loc: r.loc,
                    event: r.event,
                };
                links[r.loc as usize].partner[r.msg as usize] = EventRef {
                    loc: s.loc,
                    event: s.event,
                };
                stats.messages += 1;
                a += 1;
                b += 1;
            }
        }
    }
    stats.violation_locations = violating.len() as u64;
    stats.unmatched_sends += (sends.len() - a) as u64;
    stats.unmatched_receives += (recvs.len() - b) as u64;
    unmatched.extend(sends[a..].iter().map(|s| s.loc));
    unmatched.extend(recvs[b..].iter().map(|r| r.loc));
    (
        links,
        stats,
        violating.into_iter().collect(),
        unmatched.into_iter().collect(),
    )
}
