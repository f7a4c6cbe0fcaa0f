//! OpenMP thread state (patterns.md §3.1.3, §3.2, §3.5, §4.7, §5.6): processes and their
//! master threads, the call stacks workers inherit from their master's fork, teams (fork,
//! join, members and their parallel-region instances), the barrier instances of each team,
//! and per lock the acquisitions in acquisition order (which release each waiter waited
//! for). Nothing here names a pattern: rules read this state through the `team` and
//! `thread_barrier` triggers, the event field `last_release` and the call-path bindings of
//! docs/rules.md.

use super::calltree::{CallTree, Callee, NO_CNODE};
use super::{LocationState, NONE};
use crate::model::{EventKind, Events, LocationKind, Paradigm, RegionIdx, RegionRole, Trace};
use std::collections::HashMap;

/// What the replay needs to know about a region for OpenMP (§2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OmpRegion {
    Parallel,
    Barrier,
    /// A task region (role TASK or TASK_UNTIED) executed by a thread.
    Task,
    Other,
}

/// The OpenMP role of every region of the trace.
pub fn region_kinds(trace: &Trace) -> Vec<OmpRegion> {
    trace
        .defs
        .regions
        .iter()
        .map(|r| match crate::model::classify::classify(r).0 {
            "OMP_PARALLEL" => OmpRegion::Parallel,
            "OMP_EBARRIER" | "OMP_IBARRIER" => OmpRegion::Barrier,
            _ if r.role == RegionRole::TASK || r.role == RegionRole::TASK_UNTIED => OmpRegion::Task,
            _ => OmpRegion::Other,
        })
        .collect()
}

/// Whether the trace has OpenMP at all (§3.5.5: nothing here applies otherwise).
pub fn has_openmp(trace: &Trace) -> bool {
    trace
        .defs
        .regions
        .iter()
        .any(|r| r.paradigm == Paradigm::OPENMP)
}

/// Per location: the master thread of its process (the CPU thread with the lowest location
/// id of its location group, §3.5.3) and its thread number (position by id in the process).
/// Without OpenMP every location is its own master.
pub fn masters(trace: &Trace, openmp: bool) -> (Vec<u32>, Vec<u32>) {
    let n = trace.defs.locations.len();
    let mut master: Vec<u32> = (0..n as u32).collect();
    let mut thread = vec![0u32; n];
    if !openmp {
        return (master, thread);
    }
    let mut groups: HashMap<usize, Vec<usize>> = HashMap::new();
    for (l, loc) in trace.defs.locations.iter().enumerate() {
        if let (Some(g), LocationKind::CpuThread) = (loc.group, loc.kind) {
            groups.entry(g).or_default().push(l);
        }
    }
    for ls in groups.values_mut() {
        ls.sort_by_key(|&l| trace.defs.locations[l].id);
        for (k, &l) in ls.iter().enumerate() {
            master[l] = ls[0] as u32;
            thread[l] = k as u32;
        }
    }
    (master, thread)
}

/// A fork on a master thread as its workers see it: when, and the master's call stack
/// (regions from the bottom) at that moment — the prefix of the workers' stacks (§3.1.3).
#[derive(Clone, Debug)]
pub struct ForkStack {
    pub time: u64,
    pub stack: Vec<RegionIdx>,
}

fn is_fork(k: EventKind) -> bool {
    matches!(k, EventKind::ThreadFork | EventKind::OmpFork)
}

fn is_join(k: EventKind) -> bool {
    matches!(k, EventKind::ThreadJoin | EventKind::OmpJoin)
}

/// The forks of a master thread with its stack at each. A trace without fork records
/// creates its teams at the master's ENTER of an outermost parallel region (§5.6).
pub fn fork_stacks(ev: &Events, kinds: &[OmpRegion]) -> Vec<ForkStack> {
    let mut stack: Vec<RegionIdx> = Vec::new();
    let (mut by_record, mut by_enter) = (Vec::new(), Vec::new());
    let mut in_parallel = 0usize;
    for i in 0..ev.len() {
        match ev.kind[i] {
            EventKind::Enter => {
                let r = ev.arg[i];
                if kinds.get(r as usize) == Some(&OmpRegion::Parallel) {
                    if in_parallel == 0 {
                        by_enter.push(ForkStack {
                            time: ev.time.get(i),
                            stack: stack.clone(),
                        });
                    }
                    in_parallel += 1;
                }
                stack.push(r);
            }
            EventKind::Leave => {
                let r = ev.arg[i];
                if let Some(k) = stack.iter().rposition(|&x| x == r) {
                    for x in stack.drain(k..) {
                        if kinds.get(x as usize) == Some(&OmpRegion::Parallel) {
                            in_parallel = in_parallel.saturating_sub(1);
                        }
                    }
                }
            }
            k if is_fork(k) => by_record.push(ForkStack {
                time: ev.time.get(i),
                stack: stack.clone(),
            }),
            _ => {}
        }
    }
    if by_record.is_empty() {
        by_enter
    } else {
        by_record
    }
}

/// One thread of a team: its instance of the parallel region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TeamMember {
    pub loc: u32,
    /// Thread number in the process.
    pub thread: u32,
    /// ENTER and LEAVE (`NONE` if never left) of the parallel region on this thread.
    pub enter: u32,
    pub leave: u32,
}

/// A thread team: created by a fork on the master, ended by its join (§5.6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Team {
    pub master: u32,
    /// Timestamps (ticks) of THREAD_FORK and THREAD_JOIN; without fork records, the master's
    /// ENTER and LEAVE of the parallel region (§4.7.1).
    pub fork: u64,
    pub join: u64,
    /// Members in thread order (master first).
    pub members: Vec<TeamMember>,
}

/// One thread at a barrier instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierMember {
    pub loc: u32,
    pub thread: u32,
    /// The ENTER of the barrier region.
    pub enter: u32,
    /// Ticks the thread spent executing tasks inside the barrier (outermost task regions
    /// entered between the barrier's ENTER and LEAVE, §4.7.2).
    pub tasks: u64,
}

/// The k-th barrier (explicit or implicit) of a team on each member that reached it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarrierInstance {
    pub team: u32,
    /// In thread order.
    pub members: Vec<BarrierMember>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct OmpStats {
    pub teams: u64,
    pub barrier_instances: u64,
    pub lock_acquisitions: u64,
    /// Parallel-region instances on a thread that no fork of its master precedes.
    pub orphan_regions: u64,
    /// Nested parallelism, which the team state does not model (patterns.md §5.6): parallel-
    /// region instances inside another on the same thread, and forks recorded by worker
    /// threads. Their threads are analysed as members of the outer team; the report says so.
    pub nested_regions: u64,
    pub worker_forks: u64,
}

/// The OpenMP state of the whole trace.
#[derive(Clone, Debug, Default)]
pub struct OmpState {
    /// Per location: its process's master, and its thread number.
    pub master: Vec<u32>,
    pub thread: Vec<u32>,
    /// Per call path: 0 serial, 1 inside an OpenMP subtree, 2 the root of one (§3.5.2).
    pub subtree: Vec<u8>,
    pub teams: Vec<Team>,
    pub barriers: Vec<BarrierInstance>,
    /// Per location, sorted by acquisition event: (acquisition, location and event of the
    /// release of the same lock that preceded it in acquisition order).
    pub last_release: Vec<Vec<(u32, u32, u32)>>,
    pub stats: OmpStats,
}

impl OmpState {
    /// The release the acquisition `(l, i)` waited for, if any.
    pub fn last_release(&self, l: u32, i: u32) -> Option<(u32, u32)> {
        let v = self.last_release.get(l as usize)?;
        let k = v.binary_search_by_key(&i, |x| x.0).ok()?;
        Some((v[k].1, v[k].2))
    }
}

/// §3.5.2: mark the OpenMP subtrees of the call tree (pre-order walk).
fn subtrees(trace: &Trace, tree: &CallTree) -> Vec<u8> {
    let mut out = vec![0u8; tree.len()];
    for c in 0..tree.len() {
        let parent_in = tree.nodes[c].parent.is_some_and(|p| out[p as usize] != 0);
        if parent_in {
            out[c] = 1;
        } else if let Callee::Region(r) = tree.nodes[c].callee {
            if trace.defs.regions[r as usize].paradigm == Paradigm::OPENMP {
                out[c] = 2;
            }
        }
    }
    out
}

/// The OpenMP state once the call tree is merged, as `Replay::new` makes it: `build` where
/// the trace has OpenMP (`kinds`, `region_kinds`), else the masters and thread numbers alone;
/// then the inclusive time per call path of every location `held`.
pub fn state(
    trace: &Trace,
    tree: &CallTree,
    locations: &mut [LocationState],
    kinds: Option<&[OmpRegion]>,
    (master, thread): (Vec<u32>, Vec<u32>),
    held: impl Fn(usize) -> bool,
) -> OmpState {
    let st = match kinds {
        Some(kinds) => build(trace, tree, locations, kinds, master, thread),
        None => OmpState {
            master,
            thread,
            subtree: vec![0; tree.len()],
            last_release: vec![Vec::new(); trace.events.len()],
            ..Default::default()
        },
    };
    for (l, s) in locations.iter_mut().enumerate() {
        if held(l) {
            s.incl = inclusive(tree, &s.time);
        }
    }
    st
}

/// Build teams, barrier instances and lock order, and move the fork and join intervals
/// into the parallel regions' time (§3.2).
pub fn build(
    trace: &Trace,
    tree: &CallTree,
    locations: &mut [LocationState],
    kinds: &[OmpRegion],
    master: Vec<u32>,
    thread: Vec<u32>,
) -> OmpState {
    let nloc = trace.events.len();
    let mut st = OmpState {
        subtree: subtrees(trace, tree),
        last_release: vec![Vec::new(); nloc],
        ..Default::default()
    };
    // processes: master → its threads in thread order
    let mut procs: HashMap<u32, Vec<u32>> = HashMap::new();
    for l in 0..nloc as u32 {
        procs.entry(master[l as usize]).or_default().push(l);
    }
    let mut order: Vec<u32> = procs.keys().copied().collect();
    order.sort_unstable();
    for m in order {
        let mut threads = procs.remove(&m).unwrap_or_default();
        threads.sort_by_key(|&l| thread[l as usize]);
        build_teams(trace, locations, kinds, m, &threads, &thread, &mut st);
        build_locks(trace, &threads, &mut st);
    }
    // §3.2: the fork and join intervals belong to the parallel region on every member; on
    // the master they leave the call path enclosing the region
    for team in &st.teams {
        for mb in &team.members {
            let ev = &trace.events[mb.loc as usize];
            let ls = &locations[mb.loc as usize];
            let pc = ls.cnode(mb.enter as usize);
            if pc == NO_CNODE {
                continue;
            }
            let te = ev.time.get(mb.enter as usize);
            let fork = te.saturating_sub(team.fork);
            let join = match mb.leave {
                NONE => 0,
                x => team.join.saturating_sub(ev.time.get(x as usize)),
            };
            let moved = fork + join;
            if moved == 0 {
                continue;
            }
            if mb.loc == team.master {
                // the master's enclosing call path: the parallel region's parent
                if let Some(encl) = tree.nodes[pc as usize].parent {
                    let t = &mut locations[mb.loc as usize].time[encl as usize];
                    *t = t.saturating_sub(moved);
                }
            }
            locations[mb.loc as usize].time[pc as usize] += moved;
        }
    }
    st.master = master;
    st.thread = thread;
    st.stats.teams = st.teams.len() as u64;
    st.stats.barrier_instances = st.barriers.len() as u64;
    st
}

fn build_teams(
    trace: &Trace,
    locations: &[LocationState],
    kinds: &[OmpRegion],
    m: u32,
    threads: &[u32],
    thread: &[u32],
    st: &mut OmpState,
) {
    let mev = &trace.events[m as usize];
    // the master's forks and joins (records, else its outermost parallel regions)
    let mut forks: Vec<(u64, u64)> = Vec::new();
    let mut open: Option<u64> = None;
    for i in 0..mev.len() {
        let k = mev.kind[i];
        if is_fork(k) {
            if let Some(f) = open.take() {
                // a fork without a join: ends where the next one starts
                forks.push((f, mev.time.get(i)));
            }
            open = Some(mev.time.get(i));
        } else if is_join(k) {
            if let Some(f) = open.take() {
                forks.push((f, mev.time.get(i)));
            }
        }
    }
    if let Some(f) = open {
        forks.push((f, mev.time.last().unwrap_or(f)));
    }
    // outermost parallel-region instances per thread, in event order
    let outer = |l: u32| -> Vec<(u32, u32)> {
        let ev = &trace.events[l as usize];
        let ls = &locations[l as usize];
        let mut out = Vec::new();
        let mut until: Option<u32> = None;
        for i in 0..ev.len() {
            if let Some(u) = until {
                if i as u32 <= u {
                    continue;
                }
                until = None;
            }
            if ev.kind[i] == EventKind::Enter
                && kinds.get(ev.arg[i] as usize) == Some(&OmpRegion::Parallel)
            {
                let leave = ls.exitptr(i);
                out.push((i as u32, leave));
                until = Some(if leave == NONE { u32::MAX } else { leave });
            }
        }
        out
    };
    if forks.is_empty() {
        forks = outer(m)
            .into_iter()
            .map(|(e, x)| {
                let t = mev.time.get(e as usize);
                let j = if x == NONE {
                    t
                } else {
                    mev.time.get(x as usize)
                };
                (t, j)
            })
            .collect();
    }
    let base = st.teams.len() as u32;
    for &(fork, join) in &forks {
        st.teams.push(Team {
            master: m,
            fork,
            join,
            members: Vec::new(),
        });
    }
    for &l in threads {
        let ev = &trace.events[l as usize];
        let outermost = outer(l);
        let parallel = (0..ev.len())
            .filter(|&i| {
                ev.kind[i] == EventKind::Enter
                    && kinds.get(ev.arg[i] as usize) == Some(&OmpRegion::Parallel)
            })
            .count();
        st.stats.nested_regions += parallel.saturating_sub(outermost.len()) as u64;
        if l != m {
            st.stats.worker_forks += ev.kind.iter().filter(|&&k| is_fork(k)).count() as u64;
        }
        for (enter, leave) in outermost {
            let t = ev.time.get(enter as usize);
            // the latest fork at or before the ENTER
            let k = forks.partition_point(|f| f.0 <= t);
            if k == 0 {
                st.stats.orphan_regions += 1;
                continue;
            }
            st.teams[(base + k as u32 - 1) as usize]
                .members
                .push(TeamMember {
                    loc: l,
                    thread: thread[l as usize],
                    enter,
                    leave,
                });
        }
    }
    // barrier instances: the k-th barrier of each member within its parallel region
    for (k, team) in st.teams[base as usize..].iter_mut().enumerate() {
        // a thread in a team twice (clock trouble) keeps its first instance
        team.members.dedup_by_key(|mb| mb.loc);
        let mut per: Vec<(u32, u32, Vec<BarrierMember>)> = Vec::new();
        for mb in &team.members {
            let ev = &trace.events[mb.loc as usize];
            let end = if mb.leave == NONE {
                ev.len()
            } else {
                mb.leave as usize
            };
            let ls = &locations[mb.loc as usize];
            let bars: Vec<BarrierMember> = (mb.enter as usize + 1..end)
                .filter(|&i| {
                    ev.kind[i] == EventKind::Enter
                        && kinds.get(ev.arg[i] as usize) == Some(&OmpRegion::Barrier)
                })
                .map(|i| BarrierMember {
                    loc: mb.loc,
                    thread: mb.thread,
                    enter: i as u32,
                    tasks: task_ticks(ev, ls, kinds, i),
                })
                .collect();
            per.push((mb.loc, mb.thread, bars));
        }
        let n = per.iter().map(|p| p.2.len()).max().unwrap_or(0);
        for j in 0..n {
            let members: Vec<BarrierMember> = per
                .iter()
                .filter_map(|(_, _, b)| b.get(j).copied())
                .collect();
            st.barriers.push(BarrierInstance {
                team: base + k as u32,
                members,
            });
        }
    }
}

/// The duration of the outermost task regions executed inside the region instance entered at
/// `enter` (§4.7.2).
fn task_ticks(ev: &Events, ls: &LocationState, kinds: &[OmpRegion], enter: usize) -> u64 {
    let leave = ls.exitptr(enter);
    let end = if leave == NONE {
        ev.len()
    } else {
        leave as usize
    };
    let mut total = 0;
    if (enter + 1..end).any(|i| matches!(task_event(ev, i), Some(TaskEvent::Switch(_)))) {
        // task switch records: the time an explicit task was active (issue 13)
        let mut tasks: TaskStacks<()> = TaskStacks::default();
        let mut stack = Vec::new();
        for i in enter + 1..end.min(ev.len() - 1) + 1 {
            if tasks.explicit() {
                total += ev.time.get(i).saturating_sub(ev.time.get(i - 1));
            }
            match task_event(ev, i) {
                Some(TaskEvent::Switch(k)) => tasks.switch(k, &mut stack),
                Some(TaskEvent::Complete(k)) => {
                    tasks.complete(k, &mut stack);
                }
                None => {}
            }
        }
        return total;
    }
    let mut i = enter + 1;
    while i < end {
        if ev.kind[i] == EventKind::Enter && kinds.get(ev.arg[i] as usize) == Some(&OmpRegion::Task)
        {
            let x = ls.exitptr(i);
            let stop = if x == NONE { end - 1 } else { x as usize };
            total += ev.time.get(stop).saturating_sub(ev.time.get(i));
            i = stop + 1;
        } else {
            i += 1;
        }
    }
    total
}

/// §4.7.3: per lock of the process, acquisitions and releases in acquisition order; each
/// acquisition remembers the release that preceded it.
fn build_locks(trace: &Trace, threads: &[u32], st: &mut OmpState) {
    // (model, lock) → (acquisition order, release?, time, location, event)
    type LockEvent = (u64, bool, u64, u32, u32);
    let mut locks: HashMap<(u64, u64), Vec<LockEvent>> = HashMap::new();
    for &l in threads {
        let ev = &trace.events[l as usize];
        for i in 0..ev.len() {
            let k = ev.kind[i];
            let (release, f) = match k {
                EventKind::ThreadAcquireLock => (false, ev.fields(i)),
                EventKind::ThreadReleaseLock => (true, ev.fields(i)),
                EventKind::OmpAcquireLock => (false, ev.fields(i)),
                EventKind::OmpReleaseLock => (true, ev.fields(i)),
                _ => continue,
            };
            // Thread*: model, lock, order; Omp*: lock, order (model OpenMP)
            let (model, lock, ord) = match (k, f) {
                (EventKind::ThreadAcquireLock | EventKind::ThreadReleaseLock, [m, id, o, ..]) => {
                    (*m, *id, *o)
                }
                (_, [id, o, ..]) => (Paradigm::OPENMP.0 as u64, *id, *o),
                _ => continue,
            };
            locks.entry((model, lock)).or_default().push((
                ord,
                release,
                ev.time.get(i),
                l,
                i as u32,
            ));
        }
    }
    let mut keys: Vec<(u64, u64)> = locks.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        let Some(mut v) = locks.remove(&key) else {
            continue;
        };
        // acquisition order; an acquisition before its own release
        v.sort_by_key(|x| (x.0, x.1, x.2));
        let mut last: Option<(u32, u32)> = None;
        for (_, release, _, l, i) in v {
            if release {
                last = Some((l, i));
            } else {
                st.stats.lock_acquisitions += 1;
                if let Some((rl, ri)) = last {
                    st.last_release[l as usize].push((i, rl, ri));
                }
            }
        }
    }
    for &l in threads {
        st.last_release[l as usize].sort_unstable();
    }
}

/// Inclusive time per call path of one location (ids are in pre-order: parents first).
pub fn inclusive(tree: &CallTree, time: &[u64]) -> Vec<u64> {
    let mut incl = time.to_vec();
    for c in (0..tree.len()).rev() {
        if let Some(p) = tree.nodes[c].parent {
            let x = incl[c];
            incl[p as usize] += x;
        }
    }
    incl
}

/// An explicit task: (thread team, creating thread, generation number) of THREAD_TASK_*
/// records; OMP_TASK_* records (one task id) are keyed `(u64::MAX, 0, id)`.
pub type TaskKey = (u64, u64, u64);

/// A task record: which task becomes active (SWITCH) or ends (COMPLETE); `None` is the
/// thread's implicit task (generation number or task id 0,
/// `OTF2_TASK_GENERATION_NUMBER_IMPLICIT`). TASK_CREATE changes nothing and is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskEvent {
    Switch(Option<TaskKey>),
    Complete(Option<TaskKey>),
}

/// Is `k` a kind of task record (`task_event` may say more)?
#[inline(always)]
pub fn is_task_kind(k: EventKind) -> bool {
    matches!(
        k,
        EventKind::ThreadTaskSwitch
            | EventKind::ThreadTaskComplete
            | EventKind::OmpTaskSwitch
            | EventKind::OmpTaskComplete
    )
}

/// The task record at event `i`, if it is one (inline: pass A asks at every event that is
/// no ENTER or LEAVE, and nearly all are no task record).
#[inline]
pub fn task_event(ev: &Events, i: usize) -> Option<TaskEvent> {
    let k = ev.kind[i];
    let key = match k {
        EventKind::ThreadTaskSwitch | EventKind::ThreadTaskComplete => match ev.fields(i) {
            [team, creator, gen, ..] => (*gen != 0).then_some((*team, *creator, *gen)),
            _ => return None,
        },
        EventKind::OmpTaskSwitch | EventKind::OmpTaskComplete => match ev.fields(i) {
            [id, ..] => (*id != 0).then_some((u64::MAX, 0, *id)),
            _ => return None,
        },
        _ => return None,
    };
    Some(match k {
        EventKind::ThreadTaskSwitch | EventKind::OmpTaskSwitch => TaskEvent::Switch(key),
        _ => TaskEvent::Complete(key),
    })
}

/// One call stack per task of a thread (issue 13): the active one is the caller's `stack`;
/// the implicit task's and the suspended explicit tasks' stacks wait here. An explicit task
/// run for the first time starts on a copy of the stack it interrupts: those frames are
/// inherited (below its `floor`, never left by the task), so its task region's call path
/// hangs below the call path where the task first executed. At its COMPLETE the task it
/// interrupted then resumes (unless a SWITCH says otherwise).
#[derive(Clone, Debug)]
pub struct TaskStacks<F> {
    cur: Option<TaskKey>,
    floor: usize,
    implicit: Vec<F>,
    /// Explicit tasks begun and not completed: stack (empty while active), floor, and the
    /// task interrupted when it first ran.
    tasks: HashMap<TaskKey, (Vec<F>, usize, Option<TaskKey>)>,
}

impl<F> Default for TaskStacks<F> {
    fn default() -> Self {
        TaskStacks {
            cur: None,
            floor: 0,
            implicit: Vec::new(),
            tasks: HashMap::new(),
        }
    }
}

impl<F: Clone> TaskStacks<F> {
    /// Frames of the active stack below this index are inherited (0 for the implicit task).
    pub fn floor(&self) -> usize {
        self.floor
    }

    /// Whether an explicit task is active.
    pub fn explicit(&self) -> bool {
        self.cur.is_some()
    }

    /// Make `to` the active task; `stack` is the active stack before and after.
    pub fn switch(&mut self, to: Option<TaskKey>, stack: &mut Vec<F>) {
        if to == self.cur {
            return;
        }
        let from = self.cur;
        let saved = std::mem::take(stack);
        let (next, floor) = match to {
            None => (std::mem::take(&mut self.implicit), 0),
            Some(k) => match self.tasks.get_mut(&k) {
                Some((s, f, _)) => (std::mem::take(s), *f),
                None => {
                    self.tasks.insert(k, (Vec::new(), saved.len(), from));
                    (saved.clone(), saved.len())
                }
            },
        };
        match from {
            None => self.implicit = saved,
            Some(k) => {
                if let Some(e) = self.tasks.get_mut(&k) {
                    e.0 = saved;
                    e.1 = self.floor;
                }
            }
        }
        *stack = next;
        self.floor = floor;
        self.cur = to;
    }

    /// Task `k` completed: its stack goes, and the frames it left open (above its floor)
    /// are returned (repairs, §3.4). The implicit task's completion changes nothing.
    pub fn complete(&mut self, k: Option<TaskKey>, stack: &mut Vec<F>) -> Vec<F> {
        let Some(k) = k else { return Vec::new() };
        if self.cur == Some(k) {
            let resume = self
                .tasks
                .get(&k)
                .and_then(|e| e.2)
                .filter(|r| self.tasks.contains_key(r));
            self.switch(resume, stack);
        }
        match self.tasks.remove(&k) {
            Some((s, f, _)) => s.into_iter().skip(f).collect(),
            None => Vec::new(),
        }
    }

    /// At the end of the stream (or of the thread's team): back to the implicit task; the
    /// frames every explicit task left open are returned (repairs).
    pub fn finish(&mut self, stack: &mut Vec<F>) -> Vec<F> {
        self.switch(None, stack);
        let mut keys: Vec<TaskKey> = self.tasks.keys().copied().collect();
        keys.sort_unstable();
        let mut open = Vec::new();
        for k in keys {
            if let Some((s, f, _)) = self.tasks.remove(&k) {
                open.extend(s.into_iter().skip(f));
            }
        }
        open
    }
}

#[cfg(test)]
mod tests {
    use super::TaskStacks;

    const A: Option<super::TaskKey> = Some((0, 0, 1));
    const B: Option<super::TaskKey> = Some((0, 0, 2));

    #[test]
    fn a_task_starts_on_a_copy_of_the_stack_it_interrupts() {
        let mut t: TaskStacks<u32> = TaskStacks::default();
        let mut stack = vec![1, 2]; // the implicit task: main, barrier
        t.switch(A, &mut stack);
        assert_eq!(
            (stack.clone(), t.floor(), t.explicit()),
            (vec![1, 2], 2, true)
        );
        stack.push(10); // A's task region
        t.switch(B, &mut stack); // B first runs inside A
        assert_eq!((stack.clone(), t.floor()), (vec![1, 2, 10], 3));
        stack.push(20);
        t.switch(A, &mut stack);
        assert_eq!((stack.clone(), t.floor()), (vec![1, 2, 10], 2));
        stack.pop();
        // A completes with nothing open: back to the implicit task (what A interrupted)
        assert!(t.complete(A, &mut stack).is_empty());
        assert_eq!(
            (stack.clone(), t.floor(), t.explicit()),
            (vec![1, 2], 0, false)
        );
        // B is still suspended with its region open; switching back resumes it
        t.switch(B, &mut stack);
        assert_eq!((stack.clone(), t.floor()), (vec![1, 2, 10, 20], 3));
        // B completes with its region open: that frame is returned (a repair); A, which B
        // interrupted, is gone, so the implicit task resumes
        assert_eq!(t.complete(B, &mut stack), vec![20]);
        assert_eq!((stack, t.floor(), t.explicit()), (vec![1, 2], 0, false));
    }

    #[test]
    fn open_task_frames_are_returned_at_the_end() {
        let mut t: TaskStacks<u32> = TaskStacks::default();
        let mut stack = vec![1];
        t.switch(A, &mut stack);
        stack.push(10);
        t.switch(None, &mut stack);
        t.switch(B, &mut stack);
        stack.extend([20, 21]);
        // a completion of a task that is not running, and of one never seen
        assert_eq!(t.complete(A, &mut stack), vec![10]);
        assert!(t.complete(Some((9, 9, 9)), &mut stack).is_empty());
        assert_eq!(stack, vec![1, 20, 21]);
        assert_eq!(t.finish(&mut stack), vec![20, 21]);
        assert_eq!((stack, t.explicit()), (vec![1], false));
        // the implicit task's completion changes nothing
        let mut s = vec![5];
        assert!(t.complete(None, &mut s).is_empty());
        assert_eq!(s, vec![5]);
    }
}
