#!/usr/bin/env bash
# cache_stress_test.sh PORTC SRC: the kernel cache under kill -9 and under many processes at once.
# Compiles killed at random points are followed by a rerun that must give the right output and
# leave nothing behind; 8 and then 32 processes start together on one empty cache and must all
# give the same output as a run on a cache of its own, leaving only whole entries.
portc=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$src/tests/cli_lib.sh"
graph="$src/examples/layer_norm.ptg"
args=(-t cpu --eager --seed 5 --set N=3)

PORTC_CACHE_DIR="$tmp/own" expect 0 "the reference run" -- "$portc" run "$graph" "${args[@]}" --out "$tmp/want"
export PORTC_CACHE_DIR="$tmp/cache"

# only whole entries (32 hex digits, a dot, an extension) and nothing a process leaves mid-way
only_entries() {
  local odd
  odd=$(ls -A "$PORTC_CACHE_DIR" | grep -Ev '^[0-9a-f]{32}\.[a-z0-9]+$')
  [ -z "$odd" ] || { echo "FAIL: $1: left in the cache: $odd"; fails=$((fails + 1)); }
}

# kill -9 at random points of a cold compile, then a rerun
RANDOM=7
for round in $(seq 12); do
  rm -rf "$PORTC_CACHE_DIR"
  "$portc" run "$graph" "${args[@]}" --out "$tmp/killed" >/dev/null 2>&1 &
  pid=$!
  sleep "0.$(printf '%03d' $((RANDOM % 600)))"
  kill -9 "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  rm -rf "$tmp/again"
  expect 0 "the rerun after kill -9 (round $round)" -- "$portc" run "$graph" "${args[@]}" --out "$tmp/again"
  cmp -s "$tmp/want/y.npy" "$tmp/again/y.npy" || { echo "FAIL: round $round: the rerun's output differs"; fails=$((fails + 1)); }
  only_entries "after kill -9 and a rerun (round $round)"
done

# 8, then 32 processes on one empty cache
for n in 8 32; do
  rm -rf "$PORTC_CACHE_DIR" "$tmp"/p*
  pids=()
  for i in $(seq "$n"); do
    "$portc" run "$graph" "${args[@]}" --out "$tmp/p$i" >"$tmp/p$i.log" 2>&1 &
    pids+=($!)
  done
  failed=0
  for i in $(seq "$n"); do
    wait "${pids[$((i - 1))]}" || { failed=$((failed + 1)); sed 's/^/  | /' "$tmp/p$i.log"; }
    cmp -s "$tmp/want/y.npy" "$tmp/p$i/y.npy" || failed=$((failed + 1))
  done
  [ "$failed" -eq 0 ] || { echo "FAIL: $n processes on one cache: $failed failed or differ"; fails=$((fails + 1)); }
  only_entries "$n processes"
  echo "$n processes on one empty cache: $((n - failed)) right"
done

[ "$fails" -eq 0 ] && echo "cache stress: all checks passed"
exit $((fails > 0))
