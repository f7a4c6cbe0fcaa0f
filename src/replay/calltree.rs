//! The global call tree (patterns.md §3.1): call paths merged over all locations, numbered
//! in depth-first pre-order with children in order of first appearance.

use crate::model::RegionIdx;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Index of a call path in `CallTree::nodes` (= its id in every output, §3.1.5).
pub type CnodeIdx = u32;

pub const NO_CNODE: CnodeIdx = u32::MAX;

/// The region a call path calls: a trace region, or the artificial root of §3.1.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Callee {
    Region(RegionIdx),
    /// Created when the locations do not share one bottom region (§3.1.4).
    ArtificialRoot,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallNode {
    pub parent: Option<CnodeIdx>,
    pub callee: Callee,
    pub depth: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallTree {
    pub nodes: Vec<CallNode>,
    pub children: Vec<Vec<CnodeIdx>>,
}

impl CallTree {
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The call path as callees from the root down.
    pub fn path(&self, c: CnodeIdx) -> Vec<Callee> {
        let mut out = Vec::new();
        let mut cur = Some(c);
        while let Some(i) = cur {
            let n = &self.nodes[i as usize];
            out.push(n.callee);
            cur = n.parent;
        }
        out.reverse();
        out
    }
}

/// The call paths one location creates, before merging.
#[derive(Clone, Debug, Default)]
pub struct LocalTree {
    /// (parent local id or NO_CNODE, region)
    pub nodes: Vec<(CnodeIdx, RegionIdx)>,
    /// Timestamp of the first ENTER of each local call path.
    pub first: Vec<u64>,
    /// The children of each local call path, and of none (`roots`), as (region, child): a
    /// short list is scanned faster than the map is hashed (`child` runs at every ENTER).
    kids: Vec<Vec<(RegionIdx, CnodeIdx)>>,
    roots: Vec<(RegionIdx, CnodeIdx)>,
    index: HashMap<(CnodeIdx, RegionIdx), CnodeIdx, BuildHasherDefault<PairHasher>>,
    /// (parent, region, child) of recent lookups, `RECENT` slots by a hash of the key
    /// (empty until the first lookup; a free slot holds a key no call path has).
    recent: Vec<(CnodeIdx, RegionIdx, CnodeIdx)>,
}

/// Slots of `LocalTree::recent`.
const RECENT: usize = 32;

/// `LocalTree::recent` once made: (parent, region, child) by `recent_slot`.
pub(super) type Recent = [(CnodeIdx, RegionIdx, CnodeIdx); RECENT];

/// The child of `parent` calling `region` if it is among the recent lookups of `r` (a
/// lookup without a branch on the table's length).
#[inline(always)]
pub(super) fn recent_child(r: &Recent, parent: CnodeIdx, region: RegionIdx) -> Option<CnodeIdx> {
    let (p, g, c) = r[recent_slot(parent, region)];
    (p == parent && g == region).then_some(c)
}

#[inline(always)]
fn recent_slot(parent: CnodeIdx, region: RegionIdx) -> usize {
    (parent.wrapping_mul(0x9e37_79b9) ^ region) as usize % RECENT
}

/// Up to this many children a call path's list is scanned rather than the map consulted.
const FEW: usize = 8;

/// A multiply-rotate hasher for the (parent, region) keys of `LocalTree::child`, which runs
/// at every ENTER: SipHash cost a few percent of a whole analysis. Keys come from the
/// trace, but a location's call tree is small and the map is private to it.
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl LocalTree {
    /// A tree made of its nodes and first-ENTER times alone, as `merge` reads it (the
    /// trees of other processes in `run --mpi`, issue 24).
    pub fn from_parts(nodes: Vec<(CnodeIdx, RegionIdx)>, first: Vec<u64>) -> LocalTree {
        LocalTree {
            nodes,
            first,
            ..Default::default()
        }
    }

    /// The child call path of `parent` (`NO_CNODE`: a root) calling `region`, created at
    /// time `t` when new.
    #[inline(always)]
    pub fn child(&mut self, parent: CnodeIdx, region: RegionIdx, t: u64) -> CnodeIdx {
        let slot = recent_slot(parent, region);
        match self.recent.get(slot) {
            Some(&(p, r, c)) if p == parent && r == region => c,
            _ => self.child_looked_up(parent, region, t, slot),
        }
    }

    /// The recent lookups as `recent_child` reads them (`None` before the first lookup).
    #[inline]
    pub(super) fn recent(&self) -> Option<&Recent> {
        self.recent.as_slice().try_into().ok()
    }

    #[inline(never)]
    fn child_looked_up(
        &mut self,
        parent: CnodeIdx,
        region: RegionIdx,
        t: u64,
        slot: usize,
    ) -> CnodeIdx {
        let c = self.find_child(parent, region, t);
        if self.recent.is_empty() {
            self.recent = vec![(NO_CNODE, RegionIdx::MAX, NO_CNODE); RECENT];
        }
        self.recent[slot] = (parent, region, c);
        c
    }

    fn find_child(&mut self, parent: CnodeIdx, region: RegionIdx, t: u64) -> CnodeIdx {
        let list = match parent {
            NO_CNODE => &self.roots,
            p => &self.kids[p as usize],
        };
        if list.len() < FEW {
            if let Some(&(_, c)) = list.iter().find(|k| k.0 == region) {
                return c;
            }
        } else if let Some(&c) = self.index.get(&(parent, region)) {
            return c;
        }
        self.add(parent, region, t)
    }

    #[cold]
    fn add(&mut self, parent: CnodeIdx, region: RegionIdx, t: u64) -> CnodeIdx {
        let n = self.nodes.len() as CnodeIdx;
        self.nodes.push((parent, region));
        self.first.push(t);
        self.kids.push(Vec::new());
        self.index.insert((parent, region), n);
        match parent {
            NO_CNODE => self.roots.push((region, n)),
            p => self.kids[p as usize].push((region, n)),
        }
        n
    }
}

/// Merge the locations' trees. `loc_ids` are the locations' ids in the trace and `region_ids`
/// the regions' ids (tie-breakers of §3.1.5). Returns the tree and, per location, the map
/// from local to global call-path ids.
pub fn merge(
    locals: &[LocalTree],
    loc_ids: &[u64],
    region_ids: &[u64],
) -> (CallTree, Vec<Vec<CnodeIdx>>) {
    // Provisional global nodes keyed by (provisional parent, callee).
    struct Prov {
        parent: Option<usize>,
        callee: Callee,
        first: (u64, u64, u64),
        children: Vec<usize>,
    }
    let mut prov: Vec<Prov> = Vec::new();
    let mut index: HashMap<(Option<usize>, Callee), usize> = HashMap::new();
    let mut roots: Vec<usize> = Vec::new();
    let mut maps: Vec<Vec<usize>> = Vec::with_capacity(locals.len());
    for (l, lt) in locals.iter().enumerate() {
        let mut map = Vec::with_capacity(lt.nodes.len());
        for (k, &(parent, region)) in lt.nodes.iter().enumerate() {
            // a local node's parent always precedes it
            let gp = (parent != NO_CNODE).then(|| map[parent as usize]);
            let callee = Callee::Region(region);
            let key = (
                lt.first[k],
                loc_ids[l],
                region_ids.get(region as usize).copied().unwrap_or(u64::MAX),
            );
            let g = match index.get(&(gp, callee)) {
                Some(&g) => {
                    if key < prov[g].first {
                        prov[g].first = key;
                    }
                    g
                }
                None => {
                    let g = prov.len();
                    prov.push(Prov {
                        parent: gp,
                        callee,
                        first: key,
                        children: Vec::new(),
                    });
                    index.insert((gp, callee), g);
                    match gp {
                        Some(p) => prov[p].children.push(g),
                        None => roots.push(g),
                    }
                    g
                }
            };
            map.push(g);
        }
        maps.push(map);
    }
    // §3.1.4: exactly one root; otherwise an artificial one above the real roots.
    let artificial = roots.len() > 1;
    if artificial {
        let a = prov.len();
        let first = roots
            .iter()
            .map(|&r| prov[r].first)
            .min()
            .unwrap_or((0, 0, 0));
        prov.push(Prov {
            parent: None,
            callee: Callee::ArtificialRoot,
            first,
            children: roots.clone(),
        });
        for &r in &roots {
            prov[r].parent = Some(a);
        }
        roots = vec![a];
    }
    // Depth-first pre-order, children by first appearance (§3.1.5).
    let mut final_id = vec![NO_CNODE; prov.len()];
    let mut tree = CallTree::default();
    let mut stack: Vec<(usize, u32)> = roots.iter().rev().map(|&r| (r, 0)).collect();
    while let Some((p, depth)) = stack.pop() {
        let id = tree.nodes.len() as CnodeIdx;
        final_id[p] = id;
        tree.nodes.push(CallNode {
            parent: prov[p].parent.map(|q| final_id[q]),
            callee: prov[p].callee,
            depth,
        });
        let mut kids = prov[p].children.clone();
        kids.sort_by_key(|&k| prov[k].first);
        for &k in kids.iter().rev() {
            stack.push((k, depth + 1));
        }
    }
    tree.children = vec![Vec::new(); tree.nodes.len()];
    for (i, n) in tree.nodes.iter().enumerate() {
        if let Some(p) = n.parent {
            tree.children[p as usize].push(i as CnodeIdx);
        }
    }
    let maps = maps
        .into_iter()
        .map(|m| m.into_iter().map(|g| final_id[g]).collect())
        .collect();
    (tree, maps)
}
