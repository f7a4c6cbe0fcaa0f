#!/usr/bin/env bash
# Seed the otf2_decode corpus with the OTF2 files of the Score-P test traces:
# the anchors (*.otf2), definition files (*.def) and event files (*.evt) of testdata/scorep/*/.
# Run from anywhere; the corpus directory (fuzz/corpus/, git-ignored) is created if needed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
out="$here/corpus/otf2_decode"
mkdir -p "$out"
n=0
while IFS= read -r -d '' f; do
    rel="${f#"$root/testdata/scorep/"}"
    # Several traces have files of the same name (traces/0.evt, ...): keep the path in the name.
    cp "$f" "$out/scorep-${rel//\//-}"
    n=$((n + 1))
done < <(find "$root/testdata/scorep" -mindepth 2 -type f \
    \( -name '*.otf2' -o -name '*.def' -o -name '*.evt' \) -print0)
echo "seeded $n files into ${out#"$root/"}"
