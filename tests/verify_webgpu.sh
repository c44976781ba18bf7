#!/usr/bin/env bash
# verify_webgpu.sh: the conformance suite on the WebGPU target (fused; eager too with PORTC_LONG_TESTS=1), on Mesa 25's
# lavapipe (scripts/deps.sh unpacks it; Dawn refuses Debian 12's), or on the Vulkan driver that
# $VK_DRIVER_FILES names (chromium's SwiftShader: another compiler of the same WGSL, with no
# shader-f16, which the target does not need) with $WEBGPU_ADAPTER, a regex, naming the adapter
# that must be the one available. The target sends the nodes its
# dialect does not write to the CPU, so this also checks that the examples' graphs run whole on
# it, matmuls, convolutions and attention included (`portc explain` names no region and lists
# matmul or conv2d kernels); and that a tensor over the adapter's binding size (lavapipe: 128 MiB)
# is an error that names the limit (where the adapter binds 128 MiB).
# The eager half (every node its own kernel) runs with PORTC_LONG_TESTS=1: fused and eager together
# took 20 minutes on two cores, and the suite's single-op cases already run each kernel alone.
# Fails when the target is unavailable or any case fails.
# Usage: verify_webgpu.sh PORTC_BINARY EXAMPLES_DIR [FILTER]   (FILTER: verify's --filter)
set -u
portc=$1
examples=$2
filter=(${3:+--filter "$3"})
[ "${PORTC_LONG_TESTS:-0}" = 1 ] || filter+=(--no-eager)
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/lib/portc-webgpu/mesa25/lvp_icd.json}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
devices=$("$portc" devices)
if ! grep -Eq "^webgpu    available: ${WEBGPU_ADAPTER:-}" <<<"$devices"; then
  echo "$devices"
  echo "FAIL: the WebGPU target is not available${WEBGPU_ADAPTER:+ on an adapter matching '$WEBGPU_ADAPTER'}; scripts/deps.sh installs its library, Mesa 25's lavapipe and chromium"
  exit 1
fi
for model in mlp cnn transformer; do
  plan=$("$portc" explain "$examples/$model.ptg" -t webgpu)
  if ! grep -q "^graph [a-z]* on webgpu ([^)]*)*: [0-9]* kernels" <<<"$plan" || ! grep -Eq "^kernel [0-9]+: (matmul|conv2d)" <<<"$plan"; then
    echo "$plan"
    echo "FAIL: the $model example does not run whole on the WebGPU target, matmuls and convolutions included"
    exit 1
  fi
done
if grep -q "binding 128 MiB" <<<"$devices"; then
  big=$(mktemp -d)
  trap 'rm -rf "$big"' EXIT
  printf 'graph big\ninput x: f32[40000000]\ny = relu(x)\noutput y\n' >"$big/big.ptg"
  msg=$("$portc" run "$big/big.ptg" -t webgpu --seed 1 2>&1)
  if [ $? -eq 0 ] || ! grep -q "binds at most 134217728 bytes (maxStorageBufferBindingSize)" <<<"$msg"; then
    echo "$msg"
    echo "FAIL: a 160 MB tensor on the WebGPU target is not refused by name"
    exit 1
  fi
fi
"$portc" verify -t webgpu --examples "$examples" --quiet "${filter[@]}"
