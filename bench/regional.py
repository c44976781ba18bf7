#!/usr/bin/env python3
"""Regional compilation: the cold compile of 1, 6 and 24 stacked copies of the transformer encoder
layer (examples/transformer.ptg), each with its own weights, on each target named, with an empty
kernel cache each time. A model of identical blocks should cost about what one block costs: the
issue's bar is 24 blocks under 1.5x one block. Prints the seconds, the kernels, the kernel-cache
entries and the ratio.

usage: regional.py PORTC [TARGET...]   (default targets: cpu vulkan)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def blocks(n):
    """n encoder layers in a row, the output of each the input of the next"""
    src = open(os.path.join(HERE, "..", "examples", "transformer.ptg")).read()
    lines = [l for l in src.splitlines() if l.strip() and not l.startswith("#")]
    body = [l for l in lines if not l.startswith(("graph", "input", "output"))]
    out = ["graph blocks%d" % n, "input x: f32[B, S, 256]"]
    prev = "x"
    for i in range(n):
        names = {re.match(r"(param )?(\w+)", l).group(2): "%s_%d" % (re.match(r"(param )?(\w+)", l).group(2), i) for l in body}
        for l in body:
            out.append(re.sub(r"\b[A-Za-z_]\w*\b", lambda m: prev if m.group(0) == "x" else names.get(m.group(0), m.group(0)), l))
        prev = names["y"]
    out.append("output " + prev)
    return "\n".join(out) + "\n"


def cold_compile(portc, graph, target, work):
    cache = tempfile.mkdtemp(dir=work)
    env = dict(os.environ, PORTC_CACHE_DIR=cache)
    t0 = time.perf_counter()
    r = subprocess.run([portc, "explain", graph, "-t", target, "--set", "B=2", "--set", "S=16"], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("portc explain %s -t %s failed:\n%s" % (graph, target, r.stderr))
    kernels = int(re.search(r": (\d+) kernels", r.stdout).group(1))
    entries = len([f for f in os.listdir(cache) if f.endswith((".so", ".spv"))])
    return seconds, kernels, entries


def main():
    portc = os.path.abspath(sys.argv[1])
    targets = sys.argv[2:] or ["cpu", "vulkan"]
    work = tempfile.mkdtemp(prefix="portc-regional-")
    try:
        graphs = {}
        for n in (1, 6, 24):
            graphs[n] = os.path.join(work, "blocks%d.ptg" % n)
            open(graphs[n], "w").write(blocks(n))
        print("regional compilation: cold compiles of stacked encoder layers (B=2, S=16), empty kernel cache each")
        print("%-8s %7s %9s %8s %14s" % ("target", "blocks", "seconds", "kernels", "cache entries"))
        for t in targets:
            base = None
            for n in (1, 6, 24):
                s, k, e = cold_compile(portc, graphs[n], t, work)
                base = base or s
                print("%-8s %7d %9.2f %8d %14d" % (t, n, s, k, e))
            print("%-8s 24 blocks / 1 block: %.2fx (the bar: under 1.5x) %s" % (t, s / base, "holds" if s / base < 1.5 else "MISSED"))
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
