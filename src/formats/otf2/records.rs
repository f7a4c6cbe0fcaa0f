//! Table-driven decoding of any definition or event record from its field layout
//! (`schema.rs`, generated from the spec's `otf2_records.json`), including fields added by
//! later OTF2 versions (A.7: present while the record has bytes left), interleaved arrays
//! and typed attribute values.

use super::schema;
use super::wire::{derr, Cursor, DResult, FieldSpec, RecordSpec, Wire};

/// One decoded definition field.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Integers, enum values, references and the raw bits of floats and attribute values.
    Int(u64),
    Str(String),
    /// The elements of an array field.
    List(Vec<u64>),
    /// A mapping table: dense (local id i → ids[i]) or sparse (local, global) pairs.
    IdMap(IdMapValue),
    /// A field the writer's OTF2 version did not have yet.
    Absent,
}

#[derive(Clone, Debug, PartialEq)]
pub enum IdMapValue {
    Dense(Vec<u64>),
    Sparse(Vec<(u64, u64)>),
}

pub fn definition_spec(id: u8) -> Option<&'static RecordSpec> {
    schema::DEFINITIONS.iter().find(|r| r.id == id)
}

pub fn local_definition_spec(id: u8) -> Option<&'static RecordSpec> {
    schema::LOCAL_DEFINITIONS.iter().find(|r| r.id == id)
}

/// A field a newer OTF2 added is absent when its record has no bytes left (A.7).
#[inline]
fn absent(rec: &RecordSpec, f: &FieldSpec, c: &Cursor) -> bool {
    f.since > rec.since && c.at_end()
}

/// The element count of an array field, checked against the bytes left (each element ≥ 1 byte).
fn array_count(c: &Cursor, count: u64) -> DResult<usize> {
    let left = c.end.saturating_sub(c.pos) as u64;
    if count > left {
        return derr(
            c.pos,
            format!("array of {count} elements in a record with {left} bytes left"),
        );
    }
    Ok(count as usize)
}

fn scalar(c: &mut Cursor, wire: Wire, ty: u8) -> DResult<u64> {
    Ok(match wire {
        Wire::U8 => c.u8()? as u64,
        Wire::U32c => c.u32c()? as u64,
        Wire::U64c | Wire::MetricValue => c.u64c()?,
        Wire::I64c => c.i64c()? as u64,
        Wire::U64f | Wire::F64 => c.u64f()?,
        Wire::AttrValue => c.attribute_value(ty)?,
        Wire::Str | Wire::IdMap => return derr(c.pos, "internal: not a scalar wire type"),
    })
}

fn id_map(c: &mut Cursor) -> DResult<IdMapValue> {
    let count = c.u64c()?;
    let at = c.pos;
    let mode = c.u8()?;
    let n = array_count(c, count)?;
    match mode {
        0 => (0..n)
            .map(|_| c.u64c())
            .collect::<DResult<_>>()
            .map(IdMapValue::Dense),
        1 => (0..n)
            .map(|_| Ok((c.u64c()?, c.u64c()?)))
            .collect::<DResult<_>>()
            .map(IdMapValue::Sparse),
        m => derr(
            at,
            format!("invalid id map mode {m}, expected 0 (dense) or 1 (sparse)"),
        ),
    }
}

/// The value of an earlier integer field (a count or a type).
fn int_of(values: &[Value], i: usize) -> u64 {
    match values.get(i) {
        Some(Value::Int(v)) => *v,
        _ => 0,
    }
}

/// Decode every field of a definition record; `c` spans exactly the record's payload.
pub fn decode_definition(rec: &RecordSpec, c: &mut Cursor) -> DResult<Vec<Value>> {
    let fields = rec.fields;
    let mut values: Vec<Value> = Vec::with_capacity(fields.len());
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        if absent(rec, f, c) {
            values.push(Value::Absent);
            i += 1;
            continue;
        }
        match (f.wire, f.count_field) {
            (Wire::Str, _) => values.push(Value::Str(c.string()?)),
            (Wire::IdMap, _) => values.push(Value::IdMap(id_map(c)?)),
            (wire, None) => {
                let ty = f.type_field.map_or(0, |t| int_of(&values, t)) as u8;
                values.push(Value::Int(scalar(c, wire, ty)?));
            }
            (_, Some(cf)) => {
                // Consecutive arrays sharing a count are interleaved per element (A.9).
                let group = fields[i..]
                    .iter()
                    .take_while(|g| g.count_field == Some(cf))
                    .count();
                let n = array_count(c, int_of(&values, cf))?;
                let mut lists: Vec<Vec<u64>> = vec![Vec::with_capacity(n); group];
                for _ in 0..n {
                    for g in 0..group {
                        let gf = &fields[i + g];
                        let ty = match gf.type_field {
                            Some(t) if t >= i => {
                                let k = lists[g].len();
                                lists[t - i].get(k).copied().unwrap_or(0) as u8
                            }
                            Some(t) => int_of(&values, t) as u8,
                            None => 0,
                        };
                        let v = scalar(c, gf.wire, ty)?;
                        lists[g].push(v);
                    }
                }
                values.extend(lists.into_iter().map(Value::List));
                i += group;
                continue;
            }
        }
        i += 1;
    }
    Ok(values)
}

/// Decode the fields of an event record of a kind without a dedicated column into `out`,
/// in record order with interleaved arrays as on disk; local ids are translated by `map`.
/// Fields the writer's version lacks read as 0.
pub fn decode_event_fields(
    rec: &RecordSpec,
    c: &mut Cursor,
    map: &dyn Fn(super::wire::MappingType, u64) -> u64,
    out: &mut Vec<u64>,
) -> DResult<()> {
    out.clear();
    let fields = rec.fields;
    let mut i = 0;
    while i < fields.len() {
        let f = &fields[i];
        if absent(rec, f, c) {
            out.push(0);
            i += 1;
            continue;
        }
        let Some(cf) = f.count_field else {
            let ty = f.type_field.map_or(0, |t| out.get(t).copied().unwrap_or(0)) as u8;
            let v = scalar(c, f.wire, ty)?;
            out.push(f.mapped_by.map_or(v, |m| map(m, v)));
            i += 1;
            continue;
        };
        let group = fields[i..]
            .iter()
            .take_while(|g| g.count_field == Some(cf))
            .count();
        let n = array_count(c, out.get(cf).copied().unwrap_or(0))?;
        for _ in 0..n {
            let elem_start = out.len();
            for g in 0..group {
                let gf = &fields[i + g];
                // a per-element type is the same element of an earlier array of the group
                let ty = match gf.type_field {
                    Some(t) if t >= i => out[elem_start + (t - i)] as u8,
                    Some(t) => out.get(t).copied().unwrap_or(0) as u8,
                    None => 0,
                };
                let v = scalar(c, gf.wire, ty)?;
                out.push(gf.mapped_by.map_or(v, |m| map(m, v)));
            }
        }
        i += group;
    }
    Ok(())
}
