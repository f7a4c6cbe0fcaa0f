use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match perfexpert::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
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
        Err(e) => {
            drop(out);
            eprintln!("perfexpert: {e}");
            ExitCode::from(2)
        }
    }
}
