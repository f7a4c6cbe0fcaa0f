//! Local definition files (formats.md A.8): mapping tables and clock offsets.

use super::records::{decode_definition, local_definition_spec, IdMapValue, Value};
use super::wire::{derr, for_each_def_record, DResult, MappingType};
use crate::model::Times;
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

/// Apply the clock-offset correction of A.8 to a location's (non-decreasing) timestamps
/// (each block of the column encoded again, `Times::map_in_place`).
pub fn correct_clock(offsets: &[(u64, i64)], times: &mut Times) {
    if offsets.len() < 2 {
        return; // one offset alone is never applied (A.8)
    }
    let mut c = Clock::new(offsets);
    times.map_in_place(|t| c.correct(t));
}

/// The correction of A.8 applied to timestamps in order: the interval of the last one kept,
/// searched again only for a timestamp outside it.
struct Clock<'a> {
    offsets: &'a [(u64, i64)],
    slopes: Vec<f64>,
    /// The interval: `offsets[i]`, the timestamps `lo..=hi` it corrects.
    i: usize,
    lo: u64,
    hi: u64,
}

impl Clock<'_> {
    /// At least two offsets.
    fn new(offsets: &[(u64, i64)]) -> Clock<'_> {
        let slopes: Vec<f64> = offsets
            .windows(2)
            .map(|w| {
                let dt = w[1].0 as i128 - w[0].0 as i128;
                let doff = w[1].1 as i128 - w[0].1 as i128;
                doff as f64 / dt as f64
            })
            .collect();
        // no timestamp is in `1..=0`: the first one searches
        Clock {
            offsets,
            slopes,
            i: 0,
            lo: 1,
            hi: 0,
        }
    }

    #[inline(always)]
    fn correct(&mut self, t: u64) -> u64 {
        if t < self.lo || t > self.hi {
            self.find(t);
        }
        t.wrapping_add(correction(self.offsets[self.i], self.slopes[self.i], t))
    }

    /// The interval of `t`: timestamps are monotone, so the interval only moves forward; a
    /// decreasing timestamp (a corrupt trace) restarts the search.
    #[inline(never)]
    fn find(&mut self, t: u64) {
        let (offsets, last) = (self.offsets, self.slopes.len() - 1);
        if t < offsets[self.i].0 {
            self.i = 0;
        }
        while self.i < last && t > offsets[self.i + 1].0 {
            self.i += 1;
        }
        self.lo = if self.i == 0 { 0 } else { offsets[self.i].0 };
        self.hi = if self.i == last {
            u64::MAX
        } else {
            offsets[self.i + 1].0
        };
    }
}

/// 2^52: below it in magnitude, adding and subtracting it rounds an `f64` to an integer,
/// ties to even (the default rounding mode; Rust never changes it).
const ROUND: f64 = 4_503_599_627_370_496.0;

/// The correction of timestamp `t` (as a wrapping `u64` addend) in the interval starting
/// at offset `(time, offset)` with slope `slope`: `offset + round_ties_even(slope · (t -
/// time))`. The usual case — the distance fits in 64 bits, the rounded term is below 2^52 —
/// takes machine instructions only; anything else the 128-bit formula, with the same
/// result. Wrapping: absurd offsets in a corrupt file give absurd times, never a panic.
#[inline(always)]
fn correction((time, offset): (u64, i64), slope: f64, t: u64) -> u64 {
    let d = t as i128 - time as i128;
    if let Ok(d) = i64::try_from(d) {
        let x = slope * d as f64;
        if x.abs() < ROUND {
            let c = ROUND.copysign(x);
            return offset.wrapping_add(((x + c) - c) as i64) as u64;
        }
    }
    slow_correction(offset, slope, d)
}

#[cold]
fn slow_correction(offset: i64, slope: f64, d: i128) -> u64 {
    (offset as i128).wrapping_add((slope * d as f64).round_ties_even() as i128) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `correct_clock` of the times in `t`.
    fn correct_clock_of<const N: usize>(offsets: &[(u64, i64)], t: &mut [u64; N]) {
        let mut times = Times::from(&t[..]);
        correct_clock(offsets, &mut times);
        for (x, y) in t.iter_mut().zip(times.iter()) {
            *x = y;
        }
    }

    #[test]
    fn interpolates_and_extrapolates() {
        let offs = [(100, 0), (200, 10)];
        let mut t = [50, 100, 150, 155, 200, 300];
        correct_clock_of(&offs, &mut t);
        // slope 0.1: 50 → -5, 150 → +5, 155 → 5.5 rounds to even 6, 300 → 20
        assert_eq!(t, [45, 100, 155, 161, 210, 320]);
    }

    #[test]
    fn fast_correction_is_the_128_bit_formula() {
        // a spread of distances, slopes and offsets, ties included
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let slopes = [0.1, -0.1, 0.5, -0.5, 1e-9, -3.7e-7, 2.5, 1e6, -1e12, 0.0];
        for k in 0..200_000 {
            let time = next() >> (next() % 64);
            let t = next() >> (next() % 64);
            let offset = (next() as i64) >> (next() % 64);
            let slope = slopes[k % slopes.len()];
            let d = t as i128 - time as i128;
            let exact =
                (offset as i128).wrapping_add((slope * d as f64).round_ties_even() as i128) as u64;
            assert_eq!(
                correction((time, offset), slope, t),
                exact,
                "{time} {t} {offset} {slope}"
            );
        }
        // exact ties round to even either way
        for (d, want) in [(5, 0), (15, 2), (25, 2), (-5, 0), (-15, -2), (35, 4)] {
            let got = correction((100, 0), 0.1, (100 + d) as u64) as i64;
            assert_eq!(got, want, "{d}");
        }
    }

    /// `correct_clock` as one interval search per timestamp (as A.8 reads).
    fn correct_each(offsets: &[(u64, i64)], times: &mut [u64]) {
        if offsets.len() < 2 {
            return;
        }
        let slope = |i: usize| {
            let (a, b) = (offsets[i], offsets[i + 1]);
            (b.1 as i128 - a.1 as i128) as f64 / (b.0 as i128 - a.0 as i128) as f64
        };
        let last = offsets.len() - 2;
        let mut i = 0usize;
        for t in times.iter_mut() {
            if *t < offsets[i].0 {
                i = 0;
            }
            while i < last && *t > offsets[i + 1].0 {
                i += 1;
            }
            *t = t.wrapping_add(correction(offsets[i], slope(i), *t));
        }
    }

    #[test]
    fn runs_of_one_interval_are_the_per_timestamp_correction() {
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..300 {
            let n = 2 + (next() % 5) as usize;
            let mut at = 0u64;
            let offsets: Vec<(u64, i64)> = (0..n)
                .map(|_| {
                    at += 1 + next() % 1000;
                    (at, (next() % 200) as i64 - 100)
                })
                .collect();
            // mostly increasing timestamps around and beyond the offsets, some decreasing
            let mut t = 0u64;
            let times: Vec<u64> = (0..200)
                .map(|_| {
                    if next() % 17 == 0 {
                        t = t.saturating_sub(next() % 500);
                    } else {
                        t += next() % 40;
                    }
                    t
                })
                .collect();
            let (mut a, mut b) = (Times::from(&times[..]), times);
            correct_clock(&offsets, &mut a);
            correct_each(&offsets, &mut b);
            assert_eq!(a, b, "{offsets:?}");
        }
    }

    #[test]
    fn single_offset_is_not_applied() {
        let mut t = [5, 6];
        correct_clock_of(&[(0, 100)], &mut t);
        assert_eq!(t, [5, 6]);
    }

    #[test]
    fn extreme_offsets_do_not_overflow() {
        let mut t = [0];
        correct_clock_of(&[(u64::MAX - 1, i64::MAX), (u64::MAX, i64::MIN)], &mut t);
    }

    #[test]
    fn negative_offsets_wrap() {
        let mut t = [1000];
        correct_clock_of(&[(0, -30), (2000, -30)], &mut t);
        assert_eq!(t, [970]);
    }
}
