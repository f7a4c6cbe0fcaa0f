//! `perfexpert run TRACE`: read the trace, analyse it (`analysis::pipeline`), write the
//! reports.

use super::log::Progress;
use crate::analysis::pipeline::{analyse_trace, Options, Refusal, Working};
use crate::error::{Error, Result};
use crate::model::Trace;
use crate::report::cubex::Cube;
use crate::report::text::TextOptions;
use crate::report::Report;
use crate::rules::RuleSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use tracing::field::Empty;

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
    /// Print the root causes of the top wait states (delay costs, docs/root-causes.md).
    #[arg(long)]
    pub root_causes: bool,
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
    /// With --memory-limit: refuse (exit 2) rather than run above the limit when the
    /// trace needs more than it even with its event columns in the temporary file.
    #[arg(long, requires = "memory_limit")]
    pub memory_limit_strict: bool,
    /// Run as one process of an MPI job: `mpirun -np P perfexpert run --mpi TRACE` (a
    /// binary built with `--features mpi`). Each process reads and replays its share of the
    /// locations; rank 0 writes the reports (docs/distributed.md).
    #[arg(long)]
    pub mpi: bool,
}

/// `perfexpert run`; called last in the process (see `cli::run`).
pub fn run(args: &RunArgs, progress: &Progress, out: &mut dyn Write) -> Result<()> {
    if args.mpi {
        return run_mpi(args, out);
    }
    let load = || {
        let s = tracing::info_span!("rules", rules = Empty).entered();
        let rules = RuleSet::load(&args.rules)?;
        s.record("rules", rules.rules.len());
        Ok::<_, Error>(rules)
    };
    check(args)?;
    let (rules, trace, spill) = if args.rules.is_empty() && args.metric.is_none() {
        // The built-in rules alone cannot fail to load (and no option names a metric):
        // they are parsed and compiled beside the reading of the trace, whose first steps
        // (the anchor, the definitions) leave a core idle.
        let spill = spill_for(args)?;
        let (rules, trace) = rayon::join(load, || {
            crate::formats::open_with(&args.trace, spill.as_ref())
        });
        (rules?, trace?, spill)
    } else {
        // rule files and `--metric` are checked before the trace is read
        let rules = load()?;
        check_metric(args, &rules)?;
        let spill = spill_for(args)?;
        let trace = crate::formats::open_with(&args.trace, spill.as_ref())?;
        (rules, trace, spill)
    };
    let (report, cube, working) = analyse(args, trace, rules)?;
    write_matrices(args, &report)?;
    progress.finish();
    tracing::info_span!("written").in_scope(|| write(args, &report, cube.as_ref(), out))?;
    // the binary exits after this command (`main`): the trace's memory is left to the exit
    working.leave();
    if let Some(s) = &spill {
        // `--timings` shows it as its last line
        tracing::info!(
            spill_written_mb = s.bytes() >> 20,
            trims = s.trims(),
            "spill file"
        );
    }
    Ok(())
}

/// `--what-if REGION` naming no region of the trace (with and without `--mpi`).
fn no_such_region(args: &RunArgs, r: &str) -> Error {
    Error::Usage(format!(
        "--what-if {r}: no region of that name in {}",
        args.trace.display()
    ))
}

/// `--matrices-csv DIR`: the wait and traffic matrices of `report` as CSV files in DIR.
fn write_matrices(args: &RunArgs, report: &Report) -> Result<()> {
    if let Some(dir) = &args.matrices_csv {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, "cannot create directory", e))?;
        if let (Some(w), Some(t)) = (&report.wait_matrix, &report.traffic_matrix) {
            use crate::report::csv::{write_traffic_matrix, write_wait_matrix};
            write_file(&dir.join("wait_matrix.csv"), |f| write_wait_matrix(w, f))?;
            write_file(&dir.join("traffic_matrix.csv"), |f| {
                write_traffic_matrix(t, f)
            })?;
        }
    }
    Ok(())
}

/// `--metric` names a metric of the rules.
fn check_metric(args: &RunArgs, rules: &RuleSet) -> Result<()> {
    if let Some(m) = &args.metric {
        if rules.index_of(m).is_none() {
            return Err(Error::Usage(format!(
                "--metric {m}: no such metric (see `perfexpert rules list`)"
            )));
        }
    }
    Ok(())
}

/// The options that cannot work together, before the trace is read (`--metric` aside:
/// `check_metric`, once the rules are loaded).
fn check(args: &RunArgs) -> Result<()> {
    if args.format.contains(&Format::Cubex) {
        if args.output.is_none() {
            return Err(Error::Usage(
                "--format cubex writes a binary archive: name the file (or, with several \
                 formats, the directory) with -o"
                    .to_string(),
            ));
        }
        archive_time()?;
    }
    Ok(())
}

/// The Cube archive's member times: `SOURCE_DATE_EPOCH` when set (reproducible archives, as
/// reproducible-builds.org defines it: decimal seconds since 1970; an empty value counts as
/// unset, a malformed one is refused), else now.
fn archive_time() -> Result<u64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => v.parse::<u64>().map_err(|_| {
            Error::Usage(format!(
                "SOURCE_DATE_EPOCH={v:?}: expected the archive time as whole seconds since \
                 1970 (digits only), or the variable unset"
            ))
        }),
        _ => Ok(std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())),
    }
}

/// The analysis the report and options ask for, as the report (and the Cube archive when
/// one is written), with what the analysis worked on (`Working`).
fn analyse(
    args: &RunArgs,
    trace: Trace,
    rules: RuleSet,
) -> Result<(Report, Option<Cube>, Working)> {
    let structure = structure(args);
    let opts = Options {
        phase: args.phase,
        structure,
        what_if: args.what_if.clone(),
        phases: structure,
        views: args.format.contains(&Format::Html),
        root_causes: root_causes(args),
        ..Options::new(rules)
    };
    let cubex = args.format.contains(&Format::Cubex);
    let outcome = analyse_trace(trace, opts, |w| {
        let cube = cubex.then(|| cube_of(&w));
        (Report::of(w), cube)
    })
    .map_err(|e| refused(args, e))?;
    let (mut report, cube) = outcome.view;
    report.add_extras(outcome.extras);
    Ok((report, cube, outcome.working))
}

/// A refused analysis as the command's one line (with and without `--mpi`).
fn refused(args: &RunArgs, e: Refusal) -> Error {
    match e {
        Refusal::NoSuchPhase { k, phases } => Error::Usage(format!(
            "--phase {k}: {} has {phases} phase(s), numbered from 1",
            args.trace.display(),
        )),
        Refusal::NoSuchRegion(r) => no_such_region(args, &r),
        Refusal::Error(e) => e,
    }
}

/// Whether the run computes the critical path and the matrices: they cost about a quarter
/// of a text-only run, so only when a report shows them or an option asks for them.
fn structure(args: &RunArgs) -> bool {
    args.format.contains(&Format::Json)
        || args.format.contains(&Format::Html)
        || args.critical_path
        || !args.what_if.is_empty()
        || args.matrices_csv.is_some()
}

/// Whether the run computes the root causes: `--root-causes`, or a report that carries them
/// (JSON, Cube, HTML).
fn root_causes(args: &RunArgs) -> bool {
    args.root_causes
        || [Format::Json, Format::Html, Format::Cubex]
            .iter()
            .any(|f| args.format.contains(f))
}

/// The Cube report of the whole analysis, with its root causes when computed.
fn cube_of(w: &crate::analysis::pipeline::Whole<'_>) -> Cube {
    let mut c = Cube::from_analysis(w.trace, w.replay, w.analysis);
    if let Some(rc) = w.root_causes {
        c.add_root_causes(w.trace, rc);
    }
    c
}

/// Write the reports: to `out`, or to the file `-o` names (one format), or into the
/// directory it names (several: report.txt, ...; the text also to `out`).
fn write(args: &RunArgs, report: &Report, cube: Option<&Cube>, out: &mut dyn Write) -> Result<()> {
    // checked by `check` before the trace was read; read only when an archive is written
    let mtime = match args.format.contains(&Format::Cubex) {
        true => archive_time()?,
        false => 0,
    };
    // under an MPI launcher stdout is the launcher's pseudo-terminal, whatever the user's is
    let color = args.output.is_none()
        && !args.mpi
        && std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let text_opts = TextOptions {
        top: args.top,
        call_tree: args.call_tree,
        metric: args.metric.clone(),
        color,
        root_causes: args.root_causes,
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
                crate::report::text::write(report, &text_opts, w)?;
                if args.critical_path || !args.what_if.is_empty() {
                    crate::report::text::write_critical_path(report, w)?;
                }
                Ok(())
            }
            Format::Json => report.write_json(w),
            Format::Html => crate::report::html::write(report, w),
            Format::Cubex => match cube {
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
    Ok(())
}

/// `--memory-limit`: a spill file when the trace's estimated resident size exceeds the
/// limit (and one line on stderr saying so), none otherwise. When even the state that cannot
/// be spilled (`spill::floor_bytes`, from the events the trace declares per location, the
/// threads and the formats asked for) exceeds the limit, the line says so with that floor
/// and the run goes on at it (the trimmer holds the floor instead); `--memory-limit-strict`
/// refuses instead, before reading.
fn spill_for(args: &RunArgs) -> Result<Option<crate::model::spill::Spill>> {
    use crate::model::spill::{floor_bytes, RunShape, Spill, RESIDENT_BYTES_PER_EVENT};
    let Some(limit) = args.memory_limit else {
        return Ok(None);
    };
    let per_unit = crate::formats::estimate_events(&args.trace)?;
    let extras = [Format::Json, Format::Html, Format::Cubex]
        .iter()
        .any(|f| args.format.contains(f));
    let shape = RunShape::new(&per_unit, rayon::current_num_threads(), extras);
    let events = shape.events;
    let need = events.saturating_mul(RESIDENT_BYTES_PER_EVENT);
    let floor = floor_bytes(&shape);
    tracing::info!(
        estimated_events = events,
        need_bytes = need,
        floor_bytes = floor,
        limit_bytes = limit,
        spill = need > limit,
        "memory limit"
    );
    if floor > limit && args.memory_limit_strict {
        return Err(Error::Usage(format!(
            "{}: --memory-limit {} is below the about {} that the run needs even with the \
             event columns in a temporary file (about {events} events; --memory-limit-strict)",
            args.trace.display(),
            mb(limit),
            mb(floor)
        )));
    }
    if need <= limit {
        // the columns fit, but the program and its state alone may not: say so all the same
        if floor > limit {
            eprintln!(
                "perfexpert: --memory-limit {} is below the about {} that the run needs (the \
                 program, the replay's and the rules' state): the run goes on at about {} \
                 (--memory-limit-strict refuses instead)",
                mb(limit),
                mb(floor),
                mb(floor)
            );
        }
        return Ok(None);
    }
    let dir = std::env::temp_dir();
    let spill = Spill::new(&dir, Some(limit.max(floor)))
        .map_err(|e| Error::io(&dir, "cannot create a spill file in", e))?;
    let head = format!(
        "perfexpert: about {events} events need about {} in memory, more than --memory-limit {}",
        mb(need),
        mb(limit)
    );
    if floor > limit {
        eprintln!(
            "{head}, and about {} even with the event columns in a temporary file in {} (the \
             replay's and the rules' state): the run goes on at about {} \
             (--memory-limit-strict refuses instead)",
            mb(floor),
            dir.display(),
            mb(floor)
        );
    } else {
        eprintln!(
            "{head}: the event columns go to a temporary file in {} and stay in memory only \
             while used",
            dir.display()
        );
    }
    Ok(Some(spill))
}

/// A size as the memory messages give it.
fn mb(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{} MB", b >> 20),
        b if b >= 1 << 10 => format!("{} KB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Writes a report to a temporary name beside `path` (`.NAME.partial-PID`) and renames it
/// to `path` when it is complete, so that a run killed midway never leaves a half-written
/// report under the report's name; on an error the temporary file is removed.
pub(crate) fn write_file(
    path: &Path,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| std::ffi::OsString::from("report"), |n| n.to_os_string());
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(&name);
    tmp_name.push(format!(".partial-{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let file = std::fs::File::create(&tmp).map_err(|e| Error::io(path, "cannot create", e))?;
    let mut w = std::io::BufWriter::new(file);
    let written = f(&mut w)
        .and_then(|_| w.flush())
        .map_err(|e| Error::io(path, "cannot write", e));
    drop(w);
    let done = written
        .and_then(|_| std::fs::rename(&tmp, path).map_err(|e| Error::io(path, "cannot create", e)));
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// `--mpi` (issue 24): one process of an MPI job; refused in one line in a binary built
/// without the `mpi` feature or outside an MPI launcher.
fn run_mpi(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    #[cfg(not(feature = "mpi"))]
    {
        let _ = (args, out);
        Err(Error::Usage(
            "--mpi: this perfexpert was built without MPI; build it with `cargo install --path \
             . --features mpi` (needs an MPI library such as Open MPI or MPICH)"
                .into(),
        ))
    }
    #[cfg(feature = "mpi")]
    {
        if crate::distributed::launcher::detect().is_none() {
            return Err(Error::Usage(format!(
                "--mpi: not started by an MPI launcher (none of {} is set); run it as `mpirun \
                 -np P perfexpert run --mpi {}` (Slurm: `srun --mpi=pmix ...`)",
                crate::distributed::launcher::VARIABLES.join(", "),
                args.trace.display()
            )));
        }
        mpi_job(args, out)
    }
}

/// The job: every process reads its share and runs pass A; the call trees are exchanged and
/// merged; failures are agreed on before anything is written, and rank 0 writes the
/// profile or prints the failing process's one line (every process then exits 2).
#[cfg(feature = "mpi")]
fn mpi_job(args: &RunArgs, out: &mut dyn Write) -> Result<()> {
    use crate::distributed::{self as d, Transport};
    let Some(mpi) = d::mpi::Mpi::init() else {
        return Err(Error::Usage("--mpi: MPI was already initialised".into()));
    };
    let (rank, p) = (mpi.rank(), mpi.size());
    let pick = |defs: &crate::model::Definitions| d::partition::share(defs, p, rank);
    let read = || -> Result<(Trace, Vec<bool>, RuleSet)> {
        check(args)?;
        let rules = RuleSet::load(&args.rules)?;
        check_metric(args, &rules)?;
        // a rule reading deeper through a partner than the ghost events carry is refused
        d::ghost::needs(&rules).map_err(Error::Usage)?;
        let spill = spill_for(args)?;
        let (trace, keep) = crate::formats::open_share(&args.trace, spill.as_ref(), &pick)?;
        // the single process's refusal, before the job's exchanges
        if let Some(r) =
            (args.what_if.iter()).find(|r| !trace.defs.regions.iter().any(|x| &x.name == *r))
        {
            return Err(no_such_region(args, r));
        }
        Ok((trace, keep, rules))
    };
    let mut held = (0, 0);
    let mut selected = None;
    let done =
        d::agree(&mpi, read().map_err(|e| e.to_string())).and_then(|(trace, keep, rules)| {
            held = (keep.iter().filter(|&&k| k).count(), trace.event_count());
            let trace = match args.phase {
                None => trace,
                Some(k) => {
                    // every process detects the same phases: all cut, or all refuse
                    let cut = d::analyse::phase_share(trace, &keep, k, &mpi);
                    let cut = cut.and_then(|c| c.map_err(|e| refused(args, e).to_string()));
                    let (part, sel) = d::agree(&mpi, cut)?;
                    selected = Some(sel);
                    part
                }
            };
            // the extras of the reports asked for, as without --mpi (`analyse`); the phase
            // summaries only for the reports that show them
            let full = [Format::Json, Format::Html]
                .iter()
                .any(|f| args.format.contains(f));
            let want = d::analyse::Wanted {
                structure: structure(args),
                what_if: args.what_if.clone(),
                phases: full && args.phase.is_none(),
                views: args.format.contains(&Format::Html),
                root_causes: root_causes(args),
            };
            d::agree(&mpi, d::analyse::analyse(trace, &keep, rules, &want, &mpi))
        });
    if args.timings {
        eprintln!(
            "timings: --mpi process {rank} of {p}: {} bytes exchanged in {} rounds, {} \
             locations, {} events, peak RSS {}",
            mpi.bytes_exchanged(),
            mpi.rounds(),
            held.0,
            held.1,
            super::log::peak_rss_kb().map_or_else(|| "n/a".into(), |k| format!("{} MB", k / 1024))
        );
    }
    let whole = match done {
        Ok(x) => x,
        Err(f) => {
            if rank == 0 {
                match f.rank {
                    0 => eprintln!("perfexpert: {}", f.message),
                    r => eprintln!("perfexpert: (--mpi process {r} of {p}) {}", f.message),
                }
            }
            // nobody exits before rank 0 has printed (the launcher ends the job at the
            // first process that exits with a failure)
            let _ = mpi.all_gather(&[]);
            drop(mpi);
            std::process::exit(2)
        }
    };
    match whole {
        Some(w) => {
            let (report, cube) = mpi_report(&w, selected, args.format.contains(&Format::Cubex));
            write_matrices(args, &report)?;
            write(args, &report, cube.as_ref(), out)
        }
        None => Ok(()),
    }
}

/// The report of a job's whole analysis (rank 0's), as `analyse` makes it of a
/// single-process one: scored and built from the events' extent the processes gathered.
#[cfg(any(feature = "mpi", test))]
fn mpi_report(
    w: &crate::distributed::analyse::Whole,
    selected: Option<crate::analysis::pipeline::Selected>,
    cubex: bool,
) -> (Report, Option<Cube>) {
    let params = crate::analysis::scores::ScoreParams::default();
    let (trace, replay, a, x) = (&w.trace, &w.replay, &w.analysis, &w.extent);
    let findings = crate::analysis::scores::score_in(trace, replay, a, params, x);
    let whole = crate::analysis::pipeline::Whole {
        trace,
        replay,
        analysis: a,
        findings,
        params,
        root_causes: w.root_causes.as_ref(),
    };
    let cube = cubex.then(|| cube_of(&whole));
    let mut report = Report::of_in(whole, x);
    let mut extras = crate::analysis::pipeline::Extras {
        scalasca_differences: w.scalasca_differences,
        selected,
        phases: w.phases.clone(),
        views: w.views.clone(),
        ..Default::default()
    };
    if let Some((cp, wait, traffic)) = &w.structure {
        extras.critical_path = Some(cp.clone());
        extras.wait_matrix = Some(wait.clone());
        extras.traffic_matrix = Some(traffic.clone());
        extras.overheads = Some(crate::analysis::overheads::overheads(a));
    }
    report.add_extras(extras);
    (report, cube)
}

#[cfg(test)]
mod mpi_tests {
    use super::*;
    use crate::distributed::{analyse, local};

    /// The text report (top 50, call tree) of a report.
    fn text(r: &Report) -> String {
        let opts = TextOptions {
            top: 50,
            call_tree: true,
            metric: None,
            color: false,
            root_causes: false,
        };
        let mut b = Vec::new();
        crate::report::text::write(r, &opts, &mut b).unwrap();
        crate::report::text::write_critical_path(r, &mut b).unwrap();
        for m in [
            serde_json::to_string(&r.wait_matrix),
            serde_json::to_string(&r.traffic_matrix),
            serde_json::to_string(&r.overheads),
        ] {
            b.extend(m.unwrap().into_bytes());
        }
        String::from_utf8(b).unwrap()
    }

    /// `run --mpi`'s text report over P = 1..4 threads as processes is the single-process
    /// one, byte for byte, for every testdata trace (MPI, OpenMP and hybrid): without the
    /// extras, and with the critical path (a what-if of the trace's first region) and the
    /// wait and traffic matrices.
    #[test]
    fn the_distributed_text_report_is_the_single_process_one() {
        let (mut checked, mut openmp) = (0, 0);
        for path in local::testdata_traces() {
            let trace = crate::open(&path).unwrap();
            let rules = RuleSet::load(&[]).unwrap();
            openmp += crate::replay::omp::has_openmp(&trace) as usize;
            let what_if: Vec<String> = (trace.defs.regions.first())
                .map(|r| r.name.clone())
                .into_iter()
                .collect();
            for (p, structure) in (1..=4).flat_map(|p| [(p, false), (p, true)]) {
                let what_if = if structure {
                    what_if.clone()
                } else {
                    Vec::new()
                };
                let opts = Options {
                    structure,
                    what_if: what_if.clone(),
                    ..Options::new(rules.clone())
                };
                let wanted = analyse::Wanted {
                    structure,
                    what_if,
                    phases: false,
                    views: false,
                    root_causes: false,
                };
                let at = format!("{} P = {p}, structure {structure}", path.display());
                let (want, got) = both(&path, &trace, opts, p, |trace, keep, t| {
                    let whole = analyse::analyse(trace, keep, rules.clone(), &wanted, t)?;
                    Ok(whole.map(|w| mpi_report(&w, None, false).0))
                });
                assert_eq!(got, want, "{at}");
                checked += 1;
            }
        }
        assert!(checked >= 240 && openmp >= 5, "{checked} {openmp}");
    }

    /// `run --mpi`'s JSON, Cube and HTML reports (root causes, phase summaries, views of the
    /// run, critical path, matrices) and its `--root-causes` text over P = 1..4 threads as
    /// processes are the single-process ones byte for byte, for every testdata trace (MPI,
    /// OpenMP and hybrid).
    #[test]
    fn the_distributed_json_cube_and_html_reports_are_the_single_process_ones() {
        let rules = RuleSet::load(&[]).unwrap();
        let wanted = analyse::Wanted {
            structure: true,
            what_if: Vec::new(),
            phases: true,
            views: true,
            root_causes: true,
        };
        // the three reports of one analysis, as `run --format json,cubex,html` writes them,
        // and the text report with `--root-causes`
        let bytes = |r: &Report, c: &Cube| {
            let mut b = Vec::new();
            r.write_json(&mut b).unwrap();
            crate::report::html::write(r, &mut b).unwrap();
            c.write(&mut b, 0).unwrap();
            let opts = TextOptions {
                top: 50,
                call_tree: false,
                metric: None,
                color: false,
                root_causes: true,
            };
            crate::report::text::write(r, &opts, &mut b).unwrap();
            b
        };
        let (mut checked, mut openmp) = (0, 0);
        for path in local::testdata_traces() {
            let trace = crate::open(&path).unwrap();
            openmp += crate::replay::omp::has_openmp(&trace) as usize;
            let opts = Options {
                structure: true,
                phases: true,
                views: true,
                root_causes: true,
                ..Options::new(rules.clone())
            };
            let want = {
                let one = analyse_trace(trace.clone(), opts, |w| {
                    let c = cube_of(&w);
                    (Report::of(w), c)
                })
                .unwrap();
                let (mut r, c) = one.view;
                r.add_extras(one.extras);
                bytes(&r, &c)
            };
            for p in 1..=4 {
                let got = local::on_shares(&path, p, |trace, keep, t| {
                    let w = analyse::analyse(trace.clone(), keep, rules.clone(), &wanted, t)?;
                    Ok(w.map(|w| match mpi_report(&w, None, true) {
                        (r, Some(c)) => bytes(&r, &c),
                        (_, None) => Vec::new(),
                    }))
                });
                let at = format!("{} P = {p}", path.display());
                let mut got = got.into_iter();
                let first = got.next().unwrap().unwrap_or_else(|e| panic!("{at}: {e}"));
                assert!(first.as_ref() == Some(&want), "{at}: the reports differ");
                assert!(got.all(|g| g.is_ok_and(|w| w.is_none())), "{at}");
                checked += 1;
            }
        }
        assert!(checked >= 80 && openmp >= 5, "{checked} {openmp}");
    }

    /// The single-process text report of `trace` analysed with `opts`, and rank 0's of the
    /// job of `p` threads as processes on its shares, where each process runs `job` (rank 0
    /// returning the report); every other rank returns none.
    fn both(
        path: &Path,
        trace: &Trace,
        opts: Options,
        p: usize,
        job: impl Fn(
                Trace,
                &[bool],
                &dyn crate::distributed::Transport,
            ) -> std::result::Result<Option<Report>, String>
            + Sync,
    ) -> (String, String) {
        let one = analyse_trace(trace.clone(), opts, Report::of).unwrap();
        let mut one_report = one.view;
        one_report.add_extras(one.extras);
        let got = local::on_shares(path, p, |trace, keep, t| job(trace.clone(), keep, t));
        let mut got = got.into_iter();
        let report = (got.next().unwrap().unwrap()).expect("rank 0 holds the analysis");
        assert!(got.all(|g| g.is_ok_and(|w| w.is_none())));
        (text(&one_report), text(&report))
    }

    /// `run --mpi --phase K` over P = 1..4 threads as processes: the text report of the first
    /// and the last phase of every testdata trace is the single-process one, byte for byte
    /// (with the critical path); a phase beyond the last is refused by every process alike.
    #[test]
    fn the_distributed_phase_report_is_the_single_process_one() {
        let (mut checked, mut several) = (0, 0);
        let rules = RuleSet::load(&[]).unwrap();
        for path in local::testdata_traces() {
            let trace = crate::open(&path).unwrap();
            let n = crate::analysis::phases::detect(&trace).len();
            several += (n > 1) as usize;
            let mut ks = vec![1, n];
            ks.dedup();
            for (p, k) in (1..=4).flat_map(|p| ks.iter().map(move |&k| (p, k))) {
                let opts = Options {
                    phase: Some(k),
                    structure: true,
                    ..Options::new(rules.clone())
                };
                let wanted = analyse::Wanted {
                    structure: true,
                    ..Default::default()
                };
                let (want, got) = both(&path, &trace, opts, p, |trace, keep, t| {
                    let (part, sel) =
                        (analyse::phase_share(trace, keep, k, t)?).map_err(|e| e.to_string())?;
                    let whole = analyse::analyse(part, keep, rules.clone(), &wanted, t)?;
                    Ok(whole.map(|w| mpi_report(&w, Some(sel), false).0))
                });
                assert_eq!(got, want, "{} P = {p}, phase {k}", path.display());
                checked += 1;
            }
            let refused = local::on_shares(&path, 2, |trace, keep, t| {
                analyse::phase_share(trace.clone(), keep, n + 1, t)
                    .map(|r| r.err().map(|e| e.to_string()))
            });
            let line = format!(
                "--phase {}: the trace has {n} phase(s), numbered from 1",
                n + 1
            );
            assert!(
                refused
                    .iter()
                    .all(|r| r.as_ref().is_ok_and(|e| e.as_deref() == Some(&line[..]))),
                "{}",
                path.display()
            );
        }
        assert!(checked >= 120 && several >= 3, "{checked} {several}");
    }
}
