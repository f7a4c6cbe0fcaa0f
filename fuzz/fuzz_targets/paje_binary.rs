//! Read arbitrary bytes as a binary Paje (libRastro) trace: the decoder (formats.md §F) and
//! the simulation it feeds, both layouts. Inputs that do not start with an INIT event get a
//! valid one put before them, so the fuzzer spends its time past it. Errors are expected; a
//! panic, abort, timeout or running out of memory is a bug. The decoder's fast path (plans
//! learnt per event id and header words) must decode exactly what its general path decodes,
//! and stop at the same error, and so must the state and link events decoded straight for the
//! resolver (`next_hot`): a difference is a bug too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use perfexpert::formats::paje::binary::{Decoder, Event, Hot, Step};

/// INIT of the fork layout: type 16383, LAST, TIME_SET, items u64 u64 string; ids 0, 0, "vm".
const INIT: [u8; 24] = [
    0x10, 0x44, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'v', b'm', 0, 0,
];

/// A state or link event as the resolver sees it (`Hot`): the strings it reads, their memo
/// keys and its time.
fn hot_text(h: &Hot<'_>) -> String {
    format!(
        "{} {} {:?} {:?}",
        h.offset,
        h.kind,
        h.read(),
        h.time().map(f64::to_bits)
    )
}

/// Every step of a decoder until the end or the first error, as text; state and link events
/// as `Hot`, decoded by `next_hot` first where `hot` (the read's fast path) and taken from
/// the decoded event (`hot_view`) otherwise.
fn steps(mut d: Decoder<'_>, hot: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut ev = Event::new();
    let mut h = Hot::default();
    loop {
        if hot && d.next_hot(&mut h) {
            out.push(hot_text(&h));
            continue;
        }
        match d.next_step(&mut ev) {
            Ok(Step::End) => return out,
            Ok(Step::Def(k)) => out.push(format!("def {k} {:?}", d.defs[k as usize].fields)),
            Ok(Step::Event) if d.hot_view(&ev, &mut h) => out.push(hot_text(&h)),
            Ok(Step::Event) => out.push(format!("{} {} {:?}", ev.offset, ev.def, ev.fields())),
            Err(e) => {
                out.push(e.to_string());
                return out;
            }
        }
    }
}

fn check(path: &std::path::Path, data: &[u8]) {
    let _ = perfexpert::formats::paje::parse_binary(path, data);
    if let (Ok(a), Ok(b), Ok(c)) = (
        Decoder::new(path, data),
        Decoder::new(path, data),
        Decoder::new(path, data),
    ) {
        let general = steps(b.without_plans(), false);
        assert_eq!(steps(a, false), general, "fast and general decoding differ");
        assert_eq!(
            steps(c, true),
            general,
            "next_hot and general decoding differ"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.rst");
    if perfexpert::formats::paje::binary::sniff(data) {
        check(path, data);
    } else {
        let mut v = INIT.to_vec();
        v.extend_from_slice(data);
        check(path, &v);
    }
});
