//! `compare --format html`: one self-contained page. Per paired location a strip of A's time
//! axis (inline SVG): the edits as ticks (substitute orange, delete red, insert blue, at
//! B's time mapped onto A's axis for inserts), each a link to its row in the edit list below;
//! the strip is shaded where the matched calls got slower (red) or faster (green).

use super::edits::Op;
use super::Comparison;
use crate::report::text::seconds;
use std::io::Write;

/// Edits listed per pair (the JSON has all of them).
const LISTED: usize = 500;
const WIDTH: f64 = 1000.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub fn write(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>perfexpert compare</title><style>\
         body{{font:14px sans-serif;margin:1.5em}} table{{border-collapse:collapse}} \
         td,th{{padding:2px 8px;text-align:right}} td.l,th.l{{text-align:left}} \
         tr:target{{background:#ffe08a}} svg{{display:block;margin:4px 0 12px}} \
         .k{{font-size:12px;color:#555}}</style></head><body>"
    )?;
    writeln!(
        out,
        "<h1>perfexpert compare</h1><p>A: {}<br>B: {}<br>similarity {:.2} %, {} location pair(s)</p>",
        esc(&c.a),
        esc(&c.b),
        c.similarity * 100.0,
        c.locations.len()
    )?;
    writeln!(
        out,
        "<p class=\"k\">Ticks: <span style=\"color:#e67e00\">substitute</span>, \
         <span style=\"color:#c62828\">delete</span>, <span style=\"color:#1565c0\">insert</span> \
         (click for the edit); shading: matched calls slower in B (red) or faster (green).</p>"
    )?;
    writeln!(out, "<section id=\"strips\"><h2>Time axis per rank</h2>")?;
    for (p_no, p) in c.locations.iter().enumerate() {
        strip(c, p_no, out)?;
        let _ = p;
    }
    writeln!(out, "</section>")?;
    edit_lists(c, out)?;
    time_table(c, out)?;
    writeln!(out, "</body></html>")
}

fn strip(c: &Comparison, p_no: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let p = &c.locations[p_no];
    let (t0, t1) = p.a_span_s;
    let span = (t1 - t0).max(f64::MIN_POSITIVE);
    writeln!(
        out,
        "<div>rank {} thread {} — {} ({} edits, {:.2} % similar)</div>",
        p.rank,
        p.thread,
        esc(&p.a_location),
        p.edits.len(),
        p.similarity * 100.0
    )?;
    writeln!(
        out,
        "<svg width=\"{WIDTH}\" height=\"26\" viewBox=\"0 0 {WIDTH} 26\" role=\"img\">\
         <rect width=\"{WIDTH}\" height=\"26\" fill=\"#f4f4f4\"/>"
    )?;
    let max = p.shade.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let bw = WIDTH / p.shade.len().max(1) as f64;
    for (k, &v) in p.shade.iter().enumerate() {
        if v == 0.0 || max == 0.0 {
            continue;
        }
        let colour = if v > 0.0 { "198,40,40" } else { "46,125,50" };
        writeln!(
            out,
            "<rect x=\"{:.1}\" width=\"{bw:.1}\" height=\"26\" fill=\"rgba({colour},{:.3})\">\
             <title>{}{}</title></rect>",
            k as f64 * bw,
            0.1 + 0.6 * v.abs() / max,
            if v > 0.0 { "+" } else { "" },
            seconds(v)
        )?;
    }
    for (e_no, e) in p.edits.iter().enumerate().take(LISTED) {
        let t = e.a_time_s.or(e.b_time_s).unwrap_or(t0);
        let x = ((t - t0) / span * WIDTH).clamp(0.0, WIDTH - 1.0);
        let colour = match e.op {
            Op::Substitute => "#e67e00",
            Op::Delete => "#c62828",
            Op::Insert => "#1565c0",
        };
        writeln!(
            out,
            "<a href=\"#e{p_no}-{e_no}\"><rect x=\"{x:.1}\" y=\"3\" width=\"2\" height=\"20\" \
             fill=\"{colour}\"><title>{} {}</title></rect></a>",
            e.op.name(),
            esc(&e.callpath)
        )?;
    }
    writeln!(out, "</svg>")
}

fn edit_lists(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(out, "<section id=\"edits\"><h2>Edits</h2>")?;
    for (p_no, p) in c.locations.iter().enumerate() {
        if p.edits.is_empty() {
            continue;
        }
        writeln!(
            out,
            "<h3>rank {} thread {}</h3><table><tr><th>op</th><th>A</th><th>B</th>\
             <th class=\"l\">A region</th><th class=\"l\">B region</th><th>A time</th>\
             <th>B time</th><th class=\"l\">call path</th></tr>",
            p.rank, p.thread
        )?;
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let t = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6} s"));
        for (e_no, e) in p.edits.iter().enumerate().take(LISTED) {
            writeln!(
                out,
                "<tr id=\"e{p_no}-{e_no}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td>\
                 <td class=\"l\">{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                e.op.name(),
                opt(e.a),
                opt(e.b),
                esc(e.a_region.as_deref().unwrap_or("")),
                esc(e.b_region.as_deref().unwrap_or("")),
                t(e.a_time_s),
                t(e.b_time_s),
                esc(&e.callpath)
            )?;
        }
        writeln!(out, "</table>")?;
        if p.edits.len() > LISTED {
            writeln!(
                out,
                "<p>… {} more (--format json lists all)</p>",
                p.edits.len() - LISTED
            )?;
        }
    }
    writeln!(out, "</section>")
}

fn time_table(c: &Comparison, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "<section id=\"times\"><h2>Time of matched calls</h2><table><tr><th>B − A</th><th>A</th>\
         <th>B</th><th>calls</th><th>rank</th><th class=\"l\">call path</th></tr>"
    )?;
    for d in c.time_differences.iter().take(50) {
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            seconds(d.diff_s),
            seconds(d.a_s),
            seconds(d.b_s),
            d.calls,
            d.rank,
            esc(&d.callpath)
        )?;
    }
    writeln!(out, "</table></section>")
}
