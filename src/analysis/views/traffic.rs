//! Who talks to whom, over time: the frame windows (equal slices of the run, cut again at
//! the phase boundaries), the matched messages (a bounded sample drawn as lines, all of them
//! summed per frame, per rank pair and per node), the collective instances (a bounded sample
//! of marks; who waited for the last to enter), late senders per frame, the orderings of the
//! ranks (by rank, by messages and bytes sent as TFPS does, by affinity: a maximum spanning
//! tree of the communication graph walked heaviest edge first, with `petgraph`), the graph
//! and the mapping of ranks onto the nodes of the system tree.

use crate::analysis::critical_path::enterptr;
use crate::analysis::matrices::{Cols, Near, RowAcc, TrafficRow};
use crate::analysis::phases;
use crate::model::{collective_op_name, EventKind, Events, KindsIn, Trace};
use crate::replay::collectives::Instance;
use crate::replay::matching::EventRef;
use crate::replay::{Replay, NONE};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Frames of the animations: the run cut into this many equal windows (and at phases).
pub const FRAMES: usize = 60;
/// At most about this many message lines and collective marks on the timeline.
pub const MESSAGE_LIMIT: u64 = 3000;
pub const COLLECTIVE_LIMIT: u64 = 1500;

/// A message from send to receive.
#[derive(Clone, Debug)]
pub struct MessageLine {
    /// Locations (indices into the trace's locations).
    pub from: u32,
    pub to: u32,
    pub send_s: f64,
    pub recv_s: f64,
    pub bytes: u64,
}

/// A collective instance: when the last member entered, and who took part.
#[derive(Clone, Debug)]
pub struct CollMark {
    pub time_s: f64,
    pub op: &'static str,
    pub locations: Vec<u32>,
}

/// A sparse rank × rank matrix of one frame: (from, to, value, messages).
#[derive(Clone, Debug, Default)]
pub struct WindowMatrix {
    pub cells: Vec<(u32, u32, f64, u64)>,
}

/// A node (host) of the system tree and the ranks on it.
#[derive(Clone, Debug)]
pub struct Node {
    pub name: String,
    pub ranks: Vec<u32>,
}

/// A permutation of the ranks: `ranks[position]`.
#[derive(Clone, Debug)]
pub struct Order {
    pub name: &'static str,
    pub ranks: Vec<u32>,
}

/// Traffic between two ranks, both directions (`a < b`).
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub a: u32,
    pub b: u32,
    pub bytes: u64,
    pub messages: u64,
}

pub(crate) struct Windows {
    pub bounds: Vec<u64>,
    pub phase: Vec<usize>,
}

/// `FRAMES` equal windows over `[t0, t1]`, cut again at each boundary of the phases `ph`
/// (`phases::detect`).
pub(crate) fn windows(ph: &[phases::Phase], t0: u64, t1: u64) -> Windows {
    let span = t1.saturating_sub(t0);
    let mut bounds: Vec<u64> = (0..=FRAMES as u64)
        .map(|k| t0 + (span as u128 * k as u128 / FRAMES as u128) as u64)
        .chain(ph.iter().skip(1).map(|p| p.start.clamp(t0, t1)))
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    if bounds.len() < 2 {
        bounds = vec![t0, t1.max(t0 + 1)];
    }
    let phase = (bounds.windows(2))
        .map(|w| {
            let mid = w[0] / 2 + w[1] / 2;
            ph.iter()
                .position(|p| p.end > mid)
                .map_or(ph.len(), |k| k + 1)
        })
        .collect();
    Windows { bounds, phase }
}

pub(crate) struct Out {
    pub sampled: Sampled,
    pub traffic: Vec<WindowMatrix>,
    pub waits: Vec<WindowMatrix>,
    pub ranks: u32,
    pub nodes: Vec<Node>,
    pub kiviat: Vec<Vec<u64>>,
    pub orders: Vec<Order>,
    pub edges: Vec<Edge>,
}

/// Ticks a rank waited for another, per (frame, waiting rank, rank waited for).
pub(crate) type Waits = BTreeMap<Key, u64>;

/// Bytes and messages sent, per (frame, from, to).
pub(crate) type Sent = BTreeMap<Key, (u64, u64)>;

/// A frame and two ranks: the key of `Waits` and `Sent`.
pub(crate) type Key = (usize, u32, u32);

/// An integer sum of `Waits` or `Sent` (added in any order: the same totals).
pub(crate) trait Sum: Copy + Default {
    fn add(&mut self, other: Self);
}

impl Sum for u64 {
    #[inline]
    fn add(&mut self, other: u64) {
        *self += other;
    }
}

impl Sum for (u64, u64) {
    #[inline]
    fn add(&mut self, other: (u64, u64)) {
        self.0 += other.0;
        self.1 += other.1;
    }
}

/// Where a location's or collective's sums go: a map itself, or a `Batch` before it.
pub(crate) trait Sink<V> {
    fn add(&mut self, key: Key, v: V);
}

impl<V: Sum> Sink<V> for BTreeMap<Key, V> {
    #[inline]
    fn add(&mut self, key: Key, v: V) {
        self.entry(key).or_default().add(v);
    }
}

/// Additions to a map gathered while they go to the same key (a location's messages mostly
/// go to the same partner in the same frame one after the other): one map entry a run of
/// the key, the same totals and keys (`flush` at the end).
struct Batch<'m, V> {
    map: &'m mut BTreeMap<Key, V>,
    run: Option<(Key, V)>,
}

impl<'m, V: Sum> Batch<'m, V> {
    fn new(map: &'m mut BTreeMap<Key, V>) -> Self {
        Batch { map, run: None }
    }

    fn flush(&mut self) {
        if let Some((k, v)) = self.run.take() {
            self.map.add(k, v);
        }
    }
}

impl<V: Sum> Sink<V> for Batch<'_, V> {
    #[inline]
    fn add(&mut self, key: Key, v: V) {
        match &mut self.run {
            Some((k, x)) if *k == key => x.add(v),
            _ => {
                self.flush();
                self.run = Some((key, v));
            }
        }
    }
}

/// The integer sums of any set of locations and collective instances (added in any order).
#[derive(Default)]
pub(crate) struct Sums {
    pub sent: Sent,
    pub waits: Waits,
}

impl Sums {
    pub(crate) fn add(&mut self, other: Sums) {
        for (k, v) in other.sent {
            let x = self.sent.entry(k).or_default();
            x.0 += v.0;
            x.1 += v.1;
        }
        for (k, v) in other.waits {
            *self.waits.entry(k).or_default() += v;
        }
    }
}

/// Per location: its sampled lines (as sender) and its sums (bytes and messages it sent,
/// late-sender ticks it waited).
#[derive(Default)]
pub(crate) struct LocTraffic {
    pub lines: Vec<MessageLine>,
    pub sums: Sums,
}

/// Who talks to whom, per location and per collective instance, over frame windows.
pub(crate) struct Traffic<'a> {
    trace: &'a Trace,
    replay: &'a Replay,
    t0: u64,
    bounds: &'a [u64],
    res: f64,
}

/// The matched messages location `l` sent.
pub(crate) fn sends(trace: &Trace, replay: &Replay, l: usize) -> u64 {
    let (arg, links) = (&trace.events[l].arg[..], &replay.msg_links[l].partner[..]);
    let linked = |i: usize| matches!(links.get(arg[i] as usize), Some(p) if p.is_some());
    let mut n = 0;
    for i in KindsIn::new(
        &trace.events[l].kind,
        0,
        EventKind::MpiSend,
        EventKind::MpiIsend,
    ) {
        if linked(i) {
            n += 1;
        }
    }
    n
}

/// Per event kind (as a byte): `SEND` for a send, `RECV` for a receive (point to point),
/// else 0 (`Traffic::location`'s test of the kinds its walk finds).
const MESSAGE_KINDS: [u8; 256] = {
    let mut t = [0u8; 256];
    t[EventKind::MpiSend as usize] = SEND;
    t[EventKind::MpiIsend as usize] = SEND;
    t[EventKind::MpiRecv as usize] = RECV;
    t[EventKind::MpiIrecv as usize] = RECV;
    t
};
const SEND: u8 = 1;
const RECV: u8 = 2;

/// Every `stride`-th of `total` items keeps at most about `limit`.
pub(crate) fn stride(total: u64, limit: u64) -> u64 {
    total.div_ceil(limit).max(1)
}

impl<'a> Traffic<'a> {
    /// Over the frame windows `bounds` of a run starting at `t0`.
    pub(crate) fn new(trace: &'a Trace, replay: &'a Replay, t0: u64, bounds: &'a [u64]) -> Self {
        Traffic {
            trace,
            replay,
            t0,
            bounds,
            res: trace.timer_resolution.max(1) as f64,
        }
    }

    fn frame(&self, t: u64) -> usize {
        let n = self.bounds.len() - 1;
        self.bounds.partition_point(|&b| b <= t).clamp(1, n) - 1
    }

    /// `frame(t)`, the frame `hint` (the last one found) tried first; `hint` becomes it.
    #[inline(always)]
    fn frame_near(&self, t: u64, hint: &mut usize) -> usize {
        let (h, n, b) = (*hint, self.bounds.len() - 1, self.bounds);
        // frame h holds [b[h], b[h + 1]), the first also what is before, the last what is after
        if h < n && (h == 0 || b[h] <= t) && (h + 1 == n || t < b[h + 1]) {
            return h;
        }
        *hint = self.frame(t);
        *hint
    }

    /// The bytes of message event `i` of `ev` (a send or receive): `None` once the payloads
    /// were freed (`Events::msg` without the fields not read here).
    #[inline]
    fn bytes(ev: &Events, i: usize) -> Option<u64> {
        let k = ev.arg[i] as usize;
        ev.msg.peer.get(k)?;
        Some(ev.msg.bytes.get(k))
    }

    fn sec(&self, t: u64) -> f64 {
        t.saturating_sub(self.t0) as f64 / self.res
    }

    /// The time the call around event `i` of `l` was entered (the event's own if none).
    #[inline]
    fn entered(&self, l: usize, i: usize) -> u64 {
        match enterptr(self.replay, l, i) {
            NONE => self.trace.events[l].time.get(i),
            e => self.trace.events[l].time.get(e as usize),
        }
    }

    fn rank(&self, l: u32) -> Option<u32> {
        self.trace.defs.locations.get(l as usize)?.rank
    }

    /// Location `l`'s part: every `stride`-th message it sent as a line, its sums.
    pub(crate) fn location(&self, l: usize, stride: u64) -> LocTraffic {
        self.location_in(l, stride, &mut ())
    }

    /// `location`, each matched send also given to `row` (the traffic matrix's row of the
    /// location, `matrices::RowAcc`, made on the same walk).
    #[inline]
    fn location_in(&self, l: usize, stride: u64, row: &mut impl OnSend) -> LocTraffic {
        let mut out = LocTraffic::default();
        let ev = &self.trace.events[l];
        let Some(me) = self.rank(l as u32) else {
            return out;
        };
        let (mut sent, mut waits) = (
            Batch::new(&mut out.sums.sent),
            Batch::new(&mut out.sums.waits),
        );
        // the frame last found for a send and for a receive, tried first (`frame_near`:
        // messages come in time order), and `left`, the sends before the next sampled one
        // (every `stride`-th from the first: a count down, not a division a send)
        let (mut left, mut hint_s, mut hint_r) = (0u64, 0usize, 0usize);
        // this location's columns looked up once (`Cols::entered` of its events)
        let (time, mine) = (ev.time.view(), Cols::new(self.trace, self.replay, l));
        // `partner` and `rank`, their columns looked up once
        let (arg, links) = (&ev.arg[..], &self.replay.msg_links[l].partner[..]);
        let partner = |i: usize| (links.get(arg[i] as usize).copied()).filter(|p| p.is_some());
        let locations = &self.trace.defs.locations[..];
        // the senders' columns (`entered` of a receive's partner)
        let mut far = Near::new(self.trace, self.replay);
        // the sends and the receives in order (each adds to sums of its own, integer sums
        // by key, and to its own frame hint: the same sums and lines as the sends walked
        // first, then the receives)
        // (the kinds from MpiSend to MpiIrecv found 8 a word, the two between passed over)
        for i in KindsIn::new(&ev.kind, 0, EventKind::MpiSend, EventKind::MpiIrecv) {
            let m = MESSAGE_KINDS[ev.kind[i] as usize];
            if m == 0 {
                continue;
            }
            let send = m == SEND;
            let (Some(p), Some(bytes)) = (partner(i), Self::bytes(ev, i)) else {
                continue;
            };
            let Some(other) = locations.get(p.loc as usize).and_then(|d| d.rank) else {
                continue;
            };
            let (pl, pe) = (p.loc as usize, p.event as usize);
            if send {
                let t = mine.entered(i);
                row.send(arg[i] as usize, p, other, bytes, t);
                sent.add((self.frame_near(t, &mut hint_s), me, other), (bytes, 1));
                if left == 0 {
                    left = stride.saturating_sub(1);
                    out.lines.push(MessageLine {
                        from: l as u32,
                        to: p.loc,
                        send_s: self.sec(t),
                        recv_s: self.sec(self.trace.events[pl].time.get(pe)),
                        bytes,
                    });
                } else {
                    left -= 1;
                }
            } else {
                // late sender: the receive call waited from its start until the send began
                let r = mine.entered(i);
                let s = far.of(pl).entered(pe).min(time.get(i));
                self.spread(&mut waits, (r, s), (me, other), &mut hint_r);
            }
        }
        sent.flush();
        waits.flush();
        out
    }

    /// Add the wait `[from, until)` of rank `a` for rank `b` to the frames it overlaps.
    /// (`hint`: the frame last found, `frame_near`.)
    fn spread(
        &self,
        waits: &mut impl Sink<u64>,
        (from, until): (u64, u64),
        (a, b): (u32, u32),
        hint: &mut usize,
    ) {
        if until <= from {
            return;
        }
        let mut f = self.frame_near(from, hint);
        let last = self.bounds.len() - 1;
        while f < last && self.bounds[f] < until {
            let lo = from.max(self.bounds[f]);
            let hi = until.min(self.bounds[f + 1]);
            // the last frame also takes what lies past its end (the run's last tick)
            let hi = if f + 1 == last { until } else { hi };
            if hi > lo {
                waits.add((f, a, b), hi - lo);
            }
            f += 1;
        }
    }

    /// Collective instance `k` (`inst`): who waited for the last member to enter, added to
    /// `waits`; its mark when `k` is a multiple of `stride`.
    pub(crate) fn collective(
        &self,
        k: u64,
        inst: &Instance,
        stride: u64,
        waits: &mut Waits,
    ) -> Option<CollMark> {
        let enters: Vec<u64> = (inst.members.iter())
            .map(|m| self.entered(m.loc as usize, m.event as usize))
            .collect();
        let (last, &tl) = enters.iter().enumerate().max_by_key(|x| (*x.1, x.0))?;
        let lr = self.rank(inst.members[last].loc)?;
        for (m, &t) in inst.members.iter().zip(&enters) {
            match self.rank(m.loc) {
                Some(r) if r != lr => self.spread(waits, (t, tl), (r, lr), &mut 0),
                _ => {}
            }
        }
        if k % stride != 0 {
            return None;
        }
        let m0 = inst.members[0];
        let op = (self.trace.events[m0.loc as usize].coll(m0.event as usize))
            .map_or("collective", |c| collective_op_name(c.op));
        Some(CollMark {
            time_s: self.sec(tl),
            op,
            locations: inst.members.iter().map(|m| m.loc).collect(),
        })
    }
}

/// What `Traffic::location_in` does with each matched send of its location besides the
/// views' sums: nothing, or the traffic matrix's row (`matrices::RowAcc`).
trait OnSend {
    /// The send of payload `k` (not freed), matched with receive `p` on a location of rank
    /// `other`, of `bytes`, its call entered at `start`.
    fn send(&mut self, k: usize, p: EventRef, other: u32, bytes: u64, start: u64);
}

impl OnSend for () {
    #[inline(always)]
    fn send(&mut self, _: usize, _: EventRef, _: u32, _: u64, _: u64) {}
}

impl OnSend for RowAcc<'_> {
    #[inline(always)]
    fn send(&mut self, k: usize, p: EventRef, other: u32, bytes: u64, start: u64) {
        self.add(k, p, other, bytes, start);
    }
}

pub(super) fn compute(trace: &Trace, replay: &Replay, t0: u64, bounds: &[u64]) -> Out {
    compute_in(trace, replay, t0, bounds, false).0
}

/// `compute` and the traffic matrix's rows (`matrices::traffic_rows` of every location) from
/// the same walk over each location's messages.
pub(super) fn compute_with_rows(
    trace: &Trace,
    replay: &Replay,
    t0: u64,
    bounds: &[u64],
) -> (Out, Vec<TrafficRow>) {
    compute_in(trace, replay, t0, bounds, true)
}

/// `compute`, with the matrix's rows where `rows` (else none).
fn compute_in(
    trace: &Trace,
    replay: &Replay,
    t0: u64,
    bounds: &[u64],
    rows: bool,
) -> (Out, Vec<TrafficRow>) {
    let ctx = Traffic::new(trace, replay, t0, bounds);
    let nloc = trace.events.len();
    let total: u64 = (0..nloc)
        .into_par_iter()
        .map(|l| sends(trace, replay, l))
        .sum();
    let message_stride = stride(total, MESSAGE_LIMIT);
    let per_loc: Vec<(LocTraffic, Option<TrafficRow>)> = (0..nloc)
        .into_par_iter()
        .map(|l| {
            // a row for each location with a rank (`traffic_rows`)
            match trace.defs.locations[l].rank.filter(|_| rows) {
                Some(a) => {
                    let mut row = RowAcc::new(trace, replay, l);
                    let lt = ctx.location_in(l, message_stride, &mut row);
                    (lt, Some((a, row.finish())))
                }
                None => (ctx.location(l, message_stride), None),
            }
        })
        .collect();
    let mut matrix_rows = Vec::new();
    let per_loc: Vec<LocTraffic> = (per_loc.into_iter())
        .map(|(lt, row)| {
            matrix_rows.extend(row);
            lt
        })
        .collect();
    let mut sums = Sums::default();
    let mut messages = Vec::new();
    for lt in per_loc {
        messages.extend(lt.lines);
        sums.add(lt.sums);
    }
    let all = &replay.instances;
    let cstride = stride(all.len() as u64, COLLECTIVE_LIMIT);
    let collectives = (all.iter().enumerate())
        .filter_map(|(k, inst)| ctx.collective(k as u64, inst, cstride, &mut sums.waits))
        .collect();
    let sampled = Sampled {
        messages,
        messages_total: total,
        message_stride,
        collectives,
        collectives_total: all.len() as u64,
    };
    (finish(trace, bounds, sampled, sums), matrix_rows)
}

/// The sampled message lines and collective marks of a run, with their totals.
pub(crate) struct Sampled {
    pub messages: Vec<MessageLine>,
    pub messages_total: u64,
    pub message_stride: u64,
    pub collectives: Vec<CollMark>,
    pub collectives_total: u64,
}

/// The traffic views from the run's sampled lines and marks and its sums (`compute`, or
/// the parts of a job's processes gathered): the matrices per frame, the nodes, Kiviat
/// counts, graph and orderings.
pub(crate) fn finish(trace: &Trace, bounds: &[u64], s: Sampled, sums: Sums) -> Out {
    let res = trace.timer_resolution.max(1) as f64;
    let nframes = bounds.len() - 1;
    let Sums { sent, waits } = sums;
    let ranks = (trace.defs.locations.iter())
        .filter_map(|l| l.rank)
        .max()
        .map_or(0, |r| r + 1);
    let mut traffic = vec![WindowMatrix::default(); nframes];
    for (&(f, a, b), &(bytes, n)) in &sent {
        traffic[f].cells.push((a, b, bytes as f64, n));
    }
    let mut wait_frames = vec![WindowMatrix::default(); nframes];
    for (&(f, a, b), &t) in &waits {
        wait_frames[f].cells.push((a, b, t as f64 / res, 0));
    }
    let nodes = nodes(trace, ranks);
    let kiviat = kiviat(&traffic, &nodes, ranks);
    let edges = edges(&sent);
    let orders = orders(ranks, &sent, &edges);
    Out {
        sampled: s,
        traffic,
        waits: wait_frames,
        ranks,
        nodes,
        kiviat,
        orders,
        edges,
    }
}

/// The nodes of the system tree that hold processes (each process's location group's
/// parent), in order of their first rank; ranks whose process has none on "unknown".
fn nodes(trace: &Trace, ranks: u32) -> Vec<Node> {
    let d = &trace.defs;
    let mut by_node: BTreeMap<Option<usize>, Vec<u32>> = BTreeMap::new();
    let mut seen = vec![false; ranks as usize];
    for l in &d.locations {
        let Some(r) = l.rank else { continue };
        if std::mem::replace(&mut seen[r as usize], true) {
            continue;
        }
        let node = (l.group)
            .and_then(|g| d.location_groups.get(g))
            .and_then(|g| g.system_tree_parent);
        by_node.entry(node).or_default().push(r);
    }
    let mut nodes: Vec<Node> = by_node
        .into_iter()
        .map(|(n, mut ranks)| {
            ranks.sort_unstable();
            let name = n
                .and_then(|i| d.system_tree.get(i))
                .map_or("unknown".to_string(), |s| s.name.clone());
            Node { name, ranks }
        })
        .collect();
    nodes.sort_by_key(|n| n.ranks.first().copied());
    nodes
}

/// Messages sent by each node's ranks up to the end of each frame.
fn kiviat(traffic: &[WindowMatrix], nodes: &[Node], ranks: u32) -> Vec<Vec<u64>> {
    let mut node_of = vec![0usize; ranks as usize];
    for (k, n) in nodes.iter().enumerate() {
        for &r in &n.ranks {
            node_of[r as usize] = k;
        }
    }
    let mut cum = vec![0u64; nodes.len()];
    (traffic.iter())
        .map(|f| {
            for c in &f.cells {
                if let Some(&k) = node_of.get(c.0 as usize) {
                    cum[k] += c.3;
                }
            }
            cum.clone()
        })
        .collect()
}

fn edges(sent: &Sent) -> Vec<Edge> {
    let mut e: BTreeMap<(u32, u32), (u64, u64)> = BTreeMap::new();
    for (&(_, a, b), &(bytes, n)) in sent {
        if a == b {
            continue;
        }
        let x = e.entry((a.min(b), a.max(b))).or_default();
        x.0 += bytes;
        x.1 += n;
    }
    e.into_iter()
        .map(|((a, b), (bytes, messages))| Edge {
            a,
            b,
            bytes,
            messages,
        })
        .collect()
}

fn orders(ranks: u32, sent: &Sent, edges: &[Edge]) -> Vec<Order> {
    let mut by = vec![(0u64, 0u64); ranks as usize];
    for (&(_, a, _), &(bytes, n)) in sent {
        by[a as usize].0 += bytes;
        by[a as usize].1 += n;
    }
    let sorted = |key: &dyn Fn(u32) -> u64| {
        let mut v: Vec<u32> = (0..ranks).collect();
        v.sort_by_key(|&r| (std::cmp::Reverse(key(r)), r));
        v
    };
    vec![
        Order {
            name: "rank",
            ranks: (0..ranks).collect(),
        },
        Order {
            name: "messages sent",
            ranks: sorted(&|r| by[r as usize].1),
        },
        Order {
            name: "bytes sent",
            ranks: sorted(&|r| by[r as usize].0),
        },
        Order {
            name: "affinity",
            ranks: affinity(ranks, edges),
        },
    ]
}

/// Ranks that talk to each other next to each other: the maximum spanning tree of the
/// communication graph (bytes both ways), walked depth first from its heaviest rank, the
/// heaviest edge first; components by their heaviest rank, silent ranks last.
pub fn affinity(ranks: u32, edges: &[Edge]) -> Vec<u32> {
    use petgraph::algo::min_spanning_tree;
    use petgraph::data::Element;
    use petgraph::graph::UnGraph;
    let mut g = UnGraph::<u32, i128>::with_capacity(ranks as usize, edges.len());
    let ix: Vec<_> = (0..ranks).map(|r| g.add_node(r)).collect();
    let mut weight = vec![0u64; ranks as usize];
    for e in edges {
        // heaviest first; ties by the pair, so the tree does not depend on the edge order
        let w = -(e.bytes.max(1) as i128) * (1 << 40) + (e.a as i128) * (1 << 20) + e.b as i128;
        g.add_edge(ix[e.a as usize], ix[e.b as usize], w);
        weight[e.a as usize] += e.bytes;
        weight[e.b as usize] += e.bytes;
    }
    let mut adj: Vec<Vec<(u64, u32)>> = vec![Vec::new(); ranks as usize];
    for el in min_spanning_tree(&g) {
        if let Element::Edge { source, target, .. } = el {
            let (a, b) = (source as u32, target as u32);
            let e = (edges.iter()).find(|e| (e.a, e.b) == (a.min(b), a.max(b)));
            let w = e.map_or(0, |e| e.bytes);
            adj[a as usize].push((w, b));
            adj[b as usize].push((w, a));
        }
    }
    for a in &mut adj {
        a.sort_by_key(|&(w, r)| (std::cmp::Reverse(w), r));
    }
    let mut start: Vec<u32> = (0..ranks).collect();
    start.sort_by_key(|&r| {
        (
            weight[r as usize] == 0,
            std::cmp::Reverse(weight[r as usize]),
            r,
        )
    });
    let mut seen = vec![false; ranks as usize];
    let mut out = Vec::with_capacity(ranks as usize);
    for s in start {
        if seen[s as usize] {
            continue;
        }
        let mut stack = vec![farthest(&adj, s)];
        while let Some(r) = stack.pop() {
            if std::mem::replace(&mut seen[r as usize], true) {
                continue;
            }
            out.push(r);
            // pushed lightest first, so the heaviest is taken next
            stack.extend(adj[r as usize].iter().rev().map(|x| x.1));
        }
    }
    out
}

/// The rank farthest from `s` in the tree (fewest hops; ties: the lowest rank): an end of
/// its longest path, where a depth-first walk leaves chains unbroken.
fn farthest(adj: &[Vec<(u64, u32)>], s: u32) -> u32 {
    let mut dist = vec![u32::MAX; adj.len()];
    dist[s as usize] = 0;
    let mut queue = std::collections::VecDeque::from([s]);
    let mut best = (0, s);
    while let Some(r) = queue.pop_front() {
        let d = dist[r as usize];
        if d > best.0 || (d == best.0 && r < best.1) {
            best = (d, r);
        }
        for &(_, n) in &adj[r as usize] {
            if dist[n as usize] == u32::MAX {
                dist[n as usize] = d + 1;
                queue.push_back(n);
            }
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(a: u32, b: u32, bytes: u64) -> Edge {
        Edge {
            a,
            b,
            bytes,
            messages: 1,
        }
    }

    #[test]
    fn affinity_puts_partners_together() {
        // pairs 0-3 and 1-2 talk a lot, 4 is silent, 0-1 a little: the chain 2-1-0-3
        let edges = [e(0, 3, 1000), e(1, 2, 900), e(0, 1, 10)];
        assert_eq!(affinity(5, &edges), [2, 1, 0, 3, 4]);
        // a ring in scrambled numbering comes out as the ring
        let ring = [
            e(0, 2, 50),
            e(2, 4, 50),
            e(4, 1, 50),
            e(1, 3, 50),
            e(3, 0, 5),
        ];
        assert_eq!(affinity(5, &ring), [0, 2, 4, 1, 3]);
    }
}
