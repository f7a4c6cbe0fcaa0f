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
    from: LocIdx,
    to: LocIdx,
    tag: u32,
    /// Program order on the sender, posting order on the receiver.
    order: u32,
    event: u32,
    msg: u32,
}

struct LocSides {
    sends: Vec<Side>,
    recvs: Vec<Side>,
    links: MsgLinks,
    unresolved: u64,
    ignored: u64,
}

fn sides(trace: &Trace, l: usize, in_mpi: &(dyn Fn(usize, usize) -> bool + Sync)) -> LocSides {
    let ev = &trace.events[l];
    let nmsg = ev.msg.peer.len();
    let mut links = MsgLinks {
        partner: vec![EventRef::NONE; nmsg],
        request_event: vec![NONE; nmsg],
        cancelled: vec![false; nmsg],
    };
    let (mut sends, mut recvs) = (Vec::new(), Vec::new());
    let mut pending_isend: HashMap<u64, u32> = HashMap::new(); // request → msg index
    let mut posted_irecv: HashMap<u64, u32> = HashMap::new(); // request → IRECV_REQUEST event
    let (mut unresolved, mut ignored) = (0, 0);
    let me = l as LocIdx;
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
                    order,
                    event: i as u32,
                    msg: k,
                };
                if is_send {
                    sends.push(s);
                } else {
                    recvs.push(s);
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
    sends.retain(|s| !cancelled[s.msg as usize]);
    LocSides {
        sends,
        recvs,
        links,
        unresolved,
        ignored,
    }
}

/// Match every receive to its send. `in_mpi(l, i)` says whether event `i` of location `l`
/// lies inside an MPI call (§4.1.3). Returns the links per location, the statistics, the
/// locations touched by clock-condition violations and those with unmatched messages.
pub fn match_messages(
    trace: &Trace,
    in_mpi: &(dyn Fn(usize, usize) -> bool + Sync),
) -> (Vec<MsgLinks>, MatchStats, Violators, Vec<u32>) {
    let per: Vec<LocSides> = (0..trace.events.len())
        .into_par_iter()
        .map(|l| sides(trace, l, in_mpi))
        .collect();
    let mut stats = MatchStats {
        unresolved_peers: per.iter().map(|p| p.unresolved).sum(),
        ignored_records: per.iter().map(|p| p.ignored).sum(),
        ..Default::default()
    };
    let mut sends: Vec<Side> = per.iter().flat_map(|p| p.sends.iter().copied()).collect();
    let mut recvs: Vec<Side> = per.iter().flat_map(|p| p.recvs.iter().copied()).collect();
    let mut links: Vec<MsgLinks> = per.into_iter().map(|p| p.links).collect();
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
                unmatched.insert(s.from);
                a += 1;
            }
            std::cmp::Ordering::Greater => {
                stats.unmatched_receives += 1;
                unmatched.insert(r.to);
                b += 1;
            }
            std::cmp::Ordering::Equal => {
                let ts = trace.events[s.from as usize].time[s.event as usize];
                let tr = trace.events[r.to as usize].time[r.event as usize];
                if ts > tr {
                    stats.clock_violations += 1;
                    stats.max_violation_ticks = stats.max_violation_ticks.max(ts - tr);
                    violating.insert(s.from);
                    violating.insert(r.to);
                }
                links[s.from as usize].partner[s.msg as usize] = EventRef {
                    loc: r.to,
                    event: r.event,
                };
                links[r.to as usize].partner[r.msg as usize] = EventRef {
                    loc: s.from,
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
    unmatched.extend(sends[a..].iter().map(|s| s.from));
    unmatched.extend(recvs[b..].iter().map(|r| r.to));
    (
        links,
        stats,
        violating.into_iter().collect(),
        unmatched.into_iter().collect(),
    )
}
