//! The data of the HTML report's views of the run over time (issue 25), computed here so the
//! page only draws: the space-time timeline aggregated per pixel column at a bounded number
//! of zoom levels (`timeline`), frames per time window for the animations (process states,
//! wait-time and traffic matrices, each node's share of the messages), orderings of the
//! ranks by traffic and by communication affinity, the process graph and the process → node
//! mapping (`traffic`), and per-process time by class.
//!
//! Classes of time: computation, MPI, MPI synchronisation, OpenMP, OpenMP synchronisation,
//! and one class per wait-state metric (the rules' wait states, by the same test as the
//! findings). A wait state's time on a (call path, location) is drawn as that share of each
//! visit of the call path there: its total per call path and location is exact, its
//! position within the visits is not (the worst instances are drawn where they happened).

pub(crate) mod timeline;
pub(crate) mod traffic;

use super::Analysis;
use crate::model::Trace;
use crate::replay::Replay;
use crate::rules::{Trigger, Unit};

pub use timeline::{Level, Piece};
pub use traffic::{CollMark, Edge, MessageLine, Node, Order, WindowMatrix};

/// One class of time on the timeline.
#[derive(Clone, Debug, PartialEq)]
pub struct Class {
    /// What the legend says: "computation", "MPI", ..., or the wait-state metric's name.
    pub name: String,
    /// The wait-state metric's id (None for the base classes).
    pub metric: Option<String>,
    /// The group of the per-process pies: 0 computation, 1 communication,
    /// 2 synchronisation, 3 waiting.
    pub group: u8,
}

/// A class and, for a wait state, its rule index and the rule indices of its wait-state
/// children (their time is not the parent's own).
pub(crate) type ClassRule = (Class, Option<(usize, Vec<usize>)>);

/// The base classes, in this order before the wait states.
pub const COMPUTATION: u8 = 0;
pub const MPI: u8 = 1;
pub const MPI_SYNC: u8 = 2;
pub const OPENMP: u8 = 3;
pub const OPENMP_SYNC: u8 = 4;
const BASE: [(&str, u8); 5] = [
    ("computation", 0),
    ("MPI", 1),
    ("MPI synchronisation", 2),
    ("OpenMP", 1),
    ("OpenMP synchronisation", 2),
];
/// At most this many classes (4 bits a cell; 15 means "no data").
pub const MAX_CLASSES: usize = 15;

/// One location's row: its label and time per class.
#[derive(Clone, Debug)]
pub struct LocationRow {
    /// Index into `Trace::defs.locations` (= the report's `locations`).
    pub index: usize,
    pub rank: Option<u32>,
    /// Seconds per class over the run (the pies).
    pub by_class: Vec<f64>,
}

/// Everything the views of the run show.
#[derive(Clone, Debug)]
pub struct Views {
    pub duration_s: f64,
    pub classes: Vec<Class>,
    pub locations: Vec<LocationRow>,
    /// Coarsest first; level k has `columns` cells per location.
    pub levels: Vec<Level>,
    /// Every piece of every location (start, end, call path, class), when the trace is small
    /// enough (`timeline::PIECE_LIMIT`); else empty and the levels are drawn.
    pub pieces: Vec<Piece>,
    /// The call paths the cells and pieces name, as `region/region/...`.
    pub callpaths: Vec<(u32, String)>,
    /// Matched messages, every `message_stride`-th in send order per location.
    pub messages: Vec<MessageLine>,
    pub messages_total: u64,
    pub message_stride: u64,
    pub collectives: Vec<CollMark>,
    pub collectives_total: u64,
    /// Frame boundaries, seconds from the run's start (frames = len - 1).
    pub windows: Vec<f64>,
    /// Which phase (1-based) each frame lies in.
    pub window_phase: Vec<usize>,
    /// Per frame, per location (in `locations` order): the dominant class, and its share
    /// of the frame in percent.
    pub states: Vec<Vec<(u8, u8)>>,
    /// Per frame: bytes and messages from rank to rank (sent in the frame).
    pub traffic: Vec<WindowMatrix>,
    /// Per frame: seconds a rank waited for another in the frame (late senders; the last
    /// to enter a collective).
    pub waits: Vec<WindowMatrix>,
    pub ranks: u32,
    /// Nodes (hosts) of the system tree with their ranks; `kiviat[frame][node]`:
    /// messages the node's ranks sent up to the end of the frame.
    pub nodes: Vec<Node>,
    pub kiviat: Vec<Vec<u64>>,
    /// Orderings of the ranks: by rank, by messages and by bytes sent, by affinity.
    pub orders: Vec<Order>,
    /// The communication graph: bytes and messages between two ranks (both directions).
    pub edges: Vec<Edge>,
}

/// The part of the views that reads the messages' payloads (the traffic, message lines,
/// orderings and graph; `traffic::compute`), with the frame windows: computed before the
/// payloads are freed, the rest (`views_rest`, the timeline) after, beside the critical path.
pub struct TrafficPart {
    win: traffic::Windows,
    tr: traffic::Out,
}

/// The views' payload readers (`TrafficPart`).
pub fn views_traffic(
    trace: &Trace,
    replay: &Replay,
    phases: &[super::phases::Phase],
) -> TrafficPart {
    let (t0, t1) = trace.time_span().unwrap_or((0, 0));
    let win = traffic::windows(phases, t0, t1);
    let tr = traffic::compute(trace, replay, t0, &win.bounds);
    TrafficPart { win, tr }
}

/// `views_traffic` and the traffic matrix (`matrices::traffic_matrix`), from one walk over
/// each location's messages (the matrix's rows made with the views' sums,
/// `traffic::compute_with_rows`).
pub fn views_traffic_with_matrix(
    trace: &Trace,
    replay: &Replay,
    phases: &[super::phases::Phase],
) -> (TrafficPart, super::matrices::TrafficMatrix) {
    let (t0, t1) = trace.time_span().unwrap_or((0, 0));
    let win = traffic::windows(phases, t0, t1);
    let (tr, rows) = traffic::compute_with_rows(trace, replay, t0, &win.bounds);
    let matrix = {
        let _s = tracing::info_span!("traffic matrix").entered();
        super::matrices::traffic_from_rows(trace, rows)
    };
    (TrafficPart { win, tr }, matrix)
}

/// The views of the run (only when the HTML report is written): the timeline, which reads
/// no message payload, and `part` (`views_traffic`).
pub fn views_rest(trace: &Trace, replay: &Replay, a: &Analysis, part: TrafficPart) -> Views {
    let TrafficPart { win, tr } = part;
    let classes = classes(a);
    let span = trace.time_span().unwrap_or((0, 0));
    let tl = timeline::compute(trace, replay, a, &classes, span, &win.bounds);
    assemble(trace, replay, (classes, span), win, tl, tr)
}

/// The views from their parts over the run's `span`: the timeline's `tl` and the
/// traffic's `tr` over the frame windows `win`, with the `classes` (`views_rest`, or a job's
/// rank 0 from its processes' parts).
pub(crate) fn assemble(
    trace: &Trace,
    replay: &Replay,
    (classes, (t0, t1)): (Vec<ClassRule>, (u64, u64)),
    win: traffic::Windows,
    tl: timeline::Out,
    tr: traffic::Out,
) -> Views {
    let res = trace.timer_resolution.max(1) as f64;
    let sec = |t: u64| t.saturating_sub(t0) as f64 / res;
    Views {
        duration_s: sec(t1),
        classes: classes.into_iter().map(|c| c.0).collect(),
        locations: tl.rows,
        levels: tl.levels,
        pieces: tl.pieces,
        callpaths: tl
            .cnodes
            .iter()
            .map(|&c| (c, replay.path_name(trace, c)))
            .collect(),
        messages: tr.sampled.messages,
        messages_total: tr.sampled.messages_total,
        message_stride: tr.sampled.message_stride,
        collectives: tr.sampled.collectives,
        collectives_total: tr.sampled.collectives_total,
        windows: win.bounds.iter().map(|&t| sec(t)).collect(),
        window_phase: win.phase,
        states: tl.states,
        traffic: tr.traffic,
        waits: tr.waits,
        ranks: tr.ranks,
        nodes: tr.nodes,
        kiviat: tr.kiviat,
        orders: tr.orders,
        edges: tr.edges,
    }
}

/// The classes (`ClassRule`).
pub(crate) fn classes(a: &Analysis) -> Vec<ClassRule> {
    let mut out: Vec<ClassRule> = BASE
        .iter()
        .map(|&(n, g)| {
            (
                Class {
                    name: n.to_string(),
                    metric: None,
                    group: g,
                },
                None,
            )
        })
        .collect();
    let rules = &a.rules.rules;
    let is_wait = |k: usize| {
        rules[k].info.unit == Unit::Sec
            && !matches!(
                rules[k].on,
                Trigger::Callpath | Trigger::Sum | Trigger::Derived
            )
    };
    for &k in &a.order {
        // wait states that found nothing in this trace get no colour
        if !is_wait(k) || out.len() == MAX_CLASSES || a.values[k].iter().all(|&v| v == 0.0) {
            continue;
        }
        let id = &rules[k].info.id;
        let kids = (a.order.iter().copied())
            .filter(|&j| is_wait(j) && rules[j].info.parent.as_deref() == Some(id.as_str()))
            .collect();
        out.push((
            Class {
                name: rules[k].info.name.clone(),
                metric: Some(id.clone()),
                group: 3,
            },
            Some((k, kids)),
        ));
    }
    out
}
