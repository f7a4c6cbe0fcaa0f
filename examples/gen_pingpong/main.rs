//! Fast writer of the benchmark ping-pong traces: the same OTF2 archive as
//! `../shared/bench/gen_pingpong_trace.py RANKS ITERATIONS OUTDIR` (the official Python
//! writer), byte for byte except the anchor's random trace id and the realtime timestamp,
//! in seconds instead of half an hour for 100 M events.
//!
//!   usage:  cargo run --release --example gen_pingpong -- RANKS ITERATIONS OUTDIR [--plant N]
//!
//! `--plant N` (for `perfexpert compare` tests and benchmarks): in N (rank, iteration)
//! places drawn from a fixed pseudo-random sequence, `compute` is replaced by the region
//! `compute_planted` (defined only then), a planted substitution; the places are written to
//! OUTDIR/planted.txt, one "RANK ITERATION" line each. Without it the output is unchanged.
//!
//! Each rank: main { ITERATIONS x [compute (1 us), MPI_Send or MPI_Recv to/from rank^1] };
//! RANKS * (5 * ITERATIONS + 2) events, Score-P-like definitions that Scalasca accepts.
//! `tests/gen_pingpong.rs` checks it against the official writer (the archives' bytes,
//! `otf2-print`, perfexpert's JSON report). How the bytes are made: `otf2w.rs`.

mod otf2w;

use rayon::prelude::*;
use std::path::PathBuf;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_pingpong RANKS ITERATIONS OUTDIR [--plant N]";
    let (args, plant) = match args.as_slice() {
        [r, i, o, flag, n] if flag == "--plant" => match n.parse::<u32>() {
            Ok(n) => (vec![r.clone(), i.clone(), o.clone()], n),
            Err(_) => {
                eprintln!("gen_pingpong: --plant N needs a non-negative integer; {usage}");
                std::process::exit(2);
            }
        },
        _ => (args, 0),
    };
    let [ranks, iterations, out] = args.as_slice() else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let (Ok(ranks), Ok(iterations)) = (ranks.parse::<u32>(), iterations.parse::<u32>()) else {
        eprintln!("gen_pingpong: RANKS and ITERATIONS must be non-negative integers; {usage}");
        std::process::exit(2);
    };
    if ranks == 0 {
        eprintln!("gen_pingpong: RANKS must be at least 1; {usage}");
        std::process::exit(2);
    }
    let p = otf2w::PingPong { ranks, iterations };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    // Any value will do; the official writer takes a random one.
    let stamp = otf2w::Stamp {
        trace_id: now.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ std::process::id() as u64,
        realtime_ns: now,
    };
    let dir = PathBuf::from(out);
    let t0 = Instant::now();
    let planted = otf2w::plant_places(p, plant);
    let r = otf2w::write_archive_planted(p, &planted, &dir, stamp, |each| {
        (0..ranks).into_par_iter().try_for_each(each)
    })
    .and_then(|()| {
        if planted.is_empty() {
            return Ok(());
        }
        let lines: String = planted.iter().map(|(r, i)| format!("{r} {i}\n")).collect();
        std::fs::write(dir.join("planted.txt"), lines)
    });
    if let Err(e) = r {
        eprintln!("gen_pingpong: writing {}: {e}", dir.display());
        std::process::exit(1);
    }
    let s = t0.elapsed().as_secs_f64();
    eprintln!(
        "gen_pingpong: {} events ({ranks} ranks x {iterations} iterations) in {:.1} s ({:.1} M events/s): {}",
        p.events(),
        s,
        p.events() as f64 / s / 1e6,
        dir.join("traces.otf2").display()
    );
}
