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
#   the WebGPU target's web bundles: Debian's chromium, whose headless mode runs them on its own
#   SwiftShader (tests/web_bundle_test.py)
#   the WebGPU target's library: Dawn with Tint as npm's bun-webgpu-linux-x64 0.1.7 ships it
#   (libwebgpu_wrapper.so, fetched with curl from the npm registry, checked against its pinned
#   SHA-512), installed with its licences as /usr/local/lib/portc-webgpu/; and a Vulkan driver
#   Dawn takes (it refuses Debian 12's lavapipe): Mesa 25's lavapipe from bookworm-backports,
#   downloaded through a private package list (the system's sources stay as they are) and
#   unpacked into /usr/local/lib/portc-webgpu/mesa25/ with its own ICD file, which only the
#   WebGPU tests name (VK_DRIVER_FILES), so the Vulkan target's tests keep Debian 12's
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
for pkg in gcc g++ make cmake libgtest-dev \
  libshaderc-dev glslang-dev spirv-tools libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers \
  hipcc rocm-device-libs libamdhip64-dev \
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev python3-torch python3-torchvision python3-onnx python3-numpy python3-sklearn \
  clang-14 libclang-rt-14-dev libvulkan-volk-dev libxxhash-dev pkg-config curl ca-certificates chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if ((${#need[@]})); then
  echo "installing: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

webgpu_dir=/usr/local/lib/portc-webgpu
if [ ! -f "$webgpu_dir/libwebgpu_wrapper.so" ]; then
  echo "installing the WebGPU library (bun-webgpu-linux-x64 0.1.7) in $webgpu_dir"
  webgpu_tmp=$(mktemp -d)
  curl -fsSL --retry 3 -o "$webgpu_tmp/package.tgz" https://registry.npmjs.org/bun-webgpu-linux-x64/-/bun-webgpu-linux-x64-0.1.7.tgz
  echo "5043fb519744871f68b6f9197338ecb332fc65596b38300d42f825f82f3cfdb3559b10e8162ef0d5f5b31a2d6c6726a48844e39ad143ab6ff108b85b499c63ab  $webgpu_tmp/package.tgz" |
    sha512sum -c --quiet
  tar -xzf "$webgpu_tmp/package.tgz" -C "$webgpu_tmp"
  $sudo install -d "$webgpu_dir"
  $sudo install -m 644 "$webgpu_tmp/package/LICENSE" "$webgpu_dir/LICENSE.bun-webgpu"
  $sudo install -m 644 "$(dirname "${BASH_SOURCE[0]}")/../webgpu/LICENSE.dawn" "$webgpu_dir/LICENSE.dawn"
  $sudo install -m 755 "$webgpu_tmp/package/libwebgpu_wrapper.so" "$webgpu_dir/libwebgpu_wrapper.so"
  rm -rf "$webgpu_tmp"
fi

mesa_dir=/usr/local/lib/portc-webgpu/mesa25
if [ ! -f "$mesa_dir/lvp_icd.json" ]; then
  echo "installing Mesa 25's lavapipe from bookworm-backports in $mesa_dir"
  bp=$(mktemp -d)
  mkdir -p "$bp/lists/partial" "$bp/cache/archives/partial"
  echo "deb http://deb.debian.org/debian bookworm-backports main" >"$bp/sources.list"
  bp_opts=(-o Dir::Etc::sourcelist="$bp/sources.list" -o Dir::Etc::sourceparts=- -o Dir::State::Lists="$bp/lists" -o Dir::Cache="$bp/cache")
  [ "$(id -u)" -eq 0 ] && bp_opts+=(-o APT::Sandbox::User=root) # the private folder is root's own
  apt-get "${bp_opts[@]}" update -qq
  (cd "$bp" && apt-get "${bp_opts[@]}" download -qq mesa-vulkan-drivers/bookworm-backports 2>/dev/null)
  dpkg -x "$bp"/mesa-vulkan-drivers_*.deb "$bp/x"
  $sudo install -d "$mesa_dir"
  $sudo install -m 644 "$bp/x/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so" "$mesa_dir/libvulkan_lvp.so"
  $sudo install -m 644 "$bp/x/usr/share/doc/mesa-vulkan-drivers/copyright" "$mesa_dir/copyright"
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s/libvulkan_lvp.so", "api_version": "1.4.305"}}\n' "$mesa_dir" >"$bp/lvp_icd.json"
  $sudo install -m 644 "$bp/lvp_icd.json" "$mesa_dir/lvp_icd.json"
  rm -rf "$bp"
fi
