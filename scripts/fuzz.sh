#!/usr/bin/env bash
# Fuzzes the ONNX importer, the .ptg parser, the .npy and .npz readers and the C API's graph
# builder (with the compiler behind it) with libFuzzer (clang, ASan, UBSan).
#   scripts/fuzz.sh [RUNS] [TARGET...]
# RUNS inputs per target (default 100000: the test command's short run; the graph builder's
# fuzzer, which lowers and renders each graph, gets a tenth of it); TARGETs: onnx ptg npy npz graph
# (default all). Builds build-fuzz/ with clang-14 and -DPORTC_FUZZ=ON, starts each target from its
# seed corpus in tests/fuzz/corpus/ (copied: what the fuzzer adds stays in build-fuzz/corpus-*),
# and fails on any crash, leak, sanitizer report or timeout; the reproducer lands in build-fuzz/.
# Long runs over many cores: scripts/fuzz_long.sh; their figures are in tests/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100000}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx ptg npy npz graph)
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DPORTC_FUZZ=ON -DPORTC_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PORTC_CACHE_DIR="$PWD/build-fuzz/cache"
for target in "${targets[@]}"; do
  corpus=build-fuzz/corpus-$target
  mkdir -p "$corpus"
  n=$runs
  [ "$target" = graph ] && n=$((runs / 10))
  start=$(date +%s)
  (cd build-fuzz && ./bin/fuzz_$target -runs="$n" -max_len=65536 -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 \
    "corpus-$target" "../tests/fuzz/corpus/$target" 2>"fuzz-$target.log") || {
    tail -40 "build-fuzz/fuzz-$target.log"
    echo "fuzz_$target: FAILED (log: build-fuzz/fuzz-$target.log)"
    exit 1
  }
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/fuzz-$target.log" | grep -o '[0-9]*$')
  echo "fuzz_$target: $execs inputs in $(($(date +%s) - start)) s, no crash (corpus $(ls "$corpus" | wc -l) files)"
done
