//! perfexpert's own Paje fields (docs/paje.md, "perfexpert's Paje fields"): a Paje trace
//! perfexpert writes from a model (`convert --to paje`) carries, beside the SMPI-like states
//! and links other Paje tools show, the model's definitions and every event as
//! `PajeNewEvent` records whose extra field `PerfexpertRecord` only perfexpert interprets
//! (PajeNG keeps and ignores extra fields). The record's `Value` names what it holds
//! (`trace`, `region`, `location`, `comm`, ..., `ev`); the field is `1,` then the items,
//! comma-separated: decimal numbers, `-` for none, strings percent-encoded. This module
//! spells the records (`Rec`) and rebuilds the model from them (`Records`), so a trace read
//! back is the model it was written from.

use crate::model::*;

/// The Name of the event type of definition records (on the root container) and of event
/// records (on a location's container).
pub const DEF_TYPE: &str = "perfexpert-definition";
pub const EVENT_TYPE: &str = "perfexpert-event";
/// The field name of the records.
pub const FIELD: &str = "PerfexpertRecord";

/// One record's field, item by item.
pub struct Rec(pub Vec<u8>);

impl Rec {
    pub fn new() -> Rec {
        Rec(b"1".to_vec())
    }
    pub fn clear(&mut self) {
        self.0.truncate(1);
    }
    pub fn num(&mut self, v: u64) -> &mut Rec {
        self.0.push(b',');
        let mut b = [0u8; 20];
        let mut k = b.len();
        let mut v = v;
        loop {
            k -= 1;
            b[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.0.extend_from_slice(&b[k..]);
        self
    }
    pub fn opt(&mut self, v: Option<u64>) -> &mut Rec {
        match v {
            Some(v) => self.num(v),
            None => {
                self.0.extend_from_slice(b",-");
                self
            }
        }
    }
    pub fn text(&mut self, s: &str) -> &mut Rec {
        self.0.push(b',');
        for &b in s.as_bytes() {
            if b <= b' ' || b >= 0x7f || matches!(b, b'%' | b',' | b'"' | b'#') {
                self.0.extend_from_slice(format!("%{b:02X}").as_bytes());
            } else {
                self.0.push(b);
            }
        }
        self
    }
}

impl Default for Rec {
    fn default() -> Self {
        Rec::new()
    }
}

fn group_kind_code(k: LocationGroupKind) -> u64 {
    match k {
        LocationGroupKind::Unknown => 0,
        LocationGroupKind::Process => 1,
        LocationGroupKind::Accelerator => 2,
    }
}

fn location_kind_code(k: LocationKind) -> u64 {
    match k {
        LocationKind::Unknown => 0,
        LocationKind::CpuThread => 1,
        LocationKind::AcceleratorStream => 2,
        LocationKind::Metric => 3,
    }
}

const GROUP_KINDS: [GroupKind; 8] = [
    GroupKind::Unknown,
    GroupKind::Locations,
    GroupKind::Regions,
    GroupKind::Metric,
    GroupKind::CommLocations,
    GroupKind::CommGroup,
    GroupKind::CommSelf,
    GroupKind::CommLocationGroups,
];

/// The definition records of `t`, as (Value, field) pairs, in the order `Records` wants
/// them (`location` records name their container's alias `c{index}`).
pub fn definitions(t: &Trace) -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let o = &t.origin;
    let mut r = Rec::new();
    r.text(o.format).text(&o.format_version).text(&o.creator);
    r.text(&o.machine).text(&o.description);
    r.num(t.timer_resolution)
        .num(t.global_offset)
        .num(t.trace_length);
    out.push(("trace", r.0));
    for (k, v) in &o.properties {
        let mut r = Rec::new();
        r.text(k).text(v);
        out.push(("property", r.0));
    }
    let d = &t.defs;
    for (k, v) in &d.record_counts {
        let mut r = Rec::new();
        r.text(k).num(*v);
        out.push(("count", r.0));
    }
    for x in &d.regions {
        let mut r = Rec::new();
        r.num(x.id)
            .text(&x.name)
            .text(&x.canonical_name)
            .text(&x.description);
        r.num(x.role.0 as u64)
            .num(x.paradigm.0 as u64)
            .num(x.flags as u64);
        r.text(&x.source_file)
            .num(x.begin_line as u64)
            .num(x.end_line as u64);
        out.push(("region", r.0));
    }
    let opt = |v: Option<usize>| v.map(|v| v as u64);
    for x in &d.system_tree {
        let mut r = Rec::new();
        r.num(x.id).text(&x.name).text(&x.class).opt(opt(x.parent));
        out.push(("node", r.0));
    }
    for x in &d.location_groups {
        let mut r = Rec::new();
        r.num(x.id).text(&x.name).num(group_kind_code(x.kind));
        r.opt(opt(x.system_tree_parent)).opt(opt(x.creating_group));
        out.push(("lgroup", r.0));
    }
    for (l, x) in d.locations.iter().enumerate() {
        let mut r = Rec::new();
        r.text(&format!("c{l}")).num(x.id).text(&x.name);
        r.num(location_kind_code(x.kind)).opt(opt(x.group));
        r.opt(x.declared_events).opt(x.rank.map(u64::from));
        out.push(("location", r.0));
    }
    for x in &d.groups {
        let mut r = Rec::new();
        let kind = GROUP_KINDS.iter().position(|&k| k == x.kind).unwrap_or(0);
        r.num(x.id).text(&x.name).num(kind as u64);
        r.num(x.paradigm.0 as u64).num(x.flags as u64);
        for &m in &x.members {
            r.num(m);
        }
        out.push(("group", r.0));
    }
    for x in &d.comms {
        let mut r = Rec::new();
        r.num(x.id).text(&x.name).num(x.paradigm.0 as u64);
        r.opt(opt(x.group)).opt(opt(x.parent)).num(x.flags as u64);
        match &x.ranks {
            CommRanks::Locations(v) => {
                r.text("L");
                for &m in v {
                    r.opt(m.map(u64::from));
                }
            }
            CommRanks::SelfOnly => {
                r.text("S");
            }
            CommRanks::Unknown => {
                r.text("U");
            }
        }
        out.push(("comm", r.0));
    }
    for x in &d.metrics {
        let mut r = Rec::new();
        r.num(x.id).text(&x.name).text(&x.description).text(&x.unit);
        r.num(x.mode as u64).num(x.value_type as u64);
        out.push(("metric", r.0));
    }
    out
}

/// The `ev` record of event `i` of `ev` into `r` (cleared first): kind, ticks, payload.
pub fn event(ev: &Events, i: usize, r: &mut Rec) {
    r.clear();
    let kind = ev.kind[i];
    r.num(kind as u64).num(ev.time.get(i));
    if let Some(x) = ev.region(i) {
        r.num(x as u64);
    } else if let Some(m) = ev.msg(i) {
        r.num(m.peer as u64).num(m.comm as u64).num(m.tag as u64);
        r.num(m.bytes).opt(m.request);
    } else if let Some(c) = ev.coll(i) {
        r.num(c.op as u64).num(c.comm as u64).num(c.root as u64);
        r.num(c.sent).num(c.received).opt(c.request);
    } else if kind == EventKind::Unknown {
        r.num(ev.arg[i] as u64);
    } else {
        for &f in ev.fields(i) {
            r.num(f);
        }
    }
}

/// A record's items, read one by one.
struct Items<'a> {
    it: std::slice::Split<'a, u8, fn(&u8) -> bool>,
}

fn is_comma(b: &u8) -> bool {
    *b == b','
}

impl<'a> Items<'a> {
    fn new(data: &'a [u8]) -> Result<Items<'a>, String> {
        let mut it = data.split(is_comma as fn(&u8) -> bool);
        match it.next() {
            Some(b"1") => Ok(Items { it }),
            _ => Err("a PerfexpertRecord of version 1 (starting with `1,`)".into()),
        }
    }
    fn raw(&mut self) -> Result<&'a [u8], String> {
        self.it.next().ok_or_else(|| "more items".to_string())
    }
    fn num(&mut self) -> Result<u64, String> {
        let s = self.raw()?;
        std::str::from_utf8(s)
            .ok()
            .and_then(|x| x.parse::<u64>().ok())
            .filter(|_| !s.starts_with(b"+"))
            .ok_or_else(|| format!("a decimal number, found '{}'", String::from_utf8_lossy(s)))
    }
    fn small<T: TryFrom<u64>>(&mut self) -> Result<T, String> {
        let v = self.num()?;
        T::try_from(v).map_err(|_| format!("a smaller number than {v}"))
    }
    fn opt(&mut self) -> Result<Option<u64>, String> {
        if self.peek_none() {
            self.raw()?;
            return Ok(None);
        }
        self.num().map(Some)
    }
    fn opt_usize(&mut self) -> Result<Option<usize>, String> {
        Ok(match self.opt()? {
            Some(v) => Some(usize::try_from(v).map_err(|_| "a smaller index".to_string())?),
            None => None,
        })
    }
    fn peek_none(&self) -> bool {
        self.it.clone().next() == Some(b"-")
    }
    fn text(&mut self) -> Result<String, String> {
        let s = self.raw()?;
        let mut out = Vec::with_capacity(s.len());
        let mut k = 0;
        while k < s.len() {
            if s[k] == b'%' {
                let h = s
                    .get(k + 1..k + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or("a %XX escape with two hex digits")?;
                out.push(h);
                k += 3;
            } else {
                out.push(s[k]);
                k += 1;
            }
        }
        String::from_utf8(out).map_err(|_| "UTF-8 text".to_string())
    }
    fn rest(&mut self) -> Result<Vec<u64>, String> {
        let mut v = Vec::new();
        while self.it.clone().next().is_some() {
            v.push(self.num()?);
        }
        Ok(v)
    }
    fn end(&mut self) -> Result<(), String> {
        match self.it.next() {
            None => Ok(()),
            Some(_) => Err("no more items".into()),
        }
    }
}

/// The model gathered from the records of a trace.
#[derive(Default)]
pub struct Records {
    /// A `trace` record was read: the model comes from the records.
    pub present: bool,
    origin: (String, String, String, String, String),
    clock: (u64, u64, u64),
    properties: Vec<(String, String)>,
    defs: Definitions,
    /// Container alias of each location.
    aliases: Vec<String>,
    /// Events per Paje container index.
    events: Vec<Events>,
}

impl Records {
    /// Take one record (`tag` its Value, `data` its field) on Paje container `c`; the
    /// error says what was expected.
    pub fn record(&mut self, c: u32, tag: &[u8], data: &[u8]) -> Result<(), String> {
        let mut it = Items::new(data)?;
        let d = &mut self.defs;
        match tag {
            b"ev" => return self.event(c, &mut it),
            b"trace" => {
                self.present = true;
                let _format = it.text()?;
                self.origin = (it.text()?, it.text()?, it.text()?, it.text()?, _format);
                self.clock = (it.num()?, it.num()?, it.num()?);
            }
            b"property" => self.properties.push((it.text()?, it.text()?)),
            b"count" => {
                let k = it.text()?;
                d.record_counts.insert(k, it.num()?);
            }
            b"region" => d.regions.push(Region {
                id: it.num()?,
                name: it.text()?,
                canonical_name: it.text()?,
                description: it.text()?,
                role: RegionRole(it.small()?),
                paradigm: Paradigm(it.small()?),
                flags: it.small()?,
                source_file: it.text()?,
                begin_line: it.small()?,
                end_line: it.small()?,
            }),
            b"node" => d.system_tree.push(SystemTreeNode {
                id: it.num()?,
                name: it.text()?,
                class: it.text()?,
                parent: it.opt_usize()?,
            }),
            b"lgroup" => d.location_groups.push(LocationGroup {
                id: it.num()?,
                name: it.text()?,
                kind: match it.num()? {
                    1 => LocationGroupKind::Process,
                    2 => LocationGroupKind::Accelerator,
                    _ => LocationGroupKind::Unknown,
                },
                system_tree_parent: it.opt_usize()?,
                creating_group: it.opt_usize()?,
            }),
            b"location" => {
                self.aliases.push(it.text()?);
                d.locations.push(Location {
                    id: it.num()?,
                    name: it.text()?,
                    kind: match it.num()? {
                        1 => LocationKind::CpuThread,
                        2 => LocationKind::AcceleratorStream,
                        3 => LocationKind::Metric,
                        _ => LocationKind::Unknown,
                    },
                    group: it.opt_usize()?,
                    declared_events: it.opt()?,
                    rank: it.opt()?.map(u32::try_from).transpose().map_err(|_| "a rank")?,
                });
            }
            b"group" => d.groups.push(Group {
                id: it.num()?,
                name: it.text()?,
                kind: GROUP_KINDS[usize::try_from(it.num()?).unwrap_or(0).min(7)],
                paradigm: Paradigm(it.small()?),
                flags: it.small()?,
                members: it.rest()?,
            }),
            b"comm" => {
                let (id, name, paradigm) = (it.num()?, it.text()?, Paradigm(it.small()?));
                let (group, parent, flags) = (it.opt_usize()?, it.opt_usize()?, it.small()?);
                let ranks = match it.text()?.as_str() {
                    "L" => {
                        let mut v = Vec::new();
                        while it.it.clone().next().is_some() {
                            v.push(it.opt()?.map(u32::try_from).transpose().map_err(|_| "a rank")?);
                        }
                        CommRanks::Locations(v)
                    }
                    "S" => CommRanks::SelfOnly,
                    _ => CommRanks::Unknown,
                };
                d.comms.push(Comm {
                    id,
                    name,
                    paradigm,
                    group,
                    parent,
                    flags,
                    ranks,
                });
            }
            b"metric" => d.metrics.push(Metric {
                id: it.num()?,
                name: it.text()?,
                description: it.text()?,
                unit: it.text()?,
                mode: it.small()?,
                value_type: it.small()?,
            }),
            _ => return Err("a record named trace, property, count, region, node, lgroup, location, group, comm, metric or ev".into()),
        }
        it.end()
    }

    fn event(&mut self, c: u32, it: &mut Items) -> Result<(), String> {
        let code: u8 = it.small()?;
        let kind = *EventKind::ALL
            .iter()
            .find(|k| **k as u8 == code)
            .ok_or_else(|| format!("a known event kind, found {code}"))?;
        let t = it.num()?;
        let c = c as usize;
        if self.events.len() <= c {
            self.events.resize_with(c + 1, Events::default);
        }
        let ev = &mut self.events[c];
        let nreg = self.defs.regions.len() as u64;
        let ncomm = self.defs.comms.len() as u64;
        match kind {
            EventKind::Enter | EventKind::Leave => {
                let r = it.num()?;
                if r >= nreg {
                    return Err(format!("a region below {nreg}, found {r}"));
                }
                ev.push_region(t, kind, r as u32);
            }
            EventKind::MpiSend | EventKind::MpiRecv | EventKind::MpiIsend | EventKind::MpiIrecv => {
                let (peer, comm) = (it.small()?, it.num()?);
                if comm >= ncomm {
                    return Err(format!("a communicator below {ncomm}, found {comm}"));
                }
                let m = Msg {
                    peer,
                    comm: comm as u32,
                    tag: it.small()?,
                    bytes: it.num()?,
                    request: it.opt()?,
                };
                ev.push_msg(t, kind, m);
            }
            EventKind::MpiCollectiveEnd | EventKind::NonBlockingCollectiveComplete => {
                let (op, comm) = (it.small()?, it.num()?);
                if comm >= ncomm {
                    return Err(format!("a communicator below {ncomm}, found {comm}"));
                }
                let c = Coll {
                    op,
                    comm: comm as u32,
                    root: it.small()?,
                    sent: it.num()?,
                    received: it.num()?,
                    request: it.opt()?,
                };
                ev.push_coll(t, kind, c);
            }
            EventKind::Unknown => ev.push_unknown(t, it.small()?),
            _ => {
                let f = it.rest()?;
                if !ev.push_extra(t, kind, &f) {
                    return Err("fewer event fields on one location".into());
                }
            }
        }
        it.end()
    }

    /// The trace the records describe: its locations' events from the containers whose
    /// aliases the `location` records name (`container` resolves an alias).
    pub fn into_trace(
        mut self,
        path: &std::path::Path,
        container: impl Fn(&[u8]) -> Option<u32>,
        paje: PajeCounts,
        warnings: Vec<crate::error::Warning>,
    ) -> Result<Trace, String> {
        let mut events = Vec::with_capacity(self.aliases.len());
        for a in &self.aliases {
            let c = container(a.as_bytes())
                .ok_or_else(|| format!("a container with the alias '{a}' of a location record"))?
                as usize;
            events.push(
                self.events
                    .get_mut(c)
                    .map(std::mem::take)
                    .unwrap_or_default(),
            );
        }
        let (version, creator, machine, description, format) = self.origin;
        let (timer_resolution, global_offset, trace_length) = self.clock;
        Ok(Trace {
            path: path.to_path_buf(),
            origin: Origin {
                format: "Paje",
                format_version: format!("(perfexpert's records of {format} {version})")
                    .replace(" )", ")"),
                creator,
                machine,
                description,
                properties: self.properties,
            },
            timer_resolution: timer_resolution.max(1),
            global_offset,
            trace_length,
            defs: self.defs,
            events,
            warnings,
            native_event_kinds: Default::default(),
            paje: Some(paje),
        })
    }
}
