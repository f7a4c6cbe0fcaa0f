//! `perfexpert run TRACE`: read, replay, evaluate every rule, score, report.

use crate::analysis::scores::{score, ScoreParams};
use crate::error::{Error, Result};
use crate::replay::Replay;
use crate::report::text::TextOptions;
use crate::report::Report;
use crate::rules::RuleSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    /// Cube4 archive (patterns.md §8), for the Cube viewer; needs `-o`.
    Cubex,
    /// One self-contained HTML page with charts (issue 14).
    Html,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The trace: an OTF2 anchor file (traces.otf2) or the directory that holds it.
    pub trace: PathBuf,
    /// Output formats, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "text")]
    pub format: Vec<Format>,
    /// Write to this file (one format) or directory (several: report.txt, report.json,
    /// report.cubex).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Rule files or directories that add rules or override built-ins by id.
    #[arg(long)]
    pub rules: Vec<PathBuf>,
    /// How many findings the text report lists.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Also print the call tree with inclusive time.
    #[arg(long)]
    pub call_tree: bool,
    /// Also print the per-rank breakdown of this metric (e.g. mpi_latesender).
    #[arg(long)]
    pub metric: Option<String>,
    /// Print the critical path after the text report.
    #[arg(long)]
    pub critical_path: bool,
    /// Also compute the critical path with this region's time set to zero (repeatable).
    #[arg(long, value_name = "REGION")]
    pub what_if: Vec<String>,
    /// Analyse only phase K (1-based) of the automatically detected phases.
    #[arg(long, value_name = "K")]
    pub phase: Option<usize>,
    /// Write the wait-time and traffic matrices as CSV files into this directory.
    #[arg(long, value_name = "DIR")]
    pub matrices_csv: Option<PathBuf>,
    /// No progress display.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print each stage's wall time and the peak resident memory so far on stderr.
    #[arg(long)]
    pub timings: bool,
    /// Keep the resident memory near SIZE (e.g. 2G, 512M): when the trace would not fit,
    /// its event columns go to a temporary file (in TMPDIR) and stay in memory only while
    /// used. Same results.
    #[arg(long, value_name = "SIZE", value_parser = crate::model::spill::parse_size)]
    pub memory_limit: Option<u64>,
}

/// `--timings`: one stderr line per finished stage (wall seconds since the previous stage,
/// peak resident set so far from `/proc/self/status` where there is one).
struct Timings {
    on: bool,
    last: std::time::Instant,
    start: std::time::Instant,
}

impl Timings {
    fn new(on: bool) -> Timings {
        let now = std::time::Instant::now();
        Timings {
            on,
            last: now,
            start: now,
        }
    }
    fn stage(&mut self, name: &str) {
        if !self.on {
            return;
        }
        let now = std::time::Instant::now();
        let peak = peak_rss_kb().map_or_else(|| "n/a".to_string(), |k| format!("{} MB", k / 1024));
        eprintln!(
            "timings: {name:<28} {:>8.3} s  (total {:>8.3} s)  peak RSS {peak}",
            (now - self.last).as_secs_f64(),
            (now - self.start).as_secs_f64()
        );
        self.last = now;
    }
}

/// VmHWM of this process in KiB (Linux), `None` elsewhere.
fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    fn new(quiet: bool) -> Progress {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(Some(pb))
    }
    fn stage(&self, s: &str) {
        if let Some(pb) = &self.0 {
            pb.set_message(s.to_string());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}

pub fn run(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    let progress = Progress::new(args.quiet);
    let mut timings = Timings::new(args.timings);
    progress.stage("loading rules");
    let rules = RuleSet::load(&args.rules)?;
    timings.stage("rules");
    if let Some(m) = &args.metric {
        if rules.index_of(m).is_none() {
            return Err(Error::Usage(format!(
                "--metric {m}: no such metric (see `perfexpert rules list`)"
            )));
        }
    }
    if args.format.contains(&Format::Cubex) && args.output.is_none() {
        return Err(Error::Usage(
            "--format cubex writes a binary archive: name the file (or, with several formats, \
             the directory) with -o"
                .to_string(),
        ));
    }
    progress.stage("reading the trace");
    let spill = spill_for(args)?;
    let trace = crate::formats::open_with(&args.trace, spill.as_ref())?;
    timings.stage("read");
    // --phase K: the rest runs on that phase's slice of the trace
    let mut phase_note = None;
    let trace = match args.phase {
        None => trace,
        Some(k) => {
            let all = crate::analysis::phases::detect(&trace);
            let Some(p) = k.checked_sub(1).and_then(|i| all.get(i)) else {
                return Err(Error::Usage(format!(
                    "--phase {k}: {} has {} phase(s), numbered from 1",
                    args.trace.display(),
                    all.len()
                )));
            };
            let t0 = trace.time_span().map_or(0, |s| s.0);
            let res = trace.timer_resolution.max(1) as f64;
            phase_note = Some(format!(
                "phase {k} of {} only ({:.6} s to {:.6} s): messages and collectives crossing \
                 its bounds are unmatched or incomplete",
                all.len(),
                (p.start - t0) as f64 / res,
                (p.end - t0) as f64 / res
            ));
            crate::analysis::phases::slice(&trace, p, k == all.len())
        }
    };
    progress.stage("replaying");
    let replay = Replay::new(&trace);
    timings.stage("replay");
    progress.stage("evaluating the rules");
    let analysis = crate::analysis::analyse(&trace, &replay, rules);
    timings.stage("rules evaluated");
    let params = ScoreParams::default();
    let findings = score(&trace, &replay, &analysis, params);
    let cube = args
        .format
        .contains(&Format::Cubex)
        .then(|| crate::report::cubex::Cube::from_analysis(&trace, &replay, &analysis));
    let mut report = Report::build(&trace, &replay, &analysis, findings, params);
    timings.stage("scores and report");
    // the critical path and matrices cost about a quarter of a text-only run: only when a
    // report shows them or an option asks for them
    let structure = args.format.contains(&Format::Json)
        || args.format.contains(&Format::Html)
        || args.critical_path
        || !args.what_if.is_empty()
        || args.matrices_csv.is_some();
    if structure {
        progress.stage("critical path and matrices");
        report
            .add_structure(&trace, &replay, &analysis, &args.what_if)
            .map_err(|r| {
                Error::Usage(format!(
                    "--what-if {r}: no region of that name in {}",
                    args.trace.display()
                ))
            })?;
        timings.stage("critical path, matrices");
    }
    if structure && args.phase.is_none() {
        progress.stage("phases");
        let phases = crate::analysis::phases::detect(&trace);
        let rules = || RuleSet::load(&args.rules);
        report.phases = Some(if crate::analysis::phases::is_whole(&trace, &phases) {
            crate::analysis::phases::summarise(&trace, &phases, &rules, (&replay, &analysis))?
        } else {
            // each phase is analysed alone: the whole analysis is no longer needed, and the
            // trace is cut into the phases' slices location by location
            drop((replay, analysis));
            crate::analysis::phases::summarise_owned(trace, &phases, &rules)?
        });
        timings.stage("phases");
    }
    if let Some(note) = phase_note {
        report.diagnostics.warnings.insert(0, note);
    }
    if let Some(dir) = &args.matrices_csv {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "cannot create directory", e))?;
        if let (Some(w), Some(t)) = (&report.wait_matrix, &report.traffic_matrix) {
            crate::analysis::matrices::write_csv(dir, w, t)
                .map_err(|e| Error::io(dir, "cannot write the matrices into", e))?;
        }
    }
    drop(progress);
    let mtime = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let color = args.output.is_none()
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text_opts = TextOptions {
        top: args.top,
        call_tree: args.call_tree,
        metric: args.metric.clone(),
        color,
    };
    let mut formats = Vec::new();
    for f in &args.format {
        if !formats.contains(f) {
            formats.push(*f);
        }
    }
    let write = |f: Format, w: &mut dyn Write| -> std::io::Result<()> {
        match f {
            Format::Text => {
                crate::report::text::write(&report, &text_opts, w)?;
                if args.critical_path || !args.what_if.is_empty() {
                    crate::report::text::write_critical_path(&report, w)?;
                }
                Ok(())
            }
            Format::Json => report.write_json(w),
            Format::Html => crate::report::html::write(&report, w),
            Format::Cubex => match &cube {
                Some(c) => c.write(w, mtime),
                None => Err(std::io::Error::other("no Cube report was built")),
            },
        }
    };
    match &args.output {
        None => {
            for f in formats {
                if let Err(e) = write(f, out) {
                    if e.kind() == std::io::ErrorKind::BrokenPipe {
                        return Ok(());
                    }
                    return Err(Error::Usage(format!("cannot write the report: {e}")));
                }
            }
        }
        Some(o) if formats.len() == 1 => write_file(o, |w| write(formats[0], w))?,
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(dir, "cannot create directory", e))?;
            for &f in &formats {
                let name = match f {
                    Format::Text => "report.txt",
                    Format::Json => "report.json",
                    Format::Html => "report.html",
                    Format::Cubex => "report.cubex",
                };
                write_file(&dir.join(name), |w| write(f, w))?;
            }
            // The files and the terminal summary together: with text among the formats,
            // the summary is also printed (not coloured: it is the same text as report.txt).
            if formats.contains(&Format::Text) {
                if let Err(e) = write(Format::Text, out) {
                    if e.kind() != std::io::ErrorKind::BrokenPipe {
                        return Err(Error::Usage(format!("cannot write the report: {e}")));
                    }
                }
            }
        }
    }
    timings.stage("written");
    if let (Some(s), true) = (&spill, args.timings) {
        eprintln!(
            "timings: spill file: {} MB written, mapped columns dropped from memory {} times",
            s.bytes() >> 20,
            s.trims()
        );
    }
    Ok(())
}

/// `--memory-limit`: a spill file when the trace's estimated resident size exceeds the
/// limit (and one line on stderr saying so), none otherwise.
fn spill_for(args: &RunArgs) -> Result<Option<crate::model::spill::Spill>> {
    use crate::model::spill::{Spill, RESIDENT_BYTES_PER_EVENT};
    let Some(limit) = args.memory_limit else {
        return Ok(None);
    };
    let events = crate::formats::estimate_events(&args.trace)?;
    let need = events.saturating_mul(RESIDENT_BYTES_PER_EVENT);
    if need <= limit {
        return Ok(None);
    }
    let dir = std::env::temp_dir();
    let spill = Spill::new(&dir, Some(limit))
        .map_err(|e| Error::io(&dir, "cannot create a spill file in", e))?;
    let mb = |b: u64| match b {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{} MB", b >> 20),
        b if b >= 1 << 10 => format!("{} KB", b >> 10),
        b => format!("{b} bytes"),
    };
    eprintln!(
        "perfexpert: about {events} events need about {} in memory, more than --memory-limit {}: \
         the event columns go to a temporary file in {} and stay in memory only while used",
        mb(need),
        mb(limit),
        dir.display()
    );
    Ok(Some(spill))
}

fn write_file(path: &Path, f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, "cannot create", e))?;
    let mut w = std::io::BufWriter::new(file);
    f(&mut w).and_then(|_| w.flush()).map_err(|e| {
        // never leave a partial report behind that looks complete
        drop(w);
        let _ = std::fs::remove_file(path);
        Error::io(path, "cannot write", e)
    })
}
