#!/usr/bin/env bash
# Paje parsing throughput (issue 11, point 4).
#
#   usage (from the project root):  bash bench/paje.sh
#   environment: PAJE_MB=520 (size of the generated trace, 10^6 bytes), PAJE_RANKS=64
#
# Generates bench/out/paje/big.paje (git-ignored) with tools/gen_paje.py unless it is there,
# then runs the divan benchmark `paje_smpi_520mb` (perfexpert::open on that file, page cache
# warm) and prints its bytes/s, plus the wall time of `perfexpert info` on the same file.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out/paje
mkdir -p "$OUT"
if [[ ! -s "$OUT/big.paje" ]]; then
    python3 tools/gen_paje.py "$OUT/big.paje" --mb "${PAJE_MB:-520}" --ranks "${PAJE_RANKS:-64}"
fi
ls -l "$OUT/big.paje"
cargo bench --bench read -- paje
cargo build --release --quiet
/usr/bin/time -f "perfexpert info: %e s wall, %U s user, %M KB peak RSS" \
    ./target/release/perfexpert info "$OUT/big.paje" >/dev/null
