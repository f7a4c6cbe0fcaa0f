//! Definitions every reader fills: regions, the system tree, locations, groups and
//! communicators. Indices into these vectors are the model's ids (dense, 0-based); the
//! format's own ids are kept in `id` fields for display and cross-checks.

use serde::Serialize;

/// Index of a region in `Definitions::regions`.
pub type RegionIdx = u32;
/// Index of a communicator in `Definitions::comms`.
pub type CommIdx = u32;
/// Index of a location in `Definitions::locations` (and `Trace::events`).
pub type LocIdx = u32;

/// `OTF2_Paradigm` values (formats.md A.12); other formats map onto the same numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(into = "&'static str")]
pub struct Paradigm(pub u8);

impl Paradigm {
    pub const UNKNOWN: Paradigm = Paradigm(0);
    pub const USER: Paradigm = Paradigm(1);
    pub const COMPILER: Paradigm = Paradigm(2);
    pub const OPENMP: Paradigm = Paradigm(3);
    pub const MPI: Paradigm = Paradigm(4);
    pub const MEASUREMENT_SYSTEM: Paradigm = Paradigm(6);
    pub const PTHREAD: Paradigm = Paradigm(7);

    const NAMES: [&'static str; 26] = [
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
        "winthread",
        "qtthread",
        "acethread",
        "tbbthread",
        "openacc",
        "opencl",
        "mtapi",
        "sampling",
        "none",
        "hip",
        "kokkos",
        "openmp_target",
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES.get(self.0 as usize).copied().unwrap_or("other")
    }
}

impl From<Paradigm> for &'static str {
    fn from(p: Paradigm) -> &'static str {
        p.name()
    }
}

/// `OTF2_RegionRole` values (formats.md A.12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(into = "&'static str")]
pub struct RegionRole(pub u8);

impl RegionRole {
    pub const UNKNOWN: RegionRole = RegionRole(0);
    pub const FUNCTION: RegionRole = RegionRole(1);
    pub const WRAPPER: RegionRole = RegionRole(2);
    pub const LOOP: RegionRole = RegionRole(3);
    pub const CODE: RegionRole = RegionRole(4);
    pub const PARALLEL: RegionRole = RegionRole(5);
    pub const BARRIER: RegionRole = RegionRole(15);
    pub const IMPLICIT_BARRIER: RegionRole = RegionRole(16);
    pub const TASK: RegionRole = RegionRole(20);
    pub const TASK_UNTIED: RegionRole = RegionRole(34);
    pub const COLL_ONE2ALL: RegionRole = RegionRole(23);
    pub const COLL_ALL2ONE: RegionRole = RegionRole(24);
    pub const COLL_ALL2ALL: RegionRole = RegionRole(25);
    pub const COLL_OTHER: RegionRole = RegionRole(26);
    pub const FILE_IO: RegionRole = RegionRole(27);
    pub const POINT2POINT: RegionRole = RegionRole(28);

    const NAMES: [&'static str; 41] = [
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
        "single_sblock",
        "master",
        "critical",
        "critical_sblock",
        "atomic",
        "barrier",
        "implicit_barrier",
        "flush",
        "ordered",
        "ordered_sblock",
        "task",
        "task_create",
        "task_wait",
        "coll_one2all",
        "coll_all2one",
        "coll_all2all",
        "coll_other",
        "file_io",
        "point2point",
        "rma",
        "data_transfer",
        "artificial",
        "thread_create",
        "thread_wait",
        "task_untied",
        "allocate",
        "deallocate",
        "reallocate",
        "file_io_metadata",
        "cancel",
        "kernel",
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES.get(self.0 as usize).copied().unwrap_or("other")
    }
}

impl From<RegionRole> for &'static str {
    fn from(r: RegionRole) -> &'static str {
        r.name()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Region {
    /// The region's id in the trace file.
    pub id: u64,
    pub name: String,
    pub canonical_name: String,
    pub description: String,
    pub role: RegionRole,
    pub paradigm: Paradigm,
    pub flags: u32,
    pub source_file: String,
    pub begin_line: u32,
    pub end_line: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemTreeNode {
    pub id: u64,
    pub name: String,
    /// "machine", "node", ...
    pub class: String,
    pub parent: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LocationGroupKind {
    Unknown,
    Process,
    Accelerator,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LocationGroup {
    pub id: u64,
    pub name: String,
    pub kind: LocationGroupKind,
    /// Index into `Definitions::system_tree`.
    pub system_tree_parent: Option<usize>,
    /// Index into `Definitions::location_groups`.
    pub creating_group: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LocationKind {
    Unknown,
    CpuThread,
    AcceleratorStream,
    Metric,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Location {
    /// The location's id in the trace file (OTF2: 64-bit, sparse).
    pub id: u64,
    pub name: String,
    pub kind: LocationKind,
    /// Index into `Definitions::location_groups`.
    pub group: Option<usize>,
    /// The event count the definitions declare (OTF2 `number_of_events`), if any.
    pub declared_events: Option<u64>,
    /// The MPI rank in the world communicator, where the trace says so.
    pub rank: Option<u32>,
}

/// `OTF2_GroupType` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    Unknown,
    Locations,
    Regions,
    Metric,
    CommLocations,
    CommGroup,
    CommSelf,
    CommLocationGroups,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub id: u64,
    pub name: String,
    pub kind: GroupKind,
    pub paradigm: Paradigm,
    pub flags: u32,
    pub members: Vec<u64>,
}

/// How a communicator's ranks map onto locations.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommRanks {
    /// Rank `r` is the location at index `r` (None where the trace does not say).
    Locations(Vec<Option<LocIdx>>),
    /// MPI_COMM_SELF-like: the only rank is the calling location itself.
    SelfOnly,
    /// The trace gives no member list for this communicator.
    Unknown,
}

/// `Comm::flags` bit: the communicator was reconstructed by a reader from a trace without
/// communicator information (Paje collectives, patterns.md §5.4); findings from its
/// collective instances get lower precision (§6.3 ρ).
pub const COMM_FLAG_RECONSTRUCTED: u32 = 1 << 31;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comm {
    pub id: u64,
    pub name: String,
    pub paradigm: Paradigm,
    /// Index into `Definitions::groups`.
    pub group: Option<usize>,
    /// Index into `Definitions::comms`.
    pub parent: Option<usize>,
    pub flags: u32,
    pub ranks: CommRanks,
}

impl Comm {
    /// The location of rank `rank` of this communicator, seen from `caller`.
    pub fn location_of(&self, rank: u32, caller: LocIdx) -> Option<LocIdx> {
        match &self.ranks {
            CommRanks::Locations(v) => v.get(rank as usize).copied().flatten(),
            CommRanks::SelfOnly => (rank == 0).then_some(caller),
            CommRanks::Unknown => None,
        }
    }

    pub fn size(&self) -> Option<usize> {
        match &self.ranks {
            CommRanks::Locations(v) => Some(v.len()),
            CommRanks::SelfOnly => Some(1),
            CommRanks::Unknown => None,
        }
    }
}

/// A hardware counter or other metric a trace records (OTF2 MetricMember).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metric {
    pub id: u64,
    pub name: String,
    pub description: String,
    pub unit: String,
    /// `OTF2_MetricMode` bits.
    pub mode: u8,
    /// `OTF2_Type` of the values.
    pub value_type: u8,
}

/// Every definition of a trace, in the format-neutral model.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Definitions {
    pub regions: Vec<Region>,
    pub system_tree: Vec<SystemTreeNode>,
    pub location_groups: Vec<LocationGroup>,
    pub locations: Vec<Location>,
    pub groups: Vec<Group>,
    pub comms: Vec<Comm>,
    pub metrics: Vec<Metric>,
    /// How many definition records of each kind the trace has (for `info`).
    pub record_counts: std::collections::BTreeMap<String, u64>,
}

impl Definitions {
    /// The path of system-tree names from the root to `node` ("machine/node0").
    pub fn system_tree_path(&self, node: usize) -> Vec<&SystemTreeNode> {
        let mut path = Vec::new();
        let mut cur = Some(node);
        while let Some(i) = cur {
            let Some(n) = self.system_tree.get(i) else {
                break;
            };
            if path.len() > self.system_tree.len() {
                break; // a cycle in a corrupt trace: stop rather than loop
            }
            path.push(n);
            cur = n.parent;
        }
        path.reverse();
        path
    }
}
