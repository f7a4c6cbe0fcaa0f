//! The stages after reading: `cargo bench --bench replay`.
//!
//! `replay` is pass A, the call-tree merge, message matching and collective instances
//! (`Replay::new`); `analyse` runs every built-in rule over a finished replay
//! (`analysis::analyse`). Both on the NPB LU class S trace shipped in testdata/ (158 k events)
//! and, when `bash bench/run.sh` has generated it, the 12 M-event ping-pong trace of issue 12
//! (bench/out/traces/pingpong_16x150000). The trace (and for `analyse` the replay) is made
//! once, outside the timed part. `bash bench/run.sh` times the whole `perfexpert run`.

use perfexpert::model::Trace;
use perfexpert::replay::Replay;
use perfexpert::rules::RuleSet;
use std::path::Path;

fn main() {
    divan::main();
}

fn open(rel: &str) -> Option<Trace> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    if !p.exists() {
        eprintln!("skipped: {rel} is absent (bash bench/run.sh generates it)");
        return None;
    }
    Some(perfexpert::open(&p).unwrap_or_else(|e| panic!("{e}")))
}

const LU_S: &str = "testdata/scorep/npb_lu_S/traces.otf2";
const PINGPONG: &str = "bench/out/traces/pingpong_16x150000/traces.otf2";

fn bench_replay(b: divan::Bencher, rel: &str) {
    let Some(trace) = open(rel) else { return };
    b.counter(divan::counter::ItemsCount::new(trace.event_count()))
        .bench(|| Replay::new(&trace).tree.len());
}

fn bench_analyse(b: divan::Bencher, rel: &str) {
    let Some(trace) = open(rel) else { return };
    let replay = Replay::new(&trace);
    let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("{e}"));
    b.counter(divan::counter::ItemsCount::new(trace.event_count()))
        .with_inputs(|| rules.clone())
        .bench_values(|rs| perfexpert::analysis::analyse(&trace, &replay, rs).ncnode);
}

#[divan::bench(sample_count = 20)]
fn replay_npb_lu_s(b: divan::Bencher) {
    bench_replay(b, LU_S);
}

#[divan::bench(sample_count = 3)]
fn replay_pingpong_12m(b: divan::Bencher) {
    bench_replay(b, PINGPONG);
}

#[divan::bench(sample_count = 20)]
fn analyse_npb_lu_s(b: divan::Bencher) {
    bench_analyse(b, LU_S);
}

#[divan::bench(sample_count = 3)]
fn analyse_pingpong_12m(b: divan::Bencher) {
    bench_analyse(b, PINGPONG);
}
