//! `perfexpert rules list | show ID | check FILE...`.

use crate::error::{Error, Result};
use crate::rules::causes::{Quantity, RcWhat, Term};
use crate::rules::RuleSet;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, clap::Subcommand)]
pub enum RulesCommand {
    /// List every metric: id, unit, parent and where it is defined.
    List {
        /// Rule files or directories to add.
        #[arg(long)]
        rules: Vec<PathBuf>,
    },
    /// Print a metric's description, diagnosis and rule file.
    Show {
        id: String,
        #[arg(long)]
        rules: Vec<PathBuf>,
    },
    /// Parse and type-check rule files (with the built-ins); errors as file:line:col.
    Check { files: Vec<PathBuf> },
}

fn io(e: std::io::Error) -> Error {
    Error::Usage(format!("cannot write the output: {e}"))
}

pub fn run(cmd: &RulesCommand, out: &mut dyn Write) -> Result<()> {
    match cmd {
        RulesCommand::List { rules } => {
            let rs = RuleSet::load(rules)?;
            writeln!(out, "{:<30} {:<6} {:<24} source", "id", "unit", "parent").map_err(io)?;
            let infos = rs.rules.iter().map(|r| &r.info);
            for i in infos.chain(rs.rc_metrics.iter().map(|m| &m.info)) {
                writeln!(
                    out,
                    "{:<30} {:<6} {:<24} {}",
                    i.id,
                    format!("{:?}", i.unit).to_lowercase(),
                    i.parent.as_deref().unwrap_or("-"),
                    i.source
                )
                .map_err(io)?;
            }
        }
        RulesCommand::Show { id, rules } => {
            let rs = RuleSet::load(rules)?;
            let rc = rs.rc_metrics.iter().find(|m| m.info.id == *id);
            let i = match (rs.index_of(id), rc) {
                (Some(k), _) => &rs.rules[k].info,
                (None, Some(m)) => &m.info,
                (None, None) => {
                    return Err(Error::Usage(format!(
                        "no metric `{id}` (see `perfexpert rules list`)"
                    )))
                }
            };
            writeln!(
                out,
                "{} — {} ({})",
                i.id,
                i.long_name,
                format!("{:?}", i.unit).to_lowercase()
            )
            .map_err(io)?;
            writeln!(out, "parent: {}", i.parent.as_deref().unwrap_or("(root)")).map_err(io)?;
            writeln!(out, "defined in: {}", i.source).map_err(io)?;
            if let Some(m) = rc {
                writeln!(out, "computed as: {}", computed_as(&rs, &m.what)).map_err(io)?;
            }
            writeln!(out).map_err(io)?;
            writeln!(
                out,
                "What it measures\n  {}\n",
                i.description.replace('\n', "\n  ")
            )
            .map_err(io)?;
            writeln!(
                out,
                "What to do about it\n  {}",
                i.diagnosis.replace('\n', "\n  ")
            )
            .map_err(io)?;
        }
        RulesCommand::Check { files } => {
            if files.is_empty() {
                return Err(Error::Usage(
                    "rules check: name at least one rule file or directory".into(),
                ));
            }
            let rs = RuleSet::check(files)?;
            writeln!(
                out,
                "ok: {} rules ({} built in, the rest from the files given), {} root-cause metrics",
                rs.rules.len(),
                crate::rules::builtin_count(),
                rs.rc_metrics.len()
            )
            .map_err(io)?;
        }
    }
    Ok(())
}

/// What a root-cause metric file says it is, in words (`rules show`).
fn computed_as(rs: &RuleSet, what: &RcWhat) -> String {
    let rule = |of: &u16| {
        rs.rules
            .get(usize::from(*of))
            .map_or("?", |r| r.info.id.as_str())
    };
    match what {
        RcWhat::Sum => "root-cause metric, the sum of its children".into(),
        RcWhat::Delay { of, term } => format!(
            "root-cause metric, the {} delay costs of the waits of `{}`",
            match term {
                Term::Short => "short-term",
                Term::Long => "long-term",
            },
            rule(of)
        ),
        RcWhat::WaitCause { of, part } => format!(
            "root-cause metric, the {} part of the waits of `{}`",
            format!("{part:?}").to_lowercase(),
            rule(of)
        ),
        RcWhat::CriticalPath(q) => format!(
            "critical-path metric, {} (Scalasca's critical-path analysis)",
            match q {
                Quantity::Path => "the time on the critical path",
                Quantity::Activities => "the activities on the critical path",
                Quantity::Imbalance => "the critical imbalance impact",
                Quantity::InterPartition => "the inter-partition imbalance",
                Quantity::NonCritical => "the activities off the critical path",
            }
        ),
    }
}
