//! Runs the compiled rules over the replay and fills the metric × call path × location cube
//! (patterns.md §4, §5.5), then the sums and derived metrics (§1), in dependency order.
//! The engine knows triggers (receive, send, collective, ...), not patterns.
//!
//! The rooms, in the order the data flows through them:
//! * `plan`: the rule optimiser — the `RuleSet` specialised for the trace, compiled, and
//!   per kind of trigger event folded, shared and prefiltered (`Plan`);
//! * `fire`, `fed`: firing one rule on one trigger (`Engine`), and the rules fed by other
//!   rules' instances, queues and groups;
//! * `pass`: one room per trigger family (call paths; events, receives and sends on each
//!   location; collectives, world calls, teams, thread barriers; sums and derived);
//! * `cube`: what the passes found, and the `Analysis` made of it;
//! * `eval`: expressions evaluated and compiled; `scores`: severity, significance and
//!   precision of the findings; `critical_path`, `matrices`, `overheads`, `phases`: the
//!   extras;
//! * `pipeline`: the one library call from a read trace to everything a report shows.

pub mod critical_path;
pub mod eval;
pub mod matrices;
pub mod overheads;
pub mod phases;
pub mod pipeline;
pub mod rootcause;
pub mod scores;
pub mod views;

mod cube;
mod fed;
mod fire;
mod pass;
mod plan;

pub use cube::{
    Analysis, CausedColl, CausedWait, FindingStats, Instance, PhaseValues, Violations, Worst,
    WORST_K,
};
pub use pass::share::{
    assemble, share_passes, Booking, CellSum, HadExchange, InstFound, LocFound, Numbering,
    ShareFound, Sums, ThreadFound, Written,
};

use crate::model::Trace;
use crate::replay::Replay;
use crate::rules::RuleSet;
use cube::Cube;
use fire::Engine;
#[cfg(test)]
pub(crate) use pass::{location::tests::OTHER_AT, share::LISTED};
use plan::Plan;

/// `x as f64` (the same value, rounded alike), through the signed conversion (one
/// instruction; the unsigned one is a sequence) when `signed` says that `x` is below 2^63
/// (a hot loop's times after the run's start, `signed` found once from the run's span).
#[inline(always)]
pub(crate) fn exact_f64(x: u64, signed: bool) -> f64 {
    if signed {
        debug_assert!(i64::try_from(x).is_ok());
        x as i64 as f64
    } else {
        x as f64
    }
}

/// `x as usize` (the same value: truncated, saturating, NaN to 0), through the signed
/// conversion where `x` is below 2^63.
#[inline(always)]
pub(crate) fn trunc_usize(x: f64) -> usize {
    if x < 9_223_372_036_854_775_808.0 {
        (x as i64).max(0) as usize
    } else {
        x as usize
    }
}

/// Run every rule over the replay.
pub fn analyse(trace: &Trace, replay: &Replay, orig: RuleSet) -> Analysis {
    analyse_with(trace, replay, orig, true, &[])
}

/// `analyse`, booking the wait-state instances also per phase window as the passes find
/// them (`Analysis::phase_values`, by the time of the event each is attributed to):
/// `bounds` are the starts of the windows after the first.
pub fn analyse_phased(trace: &Trace, replay: &Replay, orig: RuleSet, bounds: &[u64]) -> Analysis {
    analyse_with(trace, replay, orig, true, bounds)
}

/// `analyse`; `accumulate`: the event, receive and send passes sum their own location's
/// findings as they walk (else they list every instance, to be added one by one: the same
/// result, bit for bit, in more memory); `bounds`: see `analyse_phased`.
pub(crate) fn analyse_with(
    trace: &Trace,
    replay: &Replay,
    orig: RuleSet,
    accumulate: bool,
    bounds: &[u64],
) -> Analysis {
    let plan = Plan::new(trace, replay, &orig);
    let eng = Engine::new(trace, replay, &plan);
    let mut cube = Cube::new(trace, replay, &plan.rs.rules);
    cube.set_windows(bounds);
    // Call paths: class time, visits.
    pass::callpath::run(&eng, &mut cube);
    // Events, receives, sends: one pass per location in event order (§5.5 passes B, C).
    let had = pass::location::run(&eng, &mut cube, accumulate);
    // Collective and world-call instances (§5.5 pass D); from here on `had()` reads the
    // groups of all earlier passes.
    let mut violators = pass::collective::run(&eng, &had, &mut cube);
    violators.extend(pass::world::run(&eng, &had, &mut cube));
    // OpenMP teams and barrier instances (§4.7, §5.6): members are threads.
    pass::team::run(&eng, &had, &mut cube);
    pass::thread_barrier::run(&eng, &had, &mut cube);
    let violations = Violations::of(trace, replay, &violators);
    // Sums and derived metrics, children and dependencies first (§1).
    pass::derived::run(&eng, &mut cube);
    let order = cube::report_order(trace, &plan.rs.rules, &plan.children);
    cube.finish(order, violations, orig)
}

#[cfg(test)]
mod conversions {
    use super::{exact_f64, trunc_usize};

    /// The conversions of the hot loops are the casts, at and around every boundary.
    #[test]
    fn the_conversions_are_the_casts() {
        let big = 1u64 << 63;
        for x in [0, 1, 12_345, (1 << 53) + 1, (1 << 53) + 3, big - 1] {
            assert_eq!(exact_f64(x, true).to_bits(), (x as f64).to_bits(), "{x}");
        }
        for x in [0, big - 1, big, big + 1, u64::MAX] {
            assert_eq!(exact_f64(x, false).to_bits(), (x as f64).to_bits(), "{x}");
        }
        for x in [
            -1.0,
            -0.0,
            0.0,
            0.75,
            1e17 + 0.5,
            9.2e18,
            9_223_372_036_854_775_808.0,
            1e19,
            1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            assert_eq!(trunc_usize(x), x as usize, "{x}");
        }
    }
}
