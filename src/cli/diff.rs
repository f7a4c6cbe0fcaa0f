//! `perfexpert diff A B`: what changed between two reports (JSON or .cubex), ranked by
//! absolute change per metric and call path; `--fail-on` makes it a CI gate (exit 1 with one
//! line per passed threshold, `--format junit` for the CI's test view; docs/diff.md).

use crate::error::{Error, Result};
use crate::report::diff::{diff, gate, write_junit, Summary, Threshold};
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    /// JUnit XML of the `--fail-on` thresholds, one test case each.
    Junit,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The report before (JSON from `run --format json`, or a .cubex).
    pub a: PathBuf,
    /// The report after.
    pub b: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// How many changes the text lists per unit (time, counts, bytes); 0 lists all.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Only this metric (e.g. mpi_latesender).
    #[arg(long)]
    pub metric: Option<String>,
    /// Exit 1 when a metric's total grows past a threshold (repeatable): `METRIC:+10%`
    /// (relative to A), `METRIC:+0.5s` (absolute; ms, us, ns too), `METRIC:+100` (counts,
    /// bytes), `-` for a fall. One line per breach on stderr.
    #[arg(long, value_name = "METRIC:THRESHOLD")]
    pub fail_on: Vec<String>,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

pub fn run(args: &DiffArgs, out: &mut dyn Write) -> Result<()> {
    let thresholds: Vec<Threshold> = args
        .fail_on
        .iter()
        .map(|s| Threshold::parse(s))
        .collect::<Result<_>>()?;
    if args.format == DiffFormat::Junit && thresholds.is_empty() {
        return Err(Error::Usage(
            "--format junit writes one test case per --fail-on threshold: give at least one".into(),
        ));
    }
    let a = Summary::read(&args.a)?;
    let b = Summary::read(&args.b)?;
    let mut d = diff(&args.a, &a, &args.b, &b);
    if let Some(m) = &args.metric {
        if !a.metrics.contains_key(m) && !b.metrics.contains_key(m) {
            return Err(Error::Usage(format!(
                "--metric {m}: neither report has this metric"
            )));
        }
        d.changes.retain(|c| &c.metric == m);
        // asked for by name: shown even where a sub-metric changed alike
        for c in &mut d.changes {
            c.implied = false;
        }
    }
    let verdicts = gate(&a, &b, &thresholds)?;
    let write = |w: &mut dyn Write| match args.format {
        DiffFormat::Text => d.write_text(args.top, w),
        DiffFormat::Json => d.write_json(w),
        DiffFormat::Junit => write_junit("perfexpert diff", &verdicts, w),
    };
    match &args.output {
        Some(path) => super::run::write_file(path, write)?,
        None => match write(out) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                return Err(Error::Usage(format!("cannot write the comparison: {e}")))
            }
            _ => {}
        },
    }
    super::compare::breaches(&verdicts)
}
