#!/usr/bin/env bash
# Installs the Debian 12 packages portc needs to build and test, only those missing.
# Uses sudo only when not running as root. Sourced by main.sh and test.sh.
#   build and test: gcc g++ make cmake libgtest-dev
#   the Vulkan target: shaderc, glslang and SPIRV-Tools (linked statically), the Vulkan headers,
#   volk (libvulkan-volk-dev: its source is compiled in), and to run it without a GPU: the
#   loader, Mesa's software driver (lavapipe) and the validation layer the tests turn on
#   the kernel cache's keys: xxHash (libxxhash-dev, header only)
#   the install test: pkg-config
#   the HIP target's compile-only tests: Debian's hipcc (with clang and LLVM 15, whose
#   llvm-objdump reads AMD code objects), the ROCm device libraries, and the HIP runtime
#   library, which holds hiprtc
#   the ONNX importer: protoc-c and libprotobuf-c (its parser is generated from libonnx-dev's
#   onnx.proto at build time); its tests export models with Debian's PyTorch (python3-torch,
#   python3-torchvision, python3-onnx) and fuzz the importer with clang's libFuzzer
#   the training example's test: the digits data set of python3-sklearn
set -euo pipefail
need=()
for pkg in gcc g++ make cmake libgtest-dev \
  libshaderc-dev glslang-dev spirv-tools libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers \
  hipcc rocm-device-libs libamdhip64-dev \
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev python3-torch python3-torchvision python3-onnx python3-numpy python3-sklearn \
  clang-14 libclang-rt-14-dev libvulkan-volk-dev libxxhash-dev pkg-config; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "installing: ${need[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
