//! A byte-level OTF2 archive writer for tests (formats.md §A): small archives with exactly
//! the records a test needs, in either byte order, with any chunk size, version or oddity
//! (unknown records, sparse location ids, mapping tables, clock offsets, attributes).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A record stream being written: chunked, in one byte order.
pub struct Stream {
    pub big: bool,
    pub chunk_size: usize,
    chunks: Vec<Vec<u8>>,
    cur: Vec<u8>,
}

impl Stream {
    pub fn new(big: bool, chunk_size: usize) -> Stream {
        let mut s = Stream {
            big,
            chunk_size,
            chunks: Vec::new(),
            cur: Vec::new(),
        };
        s.open_chunk();
        s
    }

    fn open_chunk(&mut self) {
        self.cur.clear();
        self.cur.push(0x03);
        self.cur.push(if self.big { 0x23 } else { 0x42 });
        self.cur.extend_from_slice(&[0u8; 16]);
    }

    /// Append one item (a record with everything it needs); starts a new chunk when full.
    pub fn item(&mut self, bytes: &[u8]) {
        // keep room for END_OF_CHUNK / END_OF_FILE + END_OF_BUFFER
        if self.cur.len() + bytes.len() + 2 > self.chunk_size {
            self.cur.push(0x00);
            let mut c = std::mem::take(&mut self.cur);
            c.resize(self.chunk_size, 0);
            self.chunks.push(c);
            self.open_chunk();
        }
        self.cur.extend_from_slice(bytes);
    }

    pub fn finish(mut self) -> Vec<u8> {
        self.cur.push(0x02);
        self.cur.push(0x01);
        let mut out: Vec<u8> = self.chunks.concat();
        out.extend_from_slice(&self.cur);
        out
    }
}

/// Encoders for the primitives of A.4 in one byte order.
#[derive(Clone, Copy)]
pub struct Enc {
    pub big: bool,
}

impl Enc {
    pub fn u64f(&self, v: u64) -> Vec<u8> {
        if self.big {
            v.to_be_bytes().to_vec()
        } else {
            v.to_le_bytes().to_vec()
        }
    }

    pub fn u32f(&self, v: u32) -> Vec<u8> {
        if self.big {
            v.to_be_bytes().to_vec()
        } else {
            v.to_le_bytes().to_vec()
        }
    }

    /// Compressed integer with the minimal size (A.4).
    pub fn c(&self, v: u64) -> Vec<u8> {
        if v == 0 {
            return vec![0];
        }
        if v == u64::MAX {
            return vec![0xff];
        }
        let n = 8 - (v.leading_zeros() / 8) as usize;
        let mut out = vec![n as u8];
        let le = v.to_le_bytes();
        if self.big {
            out.extend(le[..n].iter().rev());
        } else {
            out.extend_from_slice(&le[..n]);
        }
        out
    }

    pub fn c32(&self, v: u32) -> Vec<u8> {
        if v == u32::MAX {
            vec![0xff]
        } else {
            self.c(v as u64)
        }
    }

    /// A length-prefixed record (A.7).
    pub fn record(&self, id: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![id];
        if payload.len() < 255 {
            out.push(payload.len() as u8);
        } else {
            out.push(0xff);
            out.extend(self.u64f(payload.len() as u64));
        }
        out.extend_from_slice(payload);
        out
    }

    pub fn timestamp(&self, t: u64) -> Vec<u8> {
        let mut out = vec![0x05];
        out.extend(self.u64f(t));
        out
    }
}

/// Concatenate byte pieces.
pub fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// One location of a test archive.
pub struct Loc {
    pub id: u64,
    pub events: Vec<u8>,
    pub event_count: u64,
    pub local_defs: Option<Vec<u8>>,
}

/// A test archive: global definitions (as ready-made records) and locations.
pub struct Archive {
    pub enc: Enc,
    pub version: (u8, u8, u8),
    pub chunk_size: usize,
    pub defs: Vec<Vec<u8>>,
    pub locs: Vec<Loc>,
    pub name: String,
}

impl Archive {
    pub fn new(big: bool) -> Archive {
        Archive {
            enc: Enc { big },
            version: (3, 0, 0),
            chunk_size: 1 << 16,
            defs: Vec::new(),
            locs: Vec::new(),
            name: "traces".into(),
        }
    }

    pub fn def(&mut self, id: u8, payload: Vec<u8>) {
        let r = self.enc.record(id, &payload);
        self.defs.push(r);
    }

    pub fn string(&mut self, id: u32, s: &str) {
        let mut p = self.enc.c32(id);
        p.extend_from_slice(s.as_bytes());
        p.push(0);
        self.def(10, p);
    }

    pub fn clock(&mut self, resolution: u64, offset: u64, length: u64) {
        let e = self.enc;
        self.def(5, cat(&[&e.c(resolution), &e.c(offset), &e.c(length)]));
    }

    /// Region (A.9, 1.1+ layout): name/canonical string ids, role, paradigm.
    pub fn region(&mut self, id: u32, name: u32, role: u8, paradigm: u8) {
        let e = self.enc;
        let p = cat(&[
            &e.c32(id),
            &e.c32(name),
            &e.c32(u32::MAX), // description
            &[0],             // deprecated region type
            &e.c32(u32::MAX), // source file
            &e.c32(0),
            &e.c32(0),
            &e.c32(name), // canonical name
            &[role, paradigm],
            &e.c32(0),
        ]);
        self.def(15, p);
    }

    pub fn system_tree_node(&mut self, id: u32, name: u32, class: u32, parent: u32) {
        let e = self.enc;
        self.def(
            12,
            cat(&[&e.c32(id), &e.c32(name), &e.c32(class), &e.c32(parent)]),
        );
    }

    pub fn location_group(&mut self, id: u32, name: u32, parent: u32) {
        let e = self.enc;
        self.def(
            13,
            cat(&[
                &e.c32(id),
                &e.c32(name),
                &[1],
                &e.c32(parent),
                &e.c32(u32::MAX),
            ]),
        );
    }

    pub fn location(&mut self, id: u64, name: u32, events: u64, group: u32) {
        let e = self.enc;
        self.def(
            14,
            cat(&[&e.c(id), &e.c32(name), &[1], &e.c(events), &e.c32(group)]),
        );
    }

    /// Group (1.2+ layout).
    pub fn group(&mut self, id: u32, name: u32, kind: u8, paradigm: u8, members: &[u64]) {
        let e = self.enc;
        let mut p = cat(&[&e.c32(id), &e.c32(name), &[0], &e.c32(members.len() as u32)]);
        for &m in members {
            p.extend(e.c(m));
        }
        p.extend_from_slice(&[kind, paradigm]);
        p.extend(e.c32(0));
        self.def(18, p);
    }

    pub fn comm(&mut self, id: u32, name: u32, group: u32) {
        let e = self.enc;
        self.def(
            22,
            cat(&[
                &e.c32(id),
                &e.c32(name),
                &e.c32(group),
                &e.c32(u32::MAX),
                &e.c32(0),
            ]),
        );
    }

    /// Write the archive into `dir`; returns the anchor path.
    pub fn write(&self, dir: &Path) -> PathBuf {
        let e = self.enc;
        let mut defs = Stream::new(e.big, self.chunk_size);
        for d in &self.defs {
            defs.item(d);
        }
        std::fs::write(dir.join(format!("{}.def", self.name)), defs.finish()).unwrap();
        let locdir = dir.join(&self.name);
        std::fs::create_dir_all(&locdir).unwrap();
        for l in &self.locs {
            std::fs::write(locdir.join(format!("{}.evt", l.id)), &l.events).unwrap();
            if let Some(d) = &l.local_defs {
                std::fs::write(locdir.join(format!("{}.def", l.id)), d).unwrap();
            }
        }
        let mut a = vec![0x03, if e.big { 0x23 } else { 0x42 }];
        a.extend_from_slice(b"OTF2\0");
        a.extend_from_slice(&[3, 2, self.version.0, self.version.1, self.version.2]);
        a.extend(e.u64f(self.chunk_size as u64));
        a.extend(e.u64f(self.chunk_size as u64));
        a.extend_from_slice(&[1, 1]);
        a.extend(e.u64f(self.locs.len() as u64));
        a.extend(e.u64f(self.defs.len() as u64));
        a.extend_from_slice(b"testmachine\0perfexpert tests\0\0");
        a.extend(e.u32f(1));
        a.extend_from_slice(b"OTF2::TEST\0true\0");
        a.extend(e.u64f(42));
        a.extend(e.u32f(0));
        a.extend(e.u32f(0));
        a.extend_from_slice(&[0x02, 0x01]);
        let anchor = dir.join(format!("{}.otf2", self.name));
        std::fs::write(&anchor, a).unwrap();
        anchor
    }
}

/// A two-rank MPI archive with typical Score-P definitions; `events(enc, rank)` gives each
/// location's event stream and count.
pub fn mpi_archive(
    big: bool,
    loc_ids: [u64; 2],
    events: impl Fn(Enc, usize) -> (Vec<u8>, u64),
) -> Archive {
    let mut a = Archive::new(big);
    let e = a.enc;
    for (i, s) in [
        "",
        "machine",
        "node",
        "main",
        "MPI_Send",
        "MPI_Recv",
        "MPI Rank 0",
        "MPI Rank 1",
        "Master thread",
        "MPI_COMM_WORLD",
        "mynode",
    ]
    .iter()
    .enumerate()
    {
        a.string(i as u32, s);
    }
    a.clock(1_000_000_000, 1000, 100_000);
    a.system_tree_node(0, 1, 1, u32::MAX);
    a.system_tree_node(1, 10, 2, 0);
    a.location_group(0, 6, 1);
    a.location_group(1, 7, 1);
    a.region(0, 3, 1, 1);
    a.region(1, 4, 28, 4);
    a.region(2, 5, 28, 4);
    a.group(0, 0, 4, 4, &loc_ids);
    a.group(1, 0, 5, 4, &[0, 1]);
    a.comm(0, 9, 1);
    for (r, &id) in loc_ids.iter().enumerate() {
        let (ev, n) = events(e, r);
        a.location(id, 8, n, r as u32);
        a.locs.push(Loc {
            id,
            events: ev,
            event_count: n,
            local_defs: None,
        });
    }
    a
}

/// Rank 0 sends one message to rank 1: Enter main, Enter MPI_Send/Recv, Send/Recv, Leave, Leave.
pub fn ping(e: Enc, rank: usize, chunk_size: usize) -> (Vec<u8>, u64) {
    let mut s = Stream::new(e.big, chunk_size);
    let t0 = 1000 + rank as u64 * 7;
    s.item(&e.timestamp(t0));
    s.item(&[0x0c, 0x00]); // Enter main (region 0)
    s.item(&e.timestamp(t0 + 100));
    let mpi_region = if rank == 0 { 1 } else { 2 };
    s.item(&cat(&[&[0x0c], &e.c32(mpi_region)]));
    let payload = cat(&[&e.c32(1 - rank as u32), &e.c32(0), &e.c32(7), &e.c(64)]);
    s.item(&e.timestamp(t0 + 150));
    s.item(&e.record(if rank == 0 { 14 } else { 18 }, &payload));
    s.item(&e.timestamp(t0 + 200));
    s.item(&cat(&[&[0x0d], &e.c32(mpi_region)]));
    s.item(&e.timestamp(t0 + 300));
    s.item(&[0x0d, 0x00]);
    (s.finish(), 5)
}

/// One event of a test location stream (formats.md §A.10.1), for [`event_stream`]. Regions and
/// communicators are global ids (the archives of [`mpi_ranks_archive`] have no mapping tables).
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    Enter(u32),
    Leave(u32),
    MpiSend {
        to: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    MpiIsend {
        to: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        req: u64,
    },
    MpiIsendComplete(u64),
    MpiIrecvRequest(u64),
    MpiRecv {
        from: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
    },
    MpiIrecv {
        from: u32,
        comm: u32,
        tag: u32,
        bytes: u64,
        req: u64,
    },
    MpiRequestTest(u64),
    MpiRequestCancelled(u64),
    MpiCollectiveBegin,
    /// `op` is an `OTF2_CollectiveOp` (BARRIER 0, BCAST 1, ..., ALLREDUCE 11, REDUCE 12, ...).
    MpiCollectiveEnd {
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        recvd: u64,
    },
    /// THREAD_FORK (model OpenMP) of `n` threads.
    ThreadFork(u32),
    ThreadJoin,
    /// THREAD_TEAM_BEGIN / END of the team communicator `comm`.
    ThreadTeamBegin(u32),
    ThreadTeamEnd(u32),
    /// THREAD_ACQUIRE_LOCK / RELEASE_LOCK (model OpenMP): lock id, acquisition order.
    ThreadAcquireLock(u32, u32),
    ThreadReleaseLock(u32, u32),
}

/// OTF2_PARADIGM_OPENMP, the threading model of the Thread* records.
const MODEL_OPENMP: u8 = 3;

impl Ev {
    /// The record bytes (without the timestamp).
    pub fn encode(&self, e: Enc) -> Vec<u8> {
        let msg = |id: u8, peer: u32, comm: u32, tag: u32, bytes: u64, req: Option<u64>| {
            let mut p = cat(&[&e.c32(peer), &e.c32(comm), &e.c32(tag), &e.c(bytes)]);
            if let Some(r) = req {
                p.extend(e.c(r));
            }
            e.record(id, &p)
        };
        match *self {
            Ev::Enter(r) => cat(&[&[0x0c], &e.c32(r)]),
            Ev::Leave(r) => cat(&[&[0x0d], &e.c32(r)]),
            Ev::MpiSend {
                to,
                comm,
                tag,
                bytes,
            } => msg(14, to, comm, tag, bytes, None),
            Ev::MpiIsend {
                to,
                comm,
                tag,
                bytes,
                req,
            } => msg(15, to, comm, tag, bytes, Some(req)),
            Ev::MpiIsendComplete(r) => cat(&[&[16], &e.c(r)]),
            Ev::MpiIrecvRequest(r) => cat(&[&[17], &e.c(r)]),
            Ev::MpiRecv {
                from,
                comm,
                tag,
                bytes,
            } => msg(18, from, comm, tag, bytes, None),
            Ev::MpiIrecv {
                from,
                comm,
                tag,
                bytes,
                req,
            } => msg(19, from, comm, tag, bytes, Some(req)),
            Ev::MpiRequestTest(r) => cat(&[&[20], &e.c(r)]),
            Ev::MpiRequestCancelled(r) => cat(&[&[21], &e.c(r)]),
            Ev::MpiCollectiveBegin => e.record(22, &[]),
            Ev::MpiCollectiveEnd {
                op,
                comm,
                root,
                sent,
                recvd,
            } => {
                let p = cat(&[&[op], &e.c32(comm), &e.c32(root), &e.c(sent), &e.c(recvd)]);
                e.record(23, &p)
            }
            Ev::ThreadFork(n) => e.record(53, &cat(&[&[MODEL_OPENMP], &e.c32(n)])),
            Ev::ThreadJoin => e.record(54, &[MODEL_OPENMP]),
            Ev::ThreadTeamBegin(c) => e.record(55, &e.c32(c)),
            Ev::ThreadTeamEnd(c) => e.record(56, &e.c32(c)),
            Ev::ThreadAcquireLock(l, o) => {
                e.record(57, &cat(&[&[MODEL_OPENMP], &e.c32(l), &e.c32(o)]))
            }
            Ev::ThreadReleaseLock(l, o) => {
                e.record(58, &cat(&[&[MODEL_OPENMP], &e.c32(l), &e.c32(o)]))
            }
        }
    }
}

/// An event stream of `(timestamp in ticks, event)` items, each with its own timestamp record;
/// returns the bytes and the event count.
pub fn event_stream(e: Enc, chunk_size: usize, events: &[(u64, Ev)]) -> (Vec<u8>, u64) {
    let mut s = Stream::new(e.big, chunk_size);
    for (t, ev) in events {
        s.item(&cat(&[&e.timestamp(*t), &ev.encode(e)]));
    }
    (s.finish(), events.len() as u64)
}

/// An MPI archive with one single-threaded process per rank (location id = location group id =
/// world rank), clock resolution `resolution` ticks/s with global offset 0, the regions
/// `(name, RegionRole, Paradigm)` with ids in the given order, and communicators: id `k` has
/// the world ranks `comms[k]` (so `comms[0]` is normally MPI_COMM_WORLD with every rank).
/// `ranks[r]` is rank r's event stream.
pub fn mpi_ranks_archive(
    resolution: u64,
    regions: &[(&str, u8, u8)],
    comms: &[Vec<u64>],
    ranks: &[Vec<(u64, Ev)>],
) -> Archive {
    let mut a = Archive::new(false);
    let e = a.enc;
    let mut strings: Vec<String> = vec![
        String::new(),
        "machine".into(),
        "node".into(),
        "Master thread".into(),
    ];
    let sid = |s: String, strings: &mut Vec<String>| -> u32 {
        strings.push(s);
        (strings.len() - 1) as u32
    };
    let region_names: Vec<u32> = regions
        .iter()
        .map(|(n, _, _)| sid((*n).into(), &mut strings))
        .collect();
    let rank_names: Vec<u32> = (0..ranks.len())
        .map(|r| sid(format!("MPI Rank {r}"), &mut strings))
        .collect();
    let comm_names: Vec<u32> = (0..comms.len())
        .map(|k| {
            let n = if k == 0 {
                "MPI_COMM_WORLD".to_string()
            } else {
                format!("MPI_COMM_{k}")
            };
            sid(n, &mut strings)
        })
        .collect();
    for (i, s) in strings.iter().enumerate() {
        a.string(i as u32, s);
    }
    let end = ranks
        .iter()
        .flat_map(|r| r.iter().map(|(t, _)| *t))
        .max()
        .unwrap_or(0);
    a.clock(resolution, 0, end + 1);
    a.system_tree_node(0, 1, 1, u32::MAX);
    a.system_tree_node(1, 2, 2, 0);
    for (r, &n) in rank_names.iter().enumerate() {
        a.location_group(r as u32, n, 1);
    }
    for (i, (_, role, paradigm)) in regions.iter().enumerate() {
        a.region(i as u32, region_names[i], *role, *paradigm);
    }
    let world: Vec<u64> = (0..ranks.len() as u64).collect();
    a.group(0, 0, 4, 4, &world); // COMM_LOCATIONS: rank i = location i
    for (k, members) in comms.iter().enumerate() {
        a.group(k as u32 + 1, 0, 5, 4, members); // COMM_GROUP: world ranks
        a.comm(k as u32, comm_names[k], k as u32 + 1);
    }
    for (r, evs) in ranks.iter().enumerate() {
        let (bytes, n) = event_stream(e, a.chunk_size, evs);
        a.location(r as u64, 3, n, r as u32);
        a.locs.push(Loc {
            id: r as u64,
            events: bytes,
            event_count: n,
            local_defs: None,
        });
    }
    a
}

/// A threaded archive as Score-P writes it for OpenMP and hybrid programs: process `p` is MPI
/// rank `p` (location group `p`), its thread `t` has location id `(t << 32) | p` (the master
/// is thread 0 and the only location with an MPI rank); `procs[p][t]` is that thread's event
/// stream. Communicator 0 is MPI_COMM_WORLD over the ranks, communicator `1 + p` the thread
/// team of process `p`. Regions are `(name, RegionRole, Paradigm)`; clock as in
/// [`mpi_ranks_archive`].
pub fn threads_archive(
    resolution: u64,
    regions: &[(&str, u8, u8)],
    procs: &[Vec<Vec<(u64, Ev)>>],
) -> Archive {
    let mut a = Archive::new(false);
    let e = a.enc;
    let mut strings: Vec<String> = vec![
        String::new(),
        "machine".into(),
        "node".into(),
        "MPI_COMM_WORLD".into(),
        "OpenMP team".into(),
    ];
    let sid = |s: String, strings: &mut Vec<String>| -> u32 {
        strings.push(s);
        (strings.len() - 1) as u32
    };
    let region_names: Vec<u32> = regions
        .iter()
        .map(|(n, _, _)| sid((*n).into(), &mut strings))
        .collect();
    let rank_names: Vec<u32> = (0..procs.len())
        .map(|r| sid(format!("MPI Rank {r}"), &mut strings))
        .collect();
    let nthreads = procs.iter().map(Vec::len).max().unwrap_or(0);
    let thread_names: Vec<u32> = (0..nthreads)
        .map(|t| {
            let n = if t == 0 {
                "Master thread".to_string()
            } else {
                format!("OMP thread {t}")
            };
            sid(n, &mut strings)
        })
        .collect();
    for (i, s) in strings.iter().enumerate() {
        a.string(i as u32, s);
    }
    let end = procs
        .iter()
        .flatten()
        .flat_map(|r| r.iter().map(|(t, _)| *t))
        .max()
        .unwrap_or(0);
    a.clock(resolution, 0, end + 1);
    a.system_tree_node(0, 1, 1, u32::MAX);
    a.system_tree_node(1, 2, 2, 0);
    for (r, &n) in rank_names.iter().enumerate() {
        a.location_group(r as u32, n, 1);
    }
    for (i, (_, role, paradigm)) in regions.iter().enumerate() {
        a.region(i as u32, region_names[i], *role, *paradigm);
    }
    let masters: Vec<u64> = (0..procs.len() as u64).collect();
    a.group(0, 0, 4, 4, &masters); // COMM_LOCATIONS (MPI): rank i = master of process i
    a.group(1, 0, 5, 4, &masters); // COMM_GROUP: every rank
    a.comm(0, 3, 1);
    for (p, threads) in procs.iter().enumerate() {
        let g = 2 + 2 * p as u32;
        let ids: Vec<u64> = (0..threads.len() as u64)
            .map(|t| (t << 32) | p as u64)
            .collect();
        a.group(g, 0, 4, 3, &ids); // COMM_LOCATIONS (OpenMP) of the process
        a.group(
            g + 1,
            0,
            5,
            3,
            &(0..threads.len() as u64).collect::<Vec<_>>(),
        );
        a.comm(1 + p as u32, 4, g + 1);
    }
    for (p, threads) in procs.iter().enumerate() {
        for (t, evs) in threads.iter().enumerate() {
            let id = ((t as u64) << 32) | p as u64;
            let (bytes, n) = event_stream(e, a.chunk_size, evs);
            a.location(id, thread_names[t], n, p as u32);
            a.locs.push(Loc {
                id,
                events: bytes,
                event_count: n,
                local_defs: None,
            });
        }
    }
    a
}
