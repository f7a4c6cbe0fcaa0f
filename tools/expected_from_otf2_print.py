#!/usr/bin/env python3
"""Write a trace's expected.json from the official OTF2 reader's output (otf2-print).

usage: tools/expected_from_otf2_print.py ANCHOR > expected.json
   e.g. tools/expected_from_otf2_print.py testdata/generated/ring4/traces.otf2 \\
            > testdata/generated/ring4/expected.json

Runs `otf2-print ANCHOR` and `otf2-print -G ANCHOR` (Debian's otf2-tools) and prints the
counts with the keys of ../shared/traces/scorep/*/expected.json: an event is a line matching
^[A-Z][A-Z0-9_]* +[0-9]+ +[0-9]+  (kind, location id, timestamp); events_per_kind is keyed by
the first column, events_per_location by the second; first/last_timestamp are the smallest
and largest event timestamps as otf2-print prints them; locations counts the LOCATION
definitions; timer_resolution is CLOCK_PROPERTIES' ticks per second. Needs only Python 3.
"""

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

EVENT = re.compile(r"^([A-Z][A-Z0-9_]*) +([0-9]+) +([0-9]+) ")
# The commands of ../shared/traces/scorep/*/expected.json, for a person to rerun by hand.
PER_KIND = (
    "otf2-print {a} | awk '/^[A-Z][A-Z0-9_]* +[0-9]+ +[0-9]+ /{{n[$1]++; t++}} "
    'END{{for(k in n) print k, n[k]; print "TOTAL", t}}\''
)
LOCATIONS = "otf2-print -G {a} | grep -c '^LOCATION '"


def run(*args):
    try:
        return subprocess.run(
            ["otf2-print", *args], capture_output=True, text=True, check=True
        ).stdout
    except FileNotFoundError:
        sys.exit("expected_from_otf2_print.py: otf2-print not found (apt-get install otf2-tools)")
    except subprocess.CalledProcessError as e:
        sys.exit(f"expected_from_otf2_print.py: otf2-print {' '.join(args)} failed:\n{e.stderr}")


def expected(anchor):
    version = run("--version").strip().split()[-1]  # "otf2-print: version 3.0.2"
    kinds, locations = Counter(), Counter()
    first = last = None
    with subprocess.Popen(["otf2-print", str(anchor)], stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:  # streamed: large traces print gigabytes
            m = EVENT.match(line)
            if m:
                kinds[m[1]] += 1
                locations[int(m[2])] += 1
                t = int(m[3])
                first = t if first is None else min(first, t)
                last = t if last is None else max(last, t)
    if p.returncode:
        sys.exit(f"expected_from_otf2_print.py: otf2-print {anchor} failed")

    defs = run("-G", str(anchor))
    clock = re.search(r"^CLOCK_PROPERTIES .*Ticks per Seconds: ([0-9]+)", defs, re.M)
    name = anchor.name
    return {
        "name": anchor.resolve().parent.name,
        "format": "OTF2",
        "anchor_file": name,
        "reference_reader": {
            "primary": f"otf2-print from OTF2 {version}",
            "commands": {
                "events_per_kind": PER_KIND.format(a=name),
                "locations": LOCATIONS.format(a=name),
            },
        },
        "locations": len(re.findall(r"^LOCATION ", defs, re.M)),
        "events_total": sum(kinds.values()),
        "events_per_kind": dict(sorted(kinds.items())),
        "events_per_location": {str(k): v for k, v in sorted(locations.items())},
        "first_timestamp": first,
        "last_timestamp": last,
        "timer_resolution": int(clock[1]) if clock else None,
        "note": "written by tools/expected_from_otf2_print.py from otf2-print's output; timestamps "
        "as otf2-print prints them: ClockOffset-corrected by the official reader",
    }


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    anchor = Path(sys.argv[1])
    if not anchor.is_file():
        sys.exit(f"expected_from_otf2_print.py: {anchor}: no such file")
    print(json.dumps(expected(anchor), indent=1))


if __name__ == "__main__":
    main()
