//! Paje events one by one, from a text or a binary trace alike, before any simulation: the
//! definitions as they come and each event's fields with their roles. `perfexpert convert`
//! writes Paje (text or binary) from this stream, so nothing the model drops is lost.

use super::binary::{self, Decoder, Step, Val};
use super::header::{Kind, Role};
use super::scan::{self, Scanner};
use crate::error::Result;
use std::path::Path;

/// A field value: text as written (quotes removed), or a binary number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Field<'a> {
    Text(&'a [u8]),
    Num(f64),
    Int(u32),
}

/// What the visitor sees, in file order.
pub enum Item<'s, 'a> {
    /// A definition (`%EventDef` block or 999 event): its event and its fields' roles.
    Def { kind: Kind, roles: &'s [Role] },
    /// An event of the last definition of its id: kind, the fields' roles and values, and
    /// where it is (line for text, byte offset for binary).
    Event {
        kind: Kind,
        roles: &'s [Role],
        vals: &'s [Field<'a>],
        place: u64,
    },
}

/// Call `f` on every definition and event of the Paje trace `data` (text or binary, found
/// by content). The first error (of the file or of `f`) stops the walk.
pub fn visit<'a>(
    path: &'a Path,
    data: &'a [u8],
    f: &mut dyn FnMut(Item<'_, 'a>) -> Result<()>,
) -> Result<()> {
    if binary::sniff(data) {
        visit_binary(path, data, f)
    } else {
        visit_text(path, data, f)
    }
}

fn visit_binary<'a>(
    path: &'a Path,
    data: &'a [u8],
    f: &mut dyn FnMut(Item<'_, 'a>) -> Result<()>,
) -> Result<()> {
    let mut dec = Decoder::new(path, data)?;
    let mut roles: Vec<Vec<Role>> = Vec::new();
    let mut vals = [Field::Int(0); binary::MAX_FIELDS];
    let mut ev = binary::Event::new();
    loop {
        match dec.next_step(&mut ev)? {
            Step::End => return Ok(()),
            Step::Def(k) => {
                let d = &dec.defs[k as usize];
                roles.push(d.fields.iter().map(|x| x.0).collect());
                f(Item::Def {
                    kind: d.kind,
                    roles: &roles[k as usize],
                })?;
            }
            Step::Event => {
                for (slot, v) in vals.iter_mut().zip(ev.fields()) {
                    *slot = match *v {
                        Val::Str(s) => Field::Text(s),
                        Val::Num(x) => Field::Num(x),
                        Val::Int(i) => Field::Int(i),
                    };
                }
                f(Item::Event {
                    kind: dec.defs[ev.def as usize].kind,
                    roles: &roles[ev.def as usize],
                    vals: &vals[..ev.n],
                    place: ev.offset,
                })?;
            }
        }
    }
}

fn visit_text<'a>(
    path: &'a Path,
    data: &'a [u8],
    f: &mut dyn FnMut(Item<'_, 'a>) -> Result<()>,
) -> Result<()> {
    let mut sc = Scanner::new(path, data, 9);
    let mut defs: Vec<(Kind, Vec<Role>)> = Vec::new();
    let mut vals: Vec<Field<'a>> = Vec::new();
    let mut batch = scan::Batch::default();
    while let Some(mut b) = sc.next_batch(batch) {
        for item in b.items.drain(..) {
            match item {
                scan::Item::Def(d) => {
                    let kind = d.kind;
                    defs.push((kind, d.roles()));
                    let roles = &defs[defs.len() - 1].1;
                    f(Item::Def { kind, roles })?;
                }
                scan::Item::Creator(_) => {}
                scan::Item::Err(e) => return Err(*e),
                scan::Item::Data {
                    line, def, first, ..
                } => {
                    let (kind, roles) = &defs[def as usize];
                    vals.clear();
                    let first = first as usize;
                    vals.extend(
                        b.fields[first..first + roles.len()]
                            .iter()
                            .map(|s| Field::Text(s)),
                    );
                    f(Item::Event {
                        kind: *kind,
                        roles,
                        vals: &vals,
                        place: line,
                    })?;
                }
            }
        }
        batch = b;
    }
    Ok(())
}
