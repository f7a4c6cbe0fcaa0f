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
mod memo;
pub mod mpi;
pub mod pe;
pub mod scan;
mod sim;
pub mod stream;

use crate::error::{Error, Place, Result, Warning};
use crate::model::*;
use header::{EventDef, Kind, Role};
use memo::Memo;
use sim::{Batch, Code, Container, Loc, Sim};
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
        // one or two digits (most aliases) without the general parser
        match *k {
            [a] if a.is_ascii_digit() => return Some((a - b'0') as usize),
            [a @ b'1'..=b'9', b] if b.is_ascii_digit() => {
                return Some(((a - b'0') * 10 + (b - b'0')) as usize)
            }
            _ => {}
        }
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

/// The first half of the simulation: definitions, and the names of every event resolved to
/// types, containers and regions (the second half, `sim.rs`, applies the resulting ops).
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
    /// Containers so far, the root `0` included.
    ncontainers: u32,
    cont_ids: SymMap,
    /// Containers by alias, looked up before names (an alias may equal another's name).
    cont_aliases: SymMap,
    value_names: Vec<String>,
    raw_values: SymMap,
    /// Region of each value name (None until first used by a state).
    value_region: Vec<Option<RegionIdx>>,
    region_ids: FxMap<String, RegionIdx>,
    regions: Vec<Region>,
    creator: String,
    format_version: String,
    warnings: Vec<Warning>,
    /// perfexpert's records (`pe.rs`), when the trace carries them.
    pe: pe::Records,
    /// Which link ends pair up (the simulation's slots).
    pairs: sim::Pairing,
}

/// A decoded field as the text reader would see it (numbers of string fields as empty).
#[inline(always)]
fn text<'v>(v: &binary::Val<'v>) -> &'v [u8] {
    match *v {
        binary::Val::Str(s) => s,
        _ => b"",
    }
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
        let map = &map;
        // the decoder gives back the pages it has passed, so the file's pages do not stay
        // in the resident set beside the model
        let release = move |from: usize, to: usize| {
            // SAFETY: the mapping is read-only and never written: MADV_DONTNEED only drops
            // its pages from the resident set, and a later read of them faults them in
            // again from the file (the same contents), as the first read did.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
            };
        };
        return exact_dates(path, |digits| {
            let mut r = Reader::new(path, digits);
            r.binary = true;
            r.run_binary(map, Some(&release))
        });
    }
    parse(path, &map)
}

/// Where the binary read's decoding thread hands its full batches: the channel to the
/// simulation, the emptied batches coming back, and the column memory to fault in while
/// the channel is full (`sim::Pending`).
struct Out<'t> {
    tx: &'t std::sync::mpsc::SyncSender<Batch>,
    back: &'t std::sync::mpsc::Receiver<Batch>,
    pending: &'t sim::Pending,
    /// How the decoding thread waited for the simulation (`Waits::log`).
    waits: Waits,
}

impl Out<'_> {
    /// Hand `batch` over (an emptied one in its place), faulting in column memory while the
    /// simulation has no room for it; false when the simulation stopped (at an error).
    fn send(&mut self, batch: &mut Batch) -> bool {
        use std::sync::mpsc::TrySendError;
        let next = self
            .back
            .try_recv()
            .unwrap_or_else(|_| Batch::with_capacity(OPS_PER_BATCH));
        let mut full = std::mem::replace(batch, next);
        self.waits.batches += 1;
        loop {
            match self.tx.try_send(full) {
                Ok(()) => return true,
                Err(TrySendError::Full(b)) if self.pending.step() => {
                    self.waits.populated += 1;
                    full = b;
                }
                Err(TrySendError::Full(b)) => {
                    let t = std::time::Instant::now();
                    let sent = self.tx.send(b).is_ok();
                    self.waits.waited(t);
                    return sent;
                }
                Err(TrySendError::Disconnected(_)) => return false,
            }
        }
    }
}

/// How one thread of the binary read spent its time, for `-vv` (`tracing` at debug level,
/// `log`): the batches it handed over or applied, how often and how long it blocked on the
/// other thread, how many pieces of column memory it faulted in meanwhile (`sim::Pending`).
#[derive(Default)]
struct Waits {
    batches: u64,
    blocked: u64,
    waited: std::time::Duration,
    populated: u64,
}

impl Waits {
    /// A wait that began at `t` ended now.
    fn waited(&mut self, t: std::time::Instant) {
        self.blocked += 1;
        self.waited += t.elapsed();
    }

    /// Log them with the thread's start and end (ms since `start`, the read's start), its
    /// CPU time, minor page faults and context switches (Linux: `getrusage` of the thread).
    fn log(&self, thread: &str, start: std::time::Instant, began: std::time::Duration) {
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        #[allow(unused_mut)]
        let mut usage = (0.0, 0.0, 0, 0, 0);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: `getrusage` only writes the `rusage` it is given, a plain C struct for
            // which all zero bytes are a valid value.
            let mut r: libc::rusage = unsafe { std::mem::zeroed() };
            if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut r) } == 0 {
                let tv = |t: libc::timeval| t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
                usage = (
                    tv(r.ru_utime),
                    tv(r.ru_stime),
                    r.ru_minflt,
                    r.ru_nvcsw,
                    r.ru_nivcsw,
                );
            }
        }
        tracing::debug!(
            thread,
            began_ms = format_args!("{:.1}", ms(began)),
            ended_ms = format_args!("{:.1}", ms(start.elapsed())),
            batches = self.batches,
            blocked = self.blocked,
            blocked_ms = format_args!("{:.1}", ms(self.waited)),
            populated = self.populated,
            user_ms = format_args!("{:.0}", usage.0),
            system_ms = format_args!("{:.0}", usage.1),
            minor_faults = usage.2,
            switches = usage.3,
            preempted = usage.4,
            "binary Paje read thread"
        );
    }
}

/// Release the file's pages behind the binary decoder in steps of this many bytes.
const RELEASE_STEP: usize = 1 << 25;

/// Read the binary Paje trace in `data` (formats.md §F): the same simulation and model as
/// the text reader, fed with the decoded events; dates are the binary64 times converted to
/// the ticks their shortest decimal form gives (so a trace converted from text has the text's
/// ticks).
pub fn parse_binary(path: &Path, data: &[u8]) -> Result<Trace> {
    exact_dates(path, |digits| {
        let mut r = Reader::new(path, digits);
        r.binary = true;
        r.run_binary(data, None)
    })
}

/// Read the Paje trace in `data` (the content of `path`, which errors name).
pub fn parse(path: &Path, data: &[u8]) -> Result<Trace> {
    exact_dates(path, |digits| Reader::new(path, digits).run(data))
}

/// Read with ticks of 9 fraction digits (ns), again with 12 (ps) when a date had more, and
/// a warning when even 12 were not enough.
fn exact_dates<'a>(
    path: &Path,
    read: impl Fn(u32) -> Result<(Reader<'a>, Sim<'a>)>,
) -> Result<Trace> {
    let (first, sim) = read(9)?;
    if !first.inexact {
        let t = std::time::Instant::now();
        let trace = first.finish(sim);
        tracing::debug!(
            ms = format_args!("{:.1}", t.elapsed().as_secs_f64() * 1e3),
            "Paje model built from the simulation"
        );
        return trace;
    }
    let (mut second, sim) = read(12)?;
    if second.inexact {
        second.warnings.push(Warning {
            file: path.display().to_string(),
            message: "some dates have more than 12 fraction digits; they were rounded to 1 ps"
                .into(),
        });
    }
    second.finish(sim)
}

/// Times converted to ticks, remembered by the binary decoder: 2^this.
const TIME_SLOT_BITS: u32 = 12;

/// Recently converted times of the binary read, (bits, ticks) by a hash of the bits (0.0 s
/// is 0 ticks): times recur (on every container, at the start and end of a state), so each
/// is converted once.
struct Times {
    slots: Box<[(u64, u64); 1 << TIME_SLOT_BITS]>,
    /// The previous event's time: a state ends when the next begins, so consecutive events
    /// often share it (checked before the table, whose lines are rarely in the first-level
    /// cache).
    prev: (u64, u64),
}

impl Times {
    fn new() -> Times {
        Times {
            slots: Box::new([(0, 0); 1 << TIME_SLOT_BITS]),
            prev: (0, 0),
        }
    }

    #[inline(always)]
    fn slot(bits: u64) -> usize {
        (bits.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - TIME_SLOT_BITS)) as usize
    }

    #[inline(always)]
    fn get(&mut self, x: f64) -> Option<u64> {
        let bits = x.to_bits();
        if self.prev.0 == bits {
            return Some(self.prev.1);
        }
        let e = self.slots[Self::slot(bits)];
        if e.0 == bits {
            self.prev = e;
            return Some(e.1);
        }
        None
    }

    fn put(&mut self, x: f64, t: u64) {
        let bits = x.to_bits();
        self.slots[Self::slot(bits)] = (bits, t);
        self.prev = (bits, t);
    }
}

/// Ops per batch handed from the binary decoding thread to the simulation.
const OPS_PER_BATCH: usize = 1 << 12;

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
            ncontainers: 1,
            cont_ids: SymMap::default(),
            cont_aliases: SymMap::default(),
            value_names: Vec::new(),
            raw_values: SymMap::default(),
            value_region: Vec::new(),
            region_ids: FxMap::default(),
            regions: Vec::new(),
            creator: String::new(),
            format_version: String::new(),
            warnings: Vec::new(),
            pe: pe::Records::default(),
            pairs: sim::Pairing::default(),
        };
        // the implicit root type and container `0`
        r.types.push(Type {
            name: "0".into(),
            nature: Nature::Container,
            values: SymMap::default(),
            declared: 0,
        });
        r.type_ids.insert(&b"0"[..], 0);
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

    /// Scan on a second thread (scan.rs), resolve and simulate here, batch by batch.
    fn run(mut self, data: &[u8]) -> Result<(Reader<'a>, Sim<'a>)> {
        let path: &Path = self.path;
        let digits = self.digits;
        let mut sim = Sim::new(path, false, digits);
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
            let mut ops = Batch::with_capacity(4);
            for mut b in rx.iter() {
                if let Err(e) = self.consume(&mut b, &mut ops, &mut sim) {
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
        Ok((self, sim))
    }

    /// Decode (binary.rs) and resolve on a second thread, simulate (sim.rs) here, batch by
    /// batch: the two halves of the work run side by side.
    fn run_binary(
        self,
        data: &[u8],
        release: Option<&(dyn Fn(usize, usize) + Sync)>,
    ) -> Result<(Reader<'a>, Sim<'a>)> {
        let path = self.path;
        let mut sim = Sim::new(path, true, self.digits);
        sim.size = data.len() as u64;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(4);
        let (back_tx, back_rx) = std::sync::mpsc::sync_channel::<Batch>(8);
        let pending = sim::Pending::default();
        let start = std::time::Instant::now();
        let (result, reader) = std::thread::scope(|s| {
            let pending = &pending;
            let decoder = s.spawn(move || {
                let began = start.elapsed();
                let mut r = self;
                let mut batch = Batch::with_capacity(OPS_PER_BATCH);
                let mut out = Out {
                    tx: &tx,
                    back: &back_rx,
                    pending,
                    waits: Waits::default(),
                };
                if let Err(e) = r.decode(data, &mut batch, &mut out, release) {
                    batch.err = Some(Box::new(e));
                    batch.push(Code::Err, 0, 0, 0, 0, 0);
                }
                let _ = tx.send(batch);
                out.waits.log("decoding", start, began);
                r
            });
            let mut result = Ok(());
            let mut waits = Waits::default();
            let mut began = None;
            loop {
                let mut b = match rx.try_recv() {
                    Ok(b) => b,
                    Err(std::sync::mpsc::TryRecvError::Disconnected) => break,
                    // no batch yet: fault in column memory meanwhile, or wait
                    Err(std::sync::mpsc::TryRecvError::Empty) if pending.step() => {
                        waits.populated += 1;
                        continue;
                    }
                    Err(std::sync::mpsc::TryRecvError::Empty) => {
                        let t = std::time::Instant::now();
                        let b = rx.recv();
                        waits.waited(t);
                        match b {
                            Ok(b) => b,
                            Err(_) => break,
                        }
                    }
                };
                began.get_or_insert_with(|| start.elapsed());
                waits.batches += 1;
                if let Err(e) = sim.apply(&mut b) {
                    result = Err(e);
                    break;
                }
                b.clear();
                // the column memory reserved in this batch, for whichever thread has time
                pending.add(&mut sim.populate);
                let _ = back_tx.try_send(b);
            }
            drop(rx);
            waits.log("simulation", start, began.unwrap_or_default());
            (result, decoder.join())
        });
        result?;
        let reader = reader.map_err(|_| {
            Error::format(
                path,
                Place::File,
                "internal error: the binary Paje decoder failed",
            )
        })?;
        Ok((reader, sim))
    }

    /// Decode every event and resolve it into `batch`, handing full batches to `tx`.
    fn decode<'d>(
        &mut self,
        data: &'d [u8],
        batch: &mut Batch,
        out: &mut Out,
        release: Option<&(dyn Fn(usize, usize) + Sync)>,
    ) -> Result<()>
    where
        'a: 'd,
    {
        let mut dec = binary::Decoder::new(self.path, data)?;
        let mut f: [&[u8]; binary::MAX_FIELDS] = [&[]; binary::MAX_FIELDS];
        let mut ev = binary::Event::new();
        let mut hot = binary::Hot::default();
        let mut released = 0;
        let mut memo = Memo::new();
        let mut states = memo::States::new();
        let mut links = memo::Recent::new();
        let mut times = Times::new();
        loop {
            // a run of state events whose bytes were seen before (`memo::States`): only their
            // times are new; then state and link events straight from the bytes where their
            // plan allows, the others (and those the plan does not fit) through `next_step`
            let stamp = memo::stamp(dec.epoch, memo.generation());
            self.known_states(&mut dec, &states, stamp, &mut times, batch)?;
            let full = batch.len() >= OPS_PER_BATCH;
            // likewise a link event whose names but the key and size were seen before: its
            // time, key and size are read
            let link = match full {
                true => None,
                false => dec.peek_link(),
            };
            let link = link.and_then(|lp| {
                let (s, len) = links.find(lp.head, lp.w, lp.min, dec.epoch, memo.generation())?;
                Some((lp, *s, len))
            });
            let link = link.filter(|(lp, _, len)| dec.finish_link(lp, *len, &mut hot));
            let line = if full {
                // after a run of known state events
                dec.offset()
            } else if let Some((lp, s, _)) = link {
                let t = self.ticks(&mut times, hot.time(), s.kind, hot.offset)?;
                self.link_key(batch, s.code, s.ty, s.c, &hot);
                batch.push(s.code, s.ty, s.c, s.x, t, hot.offset);
                lp.start as u64
            } else if dec.next_hot(&mut hot) {
                let t = self.ticks(&mut times, hot.time(), hot.kind, hot.offset)?;
                self.hot(&mut memo, &hot, t, batch)?;
                let op = batch
                    .ops
                    .last()
                    .map(|op| (op.code, hot.kind, op.ty, op.c, op.x));
                let (epoch, generation) = (dec.epoch, memo.generation());
                if let (Some((from, end)), Some(op)) = (dec.tail, op) {
                    if let Some((_, w0, _, w)) = dec.peek_at(from - 12) {
                        states.put(w0, w, end - from, memo::stamp(epoch, generation), op);
                    }
                }
                if let (Some((head, from, mid, min)), Some(op)) = (dec.cut, op) {
                    if let Some((_, _, _, w)) = dec.peek_at(from - 12) {
                        links.store(head, w, min, mid - from, epoch, generation, op);
                    }
                }
                hot.offset
            } else {
                match dec.next_step(&mut ev)? {
                    binary::Step::End => break,
                    binary::Step::Def(_) => continue,
                    binary::Step::Event => {}
                }
                let d = &dec.defs[ev.def as usize];
                let time = match d.def.has(Role::Time).then(|| ev.vals[d.def.at(Role::Time)]) {
                    Some(binary::Val::Num(x)) => Some(x),
                    _ => None,
                };
                let t = self.ticks(&mut times, time, d.kind, ev.offset)?;
                if dec.hot_view(&ev, &mut hot) {
                    self.hot(&mut memo, &hot, t, batch)?;
                } else {
                    for (slot, v) in f.iter_mut().zip(&ev.vals).take(ev.n) {
                        *slot = text(v);
                    }
                    self.event(&d.def, &f[..ev.n], t, ev.offset, batch)?;
                    if !matches!(
                        d.def.kind,
                        Kind::NewEvent
                            | Kind::DestroyContainer
                            | Kind::SetVariable
                            | Kind::AddVariable
                            | Kind::SubVariable
                    ) {
                        // a definition or a container: names may resolve differently now
                        memo.clear();
                    }
                }
                ev.offset
            };
            if batch.len() >= OPS_PER_BATCH {
                if let Some(release) = release {
                    // nothing refers to the bytes before the event just decoded any more
                    // (names and keys are copied; references of the reference variant that
                    // point back are read again from the file); looked at once a batch
                    let upto = (line as usize) & !(RELEASE_STEP - 1);
                    if upto > released {
                        release(released, upto);
                        released = upto;
                    }
                }
                if !out.send(batch) {
                    return Ok(()); // the simulation stopped at an error
                }
            }
        }
        self.origin_binary(&dec);
        Ok(())
    }

    /// The run of state events at the decoder's position that `states` knows (their bytes
    /// seen before at `stamp`), up to a full batch: their ops pushed with their times, the
    /// decoder moved past them.
    #[inline(always)]
    fn known_states(
        &mut self,
        dec: &mut binary::Decoder,
        states: &memo::States,
        stamp: u64,
        times: &mut Times,
        batch: &mut Batch,
    ) -> Result<()> {
        let Some((data, mut pos)) = dec.known_at() else {
            return Ok(());
        };
        let (nops, nlines) = (batch.ops.len(), batch.lines.len());
        let (ops, lines) = (
            batch.ops.spare_capacity_mut(),
            batch.lines.spare_capacity_mut(),
        );
        let room = OPS_PER_BATCH
            .saturating_sub(nops)
            .min(ops.len())
            .min(lines.len());
        let (mut n, mut err) = (0, None);
        while n < room {
            let Some((w0, time, w)) = binary::words_at(data, pos) else {
                break;
            };
            let Some(k) = states.get(w0, w, stamp) else {
                break;
            };
            let t = match self.ticks(times, Some(f64::from_bits(time)), k.kind, pos as u64) {
                Ok(t) => t,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            };
            let (code, ty, c, x) = (k.code, k.ty, k.c, k.x);
            ops[n].write(sim::Op { code, ty, c, x, t });
            lines[n].write(pos as u64);
            pos += 12 + k.len as usize;
            n += 1;
        }
        // SAFETY: the first `n` spare elements of both vectors were written in the loop
        // (`n` ≤ `room` ≤ the spare lengths), and `Op` and `u64` need no drop.
        unsafe {
            batch.ops.set_len(nops + n);
            batch.lines.set_len(nlines + n);
        }
        dec.skip_known(pos, n as u64);
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The ticks of an event's time `x` in seconds (0 without one), each distinct time
    /// converted once (`times`); the error names the event's kind and byte offset.
    #[inline(always)]
    fn ticks(&mut self, times: &mut Times, x: Option<f64>, kind: Kind, line: u64) -> Result<u64> {
        let Some(x) = x else { return Ok(0) };
        if let Some(t) = times.get(x) {
            return Ok(t);
        }
        self.new_ticks(times, x, kind, line)
    }

    /// `ticks` of a time not in `times` (out of line: the loops that call `ticks` keep their
    /// registers).
    #[inline(never)]
    fn new_ticks(&mut self, times: &mut Times, x: f64, kind: Kind, line: u64) -> Result<u64> {
        let t = lex::seconds_to_ticks(x, self.digits, &mut self.inexact).map_err(|e| {
            self.err(
                line,
                format!("{kind} has the time {x} s ({e:?}); expected a date of at least 0 s"),
            )
        })?;
        times.put(x, t);
        Ok(t)
    }

    /// A state or link event of the binary read, its names resolved through `memo` (each
    /// distinct name once): the same ops and errors as `event`.
    #[inline(always)]
    fn hot(&mut self, memo: &mut Memo, h: &binary::Hot, t: u64, out: &mut Batch) -> Result<()> {
        use binary::{HOT_CONTAINER, HOT_OTHER, HOT_TYPE};
        let line = h.offset;
        let code = match h.kind {
            Kind::SetState => Code::SetState,
            Kind::PushState => Code::PushState,
            Kind::PopState => Code::PopState,
            Kind::ResetState => Code::ResetState,
            Kind::StartLink => Code::StartLink,
            _ => Code::EndLink,
        };
        let (nature, what) = match code {
            Code::StartLink | Code::EndLink => (Nature::Link, "a link event"),
            _ => (Nature::State, "a state event"),
        };
        let ty = self.memo_type(memo, h.s[HOT_TYPE], h.k[HOT_TYPE], nature, what, line)?;
        let c = self.memo_container(memo, h.s[HOT_CONTAINER], h.k[HOT_CONTAINER], line)?;
        let x = match code {
            Code::PushState | Code::SetState => {
                let (s, key) = (h.s[HOT_OTHER], h.k[HOT_OTHER]);
                let tag = memo::VALUE.wrapping_add(ty);
                match memo.get(tag, key) {
                    Some(r) => r,
                    None => {
                        let v = self.value(ty, s);
                        let r = self.region_of_value(v, ty, out);
                        memo.put(tag, key, r);
                        r
                    }
                }
            }
            Code::StartLink | Code::EndLink => {
                let e = self.memo_container(memo, h.s[HOT_OTHER], h.k[HOT_OTHER], line)?;
                self.link_key(out, code, ty, c, h);
                e
            }
            _ => 0,
        };
        out.push(code, ty, c, x, t, line);
        Ok(())
    }

    /// The key and size of a link event of type `ty` in container `c` (`link_end`).
    #[inline(always)]
    fn link_key(&mut self, out: &mut Batch, code: Code, ty: u32, c: u32, h: &binary::Hot) {
        use binary::{HOT_KEY, HOT_SIZE};
        let start = code == Code::StartLink;
        let size = if start {
            lex::lenient_count(h.s[HOT_SIZE]).unwrap_or(0)
        } else {
            0
        };
        self.link_end(out, c, ty, h.s[HOT_KEY], size, start);
    }

    #[inline(always)]
    fn memo_type(
        &self,
        memo: &mut Memo,
        s: &[u8],
        key: u64,
        nature: Nature,
        what: &str,
        line: u64,
    ) -> Result<u32> {
        let tag = memo::TYPE + nature as u32;
        if let Some(v) = memo.get(tag, key) {
            return Ok(v);
        }
        let v = self.type_of(s, nature, what, line)?;
        memo.put(tag, key, v);
        Ok(v)
    }

    #[inline(always)]
    fn memo_container(&self, memo: &mut Memo, s: &[u8], key: u64, line: u64) -> Result<u32> {
        if let Some(v) = memo.get(memo::CONTAINER, key) {
            return Ok(v);
        }
        let v = self.container(s, line)?;
        memo.put(memo::CONTAINER, key, v);
        Ok(v)
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

    fn consume(&mut self, b: &mut scan::Batch, ops: &mut Batch, sim: &mut Sim) -> Result<()> {
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
                    self.event(&d, f, time, line, ops)?;
                    sim.apply(ops)?;
                    ops.clear();
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
    #[inline(always)]
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

    /// The region of state value `k` of state type `ty` (a new one is announced in `out`).
    #[inline(always)]
    fn region_of_value(&mut self, k: u32, ty: u32, out: &mut Batch) -> RegionIdx {
        match self.value_region[k as usize] {
            Some(r) => r,
            None => self.new_region_of_value(k, ty, out),
        }
    }

    /// `region_of_value` the first time value `k` is used.
    #[inline(never)]
    fn new_region_of_value(&mut self, k: u32, ty: u32, out: &mut Batch) -> RegionIdx {
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
                let p2p = paradigm == Paradigm::MPI && role == RegionRole::POINT2POINT
                    || name.starts_with("MPI_Wait")
                    || name.starts_with("MPI_Test");
                let isend = name.starts_with("MPI_I");
                let coll = coll.map_or(u32::MAX, u32::from);
                out.push(Code::Region, coll, p2p as u32, isend as u32, 0, 0);
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

    /// Resolve one event's names; what the simulation must do goes to `out`.
    fn event(
        &mut self,
        def: &EventDef,
        f: &[&[u8]],
        t: u64,
        line: u64,
        out: &mut Batch,
    ) -> Result<()> {
        match def.kind {
            Kind::DefineContainerType => self.define_type(def, f, Nature::Container, line)?,
            Kind::DefineStateType => self.define_type(def, f, Nature::State, line)?,
            Kind::DefineEventType => self.define_type(def, f, Nature::Event, line)?,
            Kind::DefineVariableType => self.define_type(def, f, Nature::Variable, line)?,
            Kind::DefineLinkType => self.define_type(def, f, Nature::Link, line)?,
            Kind::DefineEntityValue => self.define_value(def, f, line)?,
            Kind::CreateContainer => {
                let (ty, parent) = self.type_and_container(
                    def,
                    f,
                    Nature::Container,
                    "PajeCreateContainer",
                    line,
                )?;
                let name = f[def.at(Role::Name)];
                let idx = self.ncontainers;
                self.ncontainers += 1;
                self.cont_ids.insert(name, idx);
                if def.has(Role::Alias) {
                    self.cont_aliases.insert(f[def.at(Role::Alias)], idx);
                }
                out.names.push(lossy(name));
                out.push(Code::Container, ty, parent, 0, t, line);
                return Ok(());
            }
            Kind::DestroyContainer => {
                let ty = f[def.at(Role::Type)];
                self.type_of(ty, Nature::Container, "PajeDestroyContainer", line)?;
                let c = self.container(f[def.at(Role::Name)], line)?;
                out.push(Code::Destroy, 0, c, 0, t, line);
                return Ok(());
            }
            Kind::NewEvent => {
                let (ty, c) =
                    self.type_and_container(def, f, Nature::Event, "PajeNewEvent", line)?;
                if def.has(Role::PeRecord) {
                    let (tag, data) = (f[def.at(Role::Value)], f[def.at(Role::PeRecord)]);
                    self.pe.record(c, tag, data).map_err(|e| {
                        self.err(line, format!("PajeNewEvent '{}': expected {e}", lossy(tag)))
                    })?;
                }
                out.push(Code::NewEvent, ty, c, 0, t, line);
                return Ok(());
            }
            Kind::SetState | Kind::PushState | Kind::PopState | Kind::ResetState => {
                let (ty, c) =
                    self.type_and_container(def, f, Nature::State, "a state event", line)?;
                let region = if matches!(def.kind, Kind::PushState | Kind::SetState) {
                    let v = self.value(ty, f[def.at(Role::Value)]);
                    self.region_of_value(v, ty, out)
                } else {
                    0
                };
                let code = match def.kind {
                    Kind::SetState => Code::SetState,
                    Kind::PushState => Code::PushState,
                    Kind::PopState => Code::PopState,
                    _ => Code::ResetState,
                };
                out.push(code, ty, c, region, t, line);
                return Ok(());
            }
            Kind::SetVariable | Kind::AddVariable | Kind::SubVariable => {
                let (ty, c) =
                    self.type_and_container(def, f, Nature::Variable, "a variable event", line)?;
                let code = match def.kind {
                    Kind::SetVariable => Code::SetVariable,
                    Kind::AddVariable => Code::AddVariable,
                    _ => Code::SubVariable,
                };
                out.push(code, ty, c, 0, t, line);
                return Ok(());
            }
            Kind::StartLink | Kind::EndLink => return self.link(def, f, t, line, out),
            Kind::TraceFile => {
                return Err(self.err(
                    line,
                    "PajeTraceFile (including another trace file) is not supported",
                ))
            }
        }
        // a definition with a Time field still moves the end of the trace
        if t > 0 {
            out.push(Code::Time, 0, 0, 0, t, line);
        }
        Ok(())
    }

    fn link(
        &mut self,
        def: &EventDef,
        f: &[&[u8]],
        t: u64,
        line: u64,
        out: &mut Batch,
    ) -> Result<()> {
        let start = def.kind == Kind::StartLink;
        let ty = self.type_of(f[def.at(Role::Type)], Nature::Link, "a link event", line)?;
        let c = self.container(f[def.at(Role::Container)], line)?;
        let end_role = if start {
            Role::StartContainer
        } else {
            Role::EndContainer
        };
        let e = self.container(f[def.at(end_role)], line)?;
        let size = if start && def.has(Role::Size) {
            lex::lenient_count(f[def.at(Role::Size)]).unwrap_or(0)
        } else {
            0
        };
        self.link_end(out, c, ty, f[def.at(Role::Key)], size, start);
        let code = if start {
            Code::StartLink
        } else {
            Code::EndLink
        };
        out.push(code, ty, c, e, t, line);
        Ok(())
    }

    /// A link end's key, size and pairing slot into `out`.
    #[inline(always)]
    fn link_end(&mut self, out: &mut Batch, c: u32, ty: u32, key: &[u8], size: u64, start: bool) {
        let mut end = sim::LinkEnd::new(key, size);
        end.slot = self.pairs.slot(c, ty, &end.key, start);
        out.keys.push(end);
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

    /// The common model from what the simulation built; states still open close at the end.
    fn finish(mut self, mut sim: Sim) -> Result<Trace> {
        sim.close(&mut self.warnings);
        if self.pe.present {
            // written by perfexpert from a model: the records are that model
            let pe = std::mem::take(&mut self.pe);
            let aliases = &self.cont_aliases;
            return pe
                .into_trace(
                    self.path,
                    |a| aliases.get(a).copied(),
                    sim.counts,
                    self.warnings,
                )
                .map_err(|e| {
                    Error::format(
                        self.path,
                        Place::File,
                        format!("perfexpert's records: expected {e}"),
                    )
                });
        }
        let end = sim.end_time;
        let (system_tree, node_of) = system_tree(&sim.containers, &self.types);
        let locs = std::mem::take(&mut sim.locs);
        let (location_groups, locations, mut events) =
            locations(locs, &sim.containers, &self.types, &node_of);
        let comms = communicators(&self.regions, &locations, &mut events);
        let record_counts = record_counts(&self.types);
        Ok(Trace {
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
            paje: Some(sim.counts),
            native_event_kinds: Default::default(),
        })
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
        events.push(loc.events.finish());
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
