//! OTF 1 definition records (formats.md B.4) and their mapping onto the model: processes
//! become locations, functions regions (paradigm and role from the function group and the
//! name, patterns.md §2.1.2 and §2.2.3), process groups communicators, counters metrics.

use super::text::{self, Fields, Value};
use crate::model::*;
use std::collections::{BTreeMap, HashMap};

#[derive(Clone, Debug, Default)]
pub struct Process {
    pub id: u64,
    pub name: String,
    pub parent: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Function {
    pub id: u64,
    pub group: u64,
    pub name: String,
    pub scl: u64,
}

#[derive(Clone, Debug, Default)]
pub struct Counter {
    pub id: u64,
    pub name: String,
    pub properties: u64,
    pub unit: String,
}

/// Everything the definition files say, in the format's own terms.
#[derive(Clone, Debug, Default)]
pub struct RawDefs {
    pub timer_resolution: Option<u64>,
    pub version: Option<String>,
    pub creator: Option<String>,
    pub processes: Vec<Process>,
    /// (id, name, member process ids)
    pub process_groups: Vec<(u64, String, Vec<u64>)>,
    pub function_groups: HashMap<u64, String>,
    pub functions: Vec<Function>,
    /// collective operation id → (name, type)
    pub collops: HashMap<u64, (String, u64)>,
    pub counters: Vec<Counter>,
    /// source-code location id → (file id, line)
    pub scls: HashMap<u64, (u64, u64)>,
    pub scl_files: HashMap<u64, String>,
    /// Definition records per kind, named as otfprint names them.
    pub counts: BTreeMap<String, u64>,
    /// Lines of definition files that are no known definition: (line, keyword).
    pub unknown: Vec<(u64, String)>,
}

/// Why a definition line could not be read: (byte column, expectation).
pub type DefError = (usize, String);

fn string(v: Option<Value>) -> String {
    v.and_then(Value::str)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .unwrap_or_default()
}

fn need_num(f: &Fields, names: &[&str], what: &str) -> Result<u64, DefError> {
    match f.get(names) {
        Some(Value::None) | None => None,
        Some(v) => v.num(),
    }
    .ok_or_else(|| {
        (
            0,
            format!("{what}: a hexadecimal number after '{}'", names[0]),
        )
    })
}

fn opt_num(f: &Fields, names: &[&str], what: &str) -> Result<u64, DefError> {
    match f.get(names) {
        None => Ok(0),
        Some(v) => v.num().ok_or_else(|| {
            (
                0,
                format!("{what}: a hexadecimal number after '{}'", names[0]),
            )
        }),
    }
}

fn head_num(f: &Fields, what: &str) -> Result<u64, DefError> {
    f.first().num().ok_or_else(|| {
        (
            0,
            format!(
                "{what}: a hexadecimal number after '{}'",
                String::from_utf8_lossy(f.head())
            ),
        )
    })
}

const NAME: &[&str] = &["NM", "N", "NAME"];

impl RawDefs {
    /// Read one definition line (leading blanks skipped, not empty).
    pub fn line(&mut self, line_no: u64, line: &[u8]) -> Result<(), DefError> {
        let f = text::fields(line).map_err(|e| (e.col, e.what))?;
        let kind = match f.head() {
            b"DCMT" | b"DEFCOMMENT" => "DefinitionComment",
            b"DTR" | b"DEFTIMERRESOLUTION" => {
                self.timer_resolution = Some(head_num(&f, "DefTimerResolution")?);
                "DefTimerResolution"
            }
            b"DP" | b"DEFPROCESS" => {
                let id = head_num(&f, "DefProcess")?;
                let parent = opt_num(&f, &["PT", "PARENT"], "DefProcess")?;
                self.processes.push(Process {
                    id,
                    name: string(f.get(NAME)),
                    parent,
                });
                "DefProcess"
            }
            b"DPG" | b"DEFPROCESSGROUP" => {
                let id = head_num(&f, "DefProcessGroup")?;
                let members = match f.get(&["M", "MEMBERS"]) {
                    Some(v) => v.list(),
                    None => Some(Vec::new()),
                }
                .ok_or((
                    0,
                    "DefProcessGroup: a list of process ids after 'M'".to_string(),
                ))?;
                self.process_groups.push((id, string(f.get(NAME)), members));
                "DefProcessGroup"
            }
            b"DA" | b"DEFATTRIBUTELIST" => "DefAttributeList",
            b"DPGA" | b"DEFPROCESSORGROUPATTR" => "DefProcessOrGroupAttributes",
            b"DF" | b"DEFFUNCTION" => {
                let id = head_num(&f, "DefFunction")?;
                let group = need_num(&f, &["G", "GROUP"], "DefFunction")?;
                let scl = opt_num(&f, &["X", "SCL"], "DefFunction")?;
                self.functions.push(Function {
                    id,
                    group,
                    name: string(f.get(NAME)),
                    scl,
                });
                "DefFunction"
            }
            b"DFG" | b"DEFFUNCTIONGROUP" => {
                let id = head_num(&f, "DefFunctionGroup")?;
                self.function_groups
                    .entry(id)
                    .or_insert_with(|| string(f.get(NAME)));
                "DefFunctionGroup"
            }
            b"DCO" | b"DEFCOLLOP" => {
                let id = head_num(&f, "DefCollectiveOperation")?;
                let ty = opt_num(&f, &["Y", "TYPE"], "DefCollectiveOperation")?;
                self.collops
                    .entry(id)
                    .or_insert_with(|| (string(f.get(NAME)), ty));
                "DefCollective"
            }
            b"DCNT" | b"DEFCOUNTER" => {
                let id = head_num(&f, "DefCounter")?;
                let properties = opt_num(&f, &["P", "PROPERTIES"], "DefCounter")?;
                self.counters.push(Counter {
                    id,
                    name: string(f.get(NAME)),
                    properties,
                    unit: string(f.get(&["U", "UNIT"])),
                });
                "DefCounter"
            }
            b"DCG" | b"DEFCOUNTERGROUP" => "DefCounterGroup",
            b"DS" | b"DEFSCL" => {
                let id = head_num(&f, "DefScl")?;
                let file = need_num(&f, &["F", "FILE"], "DefScl")?;
                let line = opt_num(&f, &["LN", "LINE"], "DefScl")?;
                self.scls.insert(id, (file, line));
                "DefScl"
            }
            b"DSF" | b"DEFSCLFILE" => {
                let id = head_num(&f, "DefSclFile")?;
                self.scl_files.insert(id, string(f.get(NAME)));
                "DefSclFile"
            }
            b"DCR" | b"DEFCREATOR" => {
                self.creator = Some(string(f.unnamed().or(Some(f.first()))));
                "DefCreator"
            }
            b"DV" | b"DEFVERSION" => {
                let v = f.first().list().unwrap_or_default();
                let name = string(f.unnamed());
                let nums: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                self.version = Some(if name.is_empty() {
                    nums.join(".")
                } else {
                    format!("{} \"{name}\"", nums.join("."))
                });
                "DefVersion"
            }
            b"DFL" | b"DEFFILE" => "DefFile",
            b"DFLG" | b"DEFFILEGROUP" => "DefFileGroup",
            b"DK" | b"DEFKEYVALUE" => "DefKeyValue",
            b"DTRG" | b"DEFTIMERANGE" => "DefTimeRange",
            b"DCA" | b"DEFCOUNTERASSIGNMENTS" => "DefCounterAssignments",
            b"DPS" | b"DEFPROCESSSUBSTITUTES" => "DefProcessSubstitutes",
            b"DAUX" | b"DEFAUXSAMPLEPOINT" => "DefAuxSamplePoint",
            b"DUI" | b"DEFUNIQUEID" => "DefUniqueId",
            // key-value lists attach to the next definition; nothing here needs them
            b"K" | b"KEY" => return Ok(()),
            other => {
                self.unknown
                    .push((line_no, String::from_utf8_lossy(other).into_owned()));
                "Unknown"
            }
        };
        *self.counts.entry(kind.to_string()).or_default() += 1;
        Ok(())
    }
}

/// patterns.md §2.1.2: the paradigm of a function from its name and its group's name.
pub fn paradigm(name: &str, group: &str) -> Paradigm {
    if name.starts_with("MPI_") || group == "MPI" {
        Paradigm::MPI
    } else if name.starts_with("!$omp") || group == "OMP" || group == "OpenMP" {
        Paradigm::OPENMP
    } else {
        Paradigm::USER
    }
}

/// patterns.md §2.2.3: the role of an MPI region from its name alone.
pub fn mpi_role(name: &str) -> RegionRole {
    let Some(n) = name.strip_prefix("MPI_") else {
        return RegionRole::FUNCTION;
    };
    let base = n.strip_prefix('I').filter(|b| {
        // the non-blocking variants of the collectives (Ibarrier, Ibcast, ...)
        b.chars().next().is_some_and(|c| c.is_ascii_lowercase())
    });
    let coll = |m: &str| -> Option<RegionRole> {
        Some(match m {
            "Barrier" => RegionRole::BARRIER,
            "Bcast" | "Scatter" | "Scatterv" => RegionRole::COLL_ONE2ALL,
            "Reduce" | "Gather" | "Gatherv" => RegionRole::COLL_ALL2ONE,
            "Allgather"
            | "Allgatherv"
            | "Allreduce"
            | "Alltoall"
            | "Alltoallv"
            | "Alltoallw"
            | "Reduce_scatter"
            | "Reduce_scatter_block" => RegionRole::COLL_ALL2ALL,
            _ if m.starts_with("Neighbor_") => RegionRole::COLL_ALL2ALL,
            "Scan" | "Exscan" => RegionRole::COLL_OTHER,
            _ => return None,
        })
    };
    if let Some(r) = coll(n) {
        return r;
    }
    if let Some(r) = base.and_then(|b| {
        let b = b.to_string();
        let mut c = b.chars();
        let first = c.next()?.to_ascii_uppercase();
        coll(&format!("{first}{}", c.as_str()))
    }) {
        return r;
    }
    match n {
        "Send" | "Ssend" | "Bsend" | "Rsend" | "Isend" | "Issend" | "Ibsend" | "Irsend"
        | "Recv" | "Irecv" | "Sendrecv" | "Sendrecv_replace" | "Probe" | "Iprobe" | "Mprobe"
        | "Improbe" | "Mrecv" | "Imrecv" | "Send_init" | "Ssend_init" | "Bsend_init"
        | "Rsend_init" | "Recv_init" | "Start" | "Startall" => RegionRole::POINT2POINT,
        "Put" | "Get" | "Rput" | "Rget" => RegionRole(29),
        "Accumulate" | "Get_accumulate" | "Fetch_and_op" | "Compare_and_swap" | "Raccumulate"
        | "Rget_accumulate" => RegionRole(14),
        _ if n.starts_with("File_") && (n.contains("read") || n.contains("write")) => {
            RegionRole::FILE_IO
        }
        _ => RegionRole::FUNCTION,
    }
}

/// The `OTF2_CollectiveOp` of an OTF 1 collective operation, from its name (`MPI_Bcast` →
/// BCAST); 255 ("OTHER") when the name is none of them (`MPI_Win_fence`).
pub fn collective_op(name: &str) -> u8 {
    let n = name
        .strip_prefix("MPI_")
        .unwrap_or(name)
        .to_ascii_uppercase();
    COLLECTIVE_OP_NAMES[..17]
        .iter()
        .position(|&op| op == n)
        .map_or(255, |i| i as u8)
}

/// `OTF2_Type` of a counter's values from its OTF 1 properties (B.4, bits 5-8).
pub fn counter_type(properties: u64) -> u8 {
    match properties & 0x1e0 {
        0 => 4,    // unsigned 8-byte
        32 => 8,   // signed 8-byte
        64 => 3,   // unsigned 4-byte
        96 => 7,   // signed 4-byte
        128 => 2,  // unsigned 2-byte
        160 => 6,  // signed 2-byte
        256 => 9,  // float
        288 => 10, // double
        _ => 4,
    }
}

/// Build the model's regions from the functions (definition order).
pub fn regions(raw: &RawDefs) -> Vec<Region> {
    raw.functions
        .iter()
        .map(|f| {
            let group = raw.function_groups.get(&f.group).map_or("", String::as_str);
            let paradigm = paradigm(&f.name, group);
            let role = if paradigm == Paradigm::MPI {
                mpi_role(&f.name)
            } else {
                RegionRole::FUNCTION
            };
            let (file, line) = raw.scls.get(&f.scl).copied().unwrap_or((0, 0));
            Region {
                id: f.id,
                name: f.name.clone(),
                canonical_name: f.name.clone(),
                description: group.to_string(),
                role,
                paradigm,
                flags: 0,
                source_file: raw.scl_files.get(&file).cloned().unwrap_or_default(),
                begin_line: u32::try_from(line).unwrap_or(u32::MAX),
                end_line: 0,
            }
        })
        .collect()
}

/// A placeholder for a function the events name but no definition declares.
pub fn undefined_region(id: u64) -> Region {
    Region::placeholder(id, format!("<undefined function {id:x}>"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_the_name_table() {
        assert_eq!(mpi_role("MPI_Barrier"), RegionRole::BARRIER);
        assert_eq!(mpi_role("MPI_Ibcast"), RegionRole::COLL_ONE2ALL);
        assert_eq!(mpi_role("MPI_Gatherv"), RegionRole::COLL_ALL2ONE);
        assert_eq!(mpi_role("MPI_Iallreduce"), RegionRole::COLL_ALL2ALL);
        assert_eq!(mpi_role("MPI_Exscan"), RegionRole::COLL_OTHER);
        assert_eq!(mpi_role("MPI_Irecv"), RegionRole::POINT2POINT);
        assert_eq!(mpi_role("MPI_File_write_at"), RegionRole::FILE_IO);
        assert_eq!(mpi_role("MPI_File_seek"), RegionRole::FUNCTION);
        assert_eq!(mpi_role("MPI_Init"), RegionRole::FUNCTION);
        assert_eq!(mpi_role("MPI_Wait"), RegionRole::FUNCTION);
        assert_eq!(paradigm("MPI_Send", "x"), Paradigm::MPI);
        assert_eq!(paradigm("mpi_send_", "MPI"), Paradigm::MPI);
        assert_eq!(paradigm("main", "Application"), Paradigm::USER);
    }

    #[test]
    fn collective_ops_by_name() {
        assert_eq!(collective_op("MPI_Bcast"), 1);
        assert_eq!(collective_op("MPI_Reduce_scatter"), 13);
        assert_eq!(collective_op("MPI_Barrier"), 0);
        assert_eq!(collective_op("MPI_Win_fence"), 255);
    }

    #[test]
    fn definition_lines() {
        let mut d = RawDefs::default();
        for (i, l) in [
            "DTRf4240",
            "DP1NM\"Process 1\"",
            "DEFPROCESS 2 NAME \"Thread\" PARENT 1",
            "DP3N\"old name keyword\"",
            "DFG6NM\"MPI\"",
            "DF5G6NM\"MPI_Send\"X1",
            "DS1F2LN1a",
            "DSF2NM\"a.f\"",
            "DPG9M1,2,NM\"comm\"",
            "DV1.a.1\"coelacanth\"",
            "DCR\"me\"",
            "DXYZ1",
        ]
        .iter()
        .enumerate()
        {
            d.line(i as u64 + 1, l.as_bytes()).unwrap();
        }
        assert_eq!(d.timer_resolution, Some(1_000_000));
        assert_eq!(d.processes[1].parent, 1);
        assert_eq!(d.processes[2].name, "old name keyword");
        assert_eq!(d.process_groups[0].2, vec![1, 2]);
        assert_eq!(d.version.as_deref(), Some("1.10.1 \"coelacanth\""));
        assert_eq!(d.creator.as_deref(), Some("me"));
        assert_eq!(d.unknown, vec![(12, "DXYZ".to_string())]);
        let r = regions(&d);
        assert_eq!(r[0].paradigm, Paradigm::MPI);
        assert_eq!(r[0].role, RegionRole::POINT2POINT);
        assert_eq!((r[0].source_file.as_str(), r[0].begin_line), ("a.f", 26));
        assert!(d.line(13, b"DF5GxNM\"x\"").is_err());
        assert!(d.line(13, b"DP\"x\"").is_err());
    }
}
