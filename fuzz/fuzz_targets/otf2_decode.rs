//! Decode arbitrary bytes as every OTF2 file kind (anchor, global definitions, local
//! definitions, event file). Errors are expected; a panic, abort, timeout or running out of
//! memory is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    perfexpert::formats::otf2::decode_any(data);
});
