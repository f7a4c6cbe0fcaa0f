//! The model of any trace (OTF2, OTF 1) as Paje text, laid out as SimGrid's SMPI writes it,
//! so that the Paje reader finds the same MPI program again: one container per location
//! (`rank-N` where the location has MPI rank N), states of the type `MPI_STATE` named by
//! the regions (Enter → PushState, Leave → PopState), one link per message, its two ends
//! paired as MPI pairs them (per sender, receiver, communicator and tag, in order), with
//! the message size in SimGrid's `Size` field; all events in time order. Binary Paje is
//! written from the same walk straight into `paje::Binary`, the bytes `paje::to_binary`
//! writes from this text (`to_binary`). docs/convert.md lists what Paje cannot hold.

use super::paje::{Binary, Failure};
use super::Summary;
use crate::error::Place;
use crate::formats::paje::header::{Kind, Role};
use crate::formats::paje::pe;
use crate::formats::paje::stream::Field;
use crate::model::{EventKind, Trace};
use std::collections::{BinaryHeap, HashMap};
use std::io::{self, Write};
use std::path::Path;

const HEADER: &str = "\
%EventDef PajeDefineContainerType 0
% Alias string
% Type string
% Name string
%EndEventDef
%EventDef PajeDefineStateType 1
% Alias string
% Type string
% Name string
%EndEventDef
%EventDef PajeDefineLinkType 2
% Alias string
% Type string
% StartContainerType string
% EndContainerType string
% Name string
%EndEventDef
%EventDef PajeCreateContainer 3
% Time date
% Alias string
% Type string
% Container string
% Name string
%EndEventDef
%EventDef PajeDestroyContainer 4
% Time date
% Type string
% Name string
%EndEventDef
%EventDef PajePushState 5
% Time date
% Type string
% Container string
% Value string
%EndEventDef
%EventDef PajePopState 6
% Time date
% Type string
% Container string
%EndEventDef
%EventDef PajeStartLink 7
% Time date
% Type string
% Container string
% Value string
% StartContainer string
% Key string
% Size string
%EndEventDef
%EventDef PajeEndLink 8
% Time date
% Type string
% Container string
% Value string
% EndContainer string
% Key string
%EndEventDef
";

/// The types of the SMPI-like trace, after the definitions (and `RECORD_DEFS`).
const TYPES: &str = "\
0 1 0 MPI
1 2 1 MPI_STATE
2 3 0 1 1 MPI_LINK
";

/// perfexpert's records (`formats::paje::pe`, docs/paje.md): an event type on the root
/// container for the definitions, one on the locations' containers for the events, and a
/// PajeNewEvent with the extra field only perfexpert interprets.
const RECORD_DEFS: &str = "\
%EventDef PajeDefineEventType 9
% Alias string
% Type string
% Name string
%EndEventDef
%EventDef PajeNewEvent 10
% Time date
% Type string
% Container string
% Value string
% PerfexpertRecord string
%EndEventDef
";

/// Decimal seconds of a tick count, exact where the resolution divides 10^12 (9 fraction
/// digits where it divides 10^9), else rounded to 12 digits.
struct Clock {
    res: u64,
    offset: u64,
    digits: u32,
}

impl Clock {
    fn new(t: &Trace) -> Clock {
        let res = t.timer_resolution.max(1);
        let digits = if 1_000_000_000 % res == 0 { 9 } else { 12 };
        Clock {
            res,
            offset: t.global_offset,
            digits,
        }
    }

    fn exact(&self) -> bool {
        10u64.pow(self.digits) % self.res == 0
    }

    /// Whole seconds and the fraction in units of 10^-digits s.
    fn parts(&self, tick: u64) -> (u64, u64) {
        let t = tick.saturating_sub(self.offset);
        let (s, r) = (t / self.res, t % self.res);
        let scale = 10u64.pow(self.digits);
        let frac = if scale % self.res == 0 {
            r * (scale / self.res)
        } else {
            ((r as u128 * scale as u128 + self.res as u128 / 2) / self.res as u128) as u64
        };
        (s, frac)
    }

    fn write(&self, buf: &mut Vec<u8>, tick: u64) {
        let (s, frac) = self.parts(tick);
        digits(buf, s, 0);
        buf.push(b'.');
        digits(buf, frac, self.digits as usize);
    }

    /// The binary64 the Paje reader parses from `write`'s decimal (Rust's parse is
    /// correctly rounded): the decimal is n / 10^digits, and where n is below 2^53 both are
    /// exact binary64s, so their correctly rounded quotient is that same number.
    fn seconds(&self, tick: u64) -> f64 {
        let scale = 10u64.pow(self.digits);
        let (s, frac) = self.parts(tick);
        match s.checked_mul(scale).and_then(|n| n.checked_add(frac)) {
            Some(n) if n < 1 << 53 => n as f64 / scale as f64,
            _ => {
                let mut b = Vec::with_capacity(32);
                self.write(&mut b, tick);
                (std::str::from_utf8(&b).ok())
                    .and_then(|x| x.parse().ok())
                    .unwrap_or(f64::NAN)
            }
        }
    }
}

/// The decimal digits of `v`, zero-padded to `width`.
fn digits(buf: &mut Vec<u8>, mut v: u64, width: usize) {
    let mut d = [b'0'; 20];
    let mut k = d.len();
    loop {
        k -= 1;
        d[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    let n = d.len() - k;
    buf.extend(std::iter::repeat_n(b'0', width.saturating_sub(n)));
    buf.extend_from_slice(&d[k..]);
}

/// A name as one Paje field (quoted when empty or holding white space or a quote).
fn name(buf: &mut Vec<u8>, s: &str) {
    if s.is_empty() || s.starts_with('#') || s.contains(|c: char| c.is_whitespace() || c == '"') {
        buf.push(b'"');
        buf.extend(s.bytes().filter(|&b| b != b'"' && b != b'\n'));
        buf.push(b'"');
    } else {
        buf.extend_from_slice(s.as_bytes());
    }
}

/// The message ends: per location and message index (`Events::msg` columns), the link key
/// (pair number, u64::MAX: unpaired), in MPI's order per (sender, receiver, communicator,
/// tag).
fn pair_messages(t: &Trace) -> (Vec<Vec<u64>>, u64) {
    // (sender, receiver, communicator, tag, event index, message index), sorted: each
    // key's ends in their order on their location (one location per key and side)
    type End = (u32, u32, u32, u32, u32, u32);
    let (mut sends, mut recvs): (Vec<End>, Vec<End>) = (Vec::new(), Vec::new());
    for (l, ev) in t.events.iter().enumerate() {
        let l = l as u32;
        for i in 0..ev.len() {
            let send = matches!(ev.kind[i], EventKind::MpiSend | EventKind::MpiIsend);
            let recv = matches!(ev.kind[i], EventKind::MpiRecv | EventKind::MpiIrecv);
            if !(send || recv) {
                continue;
            }
            let Some(m) = ev.msg(i) else { continue };
            let Some(peer) =
                (t.defs.comms.get(m.comm as usize)).and_then(|c| c.location_of(m.peer, l))
            else {
                continue;
            };
            if send {
                sends.push((l, peer, m.comm, m.tag, i as u32, ev.arg[i]));
            } else {
                recvs.push((peer, l, m.comm, m.tag, i as u32, ev.arg[i]));
            }
        }
    }
    sends.sort_unstable();
    recvs.sort_unstable();
    let mut keys: Vec<Vec<u64>> = (t.events.iter())
        .map(|e| vec![u64::MAX; e.msg.peer.len()])
        .collect();
    let key = |e: &End| (e.0, e.1, e.2, e.3);
    let (mut n, mut a, mut b) = (0u64, 0, 0);
    // pair each key's k-th send with its k-th receive, keys in order
    while a < sends.len() && b < recvs.len() {
        let (ka, kb) = (key(&sends[a]), key(&recvs[b]));
        if ka < kb {
            a += 1;
        } else if kb < ka {
            b += 1;
        } else {
            while a < sends.len() && b < recvs.len() && key(&sends[a]) == ka && key(&recvs[b]) == ka
            {
                let (s, r) = (sends[a], recvs[b]);
                keys[s.0 as usize][s.5 as usize] = n;
                keys[r.1 as usize][r.5 as usize] = n;
                n += 1;
                a += 1;
                b += 1;
            }
        }
    }
    (keys, n)
}

/// Where the model's Paje events go (Paje text or binary Paje): the walk in `write` decides
/// which events there are, a sink only spells them. Locations are `l`, their container
/// alias `c{l}`.
trait Sink {
    fn create(&mut self, t: u64, l: usize, name: &str) -> Result<(), Failure>;
    fn push(&mut self, t: u64, l: usize, region: usize) -> Result<(), Failure>;
    fn pop(&mut self, t: u64, l: usize) -> Result<(), Failure>;
    fn link(&mut self, send: bool, t: u64, l: usize, key: u64, bytes: u64) -> Result<(), Failure>;
    fn destroy(&mut self, t: u64, l: usize) -> Result<(), Failure>;
    /// Whether this sink writes perfexpert's records (`formats::paje::pe`).
    fn records(&self) -> bool {
        false
    }
    /// One record: on location `l`'s container, or on the root for a definition.
    fn record(
        &mut self,
        _t: u64,
        _l: Option<usize>,
        _tag: &str,
        _data: &[u8],
    ) -> Result<(), Failure> {
        Ok(())
    }
}

/// A name as the Paje reader reads the field `name` writes back.
fn name_value(s: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(s.len() + 2);
    name(&mut b, s);
    if b.first() == Some(&b'"') && b.len() >= 2 {
        b[1..b.len() - 1].to_vec()
    } else {
        b
    }
}

/// Paje text: the header (`HEADER`) first, then one line per event.
struct Text<'w> {
    out: &'w mut dyn Write,
    records: bool,
    buf: Vec<u8>,
    clock: Clock,
    regions: Vec<Vec<u8>>,
    push: Vec<Vec<u8>>,
    pop: Vec<Vec<u8>>,
}

impl Text<'_> {
    fn name(&mut self, s: &str) {
        name(&mut self.buf, s);
    }

    fn line(&mut self) -> Result<(), Failure> {
        self.buf.push(b'\n');
        if self.buf.len() >= 1 << 16 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl Sink for Text<'_> {
    fn create(&mut self, t: u64, l: usize, name: &str) -> Result<(), Failure> {
        self.buf.extend_from_slice(b"3 ");
        self.clock.write(&mut self.buf, t);
        let _ = write!(self.buf, " c{l} 1 0 ");
        self.name(name);
        self.line()
    }
    fn push(&mut self, t: u64, l: usize, region: usize) -> Result<(), Failure> {
        self.buf.extend_from_slice(b"5 ");
        self.clock.write(&mut self.buf, t);
        self.buf.extend_from_slice(&self.push[l]);
        self.buf.extend_from_slice(&self.regions[region]);
        self.line()
    }
    fn pop(&mut self, t: u64, l: usize) -> Result<(), Failure> {
        self.buf.extend_from_slice(b"6 ");
        self.clock.write(&mut self.buf, t);
        self.buf.extend_from_slice(&self.pop[l]);
        self.line()
    }
    fn link(&mut self, send: bool, t: u64, l: usize, key: u64, bytes: u64) -> Result<(), Failure> {
        self.buf.extend_from_slice(if send { b"7 " } else { b"8 " });
        self.clock.write(&mut self.buf, t);
        let _ = write!(self.buf, " 3 0 PTP c{l} k{key}");
        if send {
            let _ = write!(self.buf, " {bytes}");
        }
        self.line()
    }
    fn destroy(&mut self, t: u64, l: usize) -> Result<(), Failure> {
        self.buf.extend_from_slice(b"4 ");
        self.clock.write(&mut self.buf, t);
        let _ = write!(self.buf, " 1 c{l}");
        self.line()
    }
    fn records(&self) -> bool {
        self.records
    }
    fn record(&mut self, t: u64, l: Option<usize>, tag: &str, data: &[u8]) -> Result<(), Failure> {
        self.buf.extend_from_slice(b"10 ");
        self.clock.write(&mut self.buf, t);
        match l {
            Some(l) => {
                let _ = write!(self.buf, " 5 c{l} {tag} ");
            }
            None => {
                let _ = write!(self.buf, " 4 0 {tag} ");
            }
        }
        self.buf.extend_from_slice(data);
        self.line()
    }
}

/// Binary Paje straight from the model: the same events as the text, fields by role as
/// the Paje reader hands them to `paje::Binary` (dates as the binary64 of the text's
/// decimal), so the bytes are those of the text converted by `paje::to_binary`.
struct Bin<'w, 'p> {
    b: Binary<'w>,
    input: &'p Path,
    clock: Clock,
    regions: Vec<Vec<u8>>,
    alias: Vec<Vec<u8>>,
    key: Vec<u8>,
}

impl Bin<'_, '_> {
    fn emit(&mut self, kind: Kind, roles: &[Role], vals: &[Field]) -> Result<(), Failure> {
        self.b.event(self.input, kind, roles, vals, Place::File)
    }
}

impl Sink for Bin<'_, '_> {
    fn create(&mut self, t: u64, l: usize, name: &str) -> Result<(), Failure> {
        use Role::*;
        let name = name_value(name);
        let alias = std::mem::take(&mut self.alias[l]);
        let vals = [
            Field::Num(self.clock.seconds(t)),
            Field::Text(&alias),
            Field::Text(b"1"),
            Field::Text(b"0"),
            Field::Text(&name),
        ];
        let r = self.emit(
            Kind::CreateContainer,
            &[Time, Alias, Type, Container, Name],
            &vals,
        );
        self.alias[l] = alias;
        r
    }
    fn push(&mut self, t: u64, l: usize, region: usize) -> Result<(), Failure> {
        let vals = [
            Field::Num(self.clock.seconds(t)),
            Field::Text(b"2"),
            Field::Text(&self.alias[l]),
            Field::Text(&self.regions[region]),
        ];
        use Role::*;
        let roles = [Time, Type, Container, Value];
        self.b
            .event(self.input, Kind::PushState, &roles, &vals, Place::File)
    }
    fn pop(&mut self, t: u64, l: usize) -> Result<(), Failure> {
        let vals = [
            Field::Num(self.clock.seconds(t)),
            Field::Text(b"2"),
            Field::Text(&self.alias[l]),
        ];
        use Role::*;
        let roles = [Time, Type, Container];
        self.b
            .event(self.input, Kind::PopState, &roles, &vals, Place::File)
    }
    fn link(&mut self, send: bool, t: u64, l: usize, key: u64, _bytes: u64) -> Result<(), Failure> {
        // SimGrid's Size has no place in poti's field list: binary Paje drops it
        self.key.clear();
        self.key.push(b'k');
        digits(&mut self.key, key, 0);
        let vals = [
            Field::Num(self.clock.seconds(t)),
            Field::Text(b"3"),
            Field::Text(b"0"),
            Field::Text(b"PTP"),
            Field::Text(&self.alias[l]),
            Field::Text(&self.key),
        ];
        use Role::*;
        let (kind, end) = if send {
            (Kind::StartLink, StartContainer)
        } else {
            (Kind::EndLink, EndContainer)
        };
        let roles = [Time, Type, Container, Value, end, Key];
        self.b.event(self.input, kind, &roles, &vals, Place::File)
    }
    fn destroy(&mut self, t: u64, l: usize) -> Result<(), Failure> {
        let vals = [
            Field::Num(self.clock.seconds(t)),
            Field::Text(b"1"),
            Field::Text(&self.alias[l]),
        ];
        use Role::*;
        let roles = [Time, Type, Name];
        self.b.event(
            self.input,
            Kind::DestroyContainer,
            &roles,
            &vals,
            Place::File,
        )
    }
}

/// Write `trace` as Paje text to `out`, with perfexpert's records (the model reads back
/// exact); `progress` gets the events written now and then.
pub fn to_text(
    trace: &Trace,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Summary> {
    to_text_with(trace, true, out, progress)
}

/// `to_text`, with perfexpert's records or without them (then only the SMPI-like states
/// and links: what binary Paje holds).
pub fn to_text_with(
    trace: &Trace,
    records: bool,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> io::Result<Summary> {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
    buf.extend_from_slice(HEADER.as_bytes());
    if records {
        buf.extend_from_slice(RECORD_DEFS.as_bytes());
    }
    buf.extend_from_slice(TYPES.as_bytes());
    if records {
        let _ = writeln!(buf, "9 4 0 {}", pe::DEF_TYPE);
        let _ = writeln!(buf, "9 5 1 {}", pe::EVENT_TYPE);
    }
    let n = trace.defs.locations.len();
    let mut sink = Text {
        out,
        records,
        buf,
        clock: Clock::new(trace),
        regions: (trace.defs.regions.iter())
            .map(|r| {
                let mut b = Vec::new();
                name(&mut b, &r.name);
                b
            })
            .collect(),
        push: (0..n).map(|l| format!(" 2 c{l} ").into_bytes()).collect(),
        pop: (0..n).map(|l| format!(" 2 c{l}").into_bytes()).collect(),
    };
    let r = write(trace, &mut sink, progress);
    let r = r.and_then(|s| {
        sink.out.write_all(&sink.buf)?;
        Ok(s)
    });
    r.map_err(|e| match e {
        Failure::Output(e) => e,
        Failure::Input(e) => io::Error::other(e.to_string()),
    })
}

/// Write `trace` as binary Paje (the `reference` variant or the standard one) to `out`:
/// the bytes `paje::to_binary` writes from `to_text`'s output, without the text.
pub fn to_binary(
    trace: &Trace,
    reference: bool,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, Failure> {
    let mut b = Binary::new(out, reference);
    // the definitions and the three type definitions, read from the text header
    let header = [HEADER, TYPES].concat();
    b.feed(&trace.path, header.as_bytes(), &mut |_| {})?;
    let mut sink = Bin {
        b,
        input: &trace.path,
        clock: Clock::new(trace),
        regions: (trace.defs.regions.iter())
            .map(|r| name_value(&r.name))
            .collect(),
        alias: (0..trace.defs.locations.len())
            .map(|l| format!("c{l}").into_bytes())
            .collect(),
        key: Vec::new(),
    };
    let mut s = write(trace, &mut sink, progress)?;
    let b = sink.b.finish()?;
    s.dropped.extend(b.dropped);
    s.events = b.events;
    Ok(s)
}

/// The model's Paje events, in time order, to `sink`: containers created at the start,
/// states and links, containers destroyed at the last event.
fn write(
    trace: &Trace,
    sink: &mut dyn Sink,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, Failure> {
    let clock = Clock::new(trace);
    let (keys, _) = pair_messages(trace);
    // container names: rank-N for MPI ranks (the reader gives them rank N), else the
    // location's name, made unique
    let mut taken: HashMap<String, u32> = HashMap::new();
    let names: Vec<String> = (trace.defs.locations.iter())
        .map(|l| {
            let base = l
                .rank
                .map_or_else(|| l.name.clone(), |r| format!("rank-{r}"));
            let n = taken.entry(base.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                base
            } else {
                format!("{base}#{n}")
            }
        })
        .collect();
    let start = trace
        .time_span()
        .map_or(trace.global_offset, |(a, _)| a.min(trace.global_offset));
    let records = sink.records();
    let mut written = 0u64;
    if records {
        for (tag, data) in pe::definitions(trace) {
            sink.record(start, None, tag, &data)?;
            written += 1;
        }
    }
    for (k, n) in names.iter().enumerate() {
        sink.create(start, k, n)?;
    }
    // every location's events merged in time order (ties: location order)
    let mut heap: BinaryHeap<std::cmp::Reverse<(u64, u32, u32)>> = BinaryHeap::new();
    for (l, ev) in trace.events.iter().enumerate() {
        if !ev.is_empty() {
            heap.push(std::cmp::Reverse((ev.time.get(0), l as u32, 0)));
        }
    }
    let (mut dropped_kinds, mut unopened, mut attributes) = (0u64, 0u64, 0u64);
    let mut depth = vec![0u64; trace.events.len()];
    let mut end = start;
    let mut rec = pe::Rec::new();
    while let Some(std::cmp::Reverse((t, l, i))) = heap.pop() {
        let ev = &trace.events[l as usize];
        if let Some(nt) = ev.time.try_get(i as usize + 1) {
            heap.push(std::cmp::Reverse((nt, l, i + 1)));
        }
        end = end.max(t);
        let (l, i) = (l as usize, i as usize);
        let kind = ev.kind[i];
        match kind {
            EventKind::Enter => {
                depth[l] += 1;
                sink.push(t, l, ev.arg[i] as usize)?;
                written += 1;
            }
            EventKind::Leave if depth[l] == 0 => unopened += 1,
            EventKind::Leave => {
                depth[l] -= 1;
                sink.pop(t, l)?;
                written += 1;
            }
            _ => match ev.msg(i) {
                Some(m) if keys[l][ev.arg[i] as usize] != u64::MAX => {
                    let send = matches!(kind, EventKind::MpiSend | EventKind::MpiIsend);
                    sink.link(send, t, l, keys[l][ev.arg[i] as usize], m.bytes)?;
                    written += 1;
                }
                _ => dropped_kinds += 1,
            },
        }
        if records {
            pe::event(ev, i, &mut rec);
            sink.record(t, Some(l), "ev", &rec.0)?;
            written += 1;
        }
        if written % (1 << 16) == 0 {
            progress(written);
        }
    }
    for ev in &trace.events {
        attributes += ev.attribute_index.len() as u64;
    }
    if records {
        // PajeNG drops the events at the very time their container is destroyed: destroy
        // the containers a nanosecond later (the records hold the model's own clock)
        end += (clock.res / 1_000_000_000).max(1);
    }
    for k in 0..names.len() {
        sink.destroy(end, k)?;
    }
    progress(written);
    let mut dropped = Vec::new();
    if records {
        // the records carry the whole model but the events' attributes
        if attributes > 0 {
            dropped.push(format!(
                "the attributes of {attributes} event(s): the model keeps no attribute definitions"
            ));
        }
        return Ok(Summary {
            definitions: 5 + names.len() as u64,
            events: written,
            dropped,
        });
    }
    if dropped_kinds > 0 {
        dropped.push(format!(
            "{dropped_kinds} event(s) that are no Enter/Leave nor a paired message (collective ends, OpenMP, metrics, requests, unmatched messages, ...): binary Paje has no place for perfexpert's records (collectives are found again from the MPI_* state names)"
        ));
    }
    if unopened > 0 {
        dropped.push(format!(
            "{unopened} Leave event(s) without an open region on their location: a Paje state stack cannot pop them"
        ));
    }
    if !clock.exact() {
        dropped.push(format!(
            "times rounded to 12 decimals (timer resolution {} does not divide 10^12)",
            clock.res
        ));
    }
    dropped.push("definitions beyond locations and region names (system tree, groups, communicators, region roles and paradigms, metrics) and the events' order within a timestamp across locations: binary Paje has no place for perfexpert's records; locations with an MPI rank are named rank-N".into());
    Ok(Summary {
        definitions: 3 + names.len() as u64,
        events: written,
        dropped,
    })
}
