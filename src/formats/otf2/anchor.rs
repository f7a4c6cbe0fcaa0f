//! The anchor file (formats.md A.2): format versions, chunk sizes, counts, producer.

use super::wire::{derr, Cursor, DResult, Version, BIG_ENDIAN, CHUNK_HEADER, LITTLE_ENDIAN};

#[derive(Clone, Debug, PartialEq)]
pub struct Anchor {
    pub big_endian: bool,
    pub anchor_version: u8,
    pub trace_format: u8,
    /// The OTF2 library version that wrote the archive (major, minor, bugfix).
    pub writer: (u8, u8, u8),
    pub event_chunk_size: u64,
    pub def_chunk_size: u64,
    pub substrate: u8,
    pub compression: u8,
    pub number_of_locations: u64,
    pub number_of_global_definitions: u64,
    pub machine: String,
    pub creator: String,
    pub description: String,
    pub properties: Vec<(String, String)>,
    pub trace_id: u64,
    pub number_of_snapshots: u32,
    pub number_of_thumbnails: u32,
}

impl Anchor {
    pub fn version(&self) -> Version {
        Version::new(self.writer.0, self.writer.1)
    }

    pub fn parse(data: &[u8]) -> DResult<Anchor> {
        if data.len() < 2 || data[0] != CHUNK_HEADER {
            return derr(
                0,
                "not an OTF2 anchor file: expected the byte 0x03 then an endianness byte",
            );
        }
        let big_endian = match data[1] {
            LITTLE_ENDIAN => false,
            BIG_ENDIAN => true,
            b => {
                return derr(
                    1,
                    format!("expected an endianness byte (0x42 or 0x23), found 0x{b:02x}"),
                )
            }
        };
        let mut c = Cursor::new(data, 2, big_endian);
        let magic_at = c.pos;
        if c.buf.get(magic_at..magic_at + 5) != Some(b"OTF2\0") {
            return derr(
                magic_at,
                "not an OTF2 anchor file: expected the magic \"OTF2\"",
            );
        }
        c.pos += 5;
        let at = c.pos;
        let anchor_version = c.u8()?;
        if anchor_version == 0 || anchor_version > 3 {
            return derr(
                at,
                format!("unsupported anchor format version {anchor_version}, expected 1, 2 or 3"),
            );
        }
        let trace_format = c.u8()?;
        let writer = (c.u8()?, c.u8()?, c.u8()?);
        let at = c.pos;
        let event_chunk_size = c.u64f()?;
        let def_chunk_size = c.u64f()?;
        for (size, what) in [(event_chunk_size, "event"), (def_chunk_size, "definition")] {
            if !(18..=1 << 40).contains(&size) {
                return derr(at, format!("implausible {what} chunk size {size}"));
            }
        }
        let at = c.pos;
        let substrate = c.u8()?;
        if substrate == 2 {
            return derr(
                at,
                "the SION file substrate is not supported, expected POSIX (1)",
            );
        }
        let at = c.pos;
        let compression = c.u8()?;
        if compression > 1 {
            return derr(
                at,
                format!("unsupported compression {compression}, expected none (0 or 1)"),
            );
        }
        let number_of_locations = c.u64f()?;
        let number_of_global_definitions = c.u64f()?;
        let machine = c.string()?;
        let creator = c.string()?;
        let description = c.string()?;
        let mut properties = Vec::new();
        let mut trace_id = 0;
        if anchor_version >= 2 {
            let at = c.pos;
            let n = c.u32f()?;
            if n as usize > data.len() {
                return derr(at, format!("implausible number of properties {n}"));
            }
            for _ in 0..n {
                properties.push((c.string()?, c.string()?));
            }
            trace_id = c.u64f()?;
        }
        let (mut number_of_snapshots, mut number_of_thumbnails) = (0, 0);
        if anchor_version >= 3 {
            number_of_snapshots = c.u32f()?;
            number_of_thumbnails = c.u32f()?;
            let at = c.pos;
            let end = c.u8()?;
            if end != super::wire::END_OF_FILE {
                return derr(
                    at,
                    format!("expected END_OF_FILE (0x02) after the anchor, found 0x{end:02x}"),
                );
            }
        }
        Ok(Anchor {
            big_endian,
            anchor_version,
            trace_format,
            writer,
            event_chunk_size,
            def_chunk_size,
            substrate,
            compression,
            number_of_locations,
            number_of_global_definitions,
            machine,
            creator,
            description,
            properties,
            trace_id,
            number_of_snapshots,
            number_of_thumbnails,
        })
    }
}
