//! OTF2 primitive encodings (formats.md A.4), record framing (A.7) and the chunked
//! file structure (A.3). Everything works over borrowed bytes; errors carry the offset.

/// An OTF2 library version (major, minor), compared against a field's `since`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u8,
    pub minor: u8,
}

impl Version {
    pub const fn new(major: u8, minor: u8) -> Version {
        Version { major, minor }
    }
}

/// How one field is encoded on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    U8,
    U32c,
    U64c,
    I64c,
    U64f,
    F64,
    Str,
    /// Encoded according to an `OTF2_Type` in another field (A.6).
    AttrValue,
    /// A u64c carrying the raw bits of a metric value (A.4).
    MetricValue,
    /// A mapping table's id map (A.8).
    IdMap,
}

/// The kinds of local-to-global mapping tables (`OTF2_MappingType`, A.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum MappingType {
    String = 0,
    Attribute = 1,
    Location = 2,
    Region = 3,
    Group = 4,
    Metric = 5,
    Comm = 6,
    Parameter = 7,
    RmaWin = 8,
    SourceCodeLocation = 9,
    CallingContext = 10,
    InterruptGenerator = 11,
    IoFile = 12,
    IoHandle = 13,
    LocationGroup = 14,
}

impl MappingType {
    pub const COUNT: usize = 15;

    pub fn from_u8(v: u8) -> Option<MappingType> {
        use MappingType::*;
        Some(match v {
            0 => String,
            1 => Attribute,
            2 => Location,
            3 => Region,
            4 => Group,
            5 => Metric,
            6 => Comm,
            7 => Parameter,
            8 => RmaWin,
            9 => SourceCodeLocation,
            10 => CallingContext,
            11 => InterruptGenerator,
            12 => IoFile,
            13 => IoHandle,
            14 => LocationGroup,
            _ => return None,
        })
    }

    /// The mapping table that translates a reference of the given `OTF2_Type`
    /// (attribute values, A.6), if that type is a reference.
    pub fn of_type(ty: u8) -> Option<MappingType> {
        use MappingType::*;
        Some(match ty {
            11 => String,
            12 => Attribute,
            13 => Location,
            14 => Region,
            15 => Group,
            16 => Metric,
            17 => Comm,
            18 => Parameter,
            19 => RmaWin,
            20 => SourceCodeLocation,
            21 => CallingContext,
            22 => InterruptGenerator,
            23 => IoFile,
            24 => IoHandle,
            25 => LocationGroup,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug)]
pub struct FieldSpec {
    pub name: &'static str,
    pub wire: Wire,
    pub since: Version,
    /// Index of the field that holds this array's element count.
    pub count_field: Option<usize>,
    /// Index of the field (or array) whose `OTF2_Type` selects this value's encoding.
    pub type_field: Option<usize>,
    /// The mapping table that translates this local id (event records only).
    pub mapped_by: Option<MappingType>,
}

#[derive(Clone, Copy, Debug)]
pub struct RecordSpec {
    pub name: &'static str,
    pub id: u8,
    pub since: Version,
    pub length_prefixed: bool,
    pub fields: &'static [FieldSpec],
}

/// A decoding failure at a byte offset relative to the start of the bytes decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub offset: usize,
    pub what: String,
}

pub type DResult<T> = Result<T, DecodeError>;

pub fn derr<T>(offset: usize, what: impl Into<String>) -> DResult<T> {
    Err(DecodeError {
        offset,
        what: what.into(),
    })
}

/// A position in a byte slice with the byte order of the file. Reads stop at `end` (the end
/// of a record or chunk); `buf` may go further, so that the compressed-integer fast path can
/// load 8 bytes at once.
#[derive(Clone, Copy)]
pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub end: usize,
    pub big_endian: bool,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], pos: usize, big_endian: bool) -> Cursor<'a> {
        Cursor {
            buf,
            pos,
            end: buf.len(),
            big_endian,
        }
    }

    /// The same bytes, read up to `end` only.
    #[inline]
    pub fn limited(&self, end: usize) -> Cursor<'a> {
        Cursor {
            end: end.min(self.end),
            ..*self
        }
    }

    #[inline]
    pub fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    #[inline]
    pub fn u8(&mut self) -> DResult<u8> {
        match self.buf[..self.end].get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => derr(self.pos, "unexpected end of data, expected 1 more byte"),
        }
    }

    #[inline]
    fn take<const N: usize>(&mut self) -> DResult<[u8; N]> {
        match self.buf[..self.end].get(self.pos..self.pos + N) {
            Some(s) => {
                self.pos += N;
                let mut a = [0u8; N];
                a.copy_from_slice(s);
                Ok(a)
            }
            None => derr(
                self.pos,
                format!("unexpected end of data, expected {N} more bytes"),
            ),
        }
    }

    #[inline]
    pub fn u16f(&mut self) -> DResult<u16> {
        let a = self.take::<2>()?;
        Ok(if self.big_endian {
            u16::from_be_bytes(a)
        } else {
            u16::from_le_bytes(a)
        })
    }

    #[inline]
    pub fn u32f(&mut self) -> DResult<u32> {
        let a = self.take::<4>()?;
        Ok(if self.big_endian {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        })
    }

    #[inline]
    pub fn u64f(&mut self) -> DResult<u64> {
        let a = self.take::<8>()?;
        Ok(if self.big_endian {
            u64::from_be_bytes(a)
        } else {
            u64::from_le_bytes(a)
        })
    }

    /// A compressed unsigned integer of at most `max` bytes (A.4).
    #[inline(always)]
    fn compressed(&mut self, max: u8, all_ones: u64) -> DResult<u64> {
        // Fast path: little endian with 8 bytes to spare: one unaligned load and a mask.
        if !self.big_endian {
            if let Some(w) = self.buf.get(self.pos..self.pos + 9) {
                let n = w[0];
                if n <= max && self.pos + 1 + (n as usize) <= self.end {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(&w[1..9]);
                    let v = u64::from_le_bytes(a);
                    self.pos += 1 + n as usize;
                    return Ok(if n == 0 {
                        0
                    } else {
                        v & (u64::MAX >> (64 - 8 * n as u32))
                    });
                }
            }
        }
        self.compressed_slow(max, all_ones)
    }

    #[inline(never)]
    fn compressed_slow(&mut self, max: u8, all_ones: u64) -> DResult<u64> {
        let start = self.pos;
        let n = self.u8()?;
        match n {
            0 => Ok(0),
            0xff => Ok(all_ones),
            n if n <= max => {
                let n = n as usize;
                let Some(bytes) = self.buf[..self.end].get(self.pos..self.pos + n) else {
                    return derr(
                        start,
                        format!("unexpected end of data in a {n}-byte compressed integer"),
                    );
                };
                self.pos += n;
                let mut v = 0u64;
                if self.big_endian {
                    for &b in bytes {
                        v = (v << 8) | b as u64;
                    }
                } else {
                    for (i, &b) in bytes.iter().enumerate() {
                        v |= (b as u64) << (8 * i);
                    }
                }
                Ok(v)
            }
            n => derr(
                start,
                format!("invalid compressed integer size {n}, expected 0..{max} or 255"),
            ),
        }
    }

    #[inline]
    pub fn u32c(&mut self) -> DResult<u32> {
        self.compressed(4, u32::MAX as u64).map(|v| v as u32)
    }

    #[inline]
    pub fn u64c(&mut self) -> DResult<u64> {
        self.compressed(8, u64::MAX)
    }

    #[inline]
    pub fn i64c(&mut self) -> DResult<i64> {
        self.u64c().map(|v| v as i64)
    }

    /// A NUL-terminated string, decoded lossily as UTF-8.
    pub fn string(&mut self) -> DResult<String> {
        let rest = &self.buf[self.pos.min(self.end)..self.end];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = String::from_utf8_lossy(&rest[..n]).into_owned();
                self.pos += n + 1;
                Ok(s)
            }
            None => derr(self.pos, "string without a NUL terminator"),
        }
    }

    /// A record length (A.7): one byte, or 0xff and a u64f.
    #[inline]
    pub fn record_length(&mut self) -> DResult<usize> {
        let start = self.pos;
        let l = self.u8()?;
        let len = if l == 0xff { self.u64f()? } else { l as u64 };
        let end = (self.pos as u64).saturating_add(len);
        if end > self.end as u64 {
            return derr(
                start,
                format!(
                    "record length {len} runs past the end of its chunk ({} bytes left)",
                    self.end - self.pos
                ),
            );
        }
        Ok(len as usize)
    }

    /// An attribute value encoded according to the `OTF2_Type` `ty` (A.6), as raw bits.
    pub fn attribute_value(&mut self, ty: u8) -> DResult<u64> {
        Ok(match ty {
            1 | 5 => self.u8()? as u64,
            2 | 6 => self.u16f()? as u64,
            3 | 7 => self.u32c()? as u64,
            9 => self.u32f()? as u64,
            10 => self.u64f()?,
            11 | 12 | 14..=25 => self.u32c()? as u64,
            // NONE, UINT64, INT64, LOCATION and any future reference type: u64c
            _ => self.u64c()?,
        })
    }
}

/// The byte that opens every chunk and the anchor file.
pub const CHUNK_HEADER: u8 = 0x03;
pub const LITTLE_ENDIAN: u8 = 0x42;
pub const BIG_ENDIAN: u8 = 0x23;
pub const END_OF_CHUNK: u8 = 0x00;
pub const END_OF_BUFFER: u8 = 0x01;
pub const END_OF_FILE: u8 = 0x02;
pub const TIMESTAMP: u8 = 0x05;
pub const ATTRIBUTE_LIST: u8 = 0x06;
pub const CHUNK_HEADER_LEN: usize = 18;

/// Check the 18-byte header of the chunk that starts at `start` (A.3); returns whether it is big endian.
pub fn chunk_header(data: &[u8], start: usize) -> DResult<bool> {
    if data.len() < start + CHUNK_HEADER_LEN {
        return derr(
            start,
            format!(
                "truncated chunk header: {} bytes, expected {CHUNK_HEADER_LEN}",
                data.len() - start
            ),
        );
    }
    if data[start] != CHUNK_HEADER {
        return derr(
            start,
            format!(
                "expected a chunk header (0x03), found 0x{:02x}",
                data[start]
            ),
        );
    }
    match data[start + 1] {
        LITTLE_ENDIAN => Ok(false),
        BIG_ENDIAN => Ok(true),
        b => derr(
            start + 1,
            format!("expected an endianness byte (0x42 or 0x23), found 0x{b:02x}"),
        ),
    }
}

/// One record of a definition file: its type, its payload and where the payload starts.
pub struct DefRecord<'a> {
    pub id: u8,
    pub payload: Cursor<'a>,
    /// Offset of the record's type byte in the file.
    pub offset: usize,
}

/// Walk the chunks of a record stream (A.3): `f` gets a cursor at the first record of each
/// chunk (limited to the chunk) and whether it is the file's last chunk, and returns whether
/// the stream ended (END_OF_FILE seen). Running out of chunks before that is an error.
#[inline]
pub fn for_each_chunk<'a>(
    data: &'a [u8],
    chunk_size: usize,
    mut f: impl FnMut(Cursor<'a>, bool) -> DResult<bool>,
) -> DResult<()> {
    let mut chunk_start = 0usize;
    loop {
        if chunk_start >= data.len() {
            return derr(
                data.len(),
                "unexpected end of file, expected END_OF_FILE (0x02)",
            );
        }
        let big = chunk_header(data, chunk_start)?;
        let chunk_end = chunk_start.saturating_add(chunk_size).min(data.len());
        let c = Cursor::new(data, chunk_start + CHUNK_HEADER_LEN, big).limited(chunk_end);
        if f(c, chunk_end == data.len())? {
            return Ok(());
        }
        chunk_start = chunk_start.saturating_add(chunk_size);
    }
}

/// Walk the records of a chunked definition file (A.3, A.7), calling `f` for each.
pub fn for_each_def_record<'a>(
    data: &'a [u8],
    chunk_size: usize,
    mut f: impl FnMut(DefRecord<'a>) -> DResult<()>,
) -> DResult<()> {
    for_each_chunk(data, chunk_size, |mut c, last_chunk| {
        loop {
            if c.at_end() {
                if last_chunk {
                    return derr(
                        c.pos,
                        "unexpected end of file, expected a record or END_OF_FILE (0x02)",
                    );
                }
                return Ok(false); // a chunk filled to the last byte: go on with the next
            }
            let offset = c.pos;
            let id = c.u8()?;
            match id {
                END_OF_CHUNK => return Ok(false),
                END_OF_BUFFER | END_OF_FILE => return Ok(true),
                CHUNK_HEADER => return derr(offset, "chunk header in the middle of a chunk"),
                _ => {
                    let len = c.record_length()?;
                    let payload = c.limited(c.pos + len);
                    c.pos += len;
                    f(DefRecord {
                        id,
                        payload,
                        offset,
                    })?;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_integers_little_endian() {
        let cases: &[(&[u8], u64)] = &[
            (&[0x00], 0),
            (&[0x01, 0x03], 3),
            (&[0x02, 0xe9, 0x67], 0x67e9),
            (&[0xff], u64::MAX),
            (&[0x04, 0x20, 0x2c, 0xe2, 0x7c], 0x7ce22c20),
        ];
        for (bytes, want) in cases {
            assert_eq!(Cursor::new(bytes, 0, false).u64c().unwrap(), *want);
        }
        assert_eq!(Cursor::new(&[0xff], 0, false).u32c().unwrap(), u32::MAX);
    }

    #[test]
    fn fast_and_slow_paths_agree() {
        // the same values with and without 8 bytes of slack after them
        for v in [0u64, 1, 0xff, 0x100, 0xdead_beef, u64::MAX - 1, 1 << 56] {
            let n = 8 - (v.leading_zeros() / 8) as usize;
            let mut b = vec![n as u8];
            b.extend_from_slice(&v.to_le_bytes()[..n]);
            let tight = Cursor::new(&b, 0, false).u64c().unwrap();
            b.extend_from_slice(&[0xaa; 9]);
            let mut c = Cursor::new(&b, 0, false);
            assert_eq!((tight, c.u64c().unwrap(), c.pos), (v, v, n + 1));
        }
        let mut c = Cursor::new(&[0x05, 1, 2, 3, 4, 5, 6, 7, 8, 9], 0, false);
        assert!(c.u32c().is_err());
    }

    #[test]
    fn compressed_integers_big_endian() {
        assert_eq!(
            Cursor::new(&[0x02, 0x67, 0xe9], 0, true).u64c().unwrap(),
            0x67e9
        );
    }

    #[test]
    fn invalid_sizes_and_truncation_are_errors() {
        assert!(Cursor::new(&[0x05, 1, 2, 3, 4, 5], 0, false)
            .u32c()
            .is_err());
        assert!(Cursor::new(&[0x09], 0, false).u64c().is_err());
        let e = Cursor::new(&[0x04, 1, 2], 0, false).u64c().unwrap_err();
        assert_eq!(e.offset, 0);
        assert!(Cursor::new(b"ab", 0, false).string().is_err());
    }

    #[test]
    fn negative_i64c_and_undefined() {
        let mut b = vec![0x08];
        b.extend_from_slice(&i64::MIN.to_le_bytes());
        assert_eq!(Cursor::new(&b, 0, false).i64c().unwrap(), i64::MIN);
        assert_eq!(Cursor::new(&[0xff], 0, false).i64c().unwrap(), -1);
    }
}
