//! Local definition files (formats.md A.8): mapping tables and clock offsets.

use super::records::{decode_definition, local_definition_spec, IdMapValue, Value};
use super::wire::{derr, for_each_def_record, DResult, MappingType};
use std::collections::HashMap;

/// One local-to-global id table.
#[derive(Clone, Debug, PartialEq)]
pub enum IdMapTable {
    Dense(Vec<u64>),
    Sparse(HashMap<u64, u64>),
}

impl IdMapTable {
    /// The global id of `local`; ids the table does not list keep their value (A.8).
    #[inline]
    pub fn map(&self, local: u64) -> u64 {
        match self {
            IdMapTable::Dense(v) => v.get(local as usize).copied().unwrap_or(local),
            IdMapTable::Sparse(m) => m.get(&local).copied().unwrap_or(local),
        }
    }

    /// Every (local, global) pair the table lists.
    pub fn pairs(&self) -> Vec<(u64, u64)> {
        match self {
            IdMapTable::Dense(v) => v.iter().enumerate().map(|(i, &g)| (i as u64, g)).collect(),
            IdMapTable::Sparse(m) => m.iter().map(|(&l, &g)| (l, g)).collect(),
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct LocalDefs {
    pub maps: [Option<IdMapTable>; MappingType::COUNT],
    /// (raw local time, offset in ticks), in file order.
    pub clock_offsets: Vec<(u64, i64)>,
    pub records: u64,
}

impl LocalDefs {
    #[inline]
    pub fn map(&self, t: MappingType, local: u64) -> u64 {
        match &self.maps[t as usize] {
            Some(m) => m.map(local),
            None => local,
        }
    }
}

pub fn read_local_defs(data: &[u8], chunk_size: usize) -> DResult<LocalDefs> {
    let mut out = LocalDefs::default();
    for_each_def_record(data, chunk_size, |mut r| {
        out.records += 1;
        let Some(spec) = local_definition_spec(r.id) else {
            return Ok(()); // unknown local record: skipped by its length (A.7)
        };
        let values = decode_definition(spec, &mut r.payload)?;
        match (r.id, values.as_slice()) {
            (5, [Value::Int(ty), Value::IdMap(m)]) => {
                let Some(t) = MappingType::from_u8(*ty as u8) else {
                    return derr(r.offset, format!("unknown mapping table type {ty}"));
                };
                // If several tables of one type appear, the last one wins (A.8).
                out.maps[t as usize] = Some(match m {
                    IdMapValue::Dense(v) => IdMapTable::Dense(v.clone()),
                    IdMapValue::Sparse(v) => IdMapTable::Sparse(v.iter().copied().collect()),
                });
            }
            (6, [Value::Int(time), Value::Int(offset), ..]) => {
                if let Some(&(prev, _)) = out.clock_offsets.last() {
                    if *time <= prev {
                        return derr(
                            r.offset,
                            format!(
                                "clock offset at local time {time} does not follow the previous one at {prev}; expected strictly increasing times"
                            ),
                        );
                    }
                }
                out.clock_offsets.push((*time, *offset as i64));
            }
            _ => {} // local copies of global definitions: decoded (validated), not used
        }
        Ok(())
    })?;
    Ok(out)
}

/// Apply the clock-offset correction of A.8 to a location's (non-decreasing) timestamps.
pub fn correct_clock(offsets: &[(u64, i64)], times: &mut [u64]) {
    if offsets.len() < 2 {
        return; // one offset alone is never applied (A.8)
    }
    let slopes: Vec<f64> = offsets
        .windows(2)
        .map(|w| {
            let dt = w[1].0 as i128 - w[0].0 as i128;
            let doff = w[1].1 as i128 - w[0].1 as i128;
            doff as f64 / dt as f64
        })
        .collect();
    let last = slopes.len() - 1;
    let mut i = 0usize;
    for t in times.iter_mut() {
        // timestamps are monotone, so the interval only moves forward; a decreasing
        // timestamp (a corrupt trace) restarts the search
        if *t < offsets[i].0 {
            i = 0;
        }
        while i < last && *t > offsets[i + 1].0 {
            i += 1;
        }
        let d = (*t as i128 - offsets[i].0 as i128) as f64;
        // wrapping: absurd offsets in a corrupt file give absurd times, never a panic
        let corr = (offsets[i].1 as i128).wrapping_add((slopes[i] * d).round_ties_even() as i128);
        *t = t.wrapping_add(corr as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_and_extrapolates() {
        let offs = [(100, 0), (200, 10)];
        let mut t = [50, 100, 150, 155, 200, 300];
        correct_clock(&offs, &mut t);
        // slope 0.1: 50 → -5, 150 → +5, 155 → 5.5 rounds to even 6, 300 → 20
        assert_eq!(t, [45, 100, 155, 161, 210, 320]);
    }

    #[test]
    fn single_offset_is_not_applied() {
        let mut t = [5, 6];
        correct_clock(&[(0, 100)], &mut t);
        assert_eq!(t, [5, 6]);
    }

    #[test]
    fn extreme_offsets_do_not_overflow() {
        let mut t = [0];
        correct_clock(&[(u64::MAX - 1, i64::MAX), (u64::MAX, i64::MIN)], &mut t);
    }

    #[test]
    fn negative_offsets_wrap() {
        let mut t = [1000];
        correct_clock(&[(0, -30), (2000, -30)], &mut t);
        assert_eq!(t, [970]);
    }
}
