//! The command line: one module per subcommand. `main.rs` parses, this runs.

pub mod compare;
pub mod convert;
pub mod diff;
pub mod info;
pub mod log;
pub mod rules;
pub mod run;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "perfexpert",
    version,
    about = "Finds why a parallel program is slow, from its event trace (OTF2)",
    // the usage line as it was before the global -v (listed under Options)
    override_usage = "perfexpert <COMMAND>"
)]
pub struct Cli {
    /// Print the stages on stderr with their wall time and sizes (-vv: and the details);
    /// RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Analyse a trace: wait states ranked by significance, the metric tree, diagnostics.
    Run(run::RunArgs),
    /// The pattern rules: list, show, check.
    #[command(subcommand)]
    Rules(rules::RulesCommand),
    /// Describe a trace: format, producer, clock, system tree, locations, regions,
    /// communicators and event counts.
    Info {
        /// The trace: an OTF2 anchor file (traces.otf2) or the directory that holds it.
        trace: PathBuf,
        /// Print the description as JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare two reports (JSON or .cubex): per metric and call path, what changed, ranked
    /// by absolute change.
    Diff(diff::DiffArgs),
    /// Convert a trace to another format: otf2, paje, paje-binary, paje-binary-reference.
    Convert(convert::ConvertArgs),
    /// Compare two traces event by event: align each pair of locations, list what changed,
    /// what got slower on matched calls and which findings appeared or vanished.
    Compare(compare::CompareArgs),
}

/// Run a parsed command, writing to `out`: the binary's body, whose process ends when it
/// returns (`run` leaves the analysed trace's memory to that exit, `Working::leave`).
pub fn run(cli: Cli, out: &mut dyn std::io::Write) -> crate::Result<()> {
    let (timings, progress) = match &cli.command {
        Command::Run(args) => (args.timings, log::Progress::new(args.quiet)),
        _ => (false, log::Progress::default()),
    };
    let _log = log::install(cli.verbose, timings, &progress);
    match cli.command {
        Command::Info { trace, json } => info::run(&trace, json, out),
        Command::Run(args) => run::run(&args, &progress, out),
        Command::Rules(cmd) => rules::run(&cmd, out),
        Command::Diff(args) => diff::run(&args, out),
        Command::Convert(args) => convert::run(&args, out),
        Command::Compare(args) => compare::run(&args, out),
    }
}
