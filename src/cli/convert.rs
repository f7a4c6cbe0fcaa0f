//! `perfexpert convert IN -o OUT --to FORMAT`: checks the request, reads the input, calls
//! the writers of `crate::convert` and writes OUT through a temporary name renamed at the
//! end (never over an existing OUT without `--force`); a progress spinner on a terminal.

use crate::convert::{self, Target};
use crate::error::{Error, Result};
use crate::formats::{self, Format};
use indicatif::ProgressBar;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

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
    let _ = out;
    if args.output.exists() && !args.force {
        return Err(Error::Usage(format!(
            "{} exists; use --force to overwrite it",
            args.output.display()
        )));
    }
    let input = &args.input;
    if !input.exists() {
        return Err(Error::Usage(format!(
            "{}: no such file or directory",
            input.display()
        )));
    }
    let target = match args.to {
        To::Paje => Target::Paje,
        To::PajeBinary => Target::PajeBinary,
        To::PajeBinaryReference => Target::PajeBinaryReference,
        To::Otf2 => return to_otf2(args),
    };
    if input.is_dir() || formats::detect(input)? != Format::Paje {
        return model_to_paje(args, target);
    }
    let file = std::fs::File::open(input).map_err(|e| Error::io(input, "cannot open", e))?;
    // SAFETY: read-only map, as in the readers
    let map =
        unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(input, "cannot map", e))?;
    let bar = spinner(args.quiet, "converting");
    let tick = |b: &ProgressBar, n: u64| b.set_message(format!("{n} events written"));
    write_with(args, bar, tick, |w, tick| {
        convert::paje(input, &map, target, &args.output, w, tick)
    })
}

/// Writes OUT through `write_file` (temporary name, renamed at the end) with `write`, which
/// reports its progress to `tick` (shown on `bar`), then prints what it dropped.
fn write_with(
    args: &ConvertArgs,
    bar: Option<ProgressBar>,
    show: impl Fn(&ProgressBar, u64),
    write: impl FnOnce(&mut dyn std::io::Write, &mut dyn FnMut(u64)) -> Result<convert::Summary>,
) -> Result<()> {
    let mut summary = None;
    super::run::write_file(&args.output, |w| {
        let mut tick = |n: u64| {
            if let Some(b) = &bar {
                show(b, n);
            }
        };
        match write(w, &mut tick) {
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
    warn(&args.output, &summary.unwrap_or_default());
    Ok(())
}

fn warn(output: &Path, s: &convert::Summary) {
    for d in &s.dropped {
        eprintln!("perfexpert: warning: {}: {d}", output.display());
    }
}

/// An OTF2 or OTF 1 trace to Paje: read into the model, written through `write_file`.
fn model_to_paje(args: &ConvertArgs, target: Target) -> Result<()> {
    let read_bar = spinner(args.quiet, "reading");
    let trace = formats::open(&args.input)?;
    if let Some(b) = read_bar {
        b.finish_and_clear();
    }
    let bar = progress(args.quiet, trace.event_count());
    write_with(
        args,
        bar,
        |b, n| b.set_position(n),
        |w, tick| convert::model_to_paje(&trace, target, &args.output, w, tick),
    )
}

/// Any trace to an OTF2 archive: read into the model, written into `OUT.tmp-<pid>` beside
/// OUT, renamed to OUT when complete (an existing OUT, with `--force`, is replaced only then).
fn to_otf2(args: &ConvertArgs) -> Result<()> {
    let out = &args.output;
    let read_bar = spinner(args.quiet, "reading");
    let trace = formats::open(&args.input)?;
    if let Some(b) = read_bar {
        b.finish_and_clear();
    }
    let name = out
        .file_name()
        .ok_or_else(|| Error::Usage(format!("{}: not a directory name", out.display())))?;
    let sibling = |what: &str| {
        let mut n = name.to_os_string();
        n.push(format!(".{what}-{}", std::process::id()));
        out.with_file_name(n)
    };
    let tmp = sibling("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(|e| Error::io(out, "cannot create", e))?;
    let bar = progress(args.quiet, trace.event_count());
    let tick = |n: u64| {
        if let Some(b) = &bar {
            b.set_position(n);
        }
    };
    let written = convert::otf2::write(&trace, &tmp, &tick);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = match written.and_then(|s| replace(&tmp, out, &sibling("old")).map(|()| s)) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    warn(&out.join("traces.otf2"), &summary);
    Ok(())
}

/// Renames the finished `tmp` to `out`; an existing `out` is moved to `old` first and
/// removed after (put back if the rename fails).
fn replace(tmp: &Path, out: &Path, old: &Path) -> Result<()> {
    let existing = out.symlink_metadata().is_ok();
    if existing {
        std::fs::rename(out, old).map_err(|e| Error::io(out, "cannot replace", e))?;
    }
    if let Err(e) = std::fs::rename(tmp, out) {
        if existing {
            let _ = std::fs::rename(old, out);
        }
        return Err(Error::io(out, "cannot create", e));
    }
    if existing {
        let r = if old.is_dir() {
            std::fs::remove_dir_all(old)
        } else {
            std::fs::remove_file(old)
        };
        r.map_err(|e| Error::io(old, "cannot remove the replaced output", e))?;
    }
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

fn spinner(quiet: bool, what: &'static str) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new_spinner();
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb.set_message(what);
    Some(pb)
}

/// A bar over the events to write, on a terminal only.
fn progress(quiet: bool, total: u64) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(total);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "writing {bar:40} {human_pos}/{human_len} events {eta}",
    ) {
        pb.set_style(style);
    }
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    Some(pb)
}
