#!/usr/bin/env bash
# hip_cli_test.sh: the HIP target through the portc command on a machine without an AMD GPU (as in
# CI, where the HIP runtime library is installed for hiprtc), in fresh processes: HIP is listed
# unavailable with the reason, a run asks for it by name and is told why, verify counts its cases
# as skipped, and the CPU is unaffected; without the runtime library, the message says to install
# ROCm.
# Usage: hip_cli_test.sh PORTC_BINARY SOURCE_DIR
set -u
portc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PORTC_CACHE_DIR="$tmp/cache"
. "$(dirname "$0")/cli_lib.sh"

# no runtime library
PORTC_HIP_RUNTIME=/nonexistent/libamdhip64.so expect 0 "devices without the HIP runtime" -- "$portc" devices
contains "hip       not available: PORTC_HIP_RUNTIME=/nonexistent/libamdhip64.so cannot be opened" "reason for no HIP runtime"
contains "cpu       available" "cpu still listed"

# the machine as it is: no AMD GPU here
if ! ls /dev/kfd >/dev/null 2>&1; then
  expect 0 "devices without an AMD GPU" -- "$portc" devices
  contains "hip       not available:" "hip listed as unavailable"
  contains '{"arch": "gfx90a", "family": "CDNA2"' "the tune table is listed without a device"
  contains '"wavefront": 32, "lds_bytes": 65536, "compute_units": 80, "provenance": "heuristic"' "RDNA2's entry says it is not measured"
  expect 1 "hip run without an AMD GPU" -- "$portc" run "$src/examples/softmax.ptg" -t hip --seed 1 --set N=3
  contains "target hip is not available:" "hip run message"
  expect 0 "verify counts hip cases as skipped" -- "$portc" verify -t cpu,hip --filter 'unary/neg/f32' --no-eager --examples "$src/examples"
  contains "hip: not available" "verify says why hip is skipped"
  contains "6 passed, 0 failed, 6 skipped" "verify summary with skips"
fi
expect 0 "cpu runs" -- "$portc" run "$src/examples/softmax.ptg" -t cpu --seed 1 --set N=3

if [ "$fails" -ne 0 ]; then echo "$fails hip CLI checks failed"; exit 1; fi
echo "hip CLI checks passed"
