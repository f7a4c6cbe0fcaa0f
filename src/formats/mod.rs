//! Trace readers, chosen by the file's content (not its name).

pub mod otf1;
pub mod otf2;
pub mod paje;

use crate::error::{Error, Place, Result};
use crate::model::spill::Spill;
use crate::model::Trace;
use std::io::Read;
use std::path::{Path, PathBuf};
use tracing::field::Empty;

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
    if paje::sniff_file(path)? || paje::binary::sniff(head) {
        return Ok(Format::Paje);
    }
    if paje::binary::sniff_big_endian(head) {
        return Err(Error::format(
            path,
            Place::Byte(0),
            "a big-endian binary Paje (libRastro) file; only little-endian ones are supported",
        ));
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
             file ('<hex>:<hex>'), a Paje file (%EventDef header) or a binary Paje file (libRastro INIT \
             event, bytes 10 44 ff ff)"
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
    open_with(path, None)
}

/// Open any supported trace; with a spill file (`--memory-limit`), the event columns move
/// there, for OTF2 as soon as each location is decoded, for OTF 1 and Paje once the whole
/// trace is read.
pub fn open_with(path: &Path, spill: Option<&Spill>) -> Result<Trace> {
    let s =
        tracing::info_span!("read", format = Empty, locations = Empty, events = Empty).entered();
    let trace = read_with(path, spill)?;
    if spill.is_some() {
        crate::model::spill::return_free_heap();
    }
    let o = &trace.origin;
    s.record(
        "format",
        tracing::field::display(format_args!("{} {}", o.format, o.format_version)),
    );
    s.record("locations", trace.defs.locations.len());
    s.record("events", trace.event_count());
    Ok(trace)
}

/// `open_with`, keeping the events of only the locations `pick` selects from the
/// definitions (a process's share in `run --mpi`, issue 24): an OTF2 reader reads only their
/// event files; OTF 1 and Paje are read whole and the other locations' events dropped (they
/// declare no event counts: `pick` sees the counts read). Returns the trace and what `pick`
/// chose.
pub fn open_share(
    path: &Path,
    spill: Option<&Spill>,
    pick: otf2::Pick,
) -> Result<(Trace, Vec<bool>)> {
    let _s = tracing::info_span!("read share").entered();
    let mut keep = Vec::new();
    let trace = read_picked(path, spill, Some((pick, &mut keep)))?;
    if keep.is_empty() {
        keep = pick(&trace.defs);
    }
    Ok((trace, keep))
}

/// `open_with` without its stage span.
fn read_with(path: &Path, spill: Option<&Spill>) -> Result<Trace> {
    read_picked(path, spill, None)
}

fn read_picked(
    path: &Path,
    spill: Option<&Spill>,
    pick: Option<(otf2::Pick, &mut Vec<bool>)>,
) -> Result<Trace> {
    let path = resolve(path)?;
    let mut trace = match detect(&path)? {
        Format::Otf2 => return otf2::read_share(&path, spill, pick.map(|p| p.0)),
        Format::Otf1 => otf1::read(&path)?,
        Format::Paje => paje::read(&path)?,
    };
    if let Some((p, chosen)) = pick {
        // balanced by the events read (these formats declare no counts)
        let mut defs = trace.defs.clone();
        for (loc, e) in defs.locations.iter_mut().zip(&trace.events) {
            loc.declared_events = loc.declared_events.or(Some(e.len() as u64));
        }
        *chosen = p(&defs);
        for (l, e) in trace.events.iter_mut().enumerate() {
            if chosen.get(l) != Some(&true) {
                *e = Default::default();
            }
        }
    }
    if let Some(s) = spill {
        for e in &mut trace.events {
            e.spill(s)
                .map_err(|e| Error::io(s.path(), "cannot write the spill file", e))?;
        }
    }
    Ok(trace)
}

/// About how many events a trace holds, without reading them, per unit the reader holds in
/// memory at once: OTF2 per location, from the counts its definitions declare; OTF 1 and
/// Paje (read whole before their columns can spill) one entry from the size of their files
/// (one event per 10 bytes, more than any of them holds).
pub fn estimate_events(path: &Path) -> Result<Vec<u64>> {
    let path = resolve(path)?;
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    Ok(match detect(&path)? {
        Format::Otf2 => otf2::estimate_events(&path)?,
        Format::Paje => vec![size(&path) / 10],
        Format::Otf1 => {
            // the master file NAME.otf and its streams NAME.*.events(.z) etc. beside it
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let dir = path.parent().unwrap_or(Path::new("."));
            let mut total = 0;
            if let (Some(stem), Ok(rd)) = (stem, std::fs::read_dir(dir)) {
                for e in rd.flatten() {
                    if e.file_name().to_string_lossy().starts_with(&stem) {
                        total += size(&e.path());
                    }
                }
            }
            vec![total / 10]
        }
    })
}
