//! The binary Paje decoder (formats.md §F): libRastro events → Paje events. Both variants
//! poti's `paje2rst` writes (standard: strings inline; reference: strings once as type-888
//! events, referred to by u16 index), both container layouts (the Herbstrith fork without
//! time stamps, and the older time-stamped one of poti's shipped examples). Every read is
//! bounds-checked; an error names the byte offset of the event and what was expected.
//! The Paje simulation (`mod.rs`) and `perfexpert convert` consume the decoded events.

use super::header::{EventDef, Kind, Role};
use super::memo;
use crate::error::{Error, Place, Result};
use std::path::Path;

/// rastro event types of the container layer and of poti's mapping (§F.2.1).
pub const INIT: u32 = 16383;
pub const STOP: u32 = 16382;
pub const DEFINITION: u32 = 999;
pub const STRING_ENTRY: u32 = 888;

/// At most this many items of one class in one event (the C reader allows 15).
const MAX_ITEMS: usize = 32;
/// At most this many fields in one Paje event (a 999 event of 17 u32 has 8).
pub const MAX_FIELDS: usize = 16;

/// Whether `head` starts with a libRastro INIT event word (type 16383, LAST, items `l l s`)
/// in little-endian order: `10 44 ff ff` (§F.1.1), the TIME_SET bit either way.
pub fn sniff(head: &[u8]) -> bool {
    head.len() >= 4 && {
        let w = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        w >> 18 == INIT && w & 0x2_ffff == 0x2_4410
    }
}

/// Whether `head` is such a word written big-endian (not supported: no such file exists).
pub fn sniff_big_endian(head: &[u8]) -> bool {
    head.len() >= 4 && {
        let w = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        w >> 18 == INIT && w & 0x2_ffff == 0x2_4410
    }
}

/// The container layout (§F.1.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Herbstrith's librastro: header words, then data; no time stamps.
    Fork,
    /// Upstream librastro: seconds and resolution after a TIME_SET word 0, ticks after every.
    TimeStamped,
}

/// How a Paje field is stored (§F.2.2, field types).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// `string` and `color`: a string (standard) or a u16 index (reference).
    Str,
    /// `double` and `date`: a binary64.
    Double,
    /// `int`: a u32.
    Int,
}

/// A field value of a decoded Paje event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val<'a> {
    Str(&'a [u8]),
    Num(f64),
    Int(u32),
}

/// One 999 definition: the Paje event and its fields in Paje order.
#[derive(Clone, Debug)]
pub struct BinDef {
    /// The Paje event id (§F.2.2), the rastro type of its events.
    pub id: u32,
    pub kind: Kind,
    pub fields: Vec<(Role, FieldType)>,
    /// The field ids as written (Line, File, Mark … are `Role::Extra`).
    pub field_ids: Vec<u32>,
    /// What the simulation needs: role → position.
    pub def: EventDef,
    /// Byte offset of the 999 event.
    pub offset: u64,
    /// A state or link event: the `Hot` slot of each field (`hot_slots`).
    pub hot: Option<[u8; MAX_FIELDS]>,
}

/// `Hot` slots: the type, the container, the state value or the other container of a link,
/// the link key, the link size; fields the resolver does not use go to `HOT_SKIP`, the time
/// to `HOT_TIME`.
pub const HOT_TYPE: usize = 0;
pub const HOT_CONTAINER: usize = 1;
pub const HOT_OTHER: usize = 2;
pub const HOT_KEY: usize = 3;
pub const HOT_SIZE: usize = 4;
const HOT_SKIP: usize = 5;
const HOT_TIME: usize = 6;

/// What the resolver needs of a state or link event (the frequent ones): its strings by slot
/// (`HOT_TYPE` …; empty where the definition has no such field or it is not a string, as
/// the text reader would see it) with their memo keys (`memo::key`), and its time.
/// `Decoder::next_hot` decodes it straight from the bytes, `Decoder::hot_view` takes it
/// from an `Event`; both give the same.
#[derive(Clone, Copy, Debug)]
pub struct Hot<'a> {
    pub offset: u64,
    pub kind: Kind,
    pub s: [&'a [u8]; 8],
    pub k: [u64; 8],
    /// Doubles by slot: the time in `HOT_TIME`.
    num: [f64; 8],
    /// Whether the definition has a Time field of type double.
    timed: bool,
}

impl Default for Hot<'_> {
    fn default() -> Self {
        Hot {
            offset: 0,
            kind: Kind::PopState,
            s: [&[]; 8],
            k: [memo::key(b""); 8],
            num: [0.0; 8],
            timed: false,
        }
    }
}

impl Hot<'_> {
    /// The time in seconds, if the definition has one.
    #[inline]
    pub fn time(&self) -> Option<f64> {
        self.timed.then_some(self.num[HOT_TIME])
    }

    /// The strings the resolver reads (`read_slots` of the kind) and their keys.
    pub fn read(&self) -> Vec<(&[u8], u64)> {
        read_slots(self.kind)
            .iter()
            .map(|&x| (self.s[x], self.k[x]))
            .collect()
    }
}

/// The `Hot` slot of each field of a state or link event (None for the other kinds): a
/// field goes to its role's slot if it is the field `EventDef::at` gives for that role.
fn hot_slots(kind: Kind, fields: &[(Role, FieldType)], def: &EventDef) -> Option<[u8; MAX_FIELDS]> {
    let other = match kind {
        Kind::PushState | Kind::SetState => Some(Role::Value),
        Kind::PopState | Kind::ResetState => None,
        Kind::StartLink => Some(Role::StartContainer),
        Kind::EndLink => Some(Role::EndContainer),
        _ => return None,
    };
    let link = matches!(kind, Kind::StartLink | Kind::EndLink);
    let mut slots = [HOT_SKIP as u8; MAX_FIELDS];
    for (j, &(role, _)) in fields.iter().enumerate().take(MAX_FIELDS) {
        let slot = match role {
            Role::Type => HOT_TYPE,
            Role::Container => HOT_CONTAINER,
            Role::Key if link => HOT_KEY,
            Role::Size if kind == Kind::StartLink => HOT_SIZE,
            Role::Time => HOT_TIME,
            r if Some(r) == other => HOT_OTHER,
            _ => continue,
        };
        if def.has(role) && def.at(role) == j {
            slots[j] = slot as u8;
        }
    }
    Some(slots)
}

/// A decoded Paje event: its definition (index into `Decoder::defs`) and its field values
/// in the definition's order, poti's added quotes removed (§F.2.7).
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    pub offset: u64,
    pub def: u32,
    pub vals: [Val<'a>; MAX_FIELDS],
    pub n: usize,
}

impl Default for Event<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Event<'a> {
    pub fn new() -> Event<'a> {
        Event {
            offset: 0,
            def: 0,
            vals: [Val::Int(0); MAX_FIELDS],
            n: 0,
        }
    }

    pub fn fields(&self) -> &[Val<'a>] {
        &self.vals[..self.n]
    }
}

/// What `Decoder::next_step` found.
pub enum Step {
    /// A 999 definition, now `defs[k]`.
    Def(u32),
    /// A Paje event, now in the `Event` passed to `next_step`.
    Event,
    /// The STOP event: the file is read completely.
    End,
}

/// The item queues of one event, per class, in file order.
struct Items<'a> {
    d: [f64; MAX_ITEMS],
    nd: usize,
    i: [u32; MAX_ITEMS],
    ni: usize,
    w: [u16; MAX_ITEMS],
    nw: usize,
    s: [&'a [u8]; MAX_ITEMS],
    ns: usize,
    /// u64, float and u8 items (only INIT has u64; Paje never uses the others).
    l: [u64; 2],
    nl: usize,
    other: usize,
}

impl Items<'_> {
    fn reset(&mut self) {
        self.nd = 0;
        self.ni = 0;
        self.nw = 0;
        self.ns = 0;
        self.nl = 0;
        self.other = 0;
    }

    fn new() -> Self {
        Items {
            d: [0.0; MAX_ITEMS],
            nd: 0,
            i: [0; MAX_ITEMS],
            ni: 0,
            w: [0; MAX_ITEMS],
            nw: 0,
            s: [&[]; MAX_ITEMS],
            ns: 0,
            l: [0; 2],
            nl: 0,
            other: 0,
        }
    }

    /// The classes as letters (`d d s s`), for messages.
    fn describe(&self) -> String {
        let mut v = Vec::new();
        v.extend(std::iter::repeat_n("d", self.nd));
        v.extend(std::iter::repeat_n("l", self.nl));
        v.extend(std::iter::repeat_n("i", self.ni));
        v.extend(std::iter::repeat_n("w", self.nw));
        v.extend(std::iter::repeat_n("s", self.ns));
        v.extend(std::iter::repeat_n("f/c", self.other));
        if v.is_empty() {
            "no items".into()
        } else {
            v.join(" ")
        }
    }
}

/// The event at byte `at` of `data` as words, for `memo::States`: its header word, the 8
/// bytes after it (the time, if it is such an event) and the 16 after those; None where
/// fewer bytes are left.
#[inline(always)]
pub(super) fn words_at(data: &[u8], at: usize) -> Option<(u32, u64, [u64; 2])> {
    // each word one load (the header word assembled from its bytes was three loads and
    // shifts)
    let (w0, b) = data.get(at..)?.split_first_chunk::<4>()?;
    let (time, b) = b.split_first_chunk::<8>()?;
    let (w1, b) = b.split_first_chunk::<8>()?;
    let w2 = b.first_chunk::<8>()?;
    Some((
        u32::from_le_bytes(*w0),
        u64::from_le_bytes(*time),
        [u64::from_le_bytes(*w1), u64::from_le_bytes(*w2)],
    ))
}

/// The binary Paje decoder over the whole file in memory.
pub struct Decoder<'a> {
    path: &'a Path,
    data: &'a [u8],
    pos: usize,
    pub layout: Layout,
    /// Definitions in file order.
    pub defs: Vec<BinDef>,
    /// Paje id → the last definition of it (index into `defs`).
    by_id: Vec<u32>,
    /// The string table of the reference variant: 888 entry k in slot k mod 65536 (the
    /// writer's counter wraps, §F.1.9).
    table: Vec<&'a [u8]>,
    /// `memo::key` of each string of `table`.
    table_keys: Vec<u64>,
    /// 888 events so far.
    pub entries: u64,
    /// INIT's ids and host name.
    pub init: (u64, u64, &'a [u8]),
    /// Paje events decoded so far.
    pub events: u64,
    /// AddVariable events whose two strings were exchanged (time-stamped files, §F.2.8).
    pub swapped_add_variable: u64,
    done: bool,
    spare: Option<Box<Items<'a>>>,
    /// Per Paje event id: how the events with the header words seen last decode (the fast
    /// path of `next_step`; the fork's layout only).
    plans: Vec<Option<Plan>>,
    /// Whether `next_step` may use the plans (always, but for the fuzz target's comparison).
    use_plans: bool,
    /// Changes whenever the same bytes may decode differently from now on (a definition, the
    /// first 888 event, a string-table slot written again): `memo::States` and `Recent`
    /// entries of an older epoch are stale.
    pub epoch: u32,
    /// Set by `next_hot` for a state event of one header word whose first item is its time
    /// and whose other items are strings or references: (start of the items after the time,
    /// end of the event). Such events are the same event whenever their bytes are
    /// (`memo::States`).
    pub tail: Option<(usize, usize)>,
    /// Set by `next_hot` for a link event whose plan has a prefix (`Plan::cut`): its header
    /// words as one word (`LinkPeek::head`), where the prefix starts and ends, and its least
    /// length.
    pub cut: Option<(u64, usize, usize, usize)>,
    /// Per string-table slot: whether `next_hot` has decoded a reference to it since the
    /// last `epoch` (writing such a slot again starts a new epoch; other slots do not).
    pinned: Vec<bool>,
}

const NO_DEF: u32 = u32::MAX;

/// At most this many items in an event the fast path decodes (two header words).
const MAX_PLAN: usize = 4 + 7;

/// How the events of one Paje id with given header words decode, learnt from the first such
/// event the general path decoded (§F.2.4 done once): item k (in file order) has code
/// `codes[k]` and fills field `dest[k]`, with poti's quotes removed where `unquote[k]`.
/// Valid until a new definition of the id, or until the first 888 event (which turns string
/// fields into references).
#[derive(Clone, Copy)]
struct Plan {
    w0: u32,
    /// The kind of the definition (`def`).
    kind: Kind,
    /// The continuation word, or 0 for events of one header word.
    w1: u32,
    def: u32,
    n: u8,
    len: u8,
    codes: [u8; MAX_PLAN],
    dest: [u8; MAX_PLAN],
    unquote: [bool; MAX_PLAN],
    /// Whether `next_hot` may decode these events: a state or link event whose slots
    /// (`slot`: the `Hot` slot of item k) take strings, and its time a double, none quoted.
    hot: bool,
    slot: [u8; MAX_PLAN],
    /// The string slots the resolver reads (`read_slots`) that no item of the plan fills.
    unset: u8,
    /// A state event of one header word: its time, then only strings or references
    /// (`Decoder::tail`).
    tail: bool,
    /// A link event whose first item is its time and whose next items up to item `cut`
    /// (excluded) are the strings or references the resolver reads but the key and size
    /// (type, containers, value), `cut_min` bytes at least: such events with the same bytes
    /// there resolve the same (`Decoder::peek_link`). 0: none.
    cut: u8,
    cut_min: u8,
}

/// A link event at the decoder's position whose plan has a prefix (`Plan::cut`): its start,
/// its header words (`w0 | w1 << 32`), its time's bits, where its prefix starts, the 16
/// bytes from there and the least length of the prefix.
#[derive(Clone, Copy, Debug)]
pub struct LinkPeek {
    pub start: usize,
    pub head: u64,
    pub time: u64,
    pub at: usize,
    pub w: [u64; 2],
    pub min: usize,
}

fn kind_of(id: u32) -> Option<Kind> {
    use Kind::*;
    Some(match id {
        0 => DefineContainerType,
        1 => DefineEventType,
        2 => DefineStateType,
        3 => DefineVariableType,
        4 => DefineLinkType,
        5 => DefineEntityValue,
        6 => CreateContainer,
        7 => DestroyContainer,
        8 => NewEvent,
        9 => SetState,
        10 => PushState,
        11 => PopState,
        12 => ResetState,
        13 => SetVariable,
        14 => AddVariable,
        15 => SubVariable,
        16 => StartLink,
        17 => EndLink,
        _ => return None,
    })
}

/// The Paje event id of a kind (§F.2.2), inverse of `kind_of`.
pub fn id_of(kind: Kind) -> Option<u32> {
    (0..18).find(|&i| kind_of(i) == Some(kind))
}

/// The role of a field id (§F.2.2); None for id 0 and unknown ids.
pub fn role_of(field: u32) -> Option<Role> {
    use Role::*;
    Some(match field {
        1 => Time,
        2 => Name,
        3 => Type,
        4 => Container,
        5 => StartContainerType,
        6 => EndContainerType,
        7 => StartContainer,
        8 => EndContainer,
        9 => Value,
        10 => Key,
        11 => Alias,
        12 => Color,
        15 => Filename,
        35 => Size,
        13 | 14 | 16 | 36 => Extra,
        _ => return None,
    })
}

/// Whether poti wraps this field of this event in literal double quotes (§F.2.7).
pub fn quoted(kind: Kind, role: Role) -> bool {
    use Kind::*;
    match role {
        Role::Name => matches!(
            kind,
            DefineContainerType
                | DefineStateType
                | DefineEventType
                | DefineVariableType
                | DefineLinkType
                | DefineEntityValue
                | CreateContainer
        ),
        Role::Color => matches!(kind, DefineVariableType | DefineEntityValue),
        _ => false,
    }
}

/// Whether the plan's events may be decoded by `next_hot`, setting `plan.slot` from the
/// definition's `Hot` slots: every slot the resolver reads for `kind` is filled by a string
/// item not to be unquoted, and the time by a double.
fn hot_plan(plan: &mut Plan, slots: &[u8; MAX_FIELDS], kind: Kind) -> bool {
    let mut filled = [false; 8];
    for i in 0..plan.len as usize {
        let slot = slots[plan.dest[i] as usize] as usize;
        plan.slot[i] = slot as u8;
        let fits = match slot {
            HOT_SKIP => true,
            HOT_TIME => plan.codes[i] == 2,
            _ => matches!(plan.codes[i], 1 | 5) && !plan.unquote[i],
        };
        if !fits {
            return false;
        }
        filled[slot] = true;
    }
    let reads = read_slots(kind);
    plan.unset = reads
        .iter()
        .filter(|&&x| !filled[x])
        .fold(0, |m, &x| m | 1 << x);
    filled[HOT_TIME] && reads.iter().all(|&x| filled[x] || x == HOT_SIZE)
}

/// Set `plan.cut` and `plan.cut_min` of a link event's hot plan: its time first, then the
/// longest run of strings (or of references) in slots other than the key and the size,
/// which must hold the type and both containers and fit in 16 bytes.
fn link_prefix(plan: &mut Plan) {
    let n = plan.len as usize;
    if n < 2 || plan.codes[0] != 2 || plan.slot[0] as usize != HOT_TIME {
        return;
    }
    let code = plan.codes[1];
    let mut cut = 1;
    while cut < n
        && plan.codes[cut] == code
        && matches!(
            plan.slot[cut] as usize,
            HOT_TYPE | HOT_CONTAINER | HOT_OTHER | HOT_SKIP
        )
    {
        cut += 1;
    }
    let after = plan.slot[cut..n].iter().map(|&x| x as usize);
    let resolved = after
        .clone()
        .all(|x| !matches!(x, HOT_TYPE | HOT_CONTAINER | HOT_OTHER));
    let min = match code {
        1 => 4 * (cut - 1),
        5 => 2 * (cut - 1),
        _ => return,
    };
    if cut >= 2 && resolved && min <= 16 {
        plan.cut = cut as u8;
        plan.cut_min = min as u8;
    }
}

/// The string slots the resolver reads for an event of `kind` (the others may hold anything).
fn read_slots(kind: Kind) -> &'static [usize] {
    match kind {
        Kind::PopState | Kind::ResetState => &[HOT_TYPE, HOT_CONTAINER],
        Kind::PushState | Kind::SetState => &[HOT_TYPE, HOT_CONTAINER, HOT_OTHER],
        Kind::EndLink => &[HOT_TYPE, HOT_CONTAINER, HOT_OTHER, HOT_KEY],
        _ => &[HOT_TYPE, HOT_CONTAINER, HOT_OTHER, HOT_KEY, HOT_SIZE],
    }
}

/// The position of the first NUL: strings are short (most below 8 bytes), so the first 16
/// bytes are looked at 8 at a time (the lowest zero byte of a little-endian word is exact with
/// the usual `(v - 0x01..) & !v & 0x80..` test); longer ones go to `memchr`.
#[inline]
fn nul(b: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let mut k = 0;
    while k < 16 {
        let Some(w) = b[k..].first_chunk::<8>() else {
            return b[k..].iter().position(|&x| x == 0).map(|i| i + k);
        };
        let v = u64::from_le_bytes(*w);
        let z = v.wrapping_sub(LO) & !v & HI;
        if z != 0 {
            return Some(k + (z.trailing_zeros() / 8) as usize);
        }
        k += 8;
    }
    memchr::memchr(0, &b[16..]).map(|i| i + 16)
}

/// `nul` of `data[p..]`, the first word looked at before anything else (most strings of
/// the fast path are short names and aliases).
#[inline(always)]
fn nul_at(data: &[u8], p: usize) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    if let Some(w) = data.get(p..).and_then(|r| r.first_chunk::<8>()) {
        let v = u64::from_le_bytes(*w);
        let z = v.wrapping_sub(LO) & !v & HI;
        if z != 0 {
            return Some((z.trailing_zeros() / 8) as usize);
        }
    }
    data.get(p..).and_then(nul)
}

#[inline]
fn align4(p: usize) -> usize {
    (p + 3) & !3
}

/// The slots the resolver reads that `plan` does not fill (a StartLink's Size) made empty,
/// as `Decoder::hot_view` leaves them.
#[inline(always)]
fn unset(plan: &Plan, h: &mut Hot) {
    let mut unset = plan.unset;
    while unset != 0 {
        let i = unset.trailing_zeros() as usize & 7;
        h.s[i] = &[];
        h.k[i] = memo::key(b"");
        unset &= unset - 1;
    }
}

impl<'a> Decoder<'a> {
    /// Check the INIT event and choose the layout.
    pub fn new(path: &'a Path, data: &'a [u8]) -> Result<Decoder<'a>> {
        let mut d = Decoder {
            path,
            data,
            pos: 0,
            layout: Layout::Fork,
            defs: Vec::new(),
            by_id: Vec::new(),
            table: Vec::new(),
            table_keys: Vec::new(),
            entries: 0,
            init: (0, 0, &[]),
            events: 0,
            swapped_add_variable: 0,
            done: false,
            spare: None,
            plans: Vec::new(),
            use_plans: true,
            epoch: 0,
            tail: None,
            cut: None,
            pinned: Vec::new(),
        };
        if !sniff(data) {
            return Err(d.err(
                0,
                "expected the libRastro INIT event (word 10 44 ff ff: type 16383, items u64 u64 string)",
            ));
        }
        // the time-stamped layout holds the clock resolution at byte 12 (§F.1.7)
        let at12 = data
            .get(12..20)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
        if data[2] & 1 == 1 && matches!(at12, Some(1_000 | 1_000_000 | 1_000_000_000)) {
            d.layout = Layout::TimeStamped;
        }
        let mut items = Items::new();
        let ty = d.event_words_first(&mut items)?;
        if ty != INIT || items.nl != 2 || items.ns != 1 || items.nd + items.ni + items.nw > 0 {
            return Err(d.err(
                0,
                format!(
                    "the INIT event holds {}; expected u64 u64 string",
                    items.describe()
                ),
            ));
        }
        d.init = (items.l[0], items.l[1], items.s[0]);
        Ok(d)
    }

    fn err(&self, at: usize, what: impl Into<String>) -> Error {
        Error::format(self.path, Place::Byte(at as u64), what)
    }

    fn truncated(&self, at: usize, what: &str) -> Error {
        self.err(
            at,
            format!("the file ends inside an event (expected {what}); truncated?"),
        )
    }

    #[inline]
    fn u32_at(&self, p: usize) -> Option<u32> {
        Some(u32::from_le_bytes(*self.data.get(p..)?.first_chunk::<4>()?))
    }

    #[inline]
    fn u64_at(&self, p: usize) -> Option<u64> {
        Some(u64::from_le_bytes(*self.data.get(p..)?.first_chunk::<8>()?))
    }

    /// Read one item of type `code` at `p` into `it`; the position after it.
    #[inline]
    fn item(&self, code: u32, p: usize, start: usize, it: &mut Items<'a>) -> Result<usize> {
        let full = |n: usize, c: &str| {
            if n >= MAX_ITEMS {
                Err(self.err(
                    start,
                    format!("an event with more than {MAX_ITEMS} {c} items"),
                ))
            } else {
                Ok(())
            }
        };
        Ok(match code {
            1 => {
                full(it.ns, "string")?;
                let rest = self
                    .data
                    .get(p..)
                    .ok_or_else(|| self.truncated(p, "a string"))?;
                let Some(k) = nul(rest) else {
                    return Err(self.truncated(p, "a NUL-terminated string"));
                };
                it.s[it.ns] = &rest[..k];
                it.ns += 1;
                align4(p + k + 1)
            }
            2 => {
                full(it.nd, "double")?;
                let v = self
                    .u64_at(p)
                    .ok_or_else(|| self.truncated(p, "an 8-byte double"))?;
                it.d[it.nd] = f64::from_bits(v);
                it.nd += 1;
                p + 8
            }
            4 => {
                if it.nl >= 2 {
                    return Err(self.err(
                        start,
                        "an event with more than 2 u64 items (only INIT has u64 items)",
                    ));
                }
                it.l[it.nl] = self
                    .u64_at(p)
                    .ok_or_else(|| self.truncated(p, "an 8-byte u64"))?;
                it.nl += 1;
                p + 8
            }
            7 => {
                full(it.ni, "u32")?;
                it.i[it.ni] = self
                    .u32_at(p)
                    .ok_or_else(|| self.truncated(p, "a 4-byte u32"))?;
                it.ni += 1;
                p + 4
            }
            5 => {
                full(it.nw, "u16")?;
                let b = self
                    .data
                    .get(p..p + 2)
                    .ok_or_else(|| self.truncated(p, "a 2-byte u16"))?;
                it.w[it.nw] = u16::from_le_bytes([b[0], b[1]]);
                it.nw += 1;
                p + 2
            }
            3 | 6 => {
                let n = if code == 3 { 4 } else { 1 };
                if p + n > self.data.len() {
                    return Err(self.truncated(p, "a float or u8 item"));
                }
                it.other += 1;
                p + n
            }
            _ => {
                return Err(self.err(
                    start,
                    format!("unknown item type code {code} in the event header (expected 1 to 7)"),
                ))
            }
        })
    }

    /// The next definition, Paje event (decoded into `ev`) or the end.
    #[inline]
    pub fn next_step(&mut self, ev: &mut Event<'a>) -> Result<Step> {
        if self.done {
            return Ok(Step::End);
        }
        if self.use_plans && self.layout == Layout::Fork && self.fast(ev) {
            return Ok(Step::Event);
        }
        // the item queues are allocated once (zeroing them per event would cost more than
        // decoding it)
        let mut items = self.spare.take().unwrap_or_else(|| Box::new(Items::new()));
        let r = self.step(ev, &mut items);
        self.spare = Some(items);
        r
    }

    #[inline]
    fn step(&mut self, ev: &mut Event<'a>, items: &mut Items<'a>) -> Result<Step> {
        loop {
            let start = self.pos;
            items.reset();
            let ty = self.event_words_first(items)?;
            match ty {
                STOP => {
                    if self.pos != self.data.len() {
                        return Err(self.err(
                            self.pos,
                            format!(
                                "{} byte(s) after the STOP event (expected the end of the file)",
                                self.data.len() - self.pos
                            ),
                        ));
                    }
                    self.done = true;
                    return Ok(Step::End);
                }
                STRING_ENTRY => {
                    if items.ns != 1 || items.nd + items.ni + items.nw + items.nl + items.other > 0
                    {
                        return Err(self.err(
                            start,
                            format!(
                                "a string-table event (type 888) holds {}; expected one string",
                                items.describe()
                            ),
                        ));
                    }
                    if self.entries == 0 {
                        // string fields are references from now on
                        self.plans.clear();
                        self.epoch = self.epoch.wrapping_add(1);
                    }
                    self.put_string(items.s[0]);
                }
                DEFINITION => return self.definition(start, items).map(Step::Def),
                INIT => {
                    return Err(self.err(
                        start,
                        "a second INIT event (type 16383); expected it only at byte 0",
                    ))
                }
                _ => {
                    self.paje_event(ty, start, items, ev)?;
                    if self.layout == Layout::Fork {
                        self.learn(ty, start, ev.def);
                    }
                    return Ok(Step::Event);
                }
            }
        }
    }

    /// Decode the container layer of the event at `self.pos` into `items` (every header
    /// word first, then the data, §F.1.3); its type.
    #[inline]
    fn event_words_first(&mut self, items: &mut Items<'a>) -> Result<u32> {
        let start = self.pos;
        let Some(w0) = self.u32_at(start) else {
            return Err(if start >= self.data.len() {
                self.err(
                    start,
                    "the file ends without the STOP event (type 16382); truncated?",
                )
            } else {
                self.truncated(start, "a 4-byte event header")
            });
        };
        let ty = w0 >> 18;
        let mut p = start + 4;
        if self.layout == Layout::TimeStamped {
            p += if w0 & 0x1_0000 != 0 { 24 } else { 8 };
        }
        if w0 & 0x2_0000 != 0 {
            // one header word (every Paje event of poti but the link ones): its nibbles
            for k in (0..4).rev() {
                let c = (w0 >> (4 * k)) & 0xf;
                if c == 0 {
                    break;
                }
                p = self.item(c, p, start, items)?;
            }
            self.pos = align4(p);
            if self.pos > self.data.len() {
                return Err(self.truncated(self.data.len(), "the padding of the last event"));
            }
            return Ok(ty);
        }
        // the codes of all header words, most significant nibble first
        let mut codes = [0u8; 4 + 7 * 15];
        let mut n = 0;
        let push = |word: u32, nibbles: u32, codes: &mut [u8], n: &mut usize| {
            for k in (0..nibbles).rev() {
                let c = ((word >> (4 * k)) & 0xf) as u8;
                if c == 0 {
                    break;
                }
                codes[*n] = c;
                *n += 1;
            }
        };
        push(w0 & 0xffff, 4, &mut codes, &mut n);
        let mut last = w0 & 0x2_0000 != 0;
        let mut words = 1;
        while !last {
            let Some(c) = self.u32_at(p) else {
                return Err(self.truncated(p, "a header continuation word"));
            };
            if c & 0xd000_0000 != 0 {
                return Err(self.err(
                    p,
                    format!("header continuation word {c:#010x} of the event at byte {start} has reserved bits set (expected bits 31, 30 and 28 clear)"),
                ));
            }
            words += 1;
            if words > 16 {
                return Err(self.err(start, "an event with more than 16 header words"));
            }
            p += 4;
            push(c & 0x0fff_ffff, 7, &mut codes, &mut n);
            last = c & 0x2000_0000 != 0;
        }
        for &c in &codes[..n] {
            p = self.item(c as u32, p, start, items)?;
        }
        self.pos = align4(p);
        if self.pos > self.data.len() {
            return Err(self.truncated(self.data.len(), "the padding of the last event"));
        }
        Ok(ty)
    }

    fn definition(&mut self, start: usize, it: &Items<'a>) -> Result<u32> {
        if it.ni == 0 || it.ni % 2 == 0 || it.nd + it.nw + it.ns + it.nl + it.other > 0 {
            return Err(self.err(
                start,
                format!(
                    "a definition event (type 999) holds {}; expected an odd number of u32",
                    it.describe()
                ),
            ));
        }
        let id = it.i[0];
        let kind = kind_of(id).ok_or_else(|| {
            self.err(
                start,
                format!(
                    "a definition (type 999) of Paje event id {id}; expected 0 to 17 (§F.2.2; \
                     poti's extended events 22, 23, 25 are not supported)"
                ),
            )
        })?;
        let mut fields = Vec::new();
        let mut field_ids = Vec::new();
        for pair in it.i[1..it.ni].chunks_exact(2) {
            let (f, t) = (pair[0], pair[1]);
            let role = role_of(f).ok_or_else(|| {
                self.err(
                    start,
                    format!(
                        "the definition of {kind} names field id {f}; expected 1 to 16, 35 or 36"
                    ),
                )
            })?;
            let ft = match t {
                0 | 6 => FieldType::Str,
                2 | 5 => FieldType::Double,
                3 => FieldType::Int,
                1 | 4 => {
                    return Err(self.err(
                        start,
                        format!("the definition of {kind} gives field id {f} the type {t} ({}), which poti never writes; expected string, double, int, date or color", if t == 1 { "float" } else { "hex" }),
                    ))
                }
                _ => {
                    return Err(self.err(
                        start,
                        format!("the definition of {kind} gives field id {f} the unknown field type {t} (expected 0 to 6)"),
                    ))
                }
            };
            fields.push((role, ft));
            field_ids.push(f);
        }
        let roles: Vec<Role> = fields.iter().map(|x| x.0).collect();
        let def = EventDef::of_roles(kind, &roles, start as u64)
            .map_err(|e| self.err(start, format!("{e} (type 999 definition)")))?;
        let k = self.defs.len() as u32;
        let hot = hot_slots(kind, &fields, &def);
        self.defs.push(BinDef {
            id,
            kind,
            fields,
            field_ids,
            def,
            offset: start as u64,
            hot,
        });
        if self.by_id.len() <= id as usize {
            self.by_id.resize(id as usize + 1, NO_DEF);
        }
        self.by_id[id as usize] = k;
        if let Some(p) = self.plans.get_mut(id as usize) {
            *p = None;
        }
        self.epoch = self.epoch.wrapping_add(1);
        Ok(k)
    }

    /// Put an event's items back in the order of its definition (§F.2.4).
    #[inline]
    fn paje_event(
        &mut self,
        ty: u32,
        start: usize,
        it: &Items<'a>,
        ev: &mut Event<'a>,
    ) -> Result<()> {
        let k = match self.by_id.get(ty as usize) {
            Some(&k) if k != NO_DEF => k,
            _ => {
                return Err(self.err(
                    start,
                    match kind_of(ty) {
                        Some(kind) => format!(
                            "{kind} (rastro type {ty}) without a definition (type 999) before it"
                        ),
                        None => format!(
                            "unknown event type {ty}; expected a Paje event id 0 to 17, 999, 888 or STOP"
                        ),
                    },
                ))
            }
        };
        let reference = self.entries > 0;
        let d = &self.defs[k as usize];
        ev.offset = start as u64;
        ev.def = k;
        ev.n = d.fields.len();
        let (mut xd, mut xi, mut xs) = (0, 0, 0);
        let mut bad = it.nl + it.other > 0 || d.fields.len() > MAX_FIELDS;
        if !bad {
            for (j, &(role, ft)) in d.fields.iter().enumerate() {
                ev.vals[j] = match ft {
                    FieldType::Double if xd < it.nd => {
                        xd += 1;
                        Val::Num(it.d[xd - 1])
                    }
                    FieldType::Int if xi < it.ni => {
                        xi += 1;
                        Val::Int(it.i[xi - 1])
                    }
                    FieldType::Str if reference && xs < it.nw => {
                        xs += 1;
                        let r = it.w[xs - 1];
                        let Some(s) = self.string_ref(r) else {
                            return Err(self.err(
                                start,
                                format!(
                                    "{} refers to string {r}, but only {} string(s) (type 888) are defined before it",
                                    d.kind, self.entries
                                ),
                            ));
                        };
                        Val::Str(unquote(d.kind, role, s))
                    }
                    FieldType::Str if !reference && xs < it.ns => {
                        xs += 1;
                        Val::Str(unquote(d.kind, role, it.s[xs - 1]))
                    }
                    _ => {
                        bad = true;
                        break;
                    }
                };
            }
            let (nw, ns) = if reference { (xs, 0) } else { (0, xs) };
            bad |= xd != it.nd || xi != it.ni || nw != it.nw || ns != it.ns;
        }
        if bad {
            let need: Vec<&str> = d
                .fields
                .iter()
                .map(|f| match f.1 {
                    FieldType::Double => "d",
                    FieldType::Int => "i",
                    FieldType::Str if reference => "w",
                    FieldType::Str => "s",
                })
                .collect();
            return Err(self.err(
                start,
                format!(
                    "{} holds {}; its definition (type 999 at byte {}) needs {} in some order",
                    d.kind,
                    it.describe(),
                    d.offset,
                    need.join(" ")
                ),
            ));
        }
        // the writer stores ResetState's Container before its Type (§F.2.8); the
        // time-stamped files' AddVariable its Type before its Container
        let swap = d.kind == Kind::ResetState
            || (d.kind == Kind::AddVariable && self.layout == Layout::TimeStamped);
        if swap && d.def.has(Role::Type) && d.def.has(Role::Container) {
            let (a, b) = (d.def.at(Role::Type), d.def.at(Role::Container));
            ev.vals.swap(a, b);
            if d.kind == Kind::AddVariable {
                self.swapped_add_variable += 1;
            }
        }
        self.events += 1;
        Ok(())
    }

    /// Decode the next event with the plan of its id and header words, if there is one and
    /// the event fits it (strings terminated, references defined, the file long enough);
    /// 888 events on the way go to the string table. False: leave it to the general path
    /// (from the same position), which decodes it or says what is wrong.
    #[inline]
    fn fast(&mut self, ev: &mut Event<'a>) -> bool {
        let data = self.data;
        {
            let Some((start, mut p, plan)) = self.next_plan() else {
                return false;
            };
            for k in 0..plan.len as usize {
                let j = plan.dest[k] as usize;
                ev.vals[j] = match plan.codes[k] {
                    1 => {
                        let Some(n) = nul_at(data, p) else {
                            return false;
                        };
                        let v = &data[p..p + n];
                        p = align4(p + n + 1);
                        Val::Str(if plan.unquote[k] { strip_quotes(v) } else { v })
                    }
                    2 => {
                        let Some(x) = self.u64_at(p) else {
                            return false;
                        };
                        p += 8;
                        Val::Num(f64::from_bits(x))
                    }
                    7 => {
                        let Some(x) = self.u32_at(p) else {
                            return false;
                        };
                        p += 4;
                        Val::Int(x)
                    }
                    _ => {
                        let Some(b) = data.get(p..p + 2) else {
                            return false;
                        };
                        let Some(v) = self.string_ref(u16::from_le_bytes([b[0], b[1]])) else {
                            return false;
                        };
                        p += 2;
                        Val::Str(if plan.unquote[k] { strip_quotes(v) } else { v })
                    }
                };
            }
            let end = align4(p);
            if end > data.len() {
                return false;
            }
            ev.offset = start as u64;
            ev.def = plan.def;
            ev.n = plan.n as usize;
            self.pos = end;
            self.events += 1;
            true
        }
    }

    /// Make the plan of the event at `start` that the general path just decoded with
    /// definition `k` (fork layout): the item codes of its header words and the field each
    /// fills, as `paje_event` put them.
    fn learn(&mut self, ty: u32, start: usize, k: u32) {
        let Some(w0) = self.u32_at(start) else { return };
        let mut codes = Vec::with_capacity(MAX_PLAN);
        let nibbles = |word: u32, n: u32, codes: &mut Vec<u8>| {
            for i in (0..n).rev() {
                let c = ((word >> (4 * i)) & 0xf) as u8;
                if c == 0 {
                    break;
                }
                codes.push(c);
            }
        };
        nibbles(w0 & 0xffff, 4, &mut codes);
        let mut w1 = 0;
        if w0 & 0x2_0000 == 0 {
            match self.u32_at(start + 4) {
                // exactly one continuation word, the last
                Some(c) if c & 0x2000_0000 != 0 && c & 0xd000_0000 == 0 => w1 = c,
                _ => return,
            }
            nibbles(w1 & 0x0fff_ffff, 7, &mut codes);
        }
        let d = &self.defs[k as usize];
        if codes.len() > MAX_PLAN || d.fields.len() > MAX_FIELDS {
            return;
        }
        let reference = self.entries > 0;
        // field j of class X takes the next item of class X (§F.2.4)
        let class = |c: u8| match c {
            1 | 5 => Some(FieldType::Str),
            2 => Some(FieldType::Double),
            7 => Some(FieldType::Int),
            _ => None,
        };
        let mut plan = Plan {
            w0,
            kind: d.kind,
            w1,
            def: k,
            n: d.fields.len() as u8,
            len: codes.len() as u8,
            codes: [0; MAX_PLAN],
            dest: [0; MAX_PLAN],
            unquote: [false; MAX_PLAN],
            hot: false,
            slot: [HOT_SKIP as u8; MAX_PLAN],
            unset: 0,
            tail: false,
            cut: 0,
            cut_min: 0,
        };
        let mut used = [false; MAX_FIELDS];
        for (i, &c) in codes.iter().enumerate() {
            if (c == 1 && reference) || (c == 5 && !reference) {
                return;
            }
            let Some(x) = class(c) else { return };
            let Some(j) = (0..d.fields.len()).find(|&j| !used[j] && d.fields[j].1 == x) else {
                return;
            };
            used[j] = true;
            plan.codes[i] = c;
            plan.dest[i] = j as u8;
            plan.unquote[i] = quoted(d.kind, d.fields[j].0);
        }
        if used[..d.fields.len()].iter().any(|u| !u) {
            return;
        }
        // ResetState's Container and Type are stored exchanged (§F.2.8)
        if d.kind == Kind::ResetState && d.def.has(Role::Type) && d.def.has(Role::Container) {
            let (a, b) = (d.def.at(Role::Type) as u8, d.def.at(Role::Container) as u8);
            for x in &mut plan.dest[..codes.len()] {
                if *x == a {
                    *x = b;
                } else if *x == b {
                    *x = a;
                }
            }
        }
        if let Some(slots) = d.hot {
            plan.hot = hot_plan(&mut plan, &slots, d.kind);
        }
        plan.tail = plan.hot
            && w1 == 0
            && matches!(
                d.kind,
                Kind::PushState | Kind::PopState | Kind::SetState | Kind::ResetState
            )
            && codes[0] == 2
            && codes[1..].iter().all(|&c| c == 1 || c == 5);
        if plan.hot && matches!(d.kind, Kind::StartLink | Kind::EndLink) {
            link_prefix(&mut plan);
        }
        if self.plans.len() <= ty as usize {
            self.plans.resize(ty as usize + 1, None);
        }
        self.plans[ty as usize] = Some(plan);
    }

    /// The next 888 string (entry `entries`, in slot `entries` mod 65536).
    #[inline]
    fn put_string(&mut self, s: &'a [u8]) {
        let slot = (self.entries % 65536) as usize;
        if slot == self.table.len() {
            self.table.push(s);
            self.table_keys.push(memo::key(s));
            self.pinned.push(false);
        } else {
            self.table[slot] = s;
            self.table_keys[slot] = memo::key(s);
            if self.pinned[slot] {
                // a reference some event `next_hot` decoded used now means another string
                self.epoch = self.epoch.wrapping_add(1);
                self.pinned.fill(false);
            }
        }
        self.entries += 1;
    }

    /// The next event's start, the position of its data and its plan, 888 events on the way
    /// put into the string table; None if it has no plan, does not have the plan's header
    /// words, or the file ends.
    #[inline(always)]
    fn next_plan(&mut self) -> Option<(usize, usize, Plan)> {
        let (start, w0) = self.strings_on_the_way()?;
        let plan = (*self.plans.get((w0 >> 18) as usize)?)?;
        if plan.w0 != w0 {
            return None;
        }
        let mut p = start + 4;
        if plan.w1 != 0 {
            if self.u32_at(p) != Some(plan.w1) {
                return None;
            }
            p += 4;
        }
        Some((start, p, plan))
    }

    /// The 888 events at the current position put into the string table (those of one
    /// string and one header word, after the first); the next event's start and header
    /// word, None where the file ends.
    #[inline(always)]
    fn strings_on_the_way(&mut self) -> Option<(usize, u32)> {
        let data = self.data;
        loop {
            let start = self.pos;
            let w0 = self.u32_at(start)?;
            if w0 >> 18 != STRING_ENTRY || w0 & 0x2_ffff != 0x2_1000 || self.entries == 0 {
                return Some((start, w0));
            }
            let k = data.get(start + 4..).and_then(nul)?;
            let end = align4(start + 4 + k + 1);
            if end > data.len() {
                return None;
            }
            self.put_string(&data[start + 4..start + 4 + k]);
            self.pos = end;
        }
    }

    /// Like `fast`, for the events of a plan that `next_hot` may decode: their fields
    /// straight into `h` (each string with its memo key, from the word its NUL search
    /// loaded), no `Event` in between. 888 events on the way go to the string table. False:
    /// leave the event to `next_step` (which decodes it, by its plan or the general path, or
    /// says what is wrong).
    #[inline]
    pub fn next_hot(&mut self, h: &mut Hot<'a>) -> bool {
        if !self.use_plans || self.layout != Layout::Fork || self.done {
            return false;
        }
        let Some((start, p, plan)) = self.next_plan() else {
            return false;
        };
        if !plan.hot {
            return false;
        }
        unset(&plan, h);
        // a link's prefix (its time, then the names `Plan::cut` says) first, to know where
        // it ends
        let cut = plan.cut as usize;
        let mid = if cut > 0 {
            let Some(mid) = self.hot_items(&plan, 0, cut, p, h) else {
                return false;
            };
            mid
        } else {
            p
        };
        let Some(q) = self.hot_items(&plan, cut, plan.len as usize, mid, h) else {
            return false;
        };
        let end = align4(q);
        if end > self.data.len() {
            return false;
        }
        h.offset = start as u64;
        h.kind = plan.kind;
        h.timed = true;
        self.tail = plan.tail.then_some((start + 12, end));
        let head = plan.w0 as u64 | (plan.w1 as u64) << 32;
        self.cut = (cut > 0).then_some((head, p + 8, mid, plan.cut_min as usize));
        self.pos = end;
        self.events += 1;
        true
    }

    /// Items `from..to` of an event of `plan` from byte `p` into `h` (each string with its
    /// memo key, from the word its NUL search loaded); the position after them, None where
    /// the event does not fit the plan.
    #[inline(always)]
    fn hot_items(
        &mut self,
        plan: &Plan,
        from: usize,
        to: usize,
        mut p: usize,
        h: &mut Hot<'a>,
    ) -> Option<usize> {
        for k in from..to.min(MAX_PLAN) {
            p = self.hot_item(plan.codes[k], plan.slot[k] as usize & 7, p, h)?;
        }
        Some(p)
    }

    /// One item of item code `code` from byte `p` into slot `slot` of `h` (`hot_items`); the
    /// position after it.
    #[inline(always)]
    fn hot_item(&mut self, code: u8, slot: usize, mut p: usize, h: &mut Hot<'a>) -> Option<usize> {
        const LO: u64 = 0x0101_0101_0101_0101;
        const HI: u64 = 0x8080_8080_8080_8080;
        let data = self.data;
        match code {
            1 => {
                let rest = data.get(p..).unwrap_or_default();
                // a short string: its bytes and key from the word its NUL is in
                let short = rest.first_chunk::<8>().and_then(|w| {
                    let v = u64::from_le_bytes(*w);
                    let z = v.wrapping_sub(LO) & !v & HI;
                    let n = (z.trailing_zeros() / 8) as usize;
                    (z != 0).then(|| (&w[..n], memo::key_of_word(v, n)))
                });
                let (s, key) = match short {
                    Some(x) => x,
                    None => {
                        let n = nul(rest)?;
                        (&rest[..n], memo::key(&rest[..n]))
                    }
                };
                h.s[slot] = s;
                h.k[slot] = key;
                p = align4(p + s.len() + 1);
            }
            2 => {
                h.num[slot] = f64::from_bits(self.u64_at(p)?);
                p += 8;
            }
            7 => {
                if p + 4 > data.len() {
                    return None;
                }
                p += 4;
            }
            _ => {
                let b = data.get(p..p + 2)?;
                let r = u16::from_le_bytes([b[0], b[1]]);
                let v = self.string_ref(r)?;
                h.s[slot] = v;
                h.k[slot] = self.table_keys[r as usize];
                self.pinned[r as usize] = true;
                p += 2;
            }
        }
        Some(p)
    }

    /// The link event at the current position (888 events before it put into the string
    /// table), if its plan has a prefix (`Plan::cut`) and 16 bytes follow the prefix's
    /// start; None where the fast paths are off.
    #[inline(always)]
    pub fn peek_link(&mut self) -> Option<LinkPeek> {
        if !self.use_plans || self.layout != Layout::Fork || self.done {
            return None;
        }
        let (start, p, plan) = self.next_plan()?;
        if plan.cut == 0 {
            return None;
        }
        let at = p + 8;
        Some(LinkPeek {
            start,
            head: plan.w0 as u64 | (plan.w1 as u64) << 32,
            time: self.u64_at(p)?,
            at,
            w: [self.u64_at(at)?, self.u64_at(at + 8)?],
            min: plan.cut_min as usize,
        })
    }

    /// The link event `peek_link` saw, whose prefix `memo::Recent` knew as `len` bytes long:
    /// its time and the items after the prefix (key, size) into `h` (the type and the
    /// containers are left as they are), and on past it. False: leave it to `next_hot`.
    #[inline(always)]
    pub fn finish_link(&mut self, lp: &LinkPeek, len: usize, h: &mut Hot<'a>) -> bool {
        let ty = (lp.head as u32 >> 18) as usize;
        let Some(plan) = self.plans.get(ty).and_then(Option::as_ref) else {
            return false;
        };
        unset(plan, h);
        let (cut, n, kind, p) = (plan.cut as usize, plan.len as usize, plan.kind, lp.at + len);
        // most link plans have one item after the prefix (the key): that item alone, with
        // no copy of the plan
        let q = match (plan.codes.get(cut), plan.slot.get(cut)) {
            (Some(&code), Some(&slot)) if n == cut + 1 => {
                self.hot_item(code, slot as usize & 7, p, h)
            }
            _ => {
                let plan = *plan;
                self.hot_items(&plan, cut, n, p, h)
            }
        };
        let Some(q) = q else {
            return false;
        };
        let end = align4(q);
        if end > self.data.len() {
            return false;
        }
        h.offset = lp.start as u64;
        h.kind = kind;
        h.timed = true;
        h.num[HOT_TIME] = f64::from_bits(lp.time);
        self.tail = None;
        self.cut = None;
        self.pos = end;
        self.events += 1;
        true
    }

    /// The file and the current position, for a run of state events `memo::States` knows
    /// (`words_at`, `skip_known`); None where the fast paths are off.
    #[inline(always)]
    pub fn known_at(&self) -> Option<(&'a [u8], usize)> {
        if !self.use_plans || self.layout != Layout::Fork || self.done {
            return None;
        }
        Some((self.data, self.pos))
    }

    /// The event at byte `at` as words (`words_at`), with `at`.
    #[inline(always)]
    pub fn peek_at(&self, at: usize) -> Option<(usize, u32, u64, [u64; 2])> {
        let (w0, time, w) = words_at(self.data, at)?;
        Some((at, w0, time, w))
    }

    /// `n` events from the position `known_at` gave, `memo::States` knowing them, end at
    /// `end`: go on from there.
    #[inline(always)]
    pub fn skip_known(&mut self, end: usize, n: u64) {
        self.pos = end;
        self.events += n;
    }

    /// `h` of the event `ev` if it is a state or link event (`next_hot`'s result, had it
    /// decoded the event); false for the other kinds.
    pub fn hot_view(&self, ev: &Event<'a>, h: &mut Hot<'a>) -> bool {
        let d = &self.defs[ev.def as usize];
        let Some(slots) = d.hot else {
            return false;
        };
        h.s = [&[]; 8];
        h.k = [memo::key(b""); 8];
        h.timed = false;
        for (j, v) in ev.fields().iter().enumerate() {
            let slot = slots[j] as usize & 7;
            match (*v, slot) {
                (Val::Num(x), HOT_TIME) => {
                    h.num[slot] = x;
                    h.timed = true;
                }
                (Val::Str(s), HOT_TYPE..=HOT_SIZE) => {
                    h.s[slot] = s;
                    h.k[slot] = memo::key(s);
                }
                _ => {}
            }
        }
        h.offset = ev.offset;
        h.kind = d.kind;
        true
    }

    #[inline]
    fn string_ref(&self, r: u16) -> Option<&'a [u8]> {
        if (r as u64) >= self.entries {
            return None;
        }
        self.table.get(r as usize).copied()
    }

    /// The decoder without its fast path: every event through the general one (the fuzz
    /// target checks that both decode the same events and stop at the same error).
    #[doc(hidden)]
    pub fn without_plans(mut self) -> Self {
        self.use_plans = false;
        self
    }

    /// Byte offset of the next event.
    pub fn offset(&self) -> u64 {
        self.pos as u64
    }

    /// Whether the file is the reference variant (it has 888 events so far).
    pub fn reference(&self) -> bool {
        self.entries > 0
    }
}

/// A Name or Color without the pair of quotes poti added (§F.2.7).
#[inline]
fn unquote(kind: Kind, role: Role, s: &[u8]) -> &[u8] {
    if quoted(kind, role) {
        strip_quotes(s)
    } else {
        s
    }
}

/// `s` without an enclosing pair of double quotes.
#[inline]
fn strip_quotes(s: &[u8]) -> &[u8] {
    if s.len() >= 2 && s[0] == b'"' && s[s.len() - 1] == b'"' {
        &s[1..s.len() - 1]
    } else {
        s
    }
}
