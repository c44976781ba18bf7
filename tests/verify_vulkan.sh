#!/usr/bin/env bash
# verify_vulkan.sh: the conformance suite on the Vulkan target (fused and eager) with the Khronos
# validation layer on, then its attention and model cases again with the attention kernel for
# every dtype (PORTC_ATTENTION=kernel). Fails when Vulkan is unavailable (the setup installs Mesa's software
# driver), when any case fails, or when the validation layer reports anything.
# Usage: verify_vulkan.sh PORTC_BINARY EXAMPLES_DIR
set -u
portc=$1
examples=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! "$portc" devices | grep -q '^vulkan    available'; then
  "$portc" devices
  echo "FAIL: the Vulkan target is not available; scripts/deps.sh installs mesa-vulkan-drivers"
  exit 1
fi
PORTC_VULKAN_VALIDATION=1 "$portc" verify -t vulkan --examples "$examples" --quiet >"$log" 2>&1
rc=$?
# the attention kernel, which Vulkan takes for f16 and bf16 only, on the f32 cases too
PORTC_ATTENTION=kernel PORTC_VULKAN_VALIDATION=1 "$portc" verify -t vulkan --filter 'attention|model' --examples "$examples" --quiet >>"$log" 2>&1 ||
  rc=1
cat "$log"
if grep -q "validation layer is not installed" "$log"; then echo "FAIL: the validation layer is missing"; exit 1; fi
if grep -q "^portc vulkan validation:" "$log"; then echo "FAIL: the validation layer reported problems"; exit 1; fi
exit $rc
