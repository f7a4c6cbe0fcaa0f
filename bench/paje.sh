#!/usr/bin/env bash
# Paje parsing throughput (issue 11, point 4) and binary Paje against text (issue 23, point 2).
#
#   usage (from the project root):  bash bench/paje.sh
#   environment: PAJE_MB=520 (size of the generated trace, 10^6 bytes), PAJE_RANKS=64,
#                RUNS=3 (alternating runs per reader; the best wall time is kept),
#                DIVAN=0 to skip the divan benchmark, NOBUILD=1 to use target/release as it is,
#                YARDSTICK=BINARY to read big.paje also with another perfexpert binary (e.g. one
#                built from an earlier commit), in the same alternating runs: a text read that
#                is not slower shows as a ratio near 1 between the two text rows
#
# Generates bench/out/paje/big.paje (git-ignored) with tools/gen_paje.py unless it is there,
# then runs the divan benchmark `paje_smpi_520mb` (perfexpert::open on that file, page cache
# warm) and prints its bytes/s. Then converts big.paje to binary Paje (both variants) with
# `perfexpert convert` (timed) and reads the three files with `perfexpert info FILE`, side by
# side and alternating, page cache warm. "Read" is that command: the read and the model build
# (the same code `run` starts with) plus the few milliseconds of the summary; it is the same
# command for every file. A table of wall time (best of RUNS), CPU time (user + system) and
# peak RSS (`/usr/bin/time`) of each read, and the ratio text wall / binary wall.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out/paje
RUNS=${RUNS:-3}
mkdir -p "$OUT"
if [[ ! -s "$OUT/big.paje" ]]; then
    python3 tools/gen_paje.py "$OUT/big.paje" --mb "${PAJE_MB:-520}" --ranks "${PAJE_RANKS:-64}"
fi
ls -l "$OUT/big.paje"
if [[ "${DIVAN:-1}" != 0 ]]; then
    cargo bench --bench read -- paje
fi
[[ "${NOBUILD:-0}" == 1 ]] || cargo build --release --quiet
PE=./target/release/perfexpert

# one run: "wall user+sys rss_kb"
measure() {
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >/dev/null
    awk '{printf "%s %.2f %s\n", $1, $2 + $3, $4}' "$OUT/time.txt"
}

echo
echo "convert (big.paje → binary), wall / CPU / peak RSS:"
for v in paje-binary paje-binary-reference; do
    r=$(measure $PE convert -q --force --to "$v" -o "$OUT/big.$v.rst" "$OUT/big.paje")
    echo "  --to $v: $r  ($(stat -c %s "$OUT/big.$v.rst") bytes)"
done

# the reads: "label binary file"
reads=("text $PE big.paje" "binary $PE big.paje-binary.rst" "binary-reference $PE big.paje-binary-reference.rst")
if [[ -n "${YARDSTICK:-}" ]]; then
    reads+=("text-yardstick $YARDSTICK big.paje")
fi
declare -A best cpu rss
for r in "${reads[@]}"; do
    read -r l _ f <<<"$r"
    cat "$OUT/$f" >/dev/null
    best[$l]=999999
done
for ((i = 0; i < RUNS; i++)); do
    for r in "${reads[@]}"; do
        read -r l b f <<<"$r"
        read -r w c m < <(measure "$b" info "$OUT/$f")
        if awk -v a="$w" -v b="${best[$l]}" 'BEGIN{exit !(a < b)}'; then
            best[$l]=$w; cpu[$l]=$c; rss[$l]=$m
        fi
    done
done
echo
echo "read = \`perfexpert info FILE\`, best of $RUNS alternating runs ($(nproc) cores, $(date -u +%F), load average $(cut -d' ' -f1 /proc/loadavg))"
[[ -z "${YARDSTICK:-}" ]] || echo "text-yardstick = \`$YARDSTICK info big.paje\`"
echo
echo "| read | file | bytes | wall s | CPU s | peak RSS MB | MB/s (of the text) | speed-up vs text (wall) | vs text (CPU) |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|"
text_bytes=$(stat -c %s "$OUT/big.paje")
for r in "${reads[@]}"; do
    read -r l _ f <<<"$r"
    awk -v l="$l" -v f="$f" -v b="$(stat -c %s "$OUT/$f")" -v w="${best[$l]}" -v c="${cpu[$l]}" \
        -v m="${rss[$l]}" -v tb="$text_bytes" -v tw="${best[text]}" -v tc="${cpu[text]}" \
        'BEGIN{printf "| %s | %s | %d | %.2f | %.2f | %.0f | %.0f | %.2fx | %.2fx |\n", l, f, b, w, c, m/1024, tb/1e6/w, tw/w, tc/c}'
done
