//! A pure-Rust reader of OTF version 1 traces (VampirTrace "Open Trace Format", formats.md
//! §B): the master file `NAME.otf`, definition files and event streams, plain or zlib
//! compressed (`.z`, read to the end even without a final end-of-stream block), short and
//! long record forms, many processes per stream. Streams decode in parallel (rayon).

pub mod defs;
pub mod events;
pub mod text;

use crate::error::{Error, Place, Result, Warning};
use crate::model::*;
use events::{CommLookup, IdMap, Lookup, StreamOut, NATIVE_KINDS, PLACEHOLDER};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Does this file start like an OTF 1 master file (`<hex>:<hex>` or an `i` IOFSL line)?
pub fn sniff(head: &[u8]) -> bool {
    let head = match head {
        [b'i', rest @ ..] => rest,
        h => h,
    };
    let digits = head.iter().take_while(|&&c| text::is_hex(c)).count();
    digits > 0
        && digits <= 16
        && head.get(digits) == Some(&b':')
        && head.get(digits + 1).is_some_and(|&c| text::is_hex(c))
}

/// The master file: (stream id, its processes), in file order (B.2).
fn master(path: &Path, bytes: &[u8]) -> Result<Vec<(u64, Vec<u64>)>> {
    let mut streams: Vec<(u64, Vec<u64>)> = Vec::new();
    for (ln, _, line) in text::Lines::new(bytes) {
        if line.is_empty() || line[0] == b'i' {
            continue; // IOFSL configuration
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue; // the library ignores a line without ':'
        };
        let bad = |what: &str| {
            Error::format(
                path,
                Place::Line(ln),
                format!("expected a master line '<stream>:<process>,<process>,...' in lower-case hexadecimal; {what}"),
            )
        };
        let s = text::parse_hex(&line[..colon]).ok_or_else(|| bad("bad stream id"))?;
        let mut procs = Vec::new();
        for p in line[colon + 1..].split(|&c| c == b',') {
            if p.is_empty() {
                continue;
            }
            procs.push(text::parse_hex(p).ok_or_else(|| bad("bad process id"))?);
        }
        match streams.iter_mut().find(|x| x.0 == s) {
            Some(x) => x.1.extend(procs),
            None => streams.push((s, procs)),
        }
    }
    if streams.is_empty() {
        return Err(Error::format(
            path,
            Place::File,
            "no stream in the master file; expected lines '<stream>:<process>,...'",
        ));
    }
    Ok(streams)
}

/// The text of `NAME.<s>.<kind>` or, if that is absent, of `NAME.<s>.<kind>.z` (B.1).
fn stream_file(stem: &Path, s: u64, kind: &str) -> Option<(PathBuf, bool)> {
    let plain = PathBuf::from(format!("{}.{s:x}.{kind}", stem.display()));
    if plain.is_file() {
        return Some((plain, false));
    }
    let z = PathBuf::from(format!("{}.{s:x}.{kind}.z", stem.display()));
    z.is_file().then_some((z, true))
}

fn read_text(path: &Path, compressed: bool) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| Error::io(path, "cannot read", e))?;
    if compressed {
        inflate(path, &raw)
    } else {
        Ok(raw)
    }
}

/// Inflate one zlib stream (B.7): the end of the input without an end-of-stream block is a
/// normal end (VampirTrace never finishes its streams); the checksum is not required.
fn inflate(path: &Path, raw: &[u8]) -> Result<Vec<u8>> {
    use flate2::{Decompress, FlushDecompress, Status};
    if raw.len() < 2 {
        return Err(Error::format(
            path,
            Place::Byte(raw.len() as u64),
            "a file too short for a zlib stream; expected its 2-byte header",
        ));
    }
    let mut z = Decompress::new(true);
    let mut out: Vec<u8> = Vec::with_capacity(raw.len().saturating_mul(4).max(1024));
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity());
        }
        let at = z.total_in() as usize;
        let before = z.total_out();
        let status = z
            .decompress_vec(&raw[at..], &mut out, FlushDecompress::None)
            .map_err(|e| {
                Error::format(
                    path,
                    Place::Byte(z.total_in()),
                    format!("corrupt zlib data ({e}); expected a zlib-compressed OTF stream"),
                )
            })?;
        let progressed = z.total_in() as usize > at || z.total_out() > before;
        match status {
            Status::StreamEnd => {
                let end = z.total_in();
                if (end as usize) < raw.len() {
                    return Err(Error::format(
                        path,
                        Place::Byte(end),
                        "data after the end of the zlib stream; expected one zlib stream per file",
                    ));
                }
                break;
            }
            _ if z.total_in() as usize == raw.len() && out.len() < out.capacity() => break,
            _ if !progressed && out.len() < out.capacity() => break,
            _ => {}
        }
    }
    Ok(out)
}

/// Read an OTF 1 trace from its master file `NAME.otf`.
pub fn read(path: &Path) -> Result<Trace> {
    let mbytes = std::fs::read(path).map_err(|e| Error::io(path, "cannot read", e))?;
    let streams = master(path, &mbytes)?;
    let stem = {
        let s = path.to_string_lossy();
        PathBuf::from(s.strip_suffix(".otf").unwrap_or(&s).to_string())
    };
    let mut warnings = Vec::new();
    let (raw, def_files) = read_defs(&stem, &streams, &mut warnings)?;
    let procs = processes(path, &raw, &streams, def_files, &mut warnings);
    let mut d = Definitions {
        record_counts: raw.counts.clone(),
        ..Definitions::default()
    };
    d.system_tree.push(SystemTreeNode {
        id: 0,
        name: "machine".to_string(),
        class: "machine".to_string(),
        parent: None,
    });
    let loc = locations(&mut d, &procs);
    let lookup = lookup(&mut d, &raw, loc, procs.len());
    let decoded: Vec<(PathBuf, StreamOut)> = streams
        .par_iter()
        .filter(|s| s.0 != 0)
        .map(|&(s, _)| decode_stream(path, &stem, s, &lookup))
        .collect::<Result<_>>()?;
    let (events, native) = merge(&mut d, decoded, procs.len(), &mut warnings);
    Ok(finish(path, &stem, &raw, d, events, native, warnings))
}

/// The definitions: the global file (stream 0) and any per-stream files, in stream order;
/// also how many definition files there are.
fn read_defs(
    stem: &Path,
    streams: &[(u64, Vec<u64>)],
    warnings: &mut Vec<Warning>,
) -> Result<(defs::RawDefs, usize)> {
    let mut raw = defs::RawDefs::default();
    let mut def_files = 0;
    for s in std::iter::once(0).chain(streams.iter().map(|s| s.0).filter(|&s| s != 0)) {
        let Some((file, z)) = stream_file(stem, s, "def") else {
            continue;
        };
        def_files += 1;
        let bytes = read_text(&file, z)?;
        if text::Lines::last_open(&bytes) {
            return Err(Error::format(
                &file,
                Place::Byte(bytes.len() as u64),
                "the last line has no line end: the file is truncated; expected every record to end with '\\n'",
            ));
        }
        for (ln, _, line) in text::Lines::new(&bytes) {
            if line.is_empty() {
                continue;
            }
            raw.line(ln, line).map_err(|(col, what)| {
                Error::format(
                    &file,
                    Place::Line(ln),
                    format!("column {}: expected {what}", col + 1),
                )
            })?;
        }
        if let Some((ln, kw)) = raw.unknown.first() {
            warnings.push(Warning {
                file: format!("{}:{ln}", file.display()),
                message: format!(
                    "{} definition line(s) of unknown kind, first '{kw}'; ignored",
                    raw.unknown.len()
                ),
            });
            raw.unknown.clear();
        }
    }
    if def_files == 0 {
        warnings.push(Warning {
            file: format!("{}.0.def", stem.display()),
            message: "no definition file: processes, functions and counters are unnamed"
                .to_string(),
        });
    }
    Ok((raw, def_files))
}

/// The processes: the defined ones in definition order, then those only the master file
/// names.
fn processes(
    path: &Path,
    raw: &defs::RawDefs,
    streams: &[(u64, Vec<u64>)],
    def_files: usize,
    warnings: &mut Vec<Warning>,
) -> Vec<defs::Process> {
    let mut procs: Vec<defs::Process> = Vec::new();
    let mut seen = HashSet::new();
    for p in &raw.processes {
        if seen.insert(p.id) {
            procs.push(p.clone());
        }
    }
    let mut undeclared = 0;
    for (_, ps) in streams {
        for &p in ps {
            if seen.insert(p) {
                undeclared += 1;
                procs.push(defs::Process {
                    id: p,
                    name: format!("Process {p:x}"),
                    parent: 0,
                });
            }
        }
    }
    if undeclared > 0 && def_files > 0 {
        warnings.push(Warning {
            file: path.display().to_string(),
            message: format!("{undeclared} process(es) of the master file have no definition"),
        });
    }
    procs
}

/// Processes → locations, one location group per top-level process (threads have a `PT`
/// parent); process id → location index.
fn locations(d: &mut Definitions, procs: &[defs::Process]) -> IdMap {
    let index: HashMap<u64, usize> = procs.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
    // the top-level ancestor of each process
    let root_of = |mut i: usize| -> usize {
        for _ in 0..procs.len() {
            match index.get(&procs[i].parent) {
                Some(&j) if procs[i].parent != 0 && j != i => i = j,
                _ => break,
            }
        }
        i
    };
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let mut rank = 0u32;
    for (i, p) in procs.iter().enumerate() {
        let r = root_of(i);
        let g = *group_of.entry(r).or_insert_with(|| {
            d.location_groups.push(LocationGroup {
                id: procs[r].id,
                name: procs[r].name.clone(),
                kind: LocationGroupKind::Process,
                system_tree_parent: Some(0),
                creating_group: None,
            });
            d.location_groups.len() - 1
        });
        d.locations.push(Location {
            id: p.id,
            name: p.name.clone(),
            kind: LocationKind::CpuThread,
            group: Some(g),
            declared_events: None,
            rank: (r == i).then(|| {
                rank += 1;
                rank - 1
            }),
        });
    }
    let mut loc = IdMap::default();
    for (i, p) in procs.iter().enumerate() {
        loc.insert(p.id, i as u32);
    }
    loc
}

/// Functions → regions, counters → metrics, process groups → communicators (and one of
/// all `nprocs` processes, for events whose communicator no definition declares): what
/// the stream decoders look up.
fn lookup(d: &mut Definitions, raw: &defs::RawDefs, loc: IdMap, nprocs: usize) -> Lookup {
    d.regions = defs::regions(raw);
    let mut func = IdMap::default();
    for (i, f) in raw.functions.iter().enumerate() {
        func.insert(f.id, i as u32);
    }
    let mut counter = IdMap::default();
    let mut counter_type = Vec::new();
    for (i, c) in raw.counters.iter().enumerate() {
        counter.insert(c.id, i as u32);
        counter_type.push(defs::counter_type(c.properties));
        d.metrics.push(Metric {
            id: c.id,
            name: c.name.clone(),
            description: String::new(),
            unit: c.unit.clone(),
            mode: (c.properties & 3) as u8,
            value_type: defs::counter_type(c.properties),
        });
    }
    let comm = communicators(d, raw, &loc);
    let world = d.comms.len() as CommIdx;
    d.comms.push(Comm {
        id: u64::MAX,
        name: "<all processes: no communicator in the trace>".to_string(),
        paradigm: Paradigm::MPI,
        group: None,
        parent: None,
        flags: 0,
        ranks: CommRanks::Locations((0..nprocs as u32).map(Some).collect()),
    });
    Lookup {
        func,
        counter,
        counter_type,
        collop: raw
            .collops
            .iter()
            .map(|(&id, (name, _))| (id, defs::collective_op(name)))
            .collect(),
        comm,
        loc,
        world,
    }
}

/// Process groups → groups and communicators (the first definition of an id counts).
fn communicators(
    d: &mut Definitions,
    raw: &defs::RawDefs,
    loc: &IdMap,
) -> HashMap<u64, CommLookup> {
    let mut comm = HashMap::new();
    for (id, name, members) in &raw.process_groups {
        if comm.contains_key(id) {
            continue;
        }
        d.groups.push(Group {
            id: *id,
            name: name.clone(),
            kind: GroupKind::CommGroup,
            paradigm: Paradigm::MPI,
            flags: 0,
            members: members.clone(),
        });
        let idx = d.comms.len() as CommIdx;
        d.comms.push(Comm {
            id: *id,
            name: name.clone(),
            paradigm: Paradigm::MPI,
            group: Some(d.groups.len() - 1),
            parent: None,
            flags: 0,
            ranks: CommRanks::Locations(members.iter().map(|&m| loc.get(m)).collect()),
        });
        let rank_of = members
            .iter()
            .enumerate()
            .map(|(r, &m)| (m, r as u32))
            .collect();
        comm.insert(*id, CommLookup { idx, rank_of });
    }
    comm
}

/// Decode the event stream `s` (run in parallel, one stream a task).
fn decode_stream(
    path: &Path,
    stem: &Path,
    s: u64,
    lookup: &Lookup,
) -> Result<(PathBuf, StreamOut)> {
    let Some((file, z)) = stream_file(stem, s, "events") else {
        return Err(Error::format(
            path,
            Place::File,
            format!(
                "stream {s:x} of the master file has no event file; expected {}.{s:x}.events or {}.{s:x}.events.z",
                stem.display(),
                stem.display()
            ),
        ));
    };
    let bytes = read_text(&file, z)?;
    let out = events::decode(&bytes, lookup).map_err(|(ln, what)| {
        let what = if z {
            format!("{what} (line of the inflated text)")
        } else {
            what
        };
        Error::format(&file, Place::Line(ln), what)
    })?;
    // every record is one event: a column that could not take one more (more than
    // 2^32 words of fields for one process) must not pass as a complete read
    let held: u64 = out.procs.iter().map(|p| p.1.len() as u64).sum();
    let records: u64 = out.native.iter().sum();
    if held != records {
        return Err(Error::format(
            &file,
            Place::File,
            format!("{records} records but only {held} fit the event columns; expected at most 2^32 words of fields per process"),
        ));
    }
    Ok((file, out))
}

/// Placeholder definitions for undefined functions and counters, in order of first use:
/// id → region and id → metric.
fn placeholders(
    d: &mut Definitions,
    decoded: &[(PathBuf, StreamOut)],
) -> (HashMap<u64, u32>, HashMap<u64, u32>) {
    let mut fix_func: HashMap<u64, u32> = HashMap::new();
    let mut fix_counter: HashMap<u64, u32> = HashMap::new();
    for (_, o) in decoded {
        for &id in &o.undefined_funcs {
            fix_func.entry(id).or_insert_with(|| {
                d.regions.push(defs::undefined_region(id));
                d.regions.len() as u32 - 1
            });
        }
        for &id in &o.undefined_counters {
            fix_counter.entry(id).or_insert_with(|| {
                d.metrics.push(Metric {
                    id,
                    name: format!("<undefined counter {id:x}>"),
                    description: String::new(),
                    unit: String::new(),
                    mode: 0,
                    value_type: 4,
                });
                d.metrics.len() as u32 - 1
            });
        }
    }
    (fix_func, fix_counter)
}

/// The decoded streams into one column per process (in stream order; placeholders
/// remapped, warnings collected); the native record counts. The all-processes communicator
/// goes when no event uses it.
fn merge(
    d: &mut Definitions,
    decoded: Vec<(PathBuf, StreamOut)>,
    nprocs: usize,
    warnings: &mut Vec<Warning>,
) -> (Vec<Events>, [u64; 20]) {
    let (fix_func, fix_counter) = placeholders(d, &decoded);
    let mut columns: Vec<Option<Events>> = (0..nprocs).map(|_| None).collect();
    let mut native = [0u64; 20];
    let mut used_world = false;
    for (file, o) in decoded {
        for (k, n) in o.native.iter().enumerate() {
            native[k] += n;
        }
        used_world |= o.used_world;
        stream_warnings(&file, &o, warnings);
        let undefined = !o.undefined_funcs.is_empty() || !o.undefined_counters.is_empty();
        for (l, mut ev) in o.procs {
            if undefined {
                remap(
                    &mut ev,
                    &o.undefined_funcs,
                    &fix_func,
                    &o.undefined_counters,
                    &fix_counter,
                );
            }
            let slot = &mut columns[l as usize];
            match slot {
                None => *slot = Some(ev),
                Some(prev) => {
                    warnings.push(Warning {
                        file: file.display().to_string(),
                        message: format!(
                            "process {:x} has events in more than one stream; appended in stream order",
                            d.locations[l as usize].id
                        ),
                    });
                    append(prev, ev);
                }
            }
        }
    }
    if !used_world {
        d.comms.pop();
    }
    let events = columns.into_iter().map(Option::unwrap_or_default).collect();
    (events, native)
}

/// The problems of one stream that did not stop the reading.
fn stream_warnings(file: &Path, o: &StreamOut, warnings: &mut Vec<Warning>) {
    for (ln, m) in &o.warnings {
        warnings.push(Warning {
            file: format!("{}:{ln}", file.display()),
            message: m.clone(),
        });
    }
    if o.unknown.0 > 0 {
        warnings.push(Warning {
            file: format!("{}:{}", file.display(), o.unknown.1),
            message: format!(
                "{} line(s) that are no known event record, counted as 'Unknown' events as otfprint does",
                o.unknown.0
            ),
        });
    }
    if !o.undefined_funcs.is_empty() || !o.undefined_counters.is_empty() {
        warnings.push(Warning {
            file: file.display().to_string(),
            message: format!(
                "events refer to {} function(s) and {} counter(s) that no definition declares",
                o.undefined_funcs.len(),
                o.undefined_counters.len()
            ),
        });
    }
}

/// The trace: origin and clock from the definitions, the time span from the events.
fn finish(
    path: &Path,
    stem: &Path,
    raw: &defs::RawDefs,
    defs: Definitions,
    events: Vec<Events>,
    native: [u64; 20],
    mut warnings: Vec<Warning>,
) -> Trace {
    let timer_resolution = match raw.timer_resolution {
        Some(r) if r > 0 => r,
        _ => {
            warnings.push(Warning {
                file: format!("{}.0.def", stem.display()),
                message: "no timer resolution defined; timestamps are shown as if in microseconds"
                    .to_string(),
            });
            1_000_000
        }
    };
    let mut trace = Trace {
        path: path.to_path_buf(),
        origin: Origin {
            format: "OTF",
            format_version: raw.version.clone().unwrap_or_else(|| "1".to_string()),
            creator: raw.creator.clone().unwrap_or_default(),
            machine: String::new(),
            description: String::new(),
            properties: Vec::new(),
        },
        timer_resolution,
        global_offset: 0,
        trace_length: 0,
        defs,
        events,
        warnings,
        paje: None,
        native_event_kinds: NATIVE_KINDS
            .iter()
            .zip(native)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (*k, n))
            .collect::<BTreeMap<_, _>>(),
    };
    if let Some((first, last)) = trace.time_span() {
        trace.global_offset = first;
        trace.trace_length = last - first;
    }
    trace
}

/// Replace stream-local placeholder indices by the trace's placeholder definitions.
fn remap(
    ev: &mut Events,
    funcs: &[u64],
    fix_func: &HashMap<u64, u32>,
    counters: &[u64],
    fix_counter: &HashMap<u64, u32>,
) {
    for i in 0..ev.len() {
        match ev.kind[i] {
            EventKind::Enter | EventKind::Leave if ev.arg[i] >= PLACEHOLDER => {
                let id = funcs[(ev.arg[i] - PLACEHOLDER) as usize];
                ev.arg[i] = fix_func[&id];
            }
            EventKind::Metric => {
                let off = ev.arg[i] as usize + 1;
                if let Some(m) = ev.extra.get_mut(off) {
                    if *m >= PLACEHOLDER as u64 {
                        let id = counters[(*m - PLACEHOLDER as u64) as usize];
                        *m = fix_counter[&id] as u64;
                    }
                }
            }
            _ => {}
        }
    }
}

/// Append the events of `b` to `a` (a process split over two streams).
fn append(a: &mut Events, b: Events) {
    for i in 0..b.len() {
        let t = b.time.get(i);
        let k = b.kind[i];
        a.attach_attributes(b.attributes_of(i));
        if let Some(m) = b.msg(i) {
            a.push_msg(t, k, m);
        } else if let Some(c) = b.coll(i) {
            a.push_coll(t, k, c);
        } else if matches!(k, EventKind::Enter | EventKind::Leave) {
            a.push_region(t, k, b.arg[i]);
        } else if k == EventKind::Unknown {
            a.push_unknown(t, b.arg[i] as u8);
        } else {
            a.push_extra(t, k, b.fields(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_master_files() {
        assert!(sniff(b"1:1\n2:2\n"));
        assert!(sniff(b"10:10\n"));
        assert!(sniff(b"i1:0:4\n1:1"));
        assert!(!sniff(b"%EventDef"));
        assert!(!sniff(b"1:\n"));
        assert!(!sniff(b"DP1NM"));
        assert!(!sniff(b""));
    }

    #[test]
    fn master_lines() {
        let m = master(Path::new("t.otf"), b"1:1\na:a,b,\ni4:0:1\nnonsense\n1:c\n").unwrap();
        assert_eq!(m, vec![(1, vec![1, 0xc]), (0xa, vec![0xa, 0xb])]);
        let e = master(Path::new("t.otf"), b"1:1\n2:x\n").unwrap_err();
        assert!(
            e.to_string().starts_with("t.otf:2: expected a master line"),
            "{e}"
        );
    }

    #[test]
    fn inflates_streams_without_end_block() {
        use std::io::Write;
        let text = b"0\n*1\nE1\n".repeat(1000);
        let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        w.write_all(&text).unwrap();
        w.flush().unwrap(); // a full flush, no finish: no end-of-stream block
        let open = w.get_ref().clone();
        assert_eq!(inflate(Path::new("x.z"), &open).unwrap(), text);
        let done = w.finish().unwrap();
        assert_eq!(inflate(Path::new("x.z"), &done).unwrap(), text);
        let mut bad = done.clone();
        bad[0] = 0x11;
        let e = inflate(Path::new("x.z"), &bad).unwrap_err().to_string();
        assert!(
            e.starts_with("x.z: byte ") && e.contains("corrupt zlib data"),
            "{e}"
        );
        let mut extra = done;
        extra.push(0);
        assert!(inflate(Path::new("x.z"), &extra).is_err());
    }
}
