//! The backward replay of the delay costs over a `Transport` (docs/distributed.md, "The
//! distributed extras"), equal to the single-process pass (`analysis::rootcause::costs`) to
//! the bit: each process runs the tasks of its own locations (`costs::Pass`, `costs::run`,
//! in `costs::order`), latest first, each task on the process holding the location that
//! caused the wait.
//!
//! Setup (two `all_to_all`s): the owner of a waiting point whose cause is held elsewhere
//! ships the point (wait, kinds) and its delay time map (`delay::waiter_map`) to the cause's
//! owner; the owner of a waiting collective member ships the cause to every member's owner,
//! who then ships its member's point and map to the cause's owner.
//!
//! Rounds (one `all_to_all` each): every process runs its tasks until each held location is
//! done or waits for a point of another process not yet passed; then it ships, for every
//! one of its waiting points that another process's task reads and that its location has
//! now passed, the long-term costs the point carries (8 bytes a kind), the indirect waits it
//! computed for other processes' points, and its status. When nobody shipped anything, the
//! job is at the single-process fixpoint: done, or blocked (clock-condition violations),
//! where the single process goes on with the latest pending point: so does the job, its
//! owner reading the current costs of the points it waits for (one more round).
//!
//! The indirect waits are the one value booked away from the task's location (at the
//! waiting one): they are summed in the single-process run order, which each task's
//! `Pass::now` gives: (phase, sweep, location, task), the sweep the single process would
//! run it in (`sweep`: the latest of its location's previous task's and the sweeps in which
//! the points it waits for were passed, one more for a location after its own), the phase
//! counting the blocked job's forced tasks. A passed point's sweep travels with its costs.

use crate::analysis::rootcause::costs::{self, Costs, Pass, Pending, Remote, Task};
use crate::analysis::rootcause::delay::{self, Map};
use crate::analysis::rootcause::sync::{Kind, Sync};
use crate::distributed::ghost::Ghosted;
use crate::distributed::wire::{Reader, Writer};
use crate::distributed::Transport;
use crate::replay::matching::EventRef;
use std::collections::{BTreeMap, HashMap};

/// The points of other processes passed, with the (phase, sweep + 1) they were passed in.
type Passed = HashMap<(usize, usize), (u32, u32)>;

/// A process's waiting points that a task of another process reads: the rank running it.
type Subs = BTreeMap<(usize, usize), u32>;

/// The delay costs booked at the held locations of `g` (the indirect and propagating waits
/// of their points included); `sync` holds their synchronisation points.
pub(super) fn costs(
    g: &Ghosted,
    sync: &Sync,
    held: &[bool],
    t: &dyn Transport,
) -> Result<Costs, String> {
    let mut p = Pass::new(&g.trace, &g.replay, sync);
    let mut all: Vec<Vec<Pending>> = vec![Vec::new(); held.len()];
    let mut subs = Subs::new();
    setup(g, held, t, (&mut p, &mut all, &mut subs))?;
    // the thread barriers and idle threads: on the locations of their process, all held
    costs::omp_tasks(sync, &mut all);
    costs::order(&mut all);
    replay_back(g, held, t, &mut p, &all, subs)?;
    Ok(p.finish())
}

fn put_map(w: &mut Writer, m: &Map) {
    w.u32(m.len() as u32);
    for (&c, &v) in m {
        w.u32(c);
        w.u64(v.to_bits());
    }
}

fn get_map(r: &mut Reader) -> Result<Map, String> {
    (0..r.u32()?)
        .map(|_| Ok((r.u32()?, f64::from_bits(r.u64()?))))
        .collect()
}

/// A waiting point for the task that reads it: `head`, its wait, its kinds and its delay
/// time map against the causing location `other`.
fn put_point(
    w: &mut Writer,
    head: &[u32],
    (g, sync): (&Ghosted, &Sync),
    ((l, j), other): ((usize, usize), usize),
) {
    let sp = &sync.sps[l][j];
    head.iter().for_each(|&x| w.u32(x));
    w.u64(sp.wait.to_bits());
    w.u32(sp.kinds.len() as u32);
    sp.kinds.iter().for_each(|&k| w.u32(k as u32));
    put_map(
        w,
        &delay::waiter_map(&g.trace, &g.replay, sync, (l, j), other),
    );
}

/// `put_point` read back after its head: the wait, the kinds, the map.
fn get_point(r: &mut Reader) -> Result<(f64, Vec<u16>, Map), String> {
    let wait = f64::from_bits(r.u64()?);
    let kinds = (0..r.u32()?)
        .map(|_| r.u32().map(|k| k as u16))
        .collect::<Result<_, _>>()?;
    Ok((wait, kinds, get_map(r)?))
}

/// A location of an exchange record, checked.
fn loc(r: &mut Reader, nloc: usize) -> Result<usize, String> {
    let l = r.u32()? as usize;
    (l < nloc)
        .then_some(l)
        .ok_or_else(|| format!("location {l} of {nloc}"))
}

/// Each rank's record, read with `read` until its end; errors name the rank.
fn each_record(
    got: &[Vec<u8>],
    read: &mut dyn FnMut(&mut Reader) -> Result<(), String>,
) -> Result<(), String> {
    for (rank, b) in got.iter().enumerate() {
        let mut r = Reader::new(b);
        while !r.is_done() {
            read(&mut r).map_err(|e| format!("rank {rank}: {e}"))?;
        }
    }
    Ok(())
}

/// The tasks of the held locations: point-to-point wait states whose waiting point is held
/// here or shipped in, collective instances whose members' points are shipped to the
/// cause's owner.
fn setup(
    g: &Ghosted,
    held: &[bool],
    t: &dyn Transport,
    (p, all, subs): (&mut Pass, &mut [Vec<Pending>], &mut Subs),
) -> Result<(), String> {
    let (replay, sync) = (&g.replay, p.sync());
    let nloc = held.len();
    let mut to = vec![Writer::default(); t.size()];
    for l in (0..nloc).filter(|&l| held[l]) {
        for (j, sp) in sync.sps[l].iter().enumerate() {
            if !matches!(sp.kind, Kind::Recv | Kind::SendCompletion) || sp.wait <= 0.0 {
                continue;
            }
            let cl = sp.cause.loc as usize;
            if held.get(cl) == Some(&true) {
                if let Some(cj) = sync.at(cl, sp.cause.event) {
                    all[cl].push((cj, (0, l as u32, j as u32), Task::P2p(l, j), vec![(l, j)]));
                }
                continue;
            }
            let Some(&o) = g.owner.get(cl) else { continue };
            let head = [1, l as u32, j as u32, sp.cause.loc, sp.cause.event];
            put_point(&mut to[o as usize], &head, (g, sync), ((l, j), cl));
            subs.insert((l, j), o);
        }
    }
    // the held members of each instance, (member index, location, point)
    let members = |i: usize| -> Vec<(u32, usize, usize)> {
        let inst = &replay.instances[i];
        (inst.members.iter().enumerate())
            .filter(|(_, m)| held.get(m.loc as usize) == Some(&true))
            .filter_map(|(k, m)| {
                let (l, j) = (m.loc as usize, sync.at(m.loc as usize, m.event)?);
                matches!(sync.sps[l][j].kind, Kind::Coll(_)).then_some((k as u32, l, j))
            })
            .collect()
    };
    for (i, &n) in g.instance_of.iter().enumerate() {
        let mut ranks: Vec<u32> = (replay.instances[i].members.iter())
            .filter_map(|m| g.owner.get(m.loc as usize).copied())
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        for (k, l, j) in members(i) {
            let sp = &sync.sps[l][j];
            if sp.wait > 0.0 && sp.cause.is_some() {
                for &o in &ranks {
                    [2, n, k, sp.cause.loc, sp.cause.event]
                        .into_iter()
                        .for_each(|x| to[o as usize].u32(x));
                }
            }
        }
    }
    let got = t.all_to_all(to.into_iter().map(|w| w.0).collect())?;
    // per instance, the cause of its first waiting member
    let mut causes: BTreeMap<u32, (u32, EventRef)> = BTreeMap::new();
    each_record(&got, &mut |r| match r.u32()? {
        1 => {
            let (l, j) = (loc(r, nloc)?, r.u32()? as usize);
            let cause = EventRef {
                loc: loc(r, nloc)? as u32,
                event: r.u32()?,
            };
            let (wait, kinds, theirs) = get_point(r)?;
            let nk = p.kinds();
            p.remote.insert((l, j), remote(wait, kinds, nk));
            let cl = cause.loc as usize;
            if let Some(cj) = (held[cl]).then(|| p.sync().at(cl, cause.event)).flatten() {
                let task = Task::P2pGiven(p.p2p_given.len());
                p.p2p_given.push(((l, j), wait, cause, theirs));
                all[cl].push((cj, (0, l as u32, j as u32), task, vec![(l, j)]));
            }
            Ok(())
        }
        2 => {
            let (n, k) = (r.u32()?, r.u32()?);
            let cause = EventRef {
                loc: loc(r, nloc)? as u32,
                event: r.u32()?,
            };
            let c = causes.entry(n).or_insert((k, cause));
            if k < c.0 {
                *c = (k, cause);
            }
            Ok(())
        }
        x => Err(format!("a setup record of kind {x}")),
    })?;
    coll_tasks(g, held, t, (p, all, subs), (&members, &causes))
}

fn remote(wait: f64, kinds: Vec<u16>, nk: usize) -> Remote {
    Remote {
        wait,
        kinds,
        cost: vec![0.0; nk],
    }
}

/// The member records of each collective instance with a waiting member (its held members'
/// points and maps to the cause's owner), and there its task.
#[allow(clippy::type_complexity)]
fn coll_tasks(
    g: &Ghosted,
    held: &[bool],
    t: &dyn Transport,
    (p, all, subs): (&mut Pass, &mut [Vec<Pending>], &mut Subs),
    (members, causes): (
        &dyn Fn(usize) -> Vec<(u32, usize, usize)>,
        &BTreeMap<u32, (u32, EventRef)>,
    ),
) -> Result<(), String> {
    let (replay, sync) = (&g.replay, p.sync());
    let (nloc, me) = (held.len(), t.rank() as u32);
    let mut to = vec![Writer::default(); t.size()];
    for (i, n) in g.instance_of.iter().enumerate() {
        let Some(&(_, cause)) = causes.get(n) else {
            continue;
        };
        let Some(&o) = g.owner.get(cause.loc as usize) else {
            continue;
        };
        for (k, l, j) in members(i) {
            let head = [*n, k, l as u32, j as u32];
            put_point(
                &mut to[o as usize],
                &head,
                (g, sync),
                ((l, j), cause.loc as usize),
            );
            if o != me {
                subs.insert((l, j), o);
            }
        }
    }
    let got = t.all_to_all(to.into_iter().map(|w| w.0).collect())?;
    let mut given: BTreeMap<u32, Vec<(u32, (usize, usize), Map)>> = BTreeMap::new();
    each_record(&got, &mut |r| {
        let (n, k, l, j) = (r.u32()?, r.u32()?, loc(r, nloc)?, r.u32()? as usize);
        let (wait, kinds, map) = get_point(r)?;
        if !held[l] {
            p.remote.insert((l, j), remote(wait, kinds, p.kinds()));
        }
        given.entry(n).or_default().push((k, (l, j), map));
        Ok(())
    })?;
    let local: BTreeMap<u32, usize> = (g.instance_of.iter().enumerate())
        .map(|(i, &n)| (n, i))
        .collect();
    for (n, mut ms) in given {
        let (Some(&(_, cause)), Some(&i)) = (causes.get(&n), local.get(&n)) else {
            continue;
        };
        let rl = cause.loc as usize;
        let Some(rj) = (held[rl]).then(|| p.sync().at(rl, cause.event)).flatten() else {
            continue;
        };
        ms.sort_by_key(|m| m.0);
        let needs: Vec<(usize, usize)> = ms.iter().map(|m| m.1).collect();
        let group = delay::group_of(replay, p.sync(), i);
        let task = Task::CollGiven(p.coll_given.len());
        let ms = ms.into_iter().map(|(_, at, m)| (at, m)).collect();
        p.coll_given.push((cause, group, ms));
        all[rl].push((rj, (1, n, 0), task, needs));
    }
    Ok(())
}

/// What one round tells every process: whether it shipped anything, and its latest pending
/// task (its point's time, its location, the points of other processes it waits for).
type Status = (bool, Option<(u64, u32, Vec<(usize, usize)>)>);

/// The rounds of the backward replay.
fn replay_back(
    g: &Ghosted,
    held: &[bool],
    t: &dyn Transport,
    p: &mut Pass,
    all: &[Vec<Pending>],
    mut subs: Subs,
) -> Result<(), String> {
    let nloc = held.len();
    let nk = p.kinds();
    let mut st = State {
        next: vec![0; nloc],
        ran: all.iter().map(|v| vec![(0, 0); v.len()]).collect(),
        got: HashMap::new(),
        phase: 0,
    };
    // the blocked job's next task: run first thing in the next round, or after it
    let (mut force, mut force_after): (Option<usize>, Option<usize>) = (None, None);
    let mut requested: Vec<((usize, usize), u32)> = Vec::new();
    loop {
        if let Some(l) = force.take() {
            let i = st.next[l];
            if let Some(x) = all[l].get(i) {
                p.now = [st.phase, 0, l as u32, i as u32];
                costs::run(p, x.2);
                st.ran[l][i] = (st.phase, 0);
                st.next[l] += 1;
            }
        }
        run_ready(p, all, held, &mut st);
        let mut rec = vec![Writer::default(); t.size()];
        let carried = |p: &Pass, w: &mut Writer, tag: u32, (l, j): (usize, usize)| {
            [tag, l as u32, j as u32].into_iter().for_each(|x| w.u32(x));
            (0..nk).for_each(|k| w.u64(p.carried(k, (l, j)).to_bits()));
        };
        subs.retain(|&at, &mut r| {
            let done = costs::passed(all, &st.next, at.0, at.1);
            if done {
                let w = &mut rec[r as usize];
                carried(p, w, 0, at);
                let (ph, s) = st.passed_in(all, at);
                [ph, s].into_iter().for_each(|x| w.u32(x));
            }
            !done
        });
        let away: Vec<_> = (p.ind.keys()).filter(|x| !held[x.0]).copied().collect();
        for at in away {
            if let (Some((j, v)), Some(&o)) = (p.ind.remove(&at), g.owner.get(at.0)) {
                let w = &mut rec[o as usize];
                [1, at.0 as u32, j as u32]
                    .into_iter()
                    .chain(at.1)
                    .for_each(|x| w.u32(x));
                w.u64(v.to_bits());
            }
        }
        for (at, r) in requested.drain(..) {
            carried(p, &mut rec[r as usize], 2, at);
        }
        let sent = rec.iter().any(|w| !w.0.is_empty());
        let next = &st.next;
        let cand = (0..nloc)
            .filter(|&l| held[l] && next[l] < all[l].len())
            .max_by_key(|&l| (costs::next_time(p, all, next, l), l))
            .map(|l| {
                let needs = (all[l][next[l]].3.iter())
                    .filter(|x| !held[x.0])
                    .copied()
                    .collect();
                (costs::next_time(p, all, next, l), l as u32, needs)
            });
        let to = (rec.into_iter())
            .map(|w| status_and(&(sent, cand.clone()), w))
            .collect();
        let back = t.all_to_all(to)?;
        let mut statuses = Vec::with_capacity(back.len());
        for (rank, b) in back.iter().enumerate() {
            let mut r = Reader::new(b);
            let s = read_status(&mut r, nloc).map_err(|e| format!("rank {rank}: {e}"))?;
            statuses.push(s);
            while !r.is_done() {
                apply(&mut r, (p, &mut st.got), nloc).map_err(|e| format!("rank {rank}: {e}"))?;
            }
        }
        if let Some(l) = force_after.take() {
            force = Some(l);
        }
        if statuses.iter().any(|s| s.0) || force.is_some() {
            continue;
        }
        let Some((_, l, needs)) = (statuses.into_iter())
            .filter_map(|s| s.1)
            .max_by_key(|c| (c.0, c.1))
        else {
            return Ok(());
        };
        let (l, o) = (l as usize, g.owner.get(l as usize).copied().unwrap_or(0));
        st.phase += 1;
        for &at in needs.iter().filter(|at| held[at.0]) {
            requested.push((at, o));
        }
        if held[l] {
            match needs.is_empty() {
                true => force = Some(l),
                false => force_after = Some(l),
            }
        }
    }
}

/// Where the backward replay of a process is: per location its next task, the (phase,
/// sweep + 1) each task ran in (sweep 0: a forced task), the points of other processes
/// passed with the (phase, sweep + 1) they were passed in, the phase.
struct State {
    next: Vec<usize>,
    ran: Vec<Vec<(u32, u32)>>,
    got: Passed,
    phase: u32,
}

impl State {
    /// The (phase, sweep + 1) in which held location `l` passed its point `j`: that of its
    /// last task after `j` (none: (0, 0)).
    fn passed_in(&self, all: &[Vec<Pending>], (l, j): (usize, usize)) -> (u32, u32) {
        let n = all[l].partition_point(|x| x.0 > j);
        n.checked_sub(1).map_or((0, 0), |i| self.ran[l][i])
    }

    /// The sweep the single process runs task `i` of location `l` in: the latest of its
    /// previous task's and those in which the points it waits for were passed (one more for
    /// a location after `l`); what ran in an earlier phase, or forced, counts as sweep 0.
    fn sweep(&self, all: &[Vec<Pending>], held: &[bool], (l, i): (usize, usize)) -> u32 {
        let at = |(ph, s): (u32, u32)| match ph == self.phase && s > 0 {
            true => s - 1,
            false => 0,
        };
        let prev = i.checked_sub(1).map_or(0, |k| at(self.ran[l][k]));
        let needs = (all[l][i].3.iter()).filter(|x| x.0 != l).map(|&(ol, oj)| {
            let x = match held[ol] {
                true => self.passed_in(all, (ol, oj)),
                false => self.got.get(&(ol, oj)).copied().unwrap_or((0, 0)),
            };
            at(x) + u32::from(ol > l && x.1 > 0 && x.0 == self.phase)
        });
        needs.fold(prev, u32::max)
    }
}

/// Run the held locations' tasks until each is done or waits for a point not yet passed
/// (another process's: not yet shipped in).
fn run_ready(p: &mut Pass, all: &[Vec<Pending>], held: &[bool], st: &mut State) {
    loop {
        let mut progress = false;
        for l in (0..held.len()).filter(|&l| held[l]) {
            while let Some(task) = all[l].get(st.next[l]) {
                let at = |ol: usize, oj: usize| match held[ol] {
                    true => costs::passed(all, &st.next, ol, oj),
                    false => st.got.contains_key(&(ol, oj)),
                };
                if !costs::ready(task, l, &at) {
                    break;
                }
                let i = st.next[l];
                let s = st.sweep(all, held, (l, i));
                p.now = [st.phase, s + 1, l as u32, i as u32];
                costs::run(p, task.2);
                st.ran[l][i] = (st.phase, s + 1);
                st.next[l] += 1;
                progress = true;
            }
        }
        if !progress {
            return;
        }
    }
}

/// A round's record to one rank: the status, then the records.
fn status_and((sent, cand): &Status, rec: Writer) -> Vec<u8> {
    let mut w = Writer::default();
    w.u32(*sent as u32);
    match cand {
        None => w.u32(0),
        Some((time, l, needs)) => {
            w.u32(1);
            w.u64(*time);
            w.u32(*l);
            w.u32(needs.len() as u32);
            for &(ol, oj) in needs {
                w.u32(ol as u32);
                w.u32(oj as u32);
            }
        }
    }
    w.0.extend_from_slice(&rec.0);
    w.0
}

fn read_status(r: &mut Reader, nloc: usize) -> Result<Status, String> {
    let sent = r.u32()? == 1;
    if r.u32()? == 0 {
        return Ok((sent, None));
    }
    let (time, l) = (r.u64()?, loc(r, nloc)? as u32);
    let needs = (0..r.u32()?)
        .map(|_| Ok((loc(r, nloc)?, r.u32()? as usize)))
        .collect::<Result<_, String>>()?;
    Ok((sent, Some((time, l, needs))))
}

/// One record of a round: a passed point's costs (0), an indirect wait (1), a blocked
/// task's point's current costs (2).
fn apply(r: &mut Reader, (p, got): (&mut Pass, &mut Passed), nloc: usize) -> Result<(), String> {
    let tag = r.u32()?;
    let at = (loc(r, nloc)?, r.u32()? as usize);
    if tag == 1 {
        let now = [r.u32()?, r.u32()?, r.u32()?, r.u32()?];
        p.ind.insert((at.0, now), (at.1, f64::from_bits(r.u64()?)));
        return Ok(());
    }
    let cost: Vec<f64> = (0..p.kinds())
        .map(|_| r.u64().map(f64::from_bits))
        .collect::<Result<_, _>>()?;
    match (tag, p.remote.get_mut(&at)) {
        (0 | 2, Some(x)) => x.cost = cost,
        _ => {
            return Err(format!(
                "costs (kind {tag}) of point {at:?}, which no task reads"
            ))
        }
    }
    if tag == 0 {
        got.insert(at, (r.u32()?, r.u32()?));
    }
    Ok(())
}
