//! The wrong-order Late Sender situations Scalasca 2.6 books differently from patterns.md
//! §4.2.4 (docs/scalasca-differences.md §2 and §3): one receive that reclassifies several
//! buffered instances at once, and two messages of one reclassification that came on different
//! communicators where comparing their sources as communicator-local ranks (scout) and as world
//! ranks (perfexpert) disagree. Only counted, for the report's diagnostics.

use crate::model::{classify, EventKind, KindsIn, Trace};
use crate::replay::matching::EventRef;
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
        .map(|l| {
            let found = location(trace, replay, &classes, l);
            // a spilled location leaves memory again (`--memory-limit`)
            trace.events[l].release_resident();
            found
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// The Late Sender instances a location keeps for wrong-order checks (§4.2.4), oldest first,
/// and the latest send time among them (a receive whose send is not earlier than it
/// reclassifies none: one comparison, not one per instance).
#[derive(Default)]
struct Buffer {
    q: VecDeque<Buffered>,
    latest: u64,
}

impl Buffer {
    fn push(&mut self, b: Buffered) {
        if self.q.len() == BUFFER {
            if let Some(old) = self.q.pop_front() {
                if old.0 == self.latest {
                    self.latest = self.q.iter().map(|x| x.0).max().unwrap_or(0);
                }
            }
        }
        self.latest = self.latest.max(b.0);
        self.q.push_back(b);
    }

    /// The instances whose sends were later than `ts`, taken out (in order); empty when none.
    fn take_later(&mut self, ts: u64) -> Vec<Buffered> {
        if self.q.is_empty() || self.latest <= ts {
            return Vec::new();
        }
        let hit: Vec<Buffered> = self.q.iter().copied().filter(|b| b.0 > ts).collect();
        self.q.retain(|b| b.0 <= ts);
        self.latest = self.q.iter().map(|x| x.0).max().unwrap_or(0);
        hit
    }
}

/// When the call around event `i` of location `l` was entered (`call_span`'s start).
#[inline(always)]
fn entered(trace: &Trace, replay: &Replay, l: usize, i: usize) -> Option<(u32, u64)> {
    let st = &replay.locations[l];
    if i >= st.len() {
        return None;
    }
    let e = st.enterptr(i);
    (e != NONE).then(|| (e, trace.events[l].time.get(e as usize)))
}

/// The time receive `i` of location `l` waited for its send `p` (`call_span` of both sides,
/// patterns.md §4.2.4): 0 as soon as the receive's call turns out to have entered no earlier
/// than the send's, before the receive's LEAVE is looked at.
#[inline]
fn idle(trace: &Trace, replay: &Replay, l: usize, i: usize, p: EventRef) -> u64 {
    let Some((e, re)) = entered(trace, replay, l, i) else {
        return 0;
    };
    let se = match entered(trace, replay, p.loc as usize, p.event as usize) {
        Some((_, se)) if se > re => se,
        _ => return 0,
    };
    let x = replay.locations[l].exitptr(e as usize);
    let t = &trace.events[l].time;
    let rx = if x == NONE {
        t.get(i)
    } else {
        t.get(x as usize)
    };
    se.min(rx).saturating_sub(re)
}

fn location(trace: &Trace, replay: &Replay, classes: &[&'static str], l: usize) -> (u64, u64) {
    let ev = &trace.events[l];
    let st = &replay.locations[l];
    let links = &replay.msg_links[l];
    let proc = |x: u32| replay.omp.master.get(x as usize).copied().unwrap_or(x);
    let mut buf = Buffer::default();
    // the largest wait of the open wait-for-many call: (its ENTER, wait, instance)
    let mut multi: Option<(u32, u64, Buffered)> = None;
    let (mut several, mut cross) = (0, 0);
    // the receives, and while a wait-for-many call is open the LEAVEs (and the kinds between,
    // passed over): found 8 kinds a word, every other event passed over
    let scan = |from: usize, open: bool| {
        let lo = if open {
            EventKind::Leave
        } else {
            EventKind::MpiRecv
        };
        KindsIn::new(&ev.kind, from, lo, EventKind::MpiIrecv)
    };
    let mut events = scan(0, false);
    let (arg, peers, partner) = (&ev.arg[..], &ev.msg.peer[..], &links.partner[..]);
    while let Some(i) = events.next() {
        let kind = ev.kind[i];
        if kind == EventKind::Leave {
            if let Some((_, _, b)) = multi.filter(|m| m.0 == st.enterptr(i)) {
                buf.push(b);
                multi = None;
                events = scan(i + 1, false);
            }
            continue;
        }
        if kind != EventKind::MpiRecv && kind != EventKind::MpiIrecv {
            continue;
        }
        // the payload's columns read directly (`Events::msg` would look up the request too)
        let k = arg[i] as usize;
        let (Some(&peer), Some(&p)) = (peers.get(k), partner.get(k)) else {
            continue;
        };
        if !p.is_some() {
            continue;
        }
        // the send's time, read only where an instance is made or the buffer holds some
        // (most receives do neither)
        let ts = || trace.events[p.loc as usize].time.get(p.event as usize);
        let instance = |ts: u64| -> Buffered {
            let (comm, bytes) = (ev.msg.comm[k], ev.msg.bytes.get(k));
            (ts, proc(p.loc), peer, comm, st.cnode(i), bytes == 0)
        };
        // most receives did not wait: the class and the instance only for those that did
        let waited = idle(trace, replay, l, i, p);
        if waited > 0 {
            let e = st.enterptr(i);
            let class = match classes.get(arg[e as usize] as usize) {
                Some(c) => *c,
                None => "",
            };
            if !class.starts_with("P2P_TEST") {
                if class == "P2P_WAIT_MULTI" {
                    if multi.is_none_or(|m| m.0 != e || waited > m.1) {
                        if multi.is_none() {
                            events = scan(i + 1, true);
                        }
                        multi = Some((e, waited, instance(ts())));
                    }
                } else {
                    buf.push(instance(ts()));
                }
            }
        }
        if buf.q.is_empty() {
            continue;
        }
        let ts = ts();
        let hit = buf.take_later(ts);
        if hit.is_empty() {
            continue;
        }
        let me = instance(ts);
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
