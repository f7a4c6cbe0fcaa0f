//! `--format html`: one self-contained page (no network access, no external script): the top
//! findings, a per-rank bar chart of the selected finding, the metric tree, the wait-time and
//! traffic matrices as heat maps and the critical path as a timeline. Charts are inline SVG
//! written here (smaller than any charting library for these few chart types); a few lines of
//! inline script switch the selected finding. The views of the run over time (issue 25,
//! `analysis::views`) are in `html/`: the timeline, the animations, the process graph,
//! mapping and pies, drawn by `html/views.js` from a JSON object in the page.

// HTML is written with explicit line breaks where they help reading the page source.
#![allow(clippy::write_with_newline)]

mod animate;
mod graph;
mod timeline;

use super::text::seconds as secs;
use super::Report;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;

/// How many findings the page lists (each gets its bar chart).
const TOP: usize = 10;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn bytes(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} GB", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.2} kB", v / 1e3)
    } else {
        format!("{v:.0} B")
    }
}

/// White → dark red for 0..1.
fn heat(x: f64) -> String {
    let x = x.clamp(0.0, 1.0);
    let r = 255.0 - 75.0 * x;
    let g = 255.0 - 235.0 * x;
    let b = 255.0 - 225.0 * x;
    format!("rgb({:.0},{:.0},{:.0})", r, g, b)
}

const STYLE: &str =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}
table{border-collapse:collapse}td,th{padding:3px 8px;text-align:left;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}tr.sel{background:#fde8e8}
tr.f{cursor:pointer}.muted{color:#777}svg text{font:11px system-ui,sans-serif}
ul.tree{list-style:none;padding-left:18px}ul.tree li{margin:1px 0}
.chart{display:none}.chart.on{display:block}
.ctl{margin:6px 0}.ctl button,.ctl select{margin-right:4px}.legend span{margin-right:12px;white-space:nowrap}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px;border:1px solid #0003}
.tlwrap{position:relative}#tl-canvas{width:100%;height:360px;cursor:grab;border:1px solid #ddd}
#tip{position:absolute;display:none;pointer-events:none;background:#fffe;border:1px solid #999;padding:4px 6px;font-size:12px;max-width:520px}
.grid{display:flex;flex-wrap:wrap;gap:16px}.grid figure{margin:0}.map{display:flex;flex-wrap:wrap;gap:8px}
.node{border:2px solid;padding:4px 8px;border-radius:4px;max-width:520px}.chip{display:inline-block;font-size:11px;padding:0 4px;margin:1px;background:#eee;border-radius:3px}
.pies{display:flex;flex-wrap:wrap;gap:6px}.pie{margin:0;text-align:center;font-size:11px}";

/// Inline script: clicking a finding row shows its bar chart; `?only=SECTION` in the address
/// shows one section alone (tools/screenshots.sh takes the README's pictures that way).
const SCRIPT: &str = "document.querySelectorAll('tr.f').forEach(function(r){r.addEventListener('click',function(){
document.querySelectorAll('tr.f').forEach(function(x){x.classList.remove('sel');});
document.querySelectorAll('.chart').forEach(function(x){x.classList.remove('on');});
r.classList.add('sel');var c=document.getElementById('chart-'+r.dataset.k);if(c){c.classList.add('on');}});});
var only=location.search.match(/[?&]only=([a-z-]+)/);if(only){document.querySelectorAll('body>section,body>h1,body>p').forEach(function(s){
if(s.id!==only[1]){s.style.display='none';}});}";

pub fn write(r: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let mut h = String::new();
    page(r, &mut h).map_err(std::io::Error::other)?;
    out.write_all(h.as_bytes())
}

fn page(r: &Report, h: &mut String) -> std::fmt::Result {
    let title = format!("perfexpert: {}", r.trace.path);
    write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
         <style>{STYLE}</style></head><body>\n",
        esc(&title)
    )?;
    write!(
        h,
        "<h1>{}</h1><p class=\"muted\">{} · {} · {} locations · {} events · {}</p>\n",
        esc(&r.trace.path),
        esc(&r.trace.format),
        esc(&r.trace.creator),
        r.trace.locations,
        r.trace.events,
        secs(r.trace.duration_s)
    )?;
    type Section = fn(&Report, &mut String) -> std::fmt::Result;
    let sections: [(&str, Section); 11] = [
        ("findings", findings),
        ("root-causes", root_causes),
        ("timeline", timeline::section),
        ("animations", animate::section),
        ("phases", phases),
        ("metric-tree", metric_tree),
        ("critical-path", critical_path),
        ("wait-matrix", wait_matrix),
        ("traffic-matrix", traffic_matrix),
        ("overheads", overheads),
        ("process-graph", graph::section),
    ];
    for (id, f) in sections {
        write!(h, "<section id=\"{id}\">")?;
        f(r, h)?;
        write!(h, "</section>\n")?;
    }
    write!(h, "<script>{SCRIPT}</script>\n")?;
    if let Some(v) = &r.views {
        write!(
            h,
            "<script type=\"application/json\" id=\"views-data\">{}</script>\n<script>{}</script>\n",
            timeline::data(r, v),
            include_str!("html/views.js")
        )?;
    }
    write!(h, "</body></html>\n")
}

fn phases(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(ph) = &r.phases else {
        return Ok(());
    };
    write!(h, "<h2>Phases</h2>\n")?;
    let d = r.trace.duration_s;
    let (w, lw) = (820.0, 0.0);
    write!(h, "<svg width=\"{}\" height=\"40\" role=\"img\">", w + 20.0)?;
    for p in ph {
        let x0 = lw + if d > 0.0 { w * p.start_s / d } else { 0.0 };
        let x1 = lw + if d > 0.0 { w * p.end_s / d } else { 0.0 };
        write!(
            h,
            "<rect x=\"{x0:.1}\" y=\"2\" width=\"{:.1}\" height=\"20\" fill=\"{}\" stroke=\"#fff\"><title>phase {}: {} – {}</title></rect>\
             <text x=\"{:.1}\" y=\"36\">{}</text>",
            (x1 - x0).max(0.5),
            heat(0.15 + 0.85 * p.mpi_percent / 100.0),
            p.phase,
            secs(p.start_s),
            secs(p.end_s),
            x0 + 2.0,
            p.phase
        )?;
    }
    write!(
        h,
        "</svg>\n<p class=\"muted\">Darker: more time in MPI. Each phase analysed alone \
               (<code>perfexpert run TRACE --phase K</code>).</p>\n"
    )?;
    write!(
        h,
        "<table><tr><th>phase</th><th>from</th><th>to</th><th>MPI</th><th>main regions</th>\
         <th>top finding</th></tr>\n"
    )?;
    for p in ph {
        let regions: Vec<String> = p.regions.iter().map(|x| esc(&x.0)).collect();
        let top = p.findings.first().map_or("—".to_string(), |f| {
            format!(
                "{} at {} ({})",
                esc(&metric_name(r, &f.0)),
                esc(&f.1),
                secs(f.2)
            )
        });
        write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}%</td><td>{}</td><td>{}</td></tr>\n",
            p.phase,
            secs(p.start_s),
            secs(p.end_s),
            p.mpi_percent,
            regions.join(", "),
            top
        )?;
    }
    write!(h, "</table>\n")
}

fn metric_name(r: &Report, id: &str) -> String {
    r.metrics
        .iter()
        .find(|m| m.id == id)
        .map_or(id.to_string(), |m| m.name.clone())
}

fn unit_of(r: &Report, id: &str) -> crate::rules::Unit {
    r.metrics
        .iter()
        .find(|m| m.id == id)
        .map_or(crate::rules::Unit::Sec, |m| m.unit)
}

fn fmt_unit(v: f64, u: crate::rules::Unit) -> String {
    match u {
        crate::rules::Unit::Sec => secs(v),
        crate::rules::Unit::Occ => format!("{v:.0}"),
        crate::rules::Unit::Bytes => bytes(v),
    }
}

fn findings(r: &Report, h: &mut String) -> std::fmt::Result {
    let top: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.wait_state)
        .take(TOP)
        .collect();
    write!(h, "<h2>Top findings</h2>\n")?;
    if top.is_empty() {
        write!(h, "<p>No wait state found.</p>\n")?;
        return Ok(());
    }
    write!(
        h,
        "<table><tr><th>#</th><th>finding</th><th>call path</th><th>severity</th>\
         <th>significance</th><th>precision</th></tr>\n"
    )?;
    for (k, f) in top.iter().enumerate() {
        write!(
            h,
            "<tr class=\"f{}\" data-k=\"{k}\"><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{:.2}</td><td class=\"n\">{:.2}</td></tr>\n",
            if k == 0 { " sel" } else { "" },
            k + 1,
            esc(&metric_name(r, &f.metric)),
            esc(&r.path(f.callpath)),
            fmt_unit(f.severity, unit_of(r, &f.metric)),
            f.significance,
            f.precision
        )?;
    }
    write!(
        h,
        "</table>\n<p class=\"muted\">Click a finding to see it per rank.</p>\n"
    )?;
    let rank_of: HashMap<u64, String> = r
        .locations
        .iter()
        .map(|l| {
            let label = match (l.rank, l.thread) {
                (Some(k), 0) => format!("rank {k}"),
                (Some(k), t) => format!("rank {k}.{t}"),
                (None, _) => l.name.clone(),
            };
            (l.id, label)
        })
        .collect();
    for (k, f) in top.iter().enumerate() {
        let vals: Vec<(String, f64)> = r
            .locations
            .iter()
            .map(|l| {
                let v = r
                    .values
                    .iter()
                    .filter(|x| {
                        x.metric == f.metric && x.callpath == f.callpath && x.location == l.id
                    })
                    .map(|x| x.value)
                    .sum::<f64>();
                (rank_of.get(&l.id).cloned().unwrap_or_default(), v)
            })
            .collect();
        write!(
            h,
            "<div class=\"chart{}\" id=\"chart-{k}\"><h3>{} at {} per rank</h3>",
            if k == 0 { " on" } else { "" },
            esc(&metric_name(r, &f.metric)),
            esc(&r.path(f.callpath))
        )?;
        bars(h, &vals, unit_of(r, &f.metric))?;
        worst_timeline(r, f, &rank_of, h)?;
        write!(h, "</div>\n")?;
    }
    Ok(())
}

/// The worst instances of a finding on the run's time axis: one row per rank (1 = worst), a
/// mark at the instance's time, its area proportional to the value.
fn worst_timeline(
    r: &Report,
    f: &crate::analysis::scores::Finding,
    label: &HashMap<u64, String>,
    h: &mut String,
) -> std::fmt::Result {
    let w = &f.worst_instances;
    if w.is_empty() {
        return Ok(());
    }
    let u = unit_of(r, &f.metric);
    // the axis spans the run (times count from its first event)
    let d = (w.iter().map(|x| x.time_s)).fold(r.trace.duration_s, f64::max);
    let max = w.iter().map(|x| x.value).fold(0.0f64, f64::max);
    let (lw, tw, rh) = (160.0, 620.0, 22.0);
    let x_of = |t: f64| {
        lw + if d > 0.0 {
            tw * (t / d).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let height = rh * w.len() as f64 + 30.0;
    write!(
        h,
        "<h3>Worst instances in time</h3><svg width=\"{}\" height=\"{height}\" role=\"img\">",
        lw + tw + 20.0
    )?;
    for (i, x) in w.iter().enumerate() {
        let y = i as f64 * rh + 4.0;
        let cy = y + rh / 2.0;
        let who = label.get(&x.location).cloned().unwrap_or_default();
        // area ∝ value: radius ∝ √value, at least visible
        let rad = if max > 0.0 {
            (8.0 * (x.value / max).sqrt()).max(2.5)
        } else {
            2.5
        };
        write!(
            h,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">#{} {}</text>\
             <line x1=\"{lw}\" x2=\"{}\" y1=\"{cy:.1}\" y2=\"{cy:.1}\" stroke=\"#ddd\"/>\
             <circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"{rad:.1}\" fill=\"#c0392b\" fill-opacity=\"0.8\">\
             <title>#{} {} at {}: {}</title></circle>",
            lw - 6.0,
            cy + 4.0,
            x.rank,
            esc(&who),
            lw + tw,
            x_of(x.time_s),
            x.rank,
            esc(&who),
            secs(x.time_s),
            fmt_unit(x.value, u)
        )?;
    }
    let ay = rh * w.len() as f64 + 8.0;
    write!(
        h,
        "<line x1=\"{lw}\" x2=\"{}\" y1=\"{ay}\" y2=\"{ay}\" stroke=\"#999\"/>",
        lw + tw
    )?;
    for k in 0..=4 {
        let t = d * k as f64 / 4.0;
        write!(
            h,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"{}\">{}</text>",
            x_of(t),
            ay + 16.0,
            match k {
                0 => "start",
                4 => "end",
                _ => "middle",
            },
            secs(t)
        )?;
    }
    write!(
        h,
        "</svg><p class=\"muted\">One row per instance, worst on top; a mark's area is \
         proportional to its value. Hover a mark for its time and value.</p>"
    )
}

/// A horizontal bar chart.
fn bars(h: &mut String, vals: &[(String, f64)], u: crate::rules::Unit) -> std::fmt::Result {
    let max = vals.iter().map(|v| v.1).fold(0.0f64, f64::max);
    let (lw, bw, rh) = (160.0, 520.0, 18.0);
    let height = rh * vals.len() as f64 + 10.0;
    write!(
        h,
        "<svg width=\"{}\" height=\"{height}\" role=\"img\">",
        lw + bw + 110.0
    )?;
    for (i, (label, v)) in vals.iter().enumerate() {
        // values within rounding of zero (a metric computed as a difference) draw as zero
        let v = &if v.abs() < 1e-9 { 0.0 } else { *v };
        let y = i as f64 * rh + 4.0;
        let w = if max > 0.0 {
            (bw * v / max).max(0.0)
        } else {
            0.0
        };
        write!(
            h,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{lw}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"#c0392b\"/>\
             <text x=\"{:.1}\" y=\"{}\">{}</text>",
            lw - 6.0,
            y + 12.0,
            esc(label),
            rh - 4.0,
            lw + w + 4.0,
            y + 12.0,
            fmt_unit(*v, u)
        )?;
    }
    write!(h, "</svg>")
}

fn metric_tree(r: &Report, h: &mut String) -> std::fmt::Result {
    let mut total: HashMap<&str, f64> = HashMap::new();
    for v in &r.values {
        *total.entry(v.metric.as_str()).or_default() += v.value;
    }
    let time = total.get("time").copied().unwrap_or(0.0);
    write!(h, "<h2>Metric tree</h2>\n")?;
    fn node(
        r: &Report,
        h: &mut String,
        parent: Option<&str>,
        total: &HashMap<&str, f64>,
        time: f64,
    ) -> std::fmt::Result {
        let kids: Vec<_> = r
            .metrics
            .iter()
            .filter(|m| m.parent.as_deref() == parent)
            .collect();
        if kids.is_empty() {
            return Ok(());
        }
        write!(h, "<ul class=\"tree\">")?;
        for m in kids {
            let v = total.get(m.id.as_str()).copied().unwrap_or(0.0);
            let share = if m.unit == crate::rules::Unit::Sec && time > 0.0 {
                format!(" <span class=\"muted\">{:.1}%</span>", 100.0 * v / time)
            } else {
                String::new()
            };
            write!(
                h,
                "<li title=\"{}\">{} — {}{share}",
                esc(&m.description),
                esc(&m.name),
                fmt_unit(v, m.unit)
            )?;
            node(r, h, Some(&m.id), total, time)?;
            write!(h, "</li>")?;
        }
        write!(h, "</ul>\n")
    }
    node(r, h, None, &total, time)
}

fn critical_path(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(cp) = &r.critical_path else {
        return Ok(());
    };
    write!(
        h,
        "<h2>Critical path</h2>\n<p>Length {} of a {} run. The longest chain of computation and \
         communication dependencies; time spent waiting for another rank is not on it. \
         Grey: the delay until the process the path begins on started.</p>\n",
        secs(cp.length_s),
        secs(cp.duration_s)
    )?;
    // timeline: one lane per location, the path's stretches, dependency jumps as lines
    let lanes: Vec<u64> = r.locations.iter().map(|l| l.id).collect();
    let lane = |id: u64| lanes.iter().position(|&x| x == id).unwrap_or(0);
    let (lw, w, rh) = (110.0, 820.0, 22.0);
    let height = rh * lanes.len() as f64 + 30.0;
    let x = |t: f64| {
        lw + if cp.duration_s > 0.0 {
            w * t / cp.duration_s
        } else {
            0.0
        }
    };
    write!(
        h,
        "<svg width=\"{}\" height=\"{height}\" role=\"img\">",
        lw + w + 20.0
    )?;
    for (i, l) in r.locations.iter().enumerate() {
        let y = i as f64 * rh + 4.0;
        let label = l.rank.map_or(l.name.clone(), |k| format!("rank {k}"));
        write!(
            h,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{lw}\" y=\"{}\" width=\"{w}\" height=\"2\" fill=\"#ddd\"/>",
            lw - 6.0,
            y + 14.0,
            esc(&label),
            y + 9.0
        )?;
    }
    let mut prev: Option<(f64, f64)> = None;
    for s in &cp.segments {
        let y = lane(s.location) as f64 * rh + 4.0;
        let (x0, x1) = (x(s.start_s), x(s.end_s));
        if let Some((px, py)) = prev {
            write!(
                h,
                "<line x1=\"{px:.1}\" y1=\"{:.1}\" x2=\"{x0:.1}\" y2=\"{:.1}\" stroke=\"#555\" stroke-width=\"1\"/>",
                py + 10.0,
                y + 10.0
            )?;
        }
        let fill = if s.via == "start-up" {
            "#bbb"
        } else {
            "#c0392b"
        };
        write!(
            h,
            "<rect x=\"{x0:.1}\" y=\"{y}\" width=\"{:.1}\" height=\"{}\" fill=\"{fill}\"><title>{} → {}: {} on the path</title></rect>",
            (x1 - x0).max(0.5),
            rh - 4.0,
            secs(s.start_s),
            secs(s.end_s),
            secs(s.length_s)
        )?;
        prev = Some((x1, y));
    }
    let axis_y = rh * lanes.len() as f64 + 18.0;
    write!(
        h,
        "<text x=\"{lw}\" y=\"{axis_y}\">0</text><text x=\"{}\" y=\"{axis_y}\" text-anchor=\"end\">{}</text></svg>\n",
        lw + w,
        secs(cp.duration_s)
    )?;
    // shares per region
    write!(h, "<h3>Regions on the critical path</h3>")?;
    let vals: Vec<(String, f64)> = cp
        .regions
        .iter()
        .take(12)
        .map(|s| (s.name.clone(), s.time_s))
        .collect();
    bars(h, &vals, crate::rules::Unit::Sec)?;
    if !cp.what_if.is_empty() {
        write!(h, "<h3>What if</h3><table><tr><th>region set to zero</th><th>new length</th><th>saved</th></tr>")?;
        for w in &cp.what_if {
            write!(
                h,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(&w.region),
                secs(w.length_s),
                secs(w.saved_s)
            )?;
        }
        write!(h, "</table>\n")?;
    }
    Ok(())
}

/// A heat map of `cells` (row, column, value, label) over `n` ranks.
fn heatmap(
    h: &mut String,
    n: u32,
    cells: &[(u32, u32, f64, String)],
    row_title: &str,
    col_title: &str,
) -> std::fmt::Result {
    let max = cells.iter().map(|c| c.2).fold(0.0f64, f64::max);
    let cs = (480.0 / n.max(1) as f64).clamp(6.0, 36.0);
    let off = 60.0;
    let size = off + cs * n as f64 + 10.0;
    // `views.js` moves the cells and relabels the axes when the views' order menu changes
    // (data-off, data-cs: the geometry; data-r, data-c: a cell's ranks; data-k: a label's slot)
    write!(
        h,
        "<svg class=\"hm\" data-off=\"{off}\" data-cs=\"{cs}\" width=\"{size}\" height=\"{}\" role=\"img\">",
        size + 10.0
    )?;
    write!(
        h,
        "<text x=\"{off}\" y=\"12\">{}</text><text x=\"2\" y=\"{}\">{}</text>",
        esc(col_title),
        off - 6.0,
        esc(row_title)
    )?;
    let label_every = (n as f64 / 16.0).ceil().max(1.0) as u32;
    for k in 0..n {
        if k % label_every == 0 {
            write!(
                h,
                "<text class=\"hl\" data-k=\"{k}\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{k}</text><text class=\"hl\" data-k=\"{k}\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{k}</text>",
                off + cs * (k as f64 + 0.5),
                off - 6.0,
                off - 4.0,
                off + cs * (k as f64 + 0.5) + 4.0
            )?;
        }
    }
    write!(
        h,
        "<rect x=\"{off}\" y=\"{off}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#fff\" stroke=\"#ccc\"/>",
        cs * n as f64,
        cs * n as f64
    )?;
    for (row, col, v, label) in cells {
        let x = if max > 0.0 { v / max } else { 0.0 };
        write!(
            h,
            "<rect data-r=\"{row}\" data-c=\"{col}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{cs:.1}\" height=\"{cs:.1}\" fill=\"{}\"><title>{} {row} → {} {col}: {}</title></rect>",
            off + cs * *col as f64,
            off + cs * *row as f64,
            heat(0.15 + 0.85 * x),
            esc(row_title),
            esc(col_title),
            esc(label)
        )?;
    }
    write!(h, "</svg>\n")
}

fn wait_matrix(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(w) = &r.wait_matrix else {
        return Ok(());
    };
    write!(h, "<h2>Wait-time matrix</h2>\n")?;
    if w.ranks == 0 {
        write!(h, "<p>No MPI ranks.</p>\n")?;
        return Ok(());
    }
    write!(
        h,
        "<p>Row rank waits for column rank, as % of the run's duration (cells below {} % \
         hidden).</p>\n",
        w.hide_below_percent
    )?;
    let cells: Vec<(u32, u32, f64, String)> = w
        .rows
        .iter()
        .flat_map(|row| {
            row.waits_for.iter().map(move |c| {
                (
                    row.rank,
                    c.rank,
                    c.percent,
                    format!("{:.2}% ({})", c.percent, secs(c.time_s)),
                )
            })
        })
        .collect();
    heatmap(h, w.ranks, &cells, "rank", "waits for rank")?;
    let totals: Vec<(String, f64)> = w
        .rows
        .iter()
        .map(|row| (format!("rank {}", row.rank), row.total_s))
        .collect();
    write!(h, "<h3>Total waiting per rank</h3>")?;
    bars(h, &totals, crate::rules::Unit::Sec)
}

fn traffic_matrix(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(t) = &r.traffic_matrix else {
        return Ok(());
    };
    write!(h, "<h2>Message traffic</h2>\n")?;
    if t.cells.is_empty() {
        write!(h, "<p>No point-to-point messages.</p>\n")?;
        return Ok(());
    }
    write!(
        h,
        "<p>Bytes sent from row rank to column rank (all communicators).</p>\n"
    )?;
    let cells: Vec<(u32, u32, f64, String)> = t
        .cells
        .iter()
        .map(|c| {
            (
                c.from,
                c.to,
                c.bytes as f64,
                format!(
                    "{} messages, {}, {}",
                    c.count,
                    bytes(c.bytes as f64),
                    c.rate_bytes_per_s
                        .map_or("rate unknown".to_string(), |x| format!("{}/s", bytes(x)))
                ),
            )
        })
        .collect();
    heatmap(h, t.ranks, &cells, "rank", "sends to rank")?;
    write!(
        h,
        "<table><tr><th>communicator</th><th>pairs</th><th>messages</th><th>bytes</th></tr>"
    )?;
    for c in &t.communicators {
        write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&c.communicator),
            c.cells.len(),
            c.cells.iter().map(|x| x.count).sum::<u64>(),
            bytes(c.cells.iter().map(|x| x.bytes).sum::<u64>() as f64)
        )?;
    }
    write!(h, "</table>\n")
}

fn overheads(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(o) = &r.overheads else {
        return Ok(());
    };
    write!(h, "<h2>Overhead classes</h2>\n")?;
    let t = &o.total;
    let parts = [
        ("data movement", t.data_movement_s),
        ("synchronisation", t.synchronisation_s),
        ("control of parallelism", t.control_of_parallelism_s),
        ("unidentified", t.unidentified_s),
    ];
    let vals: Vec<(String, f64)> = parts.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    write!(h, "<p>Of {} total time:</p>", secs(t.time_s))?;
    bars(h, &vals, crate::rules::Unit::Sec)?;
    let mut top: Vec<_> = o.callpaths.iter().collect();
    let sum = |c: &crate::analysis::overheads::CallpathOverheads| {
        c.data_movement_s + c.synchronisation_s + c.control_of_parallelism_s + c.unidentified_s
    };
    top.sort_by(|a, b| sum(b).total_cmp(&sum(a)));
    write!(
        h,
        "<table><tr><th>call path</th><th>data movement</th><th>synchronisation</th>\
         <th>control</th><th>unidentified</th></tr>"
    )?;
    for c in top.iter().take(10) {
        write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&r.path(c.callpath)),
            secs(c.data_movement_s),
            secs(c.synchronisation_s),
            secs(c.control_of_parallelism_s),
            secs(c.unidentified_s)
        )?;
    }
    write!(h, "</table>\n")
}

/// The root causes of the wait states (docs/root-causes.md): per wait-state metric, the call
/// paths and locations whose delay caused it, directly and through propagated waits.
fn root_causes(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(rc) = r.root_causes.as_ref().filter(|rc| !rc.causes.is_empty()) else {
        return Ok(());
    };
    write!(
        h,
        "<h2>Root causes</h2>\n<p>Who made the others wait: the delay costs of each kind of \
         wait state (Scalasca's root-cause analysis).</p>\n<table><tr><th>wait state</th>\
         <th>caused by</th><th>on location</th><th>cost</th><th>directly</th>\
         <th>through propagated waits</th><th>precision</th></tr>\n"
    )?;
    for c in &rc.causes {
        write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td></tr>\n",
            esc(&metric_name(r, &c.wait_state)),
            esc(&r.path(c.callpath)),
            c.location,
            secs(c.short_s + c.long_s),
            secs(c.short_s),
            secs(c.long_s),
            c.precision
        )?;
    }
    write!(h, "</table>\n")
}
