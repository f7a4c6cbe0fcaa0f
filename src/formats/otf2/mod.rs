//! A pure-Rust OTF2 reader (formats.md §A): anchor, global definitions, per-location local
//! definitions and events, decoded in parallel over locations from memory-mapped files.

pub mod anchor;
pub mod defs;
pub mod events;
pub mod local;
pub mod records;
#[rustfmt::skip]
pub mod schema;
pub mod wire;

use crate::error::{Error, Place, Result, Warning};
use crate::model::events::EventsFiller;
use crate::model::spill::Spill;
use crate::model::*;
use anchor::Anchor;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use wire::{DecodeError, MappingType};

/// Memory-map a file (an empty file maps to an empty slice).
pub(crate) fn map_file(path: &Path) -> Result<Option<memmap2::Mmap>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let len = f
        .metadata()
        .map_err(|e| Error::io(path, "cannot read metadata", e))?
        .len();
    if len == 0 {
        return Ok(None);
    }
    // SAFETY: the trace files are only read; a concurrent writer truncating them is outside
    // what a trace reader can defend against (as for every mmap-based reader).
    // populate: fault the pages in with one call instead of one fault per 4 KiB page
    let m = unsafe { memmap2::MmapOptions::new().populate().map(&f) }
        .map_err(|e| Error::io(path, "cannot map", e))?;
    Ok(Some(m))
}

/// The pages of `m` from `from` to `to` dropped from the resident set once they span
/// `DROP_STEP` bytes or more; where the next drop starts.
fn drop_pages(m: &memmap2::Mmap, from: usize, to: usize) -> usize {
    /// Drop a read file's pages in steps of this many bytes.
    const DROP_STEP: usize = 4 << 20;
    if to < from.saturating_add(DROP_STEP) || to > m.len() {
        return from;
    }
    // SAFETY: the mapping is read-only and never written: MADV_DONTNEED only drops its
    // pages from the resident set, and a later read of them faults them in again from the
    // file (the same contents), as the first read did.
    let _ =
        unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from) };
    to
}

fn bytes(m: &Option<memmap2::Mmap>) -> &[u8] {
    m.as_deref().unwrap_or(&[])
}

fn at(path: &Path, e: DecodeError) -> Error {
    Error::format(path, Place::Byte(e.offset as u64), e.what)
}

/// Does this file start like an OTF2 anchor?
pub fn sniff(head: &[u8]) -> bool {
    head.len() >= 7 && head[0] == wire::CHUNK_HEADER && &head[2..7] == b"OTF2\0"
}

/// The files of an archive, derived from its anchor's path (A.1).
struct Archive {
    anchor: PathBuf,
    global_defs: PathBuf,
    dir: PathBuf,
}

impl Archive {
    fn new(anchor: &Path) -> Archive {
        let stem = anchor
            .file_stem()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        let parent = anchor.parent().unwrap_or(Path::new(""));
        let mut def = stem.clone();
        def.push(".def");
        Archive {
            anchor: anchor.to_path_buf(),
            global_defs: parent.join(def),
            dir: parent.join(stem),
        }
    }

    fn location_file(&self, id: u64, ext: &str) -> PathBuf {
        self.dir.join(format!("{id}.{ext}"))
    }
}

/// Read a whole OTF2 archive given its anchor file.
pub fn read(anchor_path: &Path) -> Result<Trace> {
    read_with(anchor_path, None)
}

/// The number of events the archive's definitions declare per location (a location without
/// a declared count: its event file's size / 8), without reading any event: what
/// `--memory-limit` decides by.
pub fn estimate_events(anchor_path: &Path) -> Result<Vec<u64>> {
    let archive = Archive::new(anchor_path);
    let anchor_map = map_file(&archive.anchor)?;
    let anchor = Anchor::parse(bytes(&anchor_map)).map_err(|e| at(&archive.anchor, e))?;
    let gd_map = map_file(&archive.global_defs)?;
    let g = defs::read_global_defs(bytes(&gd_map), anchor.def_chunk_size as usize)
        .map_err(|e| at(&archive.global_defs, e))?;
    Ok(g.defs
        .locations
        .iter()
        .map(|l| {
            l.declared_events.unwrap_or_else(|| {
                std::fs::metadata(archive.location_file(l.id, "evt")).map_or(0, |m| m.len() / 8)
            })
        })
        .collect())
}

/// `read`, moving each location's event columns to `spill` as soon as it is decoded
/// (`--memory-limit`).
pub fn read_with(anchor_path: &Path, spill: Option<&Spill>) -> Result<Trace> {
    read_share(anchor_path, spill, None)
}

/// Which locations to read, chosen from the global definitions (`run --mpi`, issue 24).
pub type Pick<'a> = &'a (dyn Fn(&Definitions) -> Vec<bool> + Sync);

/// `read_with`, reading the event files of only the locations `pick` selects from the
/// definitions (`None`: all); the other locations have no events. The definitions are read
/// whole. Placeholder definitions come only from the events read.
pub fn read_share(anchor_path: &Path, spill: Option<&Spill>, pick: Option<Pick>) -> Result<Trace> {
    let archive = Archive::new(anchor_path);
    let anchor_map = map_file(&archive.anchor)?;
    let anchor = Anchor::parse(bytes(&anchor_map)).map_err(|e| at(&archive.anchor, e))?;
    drop(anchor_map);
    let mut warnings: Vec<Warning> = Vec::new();

    let gd_map = map_file(&archive.global_defs)?;
    let def_chunk = anchor.def_chunk_size as usize;
    let g = defs::read_global_defs(bytes(&gd_map), def_chunk)
        .map_err(|e| at(&archive.global_defs, e))?;
    drop(gd_map);
    let gd_name = archive.global_defs.display().to_string();
    warnings.extend(defs::warnings_for(&gd_name, g.warnings.clone()));
    if g.records != anchor.number_of_global_definitions {
        warnings.push(Warning {
            file: archive.anchor.display().to_string(),
            message: format!(
                "the anchor declares {} global definitions, {} holds {}",
                anchor.number_of_global_definitions, gd_name, g.records
            ),
        });
    }
    if g.defs.locations.len() as u64 != anchor.number_of_locations {
        warnings.push(Warning {
            file: archive.anchor.display().to_string(),
            message: format!(
                "the anchor declares {} locations, the definitions {}",
                anchor.number_of_locations,
                g.defs.locations.len()
            ),
        });
    }
    if g.timer_resolution == 0 {
        return Err(Error::format(
            &archive.global_defs,
            Place::File,
            "no ClockProperties definition with a timer resolution > 0",
        ));
    }

    let event_chunk = anchor.event_chunk_size as usize;
    let keep = pick.map(|p| p(&g.defs));
    let results: Vec<Result<LocationResult>> = g
        .defs
        .locations
        .par_iter()
        .enumerate()
        .map(|(l, loc)| match &keep {
            Some(k) if k.get(l) != Some(&true) => Ok(LocationResult {
                events: Events::default(),
                undefined_regions: Vec::new(),
                undefined_comms: Vec::new(),
                warnings: Vec::new(),
            }),
            _ => read_location(&archive, &g, loc, def_chunk, event_chunk, spill),
        })
        .collect();
    let mut per_loc = Vec::with_capacity(results.len());
    for r in results {
        per_loc.push(r?);
    }

    let mut trace_defs = g.defs;
    let mut events = Vec::with_capacity(per_loc.len());
    let mut undefined_regions: Vec<u64> = Vec::new();
    let mut undefined_comms: Vec<u64> = Vec::new();
    let (mut region_index, mut comm_index) = Default::default();
    for (loc, mut r) in trace_defs.locations.iter().zip(per_loc) {
        warnings.extend(r.warnings);
        // Events that name undefined regions/communicators get placeholder definitions.
        let region_fix = placeholder_targets(
            &r.undefined_regions,
            &mut undefined_regions,
            &mut region_index,
        );
        let comm_fix =
            placeholder_targets(&r.undefined_comms, &mut undefined_comms, &mut comm_index);
        let (rbase, cbase) = (
            trace_defs.regions.len() as u32,
            trace_defs.comms.len() as u32,
        );
        if !region_fix.is_empty() || !comm_fix.is_empty() {
            remap_placeholders(&mut r.events, rbase, &region_fix, cbase, &comm_fix);
            if let Some(s) = spill {
                // the remapped columns were copied back to the heap
                r.events.spill(s).map_err(|e| spill_error(s, e))?;
            }
            warnings.push(Warning {
                file: format!("location {}", loc.id),
                message: format!(
                    "events refer to {} region(s) and {} communicator(s) that no definition declares",
                    r.undefined_regions.len(),
                    r.undefined_comms.len()
                ),
            });
        }
        events.push(r.events);
    }
    for id in undefined_regions {
        trace_defs
            .regions
            .push(Region::placeholder(id, format!("<undefined region {id}>")));
    }
    for id in undefined_comms {
        trace_defs.comms.push(Comm {
            id,
            name: format!("<undefined communicator {id}>"),
            paradigm: Paradigm::UNKNOWN,
            group: None,
            parent: None,
            flags: 0,
            ranks: CommRanks::Unknown,
        });
    }

    let (maj, min, fix) = anchor.writer;
    Ok(Trace {
        path: archive.anchor.clone(),
        origin: Origin {
            format: "OTF2",
            format_version: format!("{maj}.{min}.{fix}"),
            creator: anchor.creator.clone(),
            machine: anchor.machine.clone(),
            description: anchor.description.clone(),
            properties: anchor.properties.clone(),
        },
        timer_resolution: g.timer_resolution,
        global_offset: g.global_offset,
        trace_length: g.trace_length,
        defs: trace_defs,
        events,
        warnings,
        native_event_kinds: Default::default(),
        paje: None,
    })
}

/// For each undefined id of a location, its index among all undefined ids of the trace
/// (`index` maps ids already in `all` to their position).
fn placeholder_targets(
    local: &[u64],
    all: &mut Vec<u64>,
    index: &mut std::collections::HashMap<u64, u32>,
) -> Vec<u32> {
    local
        .iter()
        .map(|id| {
            *index.entry(*id).or_insert_with(|| {
                all.push(*id);
                (all.len() - 1) as u32
            })
        })
        .collect()
}

fn remap_placeholders(ev: &mut Events, rbase: u32, rfix: &[u32], cbase: u32, cfix: &[u32]) {
    for i in 0..ev.len() {
        if matches!(ev.kind[i], EventKind::Enter | EventKind::Leave) && ev.arg[i] >= rbase {
            ev.arg[i] = rbase + rfix[(ev.arg[i] - rbase) as usize];
        }
    }
    for c in ev.msg.comm.iter_mut().chain(ev.coll.comm.iter_mut()) {
        if *c >= cbase {
            *c = cbase + cfix[(*c - cbase) as usize];
        }
    }
}

struct LocationResult {
    events: Events,
    undefined_regions: Vec<u64>,
    undefined_comms: Vec<u64>,
    warnings: Vec<Warning>,
}

fn spill_error(s: &Spill, e: std::io::Error) -> Error {
    Error::io(s.path(), "cannot write the spill file", e)
}

fn read_location(
    archive: &Archive,
    g: &defs::GlobalDefs,
    loc: &Location,
    def_chunk: usize,
    event_chunk: usize,
    spill: Option<&Spill>,
) -> Result<LocationResult> {
    let mut warnings = Vec::new();
    let def_path = archive.location_file(loc.id, "def");
    let local = if def_path.exists() {
        let m = map_file(&def_path)?;
        local::read_local_defs(bytes(&m), def_chunk).map_err(|e| at(&def_path, e))?
    } else {
        local::LocalDefs::default()
    };
    let evt_path = archive.location_file(loc.id, "evt");
    let declared = loc.declared_events.unwrap_or(0);
    if !evt_path.exists() {
        if declared > 0 {
            return Err(Error::format(
                &evt_path,
                Place::File,
                format!(
                    "missing event file: the definitions declare {declared} events for location {}",
                    loc.id
                ),
            ));
        }
        return Ok(LocationResult {
            events: Events::default(),
            undefined_regions: Vec::new(),
            undefined_comms: Vec::new(),
            warnings,
        });
    }
    let m = map_file(&evt_path)?;
    let data = bytes(&m);
    // The declared count is a capacity hint only; a writer that crashed leaves it wrong.
    let hint = declared.min(data.len() as u64 / 2) as usize;
    let mut filler = EventsFiller::with_capacity(hint);
    let region_global = |id: u64| g.regions.get(id);
    let comm_global = |id: u64| g.comms.get(id);
    let mut cx = events::LocationContext {
        local: &local,
        regions: events::Resolver::new(
            &g.regions,
            g.defs.regions.len(),
            g.defs.regions.len() as u64,
            local.maps[MappingType::Region as usize].as_ref(),
        ),
        comms: events::Resolver::new(
            &g.comms,
            g.defs.comms.len(),
            g.defs.comms.len() as u64,
            local.maps[MappingType::Comm as usize].as_ref(),
        ),
        region_global: &region_global,
        comm_global: &comm_global,
    };
    // the pages read leave the resident set as the decoder passes them: the mapping is
    // populated, and would otherwise hold the whole file beside the columns it fills
    let mut dropped = 0;
    let mut read_to = |to: usize| {
        if let Some(m) = &m {
            dropped = drop_pages(m, dropped, to);
        }
    };
    events::decode_events(data, event_chunk, &mut cx, &mut filler, Some(&mut read_to))
        .map_err(|e| at(&evt_path, e))?;
    drop(m);
    let mut events = filler.finish();
    let name = evt_path.display().to_string();
    if let Some(i) = events.time.first_decrease() {
        warnings.push(Warning {
            file: name.clone(),
            message: format!(
                "timestamps decrease at event {} (from {} to {}); OTF2 requires them non-decreasing",
                i + 1,
                events.time.get(i),
                events.time.get(i + 1)
            ),
        });
    }
    local::correct_clock(&local.clock_offsets, &mut events.time);
    if loc
        .declared_events
        .is_some_and(|d| d != events.len() as u64)
    {
        warnings.push(Warning {
            file: name,
            message: format!(
                "the definitions declare {declared} events for location {}, the file holds {}",
                loc.id,
                events.len()
            ),
        });
    }
    events.shrink_to_fit();
    if let Some(s) = spill {
        events.spill(s).map_err(|e| spill_error(s, e))?;
    }
    Ok(LocationResult {
        events,
        undefined_regions: cx.regions.undefined,
        undefined_comms: cx.comms.undefined,
        warnings,
    })
}

/// Decode one file's bytes as every OTF2 file kind (anchor, global definitions, local
/// definitions, events) without touching the file system: the entry point of the fuzz
/// targets in fuzz/. Errors are expected; panics are bugs.
pub fn decode_any(data: &[u8]) {
    let _ = Anchor::parse(data);
    // Small chunks reach the chunk-boundary logic with small inputs; 1 MiB (Score-P's
    // default) lets real files from the corpus decode far.
    let small = 18 + data.get(1).map_or(0, |&b| b as usize) * 4;
    for chunk in [small, 1 << 20] {
        let _ = defs::read_global_defs(data, chunk);
        let local = local::read_local_defs(data, chunk).unwrap_or_default();
        let g = defs::GlobalDefs::default();
        let none = |_: u64| None;
        let mut cx = events::LocationContext {
            local: &local,
            regions: events::Resolver::new(&g.regions, 0, 0, None),
            comms: events::Resolver::new(&g.comms, 0, 0, None),
            region_global: &none,
            comm_global: &none,
        };
        let mut ev = EventsFiller::default();
        let _ = events::decode_events(data, chunk, &mut cx, &mut ev, None);
        local::correct_clock(&local.clock_offsets, &mut ev.finish().time);
    }
}
