//! One location's event file (`traces/<id>.evt`) from its model columns: Enter/Leave,
//! MPI messages and collectives from their own columns, every other kind from its fields
//! through the record layout of `formats::otf2::schema` (the inverse of the reader's
//! table-driven decoder), attributes left out (the model keeps no attribute definitions).

use super::defs::Ids;
use super::stream::{length_prefixed, u32c, u64c, Stream, EVENT_CHUNK};
use crate::formats::otf2::schema::EVENTS;
use crate::formats::otf2::wire::{FieldSpec, MappingType, RecordSpec, Wire};
use crate::model::{EventKind, Events};
use std::io::{self, Write};

/// What writing one location left out or had to fill in.
#[derive(Clone, Debug, Default)]
pub struct Losses {
    /// Events whose attributes were left out.
    pub attributes: u64,
    /// Events with more fields than their OTF2 record holds (the rest left out).
    pub extra_fields: u64,
    /// Events with fewer fields than their OTF2 record holds (the rest written as 0).
    pub missing_fields: u64,
    /// Events of a record type unknown to OTF2 (written with an empty payload).
    pub unknown: u64,
}

impl Losses {
    pub fn add(&mut self, o: &Losses) {
        self.attributes += o.attributes;
        self.extra_fields += o.extra_fields;
        self.missing_fields += o.missing_fields;
        self.unknown += o.unknown;
    }
}

/// One scalar in its wire form (A.4, A.6); `ty` is the `OTF2_Type` of a typed value.
fn scalar(out: &mut Vec<u8>, wire: Wire, ty: u8, v: u64) {
    match wire {
        Wire::U8 => out.push(v as u8),
        Wire::U32c => u32c(out, v as u32),
        Wire::U64c | Wire::MetricValue | Wire::I64c => u64c(out, v),
        Wire::U64f | Wire::F64 => out.extend_from_slice(&v.to_le_bytes()),
        Wire::AttrValue => match ty {
            1 | 5 => out.push(v as u8),
            2 | 6 => out.extend_from_slice(&(v as u16).to_le_bytes()),
            3 | 7 | 11 | 12 | 14..=25 => u32c(out, v as u32),
            9 => out.extend_from_slice(&(v as u32).to_le_bytes()),
            10 => out.extend_from_slice(&v.to_le_bytes()),
            _ => u64c(out, v),
        },
        Wire::Str | Wire::IdMap => {}
    }
}

/// The payload of a record of `spec` from the model's fields (record order, arrays
/// interleaved per element, as `Events::fields` holds them); returns (fields missing,
/// fields left over).
pub fn encode_fields(
    spec: &RecordSpec,
    vals: &[u64],
    map: &dyn Fn(&FieldSpec, u64) -> u64,
    out: &mut Vec<u8>,
) -> (usize, usize) {
    let fields = spec.fields;
    let mut written: Vec<u64> = Vec::with_capacity(vals.len().max(fields.len()));
    let mut k = 0;
    let mut missing = 0;
    // a missing reference is written as undefined, any other missing field as 0
    let mut next = |k: &mut usize, f: &FieldSpec| {
        let v = vals.get(*k).copied();
        *k += 1;
        v.map(|v| map(f, v)).unwrap_or_else(|| {
            missing += 1;
            if f.mapped_by.is_some() {
                u32::MAX as u64
            } else {
                0
            }
        })
    };
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        let Some(cf) = f.count_field else {
            let ty = f
                .type_field
                .map_or(0, |t| written.get(t).copied().unwrap_or(0)) as u8;
            let v = next(&mut k, f);
            scalar(out, f.wire, ty, v);
            written.push(v);
            i += 1;
            continue;
        };
        let group = fields[i..]
            .iter()
            .take_while(|g| g.count_field == Some(cf))
            .count();
        let n = written.get(cf).copied().unwrap_or(0);
        for _ in 0..n {
            let elem = written.len();
            for g in 0..group {
                let gf = &fields[i + g];
                let ty = match gf.type_field {
                    Some(t) if t >= i => written[elem + (t - i)] as u8,
                    Some(t) => written.get(t).copied().unwrap_or(0) as u8,
                    None => 0,
                };
                let v = next(&mut k, gf);
                scalar(out, gf.wire, ty, v);
                written.push(v);
            }
        }
        i += group;
    }
    (missing, vals.len().saturating_sub(k))
}

/// Writes the events of one location to `out`; `progress` gets the events written now
/// and then (every 65,536).
pub fn write_location(
    ev: &Events,
    ids: &Ids,
    out: impl Write,
    progress: &(dyn Fn(u64) + Sync),
) -> io::Result<Losses> {
    let mut s = Stream::new(out, EVENT_CHUNK);
    let mut losses = Losses::default();
    let mut rec: Vec<u8> = Vec::with_capacity(64);
    let mut payload: Vec<u8> = Vec::with_capacity(64);
    let mut attr_at = ev
        .attribute_index
        .iter()
        .map(|&(i, _)| i as usize)
        .peekable();
    let comm = |c: u32| ids.comms.get(c as usize).copied().unwrap_or(c);
    // communicators named in fields (thread teams) by the trace's id
    let team = |f: &FieldSpec, v: u64| match f.mapped_by {
        Some(MappingType::Comm) => ids.comm_by_id.get(&v).map_or(v, |&c| c as u64),
        _ => v,
    };
    for i in 0..ev.len() {
        if attr_at.next_if_eq(&i).is_some() {
            losses.attributes += 1;
        }
        let kind = ev.kind[i];
        rec.clear();
        payload.clear();
        match kind {
            EventKind::Enter | EventKind::Leave => {
                rec.push(kind as u8);
                let r = ev.arg[i];
                u32c(&mut rec, ids.regions.get(r as usize).copied().unwrap_or(r));
            }
            EventKind::MpiSend | EventKind::MpiRecv | EventKind::MpiIsend | EventKind::MpiIrecv => {
                let Some(m) = ev.msg(i) else { continue };
                u32c(&mut payload, m.peer);
                u32c(&mut payload, comm(m.comm));
                u32c(&mut payload, m.tag);
                u64c(&mut payload, m.bytes);
                if matches!(kind, EventKind::MpiIsend | EventKind::MpiIrecv) {
                    u64c(&mut payload, m.request.unwrap_or(0));
                }
                length_prefixed(&mut rec, kind as u8, &payload);
            }
            EventKind::MpiCollectiveEnd | EventKind::NonBlockingCollectiveComplete => {
                let Some(c) = ev.coll(i) else { continue };
                payload.push(c.op);
                u32c(&mut payload, comm(c.comm));
                u32c(&mut payload, c.root);
                u64c(&mut payload, c.sent);
                u64c(&mut payload, c.received);
                if kind == EventKind::NonBlockingCollectiveComplete {
                    u64c(&mut payload, c.request.unwrap_or(0));
                }
                length_prefixed(&mut rec, kind as u8, &payload);
            }
            EventKind::Unknown => {
                // a record type OTF2 does not know: every such record is length-prefixed
                losses.unknown += 1;
                length_prefixed(&mut rec, ev.arg[i] as u8, &[]);
            }
            _ => {
                let Some(spec) = EVENTS.iter().find(|s| s.id == kind as u8) else {
                    return Err(io::Error::other(format!(
                        "no OTF2 record layout for {}",
                        kind.name()
                    )));
                };
                let mut fields = ev.fields(i);
                let renamed;
                if kind == EventKind::Metric {
                    // the class id, renumbered as the definitions are
                    if let Some((&c, rest)) = fields.split_first() {
                        let c = ids.metric_classes.get(&(c as u32)).map_or(c, |&n| n as u64);
                        renamed = [&[c][..], rest].concat();
                        fields = &renamed;
                    }
                }
                let (missing, extra) = encode_fields(spec, fields, &team, &mut payload);
                losses.missing_fields += (missing > 0) as u64;
                losses.extra_fields += (extra > 0) as u64;
                if spec.length_prefixed {
                    length_prefixed(&mut rec, kind as u8, &payload);
                } else {
                    rec.push(kind as u8);
                    rec.extend_from_slice(&payload);
                }
            }
        }
        s.event(ev.time.get(i), rec.len(), &rec)?;
        if i & 0xffff == 0xffff {
            progress(0x10000);
        }
    }
    progress((ev.len() & 0xffff) as u64);
    s.finish()?;
    Ok(losses)
}
