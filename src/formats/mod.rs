//! Trace readers, chosen by the file's content (not its name).

pub mod otf1;
pub mod otf2;
pub mod paje;

use crate::error::{Error, Place, Result};
use crate::model::Trace;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The formats perfexpert reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Otf2,
    Otf1,
    Paje,
}

/// Find the file to read: the path itself, or the single OTF2 anchor or OTF master file in a directory
/// (a Score-P experiment directory).
fn resolve(path: &Path) -> Result<PathBuf> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let entries = std::fs::read_dir(path).map_err(|e| Error::io(path, "cannot list", e))?;
    let mut anchors: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "otf2" || x == "otf") && p.is_file())
        .collect();
    anchors.sort();
    match anchors.len() {
        1 => Ok(anchors.remove(0)),
        0 => Err(Error::format(
            path,
            Place::File,
            "a directory without a trace: expected an OTF2 anchor file (*.otf2) or an OTF master file (*.otf) in it",
        )),
        n => Err(Error::format(
            path,
            Place::File,
            format!("{n} trace anchor files (*.otf2, *.otf) in this directory; name the one to read"),
        )),
    }
}

/// Detect the format of a trace file from its first bytes.
pub fn detect(path: &Path) -> Result<Format> {
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, "cannot open", e))?;
    let mut head = [0u8; 16];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(Error::io(path, "cannot read", e)),
        }
    }
    let head = &head[..n];
    if otf2::sniff(head) {
        return Ok(Format::Otf2);
    }
    if otf1::sniff(head) {
        return Ok(Format::Otf1);
    }
    if paje::sniff_file(path)? {
        return Ok(Format::Paje);
    }
    let what = if n == 0 {
        "empty file".to_string()
    } else {
        format!("unrecognised content starting with {}", hex_prefix(head))
    };
    Err(Error::format(
        path,
        Place::Byte(0),
        format!(
            "{what}; expected a trace: an OTF2 anchor (bytes 03 42|23 'OTF2'), an OTF master \
             file ('<hex>:<hex>') or a Paje file (%EventDef header)"
        ),
    ))
}

fn hex_prefix(b: &[u8]) -> String {
    b.iter()
        .take(8)
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Open any supported trace.
pub fn open(path: &Path) -> Result<Trace> {
    let path = resolve(path)?;
    match detect(&path)? {
        Format::Otf2 => otf2::read(&path),
        Format::Otf1 => otf1::read(&path),
        Format::Paje => paje::read(&path),
    }
}
