#!/usr/bin/env bash
# The README's `run --mpi` table (issue 24): one trace at P = 1, 2, 4 processes under mpirun:
# the job's wall time (best of 3, and its ratio to P = 1 run side by side), the peak resident
# memory of each process (/usr/bin/time -v per rank), the bytes each process exchanged and
# the exchange rounds (--timings); and the single-process `run -q` of the same trace as a
# yardstick (wall time and peak RSS).
#
#   usage: bash bench/mpi.sh TRACE [BINARY]     (BINARY built with --features mpi)
#   FORMAT=json (or cubex, html): that report, written to a temporary file, instead of the text
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TRACE=${1:?usage: bash bench/mpi.sh TRACE [BINARY]}
BIN=${2:-target/release/perfexpert}
command -v mpirun >/dev/null || { echo "bench/mpi.sh: no mpirun (apt-get install openmpi-bin)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
ARGS=(-q)
if [[ -n ${FORMAT:-} ]]; then ARGS+=(--format "$FORMAT" -o "$OUT/report.$FORMAT"); fi

wall() { # command... -> seconds on stdout
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>>"$OUT/err"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

best() { # command... -> best of 3
    local b=""
    for _ in 1 2 3; do
        local t
        t=$(wall "$@")
        if [[ -z $b ]] || (($(echo "$t < $b" | bc))); then b=$t; fi
    done
    echo "$b"
}

single=$(best "$BIN" run "${ARGS[@]}" "$TRACE")
/usr/bin/time -v -o "$OUT/rss.single" "$BIN" run "${ARGS[@]}" "$TRACE" >/dev/null 2>>"$OUT/err"
single_rss=$(awk '/Maximum resident/ {printf "%d", $6/1024}' "$OUT/rss.single")
echo "| processes | wall s (best of 3) | / P = 1 | peak RSS per process, MB | bytes exchanged per process | rounds |"
echo "|---|---|---|---|---|---|"
p1=""
for P in 1 2 4; do
    t=$(best mpirun --oversubscribe -np "$P" "$BIN" run --mpi "${ARGS[@]}" "$TRACE")
    [[ -n $p1 ]] || p1=$t
    rm -f "$OUT"/rss.* "$OUT"/timings.*
    # each process's --timings line to its own file (lines of several processes on one
    # stream can interleave)
    mpirun --oversubscribe -np "$P" sh -c \
        "/usr/bin/time -v -o $OUT/rss.\${OMPI_COMM_WORLD_RANK:-0} $BIN run --mpi ${ARGS[*]} --timings $TRACE 2>$OUT/timings.\${OMPI_COMM_WORLD_RANK:-0}" \
        >/dev/null
    rss=$(for f in "$OUT"/rss.*; do awk '/Maximum resident/ {printf "%d ", $6/1024}' "$f"; done)
    bytes=$(cat "$OUT"/timings.* | grep -o 'process [0-9]* of [0-9]*: [0-9]* bytes' | sort -n -k2 |
        awk '{printf "%s ", $5}')
    rounds=$(cat "$OUT"/timings.* | grep -o 'in [0-9]* rounds' | sort -u | awk '{printf "%s ", $2}')
    printf '| %d | %.2f | %.2f | %s| %s| %s|\n' "$P" "$t" "$(echo "$t / $p1" | bc -l)" "$rss" "$bytes" "$rounds"
done
echo
printf 'yardstick: the single-process `perfexpert run %s` (the whole analysis) of the same trace: %.2f s, peak RSS %s MB\n' "${ARGS[*]//$OUT/TMP}" "$single" "$single_rss"
