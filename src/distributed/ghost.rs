//! Ghost events (issue 24): what a process's rules read of events held by other processes.
//!
//! `needs` derives from the compiled rules which partner references are read: point-to-point
//! partners (`S` of a receive, `R` and `Q` of a send, the `send`/`recv` fields; the trigger
//! binding itself reads the partner's kind and request link), collective members (their
//! COLL_END, COLL_BEGIN and call), world-call firsts. From a remote event a rule may go on to
//! its `enter` and `leave` and read any value field there; a partner's partner (or its lock
//! release) is deeper than shipped, and such a rule is refused in one line naming it.
//!
//! `replay` is the distributed replay of a share (pass A and the call-tree merge, the OpenMP
//! teams, the message replay) followed by one `all_to_all`: each owner ships, for every
//! partner reference a remote trigger makes into its locations, the referenced event with its
//! enclosing ENTER and matching LEAVE (and the request event, and a collective's COLL_BEGIN,
//! each with its own ENTER and LEAVE), and every rank's first call of each world-call class
//! (its ENTER and LEAVE) to every other process: 28 bytes an ENTER or LEAVE, 72 a message event, 64 a
//! COLL_END, plus 8 a reference. The receiver puts them in its `Trace` as a well-nested,
//! renumbered subsequence of the remote location's events, with their pointer, call-path and
//! partner columns rewritten to the new positions (call paths are the owner's; the held
//! locations' partners point at the ghosts), so the rule engine reads them as it reads its
//! own.

use super::core::replay_share;
use super::messages::{replay_messages, Messages};
use super::wire::{Reader, Writer};
use super::Transport;
use crate::model::{Coll, EventKind, Events, Msg, Trace};
use crate::replay::calltree::CnodeIdx;
use crate::replay::matching::{EventRef, MsgLinks};
use crate::replay::{omp, LocationState, Replay, NONE};
use crate::rules::compile::{Expr, Field};
use crate::rules::{Let, Rule, RuleSet, Trigger};
use std::collections::{BTreeMap, BTreeSet};

/// The partner references the rules read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Point-to-point partners (and the receive's request event).
    pub p2p: bool,
    /// The members of collective instances.
    pub members: bool,
    /// The region classes of the world-call rules: each rank's first call of each.
    pub world: Vec<String>,
}

impl Needs {
    /// `self` and `other` together: a ghost either of them needs is shipped (the world-call
    /// classes in `self`'s order, then `other`'s new ones).
    pub fn unite(&mut self, other: &Needs) {
        self.p2p |= other.p2p;
        self.members |= other.members;
        for c in &other.world {
            if !self.world.contains(c) {
                self.world.push(c.clone());
            }
        }
    }
}

/// What the rules of `rs` read through partner references; an error naming the first rule
/// whose chain goes deeper than a partner's `enter`/`leave` and their value fields.
pub fn needs(rs: &RuleSet) -> Result<Needs, String> {
    let mut needs = Needs::default();
    let nslots = rs.rules.iter().map(|r| r.slots as usize).max().unwrap_or(0);
    // a queued instance's slots may hold another rule's remote events: two rounds
    let mut item_rem = vec![false; nslots];
    for _ in 0..2 {
        let mut next = item_rem.clone();
        for r in &rs.rules {
            let rem = Scan::rule(r, &item_rem, &mut needs)?;
            for (a, b) in next.iter_mut().zip(rem) {
                *a |= b;
            }
        }
        item_rem = next;
    }
    Ok(needs)
}

/// The slots of one rule that may hold events of another location.
struct Scan<'a> {
    rule: &'a Rule,
    rem: Vec<bool>,
    member_rem: Vec<bool>,
    item_rem: &'a [bool],
    needs: &'a mut Needs,
}

impl Scan<'_> {
    fn rule(r: &Rule, item_rem: &[bool], needs: &mut Needs) -> Result<Vec<bool>, String> {
        let mut rem = vec![false; r.slots as usize];
        // the trigger's bindings on another location (kept in their slots along a chain of
        // fed rules)
        let remote: &[&str] = match r.root {
            Trigger::Receive => &["S"],
            Trigger::Send => &["R", "Q"],
            _ => &[],
        };
        for (n, _, s) in &r.vars {
            if remote.contains(&n.as_str()) {
                if let Some(x) = rem.get_mut(*s as usize) {
                    *x = true;
                }
            }
        }
        needs.p2p |= matches!(r.root, Trigger::Receive | Trigger::Send);
        needs.members |= r.root == Trigger::Collective;
        if let (Trigger::WorldCall, Some(c)) = (r.on, &r.class) {
            if !needs.world.contains(c) {
                needs.world.push(c.clone());
            }
        }
        let mut sc = Scan {
            rule: r,
            rem,
            member_rem: vec![false; r.member_slots as usize],
            item_rem,
            needs,
        };
        for l in &r.lets {
            match l {
                Let::Inst(s, e) => {
                    let x = sc.remote(e)?;
                    if let Some(v) = sc.rem.get_mut(*s as usize) {
                        *v = x;
                    }
                }
                Let::Member { slot, expr, .. } => {
                    let x = sc.remote(expr)?;
                    if let Some(v) = sc.member_rem.get_mut(*slot as usize) {
                        *v = x;
                    }
                }
            }
        }
        let g = r.group.as_ref();
        let exprs = [&r.when, &r.for_members, &r.severity, &r.at, &r.violation]
            .into_iter()
            .chain([&r.value])
            .flatten()
            .chain(g.map(|g| &g.by))
            .chain(g.and_then(|g| g.when.as_ref()))
            .chain(r.queue.as_ref().map(|q| &q.take));
        for e in exprs {
            sc.remote(e)?;
        }
        Ok(sc.rem)
    }

    /// Whether `e` may be an event of another location than the trigger's.
    fn remote(&mut self, e: &Expr) -> Result<bool, String> {
        Ok(match e {
            Expr::Const(_) | Expr::Table(..) => false,
            Expr::Slot(s) => self.rem.get(*s as usize) == Some(&true),
            Expr::Field(b, f) => {
                let r = self.remote(b)?;
                self.field(r, *f)?
            }
            Expr::Path(s, f, g) => {
                let r = self.rem.get(*s as usize) == Some(&true);
                let r = self.field(r, *f)?;
                match g {
                    Some(g) => self.field(r, *g)?,
                    None => r,
                }
            }
            Expr::Call(_, args) => {
                for a in args {
                    self.remote(a)?;
                }
                false
            }
            Expr::Agg { cond, body, .. } => {
                if let Some(c) = cond {
                    self.remote(c)?;
                }
                self.remote(body)?
            }
            Expr::Not(a) | Expr::Neg(a) | Expr::In(a, _) => {
                self.remote(a)?;
                false
            }
            Expr::Bin(_, a, b) => {
                self.remote(a)?;
                self.remote(b)?;
                false
            }
            Expr::If(c, a, b) => {
                self.remote(c)?;
                self.remote(a)? | self.remote(b)?
            }
            Expr::Shared(_, a) => self.remote(a)?,
        })
    }

    /// Field `f` of a value (`from_remote`: possibly an event of another location).
    fn field(&mut self, from_remote: bool, f: Field) -> Result<bool, String> {
        Ok(match f {
            Field::Enter | Field::Leave => from_remote,
            Field::Send | Field::Recv | Field::LastRelease if from_remote => {
                return Err(format!(
                    "--mpi: rule {} reads `{}` of an event of another process (a partner's \
                     partner), deeper than the distributed replay ships (a partner event, its \
                     enter and leave: docs/distributed.md)",
                    self.rule.info.id,
                    format!("{f:?}").to_lowercase()
                ))
            }
            Field::Send | Field::Recv => {
                self.needs.p2p = true;
                true
            }
            Field::MemberEvent => {
                self.needs.members = true;
                true
            }
            Field::MemberLet(s) => self.member_rem.get(s as usize) == Some(&true),
            Field::ItemSlot(s) => self.item_rem.get(s as usize) == Some(&true),
            _ => false,
        })
    }
}

/// A process's view of the trace after the ghost exchange: its own locations in full, the
/// events of other locations its rules read as ghosts.
pub struct Ghosted {
    /// The share's trace, with the ghosts as the events of the remote locations.
    pub trace: Trace,
    /// The replay of the locations held, and of the ghosts (their columns renumbered); the
    /// collective instances with a member held here (all their members held or ghosts).
    pub replay: Replay,
    /// Per location: empty for a location held, else the original index of each ghost.
    pub orig: Vec<Vec<u32>>,
    /// The original index of each instance of `replay.instances`.
    pub instance_of: Vec<u32>,
    /// The rank owning each location.
    pub owner: Vec<u32>,
    /// The bytes this process sent and received in the ghost exchange.
    pub bytes: u64,
}

impl Ghosted {
    /// Event `i` of location `l` here: its index in the owner's numbering.
    pub fn original(&self, l: u32, i: u32) -> u32 {
        match self.orig.get(l as usize) {
            Some(o) if !o.is_empty() => o.get(i as usize).copied().unwrap_or(NONE),
            _ => i,
        }
    }
}

/// The distributed replay of a share (`keep`) and the ghost exchange: what the rules of a
/// process read, as `Needs` says, in one `Trace` and `Replay`.
pub fn replay(
    mut trace: Trace,
    keep: &[bool],
    needs: &Needs,
    t: &dyn Transport,
) -> Result<Ghosted, String> {
    let r = replay_share(&trace, keep, t)?;
    let (tree, mut states, owner) = (r.profile.tree, r.states, r.owner);
    let nproc = t.size();
    let openmp = omp::has_openmp(&trace);
    let (master, thread) = omp::masters(&trace, openmp);
    let kinds = openmp.then(|| omp::region_kinds(&trace));
    let held = |l: usize| keep.get(l) == Some(&true);
    let omp_state = omp::state(
        &trace,
        &tree,
        &mut states,
        kinds.as_deref(),
        (master.clone(), thread),
        held,
    );
    let m = replay_messages(&trace, keep, &owner, &states, &master, t)?;
    let mut to = vec![Writer::default(); t.size()];
    for (rank, seeds) in seeds(&trace, &m, &owner, (t.rank(), nproc), needs) {
        // the events of one location once, however many references reach them
        let mut set: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
        for (l, i) in seeds {
            closure(
                &trace,
                &states[l as usize],
                &m,
                l,
                i,
                set.entry(l).or_default(),
            );
        }
        for (l, set) in set {
            let (w, ln) = (&mut to[rank], m.matched.links.get(l as usize));
            w.u32(l);
            w.u32(set.len() as u32);
            for x in set {
                put_event(w, &trace.events[l as usize], &states[l as usize], ln, x);
            }
        }
    }
    let before = t.bytes_exchanged();
    let got = t.all_to_all(to.into_iter().map(|w| w.0).collect())?;
    let bytes = t.bytes_exchanged() - before;
    let mut ghosts: BTreeMap<u32, BTreeMap<u32, Ghost>> = BTreeMap::new();
    for (rank, bytes) in got.iter().enumerate() {
        get_ghosts(bytes, keep, &mut ghosts).map_err(|e| format!("rank {rank}: {e}"))?;
    }
    let mut links = m.matched.links;
    links.resize_with(trace.events.len(), MsgLinks::default);
    // the held locations' partners on other processes: at their ghosts' positions
    for (l, ln) in links.iter_mut().enumerate() {
        let remote = |p: &EventRef| p.is_some() && keep.get(p.loc as usize) != Some(&true);
        if keep.get(l) == Some(&true) && ln.partner.iter().any(remote) {
            let n = ln.partner.len();
            *ln = MsgLinks::from_parts(
                (ln.partner.iter())
                    .map(|&p| renumber(p, keep, &ghosts).unwrap_or(EventRef::NONE))
                    .collect(),
                (0..n).map(|k| ln.request_event(k)).collect(),
                (0..n).map(|k| ln.cancelled(k)).collect(),
            );
        }
    }
    let mut orig = vec![Vec::new(); trace.events.len()];
    for (&l, gs) in &ghosts {
        let (ev, st, ln) = build(gs, &ghosts, keep);
        trace.events[l as usize] = ev;
        states[l as usize] = st;
        links[l as usize] = ln;
        orig[l as usize] = gs.keys().copied().collect();
    }
    let (mut instances, mut instance_of) = (Vec::new(), Vec::new());
    for (n, inst) in m.instances.into_iter().enumerate() {
        let members: Option<Vec<EventRef>> = (inst.members.iter())
            .map(|&e| renumber(e, keep, &ghosts))
            .collect();
        let held = inst
            .members
            .iter()
            .any(|e| keep.get(e.loc as usize) == Some(&true));
        if let (true, Some(members)) = (held, members) {
            instances.push(crate::replay::collectives::Instance { members, ..inst });
            instance_of.push(n as u32);
        }
    }
    let replay = Replay {
        tree,
        locations: states,
        msg_links: links,
        matching: m.matched.stats,
        p2p_violators: m.matched.violators,
        unmatched_locations: m.matched.unmatched,
        instances,
        collectives: m.collectives,
        omp: omp_state,
    };
    Ok(Ghosted {
        trace,
        replay,
        orig,
        instance_of,
        owner,
        bytes,
    })
}

/// Per destination rank, the (location, event) pairs held here whose ghosts it needs: the
/// point-to-point events whose partner it holds, every rank's first call of each world-call
/// class, the members of the collective instances one of whose other members it holds.
fn seeds(
    trace: &Trace,
    m: &Messages,
    owner: &[u32],
    (me, nproc): (usize, usize),
    needs: &Needs,
) -> BTreeMap<usize, BTreeSet<(u32, u32)>> {
    let mut out: BTreeMap<usize, BTreeSet<(u32, u32)>> = BTreeMap::new();
    let own = |l: u32| owner.get(l as usize).copied().unwrap_or(0) as usize;
    if needs.p2p {
        for (l, links) in m.matched.links.iter().enumerate() {
            if links.partner.is_empty() || own(l as u32) != me {
                continue;
            }
            let ev = &trace.events[l];
            for i in 0..ev.len() {
                if !is_msg(ev.kind[i]) {
                    continue;
                }
                let p = links.partner[ev.arg[i] as usize];
                if p.is_some() && own(p.loc) != me {
                    out.entry(own(p.loc))
                        .or_default()
                        .insert((l as u32, i as u32));
                }
            }
        }
    }
    // every rank's first call of each world-call class, to every other process
    for l in 0..trace.events.len() {
        if own(l as u32) != me || trace.defs.locations[l].rank.is_none() {
            continue;
        }
        for i in first_calls(trace, l, &needs.world).into_iter().flatten() {
            for r in (0..nproc).filter(|&r| r != me) {
                out.entry(r).or_default().insert((l as u32, i));
            }
        }
    }
    if needs.members {
        for inst in &m.instances {
            let ranks: BTreeSet<usize> = inst.members.iter().map(|e| own(e.loc)).collect();
            for e in inst.members.iter().filter(|e| own(e.loc) == me) {
                for &r in ranks.iter().filter(|&&r| r != me) {
                    out.entry(r).or_default().insert((e.loc, e.event));
                }
            }
        }
    }
    out
}

/// On location `l`, per class of `classes`: the first ENTER of a region of that class
/// (`model::classify`, the class the rules compare).
pub fn first_calls(trace: &Trace, l: usize, classes: &[String]) -> Vec<Option<u32>> {
    let mut first = vec![None; classes.len()];
    if classes.is_empty() {
        return first;
    }
    let class: Vec<Option<usize>> = (trace.defs.regions.iter())
        .map(|r| {
            let c = crate::model::classify::classify(r).0;
            classes.iter().position(|x| x == c)
        })
        .collect();
    let ev = &trace.events[l];
    let mut left = classes.len();
    for i in 0..ev.len() {
        if ev.kind[i] != EventKind::Enter {
            continue;
        }
        if let Some(Some(k)) = class.get(ev.arg[i] as usize) {
            if first[*k].is_none() {
                first[*k] = Some(i as u32);
                left -= 1;
                if left == 0 {
                    break;
                }
            }
        }
    }
    first
}

fn is_msg(k: EventKind) -> bool {
    matches!(
        k,
        EventKind::MpiSend | EventKind::MpiRecv | EventKind::MpiIsend | EventKind::MpiIrecv
    )
}

fn is_coll(k: EventKind) -> bool {
    matches!(
        k,
        EventKind::MpiCollectiveEnd | EventKind::NonBlockingCollectiveComplete
    )
}

/// One shipped event: what the rules and the passes' bindings read of it.
#[derive(Clone, Debug)]
struct Ghost {
    time: u64,
    kind: EventKind,
    /// The owner's pointer (an ENTER's LEAVE, another event's ENTER), original numbering.
    ptr: u32,
    cnode: CnodeIdx,
    /// ENTER/LEAVE: the region.
    region: u32,
    msg: Option<(Msg, EventRef, u32, bool)>,
    coll: Option<Coll>,
}

/// Adds to `set` event `i` of location `l` and what a rule can reach from it: its ENTER and LEAVE, its
/// request event and a collective's COLL_BEGIN, each with their ENTER and LEAVE.
fn closure(
    trace: &Trace,
    st: &LocationState,
    m: &Messages,
    l: u32,
    i: u32,
    set: &mut BTreeSet<u32>,
) {
    let ev = &trace.events[l as usize];
    let add = |set: &mut BTreeSet<u32>, x: u32| {
        if x == NONE || x as usize >= ev.len() {
            return;
        }
        set.insert(x);
        let e = st.enterptr(x as usize);
        if e != NONE {
            set.insert(e);
            if st.exitptr(e as usize) != NONE {
                set.insert(st.exitptr(e as usize));
            }
        }
    };
    add(set, i);
    let k = ev.kind[i as usize];
    if is_msg(k) {
        if let Some(ln) = m.matched.links.get(l as usize) {
            add(set, ln.request_event(ev.arg[i as usize] as usize));
        }
    }
    if is_coll(k) {
        // the COLL_BEGIN inside the same call, as the collective pass looks for it
        let e = st.enterptr(i as usize);
        let mut j = i as usize;
        while e != NONE && j > e as usize {
            j -= 1;
            if ev.kind[j] == EventKind::MpiCollectiveBegin && st.enterptr(j) == e {
                add(set, j as u32);
                break;
            }
        }
    }
}

fn put_event(w: &mut Writer, ev: &Events, st: &LocationState, ln: Option<&MsgLinks>, x: u32) {
    let i = x as usize;
    let k = ev.kind[i];
    w.u32(x);
    w.u64(ev.time.get(i));
    w.u32(k as u32);
    // the pointer column as the owner has it: an ENTER's LEAVE (itself without one), the
    // ENTER of any other event
    w.u32(match (st.enterptr(i), st.exitptr(i)) {
        (e, NONE) if e == x => x,
        (e, l) if e == x => l,
        (e, _) => e,
    });
    w.u32(st.cnode(i));
    if let Some(r) = ev.region(i) {
        w.u32(r);
    } else if let (Some(msg), true) = (ev.msg(i), is_msg(k)) {
        let q = ev.arg[i] as usize;
        w.u32(msg.peer);
        w.u32(msg.comm);
        w.u32(msg.tag);
        w.u64(msg.bytes);
        put_request(w, msg.request);
        let (p, req, c) = ln.map_or((EventRef::NONE, NONE, false), |ln| {
            (ln.partner[q], ln.request_event(q), ln.cancelled(q))
        });
        w.u32(p.loc);
        w.u32(p.event);
        w.u32(req);
        w.u32(c as u32);
    } else if let Some(c) = ev.coll(i) {
        w.u32(c.op as u32);
        w.u32(c.comm);
        w.u32(c.root);
        w.u64(c.sent);
        w.u64(c.received);
        put_request(w, c.request);
    }
}

fn put_request(w: &mut Writer, r: Option<u64>) {
    w.u64(r.unwrap_or(u64::MAX));
    w.u32(r.is_some() as u32);
}

fn get_event(r: &mut Reader) -> Result<(u32, Ghost), String> {
    let x = r.u32()?;
    let time = r.u64()?;
    let k = r.u32()?;
    let kind = (EventKind::ALL.iter())
        .find(|&&x| x as u32 == k)
        .copied()
        .ok_or_else(|| format!("event kind {k} unknown"))?;
    let (ptr, cnode) = (r.u32()?, r.u32()?);
    let mut g = Ghost {
        time,
        kind,
        ptr,
        cnode,
        region: 0,
        msg: None,
        coll: None,
    };
    if matches!(kind, EventKind::Enter | EventKind::Leave) {
        g.region = r.u32()?;
    } else if is_msg(kind) {
        let (peer, comm, tag, bytes) = (r.u32()?, r.u32()?, r.u32()?, r.u64()?);
        let (req, has) = (r.u64()?, r.u32()? != 0);
        let p = EventRef {
            loc: r.u32()?,
            event: r.u32()?,
        };
        let (q, c) = (r.u32()?, r.u32()? != 0);
        let msg = Msg {
            peer,
            comm,
            tag,
            bytes,
            request: has.then_some(req),
        };
        g.msg = Some((msg, p, q, c));
    } else if is_coll(kind) {
        let (op, comm, root) = (r.u32()?, r.u32()?, r.u32()?);
        let (sent, received, req, has) = (r.u64()?, r.u64()?, r.u64()?, r.u32()? != 0);
        g.coll = Some(Coll {
            op: op as u8,
            comm,
            root,
            sent,
            received,
            request: has.then_some(req),
        });
    }
    Ok((x, g))
}

/// The ghosts one rank shipped, added to `ghosts` (per location, per original index).
fn get_ghosts(
    b: &[u8],
    keep: &[bool],
    ghosts: &mut BTreeMap<u32, BTreeMap<u32, Ghost>>,
) -> Result<(), String> {
    let mut r = Reader::new(b);
    while !r.is_done() {
        let l = r.u32()?;
        if keep.get(l as usize) != Some(&false) {
            return Err(format!(
                "ghost events of location {l}, held here or out of range"
            ));
        }
        let n = r.u32()?;
        let slot = ghosts.entry(l).or_default();
        for _ in 0..n {
            let (x, g) = get_event(&mut r)?;
            slot.insert(x, g);
        }
    }
    Ok(())
}

/// Event `e` in this process's numbering: itself on a location held, its ghost's position
/// on another (`None`: not shipped here).
fn renumber(
    e: EventRef,
    keep: &[bool],
    ghosts: &BTreeMap<u32, BTreeMap<u32, Ghost>>,
) -> Option<EventRef> {
    if !e.is_some() || keep.get(e.loc as usize) == Some(&true) {
        return Some(e);
    }
    let gs = ghosts.get(&e.loc)?;
    gs.contains_key(&e.event).then(|| EventRef {
        loc: e.loc,
        event: gs.range(..e.event).count() as u32,
    })
}

/// The events, replay state and message links of a remote location from its ghosts `gs`
/// (in original order; pointers and partners renumbered).
fn build(
    gs: &BTreeMap<u32, Ghost>,
    all: &BTreeMap<u32, BTreeMap<u32, Ghost>>,
    keep: &[bool],
) -> (Events, LocationState, MsgLinks) {
    let orig: Vec<u32> = gs.keys().copied().collect();
    let new = |x: u32| orig.binary_search(&x).map_or(NONE, |k| k as u32);
    let mut ev = Events::with_capacity(gs.len());
    let (mut ptr, mut cnode) = (Vec::new(), Vec::new());
    let (mut partner, mut request, mut cancelled) = (Vec::new(), Vec::new(), Vec::new());
    for g in gs.values() {
        ptr.push(if g.ptr == NONE { NONE } else { new(g.ptr) });
        cnode.push(g.cnode);
        if let Some((msg, p, q, c)) = g.msg {
            ev.push_msg(g.time, g.kind, msg);
            let p = renumber(p, keep, all).unwrap_or(EventRef::NONE);
            partner.push(p);
            request.push(if q == NONE { NONE } else { new(q) });
            cancelled.push(c);
        } else if let Some(c) = g.coll {
            ev.push_coll(g.time, g.kind, c);
        } else if matches!(g.kind, EventKind::Enter | EventKind::Leave) {
            ev.push_region(g.time, g.kind, g.region);
        } else {
            ev.push_extra(g.time, g.kind, &[]);
        }
    }
    (
        ev,
        LocationState::from_columns(ptr, cnode),
        MsgLinks::from_parts(partner, request, cancelled),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::eval::{ptr, Ctx, Ptr};
    use crate::distributed::local;
    use crate::rules::compile::Value;

    /// Every fact a rule can reach from a trigger through a partner reference: the partner
    /// (or member) event, its `enter` and `leave`, its request event, each with every field
    /// and its call path.
    fn reach(cx: &Ctx, v: Value, back: &dyn Fn(Value) -> Value, out: &mut Vec<Value>) {
        let Value::Event(l, i) = v else {
            out.push(back(v));
            return;
        };
        out.push(back(v));
        let mut at = vec![(l, i)];
        for f in [Field::Enter, Field::Leave] {
            if let Value::Event(l, j) = cx.event_field(l, i, f) {
                at.push((l, j));
            }
        }
        let ev = &cx.trace.events[l as usize];
        if is_msg(ev.kind[i as usize]) {
            let q = cx.replay.msg_links[l as usize].request_event(ev.arg[i as usize] as usize);
            out.push(back(if q == NONE {
                Value::None
            } else {
                Value::Event(l, q)
            }));
        }
        use Field::{Bytes, Call, Cancelled, Enter, Kind, Leave, Rank, Received, Sent, Tag, Time};
        for (l, j) in at {
            out.push(back(Value::Event(l, j)));
            for f in [
                Time, Enter, Leave, Call, Bytes, Tag, Rank, Kind, Cancelled, Sent, Received,
            ] {
                out.push(back(cx.event_field(l, j, f)));
            }
            out.push(Value::Num(ptr(cx.replay, Ptr::Cnode, l, j) as f64));
        }
    }

    /// The COLL_BEGIN (or ENTER) time of a member, as the collective pass finds it.
    fn begin(cx: &Ctx, l: u32, end: u32) -> f64 {
        let ev = &cx.trace.events[l as usize];
        let e = ptr(cx.replay, Ptr::Enter, l, end);
        let mut j = end as usize;
        while e != NONE && j > e as usize {
            j -= 1;
            if ev.kind[j] == EventKind::MpiCollectiveBegin
                && ptr(cx.replay, Ptr::Enter, l, j as u32) == e
            {
                return cx.seconds(l, j as u32);
            }
        }
        cx.seconds(l, if e == NONE { end } else { e })
    }

    /// For P = 1..4 threads as processes, every testdata trace: on every process, every
    /// fact the built-in rules can read through a partner reference of a trigger held there
    /// (point-to-point partners, collective members) is the single-process one.
    #[test]
    fn ghosts_read_as_the_single_process_events() {
        let rules = RuleSet::load(&[]).expect("the built-in rules");
        let needs = needs(&rules).expect("the built-in rules are supported");
        assert!(
            needs.p2p && needs.members && !needs.world.is_empty(),
            "{needs:?}"
        );
        let mut kinds = [0u32; 256];
        kinds
            .iter_mut()
            .enumerate()
            .for_each(|(k, x)| *x = k as u32);
        let paths = local::testdata_traces();
        let mut checked = 0usize;
        for path in &paths {
            let whole = crate::formats::open(path).expect("testdata reads");
            let want = Replay::new(&whole);
            let regions = Vec::new();
            let wcx = Ctx::of_trace(&whole, &want, &regions, &kinds, &[], &[]);
            for p in 1..=4 {
                let got = local::on_shares(path, p, |trace, keep, t| {
                    Ok((keep.to_vec(), replay(trace.clone(), keep, &needs, t)?))
                });
                for g in got {
                    let what = format!("{}, P = {p}", path.display());
                    let (keep, g) = g.unwrap_or_else(|e| panic!("{what}: {e}"));
                    let cx = Ctx::of_trace(&g.trace, &g.replay, &regions, &kinds, &[], &[]);
                    let back = |v: Value| match v {
                        Value::Event(l, i) => Value::Event(l, g.original(l, i)),
                        v => v,
                    };
                    let same = |v: Value| v;
                    for (l, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
                        let ev = &whole.events[l];
                        for i in (0..ev.len()).filter(|&i| is_msg(ev.kind[i])) {
                            let (l, i) = (l as u32, i as u32);
                            for f in [Field::Send, Field::Recv] {
                                let (mut a, mut b) = (Vec::new(), Vec::new());
                                reach(&cx, cx.event_field(l, i, f), &back, &mut a);
                                reach(&wcx, wcx.event_field(l, i, f), &same, &mut b);
                                assert_eq!(a, b, "{what}: location {l}, event {i}, {f:?}");
                                checked += 1;
                            }
                        }
                    }
                    for (inst, &n) in g.replay.instances.iter().zip(&g.instance_of) {
                        let w = &want.instances[n as usize];
                        assert_eq!(inst.members.len(), w.members.len(), "{what}");
                        for (m, wm) in inst.members.iter().zip(&w.members) {
                            let (mut a, mut b) = (Vec::new(), Vec::new());
                            reach(&cx, Value::Event(m.loc, m.event), &back, &mut a);
                            reach(&wcx, Value::Event(wm.loc, wm.event), &same, &mut b);
                            a.push(Value::Num(begin(&cx, m.loc, m.event)));
                            b.push(Value::Num(begin(&wcx, wm.loc, wm.event)));
                            assert_eq!(a, b, "{what}: instance {n}");
                            checked += 1;
                        }
                    }
                    for l in 0..whole.events.len() {
                        let (a, b) = (
                            first_calls(&g.trace, l, &needs.world),
                            first_calls(&whole, l, &needs.world),
                        );
                        for (a, b) in a.into_iter().zip(b) {
                            let (mut x, mut y) = (Vec::new(), Vec::new());
                            let ev = |i: Option<u32>| {
                                i.map_or(Value::None, |i| Value::Event(l as u32, i))
                            };
                            reach(&cx, ev(a), &back, &mut x);
                            reach(&wcx, ev(b), &same, &mut y);
                            assert_eq!(x, y, "{what}: first calls of location {l}");
                            checked += 1;
                        }
                    }
                    let held = |n: &usize| {
                        want.instances[*n]
                            .members
                            .iter()
                            .any(|e| keep[e.loc as usize])
                    };
                    let all: Vec<u32> = (0..want.instances.len())
                        .filter(held)
                        .map(|n| n as u32)
                        .collect();
                    assert_eq!(g.instance_of, all, "{what}");
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// A rule reading a partner's partner is refused in one line naming it.
    #[test]
    fn a_chain_deeper_than_shipped_is_refused() {
        let dir = std::env::temp_dir().join(format!("ghost-rule-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let f = dir.join("deep.toml");
        std::fs::write(
            &f,
            "id = \"deep_partner\"\nname = \"Deep\"\nparent = \"mpi_latesender\"\n\
             unit = \"sec\"\nparadigm = \"mpi\"\norder = 9\non = \"receive\"\n\
             severity = \"S.recv.time - R.time\"\nat = \"R\"\n\
             description = \"d\"\ndiagnosis = \"d\"\n",
        )
        .expect("temp file");
        let rs = RuleSet::load(&[f]);
        let _ = std::fs::remove_dir_all(&dir);
        let rs = rs.expect("a valid rule");
        let e = needs(&rs).expect_err("a partner's partner");
        assert!(e.contains("deep_partner") && !e.contains('\n'), "{e}");
    }
}
