#!/usr/bin/env python3
"""Write an MPI-like OTF2 trace of any size with the official OTF2 writer, for tests and benchmarks.

usage: tools/gen_trace.py OUTDIR [--ranks N] [--iterations N]
                          [--pattern {pingpong,ring,alltoall-nb,barrier,mixed,omp-teams,
                                     omp-tasks}]
                          [--threads N]
                          [--imbalance F] [--compute-ns N] [--jitter F] [--seed N]
                          [--msg-bytes N] [--timer-resolution N] [--event-api {direct,python}]

Needs the PyPI package `otf2` (3.2, whose wheel bundles libotf2): `bash tools/venv.sh` makes
`.venv` with it and prints its python, e.g.

    "$(bash tools/venv.sh)" tools/gen_trace.py /tmp/ring --ranks 4 --iterations 3 --pattern ring

Writes OUTDIR/traces.otf2 (the anchor), OUTDIR/traces.def and OUTDIR/traces/, and prints one
line: "N events written to OUTDIR/traces.otf2". The same command line run from the same
directory writes byte-identical files (the clock definition's wall-clock date is fixed, not
the time of the run); with another OUTDIR only the anchor's 8-byte trace identifier differs,
which libotf2 derives from OUTDIR as well as the contents.

Each rank r runs  main { ITERATIONS x [compute, communication] }  where the communication is
  pingpong     ranks r and r^1 exchange a message each way with blocking MPI_Send / MPI_Recv
               (even rank sends first); with an odd rank count the last rank only computes;
  ring         MPI_Irecv from r-1, MPI_Isend to r+1, MPI_Waitall (MpiIrecvRequest, MpiIsend,
               then MpiIrecv and MpiIsendComplete inside MPI_Waitall, as Score-P writes them);
  alltoall-nb  the same with every other rank: R-1 MPI_Irecv, R-1 MPI_Isend, one MPI_Waitall;
  barrier      MPI_Barrier (MpiCollectiveBegin/End);
  mixed        compute, pingpong, ring, alltoall-nb, compute, MPI_Allreduce,
               MPI_Bcast (root: iteration % R), MPI_Barrier.
Every MPI call is Enter(region), its MPI event(s), Leave(region).

  omp-teams    (one process, --ranks 1) an OpenMP program of --threads threads, written as
               Score-P writes OpenMP traces (patterns.md §5.6): per iteration the master
               computes alone in `serial`, then forks a team whose size alternates between
               --threads (even iterations) and max(1, threads // 2) (odd iterations) — the
               parallel regions use different numbers of threads, which Scalasca 2.6 refuses.
               Each team thread k: THREAD_TEAM_BEGIN, Enter `!$omp parallel`, `work` of
               compute_ns * (1 + imbalance * k/(n-1)), then `!$omp critical` (lock 1 acquired in
               arrival order, held 500 ns in `!$omp critical sblock`), then
               `!$omp implicit barrier` (everyone leaves 200 ns after the last arrived), Leave,
               THREAD_TEAM_END; the master's THREAD_JOIN follows the last THREAD_TEAM_END. The
               locations of the process are "Master thread", "OMP thread 1", ...; the thread
               team communicator covers them all. Events: 2 + the sum over iterations of
               4 + 14 * (team size). Written through the package's EventWriter methods
               (--event-api is ignored).
  omp-tasks    (one process, --ranks 1) OpenMP tasks, suspended and resumed (issue 13): per
               iteration the master forks a team of --threads threads (fork, THREAD_TEAM_BEGIN
               and Enter `!$omp parallel` as in omp-teams), then creates for every thread k a
               task P_k and a task C_k (`!$omp create task @gen.c:22` / `:24`, each Enter,
               THREAD_TASK_CREATE (team, creating thread 0, generation number 1, 2, ... over
               the run), Leave 100 ns later, 100 ns apart). The master runs P_0 and C_0 in
               `!$omp taskwait` (Enter 100 ns after the last creation), thread k >= 1 runs P_k
               and C_k in `!$omp implicit barrier` (Enter 100 ns after its parallel region's),
               starting 100 ns after max(its barrier Enter, the creation of C_k). A pair runs
               interleaved from t0 (g = 100 ns, W = compute_ns), every change of task marked
               by THREAD_TASK_SWITCH (to the implicit task: creating thread k, generation 0):
                 t0 switch P, Enter `!$omp task untied @gen.c:22`; t0+g Enter `produce`;
                 t0+g+W switch C, Enter `!$omp task untied @gen.c:24`; t0+2g+W Enter
                 `consume`; t0+2g+2W switch P; t0+3g+2W Leave produce; t0+4g+2W Leave P's
                 task, THREAD_TASK_COMPLETE P, switch C; t0+5g+2W Leave consume; t0+6g+2W
                 Leave C's task, THREAD_TASK_COMPLETE C, switch to the implicit task.
               The master leaves the taskwait 100 ns after that and enters the barrier 100 ns
               later. Everyone leaves the barrier 200 ns + 10k ns after the later of the last
               barrier Enter and the last pair's end, the parallel region 200 ns after that,
               THREAD_TEAM_END 100 ns later; THREAD_JOIN 100 ns after the last. Events:
               2 + iterations * (4 + 27 * threads).

Events per rank and iteration (plus 2 per rank for main):
  pingpong 8 (2 for the unpaired last rank of an odd count); ring 12; alltoall-nb 8(R-1)+4;
  barrier 6; mixed 8(R-1)+34 (28 for the unpaired rank), e.g. R*(12*ITERATIONS+2) for ring.

Timing model (times in ns, converted to ticks of --timer-resolution, every step at least one
tick, so orderings stay strict at any resolution). All ranks enter main at 1 s. Rank r's compute
phase lasts compute_ns * (1 + imbalance * r/(R-1)) * (1 + jitter * U(-1, 1)) (U drawn from
--seed; no noise unless --jitter > 0), so higher ranks arrive later: late senders in point-to-
point patterns, waits in collectives. Between calls 100 ns; from Enter to a call's first MPI
event and from its last to Leave 200 ns; messages take 1000 ns + msg_bytes/10 ns and sends are
eager (never wait for the receiver); a receive completes at max(its Enter + 200 ns, send event
+ latency); MPI_Barrier / MPI_Allreduce end 2000 ns after the last rank entered; MPI_Bcast ends
on the root 2000 ns after its Enter and on the others at max(own Enter + 200 ns, root's Enter
+ latency). Per location, timestamps never decrease; every receive completes after its send.

Definitions follow Score-P's conventions (like ../shared/bench/gen_pingpong_trace.py): system
tree machine > node, one LocationGroup "MPI Rank r" (PROCESS) per rank with one location
"Master thread" (CPU_THREAD, id r), a COMM_LOCATIONS group and a COMM_GROUP (ranks 0..R-1)
with paradigm MPI, the communicator MPI_COMM_WORLD, and regions main and compute (USER
FUNCTION), MPI_Send, MPI_Recv, MPI_Isend, MPI_Irecv, MPI_Waitall (POINT2POINT), MPI_Barrier
(BARRIER), MPI_Allreduce (COLL_ALL2ALL), MPI_Bcast (COLL_ONE2ALL), all with paradigm MPI but
main and compute. All regions are defined whatever the pattern, so region ids are stable.

Speed and memory: definitions, archive and files are handled by the package's otf2.writer;
events go by default (--event-api direct) straight to libotf2's OTF2_EvtWriter_* functions in
the wheel, the same calls the package's EventWriter methods (w.enter, w.mpi_send, ...) end in,
because those build an event object per record (~5 us an event); --event-api python uses those
methods and writes the same files (checked on every pattern). Memory callbacks make libotf2
write each location's events out chunk by chunk instead of holding the whole trace until it
closes. Measured on a 2-core x86-64 VM (Python 3.11.7, otf2 3.2), 16 ranks:
  1 M events:  1.2-1.8 s with --event-api direct (pingpong fastest, ring/alltoall-nb slowest),
               6.5 s with --event-api python; 14 MB on disk;
  50 M events (--pattern pingpong --iterations 390625): 68-76 s, peak RSS 110 MB, 656 MB on
               disk (~13 bytes an event); without the memory callbacks peak RSS was 700 MB.
"""

import argparse
import ctypes
import functools
import random
import shutil
import sys
from pathlib import Path

import _otf2
import otf2
from otf2.enums import Paradigm, RegionRole

# Durations of the timing model, in ns (see the docstring).
NS_START = 1_000_000_000  # when every rank enters main
NS_GAP = 100  # user code between two calls
NS_CALL = 200  # Enter -> first MPI event, last MPI event -> Leave
NS_STEP = 50  # between two completion events inside one MPI_Waitall
NS_LATENCY = 1000  # a message's latency, plus msg_bytes / BYTES_PER_NS
BYTES_PER_NS = 10
NS_COLLECTIVE = 2000  # a collective's cost after the last rank (or the root) entered

# Wall-clock date recorded in the clock definition, fixed so that reruns give the same files.
REALTIME_SECONDS = 1_704_067_200  # 2024-01-01 00:00:00 UTC

TAG_PINGPONG, TAG_RING, TAG_ALLTOALL = 1, 2, 3

# Regions, by index: (name, role, paradigm).
MAIN, COMPUTE, SEND, RECV, ISEND, IRECV, WAITALL, BARRIER, ALLREDUCE, BCAST = range(10)
REGIONS = [
    ("main", RegionRole.FUNCTION, Paradigm.USER),
    ("compute", RegionRole.FUNCTION, Paradigm.USER),
    ("MPI_Send", RegionRole.POINT2POINT, Paradigm.MPI),
    ("MPI_Recv", RegionRole.POINT2POINT, Paradigm.MPI),
    ("MPI_Isend", RegionRole.POINT2POINT, Paradigm.MPI),
    ("MPI_Irecv", RegionRole.POINT2POINT, Paradigm.MPI),
    ("MPI_Waitall", RegionRole.POINT2POINT, Paradigm.MPI),
    ("MPI_Barrier", RegionRole.BARRIER, Paradigm.MPI),
    ("MPI_Allreduce", RegionRole.COLL_ALL2ALL, Paradigm.MPI),
    ("MPI_Bcast", RegionRole.COLL_ONE2ALL, Paradigm.MPI),
]
EVENTS_FILE = _otf2.FILETYPE_EVENTS.value
ROOT_NONE = otf2.Undefined.UINT32.value  # MpiCollectiveEnd's root for rootless collectives


class CEventWriter:
    """One location's event writer calling libotf2's OTF2_EvtWriter_* functions directly, with
    the argument order of the package's EventWriter methods (time, then the record's fields),
    so the program below writes through either. Definitions are passed by reference number,
    collective operations as their number."""

    # method: (libotf2 function, argument types after the writer and attribute list), the
    # types as in the package's own bindings (_otf2/EvtWriter.py)
    SIGNATURES = {
        "enter": ("Enter", ["TimeStamp", "RegionRef"]),
        "leave": ("Leave", ["TimeStamp", "RegionRef"]),
        "mpi_send": ("MpiSend", ["TimeStamp", "u32", "CommRef", "u32", "u64"]),
        "mpi_recv": ("MpiRecv", ["TimeStamp", "u32", "CommRef", "u32", "u64"]),
        "mpi_isend": ("MpiIsend", ["TimeStamp", "u32", "CommRef", "u32", "u64", "u64"]),
        "mpi_isend_complete": ("MpiIsendComplete", ["TimeStamp", "u64"]),
        "mpi_irecv_request": ("MpiIrecvRequest", ["TimeStamp", "u64"]),
        "mpi_irecv": ("MpiIrecv", ["TimeStamp", "u32", "CommRef", "u32", "u64", "u64"]),
        "mpi_collective_begin": ("MpiCollectiveBegin", ["TimeStamp"]),
        "mpi_collective_end": (
            "MpiCollectiveEnd",
            ["TimeStamp", "u8", "CommRef", "u32", "u64", "u64"],
        ),
    }

    def __init__(self, handle):
        from _otf2 import GeneralDefinitions as gd
        from _otf2.Config import conf

        types = {"u8": ctypes.c_uint8, "u32": ctypes.c_uint32, "u64": ctypes.c_uint64}
        h = ctypes.cast(handle, ctypes.c_void_p).value
        for method, (name, args) in self.SIGNATURES.items():
            f = conf.lib["OTF2_EvtWriter_" + name]  # a fresh function object, not the bindings' one
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p] + [
                types.get(a) or getattr(gd, a) for a in args
            ]
            f.restype = ctypes.c_int  # OTF2_ErrorCode; a failed write is caught by the event count
            setattr(self, method, functools.partial(f, h, None))


class Program:
    """The simulated MPI program: per-rank clocks, writing each rank's events as it goes.

    ws[r] is rank r's event writer: the package's EventWriter or a CEventWriter; regions,
    comm and ops (collective operations by name) are what that writer takes."""

    def __init__(self, args, ws, regions, comm, ops):
        res = args.timer_resolution
        self.ws, self.regions, self.comm, self.ops = ws, regions, comm, ops
        self.R = R = args.ranks
        self.nbytes = args.msg_bytes

        def ticks(ns):  # a duration of the model, at least one tick
            return max(1, round(ns * res / 1e9))

        self.start = ticks(NS_START)
        self.gap, self.call, self.step = ticks(NS_GAP), ticks(NS_CALL), ticks(NS_STEP)
        self.lat = ticks(NS_LATENCY + args.msg_bytes / BYTES_PER_NS)
        self.coll = ticks(NS_COLLECTIVE)
        self.compute_ticks = [
            args.compute_ns * (1 + args.imbalance * r / (R - 1 if R > 1 else 1)) * res / 1e9
            for r in range(R)
        ]
        self.jitter = args.jitter
        self.rng = random.Random(args.seed)
        self.T = [self.start] * R  # each rank's clock: the time of its last event
        self.requests = [0] * R  # each rank's last request id

    def run(self, pattern, iterations):
        main = self.regions[MAIN]
        for r, w in enumerate(self.ws):
            w.enter(self.T[r], main)
        step = {
            "pingpong": lambda i: (self.compute(), self.pingpong()),
            "ring": lambda i: (self.compute(), self.ring()),
            "alltoall-nb": lambda i: (self.compute(), self.alltoall_nb()),
            "barrier": lambda i: (self.compute(), self.all_sync(BARRIER, "BARRIER", 0)),
            "mixed": self.mixed,
        }[pattern]
        for i in range(iterations):
            step(i)
        for r, w in enumerate(self.ws):
            self.T[r] += self.gap
            w.leave(self.T[r], main)
        return self.start, max(self.T)

    def mixed(self, i):
        self.compute()
        self.pingpong()
        self.ring()
        self.alltoall_nb()
        self.compute()
        self.all_sync(ALLREDUCE, "ALLREDUCE", self.nbytes)
        self.bcast(i % self.R)
        self.all_sync(BARRIER, "BARRIER", 0)

    def compute(self):
        T, gap, rng, jitter, region = self.T, self.gap, self.rng, self.jitter, self.regions[COMPUTE]
        for r, w in enumerate(self.ws):
            t = T[r] + gap
            w.enter(t, region)
            c = self.compute_ticks[r]
            if jitter:
                c *= 1 + jitter * (2 * rng.random() - 1)
            t += max(0, round(c))
            w.leave(t, region)
            T[r] = t

    # -- point-to-point ---------------------------------------------------------------------

    def send(self, r, peer, tag):
        """Blocking, eager MPI_Send on rank r; returns the time of its MpiSend event."""
        w, region = self.ws[r], self.regions[SEND]
        t = self.T[r] + self.gap
        w.enter(t, region)
        t += self.call
        sent = t
        w.mpi_send(t, peer, self.comm, tag, self.nbytes)
        t += self.call
        w.leave(t, region)
        self.T[r] = t
        return sent

    def recv(self, r, peer, tag, sent):
        """Blocking MPI_Recv on rank r of the message whose MpiSend event is at `sent`."""
        w, region = self.ws[r], self.regions[RECV]
        t = self.T[r] + self.gap
        w.enter(t, region)
        t = max(t + self.call, sent + self.lat)
        w.mpi_recv(t, peer, self.comm, tag, self.nbytes)
        t += self.call
        w.leave(t, region)
        self.T[r] = t

    def pingpong(self):
        for a in range(0, self.R - 1, 2):
            b = a + 1
            self.recv(b, a, TAG_PINGPONG, self.send(a, b, TAG_PINGPONG))
            self.recv(a, b, TAG_PINGPONG, self.send(b, a, TAG_PINGPONG))

    def irecv(self, r):
        """MPI_Irecv on rank r; returns its request id."""
        w, region = self.ws[r], self.regions[IRECV]
        self.requests[r] += 1
        request = self.requests[r]
        t = self.T[r] + self.gap
        w.enter(t, region)
        t += self.call
        w.mpi_irecv_request(t, request)
        t += self.call
        w.leave(t, region)
        self.T[r] = t
        return request

    def isend(self, r, peer, tag):
        """MPI_Isend on rank r; returns (request id, time of its MpiIsend event)."""
        w, region = self.ws[r], self.regions[ISEND]
        self.requests[r] += 1
        request = self.requests[r]
        t = self.T[r] + self.gap
        w.enter(t, region)
        t += self.call
        sent = t
        w.mpi_isend(t, peer, self.comm, tag, self.nbytes, request)
        t += self.call
        w.leave(t, region)
        self.T[r] = t
        return request, sent

    def waitall(self, r, receives, sends, tag):
        """MPI_Waitall on rank r: receives is [(peer, request, send time)], sends [request]."""
        w, region, comm, n, step, lat = (
            self.ws[r],
            self.regions[WAITALL],
            self.comm,
            self.nbytes,
            self.step,
            self.lat,
        )
        t = self.T[r] + self.gap
        w.enter(t, region)
        t += self.call - step
        for peer, request, sent in receives:
            t = max(t + step, sent + lat)
            w.mpi_irecv(t, peer, comm, tag, n, request)
        for request in sends:
            t += step
            w.mpi_isend_complete(t, request)
        t += self.call
        w.leave(t, region)
        self.T[r] = t

    def ring(self):
        R = self.R
        posted = [self.irecv(r) for r in range(R)]
        sends = [self.isend(r, (r + 1) % R, TAG_RING) for r in range(R)]
        for r in range(R):
            left = (r - 1) % R
            self.waitall(r, [(left, posted[r], sends[left][1])], [sends[r][0]], TAG_RING)

    def alltoall_nb(self):
        R = self.R
        peers = [[(r + k) % R for k in range(1, R)] for r in range(R)]  # rotated, to spread load
        posted = [{p: self.irecv(r) for p in peers[r]} for r in range(R)]
        sends = [{p: self.isend(r, p, TAG_ALLTOALL) for p in peers[r]} for r in range(R)]
        for r in range(R):
            receives = [(p, posted[r][p], sends[p][r][1]) for p in peers[r]]
            self.waitall(r, receives, [sends[r][p][0] for p in peers[r]], TAG_ALLTOALL)

    # -- collectives ------------------------------------------------------------------------

    def coll_enter(self, region):
        enters = []
        for r, w in enumerate(self.ws):
            t = self.T[r] + self.gap
            w.enter(t, region)
            w.mpi_collective_begin(t)  # at the Enter's time, as Score-P writes it
            enters.append(t)
        return enters

    def coll_leave(self, r, region, t, op, root, sent, received):
        w = self.ws[r]
        w.mpi_collective_end(t, op, self.comm, root, sent, received)
        t += self.call
        w.leave(t, region)
        self.T[r] = t

    def all_sync(self, region, op, nbytes):
        """MPI_Barrier (nbytes 0) or MPI_Allreduce: nobody leaves before the last has entered."""
        region, op = self.regions[region], self.ops[op]
        enters = self.coll_enter(region)
        done = max(enters) + self.coll
        for r in range(self.R):
            self.coll_leave(
                r, region, max(enters[r] + self.call, done), op, ROOT_NONE, nbytes, nbytes
            )

    def bcast(self, root):
        """MPI_Bcast: the others wait for the root; sizes counted as Score-P does."""
        region, op, n = self.regions[BCAST], self.ops["BCAST"], self.nbytes
        enters = self.coll_enter(region)
        for r in range(self.R):
            if r == root:
                self.coll_leave(r, region, enters[r] + self.coll, op, root, n * self.R, n)
            else:
                t = max(enters[r] + self.call, enters[root] + self.lat)
                self.coll_leave(r, region, t, op, root, 0, n)


class ChunkPool:
    """Memory callbacks for libotf2 (OTF2_MemoryCallbacks): without them it keeps every event
    chunk of the archive in memory until it closes (~14 bytes an event). Refusing a location's
    next event chunk once it holds `max_event_chunks` makes libotf2 write that location's
    chunks to its file and free them. Own prototypes: the package's (_otf2.Callbacks) lack the
    leading userData argument."""

    ALLOCATE = ctypes.CFUNCTYPE(
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_uint8,
        ctypes.c_uint64,
        ctypes.c_void_p,
        ctypes.c_uint64,
    )
    FREE_ALL = ctypes.CFUNCTYPE(
        None, ctypes.c_void_p, ctypes.c_uint8, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_bool
    )

    class Callbacks(ctypes.Structure):
        _fields_ = [("allocate", ctypes.c_void_p), ("free_all", ctypes.c_void_p)]

    def __init__(self, max_event_chunks=1):
        self.max = max_event_chunks
        self.held = {}  # (file type, location) -> addresses of the chunks libotf2 holds
        libc = ctypes.CDLL(None)
        self.malloc, self.free = libc.malloc, libc.free
        self.malloc.argtypes, self.malloc.restype = [ctypes.c_size_t], ctypes.c_void_p
        self.free.argtypes, self.free.restype = [ctypes.c_void_p], None
        self._allocate = self.ALLOCATE(self.allocate)  # kept alive as long as the pool
        self._free_all = self.FREE_ALL(self.free_all)
        self.callbacks = self.Callbacks(
            ctypes.cast(self._allocate, ctypes.c_void_p),
            ctypes.cast(self._free_all, ctypes.c_void_p),
        )

    def install(self, archive_handle):
        from _otf2.Config import conf

        f = conf.lib["OTF2_Archive_SetMemoryCallbacks"]
        f.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        f.restype = ctypes.c_int
        if f(ctypes.cast(archive_handle, ctypes.c_void_p), ctypes.byref(self.callbacks), None):
            sys.exit("gen_trace.py: OTF2_Archive_SetMemoryCallbacks failed")

    def allocate(self, _user_data, file_type, location, _per_buffer, size):
        held = self.held.setdefault((file_type, location), [])
        if file_type == EVENTS_FILE and len(held) >= self.max:
            return None  # libotf2 flushes this buffer, calls free_all, and asks again
        chunk = self.malloc(size)  # untouched pages cost no memory, as with libotf2's own malloc
        if chunk:
            held.append(chunk)
        return chunk

    def free_all(self, _user_data, file_type, location, _per_buffer, _final):
        for chunk in self.held.pop((file_type, location), ()):
            self.free(chunk)


def expected_events(ranks, iterations, pattern):
    """Events the program writes (the docstring's table); checked against libotf2's count."""
    R, paired = ranks, ranks - ranks % 2
    per_iteration = {
        "pingpong": 8 * paired + 2 * (R - paired),
        "ring": 12 * R,
        "alltoall-nb": (8 * (R - 1) + 4) * R,
        "barrier": 6 * R,
        "mixed": (8 * (R - 1) + 28) * R + 6 * paired,
    }[pattern]
    return 2 * R + iterations * per_iteration


def write_trace(args):
    out = Path(args.outdir)
    anchor = out / "traces.otf2"
    existing = [p for p in (anchor, out / "traces.def", out / "traces") if p.exists()]
    if existing:
        if not args.force:
            sys.exit(f"gen_trace.py: {anchor} exists (use --force to replace the trace)")
        for p in existing:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)

    pool = ChunkPool()
    with otf2.writer.open(str(out), timer_resolution=args.timer_resolution) as trace:
        pool.install(trace.handle)
        trace.creator = "perfexpert tools/gen_trace.py"
        trace.description = " ".join(
            f"--{k.replace('_', '-')} {v}"
            for k, v in vars(args).items()
            if k not in ("outdir", "force", "event_api")
        )
        defs = trace.definitions
        machine = defs.system_tree_node("machine", class_name="machine")
        node = defs.system_tree_node("node0", class_name="node", parent=machine)
        defs.system_tree_node_domain(machine, otf2.SystemTreeDomain.MACHINE)
        defs.system_tree_node_domain(node, otf2.SystemTreeDomain.SHARED_MEMORY)
        defs.paradigm(Paradigm.MPI, "MPI", otf2.ParadigmClass.PROCESS)
        regions = [
            defs.region(name, region_role=role, paradigm=paradigm)
            for name, role, paradigm in REGIONS
        ]
        locations = []
        for r in range(args.ranks):
            group = defs.location_group(
                f"MPI Rank {r}",
                location_group_type=otf2.LocationGroupType.PROCESS,
                system_tree_parent=node,
            )
            locations.append(
                defs.location("Master thread", type=otf2.LocationType.CPU_THREAD, group=group)
            )
        defs.group(
            "", members=locations, group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI
        )
        world_group = defs.group(
            "",
            members=list(range(args.ranks)),
            group_type=otf2.GroupType.COMM_GROUP,
            paradigm=Paradigm.MPI,
        )
        world = defs.comm("MPI_COMM_WORLD", group=world_group)

        ops = {name: getattr(otf2.CollectiveOp, name) for name in ("BARRIER", "ALLREDUCE", "BCAST")}
        # The package opens each location's OTF2 event writer here and closes it with the archive.
        writers = [trace.event_writer_from_location(loc) for loc in locations]
        if args.event_api == "python":
            program = Program(args, writers, regions, world, ops)
        else:
            program = Program(
                args,
                [CEventWriter(w.handle) for w in writers],
                [r._ref for r in regions],
                world._ref,
                {name: op.value for name, op in ops.items()},
            )
        first, last = program.run(args.pattern, args.iterations)

        # What the package's EventWriter keeps by itself, for the direct calls: each location's
        # event count (its LOCATION definition) and the time span (CLOCK_PROPERTIES).
        total = 0
        for loc, w in zip(locations, writers, strict=True):
            loc._number_of_events_written = _otf2.EvtWriter_GetNumberOfEvents(w.handle)
            total += loc._number_of_events_written
        trace._update_timestamps(first)
        trace._update_timestamps(last)
        trace._realtime_timestamp = REALTIME_SECONDS  # else the time of the first event written
    expected = expected_events(args.ranks, args.iterations, args.pattern)
    if total != expected:
        sys.exit(f"gen_trace.py: libotf2 wrote {total} events, the program made {expected}")
    return total, anchor


# OpenMP regions of the omp-teams pattern, by index: (name, role, paradigm).
O_MAIN, O_SERIAL, O_WORK, O_PAR, O_CRIT, O_SBLOCK, O_IBAR = range(7)
OMP_REGIONS = [
    ("main", RegionRole.FUNCTION, Paradigm.USER),
    ("serial", RegionRole.FUNCTION, Paradigm.USER),
    ("work", RegionRole.FUNCTION, Paradigm.USER),
    ("!$omp parallel @gen.c:10", RegionRole.PARALLEL, Paradigm.OPENMP),
    ("!$omp critical @gen.c:12", RegionRole.CRITICAL, Paradigm.OPENMP),
    ("!$omp critical sblock @gen.c:12", RegionRole.CRITICAL_SBLOCK, Paradigm.OPENMP),
    ("!$omp implicit barrier @gen.c:14", RegionRole.IMPLICIT_BARRIER, Paradigm.OPENMP),
]
NS_HOLD = 500  # the critical section's body


def team_size(threads, iteration):
    return threads if iteration % 2 == 0 else max(1, threads // 2)


def omp_outdir(args):
    """Check the OpenMP patterns' arguments and clear OUTDIR; return the anchor's path."""
    if args.ranks != 1:
        sys.exit(f"gen_trace.py: --pattern {args.pattern} writes one process: use --ranks 1")
    out = Path(args.outdir)
    anchor = out / "traces.otf2"
    existing = [p for p in (anchor, out / "traces.def", out / "traces") if p.exists()]
    if existing:
        if not args.force:
            sys.exit(f"gen_trace.py: {anchor} exists (use --force to replace the trace)")
        for p in existing:
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    return anchor


def omp_definitions(trace, args, table):
    """The definitions of the OpenMP patterns: one process of --threads threads ("Master
    thread", "OMP thread 1", ...), the regions of `table`, one thread team communicator over
    all threads. Returns (regions, locations, team, event writers)."""
    T = args.threads
    trace.creator = "perfexpert tools/gen_trace.py"
    trace.description = " ".join(
        f"--{k.replace('_', '-')} {v}"
        for k, v in vars(args).items()
        if k not in ("outdir", "force", "event_api")
    )
    defs = trace.definitions
    machine = defs.system_tree_node("machine", class_name="machine")
    node = defs.system_tree_node("node0", class_name="node", parent=machine)
    defs.system_tree_node_domain(machine, otf2.SystemTreeDomain.MACHINE)
    defs.system_tree_node_domain(node, otf2.SystemTreeDomain.SHARED_MEMORY)
    defs.paradigm(Paradigm.OPENMP, "OpenMP", otf2.ParadigmClass.THREAD_FORK_JOIN)
    regions = [
        defs.region(name, region_role=role, paradigm=paradigm) for name, role, paradigm in table
    ]
    group = defs.location_group(
        "Process", location_group_type=otf2.LocationGroupType.PROCESS, system_tree_parent=node
    )
    locations = [
        defs.location(
            "Master thread" if t == 0 else f"OMP thread {t}",
            type=otf2.LocationType.CPU_THREAD,
            group=group,
        )
        for t in range(T)
    ]
    defs.group(
        "", members=locations, group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=Paradigm.OPENMP
    )
    team_group = defs.group(
        "", members=list(range(T)), group_type=otf2.GroupType.COMM_GROUP, paradigm=Paradigm.OPENMP
    )
    team = defs.comm("OpenMP team", group=team_group)
    ws = [trace.event_writer_from_location(loc) for loc in locations]
    return regions, locations, team, ws


def write_omp_trace(args):
    """The omp-teams pattern (see the docstring): one process of --threads threads."""
    anchor = omp_outdir(args)
    out = anchor.parent
    res, T = args.timer_resolution, args.threads

    def ticks(ns):
        return max(1, round(ns * res / 1e9))

    gap, call, hold, coll = ticks(NS_GAP), ticks(NS_CALL), ticks(NS_HOLD), ticks(NS_CALL)
    with otf2.writer.open(str(out), timer_resolution=res) as trace:
        regions, locations, team, ws = omp_definitions(trace, args, OMP_REGIONS)
        model = Paradigm.OPENMP
        rng = random.Random(args.seed)
        t = ticks(NS_START)
        first = t
        ws[0].enter(t, regions[O_MAIN])
        order = 0  # the lock's acquisition order
        for i in range(args.iterations):
            m = ws[0]
            m.enter(t + gap, regions[O_SERIAL])
            t += gap + max(1, round(args.compute_ns * res / 1e9))
            m.leave(t, regions[O_SERIAL])
            n = team_size(T, i)
            fork = t + gap
            m.thread_fork(fork, model, n)
            begin = [fork + ticks(100 + 50 * k) for k in range(n)]
            enter = [b + call for b in begin]
            arrive = []
            for k in range(n):
                w = ws[k]
                w.thread_team_begin(begin[k], team)
                w.enter(enter[k], regions[O_PAR])
                w.enter(enter[k] + gap, regions[O_WORK])
                c = args.compute_ns * (1 + args.imbalance * k / (n - 1 if n > 1 else 1))
                if args.jitter:
                    c *= 1 + args.jitter * (2 * rng.random() - 1)
                done = enter[k] + gap + max(1, round(c * res / 1e9))
                w.leave(done, regions[O_WORK])
                arrive.append(done + gap)
            # the critical section, in arrival order (ties: thread order)
            last_release = 0
            barrier = [0] * n
            for k in sorted(range(n), key=lambda k: (arrive[k], k)):
                w = ws[k]
                w.enter(arrive[k], regions[O_CRIT])
                acquired = max(arrive[k] + call, last_release + gap)
                w.thread_acquire_lock(acquired, model, 1, order)
                w.enter(acquired, regions[O_SBLOCK])
                w.leave(acquired + hold, regions[O_SBLOCK])
                last_release = acquired + hold
                w.thread_release_lock(last_release, model, 1, order)
                order += 1
                w.leave(last_release + call, regions[O_CRIT])
                barrier[k] = last_release + call + gap
            out_at = max(barrier) + coll
            end = 0
            for k in range(n):
                w = ws[k]
                w.enter(barrier[k], regions[O_IBAR])
                w.leave(out_at + ticks(10 * k), regions[O_IBAR])
                left = out_at + ticks(10 * k) + call
                w.leave(left, regions[O_PAR])
                w.thread_team_end(left + gap, team)
                end = max(end, left + gap)
            t = end + gap
            m.thread_join(t, model)
        t += gap
        ws[0].leave(t, regions[O_MAIN])
        trace._update_timestamps(first)
        trace._update_timestamps(t)
        trace._realtime_timestamp = REALTIME_SECONDS
        total = sum(loc._number_of_events_written for loc in locations)
    expected = 2 + sum(4 + 14 * team_size(T, i) for i in range(args.iterations))
    if total != expected:
        sys.exit(f"gen_trace.py: wrote {total} events, the program made {expected}")
    return total, anchor


# OpenMP regions of the omp-tasks pattern, by index: (name, role, paradigm).
K_MAIN, K_PRODUCE, K_CONSUME, K_PAR, K_CREATE_P, K_CREATE_C, K_TASK_P, K_TASK_C, K_WAIT, K_IBAR = (
    range(10)
)
TASK_REGIONS = [
    ("main", RegionRole.FUNCTION, Paradigm.USER),
    ("produce", RegionRole.FUNCTION, Paradigm.USER),
    ("consume", RegionRole.FUNCTION, Paradigm.USER),
    ("!$omp parallel @gen.c:20", RegionRole.PARALLEL, Paradigm.OPENMP),
    ("!$omp create task @gen.c:22", RegionRole.TASK_CREATE, Paradigm.OPENMP),
    ("!$omp create task @gen.c:24", RegionRole.TASK_CREATE, Paradigm.OPENMP),
    ("!$omp task untied @gen.c:22", RegionRole.TASK_UNTIED, Paradigm.OPENMP),
    ("!$omp task untied @gen.c:24", RegionRole.TASK_UNTIED, Paradigm.OPENMP),
    ("!$omp taskwait @gen.c:26", RegionRole.TASK_WAIT, Paradigm.OPENMP),
    ("!$omp implicit barrier @gen.c:28", RegionRole.IMPLICIT_BARRIER, Paradigm.OPENMP),
]


def write_omp_tasks_trace(args):
    """The omp-tasks pattern (see the docstring): one process of --threads threads."""
    anchor = omp_outdir(args)
    out = anchor.parent
    res, T = args.timer_resolution, args.threads

    def ticks(ns):
        return max(1, round(ns * res / 1e9))

    gap, call, work = ticks(NS_GAP), ticks(NS_CALL), ticks(args.compute_ns)
    with otf2.writer.open(str(out), timer_resolution=res) as trace:
        regions, locations, team, ws = omp_definitions(trace, args, TASK_REGIONS)
        model = Paradigm.OPENMP
        R = regions

        def pair(k, t0, a, b):
            """Thread k runs the master's tasks a (produce) and b (consume) interleaved from
            t0; returns when it is back in its implicit task."""
            w = ws[k]
            w.thread_task_switch(t0, team, 0, a)
            w.enter(t0, R[K_TASK_P])
            w.enter(t0 + gap, R[K_PRODUCE])
            t1 = t0 + gap + work
            w.thread_task_switch(t1, team, 0, b)
            w.enter(t1, R[K_TASK_C])
            w.enter(t1 + gap, R[K_CONSUME])
            t2 = t1 + gap + work
            w.thread_task_switch(t2, team, 0, a)
            w.leave(t2 + gap, R[K_PRODUCE])
            w.leave(t2 + 2 * gap, R[K_TASK_P])
            w.thread_task_complete(t2 + 2 * gap, team, 0, a)
            w.thread_task_switch(t2 + 2 * gap, team, 0, b)
            w.leave(t2 + 3 * gap, R[K_CONSUME])
            w.leave(t2 + 4 * gap, R[K_TASK_C])
            w.thread_task_complete(t2 + 4 * gap, team, 0, b)
            w.thread_task_switch(t2 + 4 * gap, team, k, 0)  # the implicit task
            return t2 + 4 * gap

        t = ticks(NS_START)
        first = t
        ws[0].enter(t, R[K_MAIN])
        generation = 0  # the master's task counter
        for _ in range(args.iterations):
            m = ws[0]
            fork = t + gap
            m.thread_fork(fork, model, T)
            begin = [fork + ticks(100 + 50 * k) for k in range(T)]
            enter = [b + call for b in begin]
            for k in range(T):
                ws[k].thread_team_begin(begin[k], team)
                ws[k].enter(enter[k], R[K_PAR])
            # the master creates a producer and a consumer task for every thread
            x = enter[0] + gap
            tasks, created = [], []
            for k in range(T):
                ids = (generation + 1, generation + 2)
                generation += 2
                for region, g in zip((R[K_CREATE_P], R[K_CREATE_C]), ids, strict=True):
                    m.enter(x, region)
                    m.thread_task_create(x, team, 0, g)
                    m.leave(x + gap, region)
                    x += 2 * gap
                tasks.append(ids)
                created.append(x - gap)
            # the master runs its two in a taskwait, the others theirs in the barrier
            m.enter(x, R[K_WAIT])
            done = pair(0, x + gap, *tasks[0])
            m.leave(done + gap, R[K_WAIT])
            arrive = [done + 2 * gap] + [e + gap for e in enter[1:]]
            m.enter(arrive[0], R[K_IBAR])
            ends = [arrive[0]]
            for k in range(1, T):
                ws[k].enter(arrive[k], R[K_IBAR])
                ends.append(pair(k, max(arrive[k], created[k]) + gap, *tasks[k]))
            out_at = max(max(arrive), max(ends)) + call
            end = 0
            for k in range(T):
                w = ws[k]
                w.leave(out_at + ticks(10 * k), R[K_IBAR])
                left = out_at + ticks(10 * k) + call
                w.leave(left, R[K_PAR])
                w.thread_team_end(left + gap, team)
                end = max(end, left + gap)
            t = end + gap
            m.thread_join(t, model)
        t += gap
        ws[0].leave(t, R[K_MAIN])
        trace._update_timestamps(first)
        trace._update_timestamps(t)
        trace._realtime_timestamp = REALTIME_SECONDS
        total = sum(loc._number_of_events_written for loc in locations)
    expected = 2 + args.iterations * (4 + 27 * T)
    if total != expected:
        sys.exit(f"gen_trace.py: wrote {total} events, the program made {expected}")
    return total, anchor


def count(kind, minimum=0):
    """argparse type: an integer >= minimum; accepts 1e9-style input for integer values."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            f = float(text)  # a ValueError here is argparse's "invalid value"
            if not f.is_integer():
                raise argparse.ArgumentTypeError(f"{kind} must be an integer, not {text}") from None
            value = int(f)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{kind} must be at least {minimum}, not {text}")
        return value

    return parse


def fraction(text):
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 2)[2],  # all but the summary line and the usage
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "outdir", metavar="OUTDIR", help="directory for traces.otf2, traces.def and traces/"
    )
    p.add_argument("--ranks", type=count("--ranks", 1), default=4, help="MPI ranks (default 4)")
    p.add_argument(
        "--iterations", type=count("--iterations"), default=10, help="iterations (default 10)"
    )
    p.add_argument(
        "--pattern",
        choices=["pingpong", "ring", "alltoall-nb", "barrier", "mixed", "omp-teams", "omp-tasks"],
        default="pingpong",
        help="message pattern (default pingpong)",
    )
    p.add_argument(
        "--imbalance",
        type=fraction,
        default=0.0,
        help="rank r computes compute_ns*(1+F*r/(ranks-1)) (default 0)",
    )
    p.add_argument(
        "--compute-ns",
        type=count("--compute-ns"),
        default=1000,
        help="base compute time (default 1000)",
    )
    p.add_argument(
        "--jitter",
        type=fraction,
        default=0.0,
        help="compute times vary by up to +-F, uniformly (default 0)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the --jitter noise (default 0)")
    p.add_argument(
        "--msg-bytes", type=count("--msg-bytes"), default=1024, help="message size (default 1024)"
    )
    p.add_argument(
        "--timer-resolution",
        type=count("--timer-resolution", 1),
        default=10**9,
        help="ticks per second (default 1e9)",
    )
    p.add_argument(
        "--event-api",
        choices=["direct", "python"],
        default="direct",
        help="direct: libotf2's event writer functions (fast, default); python: the package's "
        "EventWriter methods (slow, same bytes)",
    )
    p.add_argument(
        "--threads",
        type=count("--threads", 1),
        default=4,
        help="threads of the process (omp-teams and omp-tasks only; default 4)",
    )
    p.add_argument("--force", action="store_true", help="replace a trace already in OUTDIR")
    args = p.parse_args(argv)
    write = {"omp-teams": write_omp_trace, "omp-tasks": write_omp_tasks_trace}.get(
        args.pattern, write_trace
    )
    total, anchor = write(args)
    print(f"{total} events written to {anchor}")


if __name__ == "__main__":
    main()
