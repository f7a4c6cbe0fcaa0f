//! The bytes of an OTF2 archive (formats.md §A) as the official writer (libotf2 3.2) lays
//! them out: compressed integers, chunked record streams with libotf2's chunking rule,
//! the anchor file and an empty local definition file. Shared by `convert --to otf2` and
//! `examples/gen_pingpong` (whose archives equal the official writer's byte for byte).
//!
//! * A record length takes the long form (0xff + u64) exactly when the payload is 255
//!   bytes or more.
//! * libotf2 starts a new chunk when `upper bound of the record + 9` (a timestamp) is not
//!   smaller than the bytes left in the chunk; the chunk header holds the numbers of its
//!   first and last event.
//! * A timestamp item precedes the first event of a file, of a chunk, and every event whose
//!   time differs from the previous one.

use std::io::{self, Write};

/// libotf2's default chunk sizes (Score-P's too).
pub const EVENT_CHUNK: usize = 1 << 20;
pub const DEF_CHUNK: usize = 4 << 20;
/// Bytes of a timestamp item (type byte + u64).
pub const TIMESTAMP: usize = 9;
/// `OTF2_UNDEFINED_UINT32`: an absent reference.
pub const UNDEFINED: u32 = u32::MAX;

/// Compressed unsigned integer (formats.md A.4), minimal size, 0 and all-ones as one byte.
fn uc(out: &mut Vec<u8>, v: u64, all_ones: u64) {
    if v == 0 || v == all_ones {
        out.push(v as u8);
        return;
    }
    let n = 8 - (v.leading_zeros() / 8) as usize;
    out.push(n as u8);
    out.extend_from_slice(&v.to_le_bytes()[..n]);
}

/// A compressed u32 (`OTF2_UNDEFINED_UINT32` as the one byte 0xff).
pub fn u32c(out: &mut Vec<u8>, v: u32) {
    uc(out, v as u64, u32::MAX as u64);
}

/// A compressed u64 (also int64 values, by their bits).
pub fn u64c(out: &mut Vec<u8>, v: u64) {
    uc(out, v, u64::MAX);
}

/// A NUL-terminated string.
pub fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

/// A chunked record stream (formats.md A.3) that writes each chunk as soon as it is full.
pub struct Stream<W: Write> {
    out: W,
    chunk: Vec<u8>,
    size: usize,
    /// Events written so far (the chunk header's numbers are 1-based event numbers).
    pub events: u64,
    first_in_chunk: u64,
    time: u64,
    /// The next event needs a timestamp whatever its time (first of a file or a chunk).
    stamp_next: bool,
}

impl<W: Write> Stream<W> {
    pub fn new(out: W, size: usize) -> Stream<W> {
        let mut s = Stream {
            out,
            chunk: Vec::with_capacity(size),
            size,
            events: 0,
            first_in_chunk: 1,
            time: 0,
            stamp_next: true,
        };
        s.header();
        s
    }

    fn header(&mut self) {
        self.chunk.clear();
        self.chunk.extend_from_slice(&[0x03, 0x42]);
        self.chunk
            .extend_from_slice(&self.first_in_chunk.to_le_bytes());
        self.chunk.extend_from_slice(&[0; 8]); // last event: filled when the chunk is done
    }

    fn last_event(&self) -> u64 {
        if self.events >= self.first_in_chunk {
            self.events
        } else {
            0
        }
    }

    /// Ends the chunk (END_OF_CHUNK, zero padding), writes it and opens the next one.
    fn next_chunk(&mut self) -> io::Result<()> {
        let last = self.last_event();
        self.chunk[10..18].copy_from_slice(&last.to_le_bytes());
        self.chunk.resize(self.size, 0); // END_OF_CHUNK is the first of the zeros
        self.out.write_all(&self.chunk)?;
        self.first_in_chunk = self.events + 1;
        self.stamp_next = true;
        self.header();
        Ok(())
    }

    /// Makes room for a record of at most `bound` bytes (plus a timestamp in event files),
    /// keeping one byte for END_OF_CHUNK, as libotf2 does.
    fn reserve(&mut self, bound: usize) -> io::Result<()> {
        if bound >= self.size - self.chunk.len() {
            self.next_chunk()?;
            if bound >= self.size - self.chunk.len() {
                return Err(io::Error::other(format!(
                    "a record of {bound} bytes does not fit in one chunk of {} bytes",
                    self.size
                )));
            }
        }
        Ok(())
    }

    /// One event: its timestamp item (when needed) and its record bytes; `bound` is the
    /// most bytes the record may take (libotf2 reserves each record kind's upper bound).
    pub fn event(&mut self, t: u64, bound: usize, record: &[u8]) -> io::Result<()> {
        self.reserve(bound + TIMESTAMP)?;
        if self.stamp_next || t != self.time {
            self.chunk.push(0x05);
            self.chunk.extend_from_slice(&t.to_le_bytes());
            self.time = t;
            self.stamp_next = false;
        }
        self.chunk.extend_from_slice(record);
        self.events += 1;
        Ok(())
    }

    /// One definition record: type, length (short or long form), payload.
    pub fn def(&mut self, ty: u8, payload: &[u8]) -> io::Result<()> {
        let long = payload.len() >= 255;
        self.reserve(1 + if long { 9 } else { 1 } + payload.len())?;
        self.chunk.push(ty);
        if long {
            self.chunk.push(0xff);
            self.chunk
                .extend_from_slice(&(payload.len() as u64).to_le_bytes());
        } else {
            self.chunk.push(payload.len() as u8);
        }
        self.chunk.extend_from_slice(payload);
        Ok(())
    }

    /// END_OF_FILE, END_OF_BUFFER; the last chunk is cut after them.
    pub fn finish(mut self) -> io::Result<W> {
        let last = self.last_event();
        self.chunk[10..18].copy_from_slice(&last.to_le_bytes());
        self.chunk.extend_from_slice(&[0x02, 0x01]);
        self.out.write_all(&self.chunk)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A length-prefixed record (type, length, payload) into `out` (cleared first).
pub fn length_prefixed(out: &mut Vec<u8>, ty: u8, payload: &[u8]) {
    out.clear();
    out.push(ty);
    if payload.len() >= 255 {
        out.push(0xff);
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    } else {
        out.push(payload.len() as u8);
    }
    out.extend_from_slice(payload);
}

/// What the anchor file says besides the chunk sizes.
#[derive(Clone, Debug, Default)]
pub struct AnchorInfo {
    pub locations: u64,
    pub global_definitions: u64,
    pub machine: String,
    pub creator: String,
    pub description: String,
    pub properties: Vec<(String, String)>,
    pub trace_id: u64,
}

/// The anchor file `traces.otf2` (formats.md A.2): OTF2 3.2.0, anchor format 3, POSIX, no
/// compression, no snapshots or thumbnails.
pub fn anchor(a: &AnchorInfo) -> Vec<u8> {
    let mut b = vec![0x03, 0x42];
    b.extend_from_slice(b"OTF2\0");
    b.extend_from_slice(&[3, 2, 3, 2, 0]);
    b.extend_from_slice(&(EVENT_CHUNK as u64).to_le_bytes());
    b.extend_from_slice(&(DEF_CHUNK as u64).to_le_bytes());
    b.extend_from_slice(&[1, 1]);
    b.extend_from_slice(&a.locations.to_le_bytes());
    b.extend_from_slice(&a.global_definitions.to_le_bytes());
    for s in [&a.machine, &a.creator, &a.description] {
        string(&mut b, s);
    }
    b.extend_from_slice(&(a.properties.len() as u32).to_le_bytes());
    for (k, v) in &a.properties {
        string(&mut b, k);
        string(&mut b, v);
    }
    b.extend_from_slice(&a.trace_id.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // snapshots
    b.extend_from_slice(&0u32.to_le_bytes()); // thumbnails
                                              // END_OF_FILE, END_OF_BUFFER and one more zero byte, as the official writer leaves them
    b.extend_from_slice(&[0x02, 0x01, 0x00]);
    b
}

/// A local definition file without records (no mapping tables, no clock offsets).
pub fn empty_local_defs() -> Vec<u8> {
    let mut d = vec![0x03, 0x42];
    d.extend_from_slice(&1u64.to_le_bytes());
    d.extend_from_slice(&0u64.to_le_bytes());
    d.extend_from_slice(&[0x02, 0x01]);
    d
}
