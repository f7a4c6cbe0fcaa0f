//! Inputs the fuzzer found (fuzz/regressions/), decoded again: each once made a decoder panic,
//! hang or blow up. Decoding must now simply succeed or fail with an error.

use std::path::Path;

#[test]
fn fuzz_findings_stay_fixed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let data = std::fs::read(e.path()).unwrap();
        perfexpert::formats::otf2::decode_any(&data);
        n += 1;
    }
    assert!(n >= 1, "no regression inputs in {}", dir.display());
}
