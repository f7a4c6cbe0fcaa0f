//! Event files (formats.md A.5–A.7, A.10): the hot decoding loop that fills a location's
//! columns. Enter/Leave and MPI message/collective records take a hand-written path;
//! every other kind is decoded from its field table into `Events::extra`.

use super::local::LocalDefs;
use super::records::decode_event_fields;
use super::schema::EVENTS;
use super::wire::*;
use crate::model::{Attribute, Coll, EventKind, Events, Msg};
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
    out: &mut Events,
) -> DResult<()> {
    let mut time = 0u64;
    let mut attrs: Vec<Attribute> = Vec::new();
    let mut scratch: Vec<u64> = Vec::new();
    for_each_chunk(data, chunk_size, |mut c, last_chunk| {
        loop {
            let Some(&t) = c.buf[..c.end].get(c.pos) else {
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
