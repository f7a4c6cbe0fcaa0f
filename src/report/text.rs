//! The terminal report: the trace in one line, the top findings ranked by significance with
//! their share of time, call path, most affected ranks and diagnosis, then the metric tree.

use super::Report;
use std::collections::HashMap;
use std::io::Write;

#[derive(Clone, Debug)]
pub struct TextOptions {
    /// How many findings to list.
    pub top: usize,
    /// Print the call tree with inclusive time.
    pub call_tree: bool,
    /// Print the per-rank breakdown of this metric.
    pub metric: Option<String>,
    /// ANSI colour (only on a terminal, never with NO_COLOR).
    pub color: bool,
    /// The "Root causes" part under the top findings (`--root-causes`).
    pub root_causes: bool,
}

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn warn(&self, s: &str) -> String {
        self.paint("33", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

pub(crate) fn fmt_value(v: f64, unit: crate::rules::Unit) -> String {
    match unit {
        crate::rules::Unit::Sec => seconds(v),
        crate::rules::Unit::Occ => format!("{v:.0}"),
        crate::rules::Unit::Bytes => format!("{v:.0} B"),
    }
}

/// Seconds with a unit that keeps three decimals meaningful.
pub(crate) fn seconds(v: f64) -> String {
    let a = v.abs();
    if a >= 1.0 || a == 0.0 {
        format!("{v:.3} s")
    } else if a >= 1e-3 {
        format!("{:.3} ms", v * 1e3)
    } else {
        format!("{:.3} µs", v * 1e6)
    }
}

fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for w in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + w.len() > width {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}

pub fn write(r: &Report, opt: &TextOptions, out: &mut dyn Write) -> std::io::Result<()> {
    let st = Style { on: opt.color };
    write_header(r, &st, out)?;
    let c = Lookups::of(r);
    writeln!(out)?;
    write_findings(r, &c, opt.top, &st, out)?;
    if opt.root_causes {
        write_root_causes(r, &c, opt.top, &st, out)?;
    }
    writeln!(out)?;
    write_metric_tree(r, c.time_total, &st, out)?;
    if opt.call_tree {
        writeln!(out)?;
        write_call_tree(r, &st, out)?;
    }
    if let Some(id) = &opt.metric {
        writeln!(out)?;
        write_metric_rows(r, &c, id, &st, out)?;
    }
    Ok(())
}

/// What the sections of the report look up: metrics by id, who each location is, and the
/// total time.
struct Lookups<'a> {
    metric_of: HashMap<&'a str, &'a super::MetricEntry>,
    loc_rank: HashMap<u64, String>,
    time_total: f64,
}

impl<'a> Lookups<'a> {
    fn of(r: &'a Report) -> Lookups<'a> {
        let metric_of: HashMap<&str, &super::MetricEntry> =
            r.metrics.iter().map(|m| (m.id.as_str(), m)).collect();
        let loc_rank: HashMap<u64, String> = r
            .locations
            .iter()
            .map(|l| {
                let who = match l.rank {
                    Some(rank) if l.thread == 0 => format!("rank {rank}"),
                    Some(rank) => format!("rank {rank}.{}", l.thread),
                    None if l.process.is_some() => format!("thread {}", l.thread),
                    None => format!("location {}", l.id),
                };
                (l.id, who)
            })
            .collect();
        let time_total: f64 = r
            .values
            .iter()
            .filter(|v| v.metric == "time")
            .map(|v| v.value)
            .sum();
        Lookups {
            metric_of,
            loc_rank,
            time_total,
        }
    }
}

/// The root causes of the top wait states (docs/root-causes.md): per wait-state metric among
/// the top findings, the call paths and locations whose delay caused it, directly and
/// through the waits it propagated.
fn write_root_causes(
    r: &Report,
    c: &Lookups,
    top: usize,
    st: &Style,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    writeln!(out)?;
    writeln!(out, "{}", st.bold("Root causes"))?;
    let Some(rc) = &r.root_causes else {
        return writeln!(out, "  none computed (the trace has no MPI_Finalize)");
    };
    let mut metrics: Vec<(&str, f64)> = Vec::new();
    let top_waits = (r.findings.iter())
        .filter(|f| f.wait_state && f.significance >= 0.01)
        .take(top);
    for f in top_waits {
        match metrics.iter_mut().find(|m| m.0 == f.metric) {
            Some(m) => m.1 += f.severity,
            None => metrics.push((f.metric.as_str(), f.severity)),
        }
    }
    let mut any = false;
    for (id, sev) in metrics {
        let causes: Vec<_> = rc.causes.iter().filter(|x| x.wait_state == id).collect();
        let Some(m) = c.metric_of.get(id).filter(|_| !causes.is_empty()) else {
            continue;
        };
        any = true;
        writeln!(out, "  {} ({} in the top findings):", m.name, seconds(sev))?;
        for x in causes.iter().take(3) {
            let who = c.loc_rank.get(&x.location).cloned().unwrap_or_default();
            // the precision when it is below what shows as 1.00 (reconstructed collectives,
            // repaired clocks: the waits it explains are as uncertain)
            let prec = if x.precision < 0.995 {
                format!("; precision {:.2}", x.precision)
            } else {
                String::new()
            };
            writeln!(
                out,
                "    caused by {} on {}, {} ({} directly, {} through waits it propagated{prec})",
                r.path(x.callpath),
                who,
                seconds(x.short_s + x.long_s),
                seconds(x.short_s),
                seconds(x.long_s)
            )?;
        }
    }
    if !any {
        writeln!(out, "  no delay costs for the top wait states")?;
    }
    Ok(())
}

/// The trace in one line, then the diagnostics line and the warnings.
fn write_header(r: &Report, st: &Style, out: &mut dyn Write) -> std::io::Result<()> {
    let t = &r.trace;
    writeln!(
        out,
        "{} {} — {}{}, {} locations, {} events, {}",
        st.bold("perfexpert"),
        t.path,
        t.format,
        if t.creator.is_empty() {
            String::new()
        } else {
            format!(" ({})", t.creator)
        },
        t.locations,
        t.events,
        seconds(t.duration_s)
    )?;
    let dg = &r.diagnostics;
    let cv = &dg.clock_violations;
    let worst = if cv.p2p > 0 {
        format!(
            " (largest {}, {} locations touched)",
            seconds(cv.max_p2p_s),
            cv.locations
        )
    } else if cv.collective > 0 {
        format!(" ({} locations touched)", cv.locations)
    } else {
        String::new()
    };
    let diag = format!(
        "clock condition violations: {} point-to-point, {} collective{worst}; unmatched messages: {} sends, {} receives; repairs: {}",
        cv.p2p,
        cv.collective,
        dg.unmatched_sends,
        dg.unmatched_receives,
        dg.repairs
    );
    let clean = dg.clock_condition_violations == 0
        && dg.unmatched_sends == 0
        && dg.unmatched_receives == 0
        && dg.repairs == 0;
    writeln!(
        out,
        "{}",
        if clean { st.dim(&diag) } else { st.warn(&diag) }
    )?;
    for w in &dg.warnings {
        writeln!(out, "{}", st.warn(&format!("warning: {w}")))?;
    }
    Ok(())
}

/// The wait states ranked by significance, each with its share of time, call path, most
/// affected ranks and diagnosis.
fn write_findings(
    r: &Report,
    c: &Lookups,
    top: usize,
    st: &Style,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    // wait states ranked by significance; those below 1 % significance are noise here
    let all_waits: Vec<_> = r.findings.iter().filter(|f| f.wait_state).collect();
    let waits: Vec<_> = all_waits
        .iter()
        .filter(|f| f.significance >= 0.01)
        .take(top)
        .collect();
    if waits.is_empty() {
        writeln!(out, "{}", st.bold("No wait states found."))?;
    } else {
        writeln!(
            out,
            "{:<48} {:>14} {:>8} {:>7} {:>9}",
            st.bold("Top findings"),
            "severity",
            "% time",
            "signif.",
            "precision"
        )?;
    }
    for (i, f) in waits.iter().enumerate() {
        let Some(m) = c.metric_of.get(f.metric.as_str()) else {
            continue;
        };
        let share = if c.time_total > 0.0 {
            100.0 * f.severity / c.time_total
        } else {
            0.0
        };
        writeln!(
            out,
            "{:>2}. {:<44} {:>14} {:>7.2}% {:>7.2} {:>9.2}",
            i + 1,
            st.bold(&m.long_name),
            fmt_value(f.severity, m.unit),
            share,
            f.significance,
            f.precision
        )?;
        writeln!(out, "    at {}", r.path(f.callpath))?;
        let mut per: Vec<(f64, u64)> = r
            .values
            .iter()
            .filter(|v| v.metric == f.metric && v.callpath == f.callpath && v.value > 0.0)
            .map(|v| (v.value, v.location))
            .collect();
        per.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let shown: Vec<String> = per
            .iter()
            .take(4)
            .map(|(v, l)| format!("{} {}", c.loc_rank[l], fmt_value(*v, m.unit)))
            .collect();
        let more = if per.len() > 4 {
            format!(" and {} more", per.len() - 4)
        } else {
            String::new()
        };
        writeln!(out, "    most affected: {}{more}", shown.join(", "))?;
        write!(out, "{}", wrap(&m.diagnosis, 92, "    "))?;
    }
    if all_waits.len() > waits.len() {
        writeln!(
            out,
            "{}",
            st.dim(&format!(
                "    ({} more wait-state findings: --top N, or --format json for all)",
                all_waits.len() - waits.len()
            ))
        )?;
    }
    Ok(())
}

/// The non-zero metrics as a tree, with their totals and share of time.
fn write_metric_tree(
    r: &Report,
    time_total: f64,
    st: &Style,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let mut totals: HashMap<&str, f64> = HashMap::new();
    for v in &r.values {
        *totals.entry(v.metric.as_str()).or_default() += v.value;
    }
    let mut depth: HashMap<&str, usize> = HashMap::new();
    let mut rows = Vec::new();
    for m in &r.metrics {
        let d = m
            .parent
            .as_deref()
            .and_then(|p| depth.get(p))
            .map_or(0, |d| d + 1);
        depth.insert(m.id.as_str(), d);
        let total = totals.get(m.id.as_str()).copied().unwrap_or(0.0);
        if total == 0.0 {
            continue; // zero metrics are listed in the JSON report
        }
        let pct = if m.unit == crate::rules::Unit::Sec && time_total > 0.0 {
            format!("{:>8.2}%", 100.0 * total / time_total)
        } else {
            String::new()
        };
        let label = format!("{:w$}{}", "", m.name, w = d * 2);
        rows.push((label, fmt_value(total, m.unit), pct));
    }
    // 52 columns for the names, wider when one is longer (Scalasca's longest names)
    let w = (rows.iter().map(|r| r.0.chars().count()))
        .max()
        .unwrap_or(0)
        .max(52);
    writeln!(
        out,
        "{:<w$} {:>16} {:>9}",
        st.bold("Metric tree (non-zero metrics)"),
        "total",
        "% of time"
    )?;
    for (label, value, pct) in rows {
        writeln!(out, "{label:<w$} {value:>16} {pct}")?;
    }
    Ok(())
}

/// Every call path with its inclusive time, indented by depth.
fn write_call_tree(r: &Report, st: &Style, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<60} {:>16}",
        st.bold("Call tree (inclusive time)"),
        "time"
    )?;
    let mut excl = vec![0.0; r.callpaths.len()];
    for v in r.values.iter().filter(|v| v.metric == "time") {
        excl[v.callpath as usize] += v.value;
    }
    let mut incl = excl.clone();
    for c in (0..r.callpaths.len()).rev() {
        if let Some(p) = r.callpaths[c].parent {
            incl[p as usize] += incl[c];
        }
    }
    for (c, cp) in r.callpaths.iter().enumerate() {
        let mut d = 0;
        let mut cur = cp.parent;
        while let Some(p) = cur {
            d += 1;
            cur = r.callpaths[p as usize].parent;
        }
        let label = format!("{:w$}{}", "", cp.region, w = d * 2);
        writeln!(out, "{label:<60} {:>16}", seconds(incl[c]))?;
    }
    Ok(())
}

/// The values of metric `id` per call path and rank (`--metric`).
fn write_metric_rows(
    r: &Report,
    c: &Lookups,
    id: &str,
    st: &Style,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let unit = c.metric_of.get(id).map(|m| m.unit);
    writeln!(out, "{}", st.bold(&format!("{id} per call path and rank")))?;
    let mut rows: Vec<_> = r.values.iter().filter(|v| v.metric == id).collect();
    rows.sort_by(|a, b| {
        a.callpath
            .cmp(&b.callpath)
            .then(a.location.cmp(&b.location))
    });
    for v in rows {
        writeln!(
            out,
            "  {:<60} {:<12} {:>16}",
            r.path(v.callpath),
            c.loc_rank[&v.location],
            unit.map_or(v.value.to_string(), |u| fmt_value(v.value, u))
        )?;
    }
    Ok(())
}

/// The critical path (issue 14): its length, the regions and ranks it runs through and the
/// what-if lengths. Printed with `--critical-path` or `--what-if`.
pub fn write_critical_path(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(cp) = &r.critical_path else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(
        out,
        "Critical path: {} of a {} run ({} segments)",
        seconds(cp.length_s),
        seconds(cp.duration_s),
        cp.segments.len()
    )?;
    for s in cp.regions.iter().take(8) {
        writeln!(
            out,
            "  {:>10} {:5.1}%  {}",
            seconds(s.time_s),
            s.percent,
            s.name
        )?;
    }
    let ranks: Vec<String> = cp
        .locations
        .iter()
        .take(8)
        .map(|l| {
            let who = l
                .rank
                .map_or(format!("location {}", l.location), |k| format!("rank {k}"));
            format!("{who} {:.1}%", l.percent)
        })
        .collect();
    if !ranks.is_empty() {
        writeln!(out, "  on: {}", ranks.join(", "))?;
    }
    for w in &cp.what_if {
        writeln!(
            out,
            "What if {} took no time: critical path {} (−{}, {:.1}%)",
            w.region,
            seconds(w.length_s),
            seconds(w.saved_s),
            if cp.length_s > 0.0 {
                100.0 * w.saved_s / cp.length_s
            } else {
                0.0
            }
        )?;
    }
    if cp.broken_dependencies > 0 {
        writeln!(
            out,
            "  ({} dependency cycles broken: the trace is inconsistent)",
            cp.broken_dependencies
        )?;
    }
    Ok(())
}
