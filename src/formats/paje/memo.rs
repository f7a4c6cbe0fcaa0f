//! What the binary Paje read has already resolved: (what, name) → index, for the names of
//! the frequent events (state and link events: their type, containers and state value), so
//! that each distinct short name goes through the symbol tables once per definition
//! generation instead of once per event. Direct-mapped, no allocation per event; `clear` is
//! O(1) (a generation counter) and is called whenever a definition, a container or an entity
//! value could change what a name resolves to.

use super::header::Kind;
use super::sim::Code;

/// Slots: 2^this.
const BITS: u32 = 12;

#[derive(Clone, Copy, Default)]
struct Slot {
    key: u64,
    tag: u32,
    generation: u32,
    val: u32,
}

/// The memo, keyed by `key` of the name. Tags say what a name was resolved as (`TYPE +
/// nature`, `CONTAINER`, `VALUE + state type`); names longer than 7 bytes are not remembered.
pub(super) struct Memo {
    slots: Vec<Slot>,
    generation: u32,
}

/// The key of a name longer than 7 bytes: never stored, never found.
pub(super) const NO_KEY: u64 = u64::MAX;

/// A name packed into one word with its length in the top byte (`NO_KEY` if longer than 7
/// bytes): the little-endian word of its bytes, so the binary decoder makes the same key from
/// the word its NUL search loaded (`key_of_word`).
#[inline(always)]
pub(super) fn key(s: &[u8]) -> u64 {
    if s.len() > 7 {
        return NO_KEY;
    }
    // byte by byte: a copy of a length only known at run time would call memcpy
    let mut k = (s.len() as u64) << 56;
    for (i, &b) in s.iter().enumerate() {
        k |= (b as u64) << (8 * i);
    }
    k
}

/// `key` of the first `n` bytes (n < 8) of the little-endian word `w`.
#[inline(always)]
pub(super) fn key_of_word(w: u64, n: usize) -> u64 {
    (w & ((1u64 << (8 * n)) - 1)) | (n as u64) << 56
}

/// Tag of a type of the given nature (`TYPE + nature as u32`).
pub(super) const TYPE: u32 = 1;
/// Tag of a container.
pub(super) const CONTAINER: u32 = 8;
/// Tag of the region of a state value of state type `ty` (`VALUE + ty`).
pub(super) const VALUE: u32 = 16;

impl Memo {
    pub fn new() -> Memo {
        Memo {
            slots: vec![Slot::default(); 1 << BITS],
            // slots of generation 0 are never valid
            generation: 1,
        }
    }

    /// Changes with every `clear`.
    #[inline(always)]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Forget everything.
    #[inline]
    pub fn clear(&mut self) {
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            self.slots.fill(Slot::default());
            self.generation = 1;
        }
    }

    #[inline(always)]
    fn slot(key: u64, tag: u32) -> usize {
        ((key ^ (tag as u64).rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - BITS))
            as usize
    }

    #[inline(always)]
    pub fn get(&self, tag: u32, key: u64) -> Option<u32> {
        let x = &self.slots[Self::slot(key, tag)];
        (x.key == key && x.tag == tag && x.generation == self.generation).then_some(x.val)
    }

    #[inline]
    pub fn put(&mut self, tag: u32, key: u64, val: u32) {
        if key != NO_KEY {
            let generation = self.generation;
            self.slots[Self::slot(key, tag)] = Slot {
                key,
                tag,
                generation,
                val,
            };
        }
    }
}

/// Slots of `Recent`: 2^this.
const RECENT_BITS: u32 = 12;

/// Slots of `States`: 2^this.
const STATE_BITS: u32 = 12;

/// A state event of the binary read as resolved before (`States`): one cache line.
#[derive(Clone, Copy)]
#[repr(align(64))]
pub(super) struct Known {
    /// The bytes after the time up to the event's end (the rest zero) and the mask of those
    /// bytes: an event is this one when its bytes under `m` are `w`.
    w: [u64; 2],
    m: [u64; 2],
    /// `stamp` of when it was true (0: never).
    stamp: u64,
    /// The header word.
    head: u32,
    /// The length of the items after the time.
    pub len: u32,
    /// What the resolver made of it: the op (`Batch::push` but the time) and the kind.
    pub code: Code,
    pub kind: Kind,
    pub ty: u32,
    pub c: u32,
    pub x: u32,
}

const EMPTY: Known = Known {
    w: [0; 2],
    m: [0; 2],
    stamp: 0,
    head: 0,
    len: 0,
    code: Code::Err,
    kind: Kind::PopState,
    ty: 0,
    c: 0,
    x: 0,
};

/// When a `States` entry is true: the decoder's `epoch` (definitions, the string table) and
/// the memo's generation (symbols); never 0 (a generation is never 0).
#[inline(always)]
pub(super) fn stamp(epoch: u32, generation: u32) -> u64 {
    (epoch as u64) << 32 | generation as u64
}

/// State events of the binary read by their bytes: a state event of one header word holds
/// its time and then names only (strings, or references in the reference variant), so two
/// such events whose bytes after the time are equal are the same event at another time, as
/// long as the `stamp` has not changed. Most events of a large trace repeat a few hundred
/// such tails; one probe here replaces decoding and resolving them. Direct-mapped by the
/// header word and the bytes every event of its shape has (`min_mask`).
pub(super) struct States {
    slots: Box<[Known; 1 << STATE_BITS]>,
}

impl States {
    pub fn new() -> States {
        States {
            // built on the heap (a debug build would put the array on the stack first)
            slots: match vec![EMPTY; 1 << STATE_BITS].into_boxed_slice().try_into() {
                Ok(slots) => slots,
                Err(_) => unreachable!("a vector of the array's length"),
            },
        }
    }

    #[inline(always)]
    fn slot(w0: u32, w: [u64; 2]) -> usize {
        ((w[0] ^ w[1].rotate_left(17) ^ (w0 as u64).rotate_left(40))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - STATE_BITS)) as usize
    }

    /// The event whose header word is `w0` and whose 16 bytes after the time are `w`, if
    /// seen before at the same `stamp`. The slot is chosen by the bytes every such event has
    /// (`min_mask`); an entry matches when the bytes up to its own length are its bytes, as
    /// then `tail_len` of `w` is that length too (it reads no byte after it) and the event
    /// is the same.
    #[inline(always)]
    pub fn get(&self, w0: u32, w: [u64; 2], stamp: u64) -> Option<&Known> {
        let m = min_mask(w0)?;
        let k = &self.slots[Self::slot(w0, [w[0] & m[0], w[1] & m[1]])];
        let differ = ((w[0] & k.m[0]) ^ k.w[0])
            | ((w[1] & k.m[1]) ^ k.w[1])
            | (k.stamp ^ stamp)
            | (k.head ^ w0) as u64;
        (differ == 0).then_some(k)
    }

    /// Remember the event with header word `w0` whose 16 bytes after the time are `w` (its
    /// items there `len` bytes long), resolved to `op` (code, kind, type, container, x) at
    /// `stamp`.
    pub fn put(
        &mut self,
        w0: u32,
        w: [u64; 2],
        len: usize,
        stamp: u64,
        op: (Code, Kind, u32, u32, u32),
    ) {
        let Some(min) = min_mask(w0) else { return };
        if tail_len(w0, w) != Some(len) {
            return;
        }
        let (code, kind, ty, c, x) = op;
        let m = masked([u64::MAX; 2], len);
        self.slots[Self::slot(w0, [w[0] & min[0], w[1] & min[1]])] = Known {
            w: [w[0] & m[0], w[1] & m[1]],
            m,
            stamp,
            head: w0,
            len: len as u32,
            code,
            kind,
            ty,
            c,
            x,
        };
    }
}

/// The mask of the bytes after the time that every event of header word `w0` has (a length
/// `tail_len` never goes below: 4 bytes a string, as a string and its padding fill at least
/// one 4-byte group, the exact length for references only), None where `tail_len` is always
/// None.
#[inline(always)]
fn min_mask(w0: u32) -> Option<[u64; 2]> {
    if w0 & 0x2_f000 != 0x2_2000 {
        return None;
    }
    match w0 & 0xfff {
        0x000 => None,
        0x110 | 0x555 => Some([u64::MAX, 0]),
        0x111 => Some([u64::MAX, 0xffff_ffff]),
        _ => Some([0xffff_ffff, 0]),
    }
}

/// A link event of the binary read whose names before its key were resolved before
/// (`Recent`).
#[derive(Clone, Copy)]
pub(super) struct Seen {
    /// The header words as one word (`LinkPeek::head`) and the bytes after the time (up to
    /// 16 of them, the rest of the two words zero), and when it was true.
    head: u64,
    w: [u64; 2],
    /// The length of the prefix after the time.
    len: u8,
    epoch: u32,
    generation: u32,
    /// What the resolver made of it: the op (`Batch::push` but the time) and the kind.
    pub code: Code,
    pub kind: Kind,
    pub ty: u32,
    pub c: u32,
    pub x: u32,
}

/// Link events of the binary read by the bytes of their names before the key (a plan's
/// prefix, `binary::LinkPeek`), as `States` holds the state events: the same names at
/// another time, as long as the decoder's `epoch` and the memo's generation have not
/// changed. Direct-mapped by the header words and the prefix's least bytes.
pub(super) struct Recent {
    slots: Vec<Option<Seen>>,
}

/// How long the items after the time of an event with header word `w0` are, read from the
/// 16 bytes `w` after the time, as the decoder would decode them (a string up to its NUL,
/// then padding to 4 bytes; a reference 2 bytes; the end padded to 4): None unless `w0` is
/// one header word whose first item is a double and whose others are strings or references,
/// all within `w`. It depends on no byte from the length it gives on (`States::get`).
#[inline]
pub(super) fn tail_len(w0: u32, w: [u64; 2]) -> Option<usize> {
    if w0 & 0x2_f000 != 0x2_2000 {
        return None;
    }
    let z = (zero(w[1]) as u128) << 64 | zero(w[0]) as u128;
    let mut pos = 0usize;
    for i in (0..3).rev() {
        match (w0 >> (4 * i)) & 0xf {
            0 => break,
            1 => {
                let rest = z.checked_shr(8 * pos as u32).unwrap_or(0);
                if rest == 0 {
                    return None;
                }
                pos = (pos + rest.trailing_zeros() as usize / 8 + 1 + 3) & !3;
            }
            5 => pos += 2,
            _ => return None,
        }
    }
    let len = (pos + 3) & !3;
    (1..=16).contains(&len).then_some(len)
}

/// The high bit of every zero byte of `v`, exactly (no borrow from one byte into the next).
#[inline(always)]
fn zero(v: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((v & LOW7) + LOW7) | v | LOW7)
}

/// `w` with the bytes from `len` on zero (`len` up to 16).
#[inline(always)]
fn masked(w: [u64; 2], len: usize) -> [u64; 2] {
    const fn low(k: usize) -> u64 {
        if k >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * k)) - 1
        }
    }
    const M: [[u64; 2]; 17] = {
        let mut m = [[u64::MAX; 2]; 17];
        let mut n = 0;
        while n < 16 {
            m[n] = [low(n), if n > 8 { low(n - 8) } else { 0 }];
            n += 1;
        }
        m
    };
    let m = M[len.min(16)];
    [w[0] & m[0], w[1] & m[1]]
}

impl Recent {
    pub fn new() -> Recent {
        Recent {
            slots: vec![None; 1 << RECENT_BITS],
        }
    }

    #[inline(always)]
    fn slot(head: u64, w: [u64; 2]) -> usize {
        ((w[0] ^ w[1].rotate_left(17) ^ head.rotate_left(40)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            >> (64 - RECENT_BITS)) as usize
    }

    /// The event whose header word(s) are `head` and whose 16 bytes after the time are `w`,
    /// if seen before with the same `epoch` and `generation`; with its length after the time.
    /// The slot is chosen by the least length `min` of the bytes that decide (a link event's
    /// prefix, `binary::LinkPeek`); an entry matches when the bytes up to its own length are
    /// its bytes.
    #[inline(always)]
    pub fn find(
        &self,
        head: u64,
        w: [u64; 2],
        min: usize,
        epoch: u32,
        generation: u32,
    ) -> Option<(&Seen, usize)> {
        let s = self.slots[Self::slot(head, masked(w, min))].as_ref()?;
        let len = s.len as usize;
        (s.head == head && s.w == masked(w, len) && s.epoch == epoch && s.generation == generation)
            .then_some((s, len))
    }

    /// Remember the event with header word(s) `head` whose 16 bytes after the time are `w`,
    /// resolved to `op` (code, kind, type, container, x), by least length `min` (`find`): the
    /// bytes up to `len` of `w` decide the event (the decoder read no byte after them for it).
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        head: u64,
        w: [u64; 2],
        min: usize,
        len: usize,
        epoch: u32,
        generation: u32,
        op: (Code, Kind, u32, u32, u32),
    ) {
        if len < min || len > 16 {
            return;
        }
        let (code, kind, ty, c, x) = op;
        self.slots[Self::slot(head, masked(w, min))] = Some(Seen {
            head,
            w: masked(w, len),
            len: len as u8,
            epoch,
            generation,
            code,
            kind,
            ty,
            c,
            x,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `b` as the two words after an event's time, the rest of them 0xa5 bytes.
    fn words(b: &[u8]) -> [u64; 2] {
        let mut a = [0xa5u8; 16];
        a[..b.len()].copy_from_slice(b);
        [
            u64::from_le_bytes(a[..8].try_into().unwrap()),
            u64::from_le_bytes(a[8..].try_into().unwrap()),
        ]
    }

    #[test]
    fn remembers_until_cleared() {
        let mut m = Memo::new();
        assert_eq!(m.get(CONTAINER, key(b"31")), None);
        m.put(CONTAINER, key(b"31"), 7);
        m.put(TYPE + 1, key(b"31"), 9);
        assert_eq!(m.get(CONTAINER, key(b"31")), Some(7));
        assert_eq!(m.get(TYPE + 1, key(b"31")), Some(9));
        assert_eq!(m.get(CONTAINER, key(b"3")), None);
        // long names are not remembered
        m.put(CONTAINER, key(b"rank-12345"), 1);
        assert_eq!(m.get(CONTAINER, key(b"rank-12345")), None);
        m.clear();
        assert_eq!(m.get(CONTAINER, key(b"31")), None);
    }

    #[test]
    fn tail_lengths() {
        // PushState d s s s: "41", "2", "7" (stale padding bytes count for nothing)
        let w = words(b"41\0\x012\0\0\0\x37\0\xff\0");
        assert_eq!(tail_len(0x002a_2111, w), Some(12));
        // PopState d s s: "41", "2"
        assert_eq!(tail_len(0x002e_2110, w), Some(8));
        // a string of 7 bytes then one of 3
        let w = words(b"rank-12\0abc\0");
        assert_eq!(tail_len(0x002e_2110, w), Some(12));
        // references: two (4 bytes), three (6, padded to 8)
        assert_eq!(tail_len(0x002e_2550, w), Some(4));
        assert_eq!(tail_len(0x002a_2555, w), Some(8));
        // a string without its NUL in the 16 bytes; no LAST bit; no time; time not first
        assert_eq!(tail_len(0x002e_2110, words(b"0123456789abcdef")), None);
        assert_eq!(tail_len(0x002c_2110, w), None);
        assert_eq!(tail_len(0x002e_0110, w), None);
        assert_eq!(tail_len(0x002e_1210, w), None);
        let w = words(b"41\0\x012\0\0\0\x37\0\xff\0");
        assert_eq!(masked(w, 12)[1], 0x00ff_0037);
        assert_eq!(masked(w, 8)[1], 0);
    }

    #[test]
    fn minimum_lengths_bound_the_lengths() {
        // every string-only and reference-only shape over bytes with zeros in all places
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // a zero byte where two bits of `x` are clear, else a nonzero one
            let mut b = [0u8; 16];
            for (i, c) in b.iter_mut().enumerate() {
                if (x >> (2 * i)) & 3 != 0 {
                    *c = (x >> (i * 3 % 56)) as u8 | 1;
                }
            }
            let w = words(&b);
            for low in [0x100, 0x110, 0x111, 0x500, 0x550, 0x555, 0x151, 0x000] {
                let w0 = 0x002a_2000 | low;
                match tail_len(w0, w) {
                    Some(len) => {
                        // the bytes that choose the slot are the tail's
                        let min =
                            min_mask(w0).map(|m| m.map(|v| v.count_ones()).iter().sum::<u32>() / 8);
                        assert!(min.is_some_and(|m| m as usize <= len), "{w0:#x} {w:x?}");
                        assert_eq!(min_mask(w0), min.map(|m| masked([u64::MAX; 2], m as usize)));
                        let m: Vec<u8> = masked(w, len)
                            .iter()
                            .flat_map(|v| v.to_le_bytes())
                            .collect();
                        assert_eq!(&m[..len], &b[..len]);
                        assert!(m[len..].iter().all(|&c| c == 0));
                        // the bytes from the length on do not change it
                        assert_eq!(tail_len(w0, masked(w, len)), Some(len));
                    }
                    None => assert!(low != 0x500 && low != 0x550 && low != 0x555),
                }
            }
        }
    }

    #[test]
    fn states_find_an_event_by_its_own_bytes() {
        let mut r = States::new();
        let w0 = 0x002a_2111;
        let op = (Code::PushState, Kind::PushState, 1, 2, 3);
        let (st, other) = (stamp(1, 1), stamp(2, 1));
        r.put(w0, words(b"2\0\0\0rank-12\0MPI\0"), 16, st, op);
        let hit = |r: &States, b: &[u8]| r.get(w0, words(b), st).map(|s| (s.x, s.len));
        assert_eq!(hit(&r, b"2\0\0\0rank-12\0MPI\0"), Some((3, 16)));
        assert_eq!(hit(&r, b"2\0\0\0rank-12\0MPX\0"), None);
        assert_eq!(hit(&r, b"2\0\0\0rank-13\0MPI\0"), None);
        assert!(r.get(w0, words(b"2\0\0\0rank-12\0MPI\0"), other).is_none());
        assert!(r
            .get(w0 ^ 0x0004_0000, words(b"2\0\0\0rank-12\0MPI\0"), st)
            .is_none());
        // a short tail: the bytes after it do not count
        r.put(w0, words(b"2\0\0\0\x33\0\0\0\x37\0\0\0"), 12, st, op);
        assert_eq!(
            hit(&r, b"2\0\0\0\x33\0\0\0\x37\0\0\0\x11\x22\x33\x44"),
            Some((3, 12))
        );
        // a length that is not the tail's is not stored; nothing is found before a put
        r.put(w0, words(b"4\0\0\0\x33\0\0\0\x37\0\0\0"), 16, st, op);
        assert_eq!(hit(&r, b"4\0\0\0\x33\0\0\0\x37\0\0\0"), None);
        assert!(States::new().get(w0, [0; 2], st).is_none());
    }

    #[test]
    fn recent_finds_an_event_by_its_own_bytes() {
        let mut r = Recent::new();
        let head = 0x0000_2111_0049_2555;
        let op = (Code::StartLink, Kind::StartLink, 1, 2, 3);
        r.store(head, words(b"\x01\0\x02\0\x03\0\0\0"), 8, 8, 1, 1, op);
        let hit = |r: &Recent, b: &[u8]| r.find(head, words(b), 8, 1, 1).map(|(s, len)| (s.x, len));
        assert_eq!(hit(&r, b"\x01\0\x02\0\x03\0\0\0\xff"), Some((3, 8)));
        assert_eq!(hit(&r, b"\x01\0\x02\0\x04\0\0\0"), None);
        assert_eq!(
            r.find(head, words(b"\x01\0\x02\0\x03\0\0\0"), 8, 2, 1)
                .map(|x| x.1),
            None
        );
    }

    #[test]
    fn word_keys_are_name_keys() {
        for s in [&b""[..], b"1", b"31", b"MPI_Rec", b"abcdefg"] {
            let mut w = [0xa5u8; 8];
            w[..s.len()].copy_from_slice(s);
            w[s.len()] = 0;
            assert_eq!(key_of_word(u64::from_le_bytes(w), s.len()), key(s));
        }
        assert_eq!(key(b"abcdefgh"), NO_KEY);
    }
}
