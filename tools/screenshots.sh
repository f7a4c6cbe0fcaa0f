#!/usr/bin/env bash
# The README's pictures: the HTML report of a trace, opened in headless chromium, one PNG per
# section in docs/img/. Usage: tools/screenshots.sh [TRACE] (default testdata/scorep/mixed8).
# Needs Debian's `chromium` (.ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
trace=${1:-testdata/scorep/mixed8}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run -q --release -- run "$trace" -q --format html --what-if allreduce_phase -o "$tmp/report.html"
mkdir -p docs/img
shot() { # section, height
    chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --hide-scrollbars --user-data-dir="$tmp/profile" --window-size="1000,$2" \
        --screenshot="docs/img/$1.png" "file://$tmp/report.html?only=$1" 2>/dev/null
}
shot findings 800
shot phases 300
shot critical-path 720
shot wait-matrix 900
shot traffic-matrix 720
shot overheads 560
