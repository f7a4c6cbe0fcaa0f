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
pub fn decode_events(
    data: &[u8],
    chunk_size: usize,
    cx: &mut LocationContext,
    out: &mut EventsFiller,
) -> DResult<()> {
    let mut time = 0u64;
    let mut attrs: Vec<Attribute> = Vec::new();
    let mut scratch: Vec<u64> = Vec::new();
    for_each_chunk(data, chunk_size, |mut c, last_chunk| {
        // the chunk's bytes, and the file's beyond them (the compressed-integer fast path
        // reads 8 bytes at once, masked to the integer's length)
        let (chunk, file) = (&c.buf[..c.end], c.buf);
        loop {
            // The records of nearly every event, little endian, without attributes: a
            // timestamp, an ENTER or a LEAVE, read here without a cursor; anything else,
            // and these near the chunk's end, go the general way below.
            if !c.big_endian {
                match chunk.get(c.pos) {
                    Some(&TIMESTAMP) => {
                        if let Some(b) = chunk.get(c.pos + 1..c.pos + 9) {
                            let mut a = [0u8; 8];
                            a.copy_from_slice(b);
                            time = u64::from_le_bytes(a);
                            c.pos += 9;
                            continue;
                        }
                    }
                    Some(&t @ (12 | 13)) if attrs.is_empty() => {
                        if let Some((local, len)) = fast_uc(c.end, file, c.pos + 1, 4) {
                            let local = local as u32;
                            c.pos += 1 + len;
                            let kind = if t == 12 {
                                EventKind::Enter
                            } else {
                                EventKind::Leave
                            };
                            let r = cx.regions.resolve(local as u64, cx.region_global);
                            out.push_region(time, kind, r);
                            continue;
                        }
                    }
                    Some(&t @ (14 | 15 | 18 | 19)) if attrs.is_empty() => {
                        if let Some((end, m)) = fast_msg(c.end, file, c.pos + 1, t == 15 || t == 19)
                        {
                            c.pos = end;
                            let kind = match t {
                                14 => EventKind::MpiSend,
                                18 => EventKind::MpiRecv,
                                15 => EventKind::MpiIsend,
                                _ => EventKind::MpiIrecv,
                            };
                            let m = Msg {
                                comm: cx.comms.resolve(m.comm as u64, cx.comm_global),
                                ..m
                            };
                            out.push_msg(time, kind, m);
                            continue;
                        }
                    }
                    _ => {}
                }
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

/// A little-endian compressed integer of at most `max` bytes (A.4) at `pos` and its length
/// in bytes, when it ends by `end` and `file` has 8 bytes after its size byte (else `None`:
/// the cursor's checked path reads it, or reports it).
#[inline(always)]
fn fast_uc(end: usize, file: &[u8], pos: usize, max: usize) -> Option<(u64, usize)> {
    let w = file.get(pos..pos + 9)?;
    let n = w[0] as usize;
    if n > max || pos + 1 + n > end {
        return None;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&w[1..9]);
    let v = u64::from_le_bytes(a);
    // n = 0: the value 0; 1 <= n <= 8 keeps the shift below 64
    let v = if n == 0 {
        0
    } else {
        v & (u64::MAX >> (64 - 8 * n as u32))
    };
    Some((v, 1 + n))
}

/// A little-endian point-to-point record's payload at `pos` (its one-byte length, then
/// receiver or sender, communicator (local id), tag, length and, `nonblocking`, the request)
/// inside a chunk ending at `end`: the record's end and the message, or `None` for the
/// cursor's checked path (a long length, a field that does not fit, the file's last bytes).
#[inline(always)]
fn fast_msg(end: usize, file: &[u8], pos: usize, nonblocking: bool) -> Option<(usize, Msg)> {
    let len = *file.get(pos)? as usize;
    let rend = pos + 1 + len;
    if len == 0xff || rend > end {
        return None;
    }
    let mut p = pos + 1;
    let mut field = |max: usize| {
        let (v, n) = fast_uc(rend, file, p, max)?;
        p += n;
        Some(v)
    };
    let peer = field(4)? as u32;
    let comm = field(4)? as u32;
    let tag = field(4)? as u32;
    let bytes = field(8)?;
    let request = if nonblocking { Some(field(8)?) } else { None };
    Some((
        rend,
        Msg {
            peer,
            comm,
            tag,
            bytes,
            request,
        },
    ))
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
