//! The system tree of a Cube report (patterns.md §8.6) from a trace's definitions: machine >
//! node > process > thread, filled in where the trace says less, locations in column order.

use super::{CubeGroup, CubeLocation, SystemNode};
use crate::model::{Definitions, LocationGroupKind, LocationKind, SystemTreeNode};

/// The system tree of a report and, for each of its locations (columns), the model
/// location it shows.
pub(super) struct SystemTree {
    pub nodes: Vec<SystemNode>,
    pub groups: Vec<CubeGroup>,
    pub locations: Vec<CubeLocation>,
    pub columns: Vec<u32>,
}

/// The system tree of §8.6 from the definitions. Machine > node > process > thread where the
/// trace says so; a trace without a system tree gets one machine and one node, processes
/// without a node go to a node, and locations without a process get a process of their own.
pub(super) fn system_tree(d: &Definitions) -> SystemTree {
    let (mut nodes, map) = copy_nodes(d);
    let procs = processes(d, &map);
    // Location Ids (= columns) must be consecutive in document order, so processes go node
    // by node (nodes are in pre-order), by rank within a node.
    let mut fallback = Fallback(None);
    let mut placed = Vec::with_capacity(procs.len());
    for (position, p) in procs.iter().enumerate() {
        let node = match p.node {
            Some(n) => n,
            None => fallback.node(&mut nodes),
        };
        placed.push((node, position));
    }
    placed.sort();
    let (groups, locations, columns) = groups_and_locations(d, &procs, &placed);
    SystemTree {
        nodes,
        groups,
        locations,
        columns,
    }
}

/// The trace's system-tree nodes whose parent chain is sound, in pre-order (children in
/// definition order) under one root, and the report node of each trace node.
fn copy_nodes(d: &Definitions) -> (Vec<SystemNode>, Vec<Option<usize>>) {
    let n = d.system_tree.len();
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
        system.push(machine());
        Some(0)
    };
    let mut stack: Vec<(usize, Option<usize>)> = roots.iter().rev().map(|&r| (r, top)).collect();
    while let Some((i, parent)) = stack.pop() {
        if map[i].is_some() {
            continue;
        }
        let node = &d.system_tree[i];
        map[i] = Some(system.len());
        system.push(SystemNode {
            name: node_name(node),
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
    if system.is_empty() {
        system.push(machine());
    }
    (system, map)
}

fn machine() -> SystemNode {
    SystemNode {
        name: "machine".to_string(),
        class: "machine".to_string(),
        parent: None,
    }
}

/// Scalasca names a node "<class> <name>" ("machine Linux", "node vm").
fn node_name(node: &SystemTreeNode) -> String {
    if node.name.is_empty() {
        node.class.clone()
    } else if node.class.is_empty() {
        node.name.clone()
    } else {
        format!("{} {}", node.class, node.name)
    }
}

/// The node for processes that name none: the trace's only leaf if there is one, else a new
/// node under the root; found (or made) once.
struct Fallback(Option<usize>);

impl Fallback {
    fn node(&mut self, system: &mut Vec<SystemNode>) -> usize {
        if let Some(f) = self.0 {
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
        self.0 = Some(f);
        f
    }
}

/// A process of the report: a location group of the trace, or a location without one.
struct Proc {
    name: String,
    rank: Option<u32>,
    kind: &'static str,
    /// Its report node, if the trace names one.
    node: Option<usize>,
    locs: Vec<u32>,
    order: usize,
}

/// The processes that have locations, ordered by rank (§8.6); processes without a rank
/// after them, in definition order. `map` gives the report node of each trace node.
fn processes(d: &Definitions, map: &[Option<usize>]) -> Vec<Proc> {
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
    procs.sort_by_key(|p| (p.rank.is_none(), p.rank, p.order));
    procs
}

/// The groups and locations of the processes as `placed` (node, position in `procs`), and
/// the model location of each column.
fn groups_and_locations(
    d: &Definitions,
    procs: &[Proc],
    placed: &[(usize, usize)],
) -> (Vec<CubeGroup>, Vec<CubeLocation>, Vec<u32>) {
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
    (groups, locations, columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::cubex::{Cube, CubeCnode, CubeMetric, CubeRegion, Rows};
    use crate::rules::Unit;

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
        let SystemTree {
            nodes: system,
            groups,
            locations,
            ..
        } = system_tree(d);
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
}
