//! The OTF2 reader on hand-built archives: byte orders, chunking, versions, mappings,
//! clock offsets, attributes, unknown records, sparse ids (formats.md §A).

mod common;

use common::otf2_builder::*;
use perfexpert::model::*;

fn read(a: &Archive) -> Trace {
    let dir = tempfile::tempdir().unwrap();
    let anchor = a.write(dir.path());
    perfexpert::open(&anchor).unwrap_or_else(|e| panic!("{e}"))
}

/// Per location: its id and (time, kind, region name or payload) of each event.
type Summary = Vec<(u64, Vec<(u64, EventKind, String)>)>;

fn summary(t: &Trace) -> Summary {
    t.defs
        .locations
        .iter()
        .zip(&t.events)
        .map(|(l, ev)| {
            let rows = (0..ev.len())
                .map(|i| {
                    let detail = match ev.region(i) {
                        Some(r) => t.defs.regions[r as usize].name.clone(),
                        None => format!("{:?} {:?}", ev.msg(i), ev.fields(i)),
                    };
                    (ev.time.get(i), ev.kind[i], detail)
                })
                .collect();
            (l.id, rows)
        })
        .collect()
}

#[test]
fn little_and_big_endian_archives_read_the_same() {
    let le = read(&mpi_archive(false, [0, 1], |e, r| ping(e, r, 1 << 16)));
    let be = read(&mpi_archive(true, [0, 1], |e, r| ping(e, r, 1 << 16)));
    assert_eq!(summary(&le), summary(&be));
    assert_eq!(le.event_count(), 10);
    let s = summary(&le);
    assert_eq!(s[0].1[1].2, "MPI_Send");
    let send = le.events[0].msg(2).unwrap();
    assert_eq!((send.peer, send.tag, send.bytes), (1, 7, 64));
    assert_eq!(le.defs.locations[1].rank, Some(1));
    assert_eq!(le.defs.comms[0].location_of(1, 0), Some(1));
    assert!(le.warnings.is_empty(), "{:?}", le.warnings);
}

#[test]
fn records_spread_over_many_small_chunks() {
    let mut a = mpi_archive(false, [0, 1], |e, r| ping(e, r, 40));
    a.chunk_size = 40;
    let small = read(&a);
    let big = read(&mpi_archive(false, [0, 1], |e, r| ping(e, r, 1 << 16)));
    assert_eq!(summary(&small), summary(&big));
}

#[test]
fn sparse_64_bit_location_ids_and_any_anchor_name() {
    let mut a = mpi_archive(false, [4294967296, 8589934592], |e, r| ping(e, r, 1 << 16));
    a.name = "my run".into();
    let t = read(&a);
    assert_eq!(t.defs.locations[1].id, 8589934592);
    assert_eq!(t.events[1].len(), 5);
    assert_eq!(t.defs.comms[0].location_of(1, 0), Some(1));
}

#[test]
fn unknown_event_records_count_and_are_skipped_by_length() {
    let a = mpi_archive(false, [0, 1], |e, r| {
        let (mut ev, n) = ping(e, r, 1 << 16);
        // splice an unknown record (type 200, 3 payload bytes) before END_OF_FILE
        let end = ev.len() - 2;
        let tail = ev.split_off(end);
        ev.extend(e.record(200, &[1, 2, 3]));
        ev.extend(tail);
        (ev, n + 1)
    });
    let t = read(&a);
    assert_eq!(t.event_count(), 12);
    assert_eq!(t.events[0].kind[5], EventKind::Unknown);
    assert_eq!(t.events[0].arg[5], 200);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn fields_of_newer_versions_are_skipped_by_record_length() {
    // A Comm record with two extra trailing bytes, as a future OTF2 might write.
    let mut a = mpi_archive(false, [0, 1], |e, r| ping(e, r, 1 << 16));
    let e = a.enc;
    a.defs.retain(|d| d[0] != 22);
    a.def(
        22,
        cat(&[
            &e.c32(0),
            &e.c32(9),
            &e.c32(1),
            &e.c32(u32::MAX),
            &e.c32(0),
            &[7, 7],
        ]),
    );
    let t = read(&a);
    assert_eq!(t.defs.comms[0].name, "MPI_COMM_WORLD");
    assert_eq!(t.event_count(), 10);
}

#[test]
fn pre_1_1_regions_get_role_and_paradigm_from_their_type() {
    let mut a = mpi_archive(false, [0, 1], |e, r| ping(e, r, 1 << 16));
    a.version = (1, 0, 0);
    let e = a.enc;
    a.string(20, "omp parallel");
    // OTF2 1.0 region layout: name, description, region_type, file, begin, end
    a.def(
        15,
        cat(&[
            &e.c32(9),
            &e.c32(20),
            &e.c32(u32::MAX),
            &[5],
            &e.c32(u32::MAX),
            &[0, 0],
        ]),
    );
    let t = read(&a);
    let r = t.defs.regions.iter().find(|r| r.id == 9).unwrap();
    assert_eq!(
        (r.role, r.paradigm),
        (RegionRole::PARALLEL, Paradigm::OPENMP)
    );
    assert_eq!(r.canonical_name, "omp parallel");
}

#[test]
fn mapping_tables_and_clock_offsets_apply_per_location() {
    let mut a = mpi_archive(false, [0, 1], |e, r| ping(e, r, 1 << 16));
    let e = a.enc;
    // Location 1 calls main "local region 5": REGION table, sparse, 5 → 0; and its clock
    // runs 10 ticks behind at t=0, 20 behind at t=2000 (offsets +10, +20).
    let mut s = Stream::new(false, 1 << 16);
    s.item(&e.record(5, &cat(&[&[3], &e.c(1), &[1], &e.c(5), &e.c(0)])));
    s.item(&e.record(5, &cat(&[&[6], &e.c(1), &[0], &e.c(0)])));
    s.item(&e.record(6, &cat(&[&e.u64f(0), &e.c(10), &e.u64f(0)])));
    s.item(&e.record(6, &cat(&[&e.u64f(2000), &e.c(20), &e.u64f(0)])));
    a.locs[1].local_defs = Some(s.finish());
    let mut ev = Stream::new(false, 1 << 16);
    ev.item(&e.timestamp(1000));
    ev.item(&[0x0c, 0x01, 0x05]); // Enter local region 5 = main
    ev.item(&e.timestamp(1100));
    // MpiRecv from rank 0 on local comm 0 → global comm 0
    ev.item(&e.record(18, &cat(&[&e.c32(0), &e.c32(0), &e.c32(7), &e.c(64)])));
    ev.item(&[0x0d, 0x01, 0x05]);
    a.locs[1].events = ev.finish();
    a.defs.retain(|d| d[0] != 14);
    a.location(0, 8, 5, 0);
    a.location(1, 8, 3, 1);
    let t = read(&a);
    let l1 = &t.events[1];
    assert_eq!(t.defs.regions[l1.region(0).unwrap() as usize].name, "main");
    // slope 10/2000: t=1000 → +15, t=1100 → +15.5 → round half even → +16
    assert_eq!(l1.time, vec![1015, 1116, 1116]);
    assert_eq!(l1.msg(1).unwrap().comm, 0);
}

#[test]
fn attribute_lists_attach_to_the_next_event() {
    let a = mpi_archive(false, [0, 1], |e, r| {
        let mut s = Stream::new(false, 1 << 16);
        s.item(&e.timestamp(5));
        // attribute list: 1 entry, attribute 2, UINT64, 0x67e9; then ProgramBegin(83)
        s.item(&e.record(6, &cat(&[&e.c32(1), &e.c32(2), &[4], &e.c(0x67e9)])));
        s.item(&e.record(83, &cat(&[&e.c32(3), &e.c32(0)])));
        s.item(&e.timestamp(6));
        s.item(&e.record(84, &e.c(u64::MAX)));
        let _ = r;
        (s.finish(), 2)
    });
    let t = read(&a);
    let ev = &t.events[0];
    assert_eq!(ev.kind[0], EventKind::ProgramBegin);
    assert_eq!(ev.fields(0), &[3, 0]);
    assert_eq!(
        ev.attributes_of(0),
        &[Attribute {
            key: 2,
            ty: 4,
            value: 0x67e9
        }]
    );
    assert!(ev.attributes_of(1).is_empty());
}

#[test]
fn events_naming_undefined_regions_get_placeholders_and_a_warning() {
    let a = mpi_archive(false, [0, 1], |e, r| {
        let mut s = Stream::new(false, 1 << 16);
        s.item(&e.timestamp(5));
        s.item(&[0x0c, 0x01, 0x63]); // Enter region 99: not defined
        s.item(&[0x0d, 0x01, 0x63]);
        let _ = r;
        (s.finish(), 2)
    });
    let t = read(&a);
    let r = t.events[0].region(0).unwrap() as usize;
    assert_eq!(t.defs.regions[r].name, "<undefined region 99>");
    assert_eq!(t.events[1].region(0), t.events[0].region(0));
    assert!(t
        .warnings
        .iter()
        .any(|w| w.message.contains("no definition declares")));
}

#[test]
fn a_wrong_declared_event_count_is_a_warning_not_an_error() {
    let mut a = mpi_archive(false, [0, 1], |e, r| ping(e, r, 1 << 16));
    a.defs.retain(|d| d[0] != 14);
    a.location(0, 8, 99, 0);
    a.location(1, 8, 5, 1);
    let t = read(&a);
    assert_eq!(t.event_count(), 10);
    assert!(t
        .warnings
        .iter()
        .any(|w| w.message.contains("declare 99 events")));
}

#[test]
fn metric_events_keep_typed_values() {
    let a = mpi_archive(false, [0, 1], |e, r| {
        let mut s = Stream::new(false, 1 << 16);
        s.item(&e.timestamp(5));
        // Metric(31): metric 0, 2 values: (UINT64, 7), (DOUBLE, 1.5 bits)
        let bits = 1.5f64.to_bits();
        s.item(&e.record(
            31,
            &cat(&[&e.c32(0), &[2], &[4], &e.c(7), &[10], &e.c(bits)]),
        ));
        let _ = r;
        (s.finish(), 1)
    });
    let t = read(&a);
    assert_eq!(t.events[0].kind[0], EventKind::Metric);
    assert_eq!(t.events[0].fields(0), &[0, 2, 4, 7, 10, 1.5f64.to_bits()]);
}
