//! Read arbitrary bytes as a binary Paje (libRastro) trace: the decoder (formats.md §F) and
//! the simulation it feeds, both layouts. Inputs that do not start with an INIT event get a
//! valid one put before them, so the fuzzer spends its time past it. Errors are expected; a
//! panic, abort, timeout or running out of memory is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

/// INIT of the fork layout: type 16383, LAST, TIME_SET, items u64 u64 string; ids 0, 0, "vm".
const INIT: [u8; 24] = [
    0x10, 0x44, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, b'v', b'm', 0, 0,
];

fuzz_target!(|data: &[u8]| {
    let path = std::path::Path::new("fuzz.rst");
    if perfexpert::formats::paje::binary::sniff(data) {
        let _ = perfexpert::formats::paje::parse_binary(path, data);
    } else {
        let mut v = INIT.to_vec();
        v.extend_from_slice(data);
        let _ = perfexpert::formats::paje::parse_binary(path, &v);
    }
});
