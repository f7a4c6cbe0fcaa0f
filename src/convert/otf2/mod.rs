//! `convert --to otf2`: an OTF2 archive (`OUT/traces.otf2`, `OUT/traces.def`,
//! `OUT/traces/<location>.{def,evt}`, as Score-P lays it out) written from the model of a
//! trace of any format. Times are the model's ticks with the model's timer resolution and
//! global offset, so they read back exactly; definitions keep the trace's ids. What OTF2
//! or this writer cannot hold is listed in `Summary::dropped` (docs/convert.md).

pub mod defs;
pub mod events;
pub mod stream;

use super::Summary;
use crate::error::{Error, Result};
use crate::formats::otf2::wire::MappingType;
use crate::model::{EventKind, Trace};
use defs::{Ids, MetricClasses};
use rayon::prelude::*;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Write `trace` as an OTF2 archive into the directory `dir` (created; it should not
/// exist). `progress` gets the number of events written so far, now and then.
pub fn write(trace: &Trace, dir: &Path, progress: &(dyn Fn(u64) + Sync)) -> Result<Summary> {
    if trace.defs.locations.is_empty() {
        return Err(Error::Usage(format!(
            "{}: the trace has no locations (nothing the model keeps happens on any of its containers or processes); the OTF2 library refuses an archive without locations",
            trace.path.display()
        )));
    }
    let mut ids = Ids::new(&trace.defs);
    let classes = metric_classes(trace);
    ids.metric_classes = (classes.iter().enumerate())
        .map(|(k, &(c, _))| (c, k as u32))
        .collect();
    let sub = dir.join("traces");
    std::fs::create_dir_all(&sub).map_err(|e| Error::io(&sub, "cannot create", e))?;
    let local = stream::empty_local_defs();
    let done = AtomicU64::new(0);
    let tick = |n: u64| progress(done.fetch_add(n, Ordering::Relaxed) + n);
    let losses: Vec<Result<events::Losses>> = (trace.events.par_iter().enumerate())
        .map(|(k, ev)| {
            let id = ids.locations[k];
            let def = sub.join(format!("{id}.def"));
            std::fs::write(&def, &local).map_err(|e| Error::io(&def, "cannot write", e))?;
            let evt = sub.join(format!("{id}.evt"));
            let f = std::fs::File::create(&evt).map_err(|e| Error::io(&evt, "cannot create", e))?;
            let w = std::io::BufWriter::with_capacity(stream::EVENT_CHUNK, f);
            events::write_location(ev, &ids, w, &tick)
                .map_err(|e| Error::io(&evt, "cannot write", e))
        })
        .collect();
    let mut lost = events::Losses::default();
    for l in losses {
        lost.add(&l?);
    }
    let def_path = dir.join("traces.def");
    let (defs, n) = defs::global_defs(trace, &ids, &classes)
        .map_err(|e| Error::io(&def_path, "cannot write", e))?;
    std::fs::write(&def_path, defs).map_err(|e| Error::io(&def_path, "cannot write", e))?;
    let o = &trace.origin;
    let anchor = stream::anchor(&stream::AnchorInfo {
        locations: trace.defs.locations.len() as u64,
        global_definitions: n,
        machine: o.machine.clone(),
        creator: o.creator.clone(),
        description: o.description.clone(),
        properties: o.properties.clone(),
        trace_id: trace_id(trace),
    });
    // the anchor last: an archive without one is no archive
    let anchor_path = dir.join("traces.otf2");
    std::fs::write(&anchor_path, anchor).map_err(|e| Error::io(&anchor_path, "cannot write", e))?;
    Ok(Summary {
        definitions: n,
        events: trace.event_count(),
        dropped: dropped(trace, &lost, &classes),
    })
}

/// The classes the Metric events name (field 0), with as many members as the events
/// carry values: a class whose id is a metric member's and that carries one value has that
/// member (OTF 1 counters); one with as many values as the trace has members has them all;
/// any other takes the first members. The model keeps no MetricClass definitions.
fn metric_classes(trace: &Trace) -> MetricClasses {
    let mut seen: std::collections::BTreeMap<u32, usize> = Default::default();
    for ev in &trace.events {
        for i in 0..ev.len() {
            if ev.kind[i] == EventKind::Metric {
                let f = ev.fields(i);
                if let (Some(&c), Some(&n)) = (f.first(), f.get(1)) {
                    seen.entry(c as u32).or_insert(n as usize);
                }
            }
        }
    }
    let metrics = &trace.defs.metrics;
    let by_id = |c: u32| metrics.iter().position(|m| m.id == c as u64);
    seen.into_iter()
        .map(|(c, n)| {
            let m = match by_id(c) {
                Some(k) if n == 1 => vec![k as u32],
                _ if metrics.is_empty() => Vec::new(),
                _ => (0..n).map(|k| (k % metrics.len()) as u32).collect(),
            };
            (c, m)
        })
        .collect()
}

/// A trace id for the anchor (OTF2 wants a random one): a hash of the trace's size and
/// first event times, so the same input converts to the same bytes.
fn trace_id(trace: &Trace) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |v: u64| {
        h ^= v;
        h = h.wrapping_mul(0x1000_0000_01b3);
    };
    mix(trace.event_count());
    mix(trace.defs.locations.len() as u64);
    for ev in &trace.events {
        mix(ev.time.first().unwrap_or(0));
    }
    h
}

fn say(out: &mut Vec<String>, n: u64, what: &str) {
    if n > 0 {
        out.push(format!("{n} {what}"));
    }
}

/// The warning lines of what the archive does not hold.
fn dropped(trace: &Trace, lost: &events::Losses, classes: &MetricClasses) -> Vec<String> {
    let mut out = Vec::new();
    say(
        &mut out,
        lost.attributes,
        "event(s) carried attributes: left out (the model keeps no attribute definitions)",
    );
    say(
        &mut out,
        lost.extra_fields,
        "event(s) had fields their OTF2 record has no place for: left out",
    );
    say(
        &mut out,
        lost.missing_fields,
        "event(s) lacked fields their OTF2 record needs: written as 0",
    );
    say(&mut out, lost.unknown, "event(s) of record types OTF2 does not know: written as unknown records without their content");
    // per record kind, once: whether it has a field that refers to a definition the model
    // does not keep
    let (mut refers, mut seen) = ([false; 256], [false; 256]);
    for spec in crate::formats::otf2::schema::EVENTS {
        if std::mem::replace(&mut seen[spec.id as usize], true) {
            continue; // the first spec of an id counts, as a search would find it
        }
        refers[spec.id as usize] = spec.fields.iter().any(|f| {
            !matches!(
                f.mapped_by,
                None | Some(
                    MappingType::Comm
                        | MappingType::Metric
                        | MappingType::Region
                        | MappingType::Location
                        | MappingType::LocationGroup
                        | MappingType::Group
                )
            )
        });
    }
    let unkept: u64 = (trace.events.iter())
        .map(|ev| {
            ev.kind
                .iter()
                .filter(|&&k| refers[k as u8 as usize])
                .count() as u64
        })
        .sum();
    say(&mut out, unkept, "event(s) refer to definitions the model does not keep (strings, parameters, I/O handles, windows, ...): their ids are written, no definition declares them");
    if !classes.is_empty() {
        out.push(format!(
            "{} metric class(es) rebuilt from the Metric events (the model keeps no MetricClass definitions); metric members' type, base and exponent are not kept",
            classes.len()
        ));
    }
    if let Some(p) = &trace.paje {
        say(
            &mut out,
            p.variables,
            "Paje variable piece(s): the model does not keep variables",
        );
        say(
            &mut out,
            p.events,
            "PajeNewEvent record(s): the model does not keep them",
        );
        out.push("Paje containers that are no process, entity types, colours and values the model does not keep are not written".into());
    }
    out
}
