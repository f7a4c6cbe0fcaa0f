//! Read throughput: `cargo bench --bench read`.
//!
//! Reads the NPB LU class S trace shipped in testdata/ (158 k events) and, when
//! `bench/run.sh` has generated it, the 12 M-event ping-pong trace of the performance issue
//! (bench/out/traces/pingpong_16x150000). For events/s and peak RSS side by side with
//! libotf2, run `bash bench/run.sh`. `otf1_wrf` reads the OTF 1 WRF trace of ../shared in place
//! (skipped when it is absent).

use std::path::{Path, PathBuf};

fn main() {
    divan::main();
}

fn trace(rel: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: {rel} is absent (bash bench/run.sh generates it)");
        None
    }
}

fn read(path: &Path) -> u64 {
    perfexpert::open(path)
        .unwrap_or_else(|e| panic!("{e}"))
        .event_count()
}

#[divan::bench(sample_count = 20)]
fn npb_lu_s(b: divan::Bencher) {
    let Some(p) = trace("testdata/scorep/npb_lu_S/traces.otf2") else {
        return;
    };
    let n = read(&p);
    b.counter(divan::counter::ItemsCount::new(n))
        .bench(|| read(&p));
}

#[divan::bench(sample_count = 5)]
fn pingpong_12m(b: divan::Bencher) {
    let Some(p) = trace("bench/out/traces/pingpong_16x150000/traces.otf2") else {
        return;
    };
    let n = read(&p);
    b.counter(divan::counter::ItemsCount::new(n))
        .bench(|| read(&p));
}

/// The OTF 1 WRF trace (VampirTrace, 16 zlib streams, 1.2 M events), read in place from
/// ../shared (GPL data, never copied into the project).
#[divan::bench(sample_count = 10)]
fn otf1_wrf(b: divan::Bencher) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/public/otf1-wrf/wrf.otf");
    if !p.exists() {
        eprintln!("skipped: ../shared/traces/public/otf1-wrf is absent");
        return;
    }
    let n = read(&p);
    b.counter(divan::counter::ItemsCount::new(n))
        .bench(|| read(&p));
}

/// Paje parsing throughput (issue 11, point 4): a ≥ 500 MB SMPI-like trace written by
/// `tools/gen_paje.py` (`bash bench/paje.sh` generates it and runs this bench). Divan prints
/// bytes/s.
#[divan::bench(sample_count = 5)]
fn paje_smpi_520mb(b: divan::Bencher) {
    let Some(p) = trace("bench/out/paje/big.paje") else {
        return;
    };
    let bytes = std::fs::metadata(&p).map_or(0, |m| m.len());
    b.counter(divan::counter::BytesCount::new(bytes))
        .bench(|| read(&p));
}
