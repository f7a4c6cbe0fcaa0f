//! Paje writers (formats.md §C and §F): Paje text, and binary Paje in the layout of the
//! PajeNG fork (Herbstrith librastro, no time stamps), standard or reference variant, with
//! poti's fixed field lists, item order and added quotes, so the events decode like those
//! `paje2rst` writes for the same input (padding bytes are zero; the INIT host name is
//! `perfexpert`).

use super::Summary;
use crate::error::{Error, Place};
use crate::formats::paje::binary::{self, quoted};
use crate::formats::paje::header::{Kind, Role};
use crate::formats::paje::stream::{self, Field, Item};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// Why a conversion stopped: bad input, or the output could not be written.
pub enum Failure {
    Input(Error),
    Output(std::io::Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Input(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Output(e)
    }
}

/// Walk the input; output errors are carried out of the visitor as `Error::Usage` markers.
fn walk<'a>(
    input: &'a Path,
    data: &'a [u8],
    f: &mut dyn FnMut(Item<'_, 'a>) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let mut io_err = None;
    let r = stream::visit(input, data, &mut |it| match f(it) {
        Ok(()) => Ok(()),
        Err(Failure::Input(e)) => Err(e),
        Err(Failure::Output(e)) => {
            io_err = Some(e);
            Err(Error::Usage(String::new()))
        }
    });
    match (r, io_err) {
        (_, Some(e)) => Err(Failure::Output(e)),
        (Err(e), None) => Err(Failure::Input(e)),
        (Ok(()), None) => Ok(()),
    }
}

const PROGRESS_EVERY: u64 = 1 << 16;

/// poti's field list of a Paje event (formats.md §F.2.3): (field id, field type id), in
/// Paje order.
pub fn poti_fields(kind: Kind) -> Option<&'static [(u32, u32)]> {
    use Kind::*;
    Some(match kind {
        DefineContainerType | DefineEventType | DefineStateType => &[(11, 0), (3, 0), (2, 0)],
        DefineVariableType | DefineEntityValue => &[(11, 0), (3, 0), (2, 0), (12, 6)],
        DefineLinkType => &[(11, 0), (3, 0), (5, 0), (6, 0), (2, 0)],
        CreateContainer => &[(1, 5), (11, 0), (3, 0), (4, 0), (2, 0)],
        DestroyContainer => &[(1, 5), (3, 0), (2, 0)],
        NewEvent | SetState | PushState => &[(1, 5), (4, 0), (3, 0), (9, 0)],
        PopState => &[(1, 5), (4, 0), (3, 0)],
        ResetState => &[(1, 5), (3, 0), (4, 0)],
        SetVariable | AddVariable | SubVariable => &[(1, 5), (4, 0), (3, 0), (9, 2)],
        StartLink => &[(1, 5), (4, 0), (3, 0), (7, 0), (9, 0), (10, 0)],
        EndLink => &[(1, 5), (4, 0), (3, 0), (8, 0), (9, 0), (10, 0)],
        TraceFile => return None,
    })
}

fn is_double(type_id: u32) -> bool {
    type_id == 2 || type_id == 5
}

/// The binary64 of a field (a date or a variable's value).
fn number(f: Option<&Field>, input: &Path, place: Place, kind: Kind) -> Result<f64, Error> {
    match f {
        None => Ok(0.0),
        Some(Field::Num(x)) => Ok(*x),
        Some(Field::Int(i)) => Ok(*i as f64),
        Some(Field::Text(t)) => std::str::from_utf8(t)
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .ok_or_else(|| {
                Error::format(
                    input,
                    place,
                    format!(
                        "{kind}: expected a number, found '{}'",
                        String::from_utf8_lossy(t)
                    ),
                )
            }),
    }
}

/// The binary writer's state: an output buffer that starts at a 4-aligned file offset.
struct Rst<'w> {
    out: &'w mut dyn Write,
    buf: Vec<u8>,
    reference: bool,
    /// Reference variant: string → its index; `slots[i]` the string index i names now.
    index: HashMap<Vec<u8>, u16>,
    slots: Vec<Vec<u8>>,
    next: u64,
}

impl Rst<'_> {
    /// Header words of an event of type `ty` with item type codes `codes` (§F.1.3).
    fn header(&mut self, ty: u32, codes: &[u32], time_set: bool) {
        let mut w0 = ty << 18 | if time_set { 0x1_0000 } else { 0 };
        for (k, &c) in codes.iter().take(4).enumerate() {
            w0 |= c << (12 - 4 * k);
        }
        let rest = codes.get(4..).unwrap_or(&[]);
        if rest.is_empty() {
            w0 |= 0x2_0000;
        }
        self.buf.extend_from_slice(&w0.to_le_bytes());
        let n = rest.chunks(7).count();
        for (j, chunk) in rest.chunks(7).enumerate() {
            let mut w = 0u32;
            for (k, &c) in chunk.iter().enumerate() {
                w |= c << (24 - 4 * k);
            }
            if j + 1 == n {
                w |= 0x2000_0000;
            }
            self.buf.extend_from_slice(&w.to_le_bytes());
        }
    }

    fn pad(&mut self) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }

    fn string(&mut self, s: &[u8]) {
        self.buf.extend_from_slice(s);
        self.buf.push(0);
        self.pad();
    }

    fn flush_if_full(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= 1 << 20 {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// The index of `s` in the string table, writing its 888 event first when it has none
    /// (or its slot was taken by a later string after the u16 counter wrapped).
    fn reference_of(&mut self, s: &[u8]) -> u16 {
        if let Some(&i) = self.index.get(s) {
            if self.slots[i as usize] == s {
                return i;
            }
        }
        let i = (self.next % 65536) as u16;
        self.next += 1;
        self.header(binary::STRING_ENTRY, &[1], false);
        self.string(s);
        if self.slots.len() <= i as usize {
            self.slots.push(s.to_vec());
        } else {
            // the slot's old string loses its index: the map stays at most 65536 strings
            let old = std::mem::replace(&mut self.slots[i as usize], s.to_vec());
            if self.index.get(&old) == Some(&i) {
                self.index.remove(&old);
            }
        }
        self.index.insert(s.to_vec(), i);
        i
    }
}

/// A binary Paje writer: the INIT event on creation, then definitions and events (from a
/// Paje input through `feed`, or one by one from `paje_model`), the STOP event at `finish`.
pub(super) struct Binary<'w> {
    w: Rst<'w>,
    sum: Summary,
    dropped_extra: u64,
}

impl<'w> Binary<'w> {
    pub(super) fn new(out: &'w mut dyn Write, reference: bool) -> Self {
        let mut w = Rst {
            out,
            buf: Vec::with_capacity(1 << 21),
            reference,
            index: HashMap::new(),
            slots: Vec::new(),
            next: 0,
        };
        // INIT: ids 0 and 0, the host name (§F.1.6)
        w.header(binary::INIT, &[4, 4, 1], true);
        w.buf.extend_from_slice(&[0; 16]);
        w.string(b"perfexpert");
        Binary {
            w,
            sum: Summary::default(),
            dropped_extra: 0,
        }
    }

    /// A definition: its 999 event with poti's field list.
    fn def(&mut self, input: &Path, kind: Kind, roles: &[Role]) -> Result<(), Failure> {
        let fields = poti_fields(kind).ok_or_else(|| {
            Error::format(
                input,
                Place::File,
                format!("{kind} has no binary Paje form (poti maps no such event)"),
            )
        })?;
        let id = binary::id_of(kind).unwrap_or(0);
        let mut v = vec![id];
        for &(f, t) in fields {
            v.extend([f, t]);
        }
        self.w.header(binary::DEFINITION, &vec![7; v.len()], false);
        for x in v {
            self.w.buf.extend_from_slice(&x.to_le_bytes());
        }
        if roles
            .iter()
            .any(|r| !fields.iter().any(|&(f, _)| binary::role_of(f) == Some(*r)))
        {
            self.dropped_extra += 1;
        }
        self.sum.definitions += 1;
        self.w.flush_if_full()?;
        Ok(())
    }

    /// One event, its fields given by role (fields outside poti's list are ignored).
    pub(super) fn event(
        &mut self,
        input: &Path,
        kind: Kind,
        roles: &[Role],
        vals: &[Field],
        place: Place,
    ) -> Result<(), Failure> {
        event(&mut self.w, kind, roles, vals, input, place)?;
        self.sum.events += 1;
        self.w.flush_if_full()?;
        Ok(())
    }

    /// Every definition and event of the Paje trace `data` (text or binary).
    pub(super) fn feed(
        &mut self,
        input: &Path,
        data: &[u8],
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), Failure> {
        let binary_in = binary::sniff(data);
        walk(input, data, &mut |it| match it {
            Item::Def { kind, roles } => self.def(input, kind, roles),
            Item::Event {
                kind,
                roles,
                vals,
                place,
            } => {
                let place = if binary_in {
                    Place::Byte(place)
                } else {
                    Place::Line(place)
                };
                self.event(input, kind, roles, vals, place)?;
                if self.sum.events % PROGRESS_EVERY == 0 {
                    progress(self.sum.events);
                }
                Ok(())
            }
        })
    }

    /// The STOP event; what was written and dropped.
    pub(super) fn finish(mut self) -> Result<Summary, Failure> {
        self.w.header(binary::STOP, &[], false);
        self.w.out.write_all(&self.w.buf)?;
        if self.dropped_extra > 0 {
            self.sum.dropped.push(format!(
                "{} definition(s) have fields outside poti's fixed list (user-defined fields, SimGrid's Size, …); binary Paje drops them, as paje2rst does",
                self.dropped_extra
            ));
        }
        Ok(self.sum)
    }
}

/// Binary Paje from the Paje trace `data`.
pub fn to_binary(
    input: &Path,
    data: &[u8],
    reference: bool,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, Failure> {
    let mut b = Binary::new(out, reference);
    b.feed(input, data, progress)?;
    b.finish()
}

/// One Paje event in poti's item order: doubles, then strings (or u16 references), each
/// class in Paje order, but ResetState's Container before its Type (§F.2.8).
fn event(
    w: &mut Rst,
    kind: Kind,
    roles: &[Role],
    vals: &[Field],
    input: &Path,
    place: Place,
) -> Result<(), Failure> {
    let Some(fields) = poti_fields(kind) else {
        return Err(Error::format(input, place, format!("{kind} has no binary Paje form")).into());
    };
    let get = |r: Role| roles.iter().position(|&x| x == r).map(|k| &vals[k]);
    let mut doubles = [0f64; 4];
    let mut nd = 0;
    let mut strs: [&[u8]; 8] = [&[]; 8];
    let mut quote = [false; 8];
    let mut ns = 0;
    let mut order = [(0u32, 0u32); 8];
    let order = &mut order[..fields.len()];
    order.copy_from_slice(fields);
    if kind == Kind::ResetState {
        order.swap(1, 2);
    }
    for &(f, t) in order.iter() {
        let role = binary::role_of(f).unwrap_or(Role::Extra);
        if is_double(t) {
            doubles[nd] = number(get(role), input, place, kind)?;
            nd += 1;
        } else {
            strs[ns] = match get(role) {
                Some(Field::Text(s)) => s,
                _ => b"",
            };
            quote[ns] = quoted(kind, role);
            ns += 1;
        }
    }
    let id = binary::id_of(kind).unwrap_or(0);
    let mut refs = [0u16; 8];
    if w.reference {
        // the writer looks its strings up right to left (the C call's argument order, §F.3)
        for k in (0..ns).rev() {
            refs[k] = if quote[k] {
                let mut q = Vec::with_capacity(strs[k].len() + 2);
                q.push(b'"');
                q.extend_from_slice(strs[k]);
                q.push(b'"');
                w.reference_of(&q)
            } else {
                w.reference_of(strs[k])
            };
        }
    }
    let mut codes = [0u32; 12];
    codes[..nd].fill(2);
    codes[nd..nd + ns].fill(if w.reference { 5 } else { 1 });
    w.header(id, &codes[..nd + ns], false);
    for d in &doubles[..nd] {
        w.buf.extend_from_slice(&d.to_bits().to_le_bytes());
    }
    for k in 0..ns {
        if w.reference {
            w.buf.extend_from_slice(&refs[k].to_le_bytes());
        } else if quote[k] {
            w.buf.push(b'"');
            w.buf.extend_from_slice(strs[k]);
            w.buf.push(b'"');
            w.buf.push(0);
            w.pad();
        } else {
            w.string(strs[k]);
        }
    }
    w.pad();
    Ok(())
}

/// The text name and type of a field (None: a user-defined field, not written).
fn text_field(kind: Kind, role: Role) -> Option<(&'static str, &'static str)> {
    use Role::*;
    let variable = matches!(
        kind,
        Kind::SetVariable | Kind::AddVariable | Kind::SubVariable
    );
    Some(match role {
        Time => ("Time", "date"),
        Name => ("Name", "string"),
        Alias => ("Alias", "string"),
        Type => ("Type", "string"),
        Container => ("Container", "string"),
        StartContainerType => ("StartContainerType", "string"),
        EndContainerType => ("EndContainerType", "string"),
        StartContainer => ("StartContainer", "string"),
        EndContainer => ("EndContainer", "string"),
        Value if variable => ("Value", "double"),
        Value => ("Value", "string"),
        Key => ("Key", "string"),
        Color => ("Color", "color"),
        Filename => ("Filename", "string"),
        Size => ("Size", "int"),
        PeRecord => ("PerfexpertRecord", "string"),
        Extra => return None,
    })
}

/// Paje text from the Paje trace `data`: one `%EventDef` per definition (numbered in
/// order), the events in file order; user-defined extra fields are dropped.
pub fn to_text(
    input: &Path,
    data: &[u8],
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary, Failure> {
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 21);
    // the definitions written: (kind, roles) → id; the last one of a (kind, roles) wins
    let mut ids: Vec<(Kind, Vec<Role>)> = Vec::new();
    let mut sum = Summary::default();
    let binary_in = binary::sniff(data);
    let mut dropped_extra = 0u64;
    walk(input, data, &mut |it| {
        match it {
            Item::Def { kind, roles } => {
                let id = ids.len();
                ids.push((kind, roles.to_vec()));
                writeln!(buf, "%EventDef {kind} {id}")?;
                for &r in roles {
                    match text_field(kind, r) {
                        Some((name, ty)) => writeln!(buf, "%       {name} {ty}")?,
                        None => dropped_extra += 1,
                    }
                }
                writeln!(buf, "%EndEventDef")?;
                sum.definitions += 1;
            }
            Item::Event {
                kind,
                roles,
                vals,
                place,
            } => {
                let place = if binary_in {
                    Place::Byte(place)
                } else {
                    Place::Line(place)
                };
                let Some(id) = ids.iter().rposition(|(k, r)| *k == kind && r == roles) else {
                    return Err(Error::format(
                        input,
                        place,
                        format!("{kind} before its definition"),
                    )
                    .into());
                };
                write!(buf, "{id}")?;
                for (&r, v) in roles.iter().zip(vals) {
                    if text_field(kind, r).is_none() {
                        continue;
                    }
                    buf.push(b' ');
                    match v {
                        Field::Num(x) => write!(buf, "{x}")?,
                        Field::Int(i) => write!(buf, "{i}")?,
                        Field::Text(s) => text_value(&mut buf, s, input, place)?,
                    }
                }
                buf.push(b'\n');
                sum.events += 1;
                if sum.events % PROGRESS_EVERY == 0 {
                    progress(sum.events);
                }
            }
        }
        if buf.len() >= 1 << 20 {
            out.write_all(&buf)?;
            buf.clear();
        }
        Ok(())
    })?;
    out.write_all(&buf)?;
    if dropped_extra > 0 {
        sum.dropped.push(format!(
            "{dropped_extra} user-defined field(s) of the definitions are not written"
        ));
    }
    Ok(sum)
}

/// A string field as Paje text: quoted when it is empty, holds white space or starts a
/// comment; a double quote inside a quoted field cannot be written (Paje has no escape).
fn text_value(buf: &mut Vec<u8>, s: &[u8], input: &Path, place: Place) -> Result<(), Failure> {
    let needs = s.is_empty()
        || s[0] == b'#'
        || s[0] == b'"'
        || s.iter()
            .any(|&b| b == b' ' || b == b'\t' || b == b'\r' || b == b'\n');
    if !needs {
        buf.extend_from_slice(s);
        return Ok(());
    }
    if s.iter().any(|&b| b == b'"' || b == b'\n') {
        return Err(Error::format(
            input,
            place,
            format!(
                "the value '{}' holds a double quote or a newline and white space; Paje text cannot write it",
                String::from_utf8_lossy(s)
            ),
        )
        .into());
    }
    buf.push(b'"');
    buf.extend_from_slice(s);
    buf.push(b'"');
    Ok(())
}
