//! Cube4 `.cubex` reports (patterns.md §8): an uncompressed ustar archive of `anchor.xml`
//! (metric tree, regions and call paths, system tree) and one `k.index`/`k.data` pair per
//! metric. [`Cube`] is the in-memory form of such a file: built from an analysis to write it,
//! or read back from any `.cubex` (ours or Scalasca's) for `perfexpert diff` and the tests.
//!
//! Like the other reports it knows nothing of how a value was found: it takes the metric
//! tree and values of an [`Analysis`], the call tree of the replay and the definitions of the
//! trace (whatever format they came from). docs/report-cubex.md documents the layout choices.
//!
//! The parts: `archive` (the ustar container), `system` (the system tree from a trace's
//! definitions), `write` (anchor XML and data files) and `read` (any `.cubex` back).

mod archive;
mod read;
mod system;
mod write;

use crate::analysis::Analysis;
use crate::error::{Error, Place};
use crate::model::{Definitions, Paradigm, RegionRole, Trace};
use crate::replay::calltree::Callee;
use crate::replay::Replay;
use crate::rules::Unit;
use std::collections::HashMap;
use std::path::Path;

#[derive(Clone, Debug, PartialEq)]
pub struct CubeMetric {
    /// `uniq_name`: the metric id of the rule files.
    pub id: String,
    pub disp_name: String,
    pub unit: Unit,
    pub url: String,
    pub descr: String,
    /// Index of the parent metric in `Cube::metrics` (always a smaller index).
    pub parent: Option<usize>,
    /// As read from a file: whether values are stored inclusive along call paths (Scalasca's
    /// `time` in scout.cubex). Always `false` for what perfexpert writes.
    pub inclusive: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CubeRegion {
    pub name: String,
    pub file: String,
    /// Line numbers, `-1` where unknown.
    pub begin: i64,
    pub end: i64,
    pub paradigm: String,
    pub role: String,
    pub descr: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CubeCnode {
    /// Index into `Cube::regions`.
    pub callee: usize,
    /// Index of the parent in `Cube::cnodes`; cnodes are in depth-first pre-order.
    pub parent: Option<usize>,
}

/// A system-tree node (machine, node, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct SystemNode {
    pub name: String,
    pub class: String,
    pub parent: Option<usize>,
}

/// A location group: a process (or accelerator, metric group).
#[derive(Clone, Debug, PartialEq)]
pub struct CubeGroup {
    pub name: String,
    pub rank: i64,
    /// `process`, `accelerator` or `metrics`.
    pub kind: String,
    pub node: usize,
}

/// A location: one column of every data row.
#[derive(Clone, Debug, PartialEq)]
pub struct CubeLocation {
    pub name: String,
    /// Thread number in its process.
    pub rank: i64,
    /// `thread`, `accelerator` or `metric`.
    pub kind: String,
    pub group: usize,
}

/// A Cube4 report in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Cube {
    pub creator: String,
    /// In id order = depth-first pre-order of the metric forest (§8.3).
    pub metrics: Vec<CubeMetric>,
    pub regions: Vec<CubeRegion>,
    /// In id order = depth-first pre-order (§8.5); exactly one root.
    pub cnodes: Vec<CubeCnode>,
    pub system: Vec<SystemNode>,
    pub groups: Vec<CubeGroup>,
    /// In column order (§8.6): process by process, thread number ascending.
    pub locations: Vec<CubeLocation>,
    /// Per metric, its non-zero rows: exclusive along call paths, inclusive along the
    /// metric tree (§1.1).
    pub values: Vec<Rows>,
}

/// The call paths of one metric that have a non-zero value somewhere (ascending), with one
/// value per location each: sparse, as the data files are.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rows {
    pub cnodes: Vec<usize>,
    /// `values[i * locations + l]` belongs to `cnodes[i]`.
    pub values: Vec<f64>,
}

impl Rows {
    /// From dense values (`ncnode × nloc`), keeping the rows with a non-zero value.
    fn from_dense(dense: &[f64], nloc: usize) -> Rows {
        let mut r = Rows::default();
        if nloc == 0 {
            return r;
        }
        for (c, row) in dense.chunks_exact(nloc).enumerate() {
            if row.iter().any(|&x| x != 0.0) {
                r.cnodes.push(c);
                r.values.extend_from_slice(row);
            }
        }
        r
    }

    /// The row of `cnode`, if it has one.
    pub fn row(&self, cnode: usize, nloc: usize) -> Option<&[f64]> {
        let i = self.cnodes.binary_search(&cnode).ok()?;
        self.values.get(i * nloc..(i + 1) * nloc)
    }
}

/// The Cube `<role>` text of an OTF2 region role (patterns.md §8.4).
fn cube_role(r: RegionRole) -> &'static str {
    const ROLES: [&str; 39] = [
        "unknown",
        "function",
        "wrapper",
        "loop",
        "code",
        "parallel",
        "sections",
        "section",
        "workshare",
        "single",
        "single sblock",
        "master",
        "critical",
        "critical sblock",
        "atomic",
        "barrier",
        "implicit barrier",
        "flush",
        "ordered",
        "ordered sblock",
        "task",
        "task create",
        "taskwait",
        "one2all",
        "all2one",
        "all2all",
        "other collective",
        "file io",
        "point2point",
        "rma",
        "data transfer",
        "artificial",
        "thread create",
        "thread wait",
        "untied task",
        "allocate",
        "deallocate",
        "reallocate",
        "file io metadata",
    ];
    ROLES.get(r.0 as usize).copied().unwrap_or("unknown")
}

/// The Cube `<paradigm>` text (patterns.md §8.4); paradigms Cube does not know are `unknown`.
fn cube_paradigm(p: Paradigm) -> &'static str {
    const KNOWN: [&str; 18] = [
        "unknown",
        "user",
        "compiler",
        "openmp",
        "mpi",
        "cuda",
        "measurement",
        "pthread",
        "hmpp",
        "ompss",
        "hardware",
        "gaspi",
        "upc",
        "shmem",
        "opencl",
        "openacc",
        "io",
        "kokkos",
    ];
    let n = p.name();
    KNOWN.iter().copied().find(|k| *k == n).unwrap_or("unknown")
}

/// The first sentence of a rule's description, on one line (the Cube `descr`, §8.3).
fn first_sentence(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.find(". ") {
        Some(i) => one_line[..i].to_string(),
        None => one_line.trim_end_matches('.').to_string(),
    }
}

impl Cube {
    /// The report of one analysis: metrics from the rule files, regions and system tree from
    /// the trace's definitions, call paths from the replay.
    pub fn from_analysis(trace: &Trace, replay: &Replay, a: &Analysis) -> Cube {
        let (walk, metrics) = metric_forest(a);
        let (regions, cnodes) = regions_and_cnodes(&trace.defs, replay);
        let tree = system::system_tree(&trace.defs);
        let values = walk
            .iter()
            .map(|&i| metric_rows(a, a.order[i], &tree.columns))
            .collect();
        Cube {
            creator: format!("perfexpert {}", env!("CARGO_PKG_VERSION")),
            metrics,
            regions,
            cnodes,
            system: tree.nodes,
            groups: tree.groups,
            locations: tree.locations,
            values,
        }
    }

    /// Adds the root-cause and critical-path metrics (docs/root-causes.md) after the
    /// rules' metrics, with Scalasca's ids, names and parents (scout.cubex's metric tree).
    pub fn add_root_causes(&mut self, trace: &Trace, rc: &crate::analysis::rootcause::RootCauses) {
        let columns = system::system_tree(&trace.defs).columns;
        let first = self.metrics.len();
        for (m, v) in rc.present() {
            let parent = m
                .parent
                .as_ref()
                .and_then(|p| (first..self.metrics.len()).find(|&i| self.metrics[i].id == *p));
            self.metrics.push(CubeMetric {
                id: m.id.clone(),
                disp_name: m.name.clone(),
                unit: Unit::Sec,
                url: format!("@mirror@scalasca_patterns.html#{}", m.id),
                descr: first_sentence(&m.description),
                parent,
                inclusive: false,
            });
            let mut rows = Rows::default();
            let mut row = vec![0.0; columns.len()];
            for c in 0..self.cnodes.len() {
                for (j, &l) in columns.iter().enumerate() {
                    row[j] = v.get(c * rc.nloc + l as usize).copied().unwrap_or(0.0);
                }
                if row.iter().any(|&x| x != 0.0) {
                    rows.cnodes.push(c);
                    rows.values.extend_from_slice(&row);
                }
            }
            self.values.push(rows);
        }
    }

    /// The value of `metric` at (`cnode`, `location`).
    pub fn value(&self, metric: usize, cnode: usize, location: usize) -> f64 {
        self.values[metric]
            .row(cnode, self.locations.len())
            .and_then(|r| r.get(location))
            .copied()
            .unwrap_or(0.0)
    }

    /// The call path as region names from the root, joined by `/`.
    pub fn path(&self, cnode: usize) -> String {
        let mut parts = Vec::new();
        let mut cur = Some(cnode);
        while let Some(c) = cur {
            if parts.len() > self.cnodes.len() {
                break;
            }
            parts.push(self.regions[self.cnodes[c].callee].name.as_str());
            cur = self.cnodes[c].parent;
        }
        parts.reverse();
        parts.join("/")
    }
}

/// The metrics of an analysis in the pre-order of §8.3, and the position in `a.order` of
/// each. The analysis order is a depth-first walk of the present metrics; a metric whose
/// parent is absent becomes a root.
fn metric_forest(a: &Analysis) -> (Vec<usize>, Vec<CubeMetric>) {
    let ids: HashMap<&str, usize> = a
        .order
        .iter()
        .enumerate()
        .map(|(i, &k)| (a.rules.rules[k].info.id.as_str(), i))
        .collect();
    let parent_pos: Vec<Option<usize>> = a
        .order
        .iter()
        .map(|&k| {
            let info = &a.rules.rules[k].info;
            info.parent.as_deref().and_then(|p| ids.get(p).copied())
        })
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); a.order.len()];
    let mut roots = Vec::new();
    for (i, p) in parent_pos.iter().enumerate() {
        match p {
            Some(p) => children[*p].push(i),
            None => roots.push(i),
        }
    }
    let mut walk = Vec::with_capacity(a.order.len());
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(i) = stack.pop() {
        walk.push(i);
        stack.extend(children[i].iter().rev());
    }
    let mut new_pos = vec![0usize; a.order.len()];
    for (n, &i) in walk.iter().enumerate() {
        new_pos[i] = n;
    }
    let metrics = walk
        .iter()
        .map(|&i| {
            let info = &a.rules.rules[a.order[i]].info;
            CubeMetric {
                id: info.id.clone(),
                disp_name: info.name.clone(),
                unit: info.unit,
                url: if crate::rules::is_builtin_id(&info.id) {
                    format!("@mirror@scalasca_patterns.html#{}", info.id)
                } else {
                    String::new()
                },
                descr: first_sentence(&info.description),
                parent: parent_pos[i].map(|p| new_pos[p]),
                inclusive: false,
            }
        })
        .collect();
    (walk, metrics)
}

/// The regions of the trace in definition order, then the artificial root if a call path
/// needs it, and the call paths of the replay (§8.4–§8.5).
fn regions_and_cnodes(d: &Definitions, replay: &Replay) -> (Vec<CubeRegion>, Vec<CubeCnode>) {
    let mut regions: Vec<CubeRegion> = d
        .regions
        .iter()
        .map(|r| CubeRegion {
            name: r.name.clone(),
            file: r.source_file.clone(),
            begin: if r.begin_line == 0 {
                -1
            } else {
                r.begin_line as i64
            },
            end: if r.end_line == 0 {
                -1
            } else {
                r.end_line as i64
            },
            paradigm: cube_paradigm(r.paradigm).to_string(),
            role: cube_role(r.role).to_string(),
            descr: r.description.clone(),
        })
        .collect();
    let mut artificial = None;
    let mut root_region = |regions: &mut Vec<CubeRegion>| {
        *artificial.get_or_insert_with(|| {
            regions.push(CubeRegion {
                name: "program".to_string(),
                file: String::new(),
                begin: -1,
                end: -1,
                paradigm: "user".to_string(),
                role: "artificial".to_string(),
                descr: String::new(),
            });
            regions.len() - 1
        })
    };
    let mut cnodes: Vec<CubeCnode> = Vec::with_capacity(replay.tree.nodes.len().max(1));
    for n in &replay.tree.nodes {
        cnodes.push(CubeCnode {
            callee: match n.callee {
                Callee::Region(r) => r as usize,
                Callee::ArtificialRoot => root_region(&mut regions),
            },
            parent: n.parent.map(|p| p as usize),
        });
    }
    if cnodes.is_empty() {
        // a trace without region events: Cube readers need one root call path (§8.4)
        cnodes.push(CubeCnode {
            callee: root_region(&mut regions),
            parent: None,
        });
    }
    (regions, cnodes)
}

/// The non-zero rows of metric `k` of the analysis, one value per column.
fn metric_rows(a: &Analysis, k: usize, columns: &[u32]) -> Rows {
    let mut rows = Rows::default();
    let mut row = vec![0.0; columns.len()];
    for c in 0..a.ncnode {
        for (j, &l) in columns.iter().enumerate() {
            row[j] = a.value(k, c as u32, l);
        }
        if row.iter().any(|&x| x != 0.0) {
            rows.cnodes.push(c);
            rows.values.extend_from_slice(&row);
        }
    }
    rows
}

/// An error about input, on one line whatever the input held (names and XML text can
/// carry newlines and control characters).
pub(crate) fn err(file: impl AsRef<Path>, place: Place, what: impl Into<String>) -> Error {
    let what: String = what
        .into()
        .chars()
        .flat_map(|c| {
            let e: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            e
        })
        .collect();
    Error::format(file, place, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_keep_their_first_sentence() {
        assert_eq!(
            first_sentence("Time in MPI point-to-point receive\noperations. More here."),
            "Time in MPI point-to-point receive operations"
        );
        assert_eq!(first_sentence("One line."), "One line");
    }

    #[test]
    fn roles_and_paradigms_use_cube_words() {
        assert_eq!(cube_role(RegionRole::COLL_OTHER), "other collective");
        assert_eq!(cube_role(RegionRole::IMPLICIT_BARRIER), "implicit barrier");
        assert_eq!(cube_role(RegionRole(22)), "taskwait");
        assert_eq!(cube_role(RegionRole(40)), "unknown");
        assert_eq!(cube_paradigm(Paradigm::MEASUREMENT_SYSTEM), "measurement");
        assert_eq!(cube_paradigm(Paradigm(14)), "unknown");
    }
}
