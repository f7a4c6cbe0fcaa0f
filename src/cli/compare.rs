//! `perfexpert compare A B`: read and analyse both runs (in parallel), align their paired
//! locations (`compare`), write the result as text, JSON, HTML or JUnit (with `--fail-on`),
//! exit 1 when a `--fail-on` threshold is passed.

use crate::compare::align::{Mode, Scoring};
use crate::compare::alphabet::Alphabet;
use crate::compare::{self, Comparison};
use crate::error::{Error, Result};
use crate::report::diff::{write_junit, Threshold, Verdict};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompareFormat {
    Text,
    Json,
    Html,
    /// JUnit XML of the `--fail-on` thresholds, one test case each.
    Junit,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The run before: a trace (OTF2, OTF 1, Paje) or its directory.
    pub a: PathBuf,
    /// The run after; any format, any number of ranks.
    pub b: PathBuf,
    /// Pair a location of A with one of B (repeatable): `A=B`, each a rank, `RANK:THREAD` or
    /// a location name; the others pair by rank and thread.
    #[arg(long, value_name = "A=B")]
    pub map: Vec<String>,
    /// What becomes a symbol: every call (region name), or calls with the peer and tag of
    /// point-to-point calls.
    #[arg(long, value_enum, default_value = "calls")]
    pub alphabet: Alphabet,
    /// Needleman–Wunsch scores MATCH,MISMATCH,GAP (integers; match > mismatch, gap ≤ 0).
    #[arg(
        long,
        value_name = "M,X,G",
        default_value = "2,-1,-1",
        allow_hyphen_values = true
    )]
    pub score: String,
    /// End gaps are free (one run is a shortened version of the other).
    #[arg(long)]
    pub semi_global: bool,
    #[arg(long, value_enum, default_value = "text")]
    pub format: CompareFormat,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// How many edit groups and time differences the text lists; 0 lists all.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Exit 1 when the matched calls' time passes a threshold (repeatable): `time:+0.5s`,
    /// `MPI_Send:+10%`, `main/compute:+1ms`.
    #[arg(long, value_name = "KEY:THRESHOLD")]
    pub fail_on: Vec<String>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
    /// Write the symbol sequences perfexpert aligns (one pair of lines per location pair,
    /// symbol ids separated by spaces) to this file, for independent checks.
    #[arg(long, hide = true, value_name = "FILE")]
    pub dump_symbols: Option<PathBuf>,
}

/// `--score M,X,G`.
pub fn parse_score(s: &str) -> Result<Scoring> {
    let bad = |why: &str| {
        Error::Usage(format!(
            "--score {s}: {why} (expected three integers MATCH,MISMATCH,GAP with match > \
             mismatch and gap ≤ 0, e.g. 2,-1,-1)"
        ))
    };
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [m, x, g] = parts.as_slice() else {
        return Err(bad("not three values"));
    };
    let num = |v: &str| -> Result<i64> {
        v.parse::<i64>()
            .ok()
            .filter(|n| n.abs() <= 1_000_000)
            .ok_or_else(|| bad(&format!("'{v}' is not an integer up to 1000000 in size")))
    };
    let sc = Scoring {
        matched: num(m)?,
        mismatch: num(x)?,
        gap: num(g)?,
    };
    if sc.gap > 0 {
        return Err(bad("the gap score is positive"));
    }
    if sc.matched <= sc.mismatch {
        return Err(bad("the match score is not above the mismatch score"));
    }
    Ok(sc)
}

pub fn run(args: &CompareArgs, out: &mut dyn Write) -> Result<()> {
    let scoring = parse_score(&args.score)?;
    let thresholds: Vec<Threshold> = args
        .fail_on
        .iter()
        .map(|s| Threshold::parse(s))
        .collect::<Result<_>>()?;
    if args.format == CompareFormat::Junit && thresholds.is_empty() {
        return Err(Error::Usage(
            "--format junit writes one test case per --fail-on threshold: give at least one".into(),
        ));
    }
    let map = args
        .map
        .iter()
        .map(|m| {
            m.split_once('=')
                .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                .ok_or_else(|| {
                    Error::Usage(format!("--map {m}: expected A=B (e.g. 0=3 or 1:0=1:1)"))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = compare::Options {
        scoring,
        mode: if args.semi_global {
            Mode::SemiGlobal
        } else {
            Mode::Global
        },
        alphabet: args.alphabet,
        map,
    };
    let spinner = spinner(args.quiet);
    let (a, b) = rayon::join(
        || compare::read_run(&args.a, args.alphabet),
        || compare::read_run(&args.b, args.alphabet),
    );
    if let Some(s) = spinner {
        s.finish_and_clear();
    }
    let (a, b) = (a?, b?);
    let (pairs, _, _) = compare::pair(&a, &b, &opts.map)?;
    if let Some(path) = &args.dump_symbols {
        super::run::write_file(path, |w| {
            for (x, y) in compare::sequences(&a, &b, &pairs) {
                for s in [x, y] {
                    let line: Vec<String> = s.iter().map(u32::to_string).collect();
                    writeln!(w, "{}", line.join(" "))?;
                }
            }
            Ok(())
        })?;
    }
    let bar = bar(args.quiet, pairs.len() as u64);
    let tick = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let c = compare::compare(&a, &b, &opts, &tick)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    drop((a, b));
    let verdicts = compare::gate::gate(&c, &thresholds)?;
    emit(args, &c, &verdicts, out)?;
    breaches(&verdicts)
}

/// A spinner while both runs are read and analysed, on a terminal and unless `--quiet`.
fn spinner(quiet: bool) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let s = indicatif::ProgressBar::new_spinner();
    s.set_message("reading and analysing both runs");
    s.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(s)
}

/// A progress bar over the location pairs, on a terminal and unless `--quiet`.
fn bar(quiet: bool, n: u64) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let b = indicatif::ProgressBar::new(n);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "aligning {bar:30} {pos}/{len} location pairs {elapsed}",
    ) {
        b.set_style(style);
    }
    Some(b)
}

fn emit(
    args: &CompareArgs,
    c: &Comparison,
    verdicts: &[Verdict],
    out: &mut dyn Write,
) -> Result<()> {
    let write = |w: &mut dyn Write| -> std::io::Result<()> {
        match args.format {
            CompareFormat::Text => compare::text::write(c, args.top, w),
            CompareFormat::Json => c.write_json(w),
            CompareFormat::Html => compare::html::write(c, w),
            CompareFormat::Junit => write_junit("perfexpert compare", verdicts, w),
        }
    };
    match &args.output {
        Some(path) => super::run::write_file(path, write),
        None => match write(out) {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                Err(Error::Usage(format!("cannot write the comparison: {e}")))
            }
            _ => Ok(()),
        },
    }
}

/// Exit 1 with one line per breached threshold, after the output is written.
pub fn breaches(verdicts: &[Verdict]) -> Result<()> {
    let lines: Vec<String> = verdicts.iter().filter_map(|v| v.breach.clone()).collect();
    if lines.is_empty() {
        Ok(())
    } else {
        Err(Error::Breach(lines))
    }
}
