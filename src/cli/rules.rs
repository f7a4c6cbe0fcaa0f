//! `perfexpert rules list | show ID | check FILE...`.

use crate::error::{Error, Result};
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
            for r in &rs.rules {
                let i = &r.info;
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
            let Some(k) = rs.index_of(id) else {
                return Err(Error::Usage(format!(
                    "no metric `{id}` (see `perfexpert rules list`)"
                )));
            };
            let i = &rs.rules[k].info;
            writeln!(
                out,
                "{} — {} ({})",
                i.id,
                i.long_name,
                format!("{:?}", i.unit).to_lowercase()
            )
            .map_err(io)?;
            writeln!(out, "parent: {}", i.parent.as_deref().unwrap_or("(root)")).map_err(io)?;
            writeln!(out, "defined in: {}\n", i.source).map_err(io)?;
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
                "ok: {} rules ({} built in, the rest from the files given)",
                rs.rules.len(),
                crate::rules::builtin_count()
            )
            .map_err(io)?;
        }
    }
    Ok(())
}
