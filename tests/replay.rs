//! The replay's pointers on real traces: every message matched, partners consistent, collective
//! instances complete (patterns.md §5.3, §5.4).

mod common;

use perfexpert::model::EventKind;
use perfexpert::replay::Replay;

fn traces() -> Vec<std::path::PathBuf> {
    common::shipped_traces()
        .into_iter()
        .map(|(_, p)| common::testdata("..").join(p))
        .collect()
}

#[test]
fn every_message_of_every_shipped_trace_is_matched_consistently() {
    for a in traces() {
        let t = perfexpert::open(&a).unwrap();
        let r = Replay::new(&t);
        let sends: u64 = t
            .events
            .iter()
            .map(|e| {
                e.kind
                    .iter()
                    .filter(|k| matches!(k, EventKind::MpiSend | EventKind::MpiIsend))
                    .count() as u64
            })
            .sum();
        let m = r.matching;
        assert_eq!(
            (
                m.messages,
                m.unmatched_sends,
                m.unmatched_receives,
                m.unresolved_peers
            ),
            (sends, 0, 0, 0),
            "{}",
            a.display()
        );
        for (l, ev) in t.events.iter().enumerate() {
            for i in 0..ev.len() {
                let Some(msg) = ev.msg(i) else { continue };
                let p = r.msg_links[l].partner[ev.arg[i] as usize];
                let pm = t.events[p.loc as usize].msg(p.event as usize).unwrap();
                // the partner names us back, with the same communicator and tag
                let back = r.msg_links[p.loc as usize].partner
                    [t.events[p.loc as usize].arg[p.event as usize] as usize];
                assert_eq!((back.loc as usize, back.event as usize), (l, i));
                assert_eq!((pm.comm, pm.tag), (msg.comm, msg.tag), "{}", a.display());
                // request links: OTF2 records every request's completion; Paje (SMPI) has
                // non-blocking calls as states only, with no request records to link to
                let requests = t.origin.format == "OTF2";
                for (kind, request) in [
                    (EventKind::MpiIrecv, EventKind::MpiIrecvRequest),
                    (EventKind::MpiIsend, EventKind::MpiIsendComplete),
                ] {
                    if ev.kind[i] != kind {
                        continue;
                    }
                    let q = r.msg_links[l].request_event(ev.arg[i] as usize);
                    if q == perfexpert::replay::NONE {
                        assert!(!requests, "{}: {kind:?} without its request", a.display());
                    } else {
                        assert_eq!(ev.kind[q as usize], request, "{}", a.display());
                    }
                }
            }
        }
    }
}

#[test]
fn collective_instances_are_complete_and_aligned() {
    for a in traces() {
        let t = perfexpert::open(&a).unwrap();
        let r = Replay::new(&t);
        let ends: u64 = t
            .events
            .iter()
            .map(|e| {
                e.kind
                    .iter()
                    .filter(|&&k| k == EventKind::MpiCollectiveEnd)
                    .count() as u64
            })
            .sum();
        let covered: u64 = r.instances.iter().map(|i| i.members.len() as u64).sum();
        assert_eq!(r.collectives.incomplete, 0, "{}", a.display());
        assert_eq!(covered, ends, "{}", a.display());
        for inst in &r.instances {
            // all members agree on the operation type of their k-th collective
            let ops: Vec<u8> = inst
                .members
                .iter()
                .map(|m| t.events[m.loc as usize].coll(m.event as usize).unwrap().op)
                .collect();
            assert!(
                ops.windows(2).all(|w| w[0] == w[1]),
                "{}: {ops:?}",
                a.display()
            );
        }
    }
}

#[test]
fn measurement_pauses_are_attributed_to_nothing() {
    use common::otf2_builder::*;
    // main from t=1000 to t=2000 with the measurement off from 1200 to 1700 (§3.2,
    // perfexpert): main's exclusive time is 1000 - 500 = 500 ticks, and one gap is counted.
    let a = mpi_archive(false, [0, 1], |e, _| {
        let mut s = Stream::new(false, 1 << 16);
        s.item(&e.timestamp(1000));
        s.item(&[0x0c, 0x00]);
        s.item(&e.timestamp(1200));
        s.item(&e.record(11, &[2]));
        s.item(&e.timestamp(1700));
        s.item(&e.record(11, &[1]));
        s.item(&e.timestamp(2000));
        s.item(&[0x0d, 0x00]);
        (s.finish(), 4)
    });
    let dir = tempfile::tempdir().unwrap();
    let t = perfexpert::open(&a.write(dir.path())).unwrap();
    let r = Replay::new(&t);
    assert_eq!(r.locations[0].time[0], 500);
    assert_eq!(r.locations[0].gaps, 1);
}
