//! The ustar archive of a `.cubex` file (patterns.md §8.1): writing one member (header,
//! content, padding), and reading an archive back to find its members by name.

use super::err;
use crate::error::{Error, Place, Result};
use std::io::Write;
use std::ops::Range;
use std::path::Path;

/// One ustar member (§8.1): header, content, padding to 512 bytes.
pub(super) fn tar_member(
    out: &mut dyn Write,
    name: &str,
    content: &[u8],
    mtime: u64,
) -> std::io::Result<()> {
    let mut h = [0u8; 512];
    let octal = |h: &mut [u8; 512], at: usize, len: usize, v: u64| {
        let s = format!("{v:0w$o}", w = len - 1);
        h[at..at + len - 1].copy_from_slice(&s.as_bytes()[s.len() - (len - 1)..]);
    };
    h[..name.len().min(100)].copy_from_slice(&name.as_bytes()[..name.len().min(100)]);
    octal(&mut h, 100, 8, 0o644);
    octal(&mut h, 108, 8, 0);
    octal(&mut h, 116, 8, 0);
    octal(&mut h, 124, 12, content.len() as u64);
    octal(&mut h, 136, 12, mtime);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    out.write_all(&h)?;
    out.write_all(content)?;
    let pad = (512 - content.len() % 512) % 512;
    out.write_all(&vec![0u8; pad])
}

/// The members of a ustar archive, by name, in order.
fn read_tar(path: &Path, bytes: &[u8]) -> Result<Vec<(String, Range<usize>)>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    loop {
        let Some(h) = bytes.get(at..at + 512) else {
            return Err(err(
                path,
                Place::Byte(at as u64),
                "unexpected end of data, expected a 512-byte tar header (is this a .cubex file?)",
            ));
        };
        if h.iter().all(|&b| b == 0) {
            break;
        }
        if &h[257..262] != b"ustar" {
            return Err(err(
                path,
                Place::Byte(at as u64 + 257),
                "expected the tar magic \"ustar\" (is this a .cubex file?)",
            ));
        }
        let field = |a: usize, b: usize| -> &[u8] {
            let f = &h[a..b];
            let end = f.iter().position(|&c| c == 0).unwrap_or(f.len());
            &f[..end]
        };
        let sum: u32 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    b as u32
                }
            })
            .sum();
        let parse_octal = |f: &[u8]| -> Option<u64> {
            let s = std::str::from_utf8(f)
                .ok()?
                .trim_matches(|c| c == ' ' || c == '\0');
            u64::from_str_radix(s, 8).ok()
        };
        if parse_octal(field(148, 156)) != Some(sum as u64) {
            return Err(err(
                path,
                Place::Byte(at as u64 + 148),
                "tar header checksum does not match",
            ));
        }
        let size = parse_octal(field(124, 136)).ok_or_else(|| {
            err(
                path,
                Place::Byte(at as u64 + 124),
                "expected an octal member size in the tar header",
            )
        })? as usize;
        let mut name = String::from_utf8_lossy(field(0, 100)).into_owned();
        let prefix = field(345, 500);
        if !prefix.is_empty() {
            name = format!("{}/{name}", String::from_utf8_lossy(prefix));
        }
        let start = at + 512;
        let end = start.checked_add(size).filter(|&e| e <= bytes.len());
        let Some(end) = end else {
            return Err(err(
                path,
                Place::Byte(start as u64),
                format!("unexpected end of data, expected {size} bytes of member {name}"),
            ));
        };
        if matches!(h[156], b'0' | 0) {
            out.push((name, start..end));
        }
        at = start + size.div_ceil(512) * 512;
    }
    Ok(out)
}

/// A `.cubex` archive read into memory, its members found by name.
pub(super) struct Archive {
    bytes: Vec<u8>,
    members: Vec<(String, Range<usize>)>,
}

impl Archive {
    /// Read the file at `path` and list its members.
    pub(super) fn read(path: &Path) -> Result<Archive> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, "cannot read", e))?;
        let members = read_tar(path, &bytes)?;
        Ok(Archive { bytes, members })
    }

    /// The content of the first member called `name`.
    pub(super) fn member(&self, name: &str) -> Option<&[u8]> {
        self.members
            .iter()
            .find(|(m, _)| m == name)
            .map(|(_, r)| &self.bytes[r.clone()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tar_headers_are_ustar_with_valid_checksums() {
        let mut out = Vec::new();
        tar_member(&mut out, "0.index", b"abc", 1_700_000_000).unwrap();
        assert_eq!(out.len(), 1024);
        assert_eq!(&out[257..263], b"ustar\0");
        assert_eq!(&out[100..108], b"0000644\0");
        assert_eq!(&out[124..136], b"00000000003\0");
        let members = read_tar(Path::new("x"), &[out, vec![0; 1024]].concat()).unwrap();
        assert_eq!(members, vec![("0.index".to_string(), 512..515)]);
    }
}
