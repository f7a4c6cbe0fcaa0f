//! The archive writer behind `gen_pingpong`: the OTF2 trace that
//! `../shared/bench/gen_pingpong_trace.py` writes with the official writer (PyPI `otf2` 3.2,
//! libotf2 3.2), byte for byte, written directly (formats.md §A).
//!
//! What makes the bytes equal, beyond the record layouts of formats.md A.9/A.10:
//! * the definitions come in the order the Python writer emits them (each String just before
//!   the first definition that names it; system tree, location groups, locations, regions,
//!   groups, communicator) and the record length takes the long form (0xff + u64) exactly
//!   when the payload is 255 bytes or more;
//! * libotf2 starts a new event chunk when `upper bound of the record + 9` (a timestamp) is
//!   not smaller than the bytes left in the chunk, where the upper bound of Enter/Leave is 6
//!   bytes and of MpiSend/MpiRecv 26 (every compressed field at its largest, plus type and
//!   length bytes); the chunk header holds the numbers of its first and last event;
//! * a timestamp item precedes every event whose time differs from the previous one (here:
//!   every event, the first one at time 0 included).
//!
//! The chunked stream, compressed integers and the anchor are the library's
//! (`perfexpert::convert::otf2::stream`, which `perfexpert convert --to otf2` writes with);
//! this file keeps what is particular to the ping-pong: its definitions and records.
//!
//! Two values differ from run to run with the official writer: the anchor's random trace
//! identifier and ClockProperties' realtime timestamp (wall clock at writing). Both are
//! parameters here, so a test can reproduce an official archive exactly.

use perfexpert::convert::otf2::stream::{self, u32c, u64c, AnchorInfo, Stream};
pub use perfexpert::convert::otf2::stream::{empty_local_defs, DEF_CHUNK, EVENT_CHUNK};
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;

const ENTER: u8 = 12;
const LEAVE: u8 = 13;
const MPI_SEND: u8 = 14;
const MPI_RECV: u8 = 18;
/// Upper bounds the official event writer reserves (record type, length, fields at max).
const BOUND_ENTER_LEAVE: usize = 6;
const BOUND_MSG: usize = 26;

// Region ids, in definition order.
const MAIN: u32 = 0;
const SEND: u32 = 1;
const RECV: u32 = 2;
const COMPUTE: u32 = 3;
/// Only in traces with planted edits (`--plant`): the region that replaces `compute`.
const PLANTED: u32 = 4;

/// The program `gen_pingpong_trace.py` traces.
#[derive(Clone, Copy, Debug)]
pub struct PingPong {
    pub ranks: u32,
    pub iterations: u32,
}

impl PingPong {
    /// Events per location: main's Enter/Leave and 5 per iteration.
    pub fn events_per_rank(&self) -> u64 {
        5 * self.iterations as u64 + 2
    }

    pub fn events(&self) -> u64 {
        self.ranks as u64 * self.events_per_rank()
    }

    /// The time of every rank's last event (all ranks run in lockstep).
    pub fn trace_length(&self) -> u64 {
        self.iterations as u64 * 1160 + 10
    }
}

/// The two values the official writer takes from the clock and a random source.
#[derive(Clone, Copy, Debug)]
pub struct Stamp {
    pub trace_id: u64,
    pub realtime_ns: u64,
}

/// Appends a message record (MpiSend/MpiRecv: peer, communicator 0, tag, 64 bytes).
fn msg_record(rec: &mut Vec<u8>, ty: u8, peer: u32, tag: u32) {
    rec.clear();
    rec.push(ty);
    rec.push(0); // length, set below
    u32c(rec, peer);
    u32c(rec, 0); // MPI_COMM_WORLD
    u32c(rec, tag);
    u64c(rec, 64);
    rec[1] = (rec.len() - 2) as u8;
}

/// Writes `traces/<rank>.evt`: rank `r` of the ping-pong program, with `compute_planted`
/// instead of `compute` in the iterations `planted` (sorted; none for the benchmark trace).
pub fn write_events(p: PingPong, rank: u32, planted: &[u32], path: &Path) -> io::Result<()> {
    let file = File::create(path)?;
    let mut s = Stream::new(BufWriter::with_capacity(EVENT_CHUNK, file), EVENT_CHUNK);
    let region = |ty: u8, r: u32| -> ([u8; 3], usize) {
        if r == 0 {
            ([ty, 0, 0], 2)
        } else {
            ([ty, 1, r as u8], 3)
        }
    };
    let (enter_main, n_em) = region(ENTER, MAIN);
    let (leave_main, n_lm) = region(LEAVE, MAIN);
    let (enter_compute, _) = region(ENTER, COMPUTE);
    let (leave_compute, _) = region(LEAVE, COMPUTE);
    let (enter_planted, _) = region(ENTER, PLANTED);
    let (leave_planted, _) = region(LEAVE, PLANTED);
    let mut next_plant = planted.iter().copied().peekable();
    let sender = rank % 2 == 0;
    let op = if sender { SEND } else { RECV };
    let (enter_op, _) = region(ENTER, op);
    let (leave_op, _) = region(LEAVE, op);
    let msg_type = if sender { MPI_SEND } else { MPI_RECV };
    let peer = rank ^ 1;
    let mut rec = Vec::with_capacity(32);

    let mut t = 0u64;
    s.event(t, BOUND_ENTER_LEAVE, &enter_main[..n_em])?;
    for i in 0..p.iterations {
        t += 100;
        let plant = next_plant.next_if_eq(&i).is_some();
        let (enter_c, leave_c) = if plant {
            (&enter_planted, &leave_planted)
        } else {
            (&enter_compute, &leave_compute)
        };
        s.event(t, BOUND_ENTER_LEAVE, enter_c)?;
        t += 1000;
        s.event(t, BOUND_ENTER_LEAVE, leave_c)?;
        t += 10;
        s.event(t, BOUND_ENTER_LEAVE, &enter_op)?;
        msg_record(&mut rec, msg_type, peer, i);
        s.event(t + 5, BOUND_MSG, &rec)?;
        t += 50;
        s.event(t, BOUND_ENTER_LEAVE, &leave_op)?;
    }
    t += 10;
    s.event(t, BOUND_ENTER_LEAVE, &leave_main[..n_lm])?;
    debug_assert_eq!(s.events, p.events_per_rank());
    s.finish()?;
    Ok(())
}

/// The global definitions (`traces.def`) and their number; with the region
/// `compute_planted` after the others when `planted`.
pub fn global_defs(p: PingPong, planted: bool, stamp: Stamp) -> io::Result<(Vec<u8>, u64)> {
    let mut s = Stream::new(Vec::new(), DEF_CHUNK);
    let mut strings = 0u32;
    let mut b = Vec::new();
    // String (10): self, text. Ids run in order of appearance.
    let mut string = |s: &mut Stream<Vec<u8>>, text: &str| -> io::Result<u32> {
        let id = strings;
        strings += 1;
        let mut b = Vec::new();
        u32c(&mut b, id);
        b.extend_from_slice(text.as_bytes());
        b.push(0);
        s.def(10, &b)?;
        Ok(id)
    };

    // ClockProperties (5): resolution, global offset, length, realtime.
    b.clear();
    u64c(&mut b, 1_000_000_000);
    u64c(&mut b, 0);
    u64c(&mut b, p.trace_length());
    u64c(&mut b, stamp.realtime_ns);
    s.def(5, &b)?;
    let mut count = 1u64;

    let empty = string(&mut s, "")?;
    let machine = string(&mut s, "machine")?;
    // SystemTreeNode (12): self, name, class name, parent.
    b.clear();
    u32c(&mut b, 0);
    u32c(&mut b, machine);
    u32c(&mut b, empty);
    u32c(&mut b, u32::MAX);
    s.def(12, &b)?;
    let node0 = string(&mut s, "node0")?;
    b.clear();
    u32c(&mut b, 1);
    u32c(&mut b, node0);
    u32c(&mut b, empty);
    u32c(&mut b, 0);
    s.def(12, &b)?;
    count += 2;

    for r in 0..p.ranks {
        let name = string(&mut s, &format!("MPI Rank {r}"))?;
        // LocationGroup (13): self, name, type PROCESS, system tree parent, creating group.
        b.clear();
        u32c(&mut b, r);
        u32c(&mut b, name);
        b.push(1);
        u32c(&mut b, 1);
        u32c(&mut b, u32::MAX);
        s.def(13, &b)?;
        count += 1;
    }
    let thread = string(&mut s, "Master thread")?;
    for r in 0..p.ranks {
        // Location (14): self (u64c), name, type CPU_THREAD, number of events, group.
        b.clear();
        u64c(&mut b, r as u64);
        u32c(&mut b, thread);
        b.push(1);
        u64c(&mut b, p.events_per_rank());
        u32c(&mut b, r);
        s.def(14, &b)?;
        count += 1;
    }
    // Region (15): self, name, description, region type (deprecated), source file, begin and
    // end line, canonical name, role, paradigm, flags.
    let regions = [
        (MAIN, "main", 3u8, 1u8, 1u8), // FUNCTION, USER
        (SEND, "MPI_Send", 0, 28, 4),  // POINT2POINT, MPI
        (RECV, "MPI_Recv", 0, 28, 4),
        (COMPUTE, "compute", 3, 1, 1),
        (PLANTED, "compute_planted", 3, 1, 1),
    ];
    for (id, text, old_type, role, paradigm) in regions.into_iter().take(4 + planted as usize) {
        let name = string(&mut s, text)?;
        b.clear();
        u32c(&mut b, id);
        u32c(&mut b, name);
        u32c(&mut b, empty);
        b.push(old_type);
        u32c(&mut b, u32::MAX);
        u32c(&mut b, 0);
        u32c(&mut b, 0);
        u32c(&mut b, name);
        b.push(role);
        b.push(paradigm);
        u32c(&mut b, 0);
        s.def(15, &b)?;
        count += 1;
    }
    // Group (18): self, name, pre-1.2 type, members (u64c each), type, paradigm, flags.
    // Group 0: COMM_LOCATIONS (pre-1.2 MPI_LOCATIONS) of the location ids; group 1:
    // COMM_GROUP (pre-1.2 MPI_GROUP) of the world ranks.
    for (id, old_type, ty) in [(0u32, 6u8, 4u8), (1, 4, 5)] {
        b.clear();
        u32c(&mut b, id);
        u32c(&mut b, empty);
        b.push(old_type);
        u32c(&mut b, p.ranks);
        for r in 0..p.ranks {
            u64c(&mut b, r as u64);
        }
        b.push(ty);
        b.push(4); // MPI
        u32c(&mut b, 0);
        s.def(18, &b)?;
        count += 1;
    }
    let world = string(&mut s, "MPI_COMM_WORLD")?;
    // Comm (22): self, name, group, parent, flags.
    b.clear();
    u32c(&mut b, 0);
    u32c(&mut b, world);
    u32c(&mut b, 1);
    u32c(&mut b, u32::MAX);
    u32c(&mut b, 0);
    s.def(22, &b)?;
    count += 1;
    let bytes = s.finish()?;
    Ok((bytes, count + strings as u64))
}

/// The anchor file `traces.otf2` (formats.md A.2): OTF2 3.2.0, anchor format 3, POSIX, no
/// compression, no properties, snapshots or thumbnails.
pub fn anchor(p: PingPong, defs: u64, stamp: Stamp) -> Vec<u8> {
    stream::anchor(&AnchorInfo {
        locations: p.ranks as u64,
        global_definitions: defs,
        trace_id: stamp.trace_id,
        ..AnchorInfo::default()
    })
}

/// Writes the whole archive into `dir` (`traces.otf2`, `traces.def`, `traces/<r>.def` and
/// `traces/<r>.evt`); `each_rank` runs the event files, e.g. in parallel.
#[allow(dead_code)] // tests/gen_pingpong.rs and tests/memory_limit.rs call it
pub fn write_archive(
    p: PingPong,
    dir: &Path,
    stamp: Stamp,
    each_rank: impl FnOnce(&(dyn Fn(u32) -> io::Result<()> + Sync)) -> io::Result<()>,
) -> io::Result<()> {
    write_archive_planted(p, &[], dir, stamp, each_rank)
}

/// Places of planted edits: `n` distinct (rank, iteration) pairs drawn from a fixed
/// pseudo-random sequence (the same for the same arguments), sorted.
pub fn plant_places(p: PingPong, n: u32) -> Vec<(u32, u32)> {
    let total = p.ranks as u64 * p.iterations as u64;
    let n = (n as u64).min(total);
    let mut x = 0x5eed_u64 ^ total;
    let mut set = std::collections::BTreeSet::new();
    while (set.len() as u64) < n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = (x >> 11) % total;
        set.insert(((k % p.ranks as u64) as u32, (k / p.ranks as u64) as u32));
    }
    set.into_iter().collect()
}

/// `write_archive`, with `compute_planted` instead of `compute` at the (rank, iteration)
/// places `planted` (sorted); with none, the same archive as `write_archive`.
pub fn write_archive_planted(
    p: PingPong,
    planted: &[(u32, u32)],
    dir: &Path,
    stamp: Stamp,
    each_rank: impl FnOnce(&(dyn Fn(u32) -> io::Result<()> + Sync)) -> io::Result<()>,
) -> io::Result<()> {
    let sub = dir.join("traces");
    std::fs::create_dir_all(&sub)?;
    let (defs, n) = global_defs(p, !planted.is_empty(), stamp)?;
    std::fs::write(dir.join("traces.def"), defs)?;
    let local = empty_local_defs();
    each_rank(&|r| {
        std::fs::write(sub.join(format!("{r}.def")), &local)?;
        let mine: Vec<u32> = planted
            .iter()
            .filter(|(rank, _)| *rank == r)
            .map(|&(_, i)| i)
            .collect();
        write_events(p, r, &mine, &sub.join(format!("{r}.evt")))
    })?;
    // The anchor last: a half-written archive has none, so no reader mistakes it for whole.
    std::fs::write(dir.join("traces.otf2"), anchor(p, n, stamp))
}
