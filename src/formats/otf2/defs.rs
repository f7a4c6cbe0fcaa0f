//! Global definitions (formats.md A.9) into the model's `Definitions`, with the indices
//! that translate OTF2 ids into the model's dense indices.

use super::records::{decode_definition, definition_spec, Value};
use super::wire::{for_each_def_record, DResult, RecordSpec};
use crate::error::Warning;
use crate::model::*;
use std::collections::HashMap;

/// OTF2 id → dense model index, for one kind of definition.
#[derive(Clone, Debug, Default)]
pub struct IdIndex {
    direct: Vec<u32>,
    sparse: HashMap<u64, u32>,
}

impl IdIndex {
    const NONE: u32 = u32::MAX;
    /// Ids below this go to the direct table (Score-P's ids are dense from 0).
    const DIRECT_LIMIT: u64 = 1 << 20;

    pub fn insert(&mut self, id: u64, idx: u32) {
        if id < Self::DIRECT_LIMIT {
            let id = id as usize;
            if self.direct.len() <= id {
                self.direct.resize(id + 1, Self::NONE);
            }
            self.direct[id] = idx;
        } else {
            self.sparse.insert(id, idx);
        }
    }

    #[inline]
    pub fn get(&self, id: u64) -> Option<u32> {
        match self.direct.get(id as usize) {
            Some(&v) if id < Self::DIRECT_LIMIT && v != Self::NONE => Some(v),
            _ => self.sparse.get(&id).copied(),
        }
    }
}

/// What the global definitions give the event decoder besides the model.
#[derive(Debug, Default)]
pub struct GlobalDefs {
    pub defs: Definitions,
    pub timer_resolution: u64,
    pub global_offset: u64,
    pub trace_length: u64,
    pub regions: IdIndex,
    pub comms: IdIndex,
    pub locations: IdIndex,
    pub records: u64,
    pub warnings: Vec<String>,
}

struct Raw {
    spec: &'static RecordSpec,
    values: Vec<Value>,
}

impl Raw {
    fn int(&self, name: &str) -> u64 {
        match self.field(name) {
            Some(Value::Int(v)) => *v,
            _ => u64::MAX,
        }
    }

    fn present(&self, name: &str) -> bool {
        !matches!(self.field(name), None | Some(Value::Absent))
    }

    fn list(&self, name: &str) -> &[u64] {
        match self.field(name) {
            Some(Value::List(v)) => v,
            _ => &[],
        }
    }

    fn field(&self, name: &str) -> Option<&Value> {
        let i = self.spec.fields.iter().position(|f| f.name == name)?;
        self.values.get(i)
    }
}

const UNDEFINED: u64 = u32::MAX as u64;

fn opt(v: u64) -> Option<u64> {
    (v != UNDEFINED && v != u64::MAX).then_some(v)
}

/// Decode `NAME.def`. Which fields a record has follows its length (A.7), not the writer's
/// version.
pub fn read_global_defs(data: &[u8], chunk_size: usize) -> DResult<GlobalDefs> {
    let mut raws: Vec<Raw> = Vec::new();
    let mut g = GlobalDefs::default();
    let mut unknown: HashMap<u8, u64> = HashMap::new();
    for_each_def_record(data, chunk_size, |mut r| {
        g.records += 1;
        match definition_spec(r.id) {
            Some(spec) => {
                let values = decode_definition(spec, &mut r.payload)?;
                raws.push(Raw { spec, values });
            }
            None => *unknown.entry(r.id).or_default() += 1,
        }
        Ok(())
    })?;
    for (id, n) in unknown {
        g.warnings.push(format!(
            "{n} definition record(s) of unknown type {id} skipped"
        ));
        *g.defs
            .record_counts
            .entry(format!("Unknown({id})"))
            .or_default() += n;
    }
    build(&mut g, &raws);
    Ok(g)
}

/// Names by string id; the ids that no String definition declares are counted.
struct Strings<'a> {
    by_id: HashMap<u64, &'a str>,
    missing: u64,
}

impl Strings<'_> {
    fn get(&mut self, id: u64) -> String {
        match self.by_id.get(&id) {
            Some(s) => s.to_string(),
            None if opt(id).is_none() => String::new(),
            None => {
                self.missing += 1;
                format!("<undefined string {id}>")
            }
        }
    }
}

/// The references between definitions, by id, until every definition is known: the index
/// of each id, and what each system tree node, location group, location and communicator
/// (in model order) refers to.
#[derive(Default)]
struct Links {
    tree_index: HashMap<u64, usize>,
    lg_index: HashMap<u64, usize>,
    group_index: HashMap<u64, usize>,
    tree_parents: Vec<u64>,
    /// (system tree parent, creating location group)
    lg_links: Vec<(u64, u64)>,
    loc_groups: Vec<u64>,
    comm_groups: Vec<u64>,
    comm_parent: Vec<u64>,
}

fn build(g: &mut GlobalDefs, raws: &[Raw]) {
    let mut strings = count_and_strings(&mut g.defs, raws);
    let mut links = Links::default();
    for r in raws {
        definition(g, &mut links, &mut strings, r);
    }
    if strings.missing > 0 {
        g.warnings.push(format!(
            "{} name(s) refer to strings that no definition declares",
            strings.missing
        ));
    }
    link(g, &links);
}

/// Count the records per kind; the string table.
fn count_and_strings<'a>(d: &mut Definitions, raws: &'a [Raw]) -> Strings<'a> {
    let mut by_id: HashMap<u64, &str> = HashMap::new();
    for r in raws {
        *d.record_counts.entry(r.spec.name.to_string()).or_default() += 1;
        if r.spec.name == "String" {
            if let Some(Value::Str(s)) = r.field("string") {
                by_id.insert(r.int("self"), s);
            }
        }
    }
    Strings { by_id, missing: 0 }
}

/// One definition record into the model; the ids it refers to go to `links`.
fn definition(g: &mut GlobalDefs, links: &mut Links, s: &mut Strings, r: &Raw) {
    let d = &mut g.defs;
    match r.spec.name {
        "ClockProperties" => {
            g.timer_resolution = r.int("timer_resolution");
            g.global_offset = r.int("global_offset");
            g.trace_length = r.int("trace_length");
        }
        "SystemTreeNode" => {
            links.tree_index.insert(r.int("self"), d.system_tree.len());
            links.tree_parents.push(r.int("parent"));
            d.system_tree.push(SystemTreeNode {
                id: r.int("self"),
                name: s.get(r.int("name")),
                class: s.get(r.int("class_name")),
                parent: None,
            });
        }
        "LocationGroup" => {
            links
                .lg_index
                .insert(r.int("self"), d.location_groups.len());
            links.lg_links.push((
                r.int("system_tree_parent"),
                r.int("creating_location_group"),
            ));
            d.location_groups.push(LocationGroup {
                id: r.int("self"),
                name: s.get(r.int("name")),
                kind: location_group_kind(r.int("location_group_type")),
                system_tree_parent: None,
                creating_group: None,
            });
        }
        "Location" => {
            g.locations.insert(r.int("self"), d.locations.len() as u32);
            links.loc_groups.push(r.int("location_group"));
            d.locations.push(Location {
                id: r.int("self"),
                name: s.get(r.int("name")),
                kind: location_kind(r.int("location_type")),
                group: None,
                declared_events: Some(r.int("number_of_events")),
                rank: None,
            });
        }
        "Region" => {
            g.regions.insert(r.int("self"), d.regions.len() as u32);
            d.regions.push(region(r, s));
        }
        "Group" => {
            links.group_index.insert(r.int("self"), d.groups.len());
            d.groups.push(group(r, s));
        }
        "Comm" => {
            g.comms.insert(r.int("self"), d.comms.len() as u32);
            links.comm_groups.push(r.int("group"));
            links.comm_parent.push(r.int("parent"));
            d.comms.push(Comm {
                id: r.int("self"),
                name: s.get(r.int("name")),
                paradigm: Paradigm::UNKNOWN,
                group: None,
                parent: None,
                flags: if r.present("flags") {
                    r.int("flags") as u32
                } else {
                    0
                },
                ranks: CommRanks::Unknown,
            });
        }
        "MetricMember" => d.metrics.push(Metric {
            id: r.int("self"),
            name: s.get(r.int("name")),
            description: s.get(r.int("description")),
            unit: s.get(r.int("unit")),
            mode: r.int("metric_mode") as u8,
            value_type: r.int("value_type") as u8,
        }),
        _ => {}
    }
}

fn region(r: &Raw, s: &mut Strings) -> Region {
    let name = s.get(r.int("name"));
    // Before OTF2 1.1 there is no canonical name, role or paradigm (A.9).
    let (canonical_name, role, paradigm, flags) = if r.present("region_role") {
        (
            s.get(r.int("canonical_name")),
            RegionRole(r.int("region_role") as u8),
            Paradigm(r.int("paradigm") as u8),
            r.int("region_flags") as u32,
        )
    } else {
        let (role, paradigm) = role_from_region_type(r.int("region_type") as u8);
        (name.clone(), role, paradigm, 0)
    };
    Region {
        id: r.int("self"),
        name,
        canonical_name,
        description: s.get(r.int("description")),
        role,
        paradigm,
        flags,
        source_file: s.get(r.int("source_file")),
        begin_line: r.int("begin_line_number") as u32,
        end_line: r.int("end_line_number") as u32,
    }
}

fn group(r: &Raw, s: &mut Strings) -> Group {
    let (kind, paradigm, flags) = if r.present("group_type") {
        (
            group_kind(r.int("group_type") as u8),
            Paradigm(r.int("paradigm") as u8),
            r.int("group_flags") as u32,
        )
    } else {
        group_kind_pre12(r.int("group_type_pre12") as u8)
    };
    Group {
        id: r.int("self"),
        name: s.get(r.int("name")),
        kind,
        paradigm,
        flags,
        members: r.list("members").to_vec(),
    }
}

/// Links between definitions, now that every id is known.
fn link(g: &mut GlobalDefs, links: &Links) {
    let d = &mut g.defs;
    let tree = &links.tree_index;
    for (n, p) in d.system_tree.iter_mut().zip(&links.tree_parents) {
        n.parent = opt(*p).and_then(|p| tree.get(&p).copied());
    }
    for (lg, (parent, creator)) in d.location_groups.iter_mut().zip(&links.lg_links) {
        lg.system_tree_parent = opt(*parent).and_then(|p| tree.get(&p).copied());
        lg.creating_group = opt(*creator).and_then(|p| links.lg_index.get(&p).copied());
    }
    for (l, grp) in d.locations.iter_mut().zip(&links.loc_groups) {
        l.group = links.lg_index.get(grp).copied();
    }
    let parents: Vec<Option<usize>> = links
        .comm_parent
        .iter()
        .map(|p| opt(*p).and_then(|p| g.comms.get(p)).map(|i| i as usize))
        .collect();
    for (c, p) in d.comms.iter_mut().zip(parents) {
        c.parent = p;
    }
    resolve_ranks(g, &links.group_index, &links.lg_index, &links.comm_groups);
}

/// World ranks and communicator members (formats.md A.9, Group).
fn resolve_ranks(
    g: &mut GlobalDefs,
    group_index: &HashMap<u64, usize>,
    lg_index: &HashMap<u64, usize>,
    comm_groups: &[u64],
) {
    let d = &mut g.defs;
    let loc_of_id = |id: u64| g.locations.get(id);
    // The first location of each location group (its master thread).
    let mut first_loc_of_group: HashMap<usize, u32> = HashMap::new();
    for (i, l) in d.locations.iter().enumerate() {
        if let Some(grp) = l.group {
            first_loc_of_group.entry(grp).or_insert(i as u32);
        }
    }
    // world[paradigm] = world rank → location
    let mut world: HashMap<u8, Vec<Option<u32>>> = HashMap::new();
    for grp in &d.groups {
        let members: Vec<Option<u32>> = match grp.kind {
            GroupKind::CommLocations => grp.members.iter().map(|&m| loc_of_id(m)).collect(),
            GroupKind::CommLocationGroups => grp
                .members
                .iter()
                .map(|&m| {
                    lg_index
                        .get(&m)
                        .and_then(|lg| first_loc_of_group.get(lg).copied())
                })
                .collect(),
            _ => continue,
        };
        world.entry(grp.paradigm.0).or_insert(members);
    }
    if let Some(mpi) = world.get(&Paradigm::MPI.0) {
        for (rank, loc) in mpi.iter().enumerate() {
            if let Some(l) = loc {
                d.locations[*l as usize].rank = Some(rank as u32);
            }
        }
    }
    // Without a COMM_LOCATIONS group, the location group id of a process is its rank.
    let fallback_world = |rank: u64| -> Option<u32> {
        let lg = lg_index.get(&rank)?;
        first_loc_of_group.get(lg).copied()
    };
    for (c, &gid) in d.comms.iter_mut().zip(comm_groups) {
        let Some(&gi) = group_index.get(&gid) else {
            continue;
        };
        let grp = &d.groups[gi];
        c.group = Some(gi);
        c.paradigm = grp.paradigm;
        let w = world.get(&grp.paradigm.0);
        let world_loc = |r: u64| -> Option<u32> {
            match w {
                Some(w) => w.get(r as usize).copied().flatten(),
                None => fallback_world(r),
            }
        };
        c.ranks = match grp.kind {
            GroupKind::CommSelf => CommRanks::SelfOnly,
            GroupKind::CommGroup if grp.flags & 1 != 0 => match w {
                Some(w) => CommRanks::Locations(w.clone()),
                None => CommRanks::Unknown,
            },
            GroupKind::CommGroup => {
                CommRanks::Locations(grp.members.iter().map(|&r| world_loc(r)).collect())
            }
            GroupKind::CommLocations => {
                CommRanks::Locations(grp.members.iter().map(|&m| loc_of_id(m)).collect())
            }
            _ => CommRanks::Unknown,
        };
    }
}

fn location_group_kind(t: u64) -> LocationGroupKind {
    match t {
        1 => LocationGroupKind::Process,
        2 => LocationGroupKind::Accelerator,
        _ => LocationGroupKind::Unknown,
    }
}

fn location_kind(t: u64) -> LocationKind {
    match t {
        1 => LocationKind::CpuThread,
        2 => LocationKind::AcceleratorStream,
        3 => LocationKind::Metric,
        _ => LocationKind::Unknown,
    }
}

fn group_kind(t: u8) -> GroupKind {
    match t {
        1 => GroupKind::Locations,
        2 => GroupKind::Regions,
        3 => GroupKind::Metric,
        4 => GroupKind::CommLocations,
        5 => GroupKind::CommGroup,
        6 => GroupKind::CommSelf,
        7 => GroupKind::CommLocationGroups,
        _ => GroupKind::Unknown,
    }
}

/// Pre-1.2 group types (A.9: METRIC → REGIONS is the library's behaviour).
fn group_kind_pre12(t: u8) -> (GroupKind, Paradigm, u32) {
    match t {
        1 => (GroupKind::Locations, Paradigm::UNKNOWN, 0),
        2 | 3 => (GroupKind::Regions, Paradigm::UNKNOWN, 0),
        4 => (GroupKind::CommGroup, Paradigm::MPI, 0),
        5 => (GroupKind::CommSelf, Paradigm::MPI, 0),
        6 => (GroupKind::CommLocations, Paradigm::MPI, 0),
        _ => (GroupKind::Unknown, Paradigm::UNKNOWN, 0),
    }
}

/// Role and paradigm of a pre-1.1 region from its deprecated region type (A.9).
fn role_from_region_type(t: u8) -> (RegionRole, Paradigm) {
    let omp = |role: u8| (RegionRole(role), Paradigm::OPENMP);
    match t {
        1 | 3 => (RegionRole::FUNCTION, Paradigm::USER),
        2 => (RegionRole::LOOP, Paradigm::USER),
        4 => (RegionRole::FILE_IO, Paradigm::USER),
        5 => omp(5),
        6 => omp(3),
        7 => omp(6),
        8 => omp(7),
        9 => omp(8),
        10 => omp(9),
        11 => omp(11),
        12 => omp(12),
        13 => omp(14),
        14 => omp(15),
        15 => omp(16),
        16 => omp(17),
        17 => omp(13),
        18 => omp(10),
        19 => omp(2),
        20 => omp(20),
        21 => omp(22),
        33 => omp(21),
        34 => omp(18),
        35 => omp(19),
        // MPI_COLL_* and the rest: the library maps them to UNKNOWN (A.9)
        _ => (RegionRole::UNKNOWN, Paradigm::UNKNOWN),
    }
}

pub fn warnings_for(file: &str, msgs: Vec<String>) -> Vec<Warning> {
    msgs.into_iter()
        .map(|message| Warning {
            file: file.to_string(),
            message,
        })
        .collect()
}
