//! `perfexpert diff A B`: what changed between two reports (JSON or .cubex), ranked by
//! absolute change per metric and call path.

use crate::error::{Error, Result};
use crate::report::diff::{diff, Summary};
use std::io::Write;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
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
}

pub fn run(args: &DiffArgs, out: &mut dyn Write) -> Result<()> {
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
    let r = match args.format {
        DiffFormat::Text => d.write_text(args.top, out),
        DiffFormat::Json => d.write_json(out),
    };
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(Error::Usage(format!("cannot write the comparison: {e}")))
        }
        _ => Ok(()),
    }
}
