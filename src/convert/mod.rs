//! `perfexpert convert`: trace writers. A Paje trace (text or binary) converts to Paje text
//! or binary Paje event by event (`paje.rs`, from `formats::paje::stream`), so everything a
//! Paje file holds survives, not only what the model keeps. Any trace converts to OTF2 from
//! its model (`otf2/`). docs/convert.md says what each conversion keeps and drops.

pub mod otf2;
pub mod paje;
pub mod paje_model;

use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// The formats `convert` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Paje text (PajeNG's `pj_dump` reads it).
    Paje,
    /// Binary Paje, the standard variant (strings inline), the layout of the PajeNG fork.
    PajeBinary,
    /// Binary Paje, the reference variant (a string table of type-888 events).
    PajeBinaryReference,
}

/// What a conversion wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Definitions and events written.
    pub definitions: u64,
    pub events: u64,
    /// What the target format cannot hold, one line each (convert prints them as warnings).
    pub dropped: Vec<String>,
}

/// Convert the Paje trace `data` (read from `input`, text or binary) to `target` on `out`
/// (named `output` in errors); `progress` is called now and then with the events so far.
pub fn paje(
    input: &Path,
    data: &[u8],
    target: Target,
    output: &Path,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary> {
    let r = match target {
        Target::Paje => paje::to_text(input, data, out, progress),
        Target::PajeBinary => paje::to_binary(input, data, false, out, progress),
        Target::PajeBinaryReference => paje::to_binary(input, data, true, out, progress),
    };
    r.map_err(|e| match e {
        paje::Failure::Input(e) => e,
        paje::Failure::Output(e) => Error::io(output, "cannot write", e),
    })
}

/// Convert the model of `trace` (any format) to `target` on `out` (named `output` in
/// errors): Paje text or binary Paje as `paje_model` writes them.
pub fn model_to_paje(
    trace: &crate::model::Trace,
    target: Target,
    output: &Path,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(u64),
) -> Result<Summary> {
    let io = |e| Error::io(output, "cannot write", e);
    let reference = match target {
        Target::Paje => return paje_model::to_text(trace, out, progress).map_err(io),
        Target::PajeBinary => false,
        Target::PajeBinaryReference => true,
    };
    paje_model::to_binary(trace, reference, out, progress).map_err(|e| match e {
        paje::Failure::Input(e) => e,
        paje::Failure::Output(e) => io(e),
    })
}
