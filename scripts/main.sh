#!/usr/bin/env bash
# The main job: install what is missing, build, run `portc verify` on the devices present (the
# CPU, and Vulkan: a GPU, or Mesa's software driver without one), then a short demo: what the
# compiler makes of a transformer layer, a run on the CPU and Vulkan targets, a benchmark of
# fused against eager, and a ResNet-18 exported by PyTorch, imported and checked against it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
portc=build/bin/portc
echo "== devices"
$portc devices
echo "== conformance"
$portc verify --examples examples --quiet
echo "== demo: the fusion groups of a transformer encoder layer"
$portc explain examples/transformer.ptg --set B=2 --set S=16 | grep -E '^(graph|kernel|  fuses|total)'
echo "== demo: run it on the CPU and Vulkan targets and on the float64 reference"
$portc run examples/transformer.ptg -t cpu --seed 1 --set B=2 --set S=16
$portc run examples/transformer.ptg -t vulkan --seed 1 --set B=2 --set S=16
$portc run examples/transformer.ptg -t ref --seed 1 --set B=2 --set S=16
echo "== demo: softmax over 8192 x 4096, fused against eager"
$portc bench bench/softmax.ptg --iters 10
$portc bench examples/softmax.ptg -t vulkan --set N=512 --iters 10
echo "== demo: ResNet-18 exported by PyTorch to ONNX (random weights, dynamic batch), imported"
onnx_dir=$(mktemp -d)
trap 'rm -rf "$onnx_dir"' EXIT
/usr/bin/python3 tests/onnx/export_models.py "$onnx_dir" resnet18 2>/dev/null
$portc explain "$onnx_dir/resnet18/model.onnx" -t vulkan --set N=2 | grep -E '^(graph|kernel [0-3]:|  fuses)' | head -9
$portc verify --model "$onnx_dir/resnet18/model.onnx" --set N=2 --no-eager --quiet | tail -1
build/bin/onnx_compare "$onnx_dir/resnet18/model.onnx" vulkan "$onnx_dir/resnet18/x_1.npy" "$onnx_dir/resnet18/y_1.npy" \
  "$onnx_dir/resnet18/x_3.npy" "$onnx_dir/resnet18/y_3.npy" | sed "s|$onnx_dir/||g"
echo "== examples/hello.c"
build/bin/hello
