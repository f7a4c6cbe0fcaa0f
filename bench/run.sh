#!/usr/bin/env bash
# Read-throughput benchmark: perfexpert vs. the C library libotf2, and the end-to-end
# analysis (`perfexpert run`: read, replay, every rule, JSON report) at 1 and 2 threads.
#
#   usage (from the project root):  bash bench/run.sh
#   environment:
#     BENCH_QUICK=1   skip the big (>= 50 M events) trace
#     BENCH_RUNS=N    timed runs per measurement, best (lowest wall time) kept; default 3
#     BENCH_AB_RUNS=N alternating runs of `perfexpert run -q` and the libotf2 reader on
#                     npb_lu_W (a 25 ms run, where best-of-3 is mostly noise); default 20
#     BENCH_GEN=PATH  trace generator script (e.g. ../shared/bench/gen_pingpong_trace.py, the
#                     official Python writer, ~30 min per 100 M events); default: the
#                     gen_pingpong example, which writes the same bytes in seconds
#                     (tests/gen_pingpong.rs compares the two)
#     BENCH_SCALE=1   also the scale table: `perfexpert run` on a 100 M-event trace of 64 ranks
#                     next to the 12 M-event one (bytes/event, events/s in wall and CPU time);
#                     BENCH_SCALE=only runs just that table; the 100 M-event trace is also run
#                     with --memory-limit BENCH_SCALE_LIMIT (default 2G), whose report must be
#                     byte-identical
#     BENCH_FULL=1    also bench/full.sh (issue 26's table: text, JSON, Cube and HTML reports
#                     beside libotf2's read at 2 threads, and JSON on the 100 M-event trace)
#
# It builds the release binary, generates Score-P-like MPI ping-pong traces
# (cached in bench/out/, which git ignores), and for each trace measures
#   - `perfexpert info --json TRACE` with the default thread count and with
#     RAYON_NUM_THREADS=1 (wall time, peak RSS),
#   - bench/otf2_read_baseline.c: libotf2's global event reader with empty
#     (counting) callbacks,
#   - `perfexpert run --format json` (the whole analysis) with RAYON_NUM_THREADS=1 and =2
#     (wall time, peak RSS, speed-up; the two reports must be byte-identical), also on the
#     real NPB LU class W trace of ../shared when it is there,
# then prints two Markdown tables. Page cache is warm (best of N runs).
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "${BASH_SOURCE[0]}")/.."
[[ -f Cargo.toml && -d bench ]] || { echo "bench/run.sh: cannot find the project root" >&2; exit 1; }

START_DATE=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
OUT=bench/out
RUNS=${BENCH_RUNS:-3}
AB_RUNS=${BENCH_AB_RUNS:-20}
AB_PE=() AB_C=()
GEN=${BENCH_GEN:-}
SCALE=${BENCH_SCALE:-0}
mkdir -p "$OUT/traces"

log() { echo "[bench] $*" >&2; }

SUDO=""
[[ $(id -u) -eq 0 ]] || SUDO="sudo"
apt_updated=0
apt_install() {
    if [[ $apt_updated -eq 0 ]]; then $SUDO apt-get update -qq; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

# ---- tools ------------------------------------------------------------------
if [[ ! -x /usr/bin/time ]]; then log "installing GNU time"; apt_install time; fi
if [[ ! -f /usr/include/otf2/otf2.h ]]; then log "installing libotf2-trace-dev"; apt_install libotf2-trace-dev; fi

log "building perfexpert (release)"
cargo build --release -q
PERFEXPERT=target/release/perfexpert
if [[ -z $GEN ]]; then
    log "building the trace generator (examples/gen_pingpong)"
    cargo build --release -q --example gen_pingpong
fi

log "building the libotf2 baseline"
BASELINE=$OUT/otf2_read_baseline
gcc -O2 bench/otf2_read_baseline.c -lotf2 -o "$BASELINE"

# ---- a Python with the otf2 package, for the trace generator -----------------
find_python() {
    local py=""
    if [[ -f tools/venv.sh ]]; then
        py=$(bash tools/venv.sh | tail -n 1) || py=""
        if [[ -n $py ]] && "$py" -c 'import otf2' 2>/dev/null; then echo "$py"; return; fi
        log "tools/venv.sh gave no Python with the otf2 package; using $OUT/venv"
    fi
    py=$OUT/venv/bin/python
    if ! { [[ -x $py ]] && "$py" -c 'import otf2' 2>/dev/null; }; then
        log "creating $OUT/venv with otf2==3.2"
        python3 -m venv "$OUT/venv" >&2
        "$py" -m pip install -q otf2==3.2 >&2
    fi
    echo "$py"
}

# ---- traces -----------------------------------------------------------------
# name RANKS ITERATIONS; events = RANKS * (5 * ITERATIONS + 2)
TRACES=("16 150000" "4 600000")
if [[ ${BENCH_QUICK:-0} == 1 ]]; then
    log "BENCH_QUICK=1: skipping the big trace (16 x 650000, 52 M events)"
else
    TRACES+=("16 650000")
fi

PY=""
gen_trace() { # RANKS ITERS -> sets TRACE to the anchor file path, or to "" if skipped
    local ranks=$1 iters=$2 dir=$OUT/traces/pingpong_${1}x${2}
    TRACE=""
    if [[ ! -f $dir/traces.otf2 ]]; then
        [[ -z $GEN || -f $GEN ]] || { echo "bench/run.sh: trace generator $GEN not found" >&2; exit 1; }
        local events=$((ranks * (5 * iters + 2)))
        # ~13 bytes per event on disk; want twice that free, plus 1 GB
        local need_kb=$((events * 26 / 1024 + 1024 * 1024))
        local free_kb
        free_kb=$(df -Pk "$OUT" | awk 'NR == 2 { print $4 }')
        if ((free_kb < need_kb)); then
            log "not enough disk for ${ranks}x${iters} (need $((need_kb / 1024)) MB, have $((free_kb / 1024)) MB); skipped"
            return 0
        fi
        log "generating ${ranks}x${iters} ($events events) ..."
        rm -rf "$dir.tmp" "$dir"
        local t0=$SECONDS gen=(target/release/examples/gen_pingpong)
        if [[ -n $GEN ]]; then
            [[ -n $PY ]] || PY=$(find_python)
            gen=("$PY" "$GEN")
        fi
        if ! "${gen[@]}" "$ranks" "$iters" "$dir.tmp" >&2; then
            echo "bench/run.sh: generating ${ranks}x${iters} failed" >&2
            exit 1
        fi
        mv "$dir.tmp" "$dir"
        log "  done in $((SECONDS - t0)) s"
    fi
    TRACE=$dir/traces.otf2
}

# ---- measuring --------------------------------------------------------------
now() { date +%s.%N; }
# measure OUTFILE CMD... : runs CMD RUNS times; sets M_WALL (lowest wall time, s)
# and M_RSS_KB (highest peak RSS, kB), M_CPU (user + system s of the fastest run);
# OUTFILE gets the stdout of the fastest run.
measure() {
    local outfile=$1; shift
    local tfile=$OUT/time.txt i t0 t1 wall rss
    M_WALL="" M_RSS_KB=0 M_CPU= M_MED=
    local walls=()
    for ((i = 0; i < RUNS; i++)); do
        t0=$(now)
        /usr/bin/time -v -o "$tfile" "$@" >"$outfile.run"
        t1=$(now)
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
        walls+=("$wall")
        rss=$(awk -F': *' '/Maximum resident set size/ { print $2 }' "$tfile")
        if [[ -z $M_WALL ]] || awk -v a="$wall" -v b="$M_WALL" 'BEGIN { exit !(a < b) }'; then
            M_WALL=$wall
            M_CPU=$(awk -F': *' '/User time|System time/ { s += $2 } END { printf "%.2f", s }' "$tfile")
            mv "$outfile.run" "$outfile"
        fi
        if ((rss > M_RSS_KB)); then M_RSS_KB=$rss; fi
    done
    rm -f "$outfile.run"
    # the median wall time (the mean of the middle two for an even count)
    M_MED=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR % 2) printf "%.3f", v[(NR + 1) / 2]; else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
}
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

NPROC=$(nproc)
ROWS=()
RUN_ROWS=()
MISMATCH=0
RUN_MISMATCH=0
# end_to_end NAME TRACE EVENTS C_WALL: `perfexpert run` at 1 and 2 threads -> RUN_ROWS
# Scalasca 2.6 (`mpirun -np RANKS scout.mpi`) on these traces, as measured for issue 12 on
# this machine kind (the issue's reference table; Scalasca is not installed here)
scalasca_s() {
    case $1 in
        "pingpong 4x600000") echo 4.35 ;;
        "pingpong 16x150000") echo 4.78 ;;
        npb_lu_W) echo 0.59 ;;
        *) echo "" ;;
    esac
}
end_to_end() {
    local name=$1 trace=$2 events=$3 c_wall=$4 w1 r1 w2 r2 wt rt sc ratio
    log "$name: perfexpert run (1 thread)"
    measure "$OUT/run1.json" env RAYON_NUM_THREADS=1 "$PERFEXPERT" run -q --format json "$trace"
    w1=$M_WALL r1=$M_RSS_KB
    log "$name: perfexpert run (2 threads)"
    measure "$OUT/run2.json" env RAYON_NUM_THREADS=2 "$PERFEXPERT" run -q --format json "$trace"
    w2=$M_WALL r2=$M_RSS_KB
    log "$name: perfexpert run, text report (2 threads)"
    measure "$OUT/run2.txt" env RAYON_NUM_THREADS=2 "$PERFEXPERT" run -q "$trace"
    wt=$M_WALL wtm=$M_MED rt=$M_RSS_KB
    sc=$(scalasca_s "$name") ratio="—"
    [[ -z $sc ]] || ratio="$(calc '%.1fx' "$sc / $wt") / $(calc '%.1fx' "$sc / $wtm")"
    local same=yes
    if ! cmp -s "$OUT/run1.json" "$OUT/run2.json"; then
        same=NO
        RUN_MISMATCH=1
        echo "!!!!!!!! WARNING: the reports of $name differ between 1 and 2 threads !!!!!!!!"
    fi
    RUN_ROWS+=("| $name | $events | $w1 | $(calc '%.1f M' "$events / $w1 / 1e6") | $(calc '%.0f' "$r1 / 1024") \
| $w2 | $(calc '%.1f M' "$events / $w2 / 1e6") | $(calc '%.0f' "$r2 / 1024") | $(calc '%.1f' "$r2 * 1024 / $events") \
| $(calc '%.2fx' "$w1 / $w2") | $same | $wt / $wtm | $(calc '%.0f' "$rt / 1024") | $c_wall | ${sc:-—} | $ratio |")
}
# ---- scale: the 12 M-event trace next to a 100 M-event one of 64 ranks (BENCH_SCALE) ----
# `perfexpert run -q` (the text report: read, replay, every rule) on each; issue 12 asks for
# < 40 bytes of peak RSS per event and events/s within 20 % of the 12 M-event rate.
scale_table() {
    local spec ranks iters trace events name base_rate="" base_cpu_rate="" rate cpu_rate
    local rows=()
    for spec in "16 150000" "64 312500"; do
        read -r ranks iters <<<"$spec"
        gen_trace "$ranks" "$iters"
        [[ -n $TRACE ]] || continue
        trace=$TRACE events=$((ranks * (5 * iters + 2))) name="pingpong ${ranks}x${iters}"
        log "$name: perfexpert run -q (scale)"
        measure "$OUT/scale.txt" "$PERFEXPERT" run -q "$trace"
        rate=$(calc '%.2f' "$events / $M_WALL / 1e6")
        cpu_rate=$(calc '%.2f' "$events / $M_CPU / 1e6")
        [[ -n $base_rate ]] || base_rate=$rate base_cpu_rate=$cpu_rate
        rows+=("| $name | $events | $M_WALL | $rate M | $(calc '%.0f%%' "100 * $rate / $base_rate") \
| $M_CPU | $cpu_rate M | $(calc '%.0f%%' "100 * $cpu_rate / $base_cpu_rate") \
| $(calc '%.0f' "$M_RSS_KB / 1024") | $(calc '%.1f' "$M_RSS_KB * 1024 / $events") | — |")
        if ((events > 50000000)); then
            local limit=${BENCH_SCALE_LIMIT:-2G} same=yes
            log "$name: perfexpert run -q --memory-limit $limit (scale)"
            measure "$OUT/scale_limit.txt" "$PERFEXPERT" run -q --memory-limit "$limit" "$trace"
            if ! cmp -s "$OUT/scale.txt" "$OUT/scale_limit.txt"; then
                same=NO
                echo "!!!!!!!! WARNING: --memory-limit $limit changes the report of $name !!!!!!!!"
            fi
            rate=$(calc '%.2f' "$events / $M_WALL / 1e6")
            cpu_rate=$(calc '%.2f' "$events / $M_CPU / 1e6")
            rows+=("| $name, \`--memory-limit $limit\` | $events | $M_WALL | $rate M | $(calc '%.0f%%' "100 * $rate / $base_rate") \
| $M_CPU | $cpu_rate M | $(calc '%.0f%%' "100 * $cpu_rate / $base_cpu_rate") \
| $(calc '%.0f' "$M_RSS_KB / 1024") | $(calc '%.1f' "$M_RSS_KB * 1024 / $events") | $same |")
        fi
    done
    echo
    echo "## perfexpert run at scale: 12 M and 100 M events"
    echo
    echo "- date: $START_DATE; perfexpert $(git rev-parse --short HEAD 2>/dev/null || echo '?'); nproc $NPROC; $(awk '/MemTotal/ { printf "%.0f GB RAM", $2 / 1048576 }' /proc/meminfo); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- \`perfexpert run -q TRACE\` (text report); wall: best of $RUNS; CPU: user + system of that run; peak RSS: highest of the runs"
    echo "- rate %: events/s relative to the 12 M-event trace (issue 12: within 20 %); RSS bytes/event: issue 12 asks < 40"
    echo
    echo "| trace | events | wall s | events/s | rate % | CPU s | events/CPU-s | CPU rate % | peak RSS MB | RSS bytes/event | same report |"
    echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|"
    printf '%s\n' "${rows[@]}"
}
if [[ $SCALE == only ]]; then
    scale_table
    exit 0
fi

for spec in "${TRACES[@]}"; do
    read -r ranks iters <<<"$spec"
    gen_trace "$ranks" "$iters"
    [[ -n $TRACE ]] || continue
    trace=$TRACE
    name="pingpong ${ranks}x${iters}"
    size_mb=$(du -sk "$(dirname "$trace")" | awk '{ printf "%.0f", $1 / 1024 }')
    gen_events=$((ranks * (5 * iters + 2)))

    log "$name: perfexpert ($NPROC threads)"
    measure "$OUT/info.json" "$PERFEXPERT" info --json "$trace"
    pe_wall=$M_WALL pe_rss=$M_RSS_KB
    pe_events=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["events"])' "$OUT/info.json")

    log "$name: perfexpert (1 thread)"
    measure "$OUT/info1.json" env RAYON_NUM_THREADS=1 "$PERFEXPERT" info --json "$trace"
    pe1_wall=$M_WALL

    log "$name: libotf2 baseline"
    measure "$OUT/baseline.txt" "$BASELINE" "$trace"
    c_wall=$M_WALL c_rss=$M_RSS_KB
    c_events=$(sed -n 's/.*events=\([0-9]*\).*/\1/p' "$OUT/baseline.txt")
    c_read=$(sed -n 's/.*read_seconds=\([0-9.]*\).*/\1/p' "$OUT/baseline.txt")

    if [[ $pe_events != "$c_events" || $pe_events != "$gen_events" ]]; then
        MISMATCH=1
        echo "!!!!!!!! WARNING: EVENT COUNTS DISAGREE on $name: perfexpert=$pe_events libotf2=$c_events generator=$gen_events !!!!!!!!"
    fi

    end_to_end "$name" "$trace" "$pe_events" "$c_wall"

    ROWS+=("| $name | $pe_events | $size_mb | $pe_wall | $(calc '%.1f M' "$pe_events / $pe_wall / 1e6") \
| $(calc '%.0f' "$pe_rss / 1024") | $(calc '%.1f' "$pe_rss * 1024 / $pe_events") | $pe1_wall \
| $c_wall | $c_read | $(calc '%.0f' "$c_rss / 1024") | $(calc '%.1fx' "$c_wall / $pe_wall") \
| $(calc '%.1fx' "$c_wall / $pe1_wall") |")
done

# the real NPB LU class W trace (378 k events), when ../shared has it
LU_W=${BENCH_LU_W:-../shared/traces/scorep/npb_lu_W/traces.otf2}
if [[ -f $LU_W ]]; then
    log "npb_lu_W: libotf2 baseline"
    measure "$OUT/baseline.txt" "$BASELINE" "$LU_W"
    lu_c_wall=$M_WALL
    lu_events=$(sed -n 's/.*events=\([0-9]*\).*/\1/p' "$OUT/baseline.txt")
    end_to_end "npb_lu_W" "$LU_W" "$lu_events" "$lu_c_wall"
    # the two programs one after the other, N times: both see the same machine moments
    log "npb_lu_W: $AB_RUNS alternating runs with libotf2"
    AB_PE=() AB_C=()
    for ((i = 0; i < AB_RUNS; i++)); do
        t0=$(now); "$BASELINE" "$LU_W" >/dev/null; t1=$(now)
        AB_C+=("$(calc '%.4f' "$t1 - $t0")")
        t0=$(now); RAYON_NUM_THREADS=$NPROC "$PERFEXPERT" run -q "$LU_W" >/dev/null; t1=$(now)
        AB_PE+=("$(calc '%.4f' "$t1 - $t0")")
    done
else
    log "npb_lu_W: $LU_W is absent; skipped"
fi

# ---- report -----------------------------------------------------------------
echo
echo "## perfexpert vs libotf2: read throughput"
echo
echo "- date: $START_DATE"
echo "- perfexpert: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock 2>/dev/null || echo ' + uncommitted changes'), \`perfexpert info --json\`"
echo "- libotf2: $(dpkg-query -W -f '${Version}' libotf2-trace-dev 2>/dev/null || echo '?'), global event reader, counting callbacks (bench/otf2_read_baseline.c, gcc -O2)"
echo "- nproc: $NPROC; CPU: $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "- wall times: best of $RUNS, whole process, warm page cache; RSS: highest peak RSS of the runs"
echo
echo "| trace | events | trace MB | perfexpert s ($NPROC thr) | events/s | peak RSS MB | RSS bytes/event | perfexpert s (1 thr) | libotf2 s | libotf2 read-only s | libotf2 peak RSS MB | speed-up vs libotf2 | speed-up (1 thr) |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
printf '%s\n' "${ROWS[@]}"
echo
if [[ $MISMATCH == 1 ]]; then
    echo "!!!!!!!! WARNING: perfexpert and libotf2 do not agree on the event count of some trace (see above) !!!!!!!!"
else
    echo "Event counts: perfexpert, libotf2 and the generator agree on every trace."
fi

echo
echo "## perfexpert run: end to end (read, replay, all rules, report)"
echo
echo "- \`RAYON_NUM_THREADS=N perfexpert run -q --format json TRACE\`; wall: best of $RUNS, peak RSS: highest of the runs"
echo "- text: \`RAYON_NUM_THREADS=2 perfexpert run -q TRACE\` (the default text report, no critical path or phases); wall: best and median of $RUNS"
echo "- libotf2 s: the libotf2 read-only baseline above (global reader, counting callbacks), for scale"
echo "- Scalasca s: \`mpirun -np RANKS scout.mpi\`, Scalasca 2.6, as issue 12 measured it on this machine kind; ×: Scalasca s / text s, from the best and the median text run (issue 12 asks >= 10x)"
echo
echo "| trace | events | JSON 1 thr s | 1 thr events/s | 1 thr peak RSS MB | JSON 2 thr s | 2 thr events/s | 2 thr peak RSS MB | 2 thr RSS bytes/event | speed-up 1→2 | same JSON | text 2 thr s (best / median) | text peak RSS MB | libotf2 read s | Scalasca s | × Scalasca (best / median) |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|--:|--:|--:|--:|--:|"
printf '%s\n' "${RUN_ROWS[@]}"
echo
if [[ $RUN_MISMATCH == 1 ]]; then
    echo "!!!!!!!! WARNING: some report differs between 1 and 2 threads (see above) !!!!!!!!"
else
    echo "Reports: byte-identical at 1 and 2 threads on every trace."
fi
if ((${#AB_PE[@]} > 0)); then
    # best and median of a list of seconds
    stats() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%.4f | %.4f", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
    echo
    echo "## npb_lu_W: perfexpert against libotf2, alternating runs"
    echo
    echo "- $AB_RUNS pairs, one after the other: the libotf2 reader (bench/otf2_read_baseline.c), then \`RAYON_NUM_THREADS=$NPROC perfexpert run -q\` (text report)"
    echo
    echo "| program | best s | median s |"
    echo "|---|--:|--:|"
    echo "| perfexpert run | $(stats "${AB_PE[@]}") |"
    echo "| libotf2 read | $(stats "${AB_C[@]}") |"
fi
if [[ $SCALE == 1 ]]; then
    scale_table
fi
if [[ ${BENCH_FULL:-0} == 1 ]]; then
    bash bench/full.sh
fi
