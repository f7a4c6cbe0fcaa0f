//! `--matrices-csv`: the wait-time and message-traffic matrices as CSV, one writer per file
//! (the command line names the files and writes them).

use crate::analysis::matrices::{TrafficCell, TrafficMatrix, WaitMatrix};
use std::io::Write;

/// `wait_matrix.csv`: waiting rank, rank waited for, seconds, % of the run's duration; every
/// non-zero cell.
pub fn write_wait_matrix(w: &WaitMatrix, f: &mut dyn Write) -> std::io::Result<()> {
    writeln!(f, "waiting_rank,waits_for_rank,time_s,percent_of_duration")?;
    for r in &w.rows {
        for c in &r.waits_for {
            writeln!(f, "{},{},{},{}", r.rank, c.rank, c.time_s, c.percent)?;
        }
    }
    Ok(())
}

/// `traffic_matrix.csv`: communicator (`all` for the sum over communicators), from, to,
/// count, bytes, rate.
pub fn write_traffic_matrix(t: &TrafficMatrix, f: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        f,
        "communicator,from_rank,to_rank,count,bytes,rate_bytes_per_s"
    )?;
    let rate = |c: &TrafficCell| c.rate_bytes_per_s.map_or(String::new(), |r| r.to_string());
    let all = std::iter::once(("all".to_string(), &t.cells));
    let per_comm = (t.communicators.iter()).map(|ct| (csv_field(&ct.communicator), &ct.cells));
    for (name, cells) in all.chain(per_comm) {
        for c in cells {
            writeln!(
                f,
                "{name},{},{},{},{},{}",
                c.from,
                c.to,
                c.count,
                c.bytes,
                rate(c)
            )?;
        }
    }
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
