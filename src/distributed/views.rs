//! The HTML report's views of the run (`analysis::views::Views`) over the shares of a job
//! (issue 24), equal to the single process's to the bit.
//!
//! Each process walks the locations it holds with the single-process hooks
//! (`timeline::Timeline::walk`: cells per pixel column of every zoom level, time per class,
//! frame states, the pieces of a small trace; `traffic::Traffic::location`: the sampled
//! message lines it sent, the bytes and messages it sent and the late-sender waits it
//! suffered per frame; `traffic::Traffic::collective` for the collective instances whose
//! first member it holds), reading a remote partner or member through its ghosts
//! (`needs`). Three rounds:
//!
//! 1. one `all_gather` (44 bytes a process): the span, events, matched sends and instances
//!    held, from which every process has the run's span, the frame windows
//!    (`traffic::windows` of the phases, `extras::detect_phases`), the zoom levels, whether
//!    pieces are kept and the strides of the message and collective samples;
//! 2. one `all_to_all` from rank 0, which holds the assembled analysis: the number of
//!    classes, and to each owner its locations' wait cells (`timeline::WaitCell`, 16 bytes
//!    each: the wait states' severity per call path, what the timeline's shares read);
//! 3. one `all_to_all` to rank 0: per held location its timeline part and lines, per
//!    process its integer sums (32 bytes a (frame, rank, rank) cell) and sampled collective
//!    marks; rank 0 adds them (`traffic::finish`, `Timeline::assemble`, `views::assemble`).

use super::ghost::{Ghosted, Needs};
use super::wire::{Reader, Writer};
use super::Transport;
use crate::analysis::phases::Phase;
use crate::analysis::views::timeline::{LocOut, Timeline, WaitCell};
use crate::analysis::views::traffic::{self, Sampled, Sums, Traffic};
use crate::analysis::views::{self, CollMark, MessageLine, Piece, Views};
use crate::analysis::Analysis;
use crate::model::collective_op_name;
use rayon::prelude::*;

/// The ghosts the views read (to be united with the rules' needs): the partners of the
/// messages (their times and calls), the members of the collective instances.
pub fn needs() -> Needs {
    Needs {
        p2p: true,
        members: true,
        world: Vec::new(),
    }
}

/// What every process knows of the job after the first round.
struct Job {
    span: (u64, u64),
    events: u64,
    sends: u64,
    instances: u64,
}

/// The views of the run from the ghosted shares `g` (ghosts as `needs` says), the phases
/// (`extras::detect_phases`, on every process) and, on rank 0, the assembled analysis `a`
/// (`analysis::assemble`); `Some` on rank 0, `None` elsewhere.
pub fn views(
    g: &Ghosted,
    phases: &[Phase],
    a: Option<&Analysis>,
    t: &dyn Transport,
) -> Result<Option<Views>, String> {
    let me = t.rank() as u32;
    let (trace, replay) = (&g.trace, &g.replay);
    let held: Vec<usize> = (0..trace.events.len())
        .filter(|&l| g.owner.get(l) == Some(&me))
        .collect();
    let is_held = |l: u32| g.owner.get(l as usize) == Some(&me);
    let owned: Vec<usize> = (0..replay.instances.len())
        .filter(|&i| (replay.instances[i].members.first()).is_some_and(|m| is_held(m.loc)))
        .collect();
    let sends = held
        .par_iter()
        .map(|&l| traffic::sends(trace, replay, l))
        .sum();
    let job = job(g, &held, (sends, owned.len() as u64), t)?;
    let win = traffic::windows(phases, job.span.0, job.span.1);
    let classes = a.map(views::classes);
    let (ncls, cells) = wait_cells(g, classes.as_deref(), a, t)?;
    // this process's parts
    let tl = Timeline::new(trace, replay, ncls, job.span, job.events, &win.bounds);
    let tr = Traffic::new(trace, replay, job.span.0, &win.bounds);
    let mstride = traffic::stride(job.sends, traffic::MESSAGE_LIMIT);
    let parts: Vec<(LocOut, traffic::LocTraffic)> = held
        .par_iter()
        .map(|&l| {
            let none = Vec::new();
            let c = cells.get(l).unwrap_or(&none);
            (tl.walk(l, c), tr.location(l, mstride))
        })
        .collect();
    let cstride = traffic::stride(job.instances, traffic::COLLECTIVE_LIMIT);
    let mut sums = Sums::default();
    let mut marks = Vec::new();
    for i in owned {
        let k = g.instance_of.get(i).copied().unwrap_or(0) as u64;
        let inst = &replay.instances[i];
        if let Some(m) = tr.collective(k, inst, cstride, &mut sums.waits) {
            marks.push((k, m));
        }
    }
    let mut w = Writer::default();
    w.u32(held.len() as u32);
    for (&l, (lo, lt)) in held.iter().zip(parts) {
        put_location(&mut w, l as u32, &lo, &lt.lines);
        sums.add(lt.sums);
    }
    put_sums(&mut w, &sums);
    put_marks(&mut w, &marks);
    let mut to = vec![Vec::new(); t.size()];
    to[0] = w.0;
    let got = t.all_to_all(to)?;
    let Some(classes) = classes.filter(|_| me == 0) else {
        return Ok(None);
    };
    // rank 0: every process's parts in location and instance order
    let nloc = trace.events.len();
    let mut per_loc: Vec<Option<(LocOut, Vec<MessageLine>)>> = (0..nloc).map(|_| None).collect();
    let (mut sums, mut marks) = (Sums::default(), Vec::new());
    for (rank, b) in got.iter().enumerate() {
        let err = |e: String| format!("rank {rank}: {e}");
        let mut r = Reader::new(b);
        for _ in 0..r.u32().map_err(err)? {
            let (l, lo, lines) = get_location(&mut r, ncls).map_err(err)?;
            match per_loc.get_mut(l as usize) {
                Some(s) if s.is_none() => *s = Some((lo, lines)),
                _ => return Err(err(format!("location {l} out of range or sent twice"))),
            }
        }
        sums.add(get_sums(&mut r).map_err(err)?);
        marks.extend(get_marks(&mut r).map_err(err)?);
    }
    let mut locs = Vec::with_capacity(nloc);
    let mut messages = Vec::new();
    for (l, x) in per_loc.into_iter().enumerate() {
        let (lo, lines) = x.ok_or_else(|| format!("location {l}: sent by no process"))?;
        locs.push(lo);
        messages.extend(lines);
    }
    marks.sort_by_key(|m| m.0);
    let sampled = Sampled {
        messages,
        messages_total: job.sends,
        message_stride: mstride,
        collectives: marks.into_iter().map(|m| m.1).collect(),
        collectives_total: job.instances,
    };
    let tr = traffic::finish(trace, &win.bounds, sampled, sums);
    let tl = tl.assemble(locs);
    let v = views::assemble(trace, replay, (classes, job.span), win, tl, tr);
    Ok(Some(v))
}

/// Round 1: the job's span, events, matched sends (`mine.0`) and collective instances
/// (`mine.1`, those whose first member this process holds).
fn job(g: &Ghosted, held: &[usize], mine: (u64, u64), t: &dyn Transport) -> Result<Job, String> {
    let evs = || held.iter().map(|&l| &g.trace.events[l]);
    let first = evs().filter_map(|e| e.time.first()).min();
    let last = evs().filter_map(|e| e.time.last()).max();
    let mut w = Writer::default();
    w.u32(first.is_some() as u32);
    w.u64(first.unwrap_or(0));
    w.u64(last.unwrap_or(0));
    for x in [evs().map(|e| e.len() as u64).sum(), mine.0, mine.1] {
        w.u64(x);
    }
    let mut span: Option<(u64, u64)> = None;
    let mut job = Job {
        span: (0, 0),
        events: 0,
        sends: 0,
        instances: 0,
    };
    for (rank, b) in t.all_gather(&w.0)?.iter().enumerate() {
        let mut r = Reader::new(b);
        let mut read = || -> Result<(), String> {
            let (has, a, b) = (r.u32()?, r.u64()?, r.u64()?);
            if has != 0 {
                span = Some(span.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
            job.events += r.u64()?;
            job.sends += r.u64()?;
            job.instances += r.u64()?;
            Ok(())
        };
        read().map_err(|e| format!("rank {rank}: {e}"))?;
    }
    job.span = span.unwrap_or((0, 0));
    Ok(job)
}

/// Round 2: from rank 0 (`classes` and `a` there) to every process, the number of classes
/// and the wait cells of the locations it holds; the cells per location (empty where
/// another process holds it). Without `a` on rank 0, an error on every process.
fn wait_cells(
    g: &Ghosted,
    classes: Option<&[views::ClassRule]>,
    a: Option<&Analysis>,
    t: &dyn Transport,
) -> Result<(usize, Vec<Vec<WaitCell>>), String> {
    let mut to = vec![Vec::new(); t.size()];
    if let (0, Some(classes), Some(a)) = (t.rank(), classes, a) {
        let ncn = g.replay.tree.nodes.len();
        let mut ws: Vec<Writer> = vec![Writer::default(); t.size()];
        ws.iter_mut().for_each(|w| w.u32(classes.len() as u32));
        for (l, &owner) in g.owner.iter().enumerate() {
            let cells = crate::analysis::views::timeline::wait_cells(a, classes, l as u32, ncn);
            let w = ws.get_mut(owner as usize).ok_or("an owner out of range")?;
            w.u32(l as u32);
            w.u32(cells.len() as u32);
            for (c, j, v) in cells {
                w.u32(c);
                w.u32(j as u32);
                w.u64(v.to_bits());
            }
        }
        to = ws.into_iter().map(|w| w.0).collect();
    }
    let got = t.all_to_all(to)?;
    // empty: rank 0 had no analysis (every process fails alike)
    let b = (got.first())
        .filter(|b| !b.is_empty())
        .ok_or("the views of the run: rank 0 has no analysis")?;
    let mut r = Reader::new(b);
    let mut cells = vec![Vec::new(); g.trace.events.len()];
    let err = |e: String| format!("rank 0: {e}");
    let ncls = r.u32().map_err(err)? as usize;
    if ncls > views::MAX_CLASSES {
        return Err(err(format!(
            "{ncls} classes, more than {}",
            views::MAX_CLASSES
        )));
    }
    while !r.is_done() {
        let (l, n) = (r.u32().map_err(err)?, r.u32().map_err(err)?);
        let row = (cells.get_mut(l as usize)).ok_or_else(|| err(format!("location {l}")))?;
        for _ in 0..n {
            let (c, j) = (r.u32().map_err(err)?, r.u32().map_err(err)?);
            let v = f64::from_bits(r.u64().map_err(err)?);
            if j as usize >= ncls {
                return Err(err(format!("class {j} of {ncls}")));
            }
            row.push((c, j as u8, v));
        }
    }
    Ok((ncls, cells))
}

/// One location's timeline part and message lines: its index, time per class (8 bytes a
/// class), each level's row (4 + its bytes), frame states (4 bytes a frame), pieces (32 +
/// 8 a wait share), call paths named (4 each), lines (28 each).
fn put_location(w: &mut Writer, l: u32, lo: &LocOut, lines: &[MessageLine]) {
    w.u32(l);
    lo.by_class.iter().for_each(|x| w.u64(x.to_bits()));
    w.u32(lo.rows.len() as u32);
    lo.rows.iter().for_each(|row| w.bytes(row));
    w.u32(lo.states.len() as u32);
    lo.states
        .iter()
        .for_each(|&(k, p)| w.u32(k as u32 | (p as u32) << 8));
    w.u32(lo.pieces.len() as u32);
    for p in &lo.pieces {
        w.u64(p.start_s.to_bits());
        w.u64(p.end_s.to_bits());
        w.u32(p.cnode);
        w.u32(p.class as u32);
        w.u32(p.waits.len() as u32);
        for &(j, s) in &p.waits {
            w.u32(j as u32);
            w.u32(s.to_bits());
        }
    }
    w.u32(lo.used.len() as u32);
    lo.used.iter().for_each(|&c| w.u32(c));
    w.u32(lines.len() as u32);
    for m in lines {
        w.u32(m.to);
        w.u64(m.send_s.to_bits());
        w.u64(m.recv_s.to_bits());
        w.u64(m.bytes);
    }
}

/// `put_location` read back.
fn get_location(r: &mut Reader, ncls: usize) -> Result<(u32, LocOut, Vec<MessageLine>), String> {
    let l = r.u32()?;
    let f64s = |r: &mut Reader| r.u64().map(f64::from_bits);
    let by_class = (0..ncls).map(|_| f64s(r)).collect::<Result<_, _>>()?;
    let nrows = r.u32()?;
    let rows = (0..nrows)
        .map(|_| r.bytes().map(<[u8]>::to_vec))
        .collect::<Result<_, _>>()?;
    let nstates = r.u32()?;
    let states = (0..nstates)
        .map(|_| r.u32().map(|x| (x as u8, (x >> 8) as u8)))
        .collect::<Result<_, _>>()?;
    let mut pieces = Vec::new();
    for _ in 0..r.u32()? {
        let (start_s, end_s) = (f64s(r)?, f64s(r)?);
        let (cnode, class) = (r.u32()?, r.u32()? as u8);
        let n = r.u32()?;
        let waits = (0..n)
            .map(|_| Ok((r.u32()? as u8, f32::from_bits(r.u32()?))))
            .collect::<Result<_, String>>()?;
        pieces.push(Piece {
            row: l,
            start_s,
            end_s,
            cnode,
            class,
            waits,
        });
    }
    let nused = r.u32()?;
    let used = (0..nused).map(|_| r.u32()).collect::<Result<_, _>>()?;
    let mut lines = Vec::new();
    for _ in 0..r.u32()? {
        lines.push(MessageLine {
            from: l,
            to: r.u32()?,
            send_s: f64s(r)?,
            recv_s: f64s(r)?,
            bytes: r.u64()?,
        });
    }
    let lo = LocOut {
        by_class,
        rows,
        states,
        pieces,
        used,
    };
    Ok((l, lo, lines))
}

/// The sums: 32 bytes a (frame, from, to) traffic cell, 24 a wait cell.
fn put_sums(w: &mut Writer, s: &Sums) {
    w.u32(s.sent.len() as u32);
    for (&(f, a, b), &(bytes, n)) in &s.sent {
        [f as u32, a, b].into_iter().for_each(|x| w.u32(x));
        w.u64(bytes);
        w.u64(n);
    }
    w.u32(s.waits.len() as u32);
    for (&(f, a, b), &ticks) in &s.waits {
        [f as u32, a, b].into_iter().for_each(|x| w.u32(x));
        w.u64(ticks);
    }
}

/// `put_sums` read back.
fn get_sums(r: &mut Reader) -> Result<Sums, String> {
    let mut s = Sums::default();
    for _ in 0..r.u32()? {
        let key = (r.u32()? as usize, r.u32()?, r.u32()?);
        s.sent.insert(key, (r.u64()?, r.u64()?));
    }
    for _ in 0..r.u32()? {
        let key = (r.u32()? as usize, r.u32()?, r.u32()?);
        s.waits.insert(key, r.u64()?);
    }
    Ok(s)
}

/// The operation of a mark as a code `collective_op_name` reads back (`u32::MAX`: none).
fn op_code(op: &str) -> u32 {
    (0..=u8::MAX)
        .find(|&c| collective_op_name(c) == op)
        .map_or(u32::MAX, u32::from)
}

/// The collective marks with their instance: 24 bytes and 4 a member.
fn put_marks(w: &mut Writer, marks: &[(u64, CollMark)]) {
    w.u32(marks.len() as u32);
    for (k, m) in marks {
        w.u64(*k);
        w.u64(m.time_s.to_bits());
        w.u32(op_code(m.op));
        w.u32(m.locations.len() as u32);
        m.locations.iter().for_each(|&l| w.u32(l));
    }
}

/// `put_marks` read back.
fn get_marks(r: &mut Reader) -> Result<Vec<(u64, CollMark)>, String> {
    let mut out = Vec::new();
    for _ in 0..r.u32()? {
        let (k, time_s, op) = (r.u64()?, f64::from_bits(r.u64()?), r.u32()?);
        let op = match u8::try_from(op) {
            Ok(c) => collective_op_name(c),
            Err(_) => "collective",
        };
        let n = r.u32()?;
        let locations = (0..n).map(|_| r.u32()).collect::<Result<_, _>>()?;
        out.push((
            k,
            CollMark {
                time_s,
                op,
                locations,
            },
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::phases;
    use crate::distributed::{extras, ghost, local};
    use crate::replay::Replay;
    use crate::rules::RuleSet;

    /// The views of `path` at P = 1..4 threads as processes, against the single process's
    /// (their `Debug` text: every float in its shortest exact form, so equal to the bit);
    /// per P the bytes the views' rounds exchanged on rank 0 and on the busiest other rank.
    fn compare(path: &std::path::Path, rules: &RuleSet) -> Vec<(u64, u64)> {
        let trace = crate::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let replay = Replay::new(&trace);
        let a = crate::analysis::analyse(&trace, &replay, rules.clone());
        let ph = phases::detect_binned(&trace).phases;
        let part = views::views_traffic(&trace, &replay, &ph);
        let want = format!("{:?}", views::views_rest(&trace, &replay, &a, part));
        let mut bytes = Vec::new();
        for p in 1..=4 {
            let got = local::on_shares(path, p, |share, keep, t| {
                let d = extras::detect_phases(share, keep, t)?;
                let g = ghost::replay(share.clone(), keep, &needs(), t)?;
                let before = t.bytes_exchanged();
                let v = views(&g, &d.phases, (t.rank() == 0).then_some(&a), t)?;
                Ok((v.map(|v| format!("{v:?}")), t.bytes_exchanged() - before))
            });
            let mut most = (0, 0);
            for (rank, x) in got.into_iter().enumerate() {
                let (v, b) = x.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                if rank == 0 {
                    let at = format!("{}, P = {p}", path.display());
                    assert!(v.as_deref() == Some(&want[..]), "{at}: views differ");
                    most.0 = b;
                } else {
                    assert!(v.is_none());
                    most.1 = most.1.max(b);
                }
            }
            bytes.push(most);
        }
        bytes
    }

    /// Every testdata trace (OpenMP and hybrid ones too) at P = 1..4 threads as processes:
    /// rank 0's views are the single process's.
    #[test]
    fn the_distributed_views_are_the_single_process_ones() {
        let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
        for path in local::testdata_traces() {
            let bytes = compare(&path, &rules);
            eprintln!(
                "{}: views bytes at rank 0, P = 1..4: {bytes:?}",
                path.display()
            );
        }
    }

    /// The same on the trace `PERFEXPERT_VIEWS_TRACE` names (a generated ping-pong: the
    /// bytes exchanged for docs/distributed.md); run with `--ignored`.
    #[test]
    #[ignore]
    fn the_distributed_views_of_a_large_trace() {
        let Some(path) = std::env::var_os("PERFEXPERT_VIEWS_TRACE") else {
            panic!("set PERFEXPERT_VIEWS_TRACE to an OTF2 anchor");
        };
        let rules = RuleSet::load(&[]).unwrap_or_else(|e| panic!("built-in rules: {e:?}"));
        let bytes = compare(std::path::Path::new(&path), &rules);
        eprintln!("views bytes at rank 0, P = 1..4: {bytes:?}");
    }
}
