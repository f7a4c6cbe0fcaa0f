//! A walk's memo of its memoised rule lists (`plan::memo`): per key — the trigger event's
//! kind, call region and call path, and the values of the list's inputs — the instances
//! the list's rules book there (rule, severity), each with its cell in the pass's
//! accumulator. A trigger whose key was met before books those again without trying a rule:
//! the same values into the same cells in event order, as trying the rules would.

use crate::analysis::cube::Instance;
use crate::analysis::eval::Ctx;
use crate::analysis::fire::Engine;
use crate::analysis::plan::{KindRule, MemoSpec, MAX_INPUTS};
use crate::rules::compile::Value;
use std::collections::HashMap;

/// How many keys a walk keeps; a trigger with a new key beyond that tries its rules.
const MAX_KEYS: usize = 1 << 14;

/// After how many new keys a walk whose keys are mostly new (more than `MOSTLY` per key met
/// again) stops computing keys: its inputs differ from trigger to trigger (a time).
const TRIAL: u32 = 512;
const MOSTLY: u32 = 4;

/// A key: kind and region (`location::kind_region`), call path with the inputs' tags (4
/// bits each) above it, their bits (unused words 0).
type Key = [u64; 2 + MAX_INPUTS];

/// A key no trigger has (its first word no `kind_region`): `Memo::last` before the first.
const NO_KEY: Key = [1 << 63; 2 + MAX_INPUTS];

/// Triggers whose key was met before (`try_memo`).
#[cfg(test)]
pub(crate) static HITS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What the list's rules book on a key: (rule, severity, index + 1 of its cell in the
/// pass's accumulator, 0 without one, the time of the trigger whose instance the cell's
/// worst instances refused, `NOT_REFUSED` before).
type Books = Vec<(usize, f64, u32, u64)>;

/// A key's bookings, and whether each has its cell (`own`: the pass accumulates, and the
/// instances are at the trigger on the walk's own location), so a trigger with the key adds
/// them to their cells without asking again.
struct Entry {
    own: bool,
    books: Books,
}

/// A booking whose instance no cell refused yet (a refusal at this time is not kept: those
/// instances are offered as before).
const NOT_REFUSED: u64 = u64::MAX;

pub(crate) struct Memo {
    map: HashMap<Key, u32>,
    entries: Vec<Entry>,
    /// The last key met and its entry (`NO_KEY` before the first).
    last: (Key, u32),
    /// Keys met again, new keys; `off`: the rules are tried on every trigger.
    hits: u32,
    misses: u32,
    off: bool,
}

impl Default for Memo {
    fn default() -> Self {
        Memo {
            map: HashMap::new(),
            entries: Vec::new(),
            last: (NO_KEY, 0),
            hits: 0,
            misses: 0,
            off: false,
        }
    }
}

/// Whether two keys are equal (every word compared, no early exit).
#[inline(always)]
fn same(a: &Key, b: &Key) -> bool {
    a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

impl Memo {
    /// The entry of `key`.
    #[inline(always)]
    fn find(&mut self, key: &Key) -> Option<usize> {
        if same(&self.last.0, key) {
            return Some(self.last.1 as usize);
        }
        let e = *self.map.get(key)?;
        self.last = (*key, e);
        Some(e as usize)
    }

    fn insert(&mut self, key: Key, books: Books) {
        self.misses += 1;
        if self.misses >= TRIAL && self.misses > MOSTLY * self.hits {
            self.off = true;
        }
        if self.entries.len() >= MAX_KEYS || self.off {
            return;
        }
        let e = self.entries.len() as u32;
        self.map.insert(key, e);
        let own = books.iter().all(|b| b.2 != 0);
        self.entries.push(Entry { own, books });
        self.last = (key, e);
    }
}

/// The trigger event (event `i` of the walk's location `here`, its kind and call region
/// `word`, `location::kind_region`) of the list `rules_here` (indices into `folded`) with spec `spec`, its bindings in `env`:
/// what the list's rules book there, from the memo when the key was met before, else by
/// trying them (`Engine::plain_sev`, as `fire_plain` does) and kept.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn try_memo(
    eng: &Engine,
    folded: &[KindRule],
    spec: &MemoSpec,
    rules_here: &[usize],
    (env, pass): (&mut [Value], &mut super::location::LocPass),
    (ctx, memo): (&Ctx, &mut Memo),
    here: &super::location::Here,
    (word, i): (u64, u32),
) {
    // an event outside any call: every instance at it is dropped
    let l = here.l;
    let Some((cnode, time)) = here.at_of(i, pass) else {
        return;
    };
    let at = (l, i, cnode, time);
    if memo.off {
        // the rules tried as they are, from fresh shared values
        ctx.shared.iter().for_each(|c| c.set(None));
        try_plain(eng, folded, rules_here, (env, pass), ctx, at, None);
        return;
    }
    if spec.shared {
        ctx.shared.iter().for_each(|c| c.set(None));
    }
    let mut key: Key = [0; 2 + MAX_INPUTS];
    key[0] = word;
    key[1] = cnode as u64;
    for (n, c) in spec.inputs.iter().enumerate() {
        let (tag, bits) = c.bits_at(ctx, env, (here.ev, l, i));
        key[1] |= tag << (32 + 4 * n);
        key[2 + n] = bits;
    }
    if let Some(e) = memo.find(&key) {
        memo.hits += 1;
        #[cfg(test)]
        HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let entry = &mut memo.entries[e];
        match &mut pass.acc {
            Some(acc) if entry.own => {
                for b in entry.books.iter_mut() {
                    let (_, sev, cell, refused) = *b;
                    let c = &mut acc.cells[cell as usize - 1];
                    let x = Instance {
                        loc: l,
                        event: i,
                        time,
                        value: sev,
                    };
                    // the cell's own location's triggers come in event order: one of the
                    // same value at no earlier time than a refused one is refused too
                    if time >= refused && refused != NOT_REFUSED {
                        c.add_refused(x);
                    } else if !c.add_kept(x) {
                        b.3 = time;
                    }
                }
            }
            _ => {
                for &(k, sev, ..) in entry.books.iter() {
                    eng.book(k, at, sev, false, pass);
                }
            }
        }
        return;
    }
    try_new(eng, folded, rules_here, (env, pass), ctx, memo, (key, at));
}

/// `try_memo` on a key not met before (`key`, at trigger `at`): the rules tried as they
/// are, from fresh shared values, and what they book kept.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn try_new(
    eng: &Engine,
    folded: &[KindRule],
    rules_here: &[usize],
    (env, pass): (&mut [Value], &mut super::location::LocPass),
    ctx: &Ctx,
    memo: &mut Memo,
    (key, at): (Key, (u32, u32, u32, u64)),
) {
    ctx.shared.iter().for_each(|c| c.set(None));
    let mut books = Books::new();
    try_plain(
        eng,
        folded,
        rules_here,
        (env, pass),
        ctx,
        at,
        Some(&mut books),
    );
    memo.insert(key, books);
}

/// The rules `rules_here` of a memoised list tried on the trigger event `at` (location,
/// event, call path, time) as `fire_plain` tries them, their instances booked, and
/// listed in `books` if given.
fn try_plain(
    eng: &Engine,
    folded: &[KindRule],
    rules_here: &[usize],
    (env, pass): (&mut [Value], &mut super::location::LocPass),
    ctx: &Ctx,
    at: (u32, u32, u32, u64),
    mut books: Option<&mut Books>,
) {
    for &j in rules_here {
        let r = &folded[j];
        let Some((code, _)) = &r.code else { continue };
        let env = &mut env[..r.slots];
        let at2 = (env, &mut pass.first[r.rule]);
        if let Some(sev) = eng.plain_sev(code, code.when.as_ref(), at2, ctx) {
            eng.book(r.rule, at, sev, false, pass);
            if let Some(b) = books.as_deref_mut() {
                let cell = (pass.acc.as_ref()).and_then(|a| a.index_of(r.rule, at.2));
                b.push((r.rule, sev, cell.map_or(0, |c| c as u32 + 1), NOT_REFUSED));
            }
        }
    }
}
