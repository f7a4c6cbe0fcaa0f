//! The event model every reader fills and every analysis reads (ARCHITECTURE.md).

pub mod classify;
pub mod defs;
pub mod event_kind;
pub mod events;
pub mod spill;
pub mod times;

pub use defs::*;
pub use event_kind::EventKind;
pub use events::{Attribute, Coll, Events, KindsIn, Msg};
pub use times::{Times, TimesRef};

use crate::error::Warning;
use serde::Serialize;
use std::path::PathBuf;

/// Which file format a trace came from, with what the format says of its producer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Origin {
    /// "OTF2", "OTF", "Paje".
    pub format: &'static str,
    /// Format version as written ("2.3.0").
    pub format_version: String,
    /// The program that wrote the trace ("Score-P 7.1"), if known.
    pub creator: String,
    pub machine: String,
    pub description: String,
    /// Key/value properties the format records (OTF2 anchor properties).
    pub properties: Vec<(String, String)>,
}

/// A whole trace: definitions plus the events of every location.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The file the user named.
    pub path: PathBuf,
    pub origin: Origin,
    /// Clock ticks per second.
    pub timer_resolution: u64,
    /// The first tick of the trace (OTF2 ClockProperties.global_offset).
    pub global_offset: u64,
    /// The trace length in ticks as the definitions declare it.
    pub trace_length: u64,
    pub defs: Definitions,
    /// `events[l]` are the events of `defs.locations[l]`.
    pub events: Vec<Events>,
    /// Problems that did not stop the reading.
    pub warnings: Vec<Warning>,
    /// Event counts per kind as the format's reference reader names them, where the model's
    /// kinds do not tell them apart (OTF 1: otfprint's kinds); empty for OTF2.
    pub native_event_kinds: std::collections::BTreeMap<&'static str, u64>,
    /// Paje traces: the entities as `pj_dump` counts them (formats.md §C.7, §D).
    pub paje: Option<PajeCounts>,
}

/// Paje entity counts as PajeNG's `pj_dump` prints rows (formats.md §C.7).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PajeCounts {
    /// Containers including the root container `0`.
    pub containers: u64,
    /// Completed state intervals (one per PushState or SetState).
    pub states: u64,
    /// Matched StartLink/EndLink pairs.
    pub links: u64,
    /// PajeNewEvent records.
    pub events: u64,
    /// Pieces of the piecewise-constant variables (same-time updates merged).
    pub variables: u64,
}

impl Trace {
    pub fn event_count(&self) -> u64 {
        self.events.iter().map(|e| e.len() as u64).sum()
    }

    /// (first, last) timestamp over all locations, in ticks.
    pub fn time_span(&self) -> Option<(u64, u64)> {
        let first = self.events.iter().filter_map(|e| e.time.first()).min()?;
        let last = self.events.iter().filter_map(|e| e.time.last()).max()?;
        Some((first, last))
    }

    /// Seconds since the start of the trace for a tick value.
    pub fn seconds(&self, tick: u64) -> f64 {
        tick.saturating_sub(self.global_offset) as f64 / self.timer_resolution.max(1) as f64
    }

    /// Bytes of heap memory the event columns hold.
    pub fn event_heap_bytes(&self) -> usize {
        self.events.iter().map(Events::heap_bytes).sum()
    }
}
