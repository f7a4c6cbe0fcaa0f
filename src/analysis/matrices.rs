//! Who waits for whom and who sends how much to whom (TFPS, the MPI visualisation work):
//! the wait-time matrix, from the dependency windows of the critical-path graph, and the
//! message-traffic matrices, from the matched messages (patterns.md §5.3). Rows and columns
//! are MPI ranks (a location's `rank`; the locations of one process are summed).

use super::critical_path::Graph;
use crate::model::{EventKind, KindsIn, TimesRef, Trace};
use crate::replay::matching::EventRef;
use crate::replay::{LocView, Replay, NONE};
use serde::Serialize;
use std::collections::BTreeMap;

/// Values below this share of the run's duration are left out of the wait matrix.
pub const HIDE_BELOW_PERCENT: f64 = 0.1;

#[derive(Clone, Debug, Serialize)]
pub struct WaitCell {
    /// The rank waited for.
    pub rank: u32,
    pub time_s: f64,
    pub percent: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct WaitRow {
    /// The waiting rank.
    pub rank: u32,
    /// Everything this rank waited, as seconds and % of the run's duration (hidden cells
    /// included).
    pub total_s: f64,
    pub total_percent: f64,
    pub waits_for: Vec<WaitCell>,
}

/// The `wait_matrix` section.
#[derive(Clone, Debug, Serialize)]
pub struct WaitMatrix {
    pub ranks: u32,
    pub duration_s: f64,
    pub hide_below_percent: f64,
    /// Every rank, in rank order (rows without waiting have empty `waits_for`).
    pub rows: Vec<WaitRow>,
}

#[derive(Clone, Debug, Serialize)]
pub struct TrafficCell {
    pub from: u32,
    pub to: u32,
    pub count: u64,
    pub bytes: u64,
    /// Bytes / Σ (send call entered → receive call left), per message; `null` if that
    /// time is zero.
    pub rate_bytes_per_s: Option<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CommTraffic {
    pub communicator: String,
    /// Ranks are world ranks.
    pub cells: Vec<TrafficCell>,
}

/// The `traffic_matrix` section.
#[derive(Clone, Debug, Serialize)]
pub struct TrafficMatrix {
    pub ranks: u32,
    /// Over all communicators.
    pub cells: Vec<TrafficCell>,
    pub communicators: Vec<CommTraffic>,
}

/// The messages of one (sender, receiver) cell: how many, their bytes, and the ticks from
/// the send call entered to the receive call left, summed.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acc {
    pub count: u64,
    pub bytes: u64,
    pub ticks: u64,
}

/// The messages one location sent: its rank, and per (communicator, receiver rank) its
/// totals.
pub type TrafficRow = (u32, Vec<((u32, u32), Acc)>);

fn ranks(trace: &Trace) -> u32 {
    trace
        .defs
        .locations
        .iter()
        .filter_map(|l| l.rank)
        .max()
        .map_or(0, |r| r + 1)
}

pub fn wait_matrix(trace: &Trace, g: &Graph) -> WaitMatrix {
    wait_matrix_of(trace, trace.time_span(), &g.waits)
}

/// The wait matrix of the run's `span` from the waits (waiting location, location waited
/// for, ticks; integer sums, so in any order).
pub fn wait_matrix_of(
    trace: &Trace,
    span: Option<(u64, u64)>,
    waits: &[(u32, u32, u64)],
) -> WaitMatrix {
    let n = ranks(trace);
    let duration = span.map_or(0, |(a, b)| b.saturating_sub(a));
    let res = trace.timer_resolution.max(1) as f64;
    let pct = |t: u64| {
        if duration == 0 {
            0.0
        } else {
            100.0 * t as f64 / duration as f64
        }
    };
    let mut cells: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for &(w, f, t) in waits {
        let (Some(a), Some(b)) = (
            trace.defs.locations[w as usize].rank,
            trace.defs.locations[f as usize].rank,
        ) else {
            continue;
        };
        if a == b {
            continue; // threads of one process waiting for each other (OpenMP)
        }
        *cells.entry((a, b)).or_default() += t;
    }
    let rows = (0..n)
        .map(|r| {
            let mine: Vec<(u32, u64)> = cells
                .range((r, 0)..=(r, u32::MAX))
                .map(|(&(_, b), &t)| (b, t))
                .collect();
            let total: u64 = mine.iter().map(|x| x.1).sum();
            WaitRow {
                rank: r,
                total_s: total as f64 / res,
                total_percent: pct(total),
                waits_for: mine
                    .into_iter()
                    .filter(|&(_, t)| pct(t) >= HIDE_BELOW_PERCENT)
                    .map(|(b, t)| WaitCell {
                        rank: b,
                        time_s: t as f64 / res,
                        percent: pct(t),
                    })
                    .collect(),
            }
        })
        .collect();
    WaitMatrix {
        ranks: n,
        duration_s: duration as f64 / res,
        hide_below_percent: HIDE_BELOW_PERCENT,
        rows,
    }
}

pub fn traffic_matrix(trace: &Trace, replay: &Replay) -> TrafficMatrix {
    traffic_from_rows(trace, traffic_rows(trace, replay, &|_| true))
}

/// The rows of the sending locations `held` selects (in parallel): per location with a
/// rank, (communicator, receiver rank) → totals. The receive's call is read through the
/// partner link (in `run --mpi`, a ghost event).
pub fn traffic_rows(
    trace: &Trace,
    replay: &Replay,
    held: &(dyn Fn(usize) -> bool + Sync),
) -> Vec<TrafficRow> {
    use rayon::prelude::*;
    (0..trace.events.len())
        .into_par_iter()
        .filter_map(|l| {
            let a = trace.defs.locations[l].rank.filter(|_| held(l))?;
            let ev = &trace.events[l];
            let links = &replay.msg_links[l];
            // the columns read per send, each looked up once
            let arg = &ev.arg[..];
            let (partner, peer) = (&links.partner[..], &ev.msg.peer[..]);
            let own = Cols::new(trace, replay, l);
            let mut row = RowAcc::new(trace, replay, l);
            for i in KindsIn::new(&ev.kind, 0, EventKind::MpiSend, EventKind::MpiIsend) {
                let k = arg[i] as usize;
                let Some(&p) = partner.get(k).filter(|p| p.is_some()) else {
                    continue;
                };
                // the payload read as `Events::msg` does, without its request lookup
                if k >= peer.len() {
                    continue; // freed (`free_msg_payloads`)
                }
                let bytes = ev.msg.bytes.get(k);
                let Some(b) = trace.defs.locations[p.loc as usize].rank else {
                    continue;
                };
                // send call entered
                let start = own.entered(i);
                row.add(k, p, b, bytes, start);
            }
            Some((a, row.finish()))
        })
        .collect()
}

/// One location's pointer column and times, looked up once for the reads of many of its
/// events (`enterptr`, `exitptr`, as `critical_path`'s readers give them).
#[derive(Clone, Copy)]
pub(crate) struct Cols<'a> {
    loc: usize,
    len: usize,
    view: LocView<'a>,
    pub(crate) time: TimesRef<'a>,
}

impl<'a> Cols<'a> {
    pub(crate) fn new(trace: &'a Trace, replay: &'a Replay, l: usize) -> Cols<'a> {
        let st = &replay.locations[l];
        Cols {
            loc: l,
            len: st.len(),
            view: st.view(),
            time: trace.events[l].time.view(),
        }
    }

    /// `critical_path::enterptr` of event `i` here.
    #[inline(always)]
    pub(crate) fn enterptr(&self, i: usize) -> u32 {
        if i < self.len {
            self.view.enterptr(i)
        } else {
            NONE
        }
    }

    /// The time the call around event `i` here was entered (the event's own if none).
    #[inline(always)]
    pub(crate) fn entered(&self, i: usize) -> u64 {
        match self.enterptr(i) {
            NONE => self.time.get(i),
            e => self.time.get(e as usize),
        }
    }

    /// `critical_path::exitptr` of event `i` here.
    #[inline(always)]
    pub(crate) fn exitptr(&self, i: usize) -> u32 {
        if i < self.len {
            self.view.exitptr(i)
        } else {
            NONE
        }
    }
}

/// The columns (`Cols`) of the location last asked for, kept for the next asks of the same
/// location: a location's messages mostly go to one partner after another.
pub(crate) struct Near<'a> {
    trace: &'a Trace,
    replay: &'a Replay,
    cur: Option<Cols<'a>>,
}

impl<'a> Near<'a> {
    pub(crate) fn new(trace: &'a Trace, replay: &'a Replay) -> Near<'a> {
        Near {
            trace,
            replay,
            cur: None,
        }
    }

    /// Location `l`'s columns (a reference: they are a dozen words).
    #[inline(always)]
    pub(crate) fn of(&mut self, l: usize) -> &Cols<'a> {
        let (trace, replay) = (self.trace, self.replay);
        let c = self.cur.get_or_insert_with(|| Cols::new(trace, replay, l));
        if c.loc != l {
            *c = Cols::new(trace, replay, l);
        }
        c
    }
}

/// One sending location's row of the traffic matrix as its matched sends come
/// (`traffic_rows`, or the views' walk over the same sends, `views::views_traffic_with_matrix`).
pub(crate) struct RowAcc<'a> {
    /// The receivers' columns.
    far: Near<'a>,
    comms: &'a [u32],
    acc: Vec<((u32, u32), Acc)>,
    index: std::collections::HashMap<(u32, u32), usize>,
    /// The entry of `acc` the last send went to.
    last: usize,
}

impl<'a> RowAcc<'a> {
    pub(crate) fn new(trace: &'a Trace, replay: &'a Replay, l: usize) -> RowAcc<'a> {
        RowAcc {
            far: Near::new(trace, replay),
            comms: &trace.events[l].msg.comm[..],
            acc: Vec::new(),
            index: Default::default(),
            last: 0,
        }
    }

    /// The send of payload `k` (not freed), matched with receive `p` on a location of rank
    /// `b`, of `bytes`, its call entered at `start`: counted (none when its communicator is
    /// not known, a freed payload). Inlined into the walks over the sends (issue 26).
    #[inline(always)]
    pub(crate) fn add(&mut self, k: usize, p: EventRef, b: u32, bytes: u64, start: u64) {
        let Some(&comm) = self.comms.get(k) else {
            return;
        };
        // → receive call left
        let r = self.far.of(p.loc as usize);
        let re = r.enterptr(p.event as usize);
        let end = match (re != NONE).then(|| r.exitptr(re as usize)) {
            Some(x) if x != NONE => r.time.get(x as usize),
            _ => r.time.get(p.event as usize),
        };
        let key = (comm, b);
        let acc = &mut self.acc;
        if acc.get(self.last).is_none_or(|x| x.0 != key) {
            self.last = *self.index.entry(key).or_insert_with(|| {
                acc.push((key, Acc::default()));
                acc.len() - 1
            });
        }
        if let Some((_, x)) = acc.get_mut(self.last) {
            x.count += 1;
            x.bytes += bytes;
            x.ticks += end.saturating_sub(start);
        }
    }

    pub(crate) fn finish(self) -> Vec<((u32, u32), Acc)> {
        self.acc
    }
}

/// The traffic matrix from the rows of every sending location (the sums are integers, so
/// merging the rows in any order gives the same cells).
pub fn traffic_from_rows(trace: &Trace, per_loc: Vec<TrafficRow>) -> TrafficMatrix {
    let res = trace.timer_resolution.max(1) as f64;
    let mut all: BTreeMap<(u32, u32), Acc> = BTreeMap::new();
    let mut per_comm: BTreeMap<(u32, u32, u32), Acc> = BTreeMap::new();
    for (a, acc) in per_loc {
        for ((comm, b), x) in acc {
            for t in [
                all.entry((a, b)).or_default(),
                per_comm.entry((comm, a, b)).or_default(),
            ] {
                t.count += x.count;
                t.bytes += x.bytes;
                t.ticks += x.ticks;
            }
        }
    }
    let cell = |(a, b): (u32, u32), x: &Acc| TrafficCell {
        from: a,
        to: b,
        count: x.count,
        bytes: x.bytes,
        rate_bytes_per_s: (x.ticks > 0).then(|| x.bytes as f64 / (x.ticks as f64 / res)),
    };
    let mut communicators: Vec<CommTraffic> = Vec::new();
    for (&(c, a, b), x) in &per_comm {
        let name = &trace.defs.comms[c as usize].name;
        if communicators.last().is_none_or(|t| &t.communicator != name) {
            communicators.push(CommTraffic {
                communicator: name.clone(),
                cells: Vec::new(),
            });
        }
        if let Some(t) = communicators.last_mut() {
            t.cells.push(cell((a, b), x));
        }
    }
    TrafficMatrix {
        ranks: ranks(trace),
        cells: all.iter().map(|(&k, x)| cell(k, x)).collect(),
        communicators,
    }
}
