//! The first stage of the reader: lines → fields, `%EventDef` blocks → definitions, event
//! ids → definitions, dates → ticks. It runs on its own thread ahead of the simulation
//! (`mod.rs`), handing over batches of about `BATCH` bytes, so parsing uses two cores.
//! Everything here depends only on earlier lines of the file, never on the simulation.

use super::header::{self, EventDef, Role};
use super::lex;
use crate::error::{Error, Place, Result};
use std::path::Path;

/// Bytes per batch.
const BATCH: usize = 1 << 22;

/// One significant line, in file order.
pub enum Item {
    /// A completed `%EventDef`: it becomes definition number `k` (the k-th `Def` item).
    Def(Box<EventDef>),
    /// The producer named in a `#This file was generated using …` comment.
    Creator(String),
    /// A data line: its definition (index in `Def` order), date in ticks (0 if the event
    /// has none) and its fields after the id, `fields[first..first + n]`.
    Data {
        line: u64,
        def: u32,
        time: u64,
        first: u32,
    },
    /// The first error of the file: the reader stops here.
    Err(Box<Error>),
}

/// What the scanner keeps of a definition.
#[derive(Clone, Copy)]
struct IdEntry {
    def: u32,
    /// Position of the Time field, or NO_FIELD.
    time_at: u8,
    nfields: usize,
    kind: header::Kind,
    line: u64,
}

pub struct Batch<'a> {
    pub items: Vec<Item>,
    pub fields: Vec<&'a [u8]>,
}

impl Default for Batch<'_> {
    fn default() -> Self {
        Batch {
            items: Vec::with_capacity(BATCH / 16),
            fields: Vec::with_capacity(BATCH / 4),
        }
    }
}

/// The scanner's state across batches.
pub struct Scanner<'a> {
    path: &'a Path,
    data: &'a [u8],
    pos: usize,
    line: u64,
    digits: u32,
    /// Some date had more fraction digits than `digits`.
    pub inexact: bool,
    /// Event id → its definition.
    ids: Vec<Option<IdEntry>>,
    big_ids: std::collections::HashMap<u64, IdEntry>,
    ndefs: u32,
    pending: Option<header::Pending>,
    creator_seen: bool,
    failed: bool,
    scratch: Vec<&'a [u8]>,
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl<'a> Scanner<'a> {
    pub fn new(path: &'a Path, data: &'a [u8], digits: u32) -> Scanner<'a> {
        Scanner {
            path,
            data,
            pos: 0,
            line: 0,
            digits,
            inexact: false,
            ids: Vec::new(),
            big_ids: Default::default(),
            ndefs: 0,
            pending: None,
            creator_seen: false,
            failed: false,
            scratch: Vec::with_capacity(16),
        }
    }

    fn err(&self, what: impl Into<String>) -> Error {
        Error::format(self.path, Place::Line(self.line), what)
    }

    /// The next batch, filled into `b` (an empty one, possibly recycled), or None at the end
    /// of the file (or after an error).
    pub fn next_batch(&mut self, mut b: Batch<'a>) -> Option<Batch<'a>> {
        if self.failed || (self.pos >= self.data.len() && self.pending.is_none()) {
            return None;
        }
        b.items.clear();
        b.fields.clear();
        let stop = self.pos.saturating_add(BATCH);
        while self.pos < self.data.len() && self.pos < stop {
            if let Err(e) = self.line_into(&mut b) {
                b.items.push(Item::Err(Box::new(e)));
                self.failed = true;
                return Some(b);
            }
        }
        if self.pos >= self.data.len() {
            if let Some(p) = self.pending.take() {
                b.items.push(Item::Err(Box::new(self.err(format!(
                    "the file ends inside the %EventDef of line {} (expected %EndEventDef)",
                    p.line()
                )))));
                self.failed = true;
            }
        }
        Some(b)
    }

    #[inline]
    fn line_into(&mut self, b: &mut Batch<'a>) -> Result<()> {
        let data = self.data;
        let pos = self.pos;
        let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |k| pos + k);
        let raw = &data[pos..end];
        self.pos = end + 1;
        self.line += 1;
        let mut s = 0;
        while s < raw.len() && lex::is_space(raw[s]) {
            s += 1;
        }
        let line = &raw[s..];
        let Some(&c0) = line.first() else {
            return Ok(());
        };
        if c0 == b'#' {
            if !self.creator_seen {
                if let Some(rest) = line.strip_prefix(b"#This file was generated using ") {
                    self.creator_seen = true;
                    b.items.push(Item::Creator(lossy(rest).trim().to_string()));
                }
            }
            return Ok(());
        }
        if c0 == b'%' {
            let mut words = std::mem::take(&mut self.scratch);
            words.clear();
            let r = lex::split(&line[1..], &mut words)
                .map_err(|_| self.err("unterminated double quote"))
                .and_then(|_| self.header_line(&words, b));
            self.scratch = words;
            return r;
        }
        if self.pending.is_some() {
            return Err(self.err(
                "a data line inside an %EventDef block (expected '% <field> <type>' or %EndEventDef)",
            ));
        }
        let first = b.fields.len();
        if let Err(col) = lex::split(line, &mut b.fields) {
            return Err(self.err(format!(
                "unterminated double quote at column {}",
                col + s + 1
            )));
        }
        if b.fields.len() == first {
            return Ok(()); // only a comment
        }
        let id_field = b.fields[first];
        let Some(id) = lex::uint(id_field) else {
            return Err(self.err(format!(
                "expected an event id (a number declared by %EventDef), found '{}'",
                lossy(id_field)
            )));
        };
        let found = match self.ids.get(id as usize) {
            Some(Some(d)) => Some(*d),
            _ => self.big_ids.get(&id).copied(),
        };
        let Some(IdEntry {
            def,
            time_at,
            nfields,
            kind,
            line: def_line,
        }) = found
        else {
            return Err(self.err(format!(
                "event id {id} is not declared by any %EventDef before this line"
            )));
        };
        let n = b.fields.len() - first - 1;
        if n != nfields {
            return Err(self.err(format!(
                "{kind} (id {id}, defined at line {def_line}) has {nfields} field(s), this line has {n}"
            )));
        }
        let time = if time_at == header::NO_FIELD {
            0
        } else {
            let s = b.fields[first + 1 + time_at as usize];
            lex::date(s, self.digits, &mut self.inexact).map_err(|e| {
                self.err(format!(
                    "expected a date in seconds, found '{}' ({})",
                    lossy(s),
                    match e {
                        lex::DateError::Syntax => "not a number",
                        lex::DateError::Negative => "negative",
                        lex::DateError::Overflow => "too large",
                    }
                ))
            })?
        };
        b.items.push(Item::Data {
            line: self.line,
            def,
            time,
            first: (first + 1) as u32,
        });
        Ok(())
    }

    fn header_line(&mut self, words: &[&[u8]], b: &mut Batch<'a>) -> Result<()> {
        let Some((&first, rest)) = words.split_first() else {
            return match self.pending {
                Some(_) => Err(self.err("an empty '%' line inside %EventDef")),
                None => Ok(()),
            };
        };
        match (first, self.pending.take()) {
            (b"EventDef", None) => {
                self.pending = Some(header::begin(rest, self.line).map_err(|e| self.err(e))?);
                Ok(())
            }
            (b"EndEventDef", Some(p)) => {
                let (id, def) = p.end().map_err(|e| self.err(e))?;
                let time_at = if def.has(Role::Time) {
                    def.at(Role::Time) as u8
                } else {
                    header::NO_FIELD
                };
                let entry = IdEntry {
                    def: self.ndefs,
                    time_at,
                    nfields: def.nfields,
                    kind: def.kind,
                    line: def.line,
                };
                self.ndefs += 1;
                if id < 4096 {
                    if self.ids.len() <= id as usize {
                        self.ids.resize(id as usize + 1, None);
                    }
                    self.ids[id as usize] = Some(entry);
                } else {
                    self.big_ids.insert(id, entry);
                }
                b.items.push(Item::Def(Box::new(def)));
                Ok(())
            }
            (b"EventDef", Some(_)) => {
                Err(self.err("%EventDef inside another %EventDef (expected %EndEventDef first)"))
            }
            (b"EndEventDef", None) => Err(self.err("%EndEventDef without %EventDef")),
            (_, Some(mut p)) => {
                p.field(words).map_err(|e| self.err(e))?;
                self.pending = Some(p);
                Ok(())
            }
            (_, None) => Err(self.err(format!(
                "expected %EventDef or %EndEventDef, found '%{}'",
                lossy(first)
            ))),
        }
    }
}
