//! One OTF 1 event stream (formats.md B.3, B.5): time lines, process lines, key-value lines
//! and records, decoded into the event columns of every process the stream holds.
//!
//! Every record line is exactly one model event, so the model's event count is the count
//! `otfprint` prints (B.6). The kinds map onto the model's (`EventKind`) where the replay reads
//! them: Enter/Leave, SendMsg → MPI_SEND, RecvMsg → MPI_RECV, Counter → METRIC, and the
//! collectives → MPI_COLLECTIVE_BEGIN/END. A complete `COP` record (old VampirTrace) is one
//! MPI_COLLECTIVE_END placed at its end time (record time + duration), emitted in time order
//! and never after the Leave of the call it is in. Records the analysis has no use for
//! (file operations, process begin/end, RMA, comments, no-ops, unknown lines) keep their
//! fields as ordinary events of the nearest model kind.

use super::text::{self, Value};
use crate::model::*;
use std::collections::HashMap;

/// The kinds `otfprint` prints in its events section (B.6), in that order.
pub const NATIVE_KINDS: [&str; 20] = [
    "Enter",
    "Leave",
    "SendMessage",
    "ReceiveMessage",
    "Counter",
    "Collective",
    "BeginCollective",
    "EndCollective",
    "FileOperation",
    "BeginFileOperation",
    "EndFileOperation",
    "BeginProcess",
    "EndProcess",
    "RMAPut",
    "RMAPutRemoteEnd",
    "RMAGet",
    "RMAEnd",
    "EventComment",
    "NoOp",
    "Unknown",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Native {
    Enter,
    Leave,
    Send,
    Recv,
    Counter,
    Collective,
    BeginCollective,
    EndCollective,
    FileOp,
    BeginFileOp,
    EndFileOp,
    BeginProcess,
    EndProcess,
    RmaPut,
    RmaPutRemoteEnd,
    RmaGet,
    RmaEnd,
    Comment,
    NoOp,
    Unknown,
}

/// Raw record type kept in `arg` of the OTF 1 records stored as `EventKind::Unknown`.
pub const UNKNOWN_BASE: u8 = 0xe0;

/// Indices at or above this are stream-local placeholders for undefined functions/counters.
pub const PLACEHOLDER: u32 = 0x8000_0000;

/// A map from a format id to a model index, dense for small ids.
#[derive(Clone, Debug, Default)]
pub struct IdMap {
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
}

impl IdMap {
    pub fn insert(&mut self, id: u64, v: u32) {
        if id < 1 << 20 {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, u32::MAX);
            }
            if self.dense[i] == u32::MAX {
                self.dense[i] = v;
            }
        } else {
            self.sparse.entry(id).or_insert(v);
        }
    }

    #[inline]
    pub fn get(&self, id: u64) -> Option<u32> {
        if id < 1 << 20 {
            self.dense
                .get(id as usize)
                .copied()
                .filter(|&v| v != u32::MAX)
        } else {
            self.sparse.get(&id).copied()
        }
    }
}

/// A communicator as the events see it: its model index and process id → rank.
#[derive(Clone, Debug)]
pub struct CommLookup {
    pub idx: CommIdx,
    pub rank_of: HashMap<u64, u32>,
}

/// What every stream needs from the definitions (read-only, shared by the parallel decoders).
#[derive(Debug)]
pub struct Lookup {
    pub func: IdMap,
    pub counter: IdMap,
    /// counter index → OTF2_Type of its values
    pub counter_type: Vec<u8>,
    pub collop: HashMap<u64, u8>,
    pub comm: HashMap<u64, CommLookup>,
    pub loc: IdMap,
    /// The communicator of all processes (rank = location index), for messages and
    /// collectives whose communicator no definition declares.
    pub world: CommIdx,
}

/// The events of one stream.
#[derive(Debug, Default)]
pub struct StreamOut {
    /// (location, events) in order of first appearance in the stream.
    pub procs: Vec<(LocIdx, Events)>,
    pub native: [u64; 20],
    pub undefined_funcs: Vec<u64>,
    pub undefined_counters: Vec<u64>,
    pub used_world: bool,
    /// (line, message) of problems that did not stop the reading.
    pub warnings: Vec<(u64, String)>,
    /// Lines that are no known record: (count, first line).
    pub unknown: (u64, u64),
}

/// Why a stream could not be read: (line, expectation).
pub type StreamError = (u64, String);

struct Proc {
    pid: u64,
    loc: LocIdx,
    events: Events,
    stack: Vec<RegionIdx>,
    /// Ends of complete collectives (COP) not yet due: (end time, payload), in record order.
    pending: Vec<(u64, Coll)>,
    /// Begun collectives (COPB) by matching id.
    begun: HashMap<u64, Coll>,
}

impl Proc {
    /// Emit the collective ends due at or before `t`; with `all`, every one, at most at `t`.
    #[inline]
    fn flush(&mut self, t: u64, all: bool) {
        if self.pending.is_empty() {
            return;
        }
        let mut keep = Vec::new();
        let mut due: Vec<(u64, Coll)> = Vec::new();
        for (end, c) in self.pending.drain(..) {
            if end <= t || all {
                due.push((end.min(t), c));
            } else {
                keep.push((end, c));
            }
        }
        due.sort_by_key(|d| d.0);
        for (end, c) in due {
            self.events.push_coll(end, EventKind::MpiCollectiveEnd, c);
        }
        self.pending = keep;
    }
}

struct Decoder<'a> {
    lk: &'a Lookup,
    out: StreamOut,
    procs: Vec<Proc>,
    slot_of: HashMap<u64, usize>,
    undef_func: HashMap<u64, u32>,
    undef_counter: HashMap<u64, u32>,
}

fn want(what: &str) -> String {
    format!("expected {what}")
}

impl<'a> Decoder<'a> {
    fn func(&mut self, id: u64) -> RegionIdx {
        if let Some(r) = self.lk.func.get(id) {
            return r;
        }
        let n = self.undef_func.len() as u32;
        *self.undef_func.entry(id).or_insert_with(|| {
            self.out.undefined_funcs.push(id);
            PLACEHOLDER + n
        })
    }

    fn counter(&mut self, id: u64) -> u32 {
        if let Some(r) = self.lk.counter.get(id) {
            return r;
        }
        let n = self.undef_counter.len() as u32;
        *self.undef_counter.entry(id).or_insert_with(|| {
            self.out.undefined_counters.push(id);
            PLACEHOLDER + n
        })
    }

    /// (communicator, rank of `process` in it); the all-processes one when the trace does not
    /// declare `comm` or `process` is not in it.
    fn rank(&mut self, comm: u64, process: u64) -> Option<(CommIdx, u32)> {
        if let Some(c) = self.lk.comm.get(&comm) {
            if let Some(&r) = c.rank_of.get(&process) {
                return Some((c.idx, r));
            }
        }
        let loc = self.lk.loc.get(process)?;
        self.out.used_world = true;
        Some((self.lk.world, loc))
    }

    #[inline]
    fn events(&mut self, slot: usize) -> &mut Events {
        &mut self.procs[slot].events
    }

    #[inline(always)]
    fn enter(&mut self, slot: usize, t: u64, id: u64) {
        let r = self.func(id);
        let p = &mut self.procs[slot];
        p.stack.push(r);
        p.events.push_region(t, EventKind::Enter, r);
    }

    /// Function 0: leave whatever is on top of the stack (B.5).
    #[inline(always)]
    fn leave(&mut self, slot: usize, t: u64, id: u64) {
        let top = self.procs[slot].stack.pop();
        let r = match (id, top) {
            (0, Some(r)) => r,
            _ => self.func(id),
        };
        let p = &mut self.procs[slot];
        p.flush(t, true);
        p.events.push_region(t, EventKind::Leave, r);
    }

    /// A counter sample in the OTF2 Metric layout: metric, count, then (type, value) per
    /// member.
    #[inline(always)]
    fn metric(&mut self, slot: usize, t: u64, c: u32, v: u64) {
        let ty = self.lk.counter_type.get(c as usize).copied().unwrap_or(4);
        self.procs[slot]
            .events
            .push_extra(t, EventKind::Metric, &[c as u64, 1, ty as u64, v]);
    }
}

/// Decode one stream's text into the columns of the processes it holds.
pub fn decode(text: &[u8], lk: &Lookup) -> Result<StreamOut, StreamError> {
    let mut d = Decoder {
        lk,
        out: StreamOut::default(),
        procs: Vec::new(),
        slot_of: HashMap::new(),
        undef_func: HashMap::new(),
        undef_counter: HashMap::new(),
    };
    let mut time: Option<u64> = None;
    let mut cur: Option<usize> = None;
    let mut attrs: Vec<Attribute> = Vec::new();
    let estimate = text.len() / 10;
    // a cut-off last record is a truncated file, whatever it would parse as
    if text::Lines::last_open(text) {
        let lines = text.iter().filter(|&&c| c == b'\n').count() as u64 + 1;
        return Err((
            lines,
            "the last line has no line end: the stream is truncated; expected every record to end with '\\n'".into(),
        ));
    }
    for (ln, _, line) in text::Lines::new(text) {
        let Some(&c) = line.first() else {
            continue;
        };
        if text::is_hex(c) {
            let t = text::parse_hex(line).ok_or_else(|| {
                (
                    ln,
                    want("a time line: a hexadecimal number of at most 16 digits"),
                )
            })?;
            if let Some(prev) = time {
                if t < prev {
                    return Err((
                        ln,
                        format!("time goes backwards ({t:x} after {prev:x}); expected non-decreasing timestamps in a stream"),
                    ));
                }
            }
            time = Some(t);
            continue;
        }
        if c == b'*' {
            let p = text::parse_hex(&line[1..])
                .ok_or_else(|| (ln, want("a process line: '*' and a hexadecimal process id")))?;
            if cur.is_some_and(|s| d.procs[s].pid == p) {
                continue; // the writer repeats the process after every time line
            }
            let slot = match d.slot_of.get(&p) {
                Some(&s) => s,
                None => {
                    let loc = lk.loc.get(p).ok_or_else(|| {
                        (
                            ln,
                            format!(
                                "process {p:x} is neither defined nor listed in the master file; expected a known process"
                            ),
                        )
                    })?;
                    d.procs.push(Proc {
                        pid: p,
                        loc,
                        events: Events::with_capacity(if d.procs.is_empty() {
                            estimate
                        } else {
                            0
                        }),
                        stack: Vec::new(),
                        pending: Vec::new(),
                        begun: HashMap::new(),
                    });
                    d.slot_of.insert(p, d.procs.len() - 1);
                    d.procs.len() - 1
                }
            };
            cur = Some(slot);
            continue;
        }
        if c == b'K' {
            attrs.push(
                key_value(line)
                    .ok_or_else(|| (ln, want("a key-value line K<key>Y<type>V<value>")))?,
            );
            continue;
        }
        let (Some(t), Some(slot)) = (time, cur) else {
            return Err((
                ln,
                want("a time line and a process line ('*<process>') before the first record"),
            ));
        };
        d.procs[slot].flush(t, false);
        if !attrs.is_empty() {
            d.procs[slot].events.attach_attributes(&attrs);
            attrs.clear();
        }
        let native = match fast(&mut d, slot, t, line) {
            Some(n) => n,
            None => record(&mut d, slot, t, ln, line)?,
        };
        d.out.native[native as usize] += 1;
    }
    for p in &mut d.procs {
        p.flush(u64::MAX, true);
    }
    let mut out = d.out;
    out.procs = d
        .procs
        .into_iter()
        .map(|mut p| {
            p.events.shrink_to_fit();
            (p.loc, p.events)
        })
        .collect();
    Ok(out)
}

/// The leading hexadecimal number of `s` (1 to 16 digits) and the rest.
#[inline]
fn lead_hex(s: &[u8]) -> Option<(u64, &[u8])> {
    let n = s.iter().take_while(|&&c| text::is_hex(c)).count();
    if n == 0 || n > 16 {
        return None;
    }
    Some((text::parse_hex(&s[..n])?, &s[n..]))
}

/// The short forms of the most frequent records (`E<f>`, `L[<f>]`, `CNT<c>V<v>`) without the
/// general tokenizer; `None` sends the line to `record`, which reads any form.
#[inline]
fn fast(d: &mut Decoder, slot: usize, t: u64, line: &[u8]) -> Option<Native> {
    match line {
        [b'E', rest @ ..] => {
            let (id, tail) = lead_hex(rest)?;
            if !tail.is_empty() {
                return None;
            }
            d.enter(slot, t, id);
            Some(Native::Enter)
        }
        [b'L', rest @ ..] => {
            let id = if rest.is_empty() {
                0
            } else {
                let (id, tail) = lead_hex(rest)?;
                if !tail.is_empty() {
                    return None;
                }
                id
            };
            d.leave(slot, t, id);
            Some(Native::Leave)
        }
        [b'C', b'N', b'T', rest @ ..] => {
            let (id, tail) = lead_hex(rest)?;
            let [b'V', tail @ ..] = tail else {
                return None;
            };
            let (v, tail) = lead_hex(tail)?;
            if !tail.is_empty() {
                return None;
            }
            let c = d.counter(id);
            d.metric(slot, t, c, v);
            Some(Native::Counter)
        }
        _ => None,
    }
}

/// `K<key>Y<type>V<value>[L<len>]` (long: `KEY … TYPE … VALUE … [LEN …]`).
fn key_value(line: &[u8]) -> Option<Attribute> {
    let f = text::fields(line).ok()?;
    if !matches!(f.head(), b"K" | b"KEY") {
        return None;
    }
    let key = f.first().num()?;
    let ty = f.get(&["Y", "TYPE"])?.num()?;
    let value = match f.get(&["V", "VALUE"])? {
        // a byte array: keep its length only
        Value::Long(_) => f.get(&["L", "LEN"]).and_then(Value::num).unwrap_or(0),
        v => v.num()?,
    };
    // OTF_Type → OTF2_Type (B.3)
    let ty = match ty {
        1 => 5,
        2 => 1,
        3 => 6,
        4 => 2,
        5 => 7,
        6 => 3,
        7 => 8,
        8 => 4,
        9 => 9,
        10 => 10,
        _ => 0,
    };
    Some(Attribute {
        key: u32::try_from(key).ok()?,
        ty,
        value,
    })
}

/// The fields of one record line as its kind reads them, with the line for errors.
struct Rec<'l> {
    f: text::Fields<'l>,
    head: &'l [u8],
    ln: u64,
}

impl Rec<'_> {
    /// A required number: the record's first value (`names` empty) or a named field.
    fn num(&self, names: &[&str], what: &str) -> Result<u64, StreamError> {
        let v = if names.is_empty() {
            Some(self.f.first())
        } else {
            self.f.get(names)
        };
        // a required field needs its number; only Leave may have none (`L` = `L0`)
        v.filter(|v| {
            *v != Value::None || (names.is_empty() && matches!(self.head, b"L" | b"LEAVE"))
        })
        .and_then(Value::num)
        .ok_or_else(|| {
            (
                self.ln,
                format!(
                    "{what}: expected a hexadecimal number after '{}'",
                    names
                        .first()
                        .copied()
                        .unwrap_or(&*String::from_utf8_lossy(self.head))
                ),
            )
        })
    }

    /// An optional number: 0 when the field is absent or has no value.
    fn opt(&self, names: &[&str], what: &str) -> Result<u64, StreamError> {
        match self.f.get(names) {
            None | Some(Value::None) => Ok(0),
            Some(_) => self.num(names, what),
        }
    }
}

/// Any record in any form (the general tokenizer).
fn record(
    d: &mut Decoder,
    slot: usize,
    t: u64,
    ln: u64,
    line: &[u8],
) -> Result<Native, StreamError> {
    if line[0] == b'#' {
        d.procs[slot]
            .events
            .push_unknown(t, UNKNOWN_BASE + Native::Comment as u8);
        return Ok(Native::Comment);
    }
    let f = text::fields(line)
        .map_err(|e| (ln, format!("column {}: expected {}", e.col + 1, e.what)))?;
    let r = Rec {
        head: f.head(),
        f,
        ln,
    };
    let native = match r.head {
        b"E" | b"ENTER" => {
            d.enter(slot, t, r.num(&[], "Enter")?);
            Native::Enter
        }
        b"L" | b"LEAVE" => {
            d.leave(slot, t, r.num(&[], "Leave")?);
            Native::Leave
        }
        b"S" | b"SEND" | b"R" | b"RECEIVE" => message(d, slot, t, &r)?,
        b"CNT" | b"COUNTER" => {
            let c = d.counter(r.num(&[], "Counter")?);
            let v = r.num(&["V", "VALUE"], "Counter")?;
            d.metric(slot, t, c, v);
            Native::Counter
        }
        b"COP" | b"COLLOP" | b"COPB" | b"COLLOPBEGIN" => collective(d, slot, t, &r)?,
        b"COPE" | b"COLLOPEND" => collective_end(d, slot, t, &r)?,
        b"F" | b"FILEOP" | b"FA" | b"FB" | b"FILEOPBEGINNEW" | b"FILEOPBEGIN" | b"FF" | b"FE"
        | b"FILEOPENDNEW" | b"FILEOPEND" | b"T" | b"TRMAPUT" | b"U" | b"URMAPUTRE" | b"G"
        | b"GRMAGET" | b"M" | b"MRMAEND" => kept(d.events(slot), t, &r)?,
        b"PB" | b"PROCESSBEGIN" => {
            d.events(slot).push_extra(t, EventKind::ProgramBegin, &[]);
            Native::BeginProcess
        }
        b"PE" | b"PROCESSEND" => {
            d.events(slot).push_extra(t, EventKind::ProgramEnd, &[]);
            Native::EndProcess
        }
        b"N" | b"NOOP" => {
            d.events(slot)
                .push_unknown(t, UNKNOWN_BASE + Native::NoOp as u8);
            Native::NoOp
        }
        _ => {
            // otfprint prints such a line as an "Unknown" record and goes on (B.3)
            if d.out.unknown.0 == 0 {
                d.out.unknown.1 = ln;
            }
            d.out.unknown.0 += 1;
            d.events(slot)
                .push_unknown(t, UNKNOWN_BASE + Native::Unknown as u8);
            Native::Unknown
        }
    };
    Ok(native)
}

/// `S`/`R` (SendMsg, RecvMsg): a message to or from a peer process.
#[inline(always)]
fn message(d: &mut Decoder, slot: usize, t: u64, r: &Rec) -> Result<Native, StreamError> {
    let send = matches!(r.head, b"S" | b"SEND");
    let what = if send { "SendMsg" } else { "RecvMsg" };
    let peer = r.num(&[], what)?;
    let bytes = r.num(&["L", "LEN"], what)?;
    let tag = r.num(&["T", "TAG"], what)?;
    let comm = r.num(&["C", "COMM"], what)?;
    let (comm, rank) = d.rank(comm, peer).ok_or_else(|| {
        (
            r.ln,
            format!("{what}: process {peer:x} is not defined; expected a known peer process"),
        )
    })?;
    let m = Msg {
        peer: rank,
        comm,
        tag: u32::try_from(tag).unwrap_or(u32::MAX),
        bytes,
        request: None,
    };
    let kind = if send {
        EventKind::MpiSend
    } else {
        EventKind::MpiRecv
    };
    d.procs[slot].events.push_msg(t, kind, m);
    Ok(if send { Native::Send } else { Native::Recv })
}

/// `COP` (a complete collective, its end emitted when due) and `COPB` (a begun one).
#[inline(always)]
fn collective(d: &mut Decoder, slot: usize, t: u64, r: &Rec) -> Result<Native, StreamError> {
    let complete = matches!(r.head, b"COP" | b"COLLOP");
    let what = if complete {
        "CollectiveOperation"
    } else {
        "BeginCollectiveOperation"
    };
    let op_id = r.num(&[], what)?;
    let comm = r.num(&["C", "COMM"], what)?;
    let root = r.num(&["RT", "ROOT"], what)?;
    let sent = r.num(&["S", "SENT"], what)?;
    let received = r.num(&["R", "RECVD"], what)?;
    let op = d.lk.collop.get(&op_id).copied().unwrap_or(255);
    // the communicator and the rank of the root in it; root 0 = none
    let (me, caller) = (d.procs[slot].loc, d.procs[slot].pid);
    let (cidx, _) = d.rank(comm, caller).unwrap_or((d.lk.world, me));
    let root_rank = if root == 0 {
        u32::MAX
    } else {
        match d.lk.comm.get(&comm).and_then(|c| c.rank_of.get(&root)) {
            Some(&r) if cidx != d.lk.world => r,
            _ => d.lk.loc.get(root).unwrap_or(u32::MAX),
        }
    };
    let c = Coll {
        op,
        comm: cidx,
        root: root_rank,
        sent,
        received,
        request: None,
    };
    if complete {
        let dur = r.num(&["D", "DUR"], what)?;
        d.procs[slot].pending.push((t.saturating_add(dur), c));
        Ok(Native::Collective)
    } else {
        let h = r.num(&["H", "HANDLEID"], what)?;
        let p = &mut d.procs[slot];
        p.begun.insert(h, c);
        p.events.push_extra(t, EventKind::MpiCollectiveBegin, &[]);
        Ok(Native::BeginCollective)
    }
}

/// `COPE`: the end of a begun collective (a warning without its begin).
#[inline(always)]
fn collective_end(d: &mut Decoder, slot: usize, t: u64, r: &Rec) -> Result<Native, StreamError> {
    let h = r.num(&[], "EndCollectiveOperation")?;
    let p = &mut d.procs[slot];
    match p.begun.remove(&h) {
        Some(c) => p.events.push_coll(t, EventKind::MpiCollectiveEnd, c),
        None => {
            d.out.warnings.push((
                r.ln,
                format!("end of collective operation {h:x} without its begin; not analysed"),
            ));
            p.events
                .push_unknown(t, UNKNOWN_BASE + Native::EndCollective as u8);
        }
    }
    Ok(Native::EndCollective)
}

/// The optional fields after the first of the file operation and one-sided records.
const FILE_OP: &[&[&str]] = &[
    &["H", "HANDLEID"],
    &["OP", "OPERATION"],
    &["B", "BYTES"],
    &["D", "DUR"],
];
const FILE_OP_END: &[&[&str]] = &[
    &["MI", "MATCHID"],
    &["H", "HANDLEID"],
    &["OP", "OPERATION"],
    &["B", "BYTES"],
];
const RMA: &[&[&str]] = &[&["P", "PROCESS"], &["C", "COMM"], &["L", "LEN"]];
const RMA_END: &[&[&str]] = &[&["C", "COMM"]];

/// Records kept with their fields only: file operations (`F`, `FA`/`FB`, `FF`/`FE`) as I/O
/// events, one-sided operations (`T`, `U`, `G`, `M`) as RMA events.
#[inline(always)]
fn kept(events: &mut Events, t: u64, r: &Rec) -> Result<Native, StreamError> {
    use EventKind as K;
    let (kind, native, what, optional) = match r.head {
        b"F" | b"FILEOP" => (
            K::IoOperationComplete,
            Native::FileOp,
            "FileOperation",
            FILE_OP,
        ),
        b"FA" | b"FB" | b"FILEOPBEGINNEW" | b"FILEOPBEGIN" => (
            K::IoOperationBegin,
            Native::BeginFileOp,
            "BeginFileOperation",
            &[][..],
        ),
        b"FF" | b"FE" | b"FILEOPENDNEW" | b"FILEOPEND" => (
            K::IoOperationComplete,
            Native::EndFileOp,
            "EndFileOperation",
            FILE_OP_END,
        ),
        b"T" | b"TRMAPUT" => (K::RmaPut, Native::RmaPut, "RMAPut", RMA),
        b"U" | b"URMAPUTRE" => (
            K::RmaOpCompleteRemote,
            Native::RmaPutRemoteEnd,
            "RMAPutRemoteEnd",
            RMA,
        ),
        b"G" | b"GRMAGET" => (K::RmaGet, Native::RmaGet, "RMAGet", RMA),
        _ => (K::RmaOpCompleteBlocking, Native::RmaEnd, "RMAEnd", RMA_END),
    };
    let mut fields = [0u64; 5];
    fields[0] = r.num(&[], what)?;
    for (v, names) in fields[1..].iter_mut().zip(optional) {
        *v = r.opt(names, what)?;
    }
    events.push_extra(t, kind, &fields[..1 + optional.len()]);
    Ok(native)
}
