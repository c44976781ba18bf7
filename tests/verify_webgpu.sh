#!/usr/bin/env bash
# verify_webgpu.sh: the conformance suite on the WebGPU target (fused and eager), on Mesa 25's
# lavapipe (scripts/deps.sh unpacks it; Dawn refuses Debian 12's). The target sends the nodes its
# dialect does not write to the CPU, so this also checks that the examples' graphs run whole on
# it, matmuls, convolutions and attention included (`portc explain` names no region and lists
# matmul or conv2d kernels); and that a tensor over the adapter's binding size (lavapipe: 128 MiB)
# is an error that names the limit.
# Fails when the target is unavailable or any case fails.
# Usage: verify_webgpu.sh PORTC_BINARY EXAMPLES_DIR [FILTER]   (FILTER: verify's --filter)
set -u
portc=$1
examples=$2
filter=(${3:+--filter "$3"})
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/lib/portc-webgpu/mesa25/lvp_icd.json}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
if ! "$portc" devices | grep -q '^webgpu    available'; then
  "$portc" devices
  echo "FAIL: the WebGPU target is not available; scripts/deps.sh installs its library and Mesa 25's lavapipe"
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
big=$(mktemp -d)
trap 'rm -rf "$big"' EXIT
printf 'graph big\ninput x: f32[40000000]\ny = relu(x)\noutput y\n' >"$big/big.ptg"
msg=$("$portc" run "$big/big.ptg" -t webgpu --seed 1 2>&1)
if [ $? -eq 0 ] || ! grep -q "binds at most 134217728 bytes (maxStorageBufferBindingSize)" <<<"$msg"; then
  echo "$msg"
  echo "FAIL: a 160 MB tensor on the WebGPU target is not refused by name"
  exit 1
fi
"$portc" verify -t webgpu --examples "$examples" --quiet "${filter[@]}"
