//! `perfexpert diff A B`: the per-metric, per-call-path difference of two reports (JSON
//! reports of docs/report-json.md or `.cubex` archives, ours or Scalasca's), ranked by
//! absolute change. Call paths are matched by their region names from the root (ids differ
//! between runs), metrics by id; a value missing on one side counts as 0.

use crate::error::{Error, Place, Result};
use crate::report::cubex::{err, Cube};
use crate::rules::Unit;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One report reduced to what a comparison needs: per (metric, call path) the value summed
/// over all locations (exclusive along call paths, inclusive along the metric tree).
#[derive(Debug, Default)]
pub struct Summary {
    /// Metric id → (display name, unit, position in the report).
    pub metrics: HashMap<String, (String, Unit, usize)>,
    /// Metric id → its parent's id in the metric tree.
    pub parents: HashMap<String, String>,
    pub values: HashMap<(String, String), f64>,
}

#[derive(Deserialize)]
struct JsonReport {
    format_version: u32,
    metrics: Vec<JsonMetric>,
    callpaths: Vec<JsonCallpath>,
    values: Vec<JsonValue>,
}

#[derive(Deserialize)]
struct JsonMetric {
    id: String,
    name: String,
    unit: Unit,
    parent: Option<String>,
}

#[derive(Deserialize)]
struct JsonCallpath {
    id: u32,
    parent: Option<u32>,
    region: String,
}

#[derive(Deserialize)]
struct JsonValue {
    metric: String,
    callpath: u32,
    value: f64,
}

impl Summary {
    /// Read a report, telling JSON from `.cubex` by content.
    pub fn read(path: &Path) -> Result<Summary> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, "cannot read", e))?;
        if bytes.get(257..262) == Some(b"ustar") {
            return Ok(Summary::from_cube(&Cube::read(path)?));
        }
        match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => Summary::from_json(path, &bytes),
            _ => Err(err(
                path,
                Place::Byte(0),
                "expected a JSON report (perfexpert run --format json) or a .cubex archive",
            )),
        }
    }

    fn from_json(path: &Path, bytes: &[u8]) -> Result<Summary> {
        let r: JsonReport = serde_json::from_slice(bytes).map_err(|e| {
            err(
                path,
                Place::Line(e.line() as u64),
                format!("expected a perfexpert JSON report: {e}"),
            )
        })?;
        if r.format_version != 1 {
            return Err(err(
                path,
                Place::File,
                format!(
                    "JSON report format_version {} is not supported (expected 1)",
                    r.format_version
                ),
            ));
        }
        let n = r.callpaths.len();
        let bad = |what: String| err(path, Place::File, what);
        for (i, c) in r.callpaths.iter().enumerate() {
            if c.id as usize != i {
                return Err(bad(format!("callpaths[{i}] has id {}, expected {i}", c.id)));
            }
            if c.parent.is_some_and(|p| p >= c.id) {
                return Err(bad(format!(
                    "call path {i}: parent {:?} is not an earlier call path",
                    c.parent
                )));
            }
        }
        let mut paths: Vec<String> = Vec::with_capacity(n);
        for c in &r.callpaths {
            let p = match c.parent {
                Some(p) => format!("{}/{}", paths[p as usize], c.region),
                None => c.region.clone(),
            };
            paths.push(p);
        }
        let mut s = Summary::default();
        for (i, m) in r.metrics.iter().enumerate() {
            s.metrics.insert(m.id.clone(), (m.name.clone(), m.unit, i));
            if let Some(p) = &m.parent {
                s.parents.insert(m.id.clone(), p.clone());
            }
        }
        for v in &r.values {
            if !s.metrics.contains_key(&v.metric) {
                return Err(bad(format!(
                    "a value names the unknown metric {}",
                    v.metric
                )));
            }
            let path = paths.get(v.callpath as usize).ok_or_else(|| {
                bad(format!(
                    "a value names the unknown call path {}",
                    v.callpath
                ))
            })?;
            *s.values
                .entry((v.metric.clone(), path.clone()))
                .or_insert(0.0) += v.value;
        }
        Ok(s)
    }

    pub fn from_cube(c: &Cube) -> Summary {
        let mut s = Summary::default();
        for (i, m) in c.metrics.iter().enumerate() {
            s.metrics
                .insert(m.id.clone(), (m.disp_name.clone(), m.unit, i));
            if let Some(p) = m.parent.and_then(|p| c.metrics.get(p)) {
                s.parents.insert(m.id.clone(), p.id.clone());
            }
        }
        let paths: Vec<String> = (0..c.cnodes.len()).map(|k| c.path(k)).collect();
        let nloc = c.locations.len().max(1);
        for (m, rows) in c.metrics.iter().zip(&c.values) {
            for (&k, row) in rows.cnodes.iter().zip(rows.values.chunks(nloc)) {
                let v: f64 = row.iter().sum();
                if v != 0.0 {
                    *s.values
                        .entry((m.id.clone(), paths[k].clone()))
                        .or_insert(0.0) += v;
                }
            }
        }
        s
    }
}

/// One changed (metric, call path).
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    pub metric: String,
    pub name: String,
    pub unit: Unit,
    pub callpath: String,
    pub a: f64,
    pub b: f64,
    pub change: f64,
    /// A sub-metric changed by the same amount at this call path (Late Sender → Point-to-point
    /// → Communication → MPI → …): the text output leaves such changes out.
    pub implied: bool,
}

#[derive(Debug, Serialize)]
pub struct Diff {
    pub a: String,
    pub b: String,
    /// Metrics of both reports; grouped by unit (seconds, occurrences, bytes), each group by
    /// decreasing |change|.
    pub changes: Vec<Change>,
    /// Metrics present in only one of the reports.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
}

fn unit_rank(u: Unit) -> u8 {
    match u {
        Unit::Sec => 0,
        Unit::Occ => 1,
        Unit::Bytes => 2,
    }
}

pub fn diff(a_path: &Path, a: &Summary, b_path: &Path, b: &Summary) -> Diff {
    let mut scale: HashMap<&str, f64> = HashMap::new();
    for ((m, _), v) in a.values.iter().chain(&b.values) {
        let s = scale.entry(m.as_str()).or_insert(0.0);
        *s = s.max(v.abs());
    }
    let mut keys: Vec<&(String, String)> = a.values.keys().chain(b.values.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut changes: Vec<Change> = keys
        .into_iter()
        .filter_map(|k| {
            let va = a.values.get(k).copied().unwrap_or(0.0);
            let vb = b.values.get(k).copied().unwrap_or(0.0);
            a.metrics.get(&k.0)?;
            let (name, unit, _) = b.metrics.get(&k.0)?;
            // rounding noise (e.g. from converting inclusive values) is no change: below
            // 1e-9 of the larger value, or of the metric's largest value when one is ~0
            let scale = va
                .abs()
                .max(vb.abs())
                .max(scale.get(k.0.as_str()).copied().unwrap_or(0.0));
            let changed = (vb - va).abs() > 1e-9 * scale;
            changed.then(|| Change {
                metric: k.0.clone(),
                name: name.clone(),
                unit: *unit,
                callpath: k.1.clone(),
                a: va,
                b: vb,
                change: vb - va,
                implied: false,
            })
        })
        .collect();
    let order = |m: &str| {
        b.metrics
            .get(m)
            .or_else(|| a.metrics.get(m))
            .map_or(usize::MAX, |x| x.2)
    };
    changes.sort_by(|x, y| {
        unit_rank(x.unit)
            .cmp(&unit_rank(y.unit))
            .then(y.change.abs().total_cmp(&x.change.abs()))
            .then(order(&x.metric).cmp(&order(&y.metric)))
            .then(x.callpath.cmp(&y.callpath))
    });
    // a change is implied when a child metric changed by the same amount at the same call path
    let parent = |m: &str| b.parents.get(m).or_else(|| a.parents.get(m)).cloned();
    let mut child_changes: HashMap<(String, String), Vec<f64>> = HashMap::new();
    for c in &changes {
        if let Some(p) = parent(&c.metric) {
            child_changes
                .entry((p, c.callpath.clone()))
                .or_default()
                .push(c.change);
        }
    }
    for c in &mut changes {
        if let Some(kids) = child_changes.get(&(c.metric.clone(), c.callpath.clone())) {
            c.implied = kids
                .iter()
                .any(|&k| (k - c.change).abs() <= 1e-9 * k.abs().max(c.change.abs()));
        }
    }
    let only = |x: &Summary, y: &Summary| {
        let mut v: Vec<(usize, String)> = x
            .metrics
            .iter()
            .filter(|(id, _)| !y.metrics.contains_key(*id))
            .map(|(id, m)| (m.2, id.clone()))
            .collect();
        v.sort();
        v.into_iter().map(|(_, id)| id).collect()
    };
    Diff {
        a: a_path.display().to_string(),
        b: b_path.display().to_string(),
        changes,
        only_in_a: only(a, b),
        only_in_b: only(b, a),
    }
}

impl Diff {
    /// The terminal form: per unit, the `top` largest changes (0 = all).
    pub fn write_text(&self, top: usize, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use crate::report::text::fmt_value;
        writeln!(out, "perfexpert diff {} → {}", self.a, self.b)?;
        if self.changes.is_empty() {
            writeln!(out, "no metric changed at any call path")?;
        }
        let mut groups: BTreeMap<u8, Vec<&Change>> = BTreeMap::new();
        for c in self.changes.iter().filter(|c| !c.implied) {
            groups.entry(unit_rank(c.unit)).or_default().push(c);
        }
        for (u, list) in groups {
            let title = ["Time", "Counts", "Bytes"][u as usize];
            let shown = if top == 0 {
                list.len()
            } else {
                top.min(list.len())
            };
            writeln!(
                out,
                "\n{title}: {} changed (metric, call path), largest absolute change first{}",
                list.len(),
                if shown < list.len() {
                    format!(" (top {shown}; --top 0 for all)")
                } else {
                    String::new()
                }
            )?;
            writeln!(
                out,
                "{:>14} {:>14} {:>14}  metric / call path",
                "change", "A", "B"
            )?;
            for c in list.iter().take(shown) {
                let sign = if c.change > 0.0 { "+" } else { "" };
                writeln!(
                    out,
                    "{:>14} {:>14} {:>14}  {} ({})\n{:46}at {}",
                    format!("{sign}{}", fmt_value(c.change, c.unit)),
                    fmt_value(c.a, c.unit),
                    fmt_value(c.b, c.unit),
                    c.name,
                    c.metric,
                    "",
                    c.callpath
                )?;
            }
        }
        let implied = self.changes.iter().filter(|c| c.implied).count();
        if implied > 0 {
            writeln!(
                out,
                "\n{implied} further changes equal a change of one of their sub-metrics at the same \
                 call path (--format json lists them)"
            )?;
        }
        if !self.only_in_a.is_empty() {
            writeln!(out, "\nmetrics only in A: {}", self.only_in_a.join(", "))?;
        }
        if !self.only_in_b.is_empty() {
            writeln!(out, "\nmetrics only in B: {}", self.only_in_b.join(", "))?;
        }
        Ok(())
    }

    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self).map_err(std::io::Error::other)?;
        writeln!(out)
    }
}

/// A `--fail-on` threshold: `KEY:+10%` (B grew by more than 10 % of A), `KEY:+0.5s`
/// (by more than 0.5 seconds; also ms, us, ns), `KEY:+3` (by more than 3 in the key's unit),
/// `-` instead of `+` for a fall. The key is a metric id (`diff`) or a call path, region or
/// `time` (`compare`).
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub spec: String,
    pub key: String,
    /// +1: a growth breaches it, −1: a fall.
    pub sign: f64,
    pub amount: f64,
    pub relative: bool,
    /// Given in seconds (`s`, `ms`, `us`, `ns`).
    pub seconds: bool,
}

impl Threshold {
    pub fn parse(spec: &str) -> Result<Threshold> {
        let bad = |why: &str| {
            Error::Usage(format!(
                "--fail-on '{spec}': {why} (expected KEY:+N%, KEY:+Ns or KEY:+N, e.g. \
                 'mpi_latesender:+10%' or 'time:+0.5s')"
            ))
        };
        let (key, t) = spec.rsplit_once(':').ok_or_else(|| bad("no ':'"))?;
        if key.is_empty() {
            return Err(bad("no metric before ':'"));
        }
        let t = t.trim();
        let (sign, rest) = match t.as_bytes().first() {
            Some(b'+') => (1.0, &t[1..]),
            Some(b'-') => (-1.0, &t[1..]),
            _ => (1.0, t),
        };
        let (num, relative, scale, seconds) = if let Some(n) = rest.strip_suffix('%') {
            (n, true, 1.0, false)
        } else if let Some(n) = rest.strip_suffix("ms") {
            (n, false, 1e-3, true)
        } else if let Some(n) = rest.strip_suffix("us") {
            (n, false, 1e-6, true)
        } else if let Some(n) = rest.strip_suffix("ns") {
            (n, false, 1e-9, true)
        } else if let Some(n) = rest.strip_suffix('s') {
            (n, false, 1.0, true)
        } else {
            (rest, false, 1.0, false)
        };
        let amount: f64 = num
            .trim()
            .parse()
            .map_err(|_| bad(&format!("'{num}' is not a number")))?;
        if !amount.is_finite() || amount < 0.0 {
            return Err(bad("the amount must be a non-negative number"));
        }
        Ok(Threshold {
            spec: spec.to_string(),
            key: key.to_string(),
            sign,
            amount: amount * scale,
            relative,
            seconds,
        })
    }

    /// The breach message when B's value against A's passes the threshold, else None.
    pub fn check(&self, a: f64, b: f64, unit: Unit) -> Option<String> {
        let grow = self.sign * (b - a);
        let over = if self.relative {
            if a == 0.0 {
                grow > 0.0
            } else {
                grow > self.amount / 100.0 * a.abs()
            }
        } else {
            grow > self.amount
        };
        if !over {
            return None;
        }
        use crate::report::text::fmt_value;
        let rel = if a != 0.0 {
            format!(" ({:+.1}%)", (b - a) / a.abs() * 100.0)
        } else {
            String::new()
        };
        let sign = if b >= a { "+" } else { "-" };
        Some(format!(
            "{}: {} → {}, {sign}{}{rel}, past the threshold {}",
            self.key,
            fmt_value(a, unit),
            fmt_value(b, unit),
            fmt_value((b - a).abs(), unit),
            self.spec
        ))
    }
}

/// The outcome of one threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub threshold: Threshold,
    pub breach: Option<String>,
    /// What was compared, for the passing test case ("0.1 s → 0.1 s").
    pub detail: String,
}

/// JUnit XML: one test suite, one test case per threshold, failed where breached.
pub fn write_junit(
    suite: &str,
    verdicts: &[Verdict],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let failures = verdicts.iter().filter(|v| v.breach.is_some()).count();
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="{0}" tests="{1}" failures="{2}">"#,
        esc(suite),
        verdicts.len(),
        failures
    )?;
    writeln!(
        out,
        r#"  <testsuite name="{0}" tests="{1}" failures="{2}" errors="0" skipped="0">"#,
        esc(suite),
        verdicts.len(),
        failures
    )?;
    for v in verdicts {
        let name = esc(&v.threshold.spec);
        match &v.breach {
            None => writeln!(
                out,
                r#"    <testcase classname="{}" name="{name}"><system-out>{}</system-out></testcase>"#,
                esc(suite),
                esc(&v.detail)
            )?,
            Some(msg) => {
                writeln!(
                    out,
                    r#"    <testcase classname="{}" name="{name}">"#,
                    esc(suite)
                )?;
                writeln!(
                    out,
                    r#"      <failure message="{0}" type="threshold">{0}</failure>"#,
                    esc(msg)
                )?;
                writeln!(out, "    </testcase>")?;
            }
        }
    }
    writeln!(out, "  </testsuite>\n</testsuites>")
}

impl Summary {
    /// A metric's total over all call paths (0 when the report has no value of it).
    pub fn total(&self, metric: &str) -> f64 {
        let mut v: Vec<f64> = self
            .values
            .iter()
            .filter(|((m, _), _)| m == metric)
            .map(|(_, &x)| x)
            .collect();
        // a fixed order: the same sum for the same report
        v.sort_by(f64::total_cmp);
        v.iter().sum()
    }
}

/// The verdicts of `--fail-on` thresholds on two reports; a threshold naming a metric that
/// neither report has is an error.
pub fn gate(a: &Summary, b: &Summary, thresholds: &[Threshold]) -> Result<Vec<Verdict>> {
    use crate::report::text::fmt_value;
    thresholds
        .iter()
        .map(|t| {
            let unit = a
                .metrics
                .get(&t.key)
                .or_else(|| b.metrics.get(&t.key))
                .map(|m| m.1)
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "--fail-on '{}': neither report has the metric {}",
                        t.spec, t.key
                    ))
                })?;
            if t.seconds && unit != Unit::Sec {
                return Err(Error::Usage(format!(
                    "--fail-on '{}': {} is not measured in seconds",
                    t.spec, t.key
                )));
            }
            let (va, vb) = (a.total(&t.key), b.total(&t.key));
            Ok(Verdict {
                threshold: t.clone(),
                breach: t.check(va, vb, unit),
                detail: format!(
                    "{}: {} → {}",
                    t.key,
                    fmt_value(va, unit),
                    fmt_value(vb, unit)
                ),
            })
        })
        .collect()
}
