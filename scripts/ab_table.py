"""ab_table.py: the table of gpu_visit.sh's `ab` step: for each target and graph, the best median
of each build over its rounds (ab_TARGET_GRAPH_WHO_ROUND.json from `portc bench --json`) and
new/base time (under 1: the new build is faster).

usage: python3 scripts/ab_table.py OUT_DIR
"""
import glob
import json
import os
import re
import sys

best = {}
for path in glob.glob(os.path.join(sys.argv[1], "ab_*.json")):
    m = re.match(r"ab_(.+?)_(.+)_(base|new)_(\d+)\.json$", os.path.basename(path))
    if not m:
        continue
    target, graph, who = m.group(1), m.group(2), m.group(3)
    try:
        ms = json.load(open(path))["fused"]["median_s"] * 1e3
    except (ValueError, KeyError):
        continue
    key = (target, graph)
    best.setdefault(key, {})
    best[key][who] = min(ms, best[key].get(who, ms))
print("| target | graph | base ms | new ms | new/base |")
print("| --- | --- | --- | --- | --- |")
for (target, graph), v in sorted(best.items()):
    if "base" in v and "new" in v:
        print("| %s | %s | %.3f | %.3f | %.3f |" % (target, graph, v["base"], v["new"], v["new"] / v["base"]))
    else:
        print("| %s | %s | %s | %s | - |" % (target, graph, v.get("base", "-"), v.get("new", "-")))
