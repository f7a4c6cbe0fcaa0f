"""Read a .cubex written by perfexpert back with pycubexr (a Cube reader that is not ours) and
check it against the JSON report of the same run (patterns.md §8, §9.11).

    usage: python cubex_roundtrip.py report.cubex report.json [more.cubex more.json ...]

Checks: metric ids, names, units, data types and the metric tree; the call-path tree (ids =
pre-order positions, regions by name); the system tree machine > node > process > thread with
locations in rank order; and every value of every metric at every call path and location,
equal to the JSON report's bit for bit (zeros where the JSON lists none). Prints one summary
line per pair; exits 1 with the first differences on failure.
"""

import json
import sys
import tarfile
from xml.etree import ElementTree

from pycubexr import CubexParser


def main(cubex_path, json_path):
    report = json.load(open(json_path))
    errors = []

    def check(cond, msg):
        if not cond:
            errors.append(msg)

    with CubexParser(cubex_path) as cube:
        metrics = cube.all_metrics()  # pre-order of the metric tree
        # metric tree: same ids in the same (report = pre-order) order, same parents and units
        ids = [m.name for m in metrics]
        check(ids == [m["id"] for m in report["metrics"]],
              f"metric ids differ: {ids} vs {[m['id'] for m in report['metrics']]}")
        for m, jm in zip(metrics, report["metrics"]):
            check(m.display_name == jm["name"], f"{m.name}: display name {m.display_name!r}")
            check(m.units == jm["unit"], f"{m.name}: unit {m.units!r} vs {jm['unit']!r}")
            dtype = "FLOAT" if jm["unit"] == "sec" else "INTEGER"
            check(m.data_type == dtype, f"{m.name}: dtype {m.data_type!r}")
            check(m.url.startswith("@mirror@scalasca_patterns.html#" + m.name),
                  f"{m.name}: documentation url {m.url!r}")
            check(m.description.strip() != "", f"{m.name}: no description")
            for c in m.childs:
                parent = next(x for x in report["metrics"] if x["id"] == c.name)["parent"]
                check(parent == m.name, f"{c.name}: parent {m.name} in cubex, {parent} in JSON")

        # call paths: ids are pre-order positions and carry the JSON's regions and parents
        cnodes = cube.get_root_cnodes()
        check(len(cnodes) == 1, f"{len(cnodes)} root cnodes")
        order = []
        stack = [(cnodes[0], None)]
        while stack:
            c, parent = stack.pop()
            order.append((c, parent))
            for k in reversed(c.get_children()):
                stack.append((k, c.id))
        check([c.id for c, _ in order] == list(range(len(report["callpaths"]))),
              "cnode ids are not the pre-order positions 0..n-1")
        for c, parent in order:
            jc = report["callpaths"][c.id]
            check(c.region.name == jc["region"], f"cnode {c.id}: {c.region.name} vs {jc['region']}")
            check(parent == jc["parent"], f"cnode {c.id}: parent {parent} vs {jc['parent']}")

        # system tree: one machine > nodes > processes (by rank) > threads (by number)
        # (pycubexr reads a node's class from an attribute; Cube and Scalasca write an element)
        anchor = ElementTree.parse(tarfile.open(cubex_path).extractfile("anchor.xml")).getroot()
        roots = anchor.find("system").findall("systemtreenode")
        check(len(roots) == 1 and roots[0].findtext("class") == "machine",
              "system tree root is not one machine")
        for node in roots[0].iter("systemtreenode"):
            for g in node.findall("locationgroup"):
                check(node.findtext("class") == "node", f"process {g.findtext('name')} not in a node")
                check(g.findtext("type") == "process", f"group type {g.findtext('type')}")
        by_id = {loc.id: loc for loc in cube.get_locations()}
        locations = [by_id.get(i) for i in range(len(by_id))]
        check(None not in locations, f"location ids are not 0..n-1: {sorted(by_id)}")
        check(len(locations) == len(report["locations"]),
              f"{len(locations)} locations vs {len(report['locations'])}")
        procs = {}
        for l in report["locations"]:
            procs.setdefault(l["process"], []).append(l)
        def proc_rank(ls):
            ranks = [l["rank"] for l in ls if l["rank"] is not None]
            return (not ranks, min(ranks) if ranks else 0)
        column_of = {}
        for ls in sorted(procs.values(), key=proc_rank):
            for l in sorted(ls, key=lambda l: l["thread"]):
                column_of[l["id"]] = len(column_of)
        for jl in report["locations"]:
            loc = locations[column_of[jl["id"]]]
            check(loc.name == jl["name"], f"column {loc.id}: {loc.name} vs {jl['name']}")
            check(int(loc.rank) == jl["thread"], f"column {loc.id}: thread {loc.rank} vs {jl['thread']}")
            check(loc.type == "thread", f"location {loc.id}: type {loc.type}")

        # values: every metric, cnode and location
        want = {}
        for v in report["values"]:
            want[(v["metric"], v["callpath"], column_of[v["location"]])] = v["value"]
        nvalues = 0
        for m in metrics:
            mv = cube.get_metric_values(m)
            for c, _ in order:
                row = mv.cnode_values(c)
                check(len(row) == len(locations), f"{m.name} cnode {c.id}: {len(row)} columns")
                for j, x in enumerate(row):
                    w = want.pop((m.name, c.id, j), 0.0)
                    got = float(x)
                    if got != w:
                        errors.append(f"{m.name} at cnode {c.id} column {j}: {got!r} vs JSON {w!r}")
                    if got != 0.0:
                        nvalues += 1
        check(not want, f"{len(want)} JSON values not in the cubex: {list(want)[:5]}")

    if errors:
        print(f"{cubex_path}: {len(errors)} differences", file=sys.stderr)
        for e in errors[:20]:
            print("  " + e, file=sys.stderr)
        return False
    print(f"{cubex_path}: {len(metrics)} metrics, {len(order)} call paths, "
          f"{len(locations)} locations, {nvalues} non-zero values equal to the JSON report")
    return True


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or len(args) % 2:
        sys.exit("usage: cubex_roundtrip.py report.cubex report.json [...]")
    ok = [main(args[i], args[i + 1]) for i in range(0, len(args), 2)]
    sys.exit(0 if all(ok) else 1)
