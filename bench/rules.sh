#!/usr/bin/env bash
# The rule passes' wall time ("rules evaluated" of `--timings`) and the whole `run -q`, of
# two binaries side by side (alternating, best of N), on the traces given.
#
#   usage (from the project root):
#     bash bench/rules.sh YARDSTICK_BINARY NEW_BINARY TRACE... [-n ROUNDS] [-t THREADS]
#
# Prints one table row per trace: best "rules evaluated" and best whole run of each binary,
# and the ratios new / yardstick. Machines are noisy: compare only within one run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

a=$1 b=$2
shift 2
rounds=5 threads=2 traces=()
while (($#)); do
    case $1 in
    -n) rounds=$2; shift 2 ;;
    -t) threads=$2; shift 2 ;;
    *) traces+=("$1"); shift ;;
    esac
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# prints "RULES TOTAL" (seconds) of one run
one() {
    local bin=$1 trace=$2 t0 t1 rules
    t0=$(date +%s.%N)
    rules=$(RAYON_NUM_THREADS=$threads "$bin" run -q --timings "$trace" -o "$out/r" 2>&1 \
        | awk '/timings: rules evaluated/ {print $4}')
    t1=$(date +%s.%N)
    echo "$rules $(echo "$t1 - $t0" | bc)"
}

min() { printf '%s\n' "$@" | sort -g | head -1; }

printf '%-40s %10s %10s %7s %10s %10s %7s\n' trace rules_yard rules_new ratio run_yard run_new ratio
for trace in "${traces[@]}"; do
    ra=() rb=() ta=() tb=()
    for ((i = 0; i < rounds; i++)); do
        read -r r t < <(one "$a" "$trace")
        ra+=("$r") ta+=("$t")
        read -r r t < <(one "$b" "$trace")
        rb+=("$r") tb+=("$t")
    done
    r1=$(min "${ra[@]}") r2=$(min "${rb[@]}") t1=$(min "${ta[@]}") t2=$(min "${tb[@]}")
    printf '%-40s %10.3f %10.3f %7.2f %10.3f %10.3f %7.2f\n' "$(basename "$(dirname "$trace")")" \
        "$r1" "$r2" "$(echo "$r2 / $r1" | bc -l)" "$t1" "$t2" "$(echo "$t2 / $t1" | bc -l)"
done
