//! The views' data as one JSON object inside the page (read by `views.js`), and the
//! timeline section: a canvas the script draws, its controls, the legend, and the text
//! alternative (time per class per location, as a table).

use super::{esc, secs};
use crate::analysis::views::Views;
use crate::report::Report;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;

/// Colour-blind-safe colours (Okabe–Ito, then Paul Tol's muted and dark ones), one per
/// class in class order.
pub const PALETTE: [&str; 15] = [
    "#56B4E9", "#F0E442", "#009E73", "#E69F00", "#CC79A7", "#D55E00", "#0072B2", "#882255",
    "#332288", "#AA4499", "#999933", "#661100", "#44AA99", "#888888", "#117733",
];

/// The label of each location: "rank 3", "rank 3.1" (thread 1), or its name.
pub fn labels(r: &Report) -> Vec<String> {
    (r.locations.iter())
        .map(|l| match (l.rank, l.thread) {
            (Some(k), 0) => format!("rank {k}"),
            (Some(k), t) => format!("rank {k}.{t}"),
            (None, _) => l.name.clone(),
        })
        .collect()
}

/// Standard base64 (the level rows are bytes): four bytes out per three in, each group
/// appended at once (not a character at a time).
fn base64(b: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digit = |n: u32, k: u32| A[(n >> (18 - 6 * k) & 63) as usize];
    let mut o: Vec<u8> = Vec::with_capacity(b.len().div_ceil(3) * 4);
    let mut groups = b.chunks_exact(3);
    for c in &mut groups {
        let n = (c[0] as u32) << 16 | (c[1] as u32) << 8 | c[2] as u32;
        o.extend_from_slice(&[digit(n, 0), digit(n, 1), digit(n, 2), digit(n, 3)]);
    }
    match *groups.remainder() {
        [x] => {
            let n = (x as u32) << 16;
            o.extend_from_slice(&[digit(n, 0), digit(n, 1), b'=', b'=']);
        }
        [x, y] => {
            let n = (x as u32) << 16 | (y as u32) << 8;
            o.extend_from_slice(&[digit(n, 0), digit(n, 1), digit(n, 2), b'=']);
        }
        _ => {}
    }
    // the digits are ASCII
    String::from_utf8(o).unwrap_or_default()
}

/// Seconds rounded to 0.1 µs of a run (the page needs no more; keeps it small).
fn s(x: f64) -> Value {
    json!((x * 1e7).round() / 1e7)
}

/// The data object of the page.
pub fn data(r: &Report, v: &Views) -> String {
    let row_of: HashMap<u64, usize> = (r.locations.iter().enumerate())
        .map(|(i, l)| (l.id, i))
        .collect();
    let worst: Vec<Value> = (r.findings.iter())
        .filter(|f| f.wait_state)
        .take(super::TOP)
        .map(|f| {
            let u = super::unit_of(r, &f.metric);
            Value::Array(
                (f.worst_instances.iter())
                    .filter_map(|w| {
                        let row = row_of.get(&w.location)?;
                        Some(json!([row, s(w.time_s), super::fmt_unit(w.value, u)]))
                    })
                    .collect(),
            )
        })
        .collect();
    let node_of: HashMap<u32, usize> = (v.nodes.iter().enumerate())
        .flat_map(|(k, n)| n.ranks.iter().map(move |&r| (r, k)))
        .collect();
    let labels = labels(r);
    let d = json!({
        "dur": v.duration_s,
        "classes": v.classes.iter().enumerate().map(|(k, c)| json!({
            "name": c.name, "metric": c.metric, "group": c.group, "color": PALETTE[k % 15],
        })).collect::<Vec<_>>(),
        "rows": v.locations.iter().map(|l| json!({
            "label": labels.get(l.index).cloned().unwrap_or_default(),
            "rank": l.rank,
            "node": l.rank.and_then(|k| node_of.get(&k)),
        })).collect::<Vec<_>>(),
        "levels": v.levels.iter().map(|lev| json!({
            "cols": lev.columns,
            "rows": lev.rows.iter().map(|b| base64(b)).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "pieces": v.pieces.iter().map(|p| json!([
            p.row, s(p.start_s), s(p.end_s), p.cnode, p.class,
            p.waits.iter().map(|w| json!([w.0, (w.1 * 1000.0).round() / 1000.0])).collect::<Vec<_>>(),
        ])).collect::<Vec<_>>(),
        "cp": v.callpaths.iter().map(|(c, p)| (c.to_string(), json!(p))).collect::<serde_json::Map<_, _>>(),
        "msgs": v.messages.iter().map(|m| json!([m.from, m.to, s(m.send_s), s(m.recv_s), m.bytes])).collect::<Vec<_>>(),
        "msgTotal": v.messages_total,
        "msgStride": v.message_stride,
        "colls": v.collectives.iter().map(|c| json!([s(c.time_s), c.op, c.locations])).collect::<Vec<_>>(),
        "collTotal": v.collectives_total,
        "win": v.windows.iter().map(|&x| s(x)).collect::<Vec<_>>(),
        "winPhase": v.window_phase,
        "states": v.states.iter().map(|f| f.iter().flat_map(|&(c, p)| [c, p]).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "traffic": v.traffic.iter().map(|f| f.cells.iter().map(|c| json!([c.0, c.1, c.2, c.3])).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "waits": v.waits.iter().map(|f| f.cells.iter().map(|c| json!([c.0, c.1, s(c.2)])).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "ranks": v.ranks,
        "nodes": v.nodes.iter().map(|n| json!({"name": n.name, "ranks": n.ranks})).collect::<Vec<_>>(),
        "kiviat": v.kiviat,
        "orders": v.orders.iter().map(|o| json!({"name": o.name, "ranks": o.ranks})).collect::<Vec<_>>(),
        "worst": worst,
    });
    // inside <script>: no "</" may end the element early (found at most in a name: the
    // page's data is searched once, and copied only where one is)
    let d = d.to_string();
    match memchr::memmem::find(d.as_bytes(), b"</") {
        None => d,
        Some(_) => d.replace("</", "<\\/"),
    }
}

/// The legend: one swatch per class, wait states with their rule's id.
pub fn legend(v: &Views, h: &mut String) -> std::fmt::Result {
    write!(h, "<p class=\"legend\">")?;
    for (k, c) in v.classes.iter().enumerate() {
        // only the classes this run has
        if v.locations.iter().all(|l| l.by_class[k] <= 0.0) {
            continue;
        }
        let id = c
            .metric
            .as_ref()
            .map_or(String::new(), |m| format!(" <code>{}</code>", esc(m)));
        write!(
            h,
            "<span><i style=\"background:{}\"></i>{}{id}</span> ",
            PALETTE[k % 15],
            esc(&c.name)
        )?;
    }
    write!(h, "</p>\n")
}

/// The `timeline` section.
pub fn section(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(v) = &r.views else {
        return Ok(());
    };
    write!(
        h,
        "<h2>Timeline</h2>\n<p>One row per location, the run's {} across. {} \
         Lines: messages from send to receive{}; ticks: collective operations{}. Drag to pan, \
         wheel or buttons to zoom; hover for what a piece is; click a finding above to mark \
         its worst instances.</p>\n",
        secs(v.duration_s),
        if v.pieces.is_empty() {
            format!(
                "Each pixel column shows its dominant class, paler where the class fills less \
                 of it; {} zoom levels of {}–{} columns are precomputed.",
                v.levels.len(),
                v.levels.first().map_or(0, |l| l.columns),
                v.levels.last().map_or(0, |l| l.columns)
            )
        } else {
            "Every stretch between two events is drawn.".to_string()
        },
        if v.message_stride > 1 {
            format!(" (every {}th of {})", v.message_stride, v.messages_total)
        } else {
            String::new()
        },
        if v.collectives.len() as u64 != v.collectives_total {
            format!(
                " ({} of {} shown)",
                v.collectives.len(),
                v.collectives_total
            )
        } else {
            String::new()
        }
    )?;
    write!(
        h,
        "<div class=\"ctl\"><button data-z=\"in\">zoom in</button><button data-z=\"out\">zoom out\
         </button><button data-z=\"left\">◀</button><button data-z=\"right\">▶</button>\
         <button data-z=\"all\">whole run</button> {} <span id=\"tl-range\" class=\"muted\">\
         </span></div>\n",
        order_select("tl-order")
    )?;
    legend(v, h)?;
    write!(
        h,
        "<div class=\"tlwrap\"><canvas id=\"tl-canvas\" role=\"img\" aria-label=\"Timeline: time \
         per class per location, in the table below\"></canvas><div id=\"tip\"></div></div>\n"
    )?;
    class_table(r, v, h)
}

/// The select of the orderings of the rows and matrix axes.
pub fn order_select(id: &str) -> String {
    format!(
        "<label>order <select class=\"order\" id=\"{id}\"><option value=\"0\">by rank</option>\
         <option value=\"1\">by messages sent</option><option value=\"2\">by bytes sent</option>\
         <option value=\"3\">by affinity</option></select></label>"
    )
}

/// The text alternative of the timeline: seconds per class per location.
fn class_table(r: &Report, v: &Views, h: &mut String) -> std::fmt::Result {
    let labels = labels(r);
    let used: Vec<usize> = (0..v.classes.len())
        .filter(|&k| v.locations.iter().any(|l| l.by_class[k] > 0.0))
        .collect();
    write!(
        h,
        "<details><summary>The timeline's numbers: time per class per location</summary>\
         <table><tr><th>location</th>"
    )?;
    for &k in &used {
        write!(h, "<th>{}</th>", esc(&v.classes[k].name))?;
    }
    write!(h, "</tr>\n")?;
    for l in &v.locations {
        write!(
            h,
            "<tr><td>{}</td>",
            esc(labels.get(l.index).map_or("", |s| s))
        )?;
        for &k in &used {
            write!(h, "<td class=\"n\">{}</td>", secs(l.by_class[k]))?;
        }
        write!(h, "</tr>\n")?;
    }
    write!(h, "</table></details>\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_as_the_standard_says() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(&[0xF0, 0, 1, 255]), "8AAB/w==");
    }
}
