//! `perfexpert info TRACE [--json]`: what a trace holds.

use crate::model::*;
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

#[derive(Debug, Serialize)]
pub struct Info {
    pub path: String,
    pub format: &'static str,
    pub format_version: String,
    pub creator: String,
    pub machine: String,
    pub timer_resolution: u64,
    pub global_offset: u64,
    pub trace_length: u64,
    pub first_timestamp: Option<u64>,
    pub last_timestamp: Option<u64>,
    /// Seconds from the first to the last event.
    pub duration_s: f64,
    /// Every event record, counted as the official reader counts them (Paje: PajeNewEvent
    /// records, as `pj_dump` counts `Event` rows; the model's events are in `model_events`).
    pub events: u64,
    /// Paje only (formats.md §D): containers including the root, state intervals, matched
    /// links, variable pieces, as `pj_dump` counts them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containers: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub states: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variables: Option<u64>,
    /// Paje only: the events of the common model (Enter/Leave, messages, collectives).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_events: Option<u64>,
    /// Per kind, named as otf2-print names them.
    pub events_per_kind: BTreeMap<&'static str, u64>,
    /// Per location, keyed by the location's id in the trace.
    pub events_per_location: BTreeMap<String, u64>,
    pub system_tree: Vec<SystemTreeNode>,
    pub location_groups: Vec<LocationGroup>,
    pub locations: Vec<LocationInfo>,
    pub regions: Vec<RegionInfo>,
    pub communicators: Vec<CommInfo>,
    pub metrics: Vec<Metric>,
    pub definitions: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct LocationInfo {
    pub id: u64,
    pub name: String,
    pub kind: LocationKind,
    pub group: Option<String>,
    #[serde(skip)]
    pub group_index: Option<usize>,
    pub rank: Option<u32>,
    pub events: u64,
}

#[derive(Debug, Serialize)]
pub struct RegionInfo {
    pub id: u64,
    pub name: String,
    pub role: RegionRole,
    pub paradigm: Paradigm,
    pub source_file: String,
    pub begin_line: u32,
}

#[derive(Debug, Serialize)]
pub struct CommInfo {
    pub id: u64,
    pub name: String,
    pub paradigm: Paradigm,
    pub size: Option<usize>,
}

/// How many events of each kind `kinds` holds, by kind number: four tables filled side by
/// side (one event in four each), so that an increment does not wait for the previous one
/// of its kind a few events back (a store forwarded to the next load of the same counter).
fn count_kinds(kinds: &[EventKind]) -> [u64; 256] {
    let mut total = [0u64; 256];
    // u32 counters: parts of fewer than 2^32 events
    for part in kinds.chunks(1 << 30) {
        let mut c = [[0u32; 256]; 4];
        let mut quads = part.chunks_exact(4);
        for q in &mut quads {
            c[0][q[0] as usize] += 1;
            c[1][q[1] as usize] += 1;
            c[2][q[2] as usize] += 1;
            c[3][q[3] as usize] += 1;
        }
        for &k in quads.remainder() {
            c[0][k as usize] += 1;
        }
        for (i, t) in total.iter_mut().enumerate() {
            *t += c.iter().map(|x| x[i] as u64).sum::<u64>();
        }
    }
    total
}

impl Info {
    pub fn of(trace: &Trace) -> Info {
        let d = &trace.defs;
        let per_kind: Vec<[u64; 256]> = trace
            .events
            .par_iter()
            .map(|e| count_kinds(&e.kind))
            .collect();
        let mut events_per_kind = trace.native_event_kinds.clone();
        for k in EventKind::ALL
            .into_iter()
            .filter(|_| trace.native_event_kinds.is_empty())
        {
            let n: u64 = per_kind.iter().map(|c| c[k as usize]).sum();
            if n > 0 {
                events_per_kind.insert(k.print_name(), n);
            }
        }
        let span = trace.time_span();
        Info {
            path: trace.path.display().to_string(),
            format: trace.origin.format,
            format_version: trace.origin.format_version.clone(),
            creator: trace.origin.creator.clone(),
            machine: trace.origin.machine.clone(),
            timer_resolution: trace.timer_resolution,
            global_offset: trace.global_offset,
            trace_length: trace.trace_length,
            first_timestamp: span.map(|s| s.0),
            last_timestamp: span.map(|s| s.1),
            duration_s: span.map_or(0.0, |(a, b)| {
                b.saturating_sub(a) as f64 / trace.timer_resolution.max(1) as f64
            }),
            events: trace.paje.map_or(trace.event_count(), |p| p.events),
            containers: trace.paje.map(|p| p.containers),
            states: trace.paje.map(|p| p.states),
            links: trace.paje.map(|p| p.links),
            variables: trace.paje.map(|p| p.variables),
            model_events: trace.paje.map(|_| trace.event_count()),
            events_per_kind,
            events_per_location: d
                .locations
                .iter()
                .zip(&trace.events)
                .map(|(l, e)| (l.id.to_string(), e.len() as u64))
                .collect(),
            system_tree: d.system_tree.clone(),
            location_groups: d.location_groups.clone(),
            locations: d
                .locations
                .iter()
                .zip(&trace.events)
                .map(|(l, e)| LocationInfo {
                    id: l.id,
                    name: l.name.clone(),
                    kind: l.kind,
                    group: l.group.map(|g| d.location_groups[g].name.clone()),
                    group_index: l.group,
                    rank: l.rank,
                    events: e.len() as u64,
                })
                .collect(),
            regions: d
                .regions
                .iter()
                .map(|r| RegionInfo {
                    id: r.id,
                    name: r.name.clone(),
                    role: r.role,
                    paradigm: r.paradigm,
                    source_file: r.source_file.clone(),
                    begin_line: r.begin_line,
                })
                .collect(),
            communicators: d
                .comms
                .iter()
                .map(|c| CommInfo {
                    id: c.id,
                    name: c.name.clone(),
                    paradigm: c.paradigm,
                    size: c.size(),
                })
                .collect(),
            metrics: d.metrics.clone(),
            definitions: d.record_counts.clone(),
            warnings: trace.warnings.iter().map(|w| w.to_string()).collect(),
        }
    }

    pub fn write_text(&self, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "trace       {}", self.path)?;
        writeln!(
            out,
            "format      {}{}{}",
            self.format,
            if self.format_version.is_empty() {
                String::new()
            } else {
                format!(" {}", self.format_version)
            },
            if self.creator.is_empty() {
                String::new()
            } else {
                format!(", written by {}", self.creator)
            }
        )?;
        writeln!(
            out,
            "clock       {} ticks/s, duration {:.6} s",
            self.timer_resolution, self.duration_s
        )?;
        if let (Some(c), Some(st), Some(l), Some(v), Some(m)) = (
            self.containers,
            self.states,
            self.links,
            self.variables,
            self.model_events,
        ) {
            writeln!(
                out,
                "paje        {c} containers, {st} states, {l} links, {} events, {v} variables",
                self.events
            )?;
            writeln!(
                out,
                "events      {m} in {} locations (the common model)",
                self.locations.len()
            )?;
        } else {
            writeln!(
                out,
                "events      {} in {} locations",
                self.events,
                self.locations.len()
            )?;
        }
        for (k, n) in &self.events_per_kind {
            writeln!(out, "  {k:<32} {n:>12}")?;
        }
        writeln!(out, "\nsystem tree")?;
        let mut children: BTreeMap<Option<usize>, Vec<usize>> = BTreeMap::new();
        for (i, n) in self.system_tree.iter().enumerate() {
            children.entry(n.parent).or_default().push(i);
        }
        let mut lg_by_node: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        let mut lg_without_node = Vec::new();
        for (i, g) in self.location_groups.iter().enumerate() {
            match g.system_tree_parent {
                Some(p) => lg_by_node.entry(p).or_default().push(i),
                None => lg_without_node.push(i),
            }
        }
        let group_line = |out: &mut dyn Write, g: usize, indent: usize| -> std::io::Result<()> {
            let lg = &self.location_groups[g];
            let locs = self
                .locations
                .iter()
                .filter(|l| l.group_index == Some(g))
                .count();
            writeln!(
                out,
                "{:indent$}{} ({locs} location{})",
                "",
                lg.name,
                if locs == 1 { "" } else { "s" },
            )
        };
        let mut stack: Vec<(usize, usize)> = children
            .get(&None)
            .map(|v| v.iter().rev().map(|&i| (i, 1)).collect())
            .unwrap_or_default();
        while let Some((i, depth)) = stack.pop() {
            let n = &self.system_tree[i];
            writeln!(out, "{:w$}{} {}", "", n.class, n.name, w = depth * 2)?;
            for &g in lg_by_node.get(&i).map(Vec::as_slice).unwrap_or(&[]) {
                group_line(out, g, depth * 2 + 2)?;
            }
            if depth < 64 {
                for &c in children
                    .get(&Some(i))
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .rev()
                {
                    stack.push((c, depth + 1));
                }
            }
        }
        // processes the trace places on no node (Paje ranks under the root container)
        for &g in &lg_without_node {
            group_line(out, g, 2)?;
        }
        writeln!(out, "\nlocations")?;
        writeln!(
            out,
            "  {:>20}  {:<20} {:<18} {:>6} {:>12}",
            "id", "name", "kind", "rank", "events"
        )?;
        const SHOWN: usize = 64;
        for l in self.locations.iter().take(SHOWN) {
            writeln!(
                out,
                "  {:>20}  {:<20} {:<18} {:>6} {:>12}",
                l.id,
                truncate(&l.name, 20),
                format!("{:?}", l.kind),
                l.rank.map_or("-".to_string(), |r| r.to_string()),
                l.events
            )?;
        }
        if self.locations.len() > SHOWN {
            writeln!(
                out,
                "  ... {} more (see --json)",
                self.locations.len() - SHOWN
            )?;
        }
        writeln!(out, "\nregions     {}", self.regions.len())?;
        writeln!(out, "communicators")?;
        for c in &self.communicators {
            writeln!(
                out,
                "  {:<32} {:<8} {}",
                truncate(&c.name, 32),
                c.paradigm.name(),
                c.size.map_or("? ranks".into(), |s| format!("{s} ranks"))
            )?;
        }
        if !self.metrics.is_empty() {
            writeln!(out, "metrics     {}", self.metrics.len())?;
        }
        for w in &self.warnings {
            writeln!(out, "warning: {w}")?;
        }
        Ok(())
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

pub fn run(path: &Path, json: bool, out: &mut dyn Write) -> crate::Result<()> {
    let trace = crate::open(path)?;
    let info = Info::of(&trace);
    let res = if json {
        serde_json::to_writer_pretty(&mut *out, &info)
            .map_err(|e| match e.io_error_kind() {
                Some(kind) => std::io::Error::from(kind),
                None => std::io::Error::other(e),
            })
            .and_then(|_| writeln!(out))
    } else {
        info.write_text(out)
    };
    match res {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(crate::Error::Usage(format!("cannot write the output: {e}"))),
    }
}
