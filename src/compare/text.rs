//! The terminal form of a comparison: similarity per pair and overall, the grouped edits,
//! the largest time differences of matched calls, and the findings that changed.

use super::edits::{EditGroup, Op};
use super::Comparison;
use crate::report::text::seconds;
use std::io::Write;

/// `top` bounds each list (0 = all).
pub fn write(c: &Comparison, top: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let take = |n: usize| if top == 0 { n } else { top.min(n) };
    writeln!(out, "perfexpert compare {} → {}", c.a, c.b)?;
    writeln!(
        out,
        "alignment: {} {}, match {} mismatch {} gap {}; {} location pair(s), similarity {:.2} %",
        c.alphabet_name(),
        match c.scoring.mode {
            super::align::Mode::Global => "global",
            super::align::Mode::SemiGlobal => "semi-global",
        },
        c.scoring.matched,
        c.scoring.mismatch,
        c.scoring.gap,
        c.locations.len(),
        c.similarity * 100.0
    )?;
    if !c.unpaired_a.is_empty() {
        writeln!(out, "only in A: {}", c.unpaired_a.join(", "))?;
    }
    if !c.unpaired_b.is_empty() {
        writeln!(out, "only in B: {}", c.unpaired_b.join(", "))?;
    }
    writeln!(
        out,
        "\n{:>5} {:>6} {:>10} {:>10} {:>10} {:>12} {:>8}  location (A / B)",
        "rank", "thread", "A symbols", "B symbols", "matched", "score", "similar"
    )?;
    for p in &c.locations {
        let names = if p.a_location == p.b_location {
            p.a_location.clone()
        } else {
            format!("{} / {}", p.a_location, p.b_location)
        };
        writeln!(
            out,
            "{:>5} {:>6} {:>10} {:>10} {:>10} {:>12} {:>7.2}%  {names}{}",
            p.rank,
            p.thread,
            p.a_symbols,
            p.b_symbols,
            p.matches,
            p.score,
            p.similarity * 100.0,
            if p.optimal {
                ""
            } else {
                " (not proven optimal)"
            }
        )?;
    }
    let edits: usize = c.locations.iter().map(|p| p.edits.len()).sum();
    if edits == 0 {
        writeln!(
            out,
            "\nno edits: the paired locations call the same regions in the same order"
        )?;
    } else {
        let n = take(c.edit_groups.len());
        writeln!(
            out,
            "\nEdits: {edits} in {} group(s){}",
            c.edit_groups.len(),
            if n < c.edit_groups.len() {
                format!(" (first {n}; --top 0 for all)")
            } else {
                String::new()
            }
        )?;
        for g in c.edit_groups.iter().take(n) {
            writeln!(out, "  {}", describe(g))?;
        }
    }
    write_times(c, take, out)?;
    write_findings(c, out)
}

impl Comparison {
    fn alphabet_name(&self) -> &'static str {
        match self.alphabet {
            super::alphabet::Alphabet::Calls => "calls",
            super::alphabet::Alphabet::CallsMessages => "calls+messages",
        }
    }
}

/// "rank 3, symbols 114–198 of A (12.301–14.550 s): MPI_Send → MPI_Allreduce, 43 times".
pub fn describe(g: &EditGroup) -> String {
    let range = |f: Option<u64>, l: Option<u64>| match (f, l) {
        (Some(f), Some(l)) if f == l => format!("{f}"),
        (Some(f), Some(l)) => format!("{f}–{l}"),
        _ => String::new(),
    };
    let (side, idx) = match g.op {
        Op::Insert => ("B", range(g.b_first, g.b_last)),
        _ => ("A", range(g.a_first, g.a_last)),
    };
    let what = match g.op {
        Op::Substitute => format!(
            "{} → {}",
            g.a_region.as_deref().unwrap_or("?"),
            g.b_region.as_deref().unwrap_or("?")
        ),
        Op::Delete => format!("{} only in A", g.a_region.as_deref().unwrap_or("?")),
        Op::Insert => format!("{} only in B", g.b_region.as_deref().unwrap_or("?")),
    };
    let times = if g.count == 1 {
        format!("{:.6} s", g.first_time_s)
    } else {
        format!("{:.6}–{:.6} s", g.first_time_s, g.last_time_s)
    };
    format!(
        "rank {}{}, symbol{} {idx} of {side} ({times}): {what} ({}), {} time{} at {}",
        g.rank,
        if g.thread > 0 {
            format!(" thread {}", g.thread)
        } else {
            String::new()
        },
        if g.count == 1 { "" } else { "s" },
        g.op.name(),
        g.count,
        if g.count == 1 { "" } else { "s" },
        g.callpath
    )
}

fn write_times(
    c: &Comparison,
    take: impl Fn(usize) -> usize,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let changed: Vec<_> = c
        .time_differences
        .iter()
        .filter(|d| d.diff_s != 0.0)
        .collect();
    if changed.is_empty() {
        return writeln!(
            out,
            "\nTime of matched calls: no difference ({} call paths × ranks compared)",
            c.time_differences.len()
        );
    }
    let n = take(changed.len());
    writeln!(
        out,
        "\nTime of matched calls, largest |B − A| first ({} of {} call paths × ranks changed):",
        n,
        changed.len()
    )?;
    writeln!(
        out,
        "{:>14} {:>14} {:>14} {:>9} {:>5}  call path",
        "B − A", "A", "B", "calls", "rank"
    )?;
    for d in changed.into_iter().take(n) {
        let sign = if d.diff_s > 0.0 { "+" } else { "" };
        writeln!(
            out,
            "{:>14} {:>14} {:>14} {:>9} {:>5}  {}",
            format!("{sign}{}", seconds(d.diff_s)),
            seconds(d.a_s),
            seconds(d.b_s),
            d.calls,
            d.rank,
            d.callpath
        )?;
    }
    Ok(())
}

fn write_findings(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    let f = &c.findings;
    if f.appeared.is_empty() && f.vanished.is_empty() && f.moved.is_empty() {
        writeln!(
            out,
            "\nWait-state findings: none appeared, vanished or moved ({} in both runs)",
            f.stayed.len()
        )?;
    } else {
        writeln!(out, "\nWait-state findings that changed:")?;
    }
    let mut stayed: Vec<_> = f
        .stayed
        .iter()
        .filter(|s| s.a_severity != s.b_severity)
        .collect();
    stayed.sort_by(|x, y| {
        (y.b_severity - y.a_severity)
            .abs()
            .total_cmp(&(x.b_severity - x.a_severity).abs())
    });
    for s in stayed.iter().take(5) {
        writeln!(
            out,
            "  in both   {} at {}: {} → {}",
            s.metric,
            s.callpath,
            seconds(s.a_severity),
            seconds(s.b_severity)
        )?;
    }
    for x in &f.appeared {
        writeln!(
            out,
            "  appeared  {} at {} ({})",
            x.metric,
            x.callpath,
            seconds(x.severity)
        )?;
    }
    for x in &f.vanished {
        writeln!(
            out,
            "  vanished  {} at {} ({})",
            x.metric,
            x.callpath,
            seconds(x.severity)
        )?;
    }
    for x in &f.moved {
        writeln!(
            out,
            "  moved     {} from {} ({}) to {} ({})",
            x.metric,
            x.from_callpath,
            seconds(x.a_severity),
            x.to_callpath,
            seconds(x.b_severity)
        )?;
    }
    Ok(())
}
