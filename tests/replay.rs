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
                if ev.kind[i] == EventKind::MpiIrecv {
                    let q = r.msg_links[l].request_event[ev.arg[i] as usize];
                    assert_eq!(ev.kind[q as usize], EventKind::MpiIrecvRequest);
                }
                if ev.kind[i] == EventKind::MpiIsend {
                    let q = r.msg_links[l].request_event[ev.arg[i] as usize];
                    assert_eq!(ev.kind[q as usize], EventKind::MpiIsendComplete);
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
