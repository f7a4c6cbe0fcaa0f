#!/usr/bin/env bash
# `perfexpert convert` speed: the 12 M-event ping-pong (16 ranks x 150,000 iterations,
# written by examples/gen_pingpong like bench/run.sh's) converted OTF2 -> binary Paje
# (standard variant) -> OTF2, and, beside them as the yardstick, libotf2's own read of the
# same OTF2 archive (bench/otf2_read_baseline.c: the global event reader with counting
# callbacks) and perfexpert's read of it (`info --json`). Wall time and peak RSS from
# GNU time, best of BENCH_RUNS (default 3) runs each, page cache warm. Prints a Markdown
# table.
#
#   usage (from the project root):  bash bench/convert.sh [OTF2_ANCHOR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=bench/out
RUNS=${BENCH_RUNS:-3}
mkdir -p "$OUT/traces" "$OUT/convert"
log() { echo "[bench] $*" >&2; }

cargo build --release -q
cargo build --release -q --example gen_pingpong
PE=target/release/perfexpert
BASELINE=$OUT/otf2_read_baseline
gcc -O2 bench/otf2_read_baseline.c -lotf2 -o "$BASELINE"

SRC=${1:-}
if [[ -z $SRC ]]; then
    d=$OUT/traces/pingpong_16x150000
    if [[ ! -f $d/traces.otf2 ]]; then
        log "writing the 12 M-event ping-pong to $d"
        target/release/examples/gen_pingpong 16 150000 "$d" >/dev/null 2>&1
    fi
    SRC=$d/traces.otf2
fi

# best (lowest wall) of RUNS: prints "seconds peak_MB"
best() {
    local b="" m=""
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -v -o "$OUT/convert/time.txt" "$@" >/dev/null 2>"$OUT/convert/stderr.txt" \
            || { cat "$OUT/convert/stderr.txt" >&2; exit 1; }
        local w r
        w=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; print s}' "$OUT/convert/time.txt")
        r=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$OUT/convert/time.txt")
        if [[ -z $b ]] || awk -v a="$w" -v b="$b" 'BEGIN{exit !(a<b)}'; then b=$w m=$r; fi
    done
    echo "$b $m"
}

EVENTS=$($PE info --json "$SRC" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"])')
RST=$OUT/convert/pp.rst
BACK=$OUT/convert/pp-back
log "libotf2 read"
read -r t_c m_c < <(best "$BASELINE" "$SRC")
log "perfexpert info"
read -r t_i m_i < <(best "$PE" info --json "$SRC")
log "convert to paje-binary"
read -r t_b m_b < <(best "$PE" convert -q --force --to paje-binary -o "$RST" "$SRC")
log "convert back to otf2"
read -r t_o m_o < <(best "$PE" convert -q --force --to otf2 -o "$BACK" "$RST")
log "convert otf2 to otf2"
read -r t_s m_s < <(best "$PE" convert -q --force --to otf2 -o "$BACK" "$SRC")

row() { printf '| %s | %s | %.2f | %s | %.1f |\n' "$1" "$2" "$3" "$4" "$(awk -v e="$EVENTS" -v t="$3" 'BEGIN{print e/t/1e6}')"; }
echo
echo "$EVENTS events, $(du -sh "$(dirname "$SRC")" | cut -f1) OTF2, binary Paje $(du -h "$RST" | cut -f1); $(nproc) cores; $(date -u '+%Y-%m-%d')"
echo
echo "| step | command | wall s | peak RSS MB | M events/s |"
echo "|---|---|---:|---:|---:|"
row "libotf2 reads the OTF2 archive (yardstick)" "\`bench/otf2_read_baseline\`" "$t_c" "$m_c"
row "perfexpert reads it" "\`perfexpert info --json\`" "$t_i" "$m_i"
row "OTF2 → binary Paje" "\`convert --to paje-binary\`" "$t_b" "$m_b"
row "binary Paje → OTF2" "\`convert --to otf2\`" "$t_o" "$m_o"
row "OTF2 → OTF2" "\`convert --to otf2\`" "$t_s" "$m_s"
