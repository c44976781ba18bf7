#!/usr/bin/env python3
"""Two `portc bench --trace` files of one graph side by side, kernel by kernel: where one target
(or one build, or one schedule) spends its time that the other does not.

Kernels are matched by the nodes they fuse (the trace's "fuses"), so that two targets whose
kernel numbering differs still line up; kernels only one side has are listed as such. Rows are
sorted by how much longer the second file's kernel takes, the largest first.

usage: trace_compare.py A.json B.json [--top N]
"""
import argparse
import json


def kernels(path):
    t = json.load(open(path))
    out = {}
    for e in t["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        key = e["args"].get("fuses") or e["name"]
        out[key] = (e["name"].split(": ", 1)[-1], e["dur"], e["args"].get("GFLOP/s", 0.0))
    return t["otherData"].get("target", path), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    ta, ka = kernels(args.a)
    tb, kb = kernels(args.b)
    both = [k for k in ka if k in kb]
    print(f"{len(ka)} kernels on {ta} ({sum(v[1] for v in ka.values()):.1f} us), {len(kb)} on {tb} ({sum(v[1] for v in kb.values()):.1f} us), "
          f"{len(both)} fuse the same nodes")
    print(f"| kernel | fuses | {ta} us | {tb} us | {tb} GFLOP/s | {tb} - {ta} us |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = sorted(both, key=lambda k: kb[k][1] - ka[k][1], reverse=True)
    for k in rows[: args.top]:
        print(f"| {kb[k][0]} | {k[:60]} | {ka[k][1]:.1f} | {kb[k][1]:.1f} | {kb[k][2]:.0f} | {kb[k][1] - ka[k][1]:+.1f} |")
    for side, mine, other, target in ((1, ka, kb, ta), (2, kb, ka, tb)):
        only = [k for k in mine if k not in other]
        if only:
            print(f"only on {target}: {len(only)} kernels, {sum(mine[k][1] for k in only):.1f} us")


if __name__ == "__main__":
    main()
