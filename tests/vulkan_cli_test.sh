#!/usr/bin/env bash
# vulkan_cli_test.sh: the Vulkan target through the portc command, in fresh processes, since the
# Vulkan loader and each device's features are read once per process: a machine without the
# loader (Vulkan listed unavailable with the reason, the CPU unaffected), and devices that lack
# 16-bit storage, 64-bit integers or subgroup arithmetic (PORTC_VULKAN_DISABLE): a clear error
# naming the feature, or the fallback that avoids it.
# Usage: vulkan_cli_test.sh PORTC_BINARY SOURCE_DIR
set -u
portc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PORTC_CACHE_DIR="$tmp/cache"
. "$(dirname "$0")/cli_lib.sh"

# no loader: Vulkan is unavailable with the reason, everything else works
export PORTC_VULKAN_LOADER=/nonexistent/libvulkan.so.1
expect 0 "devices without a loader" -- "$portc" devices
contains "vulkan    not available: the Vulkan loader (/nonexistent/libvulkan.so.1) cannot be opened" "reason for no Vulkan"
contains "cpu       available" "cpu still listed"
expect 0 "cpu runs without a loader" -- "$portc" run "$src/examples/softmax.ptg" -t cpu --seed 1 --set N=3
expect 1 "vulkan run without a loader" -- "$portc" run "$src/examples/softmax.ptg" -t vulkan --seed 1 --set N=3
contains "target vulkan is not available: the Vulkan loader" "vulkan run message"
expect 0 "verify counts vulkan cases as skipped" -- "$portc" verify -t cpu,vulkan --filter 'unary/neg/f32' --no-eager --examples "$src/examples"
contains "vulkan: not available" "verify says why vulkan is skipped"
contains "6 passed, 0 failed, 6 skipped" "verify summary with skips"
unset PORTC_VULKAN_LOADER

# the loader and a device
expect 0 "devices" -- "$portc" devices
contains "vulkan    available" "vulkan listed"
contains "vulkan:0 (default)" "devices describes vulkan:0"
contains "16-bit storage" "devices lists features"
contains "f32 to f16 by the device" "devices says who rounds f16 stores"
contains "cooperative matrix 2 (NV): no" "devices says lavapipe has no workgroup-scope cooperative matrices"
PORTC_VULKAN_DISABLE=f16convert expect 0 "devices without the device's f16 conversion" -- "$portc" devices
contains "f32 to f16 by the device (nearest even, denormals kept) no (portc rounds in software)" "software f16 rounding named"
PORTC_VULKAN_KERNELS=bogus expect 0 "devices with an unknown kernel of portc's own named" -- "$portc" devices
contains "vulkan    not available: PORTC_VULKAN_KERNELS lists 'bogus', which is not coopconv, coopattention, coopwg, coopwgtensor, coopwgelements or none" "the unknown kernel named"
PORTC_VULKAN_KERNELS=bogus expect 1 "a run with an unknown kernel of portc's own named" -- "$portc" run "$src/examples/softmax.ptg" -t vulkan --seed 1 --set N=3
contains "PORTC_VULKAN_KERNELS lists 'bogus'" "the run says why"
expect 0 "a device by index" -- "$portc" run "$src/examples/softmax.ptg" -t vulkan:0 --seed 1 --set N=3
expect 1 "a device that is not there" -- "$portc" run "$src/examples/softmax.ptg" -t vulkan:9 --seed 1 --set N=3
contains "no device vulkan:9" "the missing device named"
expect 2 "a device index that is not a number" -- "$portc" run "$src/examples/softmax.ptg" -t vulkan:x --seed 1 --set N=3

# a device without 16-bit storage: f16 graphs are refused by name, f32 ones run
printf 'graph h\ninput x: f16[64, 300]\ny = softmax(x, axis=-1)\noutput y\n' >"$tmp/h.ptg"
PORTC_VULKAN_DISABLE=storage16 expect 1 "f16 without 16-bit storage" -- "$portc" run "$tmp/h.ptg" -t vulkan --seed 1
contains "needs 16-bit storage buffers (storageBuffer16BitAccess)" "missing feature named"
PORTC_VULKAN_DISABLE=storage16 expect 0 "f32 without 16-bit storage" -- "$portc" run "$src/examples/softmax.ptg" -t vulkan --seed 1 --set N=3

# pointwise kernels move 16-bit data eight elements at a time where their buffers lie as the output
# does (NVIDIA's driver moves single 16-bit elements at a tenth of its bandwidth); a broadcast
# operand stays a scalar load
printf 'graph p\ninput x: f16[3, 64]\ninput w: f32[64]\nxf = cast(x, to=f32)\ns = add(xf, w)\ny = cast(s, to=f16)\nz = mul(x, x)\noutput y\noutput z\n' >"$tmp/p.ptg"
expect 0 "explain f16 pointwise kernels" -- "$portc" explain "$tmp/p.ptg" -t vulkan
contains "vectors of 8" "pointwise kernels with vector accesses"
expect 0 "f16 pointwise kernels in vectors" -- "$portc" verify --model "$tmp/p.ptg" -t vulkan
contains "2 passed, 0 failed, 0 skipped" "vector pointwise kernels match the reference"

# a device without 64-bit integers: integer graphs are refused by name
printf 'graph i\ninput x: i32[10]\ny = relu(x)\noutput y\n' >"$tmp/i.ptg"
PORTC_VULKAN_DISABLE=int64 expect 1 "ints without int64" -- "$portc" run "$tmp/i.ptg" -t vulkan --seed 1
contains "needs 64-bit integers (shaderInt64)" "missing int64 named"

# a device without subgroup arithmetic or timestamps: reductions in shared memory, host timing
PORTC_VULKAN_DISABLE=subgroup,timestamps expect 0 "reductions without subgroup arithmetic" -- \
  "$portc" verify -t vulkan --filter 'reduce|softmax|layer_norm|rms_norm' --examples "$src/examples" --quiet
contains " 0 failed" "shared-memory reductions pass"
PORTC_VULKAN_DISABLE=subgroup,timestamps expect 0 "bench without timestamps" -- \
  "$portc" bench "$src/examples/softmax.ptg" -t vulkan --set N=64 --iters 3 --no-eager
contains "host clock" "bench says it timed on the host"
expect 0 "bench with timestamps" -- "$portc" bench "$src/examples/softmax.ptg" -t vulkan --set N=64 --iters 3 --no-eager
contains "device timestamps" "bench says it timed on the device"
expect 0 "bench on two targets" -- "$portc" bench "$src/examples/softmax.ptg" -t cpu,vulkan --set N=64 --iters 3 --no-eager --json "$tmp/two.json"
contains "softmax on vulkan" "bench ran the second target"
grep -q '{"targets": \[' "$tmp/two.json" || { echo "FAIL: two targets' json lacks the list"; fails=$((fails + 1)); }

# split-K convolutions, forced by a site table (lavapipe reports no multiprocessors, so the rule
# never splits here): the conformance cases' convolutions, fused and eager, under the validation
# layer, and a reduce-overhead replay
printf 'api=vulkan kind=conv split_k=3 prov=heuristic source="every convolution in 3 slices: checks split-K"\n' >"$tmp/split.tune"
PORTC_TUNE_PATH="$tmp/split.tune" expect 0 "explain split-K" -- "$portc" explain "$src/examples/cnn.ptg" -t vulkan
contains "the reduction in 3 slices" "the site table splits the convolutions"
PORTC_TUNE_PATH="$tmp/split.tune" PORTC_VULKAN_VALIDATION=1 expect 0 "split-K convolutions" -- \
  "$portc" verify -t vulkan --filter 'conv|cnn|resnet' --examples "$src/examples" --quiet
contains " 0 failed" "split-K convolutions match the reference"
if grep -q "^portc vulkan validation:" "$tmp/out"; then echo "FAIL: the validation layer reported problems with split-K"; fails=$((fails + 1)); fi
PORTC_TUNE_PATH="$tmp/split.tune" expect 0 "split-K under reduce-overhead" -- \
  "$portc" run "$src/examples/cnn.ptg" -t vulkan --mode reduce-overhead --seed 1 --set N=3

# the f32 word convolution and matmul (vulkan/matmul.c) at what the rules do not choose on
# lavapipe (convolutions in 64x64 tiles, k-steps of 16, whole; matmuls split only where few
# tiles), under the validation layer; a split_k entry for a matmul the word kernel cannot take
# (batched) is refused and that kernel keeps the rules
printf 'api=vulkan kind=conv tile=128x128 tile_k=16 split_k=2 vector=4 prov=heuristic source="word convolutions at 128x128, k-steps of 16, 2 slices"\n' >"$tmp/words.tune"
printf 'api=vulkan kind=matmul split_k=3 prov=heuristic source="every matmul in 3 slices"\n' >>"$tmp/words.tune"
PORTC_TUNE_PATH="$tmp/words.tune" PORTC_VULKAN_VALIDATION=1 expect 0 "word convolutions at 128x128, matmuls in 3 slices" -- \
  "$portc" verify -t vulkan --filter 'conv|cnn|resnet|matmul|mlp|linear|transformer' --examples "$src/examples" --quiet
contains " 0 failed" "128x128 word convolutions and split matmuls match the reference"
if grep -q "^portc vulkan validation:" "$tmp/out"; then echo "FAIL: the validation layer reported problems with word kernels"; fails=$((fails + 1)); fi
PORTC_TUNE_PATH="$tmp/words.tune" expect 0 "explain split matmuls" -- "$portc" explain "$src/examples/mlp.ptg" -t vulkan
contains "tiles 64x64, the reduction in 3 slices added by an epilogue kernel, vectors of 4" "the site table splits a matmul"
PORTC_TUNE_PATH="$tmp/words.tune" expect 0 "explain word convolutions" -- "$portc" explain "$src/examples/cnn.ptg" -t vulkan
contains "tiles 128x128, the reduction in 2 slices added by an epilogue kernel, vectors of 4" "the site table puts a convolution on the word tiles"

# reduce-overhead on vulkan records the launches once and replays them
expect 0 "reduce-overhead on vulkan" -- "$portc" run "$src/examples/layer_norm.ptg" -t vulkan --mode reduce-overhead --seed 1 --set N=5

if [ "$fails" -ne 0 ]; then echo "$fails vulkan CLI checks failed"; exit 1; fi
echo "vulkan CLI checks passed"
