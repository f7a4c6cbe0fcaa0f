#!/usr/bin/env bash
# Every report of every shipped trace, for byte-for-byte comparison across a refactor.
#
#   usage (from the project root):  bash tools/reports.sh OUTDIR [BINARY]
#   then:                           bash tools/reports.sh --compare DIR_A DIR_B
#
# For each trace (testdata/, and ../shared/traces when it is there: the Score-P MPI and
# OpenMP traces, the SMPI Paje traces, the public OTF2, OTF 1 and Paje traces that read),
# it writes OUTDIR/NAME/ with report.txt, report.json, report.html, report.cubex (one
# `--format text,json,cubex,html` run) and stdout.txt (`run -q --top 50 --call-tree
# --critical-path`, the text-only path). Also a custom-rule run (testdata/rules*) and a
# small generated ping-pong (examples/gen_pingpong, 16 ranks x 1500 iterations).
# A `.cubex` holds the time of writing in its tar headers: --compare compares the
# archives member by member (content only).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ${1:-} == --compare ]]; then
    a=$2 b=$3
    python3 - "$a" "$b" <<'PY'
import os, sys, tarfile, filecmp
a, b = sys.argv[1], sys.argv[2]
bad = 0; n = 0
names = sorted(set(os.listdir(a)) | set(os.listdir(b)))
for name in names:
    da, db = os.path.join(a, name), os.path.join(b, name)
    if not (os.path.isdir(da) and os.path.isdir(db)):
        print(f"only in one side: {name}"); bad += 1; continue
    for f in sorted(set(os.listdir(da)) | set(os.listdir(db))):
        fa, fb = os.path.join(da, f), os.path.join(db, f)
        n += 1
        if not (os.path.exists(fa) and os.path.exists(fb)):
            print(f"only in one side: {name}/{f}"); bad += 1; continue
        if f.endswith(".cubex"):
            def members(p):
                with tarfile.open(p) as t:
                    return [(m.name, t.extractfile(m).read()) for m in t.getmembers()]
            same = members(fa) == members(fb)
        else:
            same = filecmp.cmp(fa, fb, shallow=False)
        if not same:
            print(f"DIFFERS: {name}/{f}"); bad += 1
print(f"{n} files compared, {bad} differ")
sys.exit(1 if bad else 0)
PY
    exit $?
fi

OUT=${1:?usage: bash tools/reports.sh OUTDIR [BINARY]}
BIN=${2:-target/release/perfexpert}
[[ -x $BIN ]] || { echo "tools/reports.sh: no binary at $BIN (cargo build --release)" >&2; exit 2; }
mkdir -p "$OUT"
SHARED=../shared/traces

one() { # NAME TRACE [extra run options...]
    local name=$1 trace=$2; shift 2
    local d="$OUT/$name"
    rm -rf "$d"; mkdir -p "$d"
    local rc=0
    "$BIN" run -q "$trace" "$@" --format text,json,cubex,html -o "$d" >/dev/null 2>"$d/stderr.txt" || rc=$?
    echo "exit $rc" >>"$d/stderr.txt"
    rc=0
    "$BIN" run -q "$trace" "$@" --top 50 --call-tree --critical-path >"$d/stdout.txt" 2>>"$d/stderr.txt" || rc=$?
    echo "exit $rc" >>"$d/stderr.txt"
}

for d in testdata/scorep/* testdata/scorep-omp/* testdata/smpi/* testdata/generated/*; do
    [[ -d $d ]] || continue
    for p in "$d"/*.paje; do
        [[ -f $p ]] && one "td-$(basename "$(dirname "$d")")-$(basename "$d")-$(basename "$p" .paje)" "$p"
    done
    [[ -f $d/trace.paje ]] && continue
    one "td-$(basename "$(dirname "$d")")-$(basename "$d")" "$d"
done
one td-custom-rules testdata/scorep/ls --rules testdata/rules
one td-nested-rules testdata/scorep/wo --rules testdata/rules-nested
one td-shared-rules testdata/scorep/ls --rules testdata/rules-shared
if [[ -d $SHARED ]]; then
    for d in "$SHARED"/scorep/*/ "$SHARED"/scorep-omp/*/ "$SHARED"/smpi/*/ "$SHARED"/public/*/; do
        d=${d%/}
        # a public trace folder holds the trace somewhere below it
        t=$d
        if [[ -f $d/trace.paje ]]; then
            for p in "$d"/*.paje; do
                one "sh-$(basename "$(dirname "$d")")-$(basename "$d")-$(basename "$p" .paje)" "$p"
            done
            continue
        fi
        if [[ $d == */public/* ]]; then
            t=$(find "$d" \( -name '*.otf2' -o -name '*.otf' -o -name '*.trace' -o -name '*.paje' \) | sort | head -1)
            [[ -n $t ]] || continue
        fi
        one "sh-$(basename "$(dirname "$d")")-$(basename "$d")" "$t"
    done
else
    echo "tools/reports.sh: ../shared absent: only testdata/ traces" >&2
fi
PP=target/reports-pingpong
if [[ ! -f $PP/traces.otf2 ]]; then
    cargo run -q --release --example gen_pingpong -- 16 1500 "$PP" >/dev/null
fi
one gen-pingpong-16x1500 "$PP"
echo "$(ls "$OUT" | wc -l) traces written to $OUT" >&2
