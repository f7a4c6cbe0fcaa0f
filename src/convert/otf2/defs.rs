//! The global definitions (`traces.def`) of an archive written from the model: clock,
//! system tree, location groups, locations, regions, groups, communicators, metrics; each
//! String just before the first definition that names it. Model indices become the
//! format's ids the trace had (`Ids`); what a reader reconstructed (communicators without
//! a group) gets a group of its own, so the archive reads back to the same model.

use super::stream::{u32c, u64c, Stream, DEF_CHUNK, UNDEFINED};
use crate::model::*;
use std::collections::{BTreeMap, HashMap};
use std::io;

/// The ids each definition is written with: locations keep the trace's own where they are
/// distinct (else the model index); the others are numbered as `dense` says.
pub struct Ids {
    pub regions: Vec<u32>,
    pub comms: Vec<u32>,
    /// The trace's communicator id → the id written (events name communicators by id in
    /// their fields: thread teams).
    pub comm_by_id: HashMap<u64, u32>,
    pub tree: Vec<u32>,
    pub location_groups: Vec<u32>,
    pub locations: Vec<u64>,
    /// A Metric event's class id → the id it is written with.
    pub metric_classes: HashMap<u32, u32>,
}

fn own_or_index(ids: impl Iterator<Item = u64>, max: u64) -> Vec<u64> {
    let ids: Vec<u64> = ids.collect();
    let mut seen = std::collections::HashSet::new();
    if ids.iter().all(|&i| i < max && seen.insert(i)) {
        ids
    } else {
        (0..ids.len() as u64).collect()
    }
}

/// Ids 0, 1, 2, ... in definition order: the official reader wants system tree nodes,
/// location groups, regions, groups, communicators and metrics numbered so (a trace
/// written by it has them so already).
fn dense(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

impl Ids {
    pub fn new(d: &Definitions) -> Ids {
        Ids {
            regions: dense(d.regions.len()),
            comms: dense(d.comms.len()),
            comm_by_id: (d.comms.iter().enumerate())
                .map(|(k, c)| (c.id, k as u32))
                .collect(),
            tree: dense(d.system_tree.len()),
            location_groups: dense(d.location_groups.len()),
            locations: own_or_index(d.locations.iter().map(|l| l.id), u64::MAX),
            metric_classes: HashMap::new(),
        }
    }
}

/// The metric classes the Metric events name, by the id the events give them (written as
/// 0, 1, 2, ... in this order, `Ids::metric_classes`), with their members (model indices
/// of `Definitions::metrics`, written as the members' ids).
pub type MetricClasses = Vec<(u32, Vec<u32>)>;

/// The definition stream with its string table.
struct Defs {
    s: Stream<Vec<u8>>,
    strings: HashMap<String, u32>,
    count: u64,
    b: Vec<u8>,
}

impl Defs {
    fn string(&mut self, text: &str) -> io::Result<u32> {
        if let Some(&id) = self.strings.get(text) {
            return Ok(id);
        }
        let id = self.strings.len() as u32;
        let mut b = Vec::with_capacity(text.len() + 6);
        u32c(&mut b, id);
        super::stream::string(&mut b, text);
        self.s.def(10, &b)?;
        self.count += 1;
        self.strings.insert(text.to_string(), id);
        Ok(id)
    }

    fn record(&mut self, ty: u8) -> io::Result<()> {
        self.s.def(ty, &self.b)?;
        self.count += 1;
        Ok(())
    }
}

fn opt_id(v: &[u32], i: Option<usize>) -> u32 {
    i.and_then(|i| v.get(i).copied()).unwrap_or(UNDEFINED)
}

/// `traces.def` and the number of definitions it holds.
pub fn global_defs(t: &Trace, ids: &Ids, classes: &MetricClasses) -> io::Result<(Vec<u8>, u64)> {
    let mut w = Defs {
        s: Stream::new(Vec::new(), DEF_CHUNK),
        strings: HashMap::new(),
        count: 0,
        b: Vec::new(),
    };
    // ClockProperties (5): resolution, global offset, length (no realtime timestamp)
    w.b.clear();
    u64c(&mut w.b, t.timer_resolution);
    u64c(&mut w.b, t.global_offset);
    u64c(&mut w.b, t.trace_length);
    w.record(5)?;
    let counts: Vec<u64> = t.events.iter().map(|e| e.len() as u64).collect();
    system(&mut w, &t.defs, ids, &counts)?;
    regions(&mut w, &t.defs, ids)?;
    comms(&mut w, &t.defs, ids, t.origin.format == "OTF2")?;
    metrics(&mut w, &t.defs, classes)?;
    let count = w.count;
    Ok((w.s.finish()?, count))
}

/// System tree nodes (12), location groups (13), locations (14).
fn system(w: &mut Defs, d: &Definitions, ids: &Ids, counts: &[u64]) -> io::Result<()> {
    for (k, n) in d.system_tree.iter().enumerate() {
        let (name, class) = (w.string(&n.name)?, w.string(&n.class)?);
        w.b.clear();
        u32c(&mut w.b, ids.tree[k]);
        u32c(&mut w.b, name);
        u32c(&mut w.b, class);
        u32c(&mut w.b, opt_id(&ids.tree, n.parent));
        w.record(12)?;
    }
    for (k, g) in d.location_groups.iter().enumerate() {
        let name = w.string(&g.name)?;
        w.b.clear();
        u32c(&mut w.b, ids.location_groups[k]);
        u32c(&mut w.b, name);
        w.b.push(match g.kind {
            LocationGroupKind::Unknown => 0,
            LocationGroupKind::Process => 1,
            LocationGroupKind::Accelerator => 2,
        });
        u32c(&mut w.b, opt_id(&ids.tree, g.system_tree_parent));
        u32c(&mut w.b, opt_id(&ids.location_groups, g.creating_group));
        w.record(13)?;
    }
    for (k, l) in d.locations.iter().enumerate() {
        let name = w.string(&l.name)?;
        w.b.clear();
        u64c(&mut w.b, ids.locations[k]);
        u32c(&mut w.b, name);
        w.b.push(match l.kind {
            LocationKind::Unknown => 0,
            LocationKind::CpuThread => 1,
            LocationKind::AcceleratorStream => 2,
            LocationKind::Metric => 3,
        });
        u64c(&mut w.b, counts.get(k).copied().unwrap_or(0));
        u32c(&mut w.b, opt_id(&ids.location_groups, l.group));
        w.record(14)?;
    }
    Ok(())
}

/// Regions (15), with role, paradigm and flags (OTF2 1.1 and later).
fn regions(w: &mut Defs, d: &Definitions, ids: &Ids) -> io::Result<()> {
    for (k, r) in d.regions.iter().enumerate() {
        let name = w.string(&r.name)?;
        let description = w.string(&r.description)?;
        let file = w.string(&r.source_file)?;
        let canonical = w.string(&r.canonical_name)?;
        w.b.clear();
        u32c(&mut w.b, ids.regions[k]);
        u32c(&mut w.b, name);
        u32c(&mut w.b, description);
        w.b.push(0); // the deprecated region type: the role and paradigm say it
        u32c(&mut w.b, file);
        u32c(&mut w.b, r.begin_line);
        u32c(&mut w.b, r.end_line);
        u32c(&mut w.b, canonical);
        w.b.push(r.role.0);
        w.b.push(r.paradigm.0);
        u32c(&mut w.b, r.flags);
        w.record(15)?;
    }
    Ok(())
}

fn group_type(k: GroupKind) -> (u8, u8) {
    // (OTF2 1.2 group type, the pre-1.2 type)
    match k {
        GroupKind::Unknown => (0, 0),
        GroupKind::Locations => (1, 1),
        GroupKind::Regions => (2, 2),
        GroupKind::Metric => (3, 3),
        GroupKind::CommLocations => (4, 6),
        GroupKind::CommGroup => (5, 4),
        GroupKind::CommSelf => (6, 5),
        GroupKind::CommLocationGroups => (7, 0),
    }
}

fn group(w: &mut Defs, id: u32, g: &Group) -> io::Result<()> {
    let name = w.string(&g.name)?;
    let (ty, pre12) = group_type(g.kind);
    w.b.clear();
    u32c(&mut w.b, id);
    u32c(&mut w.b, name);
    w.b.push(pre12);
    u32c(&mut w.b, g.members.len() as u32);
    for &m in &g.members {
        u64c(&mut w.b, m);
    }
    w.b.push(ty);
    w.b.push(g.paradigm.0);
    u32c(&mut w.b, g.flags);
    w.record(18)
}

/// Each location's rank in the world group of `paradigm` as the reader resolves it (the
/// first COMM_LOCATIONS or COMM_LOCATION_GROUPS group of that paradigm), if there is one.
fn world_ranks(d: &Definitions, ids: &Ids, paradigm: Paradigm) -> Option<HashMap<u32, u64>> {
    let g = d.groups.iter().find(|g| {
        matches!(
            g.kind,
            GroupKind::CommLocations | GroupKind::CommLocationGroups
        ) && g.paradigm == paradigm
    })?;
    let mut rank = HashMap::new();
    for (r, &m) in g.members.iter().enumerate() {
        let loc = match g.kind {
            GroupKind::CommLocations => ids.locations.iter().position(|&l| l == m),
            _ => (d.location_groups.iter().position(|lg| lg.id == m))
                .and_then(|lg| d.locations.iter().position(|l| l.group == Some(lg))),
        };
        if let Some(l) = loc {
            rank.entry(l as u32).or_insert(r as u64);
        }
    }
    Some(rank)
}

/// Groups (18) and communicators (22). OTF2 allows one world group (COMM_LOCATIONS) per
/// paradigm; a communicator the reader built without a group (OTF 1, Paje) gets a
/// COMM_GROUP of its members' ranks in the world group of its paradigm, which is written
/// first when the trace has none: for MPI the locations by their rank, for any other
/// paradigm all locations in order (so it gives no location a rank it did not have).
///
/// Groups mean what OTF2 says only in a trace read from OTF2: from any other format
/// (OTF 1's process groups list process ids) every communicator gets a group made here,
/// named as the trace's group, and the trace's groups are not written.
fn comms(w: &mut Defs, d: &Definitions, ids: &Ids, otf2: bool) -> io::Result<()> {
    let own = |c: &Comm| c.group.filter(|_| otf2);
    let trace_groups: &[Group] = if otf2 { &d.groups } else { &[] };
    // groups are numbered 0, 1, 2, ... as written: the worlds made here, the trace's
    // groups, the communicators' groups made here
    let mut made: Vec<Group> = Vec::new();
    let mut worlds: BTreeMap<u8, HashMap<u32, u64>> = BTreeMap::new();
    // the MPI world gives the locations their ranks (OTF 1 has ranks without communicators)
    let ranked = d
        .locations
        .iter()
        .any(|l| l.rank.is_some())
        .then_some(Paradigm::MPI);
    let needed = d
        .comms
        .iter()
        .filter(|c| own(c).is_none())
        .map(|c| c.paradigm);
    for p in ranked.into_iter().chain(needed) {
        if worlds.contains_key(&p.0) {
            continue;
        }
        if let Some(r) = world_ranks(d, ids, p) {
            worlds.insert(p.0, r);
            continue;
        }
        let order: Vec<(u64, u32)> = if p == Paradigm::MPI {
            (d.locations.iter().enumerate())
                .filter_map(|(k, l)| l.rank.map(|r| (r as u64, k as u32)))
                .collect()
        } else {
            (0..d.locations.len())
                .map(|k| (k as u64, k as u32))
                .collect()
        };
        let n = order.iter().map(|&(r, _)| r + 1).max().unwrap_or(0);
        let mut members = vec![u64::MAX; n as usize];
        for &(r, k) in &order {
            members[r as usize] = ids.locations[k as usize];
        }
        let world = Group {
            id: 0,
            name: format!("{} world", p.name()),
            kind: GroupKind::CommLocations,
            paradigm: p,
            flags: 0,
            members,
        };
        made.push(world);
        worlds.insert(p.0, order.iter().map(|&(r, k)| (k, r)).collect());
    }
    let base = made.len() as u32;
    for (k, g) in made.iter().chain(trace_groups).enumerate() {
        group(w, k as u32, g)?;
    }
    let mut next = base + trace_groups.len() as u32;
    for (k, c) in d.comms.iter().enumerate() {
        let gid = match (own(c), &c.ranks) {
            (Some(gi), _) => base + gi as u32,
            (None, CommRanks::Unknown) => UNDEFINED,
            (None, ranks) => {
                let world = &worlds[&c.paradigm.0];
                let (kind, members) = match ranks {
                    CommRanks::Locations(v) => (
                        GroupKind::CommGroup,
                        (v.iter())
                            .map(|l| l.and_then(|l| world.get(&l).copied()))
                            .map(|r| r.unwrap_or(u32::MAX as u64))
                            .collect(),
                    ),
                    _ => (GroupKind::CommSelf, Vec::new()),
                };
                let g = Group {
                    id: 0,
                    name: (c.group.and_then(|g| d.groups.get(g)))
                        .map_or_else(String::new, |g| g.name.clone()),
                    kind,
                    paradigm: c.paradigm,
                    flags: 0,
                    members,
                };
                group(w, next, &g)?;
                next += 1;
                next - 1
            }
        };
        let name = w.string(&c.name)?;
        w.b.clear();
        u32c(&mut w.b, ids.comms[k]);
        u32c(&mut w.b, name);
        u32c(&mut w.b, gid);
        u32c(&mut w.b, opt_id(&ids.comms, c.parent));
        u32c(&mut w.b, c.flags);
        w.record(22)?;
    }
    Ok(())
}

/// Metric members (19) and the classes (20) the Metric events name.
fn metrics(w: &mut Defs, d: &Definitions, classes: &MetricClasses) -> io::Result<()> {
    // members and classes numbered 0, 1, 2, ... (the official reader wants them so)
    for (k, m) in d.metrics.iter().enumerate() {
        let name = w.string(&m.name)?;
        let description = w.string(&m.description)?;
        let unit = w.string(&m.unit)?;
        w.b.clear();
        u32c(&mut w.b, k as u32);
        u32c(&mut w.b, name);
        u32c(&mut w.b, description);
        w.b.push(0); // metric type: OTHER (the model does not keep it)
        w.b.push(m.mode);
        w.b.push(m.value_type);
        w.b.push(1); // base: DECIMAL
        u64c(&mut w.b, 0); // exponent
        u32c(&mut w.b, unit);
        w.record(19)?;
    }
    for (id, (_, members)) in classes.iter().enumerate() {
        w.b.clear();
        u32c(&mut w.b, id as u32);
        w.b.push(members.len() as u8);
        for &m in members {
            u32c(&mut w.b, m);
        }
        w.b.push(0); // occurrence: SYNCHRONOUS_STRICT
        w.b.push(0); // recorder kind: UNKNOWN
        w.record(20)?;
    }
    Ok(())
}
