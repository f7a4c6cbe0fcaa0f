//! Read arbitrary bytes as a Paje trace. Errors are expected; a panic, abort, timeout or
//! running out of memory is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = perfexpert::formats::paje::parse(std::path::Path::new("fuzz.paje"), data);
});
