#!/usr/bin/env bash
# The README's pictures: the HTML report of a trace, opened in headless chromium, one PNG per
# section in docs/img/ (look at each before committing it). Usage: tools/screenshots.sh [TRACE] (default testdata/scorep/mixed8).
# Needs Debian's `chromium` (.ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-testdata/scorep/mixed8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run -q --release -- run "$trace" -q --format html --what-if allreduce_phase -o "$tmp/report.html"
mkdir -p docs/img
shot() { # section, height[, picture name, more of the query: frame=N, finding=K, order=K]
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/profile" --window-size="1000,$2" \
        --virtual-time-budget=2000 \
        --screenshot="docs/img/${3:-$1}.png" "file://$tmp/report.html?only=$1${4:+&$4}" 2>/dev/null
}
shot findings 800
shot phases 300
shot critical-path 720
shot wait-matrix 900
shot traffic-matrix 720
shot overheads 560
# the views of the run (issue 25): the timeline with the top finding's worst instances
# marked, a frame of the animations in affinity order, the process graph, mapping and pies
shot timeline 620 timeline finding=0
shot animations 760 animations frame=36\&order=3
shot process-graph 1250
