//! What perfexpert says on stderr about its own work, as views of the `tracing` stage spans
//! (the info spans of the pipeline): `-v`/`-vv`/`RUST_LOG` print each stage with its wall
//! time and sizes, and the events; `--timings` prints one line per stage with the peak
//! resident memory; the spinner names the running stage. With none of them, no subscriber
//! is installed and a `tracing` call costs one atomic load.

use std::io::IsTerminal;
use std::time::Instant;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The spinner (a terminal, no `-q`): the stage that runs.
#[derive(Clone, Default)]
pub struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        if quiet || !std::io::stderr().is_terminal() {
            return Progress(None);
        }
        let pb = indicatif::ProgressBar::new_spinner();
        pb.enable_steady_tick(std::time::Duration::from_millis(120));
        Progress(Some(pb))
    }

    /// Clear the spinner (before the report is written).
    pub fn finish(&self) {
        if let Some(pb) = &self.0 {
            pb.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Keeps the subscriber installed (for this thread, when another one is the global one).
pub struct Guard(#[allow(dead_code)] Option<tracing::subscriber::DefaultGuard>);

/// Install the views asked for: `verbose` counts `-v`, a non-empty `RUST_LOG` overrides it.
pub fn install(verbose: u8, timings: bool, progress: &Progress) -> Guard {
    let directives = match std::env::var("RUST_LOG") {
        Ok(s) if !s.trim().is_empty() => Some(s),
        _ => match verbose {
            0 => None,
            1 => Some("perfexpert=info".to_string()),
            2 => Some("perfexpert=debug".to_string()),
            _ => Some("perfexpert=trace".to_string()),
        },
    };
    if directives.is_none() && !timings && progress.0.is_none() {
        return Guard(None);
    }
    let verbose = directives.map(|d| {
        let events = tracing_subscriber::fmt::layer()
            .without_time()
            .with_ansi(false)
            .with_writer(std::io::stderr);
        Stages(Say(progress.0.clone()))
            .and_then(events)
            .with_filter(tracing_subscriber::EnvFilter::new(d))
    });
    let timings = timings.then(|| {
        Timings {
            start: Instant::now(),
            say: Say(progress.0.clone()),
        }
        .with_filter(tracing_subscriber::filter::filter_fn(|m| {
            is_stage(m) || m.fields().field(SPILL_FIELD).is_some()
        }))
    });
    let spinner = progress
        .0
        .clone()
        .map(|pb| Spinner(pb).with_filter(tracing_subscriber::filter::filter_fn(is_stage)));
    let subscriber = tracing_subscriber::registry()
        .with(verbose)
        .with(timings)
        .with(spinner);
    if tracing::dispatcher::has_been_set() {
        // a second run in this process: for this thread, as long as the guard lives
        return Guard(Some(tracing::subscriber::set_default(subscriber)));
    }
    // global, so that events of the worker threads are seen too
    let _ = tracing::subscriber::set_global_default(subscriber);
    Guard(None)
}

/// A stage: an info span of perfexpert's.
fn is_stage(m: &Metadata<'_>) -> bool {
    m.is_span() && *m.level() == Level::INFO && m.target().starts_with("perfexpert")
}

/// The field of the event that ends a run with a spill file (`--memory-limit`).
pub const SPILL_FIELD: &str = "spill_written_mb";

/// The fields of a span or event as ` name=value`, in the order given.
#[derive(Default)]
struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write;
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        use std::fmt::Write;
        let _ = write!(self.0, " {}={value}", field.name());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        use std::fmt::Write;
        let _ = write!(self.0, " {}={value:.6}", field.name());
    }
}

/// A line on stderr, above the spinner while it turns.
struct Say(Option<indicatif::ProgressBar>);

impl Say {
    /// `s` and a newline on stderr in one write (stderr is unbuffered: `eprintln!` of the
    /// arguments writes each piece and padding apart, ~60 writes a `--timings` line).
    fn line(&self, s: std::fmt::Arguments<'_>) {
        let mut text = s.to_string();
        text.push('\n');
        let put = || {
            use std::io::Write;
            // a diagnostic line: nothing to do if stderr is gone
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        };
        match &self.0 {
            Some(pb) if !pb.is_finished() => pb.suspend(put),
            _ => put(),
        }
    }
}

/// `-v`: a line per span as it closes (its wall time and the sizes recorded on it),
/// indented by its depth.
struct Stages(Say);

struct Open {
    start: Instant,
    fields: Fields,
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Stages {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let mut fields = Fields::default();
            attrs.record(&mut fields);
            span.extensions_mut().insert(Open {
                start: Instant::now(),
                fields,
            });
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<Open>() {
                values.record(&mut open.fields);
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let depth = span.scope().skip(1).count();
        let ext = span.extensions();
        let Some(open) = ext.get::<Open>() else {
            return;
        };
        self.0.line(format_args!(
            "perfexpert: {:indent$}{:<w$} {:>8.3} s{}{}",
            "",
            span.name(),
            open.start.elapsed().as_secs_f64(),
            if open.fields.0.is_empty() { "" } else { " " },
            open.fields.0,
            indent = 2 * depth,
            w = 24usize.saturating_sub(2 * depth),
        ));
    }
}

/// `--timings`: a line per stage as it closes, its wall time, the time since the start and
/// the peak resident set so far (from `/proc/self/status` where there is one); and the spill
/// file's size at the end.
struct Timings {
    start: Instant,
    say: Say,
}

struct Started(Instant);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Timings {
    fn on_new_span(&self, _attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Started(Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(&Started(t)) = span.extensions().get::<Started>() else {
            return;
        };
        let peak = peak_rss_kb().map_or_else(|| "n/a".to_string(), |k| format!("{} MB", k / 1024));
        self.say.line(format_args!(
            "timings: {:<28} {:>8.3} s  (total {:>8.3} s)  peak RSS {peak}",
            span.name(),
            t.elapsed().as_secs_f64(),
            self.start.elapsed().as_secs_f64()
        ));
    }

    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        #[derive(Default)]
        struct Spill(u64, u64);
        impl Visit for Spill {
            fn record_u64(&mut self, field: &Field, value: u64) {
                match field.name() {
                    SPILL_FIELD => self.0 = value,
                    "trims" => self.1 = value,
                    _ => {}
                }
            }
            fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
        }
        let mut s = Spill::default();
        event.record(&mut s);
        self.say.line(format_args!(
            "timings: spill file: {} MB written, mapped columns dropped from memory {} times",
            s.0, s.1
        ));
    }
}

/// VmHWM of this process in KiB (Linux), `None` elsewhere.
pub(crate) fn peak_rss_kb() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The spinner: the message of the stage that starts.
struct Spinner(indicatif::ProgressBar);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Spinner {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let msg = match attrs.metadata().name() {
            "rules" => "loading rules",
            "read" => "reading the trace",
            "replay" => "replaying",
            "rules evaluated" => "evaluating the rules",
            "critical path, matrices" => "critical path and matrices",
            "written" => return,
            other => other,
        };
        self.0.set_message(msg);
    }
}
