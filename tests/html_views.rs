//! The views of the run in the HTML report (issue 25): the numbers perfexpert computes for
//! them agree with the analysis (wait states per location, traffic per rank pair, the zoom
//! levels' columns), and the page, opened in headless chromium (Debian's `chromium`,
//! installed by .ci/run), runs its script without console errors, plays the animation and
//! marks a finding's worst instances when asked to.

mod common;

use common::{perfexpert, shipped_traces};
use perfexpert::analysis::pipeline::Options;
use perfexpert::analysis::views::Views;
use perfexpert::report::Report;
use perfexpert::rules::RuleSet;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The views and the report of a trace, and per (wait-state metric, location index) the
/// metric's own seconds there (its wait-state children's taken out), from the analysis.
fn views_of(trace: &Path) -> (Views, Report, BTreeMap<(String, usize), f64>) {
    let t = perfexpert::open(trace).unwrap();
    let opts = Options {
        structure: true,
        views: true,
        ..Options::new(RuleSet::load(&[]).unwrap())
    };
    let outcome = perfexpert::analyse_trace(t, opts, |w| {
        let a = w.analysis;
        let mut own = BTreeMap::new();
        for &k in &a.order {
            let id = &a.rules.rules[k].info.id;
            let kids: Vec<usize> = (w.findings.iter())
                .filter(|f| f.wait_state)
                .filter_map(|f| a.rules.index_of(&f.metric))
                .filter(|&j| a.rules.rules[j].info.parent.as_deref() == Some(id.as_str()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            for l in 0..a.nloc {
                let v: f64 = (0..a.ncnode as u32)
                    .map(|c| {
                        a.value(k, c, l as u32)
                            - kids.iter().map(|&j| a.value(j, c, l as u32)).sum::<f64>()
                    })
                    .sum();
                own.insert((id.clone(), l), v);
            }
        }
        (Report::of(w), own)
    })
    .unwrap();
    let (mut report, own) = outcome.view;
    let views = outcome.extras.views.clone().expect("views asked for");
    report.add_extras(outcome.extras);
    (views, report, own)
}

#[test]
fn wait_states_on_the_timeline_add_up_to_the_analysis() {
    let mut checked = 0;
    for (name, path) in shipped_traces() {
        let (v, _, own) = views_of(&path);
        for (k, c) in v.classes.iter().enumerate() {
            let Some(m) = &c.metric else { continue };
            for row in &v.locations {
                let want = own[&(m.clone(), row.index)];
                let got = row.by_class[k];
                assert!(
                    (got - want).abs() <= 1e-6 * want.abs().max(1e-3),
                    "{name}: {m} on location {}: timeline {got}, analysis {want}",
                    row.index
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "{checked} (metric, location) pairs checked");
}

#[test]
fn traffic_per_frame_adds_up_to_the_traffic_matrix() {
    for trace in ["testdata/scorep/mixed8", "testdata/scorep/npb_lu_S"] {
        let (v, r, _) = views_of(trace.as_ref());
        let mut sum: BTreeMap<(u32, u32), (f64, u64)> = BTreeMap::new();
        for f in &v.traffic {
            for c in &f.cells {
                let x = sum.entry((c.0, c.1)).or_default();
                x.0 += c.2;
                x.1 += c.3;
            }
        }
        let want: BTreeMap<(u32, u32), (f64, u64)> = (r.traffic_matrix.unwrap().cells.iter())
            .map(|c| ((c.from, c.to), (c.bytes as f64, c.count)))
            .collect();
        assert_eq!(sum, want, "{trace}");
        assert!(!want.is_empty(), "{trace} has messages");
        // every message once in the sample when there are few, and frames cover the run
        assert_eq!(
            v.messages.len() as u64,
            v.messages_total.div_ceil(v.message_stride)
        );
        assert_eq!(v.windows.first(), Some(&0.0));
        assert!((v.windows.last().unwrap() - v.duration_s).abs() < 1e-9);
        // the orderings are permutations of the ranks
        for o in &v.orders {
            let mut p = o.ranks.clone();
            p.sort_unstable();
            assert_eq!(p, (0..v.ranks).collect::<Vec<_>>(), "{trace}: {}", o.name);
        }
    }
}

/// The run-length coded cells of one level row: how many columns it covers.
fn columns_of(row: &[u8]) -> u64 {
    let mut i = 0;
    let mut n = 0u64;
    let varint = |i: &mut usize| {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = row[*i];
            *i += 1;
            v |= ((b & 0x7F) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                return v;
            }
        }
    };
    while i < row.len() {
        let cell = row[i];
        i += 1;
        assert!(
            cell == 0xF0 || (cell >> 4) < 15 && cell & 15 >= 1,
            "cell {cell:#x}"
        );
        varint(&mut i);
        n += varint(&mut i);
    }
    n
}

#[test]
fn every_zoom_level_covers_the_run_for_every_location() {
    let (v, _, _) = views_of("testdata/scorep/npb_lu_S".as_ref());
    assert!(v.levels.len() > 1, "{} levels", v.levels.len());
    for (k, lev) in v.levels.iter().enumerate() {
        assert_eq!(lev.columns, 1024 << k);
        assert_eq!(lev.rows.len(), v.locations.len());
        for row in &lev.rows {
            assert_eq!(columns_of(row), lev.columns as u64);
        }
    }
    assert!(v.pieces.is_empty(), "too many events to keep each stretch");
    assert!(v.states.iter().all(|f| f.len() == v.locations.len()));
    assert_eq!(v.states.len() + 1, v.windows.len());
    // a small trace: every stretch kept, each inside the run, the same time as the rows
    let (v, _, _) = views_of("testdata/scorep/ls".as_ref());
    assert!(!v.pieces.is_empty());
    for row in &v.locations {
        let drawn: f64 = (v.pieces.iter())
            .filter(|p| p.row as usize == row.index)
            .map(|p| p.end_s - p.start_s)
            .sum();
        let total: f64 = row.by_class.iter().sum();
        assert!((drawn - total).abs() < 1e-6, "{drawn} {total}");
    }
}

#[test]
fn the_page_has_the_views_and_the_json_report_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let json = dir.path().join("r.json");
    for (f, out) in [("html", &page), ("json", &json)] {
        let (code, _, err) = perfexpert(&[
            "run",
            "testdata/scorep/mixed8",
            "-q",
            "--format",
            f,
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
    }
    let h = std::fs::read_to_string(&page).unwrap();
    for needle in [
        "<section id=\"timeline\">",
        "<section id=\"animations\">",
        "<section id=\"process-graph\">",
        "id=\"views-data\"",
        "Late Sender <code>mpi_latesender</code>",
        "The timeline's numbers",
        "This frame's numbers",
        "The pies' numbers",
    ] {
        assert!(h.contains(needle), "{needle} missing");
    }
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(
        !j.contains("views") && !j.contains("kiviat"),
        "frames in the JSON"
    );
}

fn chromium() -> Option<PathBuf> {
    common::chromium("the views were not checked in a browser")
}

/// Open `url` in headless chromium with virtual time for the page's timers: (the DOM after
/// them, console messages).
fn open(chrome: &Path, url: &str, extra: &[&str]) -> (String, Vec<String>) {
    let mut args = vec!["--window-size=1200,2600", "--virtual-time-budget=4000"];
    args.extend_from_slice(extra);
    let (out, console, _) = common::headless(chrome, url, &args);
    (out, console)
}

/// The text of the element with id `id` in a dumped DOM.
fn text_of<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id}"));
    let rest = &dom[at..];
    let start = rest.find('>').unwrap() + 1;
    let end = rest[start..].find('<').unwrap() + start;
    &rest[start..end]
}

#[test]
fn the_views_play_and_mark_a_finding_in_chromium() {
    let Some(chrome) = chromium() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for trace in ["testdata/scorep/ls", "testdata/scorep/npb_lu_S"] {
        let page = dir.path().join("r.html");
        let (code, _, err) = perfexpert(&[
            "run",
            trace,
            "-q",
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let url = format!("file://{}", page.display());
        // as loaded: frame 1, the whole run
        let (dom, console) = open(&chrome, &url, &["--dump-dom"]);
        assert!(console.is_empty(), "{trace}: {console:?}");
        assert!(
            text_of(&dom, "an-label").starts_with("frame 1 of "),
            "{trace}"
        );
        let whole = text_of(&dom, "tl-range").to_string();
        assert!(whole.starts_with("0.000 µs – "), "{trace}: {whole}");
        assert_eq!(text_of(&dom, "an-play"), "play");
        // play pressed and the first finding clicked: frames advance (5 a second of virtual
        // time), the timeline zooms to the finding's worst instances
        let (dom, console) = open(&chrome, &format!("{url}?play=1&finding=0"), &["--dump-dom"]);
        assert!(console.is_empty(), "{trace}: {console:?}");
        let label = text_of(&dom, "an-label");
        let frame: usize = label["frame ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(frame > 5, "{trace}: {label}");
        assert_ne!(
            text_of(&dom, "tl-range"),
            whole,
            "{trace}: no zoom to the finding"
        );
        assert!(
            dom.contains("<p>Processes: "),
            "{trace}: no text alternative"
        );
        // hovering the timeline says what is there: a script added to the page moves the
        // mouse onto rank 1's row and copies the tooltip into an attribute
        let hover = dir.path().join("hover.html");
        let probe = "<script>var cv=document.getElementById('tl-canvas'),rc=cv.getBoundingClientRect();\
            cv.dispatchEvent(new MouseEvent('mousemove',{clientX:rc.left+600,clientY:rc.top+25,bubbles:true}));\
            document.body.setAttribute('data-tip',document.getElementById('tip').textContent);</script></body>";
        let h = std::fs::read_to_string(&page).unwrap();
        std::fs::write(&hover, h.replace("</body>", probe)).unwrap();
        let (dom, console) = open(
            &chrome,
            &format!("file://{}", hover.display()),
            &["--dump-dom"],
        );
        assert!(console.is_empty(), "{trace}: {console:?}");
        let tip = dom.split("data-tip=\"").nth(1).unwrap_or_default();
        for needle in [
            "rank 1",
            "region",
            "call path: main/",
            "start ",
            "duration ",
        ] {
            assert!(tip.contains(needle), "{trace}: tooltip {tip}");
        }
        // and a screenshot of it, not blank
        let shot = dir.path().join("r.png");
        let _ = std::fs::remove_file(&shot);
        let (_, console) = open(
            &chrome,
            &format!("{url}?play=1&finding=0"),
            &[&format!("--screenshot={}", shot.display())],
        );
        assert!(console.is_empty(), "{trace}: {console:?}");
        let size = std::fs::metadata(&shot).map_or(0, |m| m.len());
        assert!(size > 50_000, "{trace}: screenshot of {size} bytes");
    }
}

/// The static wait-time and traffic heat maps follow the views' order menu: in a
/// non-identity order, each cell sits at its ranks' positions in that order and each axis
/// label names the rank at its position.
#[test]
fn the_heat_maps_follow_the_chosen_order_in_chromium() {
    let Some(chrome) = chromium() else {
        return;
    };
    let trace = Path::new("testdata/scorep/npb_lu_S");
    let (views, _, _) = views_of(trace);
    let Some(k) =
        (views.orders.iter()).position(|o| o.ranks.iter().enumerate().any(|(i, &r)| r != i as u32))
    else {
        panic!(
            "npb_lu_S has an order that is not by rank: {:?}",
            views.orders.iter().map(|o| &o.ranks).collect::<Vec<_>>()
        );
    };
    let order = &views.orders[k].ranks;
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let (code, _, err) = perfexpert(&[
        "run",
        trace.to_str().unwrap(),
        "-q",
        "--format",
        "html",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (dom, console) = open(
        &chrome,
        &format!("file://{}?order={k}", page.display()),
        &["--dump-dom"],
    );
    assert!(console.is_empty(), "{console:?}");
    let attr = |tag: &str, name: &str| -> f64 {
        let v = tag
            .split(&format!(" {name}=\""))
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        v.parse().unwrap()
    };
    let maps: Vec<&str> = dom.split("<svg class=\"hm\"").skip(1).collect();
    assert_eq!(maps.len(), 2, "the wait-time and the traffic heat map");
    let pos = |r: u32| order.iter().position(|&x| x == r).unwrap() as f64;
    let mut cells = 0;
    for m in maps {
        let m = m.split("</svg>").next().unwrap();
        let head = m.split('>').next().unwrap();
        let (off, cs) = (attr(head, "data-off"), attr(head, "data-cs"));
        for rect in m.split("<rect data-r=").skip(1) {
            let tag = format!(" data-r={}", rect.split('>').next().unwrap());
            let (r, c) = (attr(&tag, "data-r") as u32, attr(&tag, "data-c") as u32);
            assert!(
                (attr(&tag, "x") - (off + cs * pos(c))).abs() < 0.11,
                "{tag}"
            );
            assert!(
                (attr(&tag, "y") - (off + cs * pos(r))).abs() < 0.11,
                "{tag}"
            );
            cells += 1;
        }
        for label in m.split("<text class=\"hl\" data-k=\"").skip(1) {
            let slot: usize = label.split('"').next().unwrap().parse().unwrap();
            let text = label.split('>').nth(1).unwrap().split('<').next().unwrap();
            assert_eq!(text, order[slot].to_string(), "label at slot {slot}");
        }
    }
    assert!(cells > 0, "cells in the heat maps");
}
