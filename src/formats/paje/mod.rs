//! Pure-Rust Paje reader (formats.md §C): SimGrid/SMPI, PajeNG/poti and StarPU traces.
//!
//! `scan.rs` splits the memory-mapped file into fields on a second thread; this module then
//! simulates the trace as PajeNG does (containers, state stacks, links by key, variable
//! pieces, events), counts entities as `pj_dump` counts them (formats.md §D) and fills the
//! common model (docs/paje.md):
//!
//! * every container that carries states (or message ends) is a location (one per
//!   (container, state type) when a container has several state types); containers form
//!   the system tree;
//! * every distinct state value is a region (SMPI call names mapped to `MPI_*`,
//!   patterns.md §2.1.2); Push/Pop/Set/Reset become Enter/Leave;
//! * a link whose ends lie in MPI point-to-point states is a message: MpiSend/MpiIsend on the
//!   start container, MpiRecv on the end container, paired by the link's key (patterns.md
//!   §5.3.6), in a synthesised communicator over all locations;
//! * a blocking MPI collective state gets an MpiCollectiveEnd before its Leave, on a
//!   reconstructed communicator per collective region (patterns.md §5.4): instance k is the
//!   k-th call on every location that calls it. Such communicators carry
//!   `COMM_FLAG_RECONSTRUCTED`, so findings from them get lower precision (§6.3 ρ).
//!
//! Timestamps: decimal seconds converted exactly to integer ticks of 1 ns (10^9 per second);
//! a file with finer dates is read again at 1 ps (10^12 per second).

pub mod binary;
pub mod header;
pub mod lex;
pub mod mpi;
pub mod scan;
pub mod stream;

use crate::error::{Error, Place, Result, Warning};
use crate::model::*;
use header::{EventDef, Kind, Role};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;

/// The first line that is not blank or a comment starts with `%EventDef` (or `%` then
/// `EventDef`). `head` is the beginning of the file.
pub fn sniff(head: &[u8]) -> bool {
    for line in head.split(|&b| b == b'\n') {
        let t: &[u8] = trim_start(line);
        if t.is_empty() || t[0] == b'#' {
            continue;
        }
        if let Some(rest) = t.strip_prefix(b"%") {
            return trim_start(rest).starts_with(b"EventDef");
        }
        return false;
    }
    false
}

fn trim_start(s: &[u8]) -> &[u8] {
    let k = s.iter().position(|&b| !lex::is_space(b)).unwrap_or(s.len());
    &s[k..]
}

/// Whether the file at `path` is a Paje trace (reads at most its first 64 KiB).
pub fn sniff_file(path: &Path) -> Result<bool> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut head = Vec::with_capacity(1 << 16);
    f.take(1 << 16)
        .read_to_end(&mut head)
        .map_err(|e| Error::io(path, "cannot read", e))?;
    Ok(sniff(&head))
}

/// A small, fast hasher for short keys (aliases like `12`, names like `rank-3`).
#[derive(Default, Clone, Copy)]
struct Fx(u64);

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = self.0;
        let mut c = bytes.chunks_exact(8);
        for w in &mut c {
            let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            h = (h.rotate_left(5) ^ v).wrapping_mul(K);
        }
        for &b in c.remainder() {
            h = (h.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
        self.0 = h;
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0.rotate_left(5) ^ v as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Names and aliases → index. Small decimal keys (SimGrid's numeric aliases) index a vector
/// directly; other keys of up to 7 bytes are packed into a u64 with their length, so a lookup
/// hashes and compares one word; longer keys are hashed as bytes.
#[derive(Default)]
struct SymMap {
    num: Vec<u32>,
    short: FxMap<u64, u32>,
    long: FxMap<Box<[u8]>, u32>,
}

const NUM_KEYS: u64 = 1 << 20;

impl SymMap {
    /// The value of a canonical decimal key below `NUM_KEYS` (no sign, no leading zero).
    #[inline]
    fn numeric(k: &[u8]) -> Option<usize> {
        if k.is_empty() || k.len() > 7 || (k[0] == b'0' && k.len() > 1) {
            return None;
        }
        let v = lex::uint(k)?;
        (v < NUM_KEYS).then_some(v as usize)
    }

    #[inline]
    fn pack(k: &[u8]) -> Option<u64> {
        if k.len() > 7 {
            return None;
        }
        let mut a = [0u8; 8];
        a[..k.len()].copy_from_slice(k);
        a[7] = k.len() as u8;
        Some(u64::from_le_bytes(a))
    }

    #[inline]
    fn get(&self, k: &[u8]) -> Option<&u32> {
        if let Some(n) = Self::numeric(k) {
            if let Some(v) = self.num.get(n).filter(|&&v| v != u32::MAX) {
                return Some(v);
            }
        }
        match Self::pack(k) {
            Some(p) => self.short.get(&p),
            None => self.long.get(k),
        }
    }

    fn insert(&mut self, k: &[u8], v: u32) {
        // the vector grows at most to twice its length (or 1024): sparse large numbers
        // go to the hash map instead
        if let Some(n) = Self::numeric(k).filter(|&n| n < (2 * self.num.len()).max(1024)) {
            if self.num.len() <= n {
                self.num.resize(n + 1, u32::MAX);
            }
            self.num[n] = v;
            return;
        }
        match Self::pack(k) {
            Some(p) => self.short.insert(p, v),
            None => self.long.insert(Box::from(k), v),
        };
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Nature {
    Container,
    State,
    Event,
    Variable,
    Link,
}

struct Type {
    name: String,
    nature: Nature,
    /// Entity values of this type: alias or name → index into `Reader::value_names`.
    values: SymMap,
    /// PajeDefineEntityValue records of this type.
    declared: u64,
}

struct Container {
    name: String,
    ty: u32,
    parent: Option<u32>,
    destroyed: bool,
    /// (state type or u32::MAX for "messages only", location)
    locs: Vec<(u32, u32)>,
    /// (event, variable or link type, time of its last event): the time-order check.
    last: Vec<(u32, u64)>,
    /// (variable type, start time of its current piece).
    pieces: Vec<(u32, u64)>,
}

/// Set the value of `key` in a short association list; the old value, if any.
#[inline]
fn replace(list: &mut Vec<(u32, u64)>, key: u32, v: u64) -> Option<u64> {
    match list.iter_mut().find(|x| x.0 == key) {
        Some(x) => Some(std::mem::replace(&mut x.1, v)),
        None => {
            list.push((key, v));
            None
        }
    }
}

/// One location being filled.
struct Loc {
    container: u32,
    events: Events,
    /// Open states: region of each.
    stack: Vec<RegionIdx>,
    /// Time of the last state change (time-order check per (container, type)).
    last: u64,
    /// States entered so far: identifies the current state instance.
    enters: u32,
    /// The last StartLink sent from here: (state instance, time, key without its counter,
    /// counter), to spot SimGrid's duplicated links (see `link`).
    last_start: Option<(u32, u64, LinkKey, u64)>,
}

/// A SimGrid SMPI key `<src>_<dst>_<tag>_<n>`: (`<src>_<dst>_<tag>`, n).
fn split_key(k: &[u8]) -> Option<(&[u8], u64)> {
    let cut = k.iter().rposition(|&b| b == b'_')?;
    Some((&k[..cut], lex::uint(&k[cut + 1..])?))
}

/// A link key: short ones inline (no allocation per link), long ones boxed.
#[derive(Clone, PartialEq, Eq, Hash)]
enum LinkKey {
    Short(u8, [u8; 23]),
    Long(Box<[u8]>),
}

impl LinkKey {
    #[inline]
    fn of(k: &[u8]) -> LinkKey {
        if k.len() <= 23 {
            let mut a = [0u8; 23];
            a[..k.len()].copy_from_slice(k);
            LinkKey::Short(k.len() as u8, a)
        } else {
            LinkKey::Long(Box::from(k))
        }
    }
}

/// One half of a link waiting for the other (keyed by container, type, key).
struct Half {
    start: bool,
    /// Message size from the StartLink's `Size` field (0 if none).
    bytes: u64,
    /// The message event it produced: (location, message index).
    msg: Option<(u32, u32)>,
    /// A StartLink SimGrid wrote twice for one message: neither half is a message.
    duplicate: bool,
}

struct Reader<'a> {
    path: &'a Path,
    /// Binary Paje: the `line` of errors and warnings is a byte offset.
    binary: bool,
    digits: u32,
    inexact: bool,
    /// Definitions in file order (the scanner's definition numbers).
    defs: Vec<EventDef>,
    types: Vec<Type>,
    type_ids: SymMap,
    /// Types by alias, looked up before names.
    type_aliases: SymMap,
    containers: Vec<Container>,
    cont_ids: SymMap,
    /// Containers by alias, looked up before names (an alias may equal another's name).
    cont_aliases: SymMap,
    value_names: Vec<String>,
    raw_values: SymMap,
    /// Region of each value name (None until first used by a state).
    value_region: Vec<Option<RegionIdx>>,
    region_ids: FxMap<String, RegionIdx>,
    regions: Vec<Region>,
    /// Per region: Some(op) for blocking MPI collectives; whether it is MPI point-to-point.
    region_coll: Vec<Option<u8>>,
    region_p2p: Vec<bool>,
    region_mpi: Vec<bool>,
    locs: Vec<Loc>,
    pending: FxMap<(u32, u32, LinkKey), Half>,
    counts: PajeCounts,
    pairs: u32,
    messages: u64,
    end_time: u64,
    creator: String,
    format_version: String,
    warnings: Vec<Warning>,
    order_warnings: u64,
    first_order_warning: Option<String>,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Read a Paje trace.
pub fn read(path: &Path) -> Result<Trace> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let len = file
        .metadata()
        .map_err(|e| Error::io(path, "cannot stat", e))?
        .len();
    if len == 0 {
        return Err(Error::format(
            path,
            Place::Byte(0),
            "empty file; expected a Paje trace",
        ));
    }
    // SAFETY: the map is read-only; a file changed underneath us would give wrong data,
    // never undefined behaviour beyond what reading a racing file gives (as in the OTF2 reader).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, "cannot map", e))?;
    if binary::sniff(&map) {
        return parse_binary(path, &map);
    }
    parse(path, &map)
}

/// Read the binary Paje trace in `data` (formats.md §F): the same simulation and model as
/// the text reader, fed with the decoded events; dates are the binary64 times converted to
/// the ticks their shortest decimal form gives (so a trace converted from text has the text's
/// ticks).
pub fn parse_binary(path: &Path, data: &[u8]) -> Result<Trace> {
    exact_dates(path, |digits| {
        let mut r = Reader::new(path, digits);
        r.binary = true;
        r.run_binary(data)
    })
}

/// Read the Paje trace in `data` (the content of `path`, which errors name).
pub fn parse(path: &Path, data: &[u8]) -> Result<Trace> {
    exact_dates(path, |digits| Reader::new(path, digits).run(data))
}

/// Read with ticks of 9 fraction digits (ns), again with 12 (ps) when a date had more, and
/// a warning when even 12 were not enough.
fn exact_dates<'a>(path: &Path, read: impl Fn(u32) -> Result<Reader<'a>>) -> Result<Trace> {
    let first = read(9)?;
    if !first.inexact {
        return Ok(first.finish());
    }
    let mut second = read(12)?;
    if second.inexact {
        second.warnings.push(Warning {
            file: path.display().to_string(),
            message: "some dates have more than 12 fraction digits; they were rounded to 1 ps"
                .into(),
        });
    }
    Ok(second.finish())
}

impl<'a> Reader<'a> {
    fn new(path: &'a Path, digits: u32) -> Reader<'a> {
        let mut r = Reader {
            path,
            binary: false,
            digits,
            inexact: false,
            defs: Vec::new(),
            types: Vec::new(),
            type_ids: SymMap::default(),
            type_aliases: SymMap::default(),
            containers: Vec::new(),
            cont_ids: SymMap::default(),
            cont_aliases: SymMap::default(),
            value_names: Vec::new(),
            raw_values: SymMap::default(),
            value_region: Vec::new(),
            region_ids: FxMap::default(),
            regions: Vec::new(),
            region_coll: Vec::new(),
            region_p2p: Vec::new(),
            region_mpi: Vec::new(),
            locs: Vec::new(),
            pending: FxMap::default(),
            counts: PajeCounts {
                containers: 1,
                ..Default::default()
            },
            pairs: 0,
            messages: 0,
            end_time: 0,
            creator: String::new(),
            format_version: String::new(),
            warnings: Vec::new(),
            order_warnings: 0,
            first_order_warning: None,
        };
        // the implicit root type and container `0`
        r.types.push(Type {
            name: "0".into(),
            nature: Nature::Container,
            values: SymMap::default(),
            declared: 0,
        });
        r.type_ids.insert(&b"0"[..], 0);
        r.containers.push(Container {
            name: "0".into(),
            ty: 0,
            parent: None,
            destroyed: false,
            locs: Vec::new(),
            last: Vec::new(),
            pieces: Vec::new(),
        });
        r.cont_ids.insert(&b"0"[..], 0);
        r
    }

    fn err(&self, line: u64, what: impl Into<String>) -> Error {
        let place = if self.binary {
            Place::Byte(line)
        } else {
            Place::Line(line)
        };
        Error::format(self.path, place, what)
    }

    /// Scan on a second thread (scan.rs), simulate here, batch by batch.
    fn run(mut self, data: &[u8]) -> Result<Reader<'a>> {
        let path: &Path = self.path;
        let digits = self.digits;
        let (tx, rx) = std::sync::mpsc::sync_channel::<scan::Batch>(2);
        // emptied batches go back to the scanner, so their buffers are allocated once
        let (back_tx, back_rx) = std::sync::mpsc::sync_channel::<scan::Batch>(4);
        let (result, inexact) = std::thread::scope(|s| {
            let scanner = s.spawn(move || {
                let mut sc = scan::Scanner::new(path, data, digits);
                loop {
                    let empty = back_rx.try_recv().unwrap_or_default();
                    let Some(b) = sc.next_batch(empty) else { break };
                    if tx.send(b).is_err() {
                        break; // the simulation stopped at an error
                    }
                }
                sc.inexact
            });
            let mut result = Ok(());
            for mut b in rx.iter() {
                if let Err(e) = self.consume(&mut b) {
                    result = Err(e);
                    break;
                }
                let _ = back_tx.try_send(b);
            }
            drop(rx);
            (result, scanner.join())
        });
        result?;
        self.inexact = inexact.map_err(|_| {
            Error::format(
                self.path,
                Place::File,
                "internal error: the Paje scanner failed",
            )
        })?;
        Ok(self)
    }

    /// Decode (binary.rs) and simulate, event by event.
    fn run_binary(mut self, data: &[u8]) -> Result<Reader<'a>> {
        let mut dec = binary::Decoder::new(self.path, data)?;
        let mut f: [&[u8]; binary::MAX_FIELDS] = [&[]; binary::MAX_FIELDS];
        let mut ev = binary::Event::new();
        loop {
            match dec.next_step(&mut ev)? {
                binary::Step::End => break,
                binary::Step::Def(_) => continue,
                binary::Step::Event => {}
            }
            let d = &dec.defs[ev.def as usize];
            for (slot, v) in f.iter_mut().zip(ev.fields()) {
                *slot = match v {
                    binary::Val::Str(s) => s,
                    _ => b"",
                };
            }
            let t = if d.def.has(Role::Time) {
                match ev.vals[d.def.at(Role::Time)] {
                    binary::Val::Num(x) => lex::seconds_to_ticks(x, self.digits, &mut self.inexact)
                        .map_err(|e| {
                            self.err(
                                ev.offset,
                                format!("{} has the time {x} s ({e:?}); expected a date of at least 0 s", d.kind),
                            )
                        })?,
                    _ => 0,
                }
            } else {
                0
            };
            if t > self.end_time {
                self.end_time = t;
            }
            self.event(&d.def, &f[..ev.n], t, ev.offset)?;
        }
        self.origin_binary(&dec);
        Ok(self)
    }

    /// What the decoder found out about the file: variant, layout, the AddVariable fix.
    fn origin_binary(&mut self, dec: &binary::Decoder) {
        self.format_version = format!(
            "binary (libRastro, {} variant{})",
            if dec.reference() {
                "reference"
            } else {
                "standard"
            },
            match dec.layout {
                binary::Layout::Fork => "",
                binary::Layout::TimeStamped => ", time-stamped layout",
            }
        );
        if dec.swapped_add_variable > 0 {
            self.warnings.push(Warning {
                file: self.path.display().to_string(),
                message: format!(
                    "this file has the time-stamped layout of the 2014 librastro, whose {} PajeAddVariable event(s) store Type before Container against their own definition; read with the two exchanged (formats.md §F.2.8)",
                    dec.swapped_add_variable
                ),
            });
        }
    }

    fn consume(&mut self, b: &mut scan::Batch) -> Result<()> {
        let fields = &b.fields;
        for item in b.items.drain(..) {
            match item {
                scan::Item::Def(d) => self.defs.push(*d),
                scan::Item::Creator(c) => self.creator = c,
                scan::Item::Err(e) => return Err(*e),
                scan::Item::Data {
                    line,
                    def,
                    time,
                    first,
                } => {
                    let d = self.defs[def as usize].clone();
                    let f = &fields[first as usize..first as usize + d.nfields];
                    if time > self.end_time {
                        self.end_time = time;
                    }
                    self.event(&d, f, time, line)?;
                }
            }
        }
        Ok(())
    }

    fn type_of(&self, s: &[u8], nature: Nature, what: &str, line: u64) -> Result<u32> {
        match self.type_aliases.get(s).or_else(|| self.type_ids.get(s)) {
            Some(&t) if self.types[t as usize].nature == nature => Ok(t),
            Some(&t) => Err(self.err(
                line,
                format!(
                    "type '{}' is a {:?} type; {what} needs a {nature:?} type",
                    lossy(s),
                    self.types[t as usize].nature
                ),
            )),
            None => Err(self.err(line, format!("unknown type '{}'", lossy(s)))),
        }
    }

    fn container(&self, s: &[u8], line: u64) -> Result<u32> {
        self.cont_aliases
            .get(s)
            .or_else(|| self.cont_ids.get(s))
            .copied()
            .ok_or_else(|| self.err(line, format!("unknown container '{}'", lossy(s))))
    }

    /// The type (of `nature`) and the container that a record names (`Role::Type`,
    /// `Role::Container`).
    #[inline(always)]
    fn type_and_container(
        &self,
        def: &EventDef,
        f: &[&[u8]],
        nature: Nature,
        what: &str,
        line: u64,
    ) -> Result<(u32, u32)> {
        let ty = self.type_of(f[def.at(Role::Type)], nature, what, line)?;
        let c = self.container(f[def.at(Role::Container)], line)?;
        Ok((ty, c))
    }

    fn define_type(
        &mut self,
        def: &EventDef,
        f: &[&[u8]],
        nature: Nature,
        line: u64,
    ) -> Result<()> {
        let parent = f[def.at(Role::Type)];
        self.type_of(parent, Nature::Container, "a type definition", line)?;
        if nature == Nature::Link {
            for r in [Role::StartContainerType, Role::EndContainerType] {
                self.type_of(f[def.at(r)], Nature::Container, "a link type", line)?;
            }
        }
        let name = f[def.at(Role::Name)];
        let idx = self.types.len() as u32;
        self.types.push(Type {
            name: lossy(name),
            nature,
            values: SymMap::default(),
            declared: 0,
        });
        self.type_ids.insert(name, idx);
        if def.has(Role::Alias) {
            self.type_aliases.insert(f[def.at(Role::Alias)], idx);
        }
        Ok(())
    }

    /// The value name index of a state/event/link value.
    #[inline]
    fn value(&mut self, ty: u32, v: &[u8]) -> u32 {
        if let Some(&k) = self.types[ty as usize].values.get(v) {
            return k;
        }
        if let Some(&k) = self.raw_values.get(v) {
            return k;
        }
        let k = self.value_names.len() as u32;
        self.value_names.push(lossy(v));
        self.value_region.push(None);
        self.raw_values.insert(v, k);
        k
    }

    /// The region of state value `k` of state type `ty`.
    fn region_of_value(&mut self, k: u32, ty: u32) -> RegionIdx {
        if let Some(r) = self.value_region[k as usize] {
            return r;
        }
        let raw = &self.value_names[k as usize];
        let smpi = self.types[ty as usize].name == "MPI_STATE";
        let (name, paradigm, role) = mpi::classify(raw, smpi);
        let r = match self.region_ids.get(&name) {
            Some(&r) => r,
            None => {
                let r = self.regions.len() as RegionIdx;
                let coll = (paradigm == Paradigm::MPI)
                    .then(|| mpi::collective_op(&name))
                    .flatten();
                self.region_coll.push(coll);
                self.region_p2p.push(
                    paradigm == Paradigm::MPI && role == RegionRole::POINT2POINT
                        || name.starts_with("MPI_Wait")
                        || name.starts_with("MPI_Test"),
                );
                self.region_mpi.push(paradigm == Paradigm::MPI);
                self.regions.push(Region {
                    id: r as u64,
                    name: name.clone(),
                    canonical_name: name.clone(),
                    description: if *raw != name {
                        format!("Paje state {raw}")
                    } else {
                        String::new()
                    },
                    role,
                    paradigm,
                    flags: 0,
                    source_file: String::new(),
                    begin_line: 0,
                    end_line: 0,
                });
                self.region_ids.insert(name, r);
                r
            }
        };
        self.value_region[k as usize] = Some(r);
        r
    }

    /// The location of (container, state type); `u32::MAX` = the container's message location.
    fn loc(&mut self, c: u32, stype: u32) -> u32 {
        let cont = &mut self.containers[c as usize];
        if let Some(&(_, l)) = cont.locs.iter().find(|x| x.0 == stype) {
            return l;
        }
        if stype == u32::MAX {
            if let Some(&(_, l)) = cont.locs.first() {
                return l;
            }
        } else if let Some(x) = cont.locs.iter_mut().find(|x| x.0 == u32::MAX) {
            // a location made for messages before the first state: it takes this type
            x.0 = stype;
            return x.1;
        }
        let l = self.locs.len() as u32;
        cont.locs.push((stype, l));
        self.locs.push(Loc {
            container: c,
            events: Events::default(),
            stack: Vec::new(),
            last: 0,
            enters: 0,
            last_start: None,
        });
        l
    }

    fn check_order(&mut self, last: u64, t: u64, what: &str, c: u32, line: u64) {
        if t < last {
            self.order_warnings += 1;
            if self.first_order_warning.is_none() {
                self.first_order_warning = Some(format!(
                    "{} {line}: {what} of container '{}' at {} s is earlier than the previous one at {} s",
                    if self.binary { "byte" } else { "line" },
                    self.containers[c as usize].name,
                    t as f64 / 10f64.powi(self.digits as i32),
                    last as f64 / 10f64.powi(self.digits as i32),
                ));
            }
        }
    }

    fn leave_top(&mut self, l: u32, t: u64) {
        let loc = &mut self.locs[l as usize];
        if let Some(r) = loc.stack.pop() {
            if let Some(op) = self.region_coll[r as usize] {
                loc.events.push_coll(
                    t,
                    EventKind::MpiCollectiveEnd,
                    Coll {
                        op,
                        // the region for now; the reconstructed communicator in `finish`
                        comm: r,
                        root: if mpi::rooted(op) { 0 } else { u32::MAX },
                        // the trace holds no payload: unknown, stored as 0 (the analysis
                        // treats unknown payloads of reconstructed instances as > 0)
                        sent: 0,
                        received: 0,
                        request: None,
                    },
                );
            }
            loc.events.push_region(t, EventKind::Leave, r);
        }
    }

    /// Close every open state of location `l` at `t`.
    #[inline]
    fn leave_all(&mut self, l: u32, t: u64) {
        while !self.locs[l as usize].stack.is_empty() {
            self.leave_top(l, t);
        }
    }

    fn event(&mut self, def: &EventDef, f: &[&[u8]], t: u64, line: u64) -> Result<()> {
        match def.kind {
            Kind::DefineContainerType => self.define_type(def, f, Nature::Container, line),
            Kind::DefineStateType => self.define_type(def, f, Nature::State, line),
            Kind::DefineEventType => self.define_type(def, f, Nature::Event, line),
            Kind::DefineVariableType => self.define_type(def, f, Nature::Variable, line),
            Kind::DefineLinkType => self.define_type(def, f, Nature::Link, line),
            Kind::DefineEntityValue => self.define_value(def, f, line),
            Kind::CreateContainer => self.create_container(def, f, line),
            Kind::DestroyContainer => self.destroy_container(def, f, t, line),
            Kind::NewEvent => self.new_event(def, f, t, line),
            Kind::SetState | Kind::PushState | Kind::PopState | Kind::ResetState => {
                self.state(def, f, t, line)
            }
            Kind::SetVariable | Kind::AddVariable | Kind::SubVariable => {
                self.variable(def, f, t, line)
            }
            Kind::StartLink | Kind::EndLink => self.link(def, f, t, line),
            Kind::TraceFile => Err(self.err(
                line,
                "PajeTraceFile (including another trace file) is not supported",
            )),
        }
    }

    fn define_value(&mut self, def: &EventDef, f: &[&[u8]], line: u64) -> Result<()> {
        let ty = f[def.at(Role::Type)];
        let t = match self.type_aliases.get(ty).or_else(|| self.type_ids.get(ty)) {
            Some(&t) if self.types[t as usize].nature != Nature::Container => t,
            _ => {
                return Err(self.err(
                    line,
                    format!(
                        "unknown state, event or link type '{}' for an entity value",
                        lossy(ty)
                    ),
                ))
            }
        };
        let name = f[def.at(Role::Name)];
        let k = self.value_names.len() as u32;
        self.value_names.push(lossy(name));
        self.value_region.push(None);
        self.types[t as usize].declared += 1;
        let values = &mut self.types[t as usize].values;
        values.insert(name, k);
        if def.has(Role::Alias) {
            values.insert(f[def.at(Role::Alias)], k);
        }
        Ok(())
    }

    fn create_container(&mut self, def: &EventDef, f: &[&[u8]], line: u64) -> Result<()> {
        let (ty, parent) =
            self.type_and_container(def, f, Nature::Container, "PajeCreateContainer", line)?;
        let name = f[def.at(Role::Name)];
        let idx = self.containers.len() as u32;
        self.containers.push(Container {
            name: lossy(name),
            ty,
            parent: Some(parent),
            destroyed: false,
            locs: Vec::new(),
            last: Vec::new(),
            pieces: Vec::new(),
        });
        self.cont_ids.insert(name, idx);
        if def.has(Role::Alias) {
            self.cont_aliases.insert(f[def.at(Role::Alias)], idx);
        }
        self.counts.containers += 1;
        Ok(())
    }

    fn destroy_container(&mut self, def: &EventDef, f: &[&[u8]], t: u64, line: u64) -> Result<()> {
        self.type_of(
            f[def.at(Role::Type)],
            Nature::Container,
            "PajeDestroyContainer",
            line,
        )?;
        let c = self.container(f[def.at(Role::Name)], line)?;
        let locs: Vec<u32> = self.containers[c as usize]
            .locs
            .iter()
            .map(|x| x.1)
            .collect();
        for l in locs {
            self.leave_all(l, t);
        }
        self.containers[c as usize].destroyed = true;
        Ok(())
    }

    #[inline]
    fn new_event(&mut self, def: &EventDef, f: &[&[u8]], t: u64, line: u64) -> Result<()> {
        let (ty, c) = self.type_and_container(def, f, Nature::Event, "PajeNewEvent", line)?;
        let last = replace(&mut self.containers[c as usize].last, ty, t).unwrap_or(0);
        self.check_order(last, t, "an event", c, line);
        self.counts.events += 1;
        Ok(())
    }

    /// PajeSetState, PajePushState, PajePopState, PajeResetState: Enter and Leave events.
    #[inline(always)]
    fn state(&mut self, def: &EventDef, f: &[&[u8]], t: u64, line: u64) -> Result<()> {
        let (ty, c) = self.type_and_container(def, f, Nature::State, "a state event", line)?;
        let l = self.loc(c, ty);
        let last = self.locs[l as usize].last;
        self.check_order(last, t, "a state change", c, line);
        self.locs[l as usize].last = t.max(last);
        match def.kind {
            Kind::PushState | Kind::SetState => {
                if def.kind == Kind::SetState {
                    self.leave_all(l, t);
                }
                let v = self.value(ty, f[def.at(Role::Value)]);
                let r = self.region_of_value(v, ty);
                let loc = &mut self.locs[l as usize];
                loc.stack.push(r);
                loc.events.push_region(t, EventKind::Enter, r);
                loc.enters = loc.enters.wrapping_add(1);
                self.counts.states += 1;
            }
            Kind::PopState => {
                if self.locs[l as usize].stack.is_empty() {
                    return Err(self.err(
                        line,
                        format!(
                            "PajePopState on container '{}' whose state stack is empty",
                            self.containers[c as usize].name
                        ),
                    ));
                }
                self.leave_top(l, t);
            }
            _ => self.leave_all(l, t),
        }
        Ok(())
    }

    /// PajeSetVariable, PajeAddVariable, PajeSubVariable: counted as pj_dump counts pieces.
    #[inline]
    fn variable(&mut self, def: &EventDef, f: &[&[u8]], t: u64, line: u64) -> Result<()> {
        let (ty, c) =
            self.type_and_container(def, f, Nature::Variable, "a variable event", line)?;
        let last = replace(&mut self.containers[c as usize].last, ty, t).unwrap_or(0);
        self.check_order(last, t, "a variable change", c, line);
        // a change at the start time of the current piece modifies it (formats.md §C.4)
        match replace(&mut self.containers[c as usize].pieces, ty, t) {
            Some(start) if start == t => {}
            Some(_) => self.counts.variables += 1,
            None => {
                if def.kind != Kind::SetVariable {
                    return Err(self.err(
                        line,
                        format!(
                            "{} on container '{}' before any PajeSetVariable of that variable",
                            def.kind, self.containers[c as usize].name
                        ),
                    ));
                }
                self.counts.variables += 1;
            }
        }
        Ok(())
    }

    fn link(&mut self, def: &EventDef, f: &[&[u8]], t: u64, line: u64) -> Result<()> {
        let start = def.kind == Kind::StartLink;
        let ty = self.type_of(f[def.at(Role::Type)], Nature::Link, "a link event", line)?;
        let c = self.container(f[def.at(Role::Container)], line)?;
        let end_role = if start {
            Role::StartContainer
        } else {
            Role::EndContainer
        };
        let e = self.container(f[def.at(end_role)], line)?;
        let last = replace(&mut self.containers[c as usize].last, ty, t).unwrap_or(0);
        self.check_order(last, t, "a link end", c, line);
        let key = LinkKey::of(f[def.at(Role::Key)]);
        let other = self.pending.remove(&(c, ty, key.clone()));
        if let Some(h) = &other {
            if h.start == start {
                return Err(self.err(
                    line,
                    format!(
                        "link key '{}' is already open with a {} on this container and type",
                        lossy(f[def.at(Role::Key)]),
                        if start {
                            "PajeStartLink"
                        } else {
                            "PajeEndLink"
                        }
                    ),
                ));
            }
        }
        let bytes = if start {
            if def.has(Role::Size) {
                lex::lenient_count(f[def.at(Role::Size)]).unwrap_or(0)
            } else {
                0
            }
        } else {
            other.as_ref().map_or(0, |h| h.bytes)
        };
        // a message end only inside an MPI point-to-point or wait state
        let mut msg = None;
        let mut duplicate = false;
        if let Some(&(_, l)) = self.containers[e as usize].locs.first() {
            if let Some(&r) = self.locs[l as usize].stack.last() {
                if start {
                    // SimGrid with `tracing/smpi/internals` writes every user MPI_Isend as two
                    // links with consecutive keys, same time, same state instance (testdata/
                    // smpi/README.md): the second is no message of its own
                    let loc = &mut self.locs[l as usize];
                    if let Some((prefix, n)) = split_key(f[def.at(Role::Key)]) {
                        let prefix = LinkKey::of(prefix);
                        duplicate = matches!(&loc.last_start,
                            Some((inst, tp, pp, np))
                                if *inst == loc.enters && *tp == t && *pp == prefix && n == np + 1);
                        loc.last_start = Some((loc.enters, t, prefix, n));
                    }
                } else {
                    duplicate = other.as_ref().is_some_and(|h| h.duplicate);
                }
                if self.region_p2p[r as usize] && !duplicate {
                    let kind = match (start, self.regions[r as usize].name.starts_with("MPI_I")) {
                        (true, true) => EventKind::MpiIsend,
                        (true, false) => EventKind::MpiSend,
                        (false, _) => EventKind::MpiRecv,
                    };
                    let loc = &mut self.locs[l as usize];
                    let i = loc.events.msg.peer.len() as u32;
                    loc.events.push_msg(
                        t,
                        kind,
                        Msg {
                            peer: u32::MAX,
                            comm: 0,
                            tag: 0,
                            bytes,
                            request: None,
                        },
                    );
                    msg = Some((l, i));
                    self.messages += 1;
                }
            }
        }
        match other {
            Some(h) => {
                self.counts.links += 1;
                if let (Some((la, ia)), Some((lb, ib))) = (h.msg, msg) {
                    // paired by key: a tag unique to the pair makes the replay's matching
                    // (comm, from, to, tag, order) pair exactly these two (patterns.md §5.3.6)
                    let tag = self.pairs;
                    self.pairs = self.pairs.wrapping_add(1);
                    for (l, i, peer) in [(la, ia, lb), (lb, ib, la)] {
                        let m = &mut self.locs[l as usize].events.msg;
                        m.peer[i as usize] = peer;
                        m.tag[i as usize] = tag;
                    }
                }
            }
            None => {
                self.pending.insert(
                    (c, ty, key),
                    Half {
                        start,
                        bytes,
                        msg,
                        duplicate,
                    },
                );
            }
        }
        Ok(())
    }

    /// The common model from what the simulation built; states still open close at the end.
    fn finish(mut self) -> Trace {
        let end = self.end_time;
        // states still open close at the end of the trace (as PajeNG closes containers)
        for l in 0..self.locs.len() as u32 {
            self.leave_all(l, end);
        }
        self.end_warnings();
        let (system_tree, node_of) = system_tree(&self.containers, &self.types);
        let locs = std::mem::take(&mut self.locs);
        let (location_groups, locations, mut events) =
            locations(locs, &self.containers, &self.types, &node_of);
        let comms = communicators(&self.regions, &locations, &mut events);
        let record_counts = record_counts(&self.types);
        Trace {
            path: self.path.to_path_buf(),
            origin: Origin {
                format: "Paje",
                format_version: self.format_version,
                creator: self.creator,
                machine: String::new(),
                description: String::new(),
                properties: Vec::new(),
            },
            timer_resolution: 10u64.pow(self.digits),
            global_offset: 0,
            trace_length: end,
            defs: Definitions {
                regions: self.regions,
                system_tree,
                location_groups,
                locations,
                groups: Vec::new(),
                comms,
                metrics: Vec::new(),
                record_counts,
            },
            events,
            warnings: self.warnings,
            paje: Some(self.counts),
            native_event_kinds: Default::default(),
        }
    }

    /// Events out of time order, link halves without the other half.
    fn end_warnings(&mut self) {
        let file = self.path.display().to_string();
        if self.order_warnings > 0 {
            self.warnings.push(Warning {
                file: file.clone(),
                message: format!(
                    "{} event(s) are not time-ordered within their container and type (PajeNG rejects this; perfexpert keeps the file order); first at {}",
                    self.order_warnings,
                    self.first_order_warning.as_deref().unwrap_or("?")
                ),
            });
        }
        if !self.pending.is_empty() {
            self.warnings.push(Warning {
                file: file.clone(),
                message: format!(
                    "{} link half/halves without the other half (not counted as links)",
                    self.pending.len()
                ),
            });
        }
    }
}

/// The system tree: every container but the root and the leaves that carry events (those
/// are processes, location groups below their parent container, as an SMPI rank is a
/// process, not a node of its own); and the node of each container.
fn system_tree(
    containers: &[Container],
    types: &[Type],
) -> (Vec<SystemTreeNode>, Vec<Option<usize>>) {
    let mut has_child = vec![false; containers.len()];
    for c in containers {
        if let Some(p) = c.parent {
            has_child[p as usize] = true;
        }
    }
    let mut node_of = vec![None; containers.len()];
    let mut system_tree = Vec::new();
    for (i, c) in containers.iter().enumerate().skip(1) {
        if !c.locs.is_empty() && !has_child[i] {
            continue;
        }
        node_of[i] = Some(system_tree.len());
        system_tree.push(SystemTreeNode {
            id: i as u64,
            name: c.name.clone(),
            class: types[c.ty as usize].name.clone(),
            parent: c.parent.and_then(|p| node_of[p as usize]),
        });
    }
    (system_tree, node_of)
}

/// One location group and location per location (named container/state type when its
/// container has several; the rank from an SMPI `rank-N` name), and its events.
fn locations(
    locs: Vec<Loc>,
    containers: &[Container],
    types: &[Type],
    node_of: &[Option<usize>],
) -> (Vec<LocationGroup>, Vec<Location>, Vec<Events>) {
    let mut location_groups = Vec::new();
    let mut locations = Vec::new();
    let mut events = Vec::new();
    for (l, loc) in locs.into_iter().enumerate() {
        let c = &containers[loc.container as usize];
        let name = if c.locs.len() > 1 {
            let st = c
                .locs
                .iter()
                .find(|x| x.1 == l as u32)
                .map_or(u32::MAX, |x| x.0);
            match types.get(st as usize) {
                Some(t) => format!("{}/{}", c.name, t.name),
                None => c.name.clone(),
            }
        } else {
            c.name.clone()
        };
        location_groups.push(LocationGroup {
            id: l as u64,
            name: c.name.clone(),
            kind: LocationGroupKind::Process,
            system_tree_parent: node_of[loc.container as usize]
                .or_else(|| c.parent.and_then(|p| node_of[p as usize])),
            creating_group: None,
        });
        let rank = c
            .name
            .strip_prefix("rank-")
            .and_then(|r| r.parse::<u32>().ok());
        locations.push(Location {
            id: l as u64,
            name,
            kind: LocationKind::CpuThread,
            group: Some(l),
            declared_events: None,
            rank,
        });
        events.push(loc.events);
    }
    (location_groups, locations, events)
}

/// Communicators: one for the messages (rank = location index), one reconstructed per
/// collective region (patterns.md §5.4), which the collective ends (holding their region
/// until now) then name.
fn communicators(regions: &[Region], locations: &[Location], events: &mut [Events]) -> Vec<Comm> {
    let mut comms = Vec::new();
    comms.push(Comm {
        id: 0,
        name: "point-to-point (Paje links)".into(),
        paradigm: Paradigm::MPI,
        group: None,
        parent: None,
        flags: 0,
        ranks: CommRanks::Locations((0..locations.len() as u32).map(Some).collect()),
    });
    let mut comm_of_region: Vec<u32> = vec![u32::MAX; regions.len()];
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); regions.len()];
    for (l, ev) in events.iter().enumerate() {
        for &r in &ev.coll.comm {
            let m = &mut members[r as usize];
            if m.last() != Some(&(l as u32)) {
                m.push(l as u32);
            }
        }
    }
    for (r, m) in members.iter_mut().enumerate() {
        if m.is_empty() {
            continue;
        }
        m.sort_by_key(|&l| (locations[l as usize].rank.unwrap_or(u32::MAX), l));
        comm_of_region[r] = comms.len() as u32;
        comms.push(Comm {
            id: comms.len() as u64,
            name: format!("{} (reconstructed)", regions[r].name),
            paradigm: Paradigm::MPI,
            group: None,
            parent: None,
            flags: COMM_FLAG_RECONSTRUCTED,
            ranks: CommRanks::Locations(m.iter().map(|&l| Some(l)).collect()),
        });
    }
    for ev in events.iter_mut() {
        for c in &mut ev.coll.comm {
            *c = comm_of_region[*c as usize];
        }
    }
    comms
}

/// Definitions per kind (for `info`).
fn record_counts(types: &[Type]) -> std::collections::BTreeMap<String, u64> {
    let mut record_counts = std::collections::BTreeMap::new();
    for t in types.iter().skip(1) {
        let k = match t.nature {
            Nature::Container => "PajeDefineContainerType",
            Nature::State => "PajeDefineStateType",
            Nature::Event => "PajeDefineEventType",
            Nature::Variable => "PajeDefineVariableType",
            Nature::Link => "PajeDefineLinkType",
        };
        *record_counts.entry(k.to_string()).or_insert(0) += 1;
    }
    let declared_values = types.iter().map(|t| t.declared).sum::<u64>();
    if declared_values > 0 {
        record_counts.insert("PajeDefineEntityValue".to_string(), declared_values);
    }
    record_counts
}
