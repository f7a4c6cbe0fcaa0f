//! Cube4 `.cubex` reports (patterns.md §8): an uncompressed ustar archive of `anchor.xml`
//! (metric tree, regions and call paths, system tree) and one `k.index`/`k.data` pair per
//! metric. [`Cube`] is the in-memory form of such a file: built from an analysis to write it,
//! or read back from any `.cubex` (ours or Scalasca's) for `perfexpert diff` and the tests.
//!
//! Like the other reports it knows nothing of how a value was found: it takes the metric
//! tree and values of an [`Analysis`], the call tree of the replay and the definitions of the
//! trace (whatever format they came from). docs/report-cubex.md documents the layout choices.

use crate::analysis::Analysis;
use crate::error::{Error, Place, Result};
use crate::model::{LocationGroupKind, LocationKind, Paradigm, RegionRole, Trace};
use crate::replay::calltree::Callee;
use crate::replay::Replay;
use crate::rules::Unit;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write;
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

/// Scalasca's online pattern documentation; the Cube GUI replaces `@mirror@` by a mirror.
const MIRROR: &str = "http://apps.fz-juelich.de/scalasca/releases/scalasca/2.6/help/";

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
        let d = &trace.defs;
        // Metrics: the analysis order is a depth-first walk of the present metrics; a metric
        // whose parent is absent becomes a root. Re-walk to get the pre-order of §8.3.
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

        // Regions: every region of the trace in definition order, then the artificial root.
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

        let (system, groups, locations, columns) = system_tree(&trace.defs);
        let nloc = locations.len();
        let values = walk
            .iter()
            .map(|&i| {
                let k = a.order[i];
                let mut rows = Rows::default();
                let mut row = vec![0.0; nloc];
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
            })
            .collect();
        Cube {
            creator: format!("perfexpert {}", env!("CARGO_PKG_VERSION")),
            metrics,
            regions,
            cnodes,
            system,
            groups,
            locations,
            values,
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

    /// `anchor.xml` (§8.2–§8.6).
    pub fn anchor_xml(&self) -> String {
        let mut s = String::with_capacity(4096 + 300 * (self.regions.len() + self.metrics.len()));
        s.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<cube version=\"4.4\">\n");
        let _ = writeln!(
            s,
            "<attr key=\"Creator\" value=\"{}\"/>",
            esc(&self.creator)
        );
        s.push_str("<attr key=\"CUBE_CT_AGGR\" value=\"SUM\"/>\n");
        let _ = writeln!(
            s,
            "<doc>\n<mirrors>\n<murl>{MIRROR}</murl>\n</mirrors>\n</doc>"
        );

        s.push_str("<metrics>\n");
        let mut open: Vec<usize> = Vec::new();
        for (i, m) in self.metrics.iter().enumerate() {
            while let Some(&top) = open.last() {
                if Some(top) == m.parent {
                    break;
                }
                open.pop();
                s.push_str("</metric>\n");
            }
            let (dtype, uom) = match m.unit {
                Unit::Sec => ("FLOAT", "sec"),
                Unit::Occ => ("INTEGER", "occ"),
                Unit::Bytes => ("INTEGER", "bytes"),
            };
            let _ = writeln!(
                s,
                "<metric id=\"{i}\" type=\"EXCLUSIVE\">\n<disp_name>{}</disp_name>\n\
                 <uniq_name>{}</uniq_name>\n<dtype>{dtype}</dtype>\n<uom>{uom}</uom>",
                esc(&m.disp_name),
                esc(&m.id)
            );
            // empty elements as Scalasca writes them (`<url></url>`, not `<url/>`): Cube's
            // own reader is a flex/bison scanner, not a general XML parser
            let _ = writeln!(s, "<url>{}</url>", esc(&m.url));
            let _ = writeln!(s, "<descr>{}</descr>", esc(&m.descr));
            open.push(i);
        }
        for _ in open {
            s.push_str("</metric>\n");
        }
        s.push_str("</metrics>\n<program>\n");
        for (i, r) in self.regions.iter().enumerate() {
            let _ = writeln!(
                s,
                "<region id=\"{i}\" mod=\"{}\" begin=\"{}\" end=\"{}\">\n<name>{}</name>\n\
                 <mangled_name>{}</mangled_name>\n<paradigm>{}</paradigm>\n<role>{}</role>\n\
                 <url></url>\n<descr>{}</descr>\n</region>",
                esc(&r.file),
                r.begin,
                r.end,
                esc(&r.name),
                esc(&r.name),
                esc(&r.paradigm),
                esc(&r.role),
                esc(&r.descr)
            );
        }
        // cnodes are in pre-order: close the open ones that are not the parent of the next
        let mut open: Vec<usize> = Vec::new();
        for (i, c) in self.cnodes.iter().enumerate() {
            while let Some(&top) = open.last() {
                if Some(top) == c.parent {
                    break;
                }
                open.pop();
                s.push_str("</cnode>\n");
            }
            let _ = writeln!(s, "<cnode id=\"{i}\" calleeId=\"{}\">", c.callee);
            open.push(i);
        }
        for _ in open {
            s.push_str("</cnode>\n");
        }
        s.push_str("</program>\n<system>\n");
        self.write_system(&mut s);
        s.push_str("<topologies>\n</topologies>\n</system>\n</cube>\n");
        s
    }

    fn write_system(&self, s: &mut String) {
        let mut kids: Vec<Vec<usize>> = vec![Vec::new(); self.system.len()];
        let mut roots = Vec::new();
        for (i, n) in self.system.iter().enumerate() {
            match n.parent.filter(|&p| p < self.system.len()) {
                Some(p) => kids[p].push(i),
                None => roots.push(i),
            }
        }
        let mut groups_of: Vec<Vec<usize>> = vec![Vec::new(); self.system.len()];
        for (g, grp) in self.groups.iter().enumerate() {
            if let Some(v) = groups_of.get_mut(grp.node) {
                v.push(g);
            }
        }
        let mut locs_of: Vec<Vec<usize>> = vec![Vec::new(); self.groups.len()];
        for (l, loc) in self.locations.iter().enumerate() {
            if let Some(v) = locs_of.get_mut(loc.group) {
                v.push(l);
            }
        }
        // iterative pre-order: Open(node) writes it and its processes and schedules its
        // children, then Close ends it
        enum Step {
            Open(usize),
            Close,
        }
        let mut stack: Vec<Step> = roots.iter().rev().map(|&r| Step::Open(r)).collect();
        let mut seen = vec![false; self.system.len()];
        while let Some(step) = stack.pop() {
            match step {
                Step::Open(i) => {
                    if std::mem::replace(&mut seen[i], true) {
                        continue; // a cycle in read-back data
                    }
                    let n = &self.system[i];
                    let _ = writeln!(
                        s,
                        "<systemtreenode Id=\"{i}\">\n<name>{}</name>\n<class>{}</class>",
                        esc(&n.name),
                        esc(&n.class)
                    );
                    // its own processes first (so that location Ids run in document
                    // order, §8.6), then the nodes below it
                    for &g in &groups_of[i] {
                        let grp = &self.groups[g];
                        let _ = writeln!(
                            s,
                            "<locationgroup Id=\"{g}\">\n<name>{}</name>\n<rank>{}</rank>\n\
                             <type>{}</type>",
                            esc(&grp.name),
                            grp.rank,
                            esc(&grp.kind)
                        );
                        for &l in &locs_of[g] {
                            let loc = &self.locations[l];
                            let _ = writeln!(
                                s,
                                "<location Id=\"{l}\">\n<name>{}</name>\n<rank>{}</rank>\n\
                                 <type>{}</type>\n</location>",
                                esc(&loc.name),
                                loc.rank,
                                esc(&loc.kind)
                            );
                        }
                        s.push_str("</locationgroup>\n");
                    }
                    stack.push(Step::Close);
                    stack.extend(kids[i].iter().rev().map(|&c| Step::Open(c)));
                }
                Step::Close => {
                    s.push_str("</systemtreenode>\n");
                }
            }
        }
    }

    /// `k.index` and `k.data` of metric `k` (§8.7): the non-zero rows, or one zero row.
    pub fn metric_files(&self, k: usize) -> (Vec<u8>, Vec<u8>) {
        let nloc = self.locations.len();
        let zero = Rows {
            cnodes: vec![0],
            values: vec![0.0; nloc],
        };
        let data_rows = match &self.values[k] {
            r if r.cnodes.is_empty() => &zero,
            r => r,
        };
        let rows = &data_rows.cnodes;
        let mut index = Vec::with_capacity(22 + 4 * rows.len());
        index.extend_from_slice(b"CUBEX.INDEX");
        index.extend_from_slice(&1u32.to_le_bytes());
        index.extend_from_slice(&0u16.to_le_bytes());
        index.push(1);
        index.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        for &c in rows {
            index.extend_from_slice(&(c as u32).to_le_bytes());
        }
        let mut data = Vec::with_capacity(10 + 8 * rows.len() * nloc);
        data.extend_from_slice(b"CUBEX.DATA");
        let float = self.metrics[k].unit == Unit::Sec;
        for &x in &data_rows.values {
            if float {
                data.extend_from_slice(&x.to_le_bytes());
            } else {
                // counts and bytes are integral by construction (§1.1.4)
                data.extend_from_slice(&(x.round() as i64).to_le_bytes());
            }
        }
        (index, data)
    }

    /// The whole archive (§8.1); `mtime` in seconds since the Unix epoch.
    pub fn write(&self, out: &mut dyn Write, mtime: u64) -> std::io::Result<()> {
        tar_member(out, "anchor.xml", self.anchor_xml().as_bytes(), mtime)?;
        for k in 0..self.metrics.len() {
            let (index, data) = self.metric_files(k);
            tar_member(out, &format!("{k}.index"), &index, mtime)?;
            tar_member(out, &format!("{k}.data"), &data, mtime)?;
        }
        out.write_all(&[0u8; 1024])
    }
}

/// The system tree of §8.6 from the definitions: (nodes, groups, locations, model location
/// index of each column). Machine > node > process > thread where the trace says so; a trace
/// without a system tree gets one machine and one node, processes without a node go to a
/// node, and locations without a process get a process of their own.
#[allow(clippy::type_complexity)]
fn system_tree(
    d: &crate::model::Definitions,
) -> (Vec<SystemNode>, Vec<CubeGroup>, Vec<CubeLocation>, Vec<u32>) {
    let n = d.system_tree.len();
    // keep the trace's nodes whose parent chain is sound; find the roots
    let valid_parent = |p: Option<usize>| p.filter(|&p| p < n);
    let roots: Vec<usize> = (0..n)
        .filter(|&i| valid_parent(d.system_tree[i].parent).is_none())
        .collect();
    let mut system: Vec<SystemNode> = Vec::new();
    let mut map: Vec<Option<usize>> = vec![None; n];
    let top = if roots.len() == 1 {
        None
    } else {
        // none, or several roots: one machine above them (Cube wants exactly one root)
        system.push(SystemNode {
            name: "machine".to_string(),
            class: "machine".to_string(),
            parent: None,
        });
        Some(0)
    };
    // pre-order over the trace's tree, children in definition order
    let mut stack: Vec<(usize, Option<usize>)> = roots.iter().rev().map(|&r| (r, top)).collect();
    while let Some((i, parent)) = stack.pop() {
        if map[i].is_some() {
            continue;
        }
        let node = &d.system_tree[i];
        map[i] = Some(system.len());
        // Scalasca names a node "<class> <name>" ("machine Linux", "node vm")
        let name = if node.name.is_empty() {
            node.class.clone()
        } else if node.class.is_empty() {
            node.name.clone()
        } else {
            format!("{} {}", node.class, node.name)
        };
        system.push(SystemNode {
            name,
            class: if node.class.is_empty() {
                "node".to_string()
            } else {
                node.class.clone()
            },
            parent,
        });
        let me = system.len() - 1;
        for c in (0..n).rev() {
            if valid_parent(d.system_tree[c].parent) == Some(i) && map[c].is_none() {
                stack.push((c, Some(me)));
            }
        }
    }
    // a node for processes that name none: the trace's only leaf if there is one, else new
    let mut fallback: Option<usize> = None;
    let mut fallback_node = |system: &mut Vec<SystemNode>| -> usize {
        if let Some(f) = fallback {
            return f;
        }
        let leaves: Vec<usize> = (0..system.len())
            .filter(|&i| !system.iter().any(|s| s.parent == Some(i)))
            .collect();
        let f = match leaves.as_slice() {
            [only] if system.len() > 1 => *only,
            _ => {
                system.push(SystemNode {
                    name: "node".to_string(),
                    class: "node".to_string(),
                    parent: Some(0),
                });
                system.len() - 1
            }
        };
        fallback = Some(f);
        f
    };
    if system.is_empty() {
        system.push(SystemNode {
            name: "machine".to_string(),
            class: "machine".to_string(),
            parent: None,
        });
    }

    // processes: the trace's location groups plus one per location without a group
    struct Proc {
        name: String,
        rank: Option<u32>,
        kind: &'static str,
        node: Option<usize>,
        locs: Vec<u32>,
        order: usize,
    }
    let mut procs: Vec<Proc> = d
        .location_groups
        .iter()
        .enumerate()
        .map(|(i, g)| Proc {
            name: g.name.clone(),
            rank: None,
            kind: match g.kind {
                LocationGroupKind::Accelerator => "accelerator",
                _ => "process",
            },
            node: g
                .system_tree_parent
                .and_then(|p| map.get(p).copied().flatten()),
            locs: Vec::new(),
            order: i,
        })
        .collect();
    for (l, loc) in d.locations.iter().enumerate() {
        let p = match loc.group.filter(|&g| g < d.location_groups.len()) {
            Some(g) => g,
            None => {
                procs.push(Proc {
                    name: loc.name.clone(),
                    rank: None,
                    kind: "process",
                    node: None,
                    locs: Vec::new(),
                    order: procs.len(),
                });
                procs.len() - 1
            }
        };
        procs[p].locs.push(l as u32);
        if let Some(r) = loc.rank {
            procs[p].rank = Some(procs[p].rank.map_or(r, |x| x.min(r)));
        }
    }
    procs.retain(|p| !p.locs.is_empty());
    // ordered by rank (§8.6); processes without a rank after them, in definition order
    procs.sort_by_key(|p| (p.rank.is_none(), p.rank, p.order));
    // Location Ids (= columns) must be consecutive in document order, so processes go node
    // by node (nodes are in pre-order), by rank within a node.
    let mut placed = Vec::with_capacity(procs.len());
    for (position, p) in procs.iter().enumerate() {
        let node = match p.node {
            Some(n) => n,
            None => fallback_node(&mut system),
        };
        placed.push((node, position));
    }
    placed.sort();
    let mut groups = Vec::new();
    let mut locations = Vec::new();
    let mut columns = Vec::new();
    for (gi, &(node, position)) in placed.iter().enumerate() {
        let p = &procs[position];
        groups.push(CubeGroup {
            name: p.name.clone(),
            rank: p.rank.map_or(position as i64, i64::from),
            kind: p.kind.to_string(),
            node,
        });
        // thread number = position in the process, in definition order (as the JSON report)
        for (t, &l) in p.locs.iter().enumerate() {
            let loc = &d.locations[l as usize];
            locations.push(CubeLocation {
                name: loc.name.clone(),
                rank: t as i64,
                kind: match loc.kind {
                    LocationKind::AcceleratorStream => "accelerator",
                    LocationKind::Metric => "metric",
                    _ => "thread",
                }
                .to_string(),
                group: gi,
            });
            columns.push(l);
        }
    }
    (system, groups, locations, columns)
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

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // characters XML 1.0 cannot carry at all
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// One ustar member (§8.1): header, content, padding to 512 bytes.
fn tar_member(out: &mut dyn Write, name: &str, content: &[u8], mtime: u64) -> std::io::Result<()> {
    let mut h = [0u8; 512];
    let octal = |h: &mut [u8; 512], at: usize, len: usize, v: u64| {
        let s = format!("{v:0w$o}", w = len - 1);
        h[at..at + len - 1].copy_from_slice(&s.as_bytes()[s.len() - (len - 1)..]);
    };
    h[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
    octal(&mut h, 100, 8, 0o644);
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, content.len() as u64);
    octal(&mut h, 136, 12, mtime);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    out.write_all(&h)?;
    out.write_all(content)?;
    let pad = (512 - content.len() % 512) % 512;
    out.write_all(&vec![0u8; pad])
}

// ---------------------------------------------------------------------------------------
// Reading

/// The members of a ustar archive, by name, in order.
fn read_tar(path: &Path, bytes: &[u8]) -> Result<Vec<(String, std::ops::Range<usize>)>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let Some(h) = bytes.get(at..at + 512) else {
            return Err(err(
                path,
                Place::Byte(at as u64),
                "unexpected end of data, expected a 512-byte tar header (is this a .cubex file?)",
            ));
        };
        if h.iter().all(|&b| b == 0) {
            break;
        }
        if &h[257..262] != b"ustar" {
            return Err(err(
                path,
                Place::Byte(at as u64 + 257),
                "expected the tar magic \"ustar\" (is this a .cubex file?)",
            ));
        }
        let field = |a: usize, b: usize| -> &[u8] {
            let f = &h[a..b];
            let end = f.iter().position(|&c| c == 0).unwrap_or(f.len());
            &f[..end]
        };
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    b as u32
                }
            })
            .sum();
        let parse_octal = |f: &[u8]| -> Option<u64> {
            let s = std::str::from_utf8(f)
                .ok()?
                .trim_matches(|c| c == ' ' || c == '\0');
            u64::from_str_radix(s, 8).ok()
        };
        if parse_octal(field(148, 156)) != Some(sum as u64) {
            return Err(err(
                path,
                Place::Byte(at as u64 + 148),
                "tar header checksum does not match",
            ));
        }
        let size = parse_octal(field(124, 136)).ok_or_else(|| {
            err(
                path,
                Place::Byte(at as u64 + 124),
                "expected an octal member size in the tar header",
            )
        })? as usize;
        let mut name = String::from_utf8_lossy(field(0, 100)).into_owned();
        let prefix = field(345, 500);
        if !prefix.is_empty() {
            name = format!("{}/{name}", String::from_utf8_lossy(prefix));
        }
        let start = at + 512;
        let end = start.checked_add(size).filter(|&e| e <= bytes.len());
        let Some(end) = end else {
            return Err(err(
                path,
                Place::Byte(start as u64),
                format!("unexpected end of data, expected {size} bytes of member {name}"),
            ));
        };
        if matches!(h[156], b'0' | 0) {
            out.push((name, start..end));
        }
        at = start + size.div_ceil(512) * 512;
    }
    Ok(out)
}

/// A tiny element tree of the anchor.
#[derive(Debug, Default)]
struct Elem {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
    children: Vec<Elem>,
    /// Byte offset in anchor.xml, for messages.
    offset: u64,
}

impl Elem {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(a, _)| a == k)
            .map(|(_, v)| v.as_str())
    }
    fn child(&self, n: &str) -> Option<&Elem> {
        self.children.iter().find(|c| c.name == n)
    }
    fn child_text(&self, n: &str) -> String {
        self.child(n)
            .map(|c| c.text.trim().to_string())
            .unwrap_or_default()
    }
    fn all<'a>(&'a self, n: &'a str) -> impl Iterator<Item = &'a Elem> + 'a {
        self.children.iter().filter(move |c| c.name == n)
    }
}

fn parse_xml(file: &Path, xml: &str) -> Result<Elem> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let mut stack: Vec<Elem> = vec![Elem::default()];
    let bad = |pos: u64, what: String| err(file, Place::Byte(pos), what);
    let open = |e: &quick_xml::events::BytesStart, pos: u64| -> Result<Elem> {
        let mut el = Elem {
            name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
            offset: pos,
            ..Elem::default()
        };
        for a in e.attributes() {
            let a = a.map_err(|x| bad(pos, format!("bad XML attribute: {x}")))?;
            let v = a
                .unescape_value()
                .map_err(|x| bad(pos, format!("bad XML attribute value: {x}")))?;
            el.attrs.push((
                String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                v.into_owned(),
            ));
        }
        Ok(el)
    };
    loop {
        let pos = r.buffer_position();
        let ev = r
            .read_event()
            .map_err(|e| bad(r.error_position(), format!("malformed XML: {e}")))?;
        match ev {
            Event::Start(e) => {
                let el = open(&e, pos)?;
                stack.push(el);
                if stack.len() > 5_000 {
                    return Err(bad(pos, "XML nested too deeply".to_string()));
                }
            }
            Event::Empty(e) => {
                let el = open(&e, pos)?;
                if let Some(top) = stack.last_mut() {
                    top.children.push(el);
                }
            }
            Event::End(_) => {
                let el = stack.pop().filter(|_| !stack.is_empty());
                match (el, stack.last_mut()) {
                    (Some(el), Some(top)) => top.children.push(el),
                    _ => return Err(bad(pos, "unbalanced XML end tag".to_string())),
                }
            }
            Event::Text(t) => {
                let s = t
                    .unescape()
                    .map_err(|x| bad(pos, format!("bad XML text: {x}")))?;
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&s);
                }
            }
            Event::CData(t) => {
                if let Some(top) = stack.last_mut() {
                    top.text.push_str(&String::from_utf8_lossy(&t));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if stack.len() != 1 {
        return Err(bad(
            xml.len() as u64,
            "unexpected end of XML, expected closing tags".to_string(),
        ));
    }
    let mut doc = stack.pop().unwrap_or_default();
    doc.children
        .pop()
        .filter(|c| c.name == "cube")
        .ok_or_else(|| bad(0, "expected a <cube> root element".to_string()))
}

impl Cube {
    /// Read a `.cubex` archive (written by perfexpert or by Scalasca/CubeW): the anchor and
    /// every metric's data, as exclusive values along call paths.
    pub fn read(path: &Path) -> Result<Cube> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, "cannot read", e))?;
        let members = read_tar(path, &bytes)?;
        let member = |n: &str| {
            members
                .iter()
                .find(|(m, _)| m == n)
                .map(|(_, r)| &bytes[r.clone()])
        };
        let anchor_path = path.join("anchor.xml");
        let anchor = member("anchor.xml").ok_or_else(|| {
            err(
                path,
                Place::File,
                "no anchor.xml member: not a Cube4 archive",
            )
        })?;
        let xml = std::str::from_utf8(anchor).map_err(|e| {
            err(
                &anchor_path,
                Place::Byte(e.valid_up_to() as u64),
                "invalid UTF-8, expected XML text",
            )
        })?;
        let cube = parse_xml(&anchor_path, xml)?;
        let bad = |el: &Elem, what: String| err(&anchor_path, Place::Byte(el.offset), what);
        let int_attr = |el: &Elem, k: &str| -> Result<i64> {
            el.attr(k)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .ok_or_else(|| bad(el, format!("<{}> needs an integer attribute {k}", el.name)))
        };
        let section = |n: &str| {
            cube.child(n)
                .ok_or_else(|| bad(&cube, format!("expected a <{n}> element in <cube>")))
        };

        // metrics: pre-order of the element tree; remember each one's file id
        let mut metrics = Vec::new();
        let mut file_ids = Vec::new();
        fn walk_metrics<'a>(
            el: &'a Elem,
            parent: Option<usize>,
            out: &mut Vec<(&'a Elem, Option<usize>)>,
        ) {
            for m in el.all("metric") {
                out.push((m, parent));
                let me = out.len() - 1;
                walk_metrics(m, Some(me), out);
            }
        }
        let mut flat = Vec::new();
        walk_metrics(section("metrics")?, None, &mut flat);
        for (m, parent) in &flat {
            let unit = match m.child_text("uom").as_str() {
                "sec" => Unit::Sec,
                "bytes" => Unit::Bytes,
                _ => Unit::Occ,
            };
            let kind = m.attr("type").unwrap_or("EXCLUSIVE");
            if kind != "EXCLUSIVE" && kind != "INCLUSIVE" {
                // derived metrics (CubePL) hold no data of their own
                continue;
            }
            let parent = parent.and_then(|p| {
                let pid = int_attr(flat[p].0, "id").ok()?;
                file_ids.iter().position(|&(f, _)| f == pid)
            });
            metrics.push(CubeMetric {
                id: m.child_text("uniq_name"),
                disp_name: m.child_text("disp_name"),
                unit,
                url: m.child_text("url"),
                descr: m.child_text("descr"),
                parent,
                inclusive: kind == "INCLUSIVE",
            });
            let dtype = m.child_text("dtype").to_ascii_uppercase();
            file_ids.push((int_attr(m, "id")?, dtype));
        }

        let program = section("program")?;
        let mut regions = Vec::new();
        let mut region_of_id = HashMap::new();
        for r in program.all("region") {
            region_of_id.insert(int_attr(r, "id")?, regions.len());
            regions.push(CubeRegion {
                name: r.child_text("name"),
                file: r.attr("mod").unwrap_or("").to_string(),
                begin: int_attr(r, "begin").unwrap_or(-1),
                end: int_attr(r, "end").unwrap_or(-1),
                paradigm: r.child_text("paradigm"),
                role: r.child_text("role"),
                descr: r.child_text("descr"),
            });
        }
        let roots: Vec<&Elem> = program.all("cnode").collect();
        if roots.len() != 1 {
            return Err(bad(
                program,
                format!("expected exactly one root <cnode>, found {}", roots.len()),
            ));
        }
        let mut cnodes = Vec::new();
        let mut stack = vec![(roots[0], None)];
        while let Some((c, parent)) = stack.pop() {
            let callee = int_attr(c, "calleeId")?;
            let callee = *region_of_id
                .get(&callee)
                .ok_or_else(|| bad(c, format!("calleeId {callee} names no <region>")))?;
            cnodes.push(CubeCnode { callee, parent });
            let me = cnodes.len() - 1;
            let kids: Vec<&Elem> = c.all("cnode").collect();
            stack.extend(kids.into_iter().rev().map(|k| (k, Some(me))));
        }
        // pycubexr's "wide" enumeration, used for the rows of INCLUSIVE metrics
        let mut kids: Vec<Vec<usize>> = vec![Vec::new(); cnodes.len()];
        for (i, c) in cnodes.iter().enumerate() {
            if let Some(p) = c.parent {
                kids[p].push(i);
            }
        }
        let mut wide = vec![0usize];
        let mut st = vec![0usize];
        while let Some(n) = st.pop() {
            wide.extend(kids[n].iter().copied());
            st.extend(kids[n].iter().rev().copied());
        }

        let system_el = section("system")?;
        let mut system = Vec::new();
        let mut groups = Vec::new();
        fn walk_sys(
            el: &Elem,
            parent: Option<usize>,
            system: &mut Vec<SystemNode>,
            groups: &mut Vec<CubeGroup>,
            locations: &mut Vec<(i64, CubeLocation)>,
        ) {
            for n in el.all("systemtreenode") {
                system.push(SystemNode {
                    name: n.child_text("name"),
                    class: n.child_text("class"),
                    parent,
                });
                let me = system.len() - 1;
                walk_sys(n, Some(me), system, groups, locations);
                for g in n.all("locationgroup") {
                    groups.push(CubeGroup {
                        name: g.child_text("name"),
                        rank: g.child_text("rank").parse().unwrap_or(-1),
                        kind: g.child_text("type"),
                        node: me,
                    });
                    let gi = groups.len() - 1;
                    for l in g.all("location") {
                        let id = l.attr("Id").and_then(|v| v.trim().parse().ok());
                        locations.push((
                            id.unwrap_or(-1),
                            CubeLocation {
                                name: l.child_text("name"),
                                rank: l.child_text("rank").parse().unwrap_or(-1),
                                kind: l.child_text("type"),
                                group: gi,
                            },
                        ));
                    }
                }
            }
        }
        let mut located = Vec::new();
        walk_sys(system_el, None, &mut system, &mut groups, &mut located);
        // the location Ids are the data columns (§8.6)
        located.sort_by_key(|(id, _)| *id);
        if located
            .iter()
            .enumerate()
            .any(|(i, (id, _))| *id != i as i64)
        {
            return Err(bad(
                system_el,
                "location Ids are not 0, 1, … n−1 (they number the data columns)".to_string(),
            ));
        }
        let locations: Vec<CubeLocation> = located.into_iter().map(|(_, l)| l).collect();
        let nloc = locations.len();
        let ncnode = cnodes.len();

        let mut values = Vec::with_capacity(metrics.len());
        for (m, (fid, dtype)) in metrics.iter().zip(&file_ids) {
            let ipath = path.join(format!("{fid}.index"));
            let dpath = path.join(format!("{fid}.data"));
            let (index, data) = match (
                member(&format!("{fid}.index")),
                member(&format!("{fid}.data")),
            ) {
                (Some(i), Some(d)) => (i, d),
                (None, None) => {
                    // CubeW leaves out the files of a metric without data: zeros everywhere
                    values.push(Rows::default());
                    continue;
                }
                _ => {
                    return Err(err(
                        path,
                        Place::File,
                        format!(
                            "metric {}: one of {fid}.index and {fid}.data is missing",
                            m.id
                        ),
                    ))
                }
            };
            if index.len() < 18 || &index[..11] != b"CUBEX.INDEX" {
                return Err(err(&ipath, Place::Byte(0), "expected CUBEX.INDEX"));
            }
            if index[11..15] != 1u32.to_le_bytes() {
                return Err(err(
                    &ipath,
                    Place::Byte(11),
                    "expected a little-endian index (marker 1)",
                ));
            }
            let format = index[17];
            let rows: Vec<usize> = match format {
                1 => {
                    // CubeLib's remapper ends an index without rows right after the format
                    let n = match index.get(18..22) {
                        None if index.len() == 18 => 0,
                        Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
                        None => return Err(err(&ipath, Place::Byte(18), "expected the row count")),
                    };
                    let list = match n {
                        0 => &[][..],
                        _ => index.get(22..22 + 4 * n).ok_or_else(|| {
                            err(
                                &ipath,
                                Place::Byte(index.len() as u64),
                                format!("unexpected end of data, expected {n} cnode numbers"),
                            )
                        })?,
                    };
                    let enumeration = if m.inclusive {
                        &wide
                    } else {
                        &(0..ncnode).collect()
                    };
                    let mut rows = Vec::with_capacity(n);
                    for (i, b) in list.chunks_exact(4).enumerate() {
                        let t = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
                        rows.push(*enumeration.get(t).ok_or_else(|| {
                            err(
                                &ipath,
                                Place::Byte(22 + 4 * i as u64),
                                format!("cnode number {t} out of range (the anchor has {ncnode})"),
                            )
                        })?);
                    }
                    rows
                }
                3 => {
                    if m.inclusive {
                        wide.clone()
                    } else {
                        (0..ncnode).collect()
                    }
                }
                f => {
                    return Err(err(
                        &ipath,
                        Place::Byte(17),
                        format!("index format {f} is not supported (expected 1 sparse or 3 dense)"),
                    ))
                }
            };
            if data.starts_with(b"ZCUBEX.DATA") {
                return Err(err(
                    &dpath,
                    Place::Byte(0),
                    "compressed Cube data (ZCUBEX) is not supported",
                ));
            }
            if data.len() < 10 || &data[..10] != b"CUBEX.DATA" {
                return Err(err(&dpath, Place::Byte(0), "expected CUBEX.DATA"));
            }
            let want = 10 + 8 * rows.len() * nloc;
            if data.len() != want {
                return Err(err(
                    &dpath,
                    Place::Byte(data.len() as u64),
                    format!(
                        "expected {want} bytes ({} rows of {nloc} 8-byte values), found {}",
                        rows.len(),
                        data.len()
                    ),
                ));
            }
            let mut v = vec![0.0; ncnode * nloc];
            for (r, &c) in rows.iter().enumerate() {
                for j in 0..nloc {
                    let at = 10 + 8 * (r * nloc + j);
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&data[at..at + 8]);
                    v[c * nloc + j] = match dtype.as_str() {
                        "FLOAT" | "DOUBLE" => f64::from_le_bytes(b),
                        "UINT64" => u64::from_le_bytes(b) as f64,
                        "INTEGER" | "INT64" => i64::from_le_bytes(b) as f64,
                        other => {
                            return Err(err(
                                &anchor_path,
                                Place::File,
                                format!("metric {}: dtype {other} is not supported", m.id),
                            ))
                        }
                    };
                }
            }
            if m.inclusive {
                // to exclusive: subtract the children's inclusive values
                let incl = v.clone();
                for (c, node) in cnodes.iter().enumerate() {
                    if let Some(p) = node.parent {
                        for j in 0..nloc {
                            v[p * nloc + j] -= incl[c * nloc + j];
                        }
                    }
                }
            }
            values.push(Rows::from_dense(&v, nloc));
        }
        let creator = cube
            .all("attr")
            .find(|a| a.attr("key") == Some("Creator"))
            .and_then(|a| a.attr("value"))
            .unwrap_or("")
            .to_string();
        Ok(Cube {
            creator,
            metrics,
            regions,
            cnodes,
            system,
            groups,
            locations,
            values,
        })
    }
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

    #[test]
    fn tar_headers_are_ustar_with_valid_checksums() {
        let mut out = Vec::new();
        tar_member(&mut out, "0.index", b"abc", 1_700_000_000).unwrap();
        assert_eq!(out.len(), 1024);
        assert_eq!(&out[257..263], b"ustar\0");
        assert_eq!(&out[100..108], b"0000644\0");
        assert_eq!(&out[124..136], b"00000000003\0");
        let members = read_tar(Path::new("x"), &[out, vec![0; 1024]].concat()).unwrap();
        assert_eq!(members, vec![("0.index".to_string(), 512..515)]);
    }

    fn defs(
        nodes: &[(&str, &str, Option<usize>)],
        groups: &[(&str, Option<usize>)],
        locs: &[(&str, Option<usize>, Option<u32>)],
    ) -> crate::model::Definitions {
        use crate::model::{Location, LocationGroup, SystemTreeNode};
        crate::model::Definitions {
            system_tree: nodes
                .iter()
                .enumerate()
                .map(|(i, (name, class, parent))| SystemTreeNode {
                    id: i as u64,
                    name: name.to_string(),
                    class: class.to_string(),
                    parent: *parent,
                })
                .collect(),
            location_groups: groups
                .iter()
                .enumerate()
                .map(|(i, (name, node))| LocationGroup {
                    id: i as u64,
                    name: name.to_string(),
                    kind: LocationGroupKind::Process,
                    system_tree_parent: *node,
                    creating_group: None,
                })
                .collect(),
            locations: locs
                .iter()
                .enumerate()
                .map(|(i, (name, group, rank))| Location {
                    id: i as u64,
                    name: name.to_string(),
                    kind: LocationKind::CpuThread,
                    group: *group,
                    declared_events: None,
                    rank: *rank,
                })
                .collect(),
            ..Default::default()
        }
    }

    /// A cube with only a system tree (one cnode, one metric), written and read back.
    fn round_trip(d: &crate::model::Definitions) -> (Cube, Cube) {
        let (system, groups, locations, _) = system_tree(d);
        let n = locations.len();
        let cube = Cube {
            creator: "test".into(),
            metrics: vec![CubeMetric {
                id: "time".into(),
                disp_name: "Time".into(),
                unit: Unit::Sec,
                url: String::new(),
                descr: String::new(),
                parent: None,
                inclusive: false,
            }],
            regions: vec![CubeRegion {
                name: "main".into(),
                file: String::new(),
                begin: -1,
                end: -1,
                paradigm: "user".into(),
                role: "function".into(),
                descr: String::new(),
            }],
            cnodes: vec![CubeCnode {
                callee: 0,
                parent: None,
            }],
            system,
            groups,
            locations,
            values: vec![Rows {
                cnodes: vec![0],
                values: (0..n).map(|i| i as f64 + 1.0).collect(),
            }],
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.cubex");
        let mut bytes = Vec::new();
        cube.write(&mut bytes, 0).unwrap();
        std::fs::write(&p, bytes).unwrap();
        let back = Cube::read(&p).unwrap();
        (cube, back)
    }

    #[test]
    fn a_trace_without_system_tree_gets_machine_node_and_a_process_per_location() {
        let d = defs(&[], &[], &[("a", None, None), ("b", None, None)]);
        let (cube, back) = round_trip(&d);
        assert_eq!(cube, back);
        let classes: Vec<&str> = cube.system.iter().map(|n| n.class.as_str()).collect();
        assert_eq!(classes, ["machine", "node"]);
        assert_eq!(cube.system[1].parent, Some(0));
        assert_eq!(cube.groups.len(), 2);
        assert!(cube
            .groups
            .iter()
            .all(|g| g.node == 1 && g.kind == "process"));
        assert_eq!(cube.groups[1].rank, 1);
    }

    #[test]
    fn ranks_spread_over_nodes_keep_location_ids_in_document_order() {
        // round-robin placement: node n0 has ranks 0 and 2, node n1 ranks 1 and 3; rank 2
        // has two threads
        let d = defs(
            &[
                ("m", "machine", None),
                ("n0", "node", Some(0)),
                ("n1", "node", Some(0)),
            ],
            &[
                ("r0", Some(1)),
                ("r1", Some(2)),
                ("r2", Some(1)),
                ("r3", Some(2)),
            ],
            &[
                ("t0", Some(0), Some(0)),
                ("t1", Some(1), Some(1)),
                ("t2", Some(2), Some(2)),
                ("t3", Some(3), Some(3)),
                ("t2.1", Some(2), None),
            ],
        );
        let (cube, back) = round_trip(&d);
        assert_eq!(cube, back);
        let order: Vec<(&str, i64)> = cube
            .locations
            .iter()
            .map(|l| (l.name.as_str(), cube.groups[l.group].rank))
            .collect();
        assert_eq!(
            order,
            [("t0", 0), ("t2", 2), ("t2.1", 2), ("t1", 1), ("t3", 3)]
        );
        assert_eq!(cube.locations[2].rank, 1, "thread number in its process");
        assert_eq!(cube.system[1].name, "node n0");
        // in the XML the location Ids run 0, 1, 2, … in document order
        let xml = cube.anchor_xml();
        let ids: Vec<usize> = xml
            .match_indices("<location Id=\"")
            .map(|(i, m)| {
                let rest = &xml[i + m.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(ids, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn xml_text_is_escaped() {
        assert_eq!(esc("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }
}
