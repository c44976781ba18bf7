#!/usr/bin/env bash
# The CPU benchmarks: softmax and layer_norm over 8192 x 4096 f32 and gelu(x*a+b) over 16M f32,
# fused against eager; a plain copy for the machine's copy bandwidth as portc reaches it; f32
# matmul 1024^3 against numpy in the same run; and regional compilation, the cold compile of 1,
# 6 and 24 stacked transformer layers on cpu and vulkan (bench/regional.py). JSON for each
# benchmark lands in build/bench/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-numpy >/dev/null
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
mkdir -p build/bench
for b in copy softmax layer_norm gelu_affine matmul; do
  build/bin/portc bench "bench/$b.ptg" --iters 20 --json "build/bench/$b.json"
  echo
done
# numpy (Debian's build, with its BLAS) on the same machine, same shape, same protocol
/usr/bin/python3 - <<'PY'
import json, time, numpy as np
a = np.random.rand(1024, 1024).astype(np.float32); b = np.random.rand(1024, 1024).astype(np.float32)
for _ in range(3): a @ b
t = []
for _ in range(20):
    s = time.perf_counter(); a @ b; t.append(time.perf_counter() - s)
t.sort(); med = t[len(t) // 2]
portc = json.load(open("build/bench/matmul.json"))["fused"]["median_s"]
copy = json.load(open("build/bench/copy.json"))["fused"]["gbps"]
print(f"numpy matmul 1024^3 f32: median {med*1e3:.3f} ms, {2*1024**3/med/1e9:.1f} GFLOP/s; portc: {portc*1e3:.3f} ms, "
      f"{2*1024**3/portc/1e9:.1f} GFLOP/s; portc/numpy speed {med/portc:.2f}x")
for name in ["softmax", "layer_norm", "gelu_affine"]:
    r = json.load(open(f"build/bench/{name}.json"))
    print(f"{name}: fused {r['fused']['median_s']*1e3:.2f} ms, {r['fused']['gbps']:.1f} GB/s = {100*r['fused']['gbps']/copy:.0f}% of copy "
          f"({copy:.1f} GB/s); eager {r['eager']['median_s']*1e3:.2f} ms; fused/eager {r['speedup']:.2f}x")
PY
# regional compilation: 24 identical blocks cost about what one costs, cold (vulkan: lavapipe without a GPU)
/usr/bin/python3 bench/regional.py build/bin/portc cpu vulkan
