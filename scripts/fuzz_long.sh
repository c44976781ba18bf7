#!/usr/bin/env bash
# The long fuzzing runs, off CI: TOTAL inputs per target spread over JOBS processes (each with
# its own seed and a copy of the corpus), on fuzzers already built by scripts/fuzz.sh.
#   scripts/fuzz_long.sh [TOTAL] [JOBS] [TARGET...]      defaults: 10000000, nproc, all five
# BUILD=DIR takes the fuzzers from DIR/bin (default build-fuzz); OUT=DIR keeps the logs there;
# SEED0=K starts the seeds at K+1 (default 0), so a run split over several sessions does not
# repeat itself.
# Prints, per target, the inputs run, the seconds, and how many inputs that crash, leak, time out or
# run out of memory were found (each kept as OUT/TARGET-JOB-KIND-HASH).
set -uo pipefail
cd "$(dirname "$0")/.."
total=${1:-10000000}
jobs=${2:-$(nproc)}
shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(onnx ptg npy npz graph)
build=${BUILD:-build-fuzz}
out=${OUT:-$build/long}
mkdir -p "$out"
export ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export PORTC_CACHE_DIR="$out/cache"
status=0
for target in "${targets[@]}"; do
  start=$(date +%s)
  pids=()
  for j in $(seq "$jobs"); do
    mkdir -p "$out/corpus-$target-$j"
    "$build/bin/fuzz_$target" -runs=$((total / jobs)) -seed=$((${SEED0:-0} + j)) -max_len=65536 -rss_limit_mb=4096 -timeout=30 \
      -print_final_stats=1 -artifact_prefix="$out/$target-$j-" "$out/corpus-$target-$j" "tests/fuzz/corpus/$target" \
      >"$out/$target-$j.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  # a process that found something left an input behind (crash-, leak-, timeout-, oom-); one
  # stopped by a signal (Ctrl-C, timeout) did not
  crashed=$(ls "$out" | grep -c "^$target-[0-9]*-")
  runs=$(cat "$out/$target"-*.log | grep -o 'stat::number_of_executed_units: *[0-9]*' | grep -o '[0-9]*$' | awk '{s += $1} END {print s + 0}')
  echo "fuzz_$target: ${runs:-0} inputs in $(($(date +%s) - start)) s over $jobs processes, $crashed inputs found that crash, leak, time out or run out of memory"
  [ "$crashed" -eq 0 ] || status=1
done
exit $status
