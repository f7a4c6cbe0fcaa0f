#!/usr/bin/env bash
# `perfexpert compare` speed (issue 22, point 2), printed as tables.
#
#   usage (from the project root):  bash bench/compare.sh [--quick]
#
# 1. Two 12 M-event ping-pong traces (`gen_pingpong 16 150000`, B with 100 planted
#    substitutions, `--plant 100`) compared end to end (read, replay and analysis of both,
#    alignment of 16 location pairs), beside the yardstick `perfexpert run A` on the same
#    machine at the same time (machines are noisy: the ratio is the number to keep).
# 2. One location of 100,000 symbols against a random 10 % mutation of itself
#    (examples/align_random): wall time, DP cells, peak resident memory.
# 3. The seed's experiment: time against sequence length for 0, 10, 100 and 1,000
#    sub-levels (the sequence split into that many more independent fragments, aligned in
#    parallel), 1 % mutations. --quick leaves out the 1,000,000-symbol row.
# Traces go to bench/out/compare (git-ignored).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
quick=${1:-}
OUT=bench/out/compare
mkdir -p "$OUT"
cargo build --release --quiet --bin perfexpert --example gen_pingpong --example align_random
PE=./target/release/perfexpert
[[ -s $OUT/a/traces.otf2 ]] || ./target/release/examples/gen_pingpong 16 150000 "$OUT/a"
[[ -s $OUT/b/traces.otf2 ]] || ./target/release/examples/gen_pingpong 16 150000 "$OUT/b" --plant 100

measure() { # label, command...: a table row "| label | wall s | user+sys s | peak RSS MB |"
    local label=$1
    shift
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>/dev/null
    read -r wall user sys rss <"$OUT/time.txt"
    echo "| $label | $wall | $(echo "$user + $sys" | bc) | $((rss / 1024)) |"
}

echo
echo "## 1. 12 M-event ping-pong pairs, 100 planted substitutions ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| run | wall s | CPU s | peak RSS MB |"
echo "|---|---|---|---|"
for round in 1 2; do
    measure "yardstick: perfexpert run A (round $round)" $PE run "$OUT/a" -q
    measure "perfexpert compare A B (round $round)" $PE compare "$OUT/a" "$OUT/b" -q
    found=$(grep -o 'Edits: [0-9]* in' "$OUT/stdout.txt" || true)
done
echo
echo "compare found: ${found:-nothing} (100 planted)"

echo
echo "## 2. one location, 100,000 symbols against a random 10 % mutation"
echo
./target/release/examples/align_random 100000 10 1 1

echo
echo "## 3. time against sequence length and sub-levels (1 % mutations)"
echo
lengths="10000 100000 1000000"
[[ $quick == --quick ]] && lengths="10000 100000"
echo "| symbols | 0 sub-levels | 10 | 100 | 1000 |"
echo "|---|---|---|---|---|"
for n in $lengths; do
    row="| $n |"
    for k in 0 10 100 1000; do
        s=$(./target/release/examples/align_random "$n" 1 $((k + 1)) 7 | sed -E 's/.*wall ([0-9.]+) s.*/\1/')
        row="$row $s s |"
    done
    echo "$row"
done
