//! The process graph (ranks on a circle in affinity order, chords weighted by bytes; nodes
//! instead of ranks above `MAX_GRAPH_RANKS`), the mapping of ranks onto the nodes of the
//! system tree, and per-process pies of time by class group. Static SVG, each with its
//! numbers in a title and a table.

use super::timeline::{labels, PALETTE};
use super::{bytes, esc, secs};
use crate::analysis::views::Views;
use crate::report::Report;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Above this many ranks the graph shows nodes.
pub const MAX_GRAPH_RANKS: u32 = 256;
/// At most this many pies.
pub const MAX_PIES: usize = 256;
const GROUPS: [&str; 4] = ["computation", "communication", "synchronisation", "waiting"];
const GROUP_COLORS: [&str; 4] = ["#56B4E9", "#F0E442", "#009E73", "#D55E00"];

/// The `process-graph` section.
pub fn section(r: &Report, h: &mut String) -> std::fmt::Result {
    let Some(v) = &r.views else {
        return Ok(());
    };
    write!(h, "<h2>Processes: graph, mapping, time</h2>\n")?;
    graph(v, h)?;
    mapping(v, h)?;
    pies(r, v, h)
}

/// (labels, node of each vertex, edges between vertices) of ranks or, above the bound, nodes.
type Vertices = (Vec<String>, Vec<usize>, Vec<(usize, usize, u64, u64)>);

fn vertices(v: &Views) -> Vertices {
    let mut node_of = vec![0usize; v.ranks as usize];
    for (k, n) in v.nodes.iter().enumerate() {
        for &r in &n.ranks {
            node_of[r as usize] = k;
        }
    }
    if v.ranks <= MAX_GRAPH_RANKS {
        let order = v.orders.iter().find(|o| o.name == "affinity");
        let order: Vec<u32> = order.map_or((0..v.ranks).collect(), |o| o.ranks.clone());
        let mut pos = vec![0usize; v.ranks as usize];
        for (i, &r) in order.iter().enumerate() {
            pos[r as usize] = i;
        }
        let labels = order.iter().map(|r| format!("rank {r}")).collect();
        let nodes = order.iter().map(|&r| node_of[r as usize]).collect();
        let edges = (v.edges.iter())
            .map(|e| (pos[e.a as usize], pos[e.b as usize], e.bytes, e.messages))
            .collect();
        return (labels, nodes, edges);
    }
    let mut agg: BTreeMap<(usize, usize), (u64, u64)> = BTreeMap::new();
    for e in &v.edges {
        let (a, b) = (node_of[e.a as usize], node_of[e.b as usize]);
        if a != b {
            let x = agg.entry((a.min(b), a.max(b))).or_default();
            x.0 += e.bytes;
            x.1 += e.messages;
        }
    }
    (
        v.nodes.iter().map(|n| n.name.clone()).collect(),
        (0..v.nodes.len()).collect(),
        agg.into_iter()
            .map(|((a, b), x)| (a, b, x.0, x.1))
            .collect(),
    )
}

fn graph(v: &Views, h: &mut String) -> std::fmt::Result {
    let (labels, node, edges) = vertices(v);
    let n = labels.len();
    if n == 0 || edges.is_empty() {
        return write!(
            h,
            "<p>No point-to-point messages: no communication graph.</p>\n"
        );
    }
    let what = if v.ranks <= MAX_GRAPH_RANKS {
        "ranks, in affinity order"
    } else {
        "nodes (too many ranks to draw one by one)"
    };
    write!(
        h,
        "<h3>Communication graph</h3><p>The {what} on a circle, colour by node; a chord's \
         width grows with the bytes between its ends (both directions).</p>\n"
    )?;
    let (size, c) = (520.0, 260.0);
    let rad = 200.0;
    let at = |i: usize| {
        let a = std::f64::consts::TAU * i as f64 / n as f64 - std::f64::consts::FRAC_PI_2;
        (c + rad * a.cos(), c + rad * a.sin(), a)
    };
    let max = edges.iter().map(|e| e.2).max().unwrap_or(1).max(1) as f64;
    write!(
        h,
        "<svg width=\"{size}\" height=\"{size}\" role=\"img\" id=\"graph\">\
         <title>Communication graph: {n} vertices, {} edges (table below)</title>",
        edges.len()
    )?;
    for &(a, b, by, m) in &edges {
        let ((x0, y0, _), (x1, y1, _)) = (at(a), at(b));
        let w = 0.6 + 7.0 * (by as f64 / max).sqrt();
        write!(
            h,
            "<path d=\"M{x0:.1},{y0:.1} Q{:.1},{:.1} {x1:.1},{y1:.1}\" fill=\"none\" stroke=\"#444\" \
             stroke-opacity=\"0.45\" stroke-width=\"{w:.2}\"><title>{} ↔ {}: {}, {m} messages\
             </title></path>",
            // bent halfway towards the centre
            (x0 + x1) / 4.0 + c / 2.0,
            (y0 + y1) / 4.0 + c / 2.0,
            esc(&labels[a]),
            esc(&labels[b]),
            bytes(by as f64)
        )?;
    }
    let r = (300.0 / n as f64).clamp(2.0, 9.0);
    for (i, l) in labels.iter().enumerate() {
        let (x, y, a) = at(i);
        write!(
            h,
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" fill=\"{}\" stroke=\"#222\" \
             stroke-width=\"0.5\"><title>{}</title></circle>",
            PALETTE[node[i] % 15],
            esc(l)
        )?;
        if n <= 64 {
            let (tx, ty) = (c + (rad + 16.0) * a.cos(), c + (rad + 16.0) * a.sin() + 4.0);
            let short = l.strip_prefix("rank ").unwrap_or(l);
            write!(
                h,
                "<text x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\">{}</text>",
                esc(short)
            )?;
        }
    }
    write!(h, "</svg>\n")?;
    let mut top = edges.clone();
    top.sort_by_key(|e| (std::cmp::Reverse(e.2), e.0, e.1));
    write!(
        h,
        "<details><summary>The graph's numbers: the {} heaviest edges of {}</summary><table>\
         <tr><th>between</th><th>and</th><th>bytes</th><th>messages</th></tr>",
        top.len().min(20),
        top.len()
    )?;
    for &(a, b, by, m) in top.iter().take(20) {
        write!(
            h,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{m}</td></tr>",
            esc(&labels[a]),
            esc(&labels[b]),
            bytes(by as f64)
        )?;
    }
    write!(h, "</table></details>\n")
}

fn mapping(v: &Views, h: &mut String) -> std::fmt::Result {
    write!(
        h,
        "<h3>Mapping onto nodes</h3><p>The ranks on each node of the system tree.</p>\
         <div class=\"map\">"
    )?;
    for (k, n) in v.nodes.iter().enumerate() {
        write!(
            h,
            "<div class=\"node\" style=\"border-color:{}\"><b>{}</b> <span class=\"muted\">{} \
             rank(s)</span><div>",
            PALETTE[k % 15],
            esc(&n.name),
            n.ranks.len()
        )?;
        for r in n.ranks.iter().take(512) {
            write!(h, "<span class=\"chip\">{r}</span>")?;
        }
        if n.ranks.len() > 512 {
            write!(h, " … {} more", n.ranks.len() - 512)?;
        }
        write!(h, "</div></div>")?;
    }
    write!(h, "</div>\n")
}

/// Per process (rank; locations without one on their own): seconds per class group.
fn processes(r: &Report, v: &Views) -> Vec<(String, [f64; 4])> {
    let labels = labels(r);
    let mut by: BTreeMap<(u32, String), [f64; 4]> = BTreeMap::new();
    for l in &v.locations {
        let key = match l.rank {
            Some(k) => (k, format!("rank {k}")),
            None => (u32::MAX, labels.get(l.index).cloned().unwrap_or_default()),
        };
        let x = by.entry(key).or_default();
        for (k, c) in v.classes.iter().enumerate() {
            x[c.group as usize % 4] += l.by_class[k];
        }
    }
    by.into_iter().map(|((_, n), x)| (n, x)).collect()
}

fn pies(r: &Report, v: &Views, h: &mut String) -> std::fmt::Result {
    let procs = processes(r, v);
    write!(h, "<h3>Time by class, per process</h3><p class=\"legend\">")?;
    for (g, c) in GROUPS.iter().zip(GROUP_COLORS) {
        write!(h, "<span><i style=\"background:{c}\"></i>{g}</span> ")?;
    }
    write!(
        h,
        "</p><p class=\"muted\">Communication: MPI and OpenMP calls; synchronisation: \
         barriers and critical sections; waiting: the wait states (threads of a process \
         added).{}</p><div class=\"pies\">",
        if procs.len() > MAX_PIES {
            format!(" The first {MAX_PIES} of {} processes.", procs.len())
        } else {
            String::new()
        }
    )?;
    for (name, x) in procs.iter().take(MAX_PIES) {
        pie(name, x, h)?;
    }
    write!(
        h,
        "</div>\n<details><summary>The pies' numbers</summary><table><tr><th>process</th>"
    )?;
    for g in GROUPS {
        write!(h, "<th>{g}</th>")?;
    }
    write!(h, "</tr>")?;
    for (name, x) in &procs {
        write!(h, "<tr><td>{}</td>", esc(name))?;
        for t in x {
            write!(h, "<td class=\"n\">{}</td>", secs(*t))?;
        }
        write!(h, "</tr>")?;
    }
    write!(h, "</table></details>\n")
}

fn pie(name: &str, x: &[f64; 4], h: &mut String) -> std::fmt::Result {
    let total: f64 = x.iter().sum();
    let title: Vec<String> = (GROUPS.iter().zip(x))
        .map(|(g, t)| {
            let pct = if total > 0.0 { 100.0 * t / total } else { 0.0 };
            format!("{g} {} ({pct:.1}%)", secs(*t))
        })
        .collect();
    write!(
        h,
        "<figure class=\"pie\"><svg width=\"64\" height=\"64\" viewBox=\"-1 -1 2 2\" \
         role=\"img\"><title>{}: {}</title>",
        esc(name),
        title.join(", ")
    )?;
    let mut a0 = 0.0f64;
    for (k, t) in x.iter().enumerate() {
        if total <= 0.0 || *t <= 0.0 {
            continue;
        }
        let frac = t / total;
        if frac > 0.9999 {
            write!(h, "<circle r=\"1\" fill=\"{}\"/>", GROUP_COLORS[k])?;
            continue;
        }
        let a1 = a0 + frac * std::f64::consts::TAU;
        let p = |a: f64| (a.sin(), -a.cos());
        let ((x0, y0), (x1, y1)) = (p(a0), p(a1));
        write!(
            h,
            "<path d=\"M0,0 L{x0:.4},{y0:.4} A1,1 0 {},1 {x1:.4},{y1:.4} Z\" fill=\"{}\"/>",
            u8::from(frac > 0.5),
            GROUP_COLORS[k]
        )?;
        a0 = a1;
    }
    write!(h, "</svg><figcaption>{}</figcaption></figure>", esc(name))
}
