#!/usr/bin/env bash
# The test command: install what is missing, then build and run the whole suite twice, once as
# released and once under AddressSanitizer + UndefinedBehaviorSanitizer. The suite includes
# `portc verify -t cpu` and `-t vulkan` (every conformance case, fused and eager; Vulkan on Mesa's
# software driver when there is no GPU, with the validation layer on). Both builds share one kernel
# cache, so the second build's conformance run reuses the kernels the first one compiled. Then the
# concurrency tests under ThreadSanitizer, and last a short libFuzzer run of the ONNX importer, the
# .ptg parser, the .npy and .npz readers and the graph builder (scripts/fuzz.sh).
# PORTC_LONG_TESTS=1 adds the long runs: torchvision's model zoo on cpu and vulkan (onnx_zoo), and
# the WebGPU target's conformance suite eager as well as fused (verify_webgpu).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
jobs=$(nproc)
export PORTC_CACHE_DIR="$PWD/build-test-cache"
for variant in release asan; do
  dir=build-test-$variant
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
  [ "$variant" = asan ] && flags+=(-DPORTC_SANITIZE=ON)
  echo "== $variant build ($dir)"
  cmake -S . -B "$dir" "${flags[@]}" >/dev/null
  cmake --build "$dir" -j"$jobs"
  echo "== $variant tests"
  # the compile-all tests spend their time in NVRTC and hipcc, and vulkan_variants in shaderc,
  # which are not instrumented: once is enough (so is cuda_emulate, whose kernels run in a host
  # program built without the sanitizers, switching stacks as coroutines); the install and Python
  # tests load the library into programs built outside (a C consumer, python3) that cannot load an
  # ASan-instrumented library: they run in the release build;
  # the model zoo spends its time in PyTorch, cc and lavapipe, and every operator it imports is also
  # in the smaller models of onnx_models, which run instrumented: it runs in the release build only;
  # so do the WebGPU target's whole suite, whose non-pointwise nodes are verify_cpu's (under the
  # sanitizers, verify_webgpu_fusion runs its fusion and special cases), and its run of the ONNX models
  skip=()
  # torchvision's model zoo (onnx_zoo, about 20 minutes on two cores) runs with PORTC_LONG_TESTS=1
  [ "${PORTC_LONG_TESTS:-0}" = 1 ] || skip=(-E '^onnx_zoo$')
  [ "$variant" = asan ] && skip=(-E '_compile_all$|^cuda_emulate$|^vulkan_variants$|^install$|^python$|^onnx_zoo$|^verify_webgpu$|^verify_webgpu_swiftshader$|^onnx_models_webgpu$')
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions="$PWD/tests/lsan.supp" \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$dir" --output-on-failure -j"$jobs" "${skip[@]}"
done
# the threading contract under ThreadSanitizer: one module and one bindings object shared by
# threads (cpu, and vulkan on lavapipe), threads compiling at once into one cache, readers racing
# a cache writer
echo "== tsan build (build-test-tsan) and the concurrency tests"
cmake -S . -B build-test-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPORTC_TSAN=ON >/dev/null
cmake --build build-test-tsan -j"$jobs" --target portc_tests
PORTC_CACHE_DIR="$PWD/build-test-tsan/cache" TSAN_OPTIONS=halt_on_error=1 \
  build-test-tsan/bin/portc_tests --gtest_filter='*Threads*:CacheFolder.ReadersRacing*:CacheFolder.ThreadsCompiling*'
echo "== fuzz (short)"
scripts/fuzz.sh
