#!/usr/bin/env bash
# One visit to a GPU machine: builds nothing. Runs, from a build made elsewhere (build/bin/portc
# and build/lib/libportc.so), the steps named on the command line:
#   verify  `portc verify -t vulkan` (fused and eager), the table and the JSON
#   bench   `portc bench -t vulkan` on every graph of bench/gpu/
#   torch   bench/vs_torch.py: the same graphs in torch eager and torch.compile, and the table
# Logs and JSON go to $OUT (or /tmp/portc-visit); the last lines printed are the short tables.
# Usage: scripts/gpu_visit.sh [verify] [bench] [torch]   (default: all three)
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/portc-visit}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PORTC_CACHE_DIR=${PORTC_CACHE_DIR:-/tmp/portc-cache}
portc=build/bin/portc
steps=${*:-verify bench torch}
summary=()

"$portc" devices >"$out/devices.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >>"$out/devices.txt" 2>&1
cat "$out/devices.txt"

for step in $steps; do
  case $step in
  verify)
    start=$(date +%s)
    "$portc" verify -t vulkan --examples examples --json "$out/verify_vulkan.json" >"$out/verify_vulkan.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_vulkan.txt" | head -20
    summary+=("verify (rc $rc, $(($(date +%s) - start)) s):" "$(tail -7 "$out/verify_vulkan.txt")")
    ;;
  bench)
    for g in bench/gpu/*.ptg; do
      name=$(basename "$g" .ptg)
      flags=()
      [[ $name == matmul* ]] && flags+=(--no-eager)
      "$portc" bench "$g" -t vulkan --iters 30 --warmup 3 --json "$out/$name.json" "${flags[@]}" >>"$out/bench.txt" 2>&1 ||
        echo "bench $name failed: $(tail -1 "$out/bench.txt")"
    done
    summary+=("bench:" "$(grep -E ' on vulkan |^fused|^eager|faster' "$out/bench.txt" | cut -c1-150 | head -40)")
    ;;
  torch)
    PYTHONUNBUFFERED=1 python3 bench/vs_torch.py "$out" --iters 30 >"$out/vs_torch.txt" 2>&1
    summary+=("torch (rc $?):" "$(grep -v Warning "$out/vs_torch.txt" | tail -16)")
    ;;
  *) echo "unknown step $step (verify, bench, torch)"; exit 2 ;;
  esac
done
printf '%s\n' "${summary[@]}"
