//! Benchmark helper of `bench/compare.sh`: aligns random symbol sequences against random
//! mutations of themselves with perfexpert's aligner (`compare::align`) and prints one line:
//! length, fragments, mutation rate, wall seconds, DP cells, peak resident memory.
//!
//!   usage:  cargo run --release --example align_random -- LENGTH RATE_PERCENT [FRAGMENTS] [SEED]
//!
//! The LENGTH symbols (alphabet of 20) are split into FRAGMENTS independent sequences (the
//! "sub-levels" of the seed's experiment: locations or call-tree fragments aligned in
//! parallel); each symbol is mutated with probability RATE_PERCENT/100, a third each
//! substituted, deleted or followed by an inserted symbol.

use perfexpert::compare::align::{align, Mode, Scoring};
use rayon::prelude::*;
use std::time::Instant;

fn lcg(s: &mut u64) -> u64 {
    *s = s
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *s >> 33
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |k: usize, d: u64| args.get(k).and_then(|v| v.parse().ok()).unwrap_or(d);
    if args.len() < 2 {
        eprintln!("usage: align_random LENGTH RATE_PERCENT [FRAGMENTS] [SEED]");
        std::process::exit(2);
    }
    let (len, rate, frags, mut seed) = (num(0, 0), num(1, 0), num(2, 1).max(1), num(3, 1));
    let per = len / frags;
    let pairs: Vec<(Vec<u32>, Vec<u32>)> = (0..frags)
        .map(|_| {
            let a: Vec<u32> = (0..per).map(|_| (lcg(&mut seed) % 20) as u32).collect();
            let mut b = Vec::with_capacity(a.len() + a.len() / 10);
            for &x in &a {
                if lcg(&mut seed) % 10_000 < rate * 100 {
                    match lcg(&mut seed) % 3 {
                        0 => b.push((x + 1 + (lcg(&mut seed) % 19) as u32) % 20),
                        1 => {}
                        _ => {
                            b.push(x);
                            b.push((lcg(&mut seed) % 20) as u32);
                        }
                    }
                } else {
                    b.push(x);
                }
            }
            (a, b)
        })
        .collect();
    let rss0 = peak_rss_kb();
    let t = Instant::now();
    let cells: u64 = pairs
        .par_iter()
        .map(|(a, b)| align(a, b, Scoring::default(), Mode::Global).1.cells)
        .sum();
    let s = t.elapsed().as_secs_f64();
    println!(
        "length {len} fragments {frags} rate {rate}% wall {s:.3} s cells {cells} peak_rss {} MB (inputs {} MB)",
        peak_rss_kb() / 1024,
        rss0 / 1024
    );
}
