//! What the binary Paje read has already resolved: (what, name) → index, for the names of
//! the frequent events (state and link events: their type, containers and state value), so
//! that each distinct short name goes through the symbol tables once per definition
//! generation instead of once per event. Direct-mapped, no allocation per event; `clear` is
//! O(1) (a generation counter) and is called whenever a definition, a container or an entity
//! value could change what a name resolves to.

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

#[cfg(test)]
mod tests {
    use super::*;

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
