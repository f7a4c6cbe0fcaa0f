//! The receive and send passes' triggers: a matched receive completion binds `R`, `S`; a
//! matched, not cancelled send binds `S`, `R`, `C` (its completion) and `Q` (the receive's
//! request).

use crate::model::{EventKind, Events, Trace};
use crate::replay::matching::MsgLinks;
use crate::replay::{Replay, NONE};
use crate::rules::compile::Value;

/// The bindings of receive `i` of location `l` (`ev`, `links`: its events and message
/// links) as a trigger, `None` without a matched send.
#[inline(always)]
pub(crate) fn bind_receive(
    links: &MsgLinks,
    ev: &Events,
    l: usize,
    i: usize,
) -> Option<[Value; 4]> {
    let p = links.partner[ev.arg[i] as usize];
    p.is_some().then(|| {
        let r = Value::Event(l as u32, i as u32);
        let s = Value::Event(p.loc, p.event);
        [r, s, Value::None, Value::None]
    })
}

/// The bindings of send `i` (of `kind`) of location `l` as a trigger, `None` without a
/// matched receive, for a cancelled send, or without its completion or the receive's.
#[inline(always)]
pub(crate) fn bind_send(
    trace: &Trace,
    replay: &Replay,
    links: &MsgLinks,
    ev: &Events,
    kind: EventKind,
    l: usize,
    i: usize,
) -> Option<[Value; 4]> {
    let k = ev.arg[i] as usize;
    let p = links.partner[k];
    if !p.is_some() || links.cancelled(k) {
        return None;
    }
    let c = if kind == EventKind::MpiSend {
        i as u32
    } else {
        links.request_event(k)
    };
    let rev = &trace.events[p.loc as usize];
    let q = if rev.kind[p.event as usize] == EventKind::MpiRecv {
        p.event
    } else {
        replay.msg_links[p.loc as usize].request_event(rev.arg[p.event as usize] as usize)
    };
    (c != NONE && q != NONE).then_some({
        [
            Value::Event(l as u32, i as u32),
            Value::Event(p.loc, p.event),
            Value::Event(l as u32, c),
            Value::Event(p.loc, q),
        ]
    })
}
