#!/usr/bin/env bash
# The full report at the speed of the text one (issue 26): every report format beside
# libotf2's read of the same trace, at 2 threads, in one run.
#
#   usage (from the project root):  bash bench/full.sh [PP16 PP4 [PP64]]
#     PP16, PP4: the two 12 M-event ping-pongs (16 x 150000 and 4 x 600000, anchor files);
#     PP64: the 100 M-event one (64 x 312500). Without paths, the script generates them
#     (examples/gen_pingpong, cached in bench/out/traces like bench/run.sh).
#   environment:
#     BENCH_RUNS=N   rounds per 12 M-event trace (and runs of the 100 M-event one); default 3
#     BENCH_QUICK=1  skip the 100 M-event trace
#
# For each 12 M-event trace: bench/otf2_read_baseline.c (libotf2's global event reader,
# counting callbacks) and `perfexpert run -q` with the text report, `--format json`,
# `--format cubex` and `--format html`, each on its own: wall time, ratio to libotf2's read
# and peak RSS, targets beside. The five programs run in rounds (libotf2, text, JSON, Cube,
# HTML; again), so that the yardstick and ours see the same moments of a shared machine; a
# program's wall time is its best round, and beside the ratio of the best times is the median
# of the rounds' own ratios. Then `--format json` on the 100 M-event trace: peak RSS per
# event and events/s against the 12 M-event ones, and its `--timings` stages (wall time and
# peak RSS so far), to show where a superlinear part would be.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -f Cargo.toml && -d bench ]] || { echo "bench/full.sh: cannot find the project root" >&2; exit 1; }

START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
OUT=bench/out
RUNS=${BENCH_RUNS:-3}
THREADS=2
mkdir -p "$OUT/traces"
log() { echo "[full] $*" >&2; }

command -v /usr/bin/time >/dev/null || { echo "bench/full.sh: needs GNU time (/usr/bin/time; apt-get install time)" >&2; exit 1; }
[[ -f /usr/include/otf2/otf2.h ]] || { echo "bench/full.sh: needs libotf2 (apt-get install libotf2-trace-dev; bench/run.sh installs it)" >&2; exit 1; }

log "building perfexpert (release)"
cargo build --release -q
PERFEXPERT=target/release/perfexpert
BASELINE=$OUT/otf2_read_baseline
gcc -O2 bench/otf2_read_baseline.c -lotf2 -o "$BASELINE"

# gen RANKS ITERS -> the anchor file of a generated ping-pong (cached)
gen() {
    local ranks=$1 iters=$2 dir=$OUT/traces/pingpong_${1}x${2}
    if [[ ! -f $dir/traces.otf2 ]]; then
        local events=$((ranks * (5 * iters + 2)))
        local need_kb=$((events * 26 / 1024 + 1024 * 1024)) free_kb
        free_kb=$(df -Pk "$OUT" | awk 'NR == 2 { print $4 }')
        if ((free_kb < need_kb)); then
            echo "bench/full.sh: not enough disk for ${ranks}x${iters} (need $((need_kb / 1024)) MB)" >&2
            exit 1
        fi
        cargo build --release -q --example gen_pingpong
        log "generating ${ranks}x${iters} ($events events)"
        rm -rf "$dir.tmp" "$dir"
        target/release/examples/gen_pingpong "$ranks" "$iters" "$dir.tmp" >&2
        mv "$dir.tmp" "$dir"
    fi
    echo "$dir/traces.otf2"
}

PP16=${1:-} PP4=${2:-} PP64=${3:-}
[[ -n $PP16 ]] || PP16=$(gen 16 150000)
[[ -n $PP4 ]] || PP4=$(gen 4 600000)
if [[ ${BENCH_QUICK:-0} != 1 && -z $PP64 ]]; then PP64=$(gen 64 312500); fi

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }
# measure CMD...: RUNS runs; M_WALL the lowest wall time (s), M_RSS the highest peak RSS (kB)
measure() {
    local tfile=$OUT/full_time.txt i t0 t1 wall rss
    M_WALL="" M_RSS=0
    for ((i = 0; i < RUNS; i++)); do
        t0=$(now)
        RAYON_NUM_THREADS=$THREADS /usr/bin/time -v -o "$tfile" "$@" >/dev/null
        t1=$(now)
        wall=$(calc '%.3f' "$t1 - $t0")
        rss=$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$tfile")
        if [[ -z $M_WALL ]] || awk -v a="$wall" -v b="$M_WALL" 'BEGIN { exit !(a < b) }'; then M_WALL=$wall; fi
        if ((rss > M_RSS)); then M_RSS=$rss; fi
    done
}
events_of() { "$PERFEXPERT" info --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])'; }
# verdict VALUE OP LIMIT -> "yes" / "NO"
verdict() { if awk -v a="$1" -v b="$3" "BEGIN { exit !(a $2 b) }"; then echo yes; else echo NO; fi; }

# one run of CMD...: R_WALL its wall time (s), R_RSS its peak RSS (kB)
run_once() {
    local tfile=$OUT/full_time.txt t0 t1
    t0=$(now)
    RAYON_NUM_THREADS=$THREADS /usr/bin/time -v -o "$tfile" "$@" >/dev/null
    t1=$(now)
    R_WALL=$(calc '%.3f' "$t1 - $t0")
    R_RSS=$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$tfile")
}
# median of the numbers given
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); if (NR % 2) print v[m]; else printf "%.2f", (v[m] + v[m + 1]) / 2 }'; }

ROWS=()
RATE_12=()
BPE_12=()
FMTS=(text json cubex html)
for trace in "$PP16" "$PP4"; do
    name=$(basename "$(dirname "$trace")")
    events=$(events_of "$trace")
    declare -A BEST=() PEAK=() RATIOS=()
    for ((r = 0; r < RUNS; r++)); do
        log "$name: round $((r + 1)) of $RUNS (libotf2 read, ${FMTS[*]})"
        run_once "$BASELINE" "$trace"
        c_round=$R_WALL
        for prog in otf2 "${FMTS[@]}"; do
            if [[ $prog != otf2 ]]; then
                args=(run -q)
                [[ $prog == text ]] || args+=(--format "$prog" -o "$OUT/full_report.$prog")
                run_once "$PERFEXPERT" "${args[@]}" "$trace"
                RATIOS[$prog]+=" $(calc '%.3f' "$R_WALL / $c_round")"
            fi
            if [[ -z ${BEST[$prog]:-} ]] || awk -v a="$R_WALL" -v b="${BEST[$prog]}" 'BEGIN { exit !(a < b) }'; then BEST[$prog]=$R_WALL; fi
            if ((R_RSS > ${PEAK[$prog]:-0})); then PEAK[$prog]=$R_RSS; fi
        done
    done
    c_wall=${BEST[otf2]}
    ROWS+=("| $name | libotf2 read | $c_wall | 1.00x | — | — | $(calc '%.0f' "${PEAK[otf2]} / 1024") | — | — |")
    for fmt in "${FMTS[@]}"; do
        target=0.5
        [[ $fmt == text ]] && target=0.3
        args=(run -q)
        [[ $fmt == text ]] || args+=(--format "$fmt" -o "$OUT/full_report.$fmt")
        # shellcheck disable=SC2086 # the rounds' ratios, one word each
        med=$(median ${RATIOS[$fmt]})
        ratio=$(calc '%.2f' "${BEST[$fmt]} / $c_wall")
        mb=$(calc '%.0f' "${PEAK[$fmt]} / 1024")
        ROWS+=("| $name | \`${args[*]}\` | ${BEST[$fmt]} | ${ratio}x | $(calc '%.2f' "$med")x | ≤ ${target}x: $(verdict "$ratio" '<=' "$target") | $mb | < 300: $(verdict "$mb" '<' 300) | $(calc '%.1f' "${PEAK[$fmt]} * 1024 / $events") |")
        if [[ $fmt == json ]]; then
            RATE_12+=("$(calc '%.2f' "$events / ${BEST[$fmt]} / 1e6")")
            BPE_12+=("$(calc '%.1f' "${PEAK[$fmt]} * 1024 / $events")")
        fi
    done
    unset BEST PEAK RATIOS
    rm -f "$OUT"/full_report.*
done

echo
echo "## The full report beside libotf2's read (issue 26)"
echo
echo "- date: $START_DATE; perfexpert $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src 2>/dev/null || echo ' + uncommitted changes'); nproc $(nproc); RAYON_NUM_THREADS=$THREADS; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "- $RUNS rounds of the five programs in turn; wall: best round (whole process, warm page cache); ratio: best wall / libotf2's best read wall of the same trace; median: of each round's wall / that round's libotf2 read; peak RSS: highest of the rounds (\`/usr/bin/time\`)"
echo "- targets: text ≤ 0.3x, JSON / Cube / HTML ≤ 0.5x libotf2's read, peak RSS < 300 MB"
echo
echo "| trace | program | wall s | ratio | median | target | peak RSS MB | < 300 MB | RSS bytes/event |"
echo "|---|---|--:|--:|--:|:-:|--:|:-:|--:|"
printf '%s\n' "${ROWS[@]}"

if [[ -n $PP64 ]]; then
    events=$(events_of "$PP64")
    log "$(basename "$(dirname "$PP64")"): perfexpert run -q --format json ($events events)"
    measure "$PERFEXPERT" run -q --format json -o "$OUT/full_report.json" "$PP64"
    rate=$(calc '%.2f' "$events / $M_WALL / 1e6")
    bpe=$(calc '%.1f' "$M_RSS * 1024 / $events")
    log "the same with --timings"
    RAYON_NUM_THREADS=$THREADS "$PERFEXPERT" run -q --timings --format json -o "$OUT/full_report.json" "$PP64" 2>"$OUT/full_timings.txt" >/dev/null
    rm -f "$OUT/full_report.json"
    echo
    echo "## 100 M events: \`run -q --format json\` against the 12 M-event ones"
    echo
    echo "- targets: < 25 bytes of peak RSS per event; the same events/s as the 12 M-event traces (no superlinear part)"
    echo
    echo "| trace | events | wall s | events/s | of the 12 M-event rates | peak RSS MB | RSS bytes/event | < 25 B/event |"
    echo "|---|--:|--:|--:|--:|--:|--:|:-:|"
    echo "| $(basename "$(dirname "$PP16")") | — | — | ${RATE_12[0]} M | 100 % | — | ${BPE_12[0]} | $(verdict "${BPE_12[0]}" '<' 25) |"
    echo "| $(basename "$(dirname "$PP4")") | — | — | ${RATE_12[1]} M | 100 % | — | ${BPE_12[1]} | $(verdict "${BPE_12[1]}" '<' 25) |"
    echo "| $(basename "$(dirname "$PP64")") | $events | $M_WALL | $rate M | $(calc '%.0f' "100 * $rate / ${RATE_12[0]}") % / $(calc '%.0f' "100 * $rate / ${RATE_12[1]}") % | $(calc '%.0f' "$M_RSS / 1024") | $bpe | $(verdict "$bpe" '<' 25) |"
    echo
    echo "Stages of the 100 M-event run (\`--timings\`: wall time, total, peak RSS so far):"
    echo
    echo '```'
    grep '^timings:' "$OUT/full_timings.txt" || true
    echo '```'
fi
