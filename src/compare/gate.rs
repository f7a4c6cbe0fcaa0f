//! `compare --fail-on KEY:THRESHOLD`: thresholds on the time of matched calls. KEY is `time`
//! (the matched outermost calls, i.e. call paths of depth 1, over all pairs), a call path as
//! printed (`main/MPI_Send`: that call path on every rank) or a region name (`MPI_Send`:
//! every call path that ends in it).

use super::Comparison;
use crate::error::{Error, Result};
use crate::report::diff::{Threshold, Verdict};
use crate::rules::Unit;

pub fn gate(c: &Comparison, thresholds: &[Threshold]) -> Result<Vec<Verdict>> {
    thresholds
        .iter()
        .map(|t| {
            if !t.relative && !t.seconds && t.amount != 0.0 {
                return Err(Error::Usage(format!(
                    "--fail-on '{}': compare measures seconds: give the amount in s, ms, us or \
                     ns, or in %",
                    t.spec
                )));
            }
            let selected = |path: &str| {
                if t.key == "time" {
                    !path.contains('/')
                } else {
                    path == t.key || path.rsplit('/').next() == Some(t.key.as_str())
                }
            };
            let mut hits = c
                .time_differences
                .iter()
                .filter(|d| selected(&d.callpath))
                .peekable();
            if hits.peek().is_none() && t.key != "time" {
                return Err(Error::Usage(format!(
                    "--fail-on '{}': no matched call has the call path or region {}",
                    t.spec, t.key
                )));
            }
            let (a, b) = hits.fold((0.0, 0.0), |(a, b), d| (a + d.a_s, b + d.b_s));
            use crate::report::text::fmt_value;
            Ok(Verdict {
                threshold: t.clone(),
                breach: t.check(a, b, Unit::Sec),
                detail: format!(
                    "{}: {} → {}",
                    t.key,
                    fmt_value(a, Unit::Sec),
                    fmt_value(b, Unit::Sec)
                ),
            })
        })
        .collect()
}
