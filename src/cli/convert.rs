//! `perfexpert convert IN -o OUT --to FORMAT`: checks the request, reads the input, calls
//! the writers of `crate::convert` and writes OUT through a temporary name renamed at the
//! end (never over an existing OUT without `--force`); a progress spinner on a terminal.

use crate::convert::{self, Target};
use crate::error::{Error, Result};
use crate::formats::{self, Format};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum To {
    /// An OTF2 archive (directory OUT, anchor OUT/traces.otf2).
    Otf2,
    /// Paje text.
    Paje,
    /// Binary Paje (libRastro), standard variant.
    PajeBinary,
    /// Binary Paje (libRastro), reference variant (string table).
    PajeBinaryReference,
}

#[derive(Debug, clap::Args)]
pub struct ConvertArgs {
    /// The trace to convert (any format perfexpert reads).
    pub input: PathBuf,
    /// Where to write the converted trace.
    #[arg(short, long)]
    pub output: PathBuf,
    /// The format to write.
    #[arg(long, value_enum)]
    pub to: To,
    /// Overwrite OUT if it exists.
    #[arg(long)]
    pub force: bool,
    /// No progress display.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: &ConvertArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let target = match args.to {
        To::Paje => Target::Paje,
        To::PajeBinary => Target::PajeBinary,
        To::PajeBinaryReference => Target::PajeBinaryReference,
        To::Otf2 => {
            return Err(Error::Usage(
                "convert --to otf2 is not implemented yet (the OTF2 writer is still an example, examples/gen_pingpong)"
                    .into(),
            ))
        }
    };
    if args.output.exists() && !args.force {
        return Err(Error::Usage(format!(
            "{} exists; use --force to overwrite it",
            args.output.display()
        )));
    }
    let input = &args.input;
    if formats::detect(input)? != Format::Paje {
        return Err(Error::Usage(format!(
            "{}: converting this format to Paje is not implemented yet (only Paje and binary Paje inputs)",
            input.display()
        )));
    }
    let file = std::fs::File::open(input).map_err(|e| Error::io(input, "cannot open", e))?;
    // SAFETY: read-only map, as in the readers
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(input, "cannot map", e))?;
    let bar = spinner(args.quiet);
    let mut summary = None;
    super::run::write_file(&args.output, |w| {
        let mut tick = |n: u64| {
            if let Some(b) = &bar {
                b.set_message(format!("{n} events written"));
            }
        };
        match convert::paje(input, &map, target, &args.output, w, &mut tick) {
            Ok(s) => {
                summary = Some(s);
                Ok(())
            }
            Err(e) => Err(std::io::Error::other(Carried(e))),
        }
    })
    .map_err(unwrap_carried)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let s = summary.unwrap_or_default();
    for d in &s.dropped {
        eprintln!("perfexpert: warning: {}: {d}", args.output.display());
    }
    let _ = out;
    Ok(())
}

/// A library error carried through `write_file`'s I/O result.
#[derive(Debug)]
struct Carried(Error);

impl std::fmt::Display for Carried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Carried {}

fn unwrap_carried(e: Error) -> Error {
    match e {
        Error::Io { source, file, what } => {
            match source.get_ref().and_then(|x| x.downcast_ref::<Carried>()) {
                Some(_) => match source.into_inner().map(|b| b.downcast::<Carried>()) {
                    Some(Ok(c)) => c.0,
                    _ => Error::Usage(format!("{}: {what}", file.display())),
                },
                None => Error::Io { source, file, what },
            }
        }
        e => e,
    }
}

fn spinner(quiet: bool) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb.set_message("converting");
    Some(pb)
}
