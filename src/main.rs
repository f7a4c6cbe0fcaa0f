//! The `perfexpert` binary: parses the command line, runs it through the library (`cli`),
//! and turns an error into one line on stderr with exit status 2.

use clap::Parser;
use std::process::ExitCode;

/// Large buffers (the event and replay columns) in transparent huge pages: see
/// `perfexpert::huge_alloc`.
#[global_allocator]
static ALLOC: perfexpert::huge_alloc::HugeAlloc = perfexpert::huge_alloc::HugeAlloc;

fn main() -> ExitCode {
    let cli = match perfexpert::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("perfexpert: {}", one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match perfexpert::cli::run(cli, &mut out) {
        Ok(()) => match std::io::Write::flush(&mut out) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("perfexpert: cannot write the output: {e}");
                ExitCode::from(1)
            }
        },
        Err(perfexpert::Error::Breach(lines)) => {
            drop(out);
            for l in lines {
                eprintln!("perfexpert: fail-on: {l}");
            }
            ExitCode::from(1)
        }
        Err(e) => {
            drop(out);
            eprintln!("perfexpert: {e}");
            ExitCode::from(2)
        }
    }
}

/// A command-line error as one line: clap's message, its possible values and the usage, without
/// its blank lines and "For more information" hint.
fn one_line(rendered: &str) -> String {
    let mut msg = String::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        if let Some(usage) = line.strip_prefix("Usage: ") {
            msg.push_str("; usage: ");
            msg.push_str(usage);
        } else if line.starts_with("tip: ") {
            msg.push_str("; ");
            msg.push_str(line);
        } else {
            if !msg.is_empty() {
                msg.push(' ');
            }
            msg.push_str(line.strip_prefix("error: ").unwrap_or(line));
        }
    }
    msg
}
