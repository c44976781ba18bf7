#!/usr/bin/env bash
# cuda_cli_test.sh: the CUDA target through the portc command on a machine without the driver or
# NVRTC (as in CI), in fresh processes: CUDA is listed unavailable with the reason, a run asks
# for it by name and is told why, verify counts its cases as skipped, and the CPU is unaffected.
# PORTC_CUDA_DRIVER and PORTC_NVRTC stand in for a machine that lacks one of the two.
# Usage: cuda_cli_test.sh PORTC_BINARY SOURCE_DIR
set -u
portc=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PORTC_CACHE_DIR="$tmp/cache"
. "$(dirname "$0")/cli_lib.sh"

# no driver
export PORTC_CUDA_DRIVER=/nonexistent/libcuda.so.1
expect 0 "devices without the CUDA driver" -- "$portc" devices
contains "cuda      not available: PORTC_CUDA_DRIVER=/nonexistent/libcuda.so.1 cannot be opened" "reason for no CUDA"
contains "the NVIDIA driver is not installed" "what is missing"
contains "cpu       available" "cpu still listed"
expect 1 "cuda run without the driver" -- "$portc" run "$src/examples/softmax.ptg" -t cuda --seed 1 --set N=3
contains "target cuda is not available: PORTC_CUDA_DRIVER" "cuda run message"
expect 0 "cpu runs without the driver" -- "$portc" run "$src/examples/softmax.ptg" -t cpu --seed 1 --set N=3
expect 0 "verify counts cuda cases as skipped" -- "$portc" verify -t cpu,cuda --filter 'unary/neg/f32' --no-eager --examples "$src/examples"
contains "cuda: not available" "verify says why cuda is skipped"
contains "6 passed, 0 failed, 6 skipped" "verify summary with skips"
expect 1 "explicit device of a missing target" -- "$portc" run "$src/examples/softmax.ptg" -t cuda:3 --seed 1 --set N=3
contains "target cuda:3 is not available" "device index in the message"

# a driver library that is not the driver: the missing entry point is named
if [[ -e /usr/lib/x86_64-linux-gnu/libm.so.6 ]]; then
  PORTC_CUDA_DRIVER=/usr/lib/x86_64-linux-gnu/libm.so.6 expect 0 "devices with a wrong driver library" -- "$portc" devices
  contains "cuda      not available: the CUDA driver lacks cuInit" "missing entry point named"
fi
unset PORTC_CUDA_DRIVER

# the machine as it is: whatever it has, `devices` says so on the cuda line
expect 0 "devices" -- "$portc" devices
contains "cuda      " "cuda listed"
if [ "$fails" -ne 0 ]; then echo "$fails cuda CLI checks failed"; exit 1; fi
echo "cuda CLI checks passed"
