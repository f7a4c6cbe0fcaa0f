//! Event files (formats.md A.5–A.7, A.10): the hot decoding loop that fills a location's
//! columns. Enter/Leave and MPI message/collective records take a hand-written path;
//! every other kind is decoded from its field table into `Events::extra`.

use super::local::LocalDefs;
use super::records::decode_event_fields;
use super::schema::EVENTS;
use super::wire::*;
use crate::model::events::EventsFiller;
use crate::model::{Attribute, Coll, EventKind, Msg};
use std::collections::HashMap;

/// Local id → model index for one kind of reference, for one location. Ids that no
/// definition declares get placeholder indices from `base` on, listed in `undefined`.
pub struct Resolver {
    direct: Vec<u32>,
    sparse: HashMap<u64, u32>,
    base: u32,
    pub undefined: Vec<u64>,
}

impl Resolver {
    const NONE: u32 = u32::MAX;

    /// The direct table: `table()[id]` is the model index of local id `id`, or `NONE` where
    /// `resolve` must look further.
    #[inline]
    fn table(&self) -> &[u32] {
        &self.direct
    }

    /// `global` maps global ids to model indices (`count` of them); `map` is the location's
    /// local-to-global table of this kind, if any.
    pub fn new(
        global: &super::defs::IdIndex,
        count: usize,
        max_direct_id: u64,
        map: Option<&super::local::IdMapTable>,
    ) -> Resolver {
        let mut r = Resolver {
            direct: Vec::new(),
            sparse: HashMap::new(),
            base: count as u32,
            undefined: Vec::new(),
        };
        let n = (max_direct_id.min(1 << 20) as usize).max(count);
        r.direct = (0..n as u64)
            .map(|id| global.get(id).unwrap_or(Self::NONE))
            .collect();
        if let Some(m) = map {
            for (local, g) in m.pairs() {
                let idx = global.get(g).unwrap_or(Self::NONE);
                if (local as usize) < r.direct.len() {
                    r.direct[local as usize] = idx;
                } else if idx != Self::NONE {
                    r.sparse.insert(local, idx);
                }
            }
        }
        r
    }

    #[inline]
    pub fn resolve(&mut self, local: u64, fallback_global: &dyn Fn(u64) -> Option<u32>) -> u32 {
        if let Some(&v) = self.direct.get(local as usize) {
            if v != Self::NONE {
                return v;
            }
        }
        self.resolve_slow(local, fallback_global)
    }

    #[cold]
    fn resolve_slow(&mut self, local: u64, fallback_global: &dyn Fn(u64) -> Option<u32>) -> u32 {
        if let Some(&v) = self.sparse.get(&local) {
            return v;
        }
        if let Some(v) = fallback_global(local) {
            self.sparse.insert(local, v);
            return v;
        }
        // an undefined id: the next placeholder, remembered like any other id (a trace full
        // of undefined ids must not make this quadratic; found by fuzzing)
        let v = self.base + self.undefined.len() as u32;
        self.undefined.push(local);
        self.sparse.insert(local, v);
        v
    }

    pub fn base(&self) -> u32 {
        self.base
    }
}

/// Everything the decoder of one location needs.
pub struct LocationContext<'a> {
    pub local: &'a LocalDefs,
    pub regions: Resolver,
    pub comms: Resolver,
    pub region_global: &'a dyn Fn(u64) -> Option<u32>,
    pub comm_global: &'a dyn Fn(u64) -> Option<u32>,
}

/// Decode one `.evt` file into `out` (timestamps still raw; the caller corrects the clock).
/// `read_to`, if any, hears each chunk's start as the decoder reaches it: the bytes before
/// it are read for good (a caller that maps the file drops their pages).
pub fn decode_events(
    data: &[u8],
    chunk_size: usize,
    cx: &mut LocationContext,
    out: &mut EventsFiller,
    mut read_to: Option<&mut dyn FnMut(usize)>,
) -> DResult<()> {
    let mut time = 0u64;
    let mut attrs: Vec<Attribute> = Vec::new();
    let mut scratch: Vec<u64> = Vec::new();
    let mut batch = Batch::new();
    for_each_chunk(data, chunk_size, |mut c, last_chunk| {
        if let Some(f) = read_to.as_mut() {
            f(c.pos);
        }
        let chunk = &c.buf[..c.end];
        loop {
            // the records of nearly every event, little endian, without attributes
            if !c.big_endian
                && attrs.is_empty()
                && fast_records(&mut c, &mut time, cx, out, &mut batch)
            {
                continue;
            }
            let Some(&t) = chunk.get(c.pos) else {
                if last_chunk {
                    return derr(
                        c.pos,
                        "unexpected end of file, expected an event record or END_OF_FILE (0x02)",
                    );
                }
                return Ok(false);
            };
            let offset = c.pos;
            c.pos += 1;
            match t {
                TIMESTAMP => {
                    time = c.u64f()?;
                    continue;
                }
                ATTRIBUTE_LIST => {
                    attribute_list(&mut c, cx.local, &mut attrs)?;
                    continue;
                }
                END_OF_CHUNK => return Ok(false),
                END_OF_BUFFER | END_OF_FILE => return Ok(true),
                CHUNK_HEADER | 4 | 7..=9 => {
                    return derr(
                        offset,
                        format!("invalid record type 0x{t:02x} in an event file, expected an event (>= 0x0a)"),
                    )
                }
                _ => {}
            }
            if !attrs.is_empty() {
                out.attach_attributes(&attrs);
                attrs.clear();
            }
            match t {
                12 | 13 => {
                    let local = c.u32c()? as u64;
                    let kind = if t == 12 {
                        EventKind::Enter
                    } else {
                        EventKind::Leave
                    };
                    out.push_region(time, kind, cx.regions.resolve(local, cx.region_global));
                }
                14 | 15 | 18 | 19 => {
                    let mut r = record(&mut c)?;
                    let peer = r.u32c()?;
                    let comm = cx.comms.resolve(r.u32c()? as u64, cx.comm_global);
                    let tag = r.u32c()?;
                    let bytes = r.u64c()?;
                    let (kind, request) = match t {
                        14 => (EventKind::MpiSend, None),
                        18 => (EventKind::MpiRecv, None),
                        15 => (EventKind::MpiIsend, Some(r.u64c()?)),
                        _ => (EventKind::MpiIrecv, Some(r.u64c()?)),
                    };
                    let m = Msg {
                        peer,
                        comm,
                        tag,
                        bytes,
                        request,
                    };
                    out.push_msg(time, kind, m);
                }
                23 | 86 => {
                    let mut r = record(&mut c)?;
                    let op = r.u8()?;
                    let comm = cx.comms.resolve(r.u32c()? as u64, cx.comm_global);
                    let root = r.u32c()?;
                    let sent = r.u64c()?;
                    let received = r.u64c()?;
                    let (kind, request) = if t == 23 {
                        (EventKind::MpiCollectiveEnd, None)
                    } else {
                        (EventKind::NonBlockingCollectiveComplete, Some(r.u64c()?))
                    };
                    let coll = Coll {
                        op,
                        comm,
                        root,
                        sent,
                        received,
                        request,
                    };
                    out.push_coll(time, kind, coll);
                }
                _ => match EventKind::from_otf2_id(t) {
                    Some(kind) => {
                        let Some(spec) = EVENTS.iter().find(|s| s.id == t) else {
                            return derr(offset, "internal: event kind without a field table");
                        };
                        let mut r = if spec.length_prefixed {
                            record(&mut c)?
                        } else {
                            c
                        };
                        let local = cx.local;
                        decode_event_fields(spec, &mut r, &|m, v| local.map(m, v), &mut scratch)?;
                        if !spec.length_prefixed {
                            c.pos = r.pos;
                        }
                        if !out.push_extra(time, kind, &scratch) {
                            return derr(offset, "too many event fields for one location");
                        }
                    }
                    None => {
                        // Unknown to this build: every unknown event is length-prefixed (A.7).
                        let len = c.record_length()?;
                        c.pos += len;
                        out.push_unknown(time, t);
                    }
                },
            }
        }
    })
}

/// The records of nearly every event in a little-endian file without attributes pending:
/// timestamps, ENTERs and LEAVEs, point-to-point records, read straight from the bytes from
/// `c.pos` on, as many as come in a row (`time` set, the events in `out`, `c.pos` past
/// them). True when it read any; it stops before anything else, and before these near the
/// chunk's end, with a field that does not fit or a region id the location's table does not
/// resolve, which go the checked way.
#[inline(always)]
fn fast_records(
    c: &mut Cursor,
    time: &mut u64,
    cx: &mut LocationContext,
    out: &mut EventsFiller,
    b: &mut Batch,
) -> bool {
    let start = c.pos;
    b.msg_base = out.messages() as u32;
    loop {
        let full = fast_span(c, time, cx, b);
        // the messages only when their batch is full or the span ends (the message
        // columns grow by as many at a time whichever batch fills first)
        b.flush(out, !full || b.m == BATCH);
        if !full {
            break;
        }
    }
    c.pos > start
}

/// `fast_records` until the batch is full (true) or a record that goes the checked way
/// comes (false), the events and messages written into `b`.
#[inline(never)]
fn fast_span(c: &mut Cursor, time: &mut u64, cx: &mut LocationContext, b: &mut Batch) -> bool {
    // a window of `WINDOW` bytes inside the chunk holds a timestamp and the record after it
    // (ENTER or LEAVE: type, size byte, up to 4 value bytes, 8 bytes loaded; a
    // point-to-point record: type, length byte and its fields, each field's 8 value bytes
    // loaded), or one such record alone: records in a chunk's last bytes go the checked way
    let chunk = &c.buf[..c.end.min(c.buf.len())];
    // the bytes not yet read (the position follows from their length)
    let mut rest = chunk.get(c.pos..).unwrap_or_default();
    let (mut t, mut e, mut m) = (*time, b.e, b.m);
    let (regions, comms) = (cx.regions.table(), cx.comms.table());
    let full = loop {
        if e >= BATCH_EVENTS {
            break true;
        }
        let Some(w) = rest.first_chunk::<WINDOW>() else {
            break false;
        };
        // the record: `rest`'s first `RECORD` bytes
        let r = if w[0] == TIMESTAMP {
            // a timestamp read stays read: a record after it that goes the checked way
            // starts there
            t = le_u64(&w[1..9]);
            rest = &rest[9..];
            w.last_chunk::<RECORD>()
        } else {
            w.first_chunk::<RECORD>()
        };
        let Some(r) = r else {
            break false;
        };
        let k = r[0];
        if k.wrapping_sub(12) < 2 {
            let n = r[1] as usize;
            if n > 4 {
                break false;
            }
            let local = le_u32(&r[2..6]) & MASK32[n.min(4)];
            let Some(&id) = regions
                .get(local as usize)
                .filter(|&&v| v != Resolver::NONE)
            else {
                break false;
            };
            rest = &rest[2 + n.min(4)..];
            let kind = if k == 12 {
                EventKind::Enter
            } else {
                EventKind::Leave
            };
            b.event(e, t, kind, id);
            e += 1;
            continue;
        }
        let kind = match k {
            14 => EventKind::MpiSend,
            15 => EventKind::MpiIsend,
            18 => EventKind::MpiRecv,
            19 => EventKind::MpiIrecv,
            _ => break false,
        };
        // the payload written to the batch's slot `m` (taken only when it all fits)
        let Some((len, request)) = fast_msg(r, k & 1 == 1, b, (m, comms)) else {
            break false;
        };
        rest = &rest[2 + len.min(RECORD - 2)..];
        let i = b.msg_base + m.min(BATCH - 1) as u32;
        if let Some(r) = request {
            b.requests.push((i, r));
        }
        m += 1;
        b.event(e, t, kind, i);
        e += 1;
        if m >= BATCH {
            break true;
        }
    };
    c.pos = chunk.len() - rest.len();
    *time = t;
    b.e = e;
    b.m = m;
    full
}

/// The bytes of a record `fast_span` reads straight: type, length byte and up to 38 bytes
/// of fields (a point-to-point record's four or five, each field's 8 value bytes loaded at
/// once).
const RECORD: usize = 40;

/// The bytes `fast_span` looks at: a timestamp (type and 8 bytes) and a record.
const WINDOW: usize = 9 + RECORD;

/// The low `n` bytes of a u64 (`n` <= 8).
const MASK64: [u64; 9] = {
    let mut m = [0u64; 9];
    let mut n = 1;
    while n < 9 {
        m[n] = u64::MAX >> (64 - 8 * n);
        n += 1;
    }
    m
};

/// The low `n` bytes of a u32 (`n` <= 4).
const MASK32: [u32; 5] = [0, 0xff, 0xffff, 0xff_ffff, u32::MAX];

/// Up to this many messages `fast_span` decodes into a `Batch` before they go to the
/// columns.
const BATCH: usize = 256;

/// Up to this many events `fast_span` decodes into a `Batch` before they go to the columns.
const BATCH_EVENTS: usize = 1024;

/// The events and message payloads decoded by `fast_span` on their way to the columns:
/// written to the decoder's buffers (one heap block per location; each store one
/// instruction, no column's length or capacity in a register) and appended a batch at a
/// time.
struct Batch {
    /// Events.
    e: usize,
    time: [u64; BATCH_EVENTS],
    kind: [EventKind; BATCH_EVENTS],
    arg: [u32; BATCH_EVENTS],
    /// Messages, indexed from `msg_base` (the columns' message count at the batch's start).
    m: usize,
    msg_base: u32,
    peer: [u32; BATCH],
    comm: [u32; BATCH],
    tag: [u32; BATCH],
    bytes: [u64; BATCH],
    /// (message index, request) of the non-blocking ones.
    requests: Vec<(u32, u64)>,
}

impl Batch {
    fn new() -> Box<Batch> {
        Box::new(Batch {
            e: 0,
            time: [0; BATCH_EVENTS],
            kind: [EventKind::Enter; BATCH_EVENTS],
            arg: [0; BATCH_EVENTS],
            m: 0,
            msg_base: 0,
            peer: [0; BATCH],
            comm: [0; BATCH],
            tag: [0; BATCH],
            bytes: [0; BATCH],
            requests: Vec::new(),
        })
    }

    /// Event `e` (`fast_span`'s count, below `BATCH_EVENTS`).
    #[inline(always)]
    fn event(&mut self, e: usize, time: u64, kind: EventKind, arg: u32) {
        let e = e.min(BATCH_EVENTS - 1);
        self.time[e] = time;
        self.kind[e] = kind;
        self.arg[e] = arg;
    }

    /// The batch's events appended to `out`, then its messages with `messages` (the message
    /// columns grow by the messages' share of the events so far); what was appended gone
    /// from the batch.
    fn flush(&mut self, out: &mut EventsFiller, messages: bool) {
        let e = self.e.min(BATCH_EVENTS);
        if e > 0 {
            out.extend_events(&self.time[..e], &self.kind[..e], &self.arg[..e]);
            self.e = 0;
        }
        let m = self.m.min(BATCH);
        if messages && m > 0 {
            let (peer, comm, tag) = (&self.peer[..m], &self.comm[..m], &self.tag[..m]);
            out.extend_messages([peer, comm, tag], &self.bytes[..m], &self.requests);
            self.requests.clear();
            self.m = 0;
            self.msg_base = out.messages() as u32;
        }
    }
}

/// Four little-endian bytes.
#[inline(always)]
fn le_u32(b: &[u8]) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(b);
    u32::from_le_bytes(a)
}

/// Eight little-endian bytes.
#[inline(always)]
fn le_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    u64::from_le_bytes(a)
}

/// A little-endian point-to-point record `r` (its type, its one-byte length, then receiver
/// or sender, communicator (local id), tag, length and, `nonblocking`, the request), written
/// to slot `k` of `b` once read whole (`comms` the location's communicator table): the
/// record's length (after the length byte) and the request, or `None` for the cursor's
/// checked path (a record longer than `r`, a field that does not fit, a communicator the
/// table does not resolve).
#[inline(always)]
fn fast_msg(
    r: &[u8; RECORD],
    nonblocking: bool,
    b: &mut Batch,
    (k, comms): (usize, &[u32]),
) -> Option<(usize, Option<u64>)> {
    let len = r[1] as usize;
    if len > RECORD - 2 {
        return None;
    }
    let k = k.min(BATCH - 1);
    let (peer, p) = p2p_field(r, 2, 4)?;
    let (comm, p) = p2p_field(r, p, 4)?;
    let (tag, p) = p2p_field(r, p, 4)?;
    let (bytes, p) = p2p_field(r, p, 8)?;
    let (request, p) = if nonblocking {
        let (q, p) = p2p_field(r, p, 8)?;
        (Some(q), p)
    } else {
        (None, p)
    };
    // every field inside the record (`p` only grows)
    if p > 2 + len {
        return None;
    }
    b.peer[k] = peer as u32;
    b.comm[k] = *comms.get(comm as usize).filter(|&&v| v != Resolver::NONE)?;
    b.tag[k] = tag as u32;
    b.bytes[k] = bytes;
    Some((len, request))
}

/// The field of a point-to-point record `r` at `p` (its size byte, up to `max` value bytes,
/// 8 loaded at once): its value and the position after it. `fast_msg` asks for at most
/// five, each of at most 9 bytes from 2 on, so `p` is at most 26 and the bounds hold
/// without a check (the `min` only says so).
#[inline(always)]
fn p2p_field(r: &[u8; RECORD], p: usize, max: usize) -> Option<(u64, usize)> {
    let p = p.min(RECORD - 9);
    let n = r[p] as usize;
    if n > max {
        return None;
    }
    let v = le_u64(&r[p + 1..p + 9]) & MASK64[n.min(8)];
    Some((v, p + 1 + n))
}

/// The payload of a length-prefixed record: a cursor that ends where the record ends.
#[inline]
fn record<'a>(c: &mut Cursor<'a>) -> DResult<Cursor<'a>> {
    let len = c.record_length()?;
    let end = c.pos + len;
    let r = c.limited(end);
    c.pos = end;
    Ok(r)
}

/// An attribute list (A.6), keys and reference values mapped to global ids.
fn attribute_list(c: &mut Cursor, local: &LocalDefs, out: &mut Vec<Attribute>) -> DResult<()> {
    let mut r = record(c)?;
    let count = r.u32c()?;
    for _ in 0..count {
        let key = local.map(MappingType::Attribute, r.u32c()? as u64) as u32;
        let ty = r.u8()?;
        let mut value = r.attribute_value(ty)?;
        if let Some(m) = MappingType::of_type(ty) {
            value = local.map(m, value);
        }
        out.push(Attribute { key, ty, value });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Events;

    /// A compressed integer (A.4) in the given byte order.
    fn compressed(out: &mut Vec<u8>, v: u64, big: bool) {
        let n = (8 - v.leading_zeros() as usize / 8).min(8);
        out.push(n as u8);
        let b = v.to_le_bytes();
        if big {
            out.extend(b[..n].iter().rev());
        } else {
            out.extend_from_slice(&b[..n]);
        }
    }

    /// One chunk of event records in the given byte order: ENTER/LEAVE, blocking and
    /// non-blocking messages (one with all-ones bytes, one length-prefixed record longer
    /// than its fields), an event of another kind, END_OF_FILE.
    fn event_file(big: bool) -> Vec<u8> {
        let mut f = vec![CHUNK_HEADER, if big { BIG_ENDIAN } else { LITTLE_ENDIAN }];
        f.resize(CHUNK_HEADER_LEN, 0);
        let ts = |f: &mut Vec<u8>, t: u64| {
            f.push(TIMESTAMP);
            f.extend(if big {
                t.to_be_bytes()
            } else {
                t.to_le_bytes()
            });
        };
        let record = |f: &mut Vec<u8>, t: u8, fields: &[u64], pad: usize| {
            let mut r = Vec::new();
            for &x in fields {
                compressed(&mut r, x, big);
            }
            r.resize(r.len() + pad, 0);
            f.push(t);
            f.push(r.len() as u8);
            f.extend(r);
        };
        for k in 0..3u64 {
            ts(&mut f, 100 + k);
            f.push(12);
            compressed(&mut f, k % 2, big);
            ts(&mut f, 200 + k);
            record(&mut f, 14, &[1, 0, 7, 1 << (8 * k)], 0);
            ts(&mut f, 300 + k);
            record(&mut f, 19, &[2, 1, 0, 0, 1 << 40], (k == 1) as usize * 3);
            ts(&mut f, 400 + k);
            record(&mut f, 18, &[3, 0, 9, u32::MAX as u64 + k], 0);
            ts(&mut f, 500 + k);
            f.push(13);
            compressed(&mut f, k % 2, big);
        }
        ts(&mut f, 600);
        // ProgramEnd (id 84): its exit status, decoded from its field table
        record(&mut f, 84, &[3], 0);
        f.push(END_OF_FILE);
        f
    }

    fn decode(data: &[u8]) -> DResult<Events> {
        let local = crate::formats::otf2::local::LocalDefs::default();
        let g = crate::formats::otf2::defs::GlobalDefs::default();
        let none = |_: u64| None;
        let mut cx = LocationContext {
            local: &local,
            regions: Resolver::new(&g.regions, 0, 0, None),
            comms: Resolver::new(&g.comms, 0, 0, None),
            region_global: &none,
            comm_global: &none,
        };
        let mut out = EventsFiller::default();
        decode_events(data, data.len().max(1), &mut cx, &mut out, None)?;
        Ok(out.finish())
    }

    /// The little-endian fast path reads what the checked cursor reads in a big-endian file
    /// of the same records, cut anywhere: the same events, or an error at the same offset.
    #[test]
    fn fast_path_agrees_with_the_checked_path() {
        let (le, be) = (event_file(false), event_file(true));
        assert_eq!(le.len(), be.len());
        let whole = decode(&le).expect("the whole file decodes");
        assert_eq!(whole.len(), 3 * 5 + 1);
        assert_eq!(whole.msg.bytes.get(2), u32::MAX as u64);
        assert_eq!(whole.msg(2).and_then(|m| m.request), Some(1 << 40));
        for cut in CHUNK_HEADER_LEN..=le.len() {
            let (a, b) = (decode(&le[..cut]), decode(&be[..cut]));
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "cut at {cut}"),
                (Err(a), Err(b)) => assert_eq!(a.offset, b.offset, "cut at {cut}"),
                (a, b) => panic!("cut at {cut}: {:?} vs {:?}", a.is_ok(), b.is_ok()),
            }
        }
    }
}
