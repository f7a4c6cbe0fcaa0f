//! The wrong-order Late Sender situations Scalasca 2.6 books differently from patterns.md
//! §4.2.4 (docs/scalasca-differences.md §2 and §3): one receive that reclassifies several
//! buffered instances at once, and two messages of one reclassification that came on different
//! communicators where comparing their sources as communicator-local ranks (scout) and as world
//! ranks (perfexpert) disagree. Only counted, for the report's diagnostics.

use super::sync::call_span;
use crate::model::{classify, EventKind, Trace};
use crate::replay::{Replay, NONE};
use std::collections::VecDeque;

/// How many Late Sender instances each location keeps for wrong-order checks (§4.2.4).
const BUFFER: usize = 100;

/// One buffered Late Sender instance: (send time, source world process, source rank in its
/// communicator, communicator, call path of the receive, whether the message had no bytes).
type Buffered = (u64, u32, u32, u32, u32, bool);

/// Instances Scalasca books differently: (reclassified together with others by one
/// receive, reclassified against a message of another communicator with a different verdict).
pub fn wrong_order_differences(trace: &Trace, replay: &Replay) -> (u64, u64) {
    wrong_order_differences_in(trace, replay, &[])
}

/// `wrong_order_differences` on the locations `held` selects (empty: all; `run --mpi`:
/// each process its own, the counts summed).
pub fn wrong_order_differences_in(trace: &Trace, replay: &Replay, held: &[bool]) -> (u64, u64) {
    use rayon::prelude::*;
    // each region's class once, not once per receive
    let classes: Vec<&'static str> = (trace.defs.regions.iter())
        .map(|r| classify::classify(r).0)
        .collect();
    (0..trace.events.len())
        .into_par_iter()
        .filter(|&l| held.is_empty() || held.get(l) == Some(&true))
        .map(|l| location(trace, replay, &classes, l))
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

fn location(trace: &Trace, replay: &Replay, classes: &[&'static str], l: usize) -> (u64, u64) {
    let ev = &trace.events[l];
    let st = &replay.locations[l];
    let links = &replay.msg_links[l];
    let proc = |x: u32| replay.omp.master.get(x as usize).copied().unwrap_or(x);
    let mut buf: VecDeque<Buffered> = VecDeque::new();
    // the largest wait of the open wait-for-many call: (its ENTER, wait, instance)
    let mut multi: Option<(u32, u64, Buffered)> = None;
    let (mut several, mut cross) = (0, 0);
    let push = |buf: &mut VecDeque<Buffered>, b: Buffered| {
        if buf.len() == BUFFER {
            buf.pop_front();
        }
        buf.push_back(b);
    };
    // the receives, and while a wait-for-many call is open the LEAVEs: found on the kind
    // column as bytes (memchr), every other event passed over
    let kinds = crate::model::spill::bytes_of(&ev.kind[..]);
    let (recv, irecv) = (EventKind::MpiRecv as u8, EventKind::MpiIrecv as u8);
    let mut next = 0;
    while let Some(d) = match multi {
        None => memchr::memchr2(recv, irecv, &kinds[next..]),
        Some(_) => memchr::memchr3(recv, irecv, EventKind::Leave as u8, &kinds[next..]),
    } {
        let i = next + d;
        next = i + 1;
        if ev.kind[i] == EventKind::Leave {
            if let Some((_, _, b)) = multi.filter(|m| m.0 == st.enterptr(i)) {
                push(&mut buf, b);
                multi = None;
            }
            continue;
        }
        // the payload's columns read directly (`Events::msg` would look up the request too)
        let k = ev.arg[i] as usize;
        let (Some(&peer), Some(p)) = (ev.msg.peer.get(k), links.partner.get(k).copied()) else {
            continue;
        };
        let m = (peer, ev.msg.comm[k], ev.msg.bytes.get(k));
        if !p.is_some() {
            continue;
        }
        let ts = trace.events[p.loc as usize].time[p.event as usize];
        let me: Buffered = (ts, proc(p.loc), m.0, m.1, st.cnode(i), m.2 == 0);
        let e = st.enterptr(i);
        let class = match (e != NONE).then(|| classes.get(ev.arg[e as usize] as usize)) {
            Some(Some(c)) => *c,
            _ => "",
        };
        let spans = (
            call_span(trace, replay, l, i as u32),
            call_span(trace, replay, p.loc as usize, p.event),
        );
        if let (Some((re, rx)), Some((se, _))) = spans {
            let idle = se.min(rx).saturating_sub(re);
            if idle > 0 && !class.starts_with("P2P_TEST") {
                if class == "P2P_WAIT_MULTI" {
                    if multi.is_none_or(|m| m.0 != e || idle > m.1) {
                        multi = Some((e, idle, me));
                    }
                } else {
                    push(&mut buf, me);
                }
            }
        }
        let hit: Vec<Buffered> = buf.iter().copied().filter(|b| b.0 > ts).collect();
        if hit.is_empty() {
            continue;
        }
        buf.retain(|b| b.0 <= ts);
        // scout books the split and the counts of all at the first one's call path, by the
        // first one's source and size: those that differ from it are booked differently
        let first = hit[0];
        let verdict = |b: &Buffered| (b.4, b.1 == me.1, b.5);
        several += hit[1..]
            .iter()
            .filter(|b| verdict(b) != verdict(&first))
            .count() as u64;
        for b in hit {
            if b.3 != me.3 && (b.2 == me.2) != (b.1 == me.1) {
                cross += 1;
            }
        }
    }
    (several, cross)
}
