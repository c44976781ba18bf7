#!/usr/bin/env bash
# hip_golden_test.sh: the structure of one reduction kernel of the HIP dialect, per AMD
# architecture, read from the code object that Debian's hipcc makes, and for gfx90a and gfx1030
# also hiprtc, the HIP target's own compiler (which aborts for gfx940 in Debian's ROCm 5.2); no
# GPU needed. Softmax over rows of
# 1000 is one kernel of one work group per row, compiled for its architecture's wavefront size
# (gfx90a and gfx940: 64, gfx1030: 32); its three reductions (max, the NaN flag, the sum) cross
# lanes with log2(wave) cross-lane steps each (ds_bpermute or DPP), and nothing goes to scratch
# memory: no private segment, no spills.
# Usage: hip_golden_test.sh COMPILE_ALL_BINARY   (exit 77, a skip, without hipcc or llvm tools)
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
objdump=$(command -v llvm-objdump-15 || command -v llvm-objdump || true)
readelf=$(command -v llvm-readelf-15 || command -v llvm-readelf || true)
if [ -z "$objdump" ] || [ -z "$readelf" ]; then echo "SKIPPED: llvm-objdump or llvm-readelf not found"; exit 77; fi
command -v hipcc >/dev/null || { echo "SKIPPED: hipcc not found"; exit 77; }
printf 'graph softmax_rows\ninput x: f32[64, 1000]\ny = softmax(x)\noutput y\n' >"$tmp/softmax.ptg"
fails=0
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
for spec in gfx90a:64:6:hipcc gfx940:64:6:hipcc gfx1030:32:5:hipcc gfx90a:64:6:hiprtc gfx1030:32:5:hiprtc; do
  IFS=: read -r arch wave steps compiler <<<"$spec"
  "$bin" hip --object "$tmp/softmax.ptg" "$arch" "$tmp/$arch.co" ${compiler/hipcc/} >"$tmp/out" 2>&1
  [ $? -eq 0 ] || { fail "$arch ($compiler): no code object: $(head -3 "$tmp/out")"; continue; }
  arch_label="$arch ($compiler)"
  "$readelf" --notes "$tmp/$arch.co" >"$tmp/notes" 2>&1
  grep -q "\.name: *k0" "$tmp/notes" || fail "$arch: no kernel k0 in the code object"
  grep -q "\.wavefront_size: *$wave\$" "$tmp/notes" || fail "$arch: wavefront size is not $wave: $(grep wavefront_size "$tmp/notes")"
  grep -q "\.private_segment_fixed_size: *0\$" "$tmp/notes" || fail "$arch: the kernel uses scratch memory"
  grep -q "\.vgpr_spill_count: *0\$" "$tmp/notes" || fail "$arch: the kernel spills vector registers"
  "$objdump" -d --mcpu="$arch" "$tmp/$arch.co" >"$tmp/asm" 2>&1
  lanes=$(grep -c -E "ds_bpermute|_dpp|ds_swizzle|permlane" "$tmp/asm")
  [ "$lanes" -ge $((3 * steps)) ] || fail "$arch: $lanes cross-lane operations, want at least $((3 * steps)) (3 reductions of $steps steps)"
  ! grep -q -E "scratch_(load|store)|buffer_(load|store).*off(en|set).*s\[0:3\]" "$tmp/asm" || fail "$arch: scratch accesses in the code"
  echo "$arch_label: wavefront $wave, $lanes cross-lane operations, no scratch"
done
if [ "$fails" -ne 0 ]; then echo "$fails HIP golden checks failed"; exit 1; fi
echo "HIP golden checks passed"
