#!/usr/bin/env bash
# One visit to a GPU machine: builds nothing. Runs, from a build made elsewhere (build/bin/portc
# and build/lib/libportc.so), the steps named on the command line, on the targets in $TARGETS
# (default: "cuda vulkan"):
#   tests     the GPU unit tests (build/bin/portc_tests, Gpu and Cuda suites)
#   verify    `portc verify` (fused and eager) on each target, the targets at once, the table and
#             the JSON; $VERIFY_FILTER (a regex of case names) limits it, $VERIFY_LIMIT (seconds) bounds it
#   profile   Nsight Compute on portc's own matmul in $PROFILE_GRAPH (default the f16
#             matmul+bias+GELU): its details page and its SASS with the stall samples
#   matmul    the CUDA suite's matmul-bearing cases again, once with cuBLASLt forced and once with
#             portc's own kernels forced (PORTC_CUDA_MATMUL), so both paths are checked
#   wgmma     Hopper's matmul (cuda/dialect_wgmma.c, opted into by PORTC_CUDA_KERNELS=wgmma, own
#             kernels forced): explain, the matmul-bearing cases, memcheck and racecheck on the matmul
#             cases, each command under a time limit (a wrong barrier phase hangs), then the f16
#             matmul graphs of bench/gpu/ timed with it, with mma.sync and with cuBLASLt
#   pingpong  Hopper's f16/bf16 matmul in its ping-pong form (cuda/dialect_pingpong.c, forced by a
#             site tune table of 128x128 tiles, own kernels forced), alone and in clusters of 2:
#             explain; the f16 matmul graphs of bench/gpu/ and the f16 transformer timed with each,
#             with the 128x256 form, with cuBLASLt and as the runtime chooses; then, in clusters of
#             2 (PINGPONG_CLUSTER=1: alone), the matmul-bearing cases, memcheck and racecheck on the
#             f16/bf16 matmul cases, each command under a time limit
#   rowpairs  Hopper's f16/bf16 matmul in 128x256 tiles in clusters of 2 on neighbouring row tiles,
#             sharing B's loads (forced by a site tune table, own kernels forced): explain, the f16
#             matmul graphs of bench/gpu/ and the f16 transformer timed twice with it, with the
#             128x256 form alone and with cuBLASLt, then the matmul-bearing cases, memcheck and
#             racecheck on the f16/bf16 matmul cases, each command under a time limit
#   coopwg    Vulkan's f16 matmul on a work group's matrices (vulkan/matmul_wg.c, taken with
#             PORTC_VULKAN_KERNELS=coopattention,coopwg): explain, the matmul-bearing cases on vulkan
#             with a shape forced on every f16 GEMM (so epilogues run on them too), the
#             f16 matmul+bias+GELU and MLP graphs of bench/gpu/ run against the subgroup kernel's
#             outputs, then those, the plain f16 matmul and the transformer example (--autocast f16)
#             timed with the subgroup kernel, the rule's shape and the shapes of $COOPWG_SHAPES
#   clocks    the SM clock and power draw (nvidia-smi, every 50 ms) while the f16 matmul graphs run
#             2000 times with portc's own kernel and with cuBLASLt (PORTC_CUDA_MATMUL), per graph
#   tf32x3    Hopper's matmul in f32 as three TF32 products (PORTC_CUDA_KERNELS=...,tf32x3, own
#             kernels forced): explain, the Cuda unit tests (where build/bin/portc_tests is
#             carried), the matmul-bearing cases and the models fused and eager,
#             memcheck on the f32 matmul cases, racecheck on two of them, each command under a time limit, then
#             matmul_4096_f32 and the f32 transformer example timed with it (its 128x256 tiles, and
#             128x192 and 128x128 forced by a site tune table), with cuBLASLt forced, and as the
#             runtime chooses (each shape timed at load)
#   smoke     the three opt-in tensor-core kernels (wgmma, flash, conv) each on its own conformance
#             cases (fused, two minutes each at most: a hang costs that, not a visit), then the f16
#             matmul 8192, attention and the f16 transformer timed with and without them: the
#             first look before the long steps below
#   flash     attention on tensor cores (cuda/dialect_flash.c, PORTC_CUDA_KERNELS=flash): the
#             attention-bearing cases, memcheck and racecheck on the attention cases, each command
#             under a time limit, then bench/gpu/attention_*_f16 and the transformer example under
#             --autocast f16 timed with it and with the SIMT kernel
#   attsimt   the SIMT attention kernel (codegen/attention.c; CUDA's for f32, Vulkan's for every
#             dtype): the attention-bearing cases per target with it for every float dtype
#             (PORTC_ATTENTION=kernel), memcheck and racecheck on cuda's attention cases with no
#             tensor-core kernel (PORTC_CUDA_KERNELS=none), then bench/gpu/attention_*_f32 and
#             _causal_*_f16, and the f32 transformer example, timed in turn twice: with it
#             (PORTC_ATTENTION=kernel), with $BASELINE's build where set, and decomposed
#   tconv     convolutions on tensor cores (the mma.sync kernel, PORTC_CUDA_KERNELS=conv, channels-last
#             where they fit): the convolution-bearing cases, memcheck on the convolution cases,
#             racecheck on the tensor-core and channels-last ones, then (unless
#             TCONV_ONNX=0) the ONNX CNNs under --autocast f16 checked and timed with it and without
#             (onnx_compare, portc bench)
#   vconv     Vulkan's f16 convolutions on cooperative matrices (channels-last, matmul.c's kernel, taken
#             with PORTC_VULKAN_KERNELS=coopconv): the convolution-bearing cases on vulkan, the conv2d
#             cases again in 3 slices (split-K), then (unless VCONV_ONNX=0) the ONNX CNNs under
#             --autocast f16 checked and timed with them and under each of $VCONV_VARIANTS (by
#             default PORTC_VULKAN_KERNELS=none: NCHW on the SIMT kernel)
#   derived   kernels of parameters alone kept between runs (driver/derived.c) against
#             PORTC_DERIVED=rerun: the ONNX models of an earlier `onnx` step of this visit (else
#             ONNX_MODELS, default resnet18,resnet50, exported under --autocast f16) and the
#             transformer example, under --autocast f16, per target, each timed in turn twice
#   split     the convolution-bearing cases again, per target, with every tiled convolution's
#             reduction in 3 slices (split-K, forced by a site tune table); on cuda also under memcheck
#   sanitize  the CUDA suite (fused) under compute-sanitizer memcheck
#   racecheck compute-sanitizer racecheck on row and tensor-core matmul cases (it is slow)
#   bench     `portc bench` on every graph of bench/gpu/ and the transformer example (f32, and under
#             --autocast f16), per target; $BENCH_ONLY (substrings of graph names, comma-separated)
#             limits the graphs (copy_64M, the torch table's bandwidth, always runs)
#   attention the attention kernel against its decomposition (PORTC_ATTENTION=decomposed: matmul,
#             softmax, matmul) on bench/gpu/attention_*.ptg and the transformer example, per target
#   replay    the transformer example at a small size, default mode against reduce-overhead
#   torch     bench/vs_torch.py: the same graphs in torch eager and torch.compile, and the table;
#             $TORCH_ONLY (substrings of graph names, comma-separated) limits it
#   rounds    portc and torch.compile in turn, $ROUNDS times (default 3), per target, on the graphs
#             of bench/gpu/ named in $ROUNDS_ONLY (comma-separated; default matmul_bias_gelu_8192_f16):
#             one round's ratio moves with the card's clock, so each round's is printed, then their median
#   onnx      bench/onnx_vs_torch.py: models exported there with its PyTorch, checked on each target
#             against PyTorch's outputs (build/bin/onnx_compare) and timed against torch.compile;
#             with $TUNE_BUDGET (seconds), also tuned (portc tune), checked and timed again; with
#             $ONNX_AUTOCAST (f16 or bf16), both sides in mixed precision (portc --autocast, torch.autocast)
#   models    the CI's ONNX test models (tests/onnx/export_models.py and spec_models.py: recurrent,
#             audio, U-Net, decoder-only, video, indexing, ...), exported there, checked on each
#             target against PyTorch's outputs (build/bin/onnx_compare), one module for two batches
#   zoo       tests/onnx/zoo.py: torchvision's classification, segmentation and video models,
#             exported there, checked on each target ($ZOO_JOBS models at once, default 6); every
#             model under 30 M parameters and one of each family (zoo.py --wide), all 92 with ZOO_LONG=1; $ZOO_ONLY
#             (names, comma-separated) limits it
#   train     training steps (bench/train_vs_torch.py: an MLP, the transformer layer and ResNet-18 at
#             batch 32, forward, backward and AdamW, in f32 and under bf16 autocast) checked against
#             the reference on each target (portc verify --model, the transformer at small sizes),
#             then timed by `portc bench` (with each kernel's time alone in $OUT/TARGET/NAME.trace.json)
#             and against torch eager and torch.compile; $TRAIN_ONLY
#             (names, comma-separated) limits it; the suite's grad cases are part of `verify`
#   tune      `portc tune` on every graph of bench/gpu/ and the transformer example, per target,
#             $TUNE_BUDGET seconds each (default 60), into $out/tune_TARGET.txt: measured tables
#   artifact  module files: the transformer example compiled to a .portc per target, run from it
#             with NVRTC and the C compiler hidden and an empty kernel cache, its outputs compared
#             with the graph's own compile; then bench/regional.py's cold compiles of 1, 6 and 24
#             stacked layers on each target
#   webgpu    the WebGPU library (build/bin/webgpu_test, with $PORTC_WEBGPU_LIB, default
#             .devrun/webgpu/libwebgpu_wrapper.so: copy it there from /usr/local/lib/portc-webgpu/ and
#             carry it, 20 MB) on this machine's Vulkan driver: its adapter, limits and features, and
#             a device running WGSL (y = 2x + 1, f32 and f16)
#   copygap   where WebGPU's copy loses time to Vulkan's: build/bin/wgsl_copy (hand-written WGSL
#             copies and portc's own copy kernel, through the target's device code), beside
#             `portc bench bench/gpu/copy_64M.ptg` on vulkan, and on webgpu after 3 to 20000 warm-up runs
#   shapes    every shape the tuner tries for the f16 matmul graphs of bench/gpu/ (matmul_8192_f16,
#             matmul_bias_gelu_8192_f16, mlp_8192_f16), per target: `portc tune` with each candidate's
#             time logged (PORTC_LOG=tune), $TUNE_BUDGET seconds a graph (default 60); the times
#             are the table, the tuned entries go to $out/shapes_TARGET.txt
#   ab        this build against another one in $BASELINE (its bin/portc and lib/): every graph of
#             bench/gpu/ and the transformer example, per target, each timed three times by each
#             build in turn (medians of 30 runs); the table gives the best of each and their ratio;
#             $AB_ONLY (substrings of graph names, comma-separated) limits the graphs
# Logs and JSON go to $OUT (or /tmp/portc-visit), and all of them into $OUT/visit.tar.gz as well;
# the last lines printed are the short tables.
# Usage: scripts/gpu_visit.sh [STEP]...   (default: verify bench torch)
set -u
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/portc-visit}
mkdir -p "$out"
export LD_LIBRARY_PATH="$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PORTC_CACHE_DIR=${PORTC_CACHE_DIR:-/tmp/portc-cache}
portc=$PWD/build/bin/portc
# the WebGPU target's library, where the visit carries it (.devrun/webgpu/): TARGETS=webgpu runs on it
if [ -z "${PORTC_WEBGPU_LIB:-}" ] && [ -f .devrun/webgpu/libwebgpu_wrapper.so ]; then
  export PORTC_WEBGPU_LIB=$PWD/.devrun/webgpu/libwebgpu_wrapper.so
fi
targets=${TARGETS:-cuda vulkan}
steps=${*:-verify bench torch}
summary=()
print_summary() { printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"; }
# stopped by a time limit (timeout's SIGTERM), the visit still prints and keeps what it has, once the
# command then running ends
trap 'summary+=("stopped by SIGTERM during the step $step"); print_summary; exit 124' TERM
step=start
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
transformer=(examples/transformer.ptg --set B=16 --set S=512)

"$portc" devices >"$out/devices.txt" 2>&1
# where the Vulkan target does not open, the loader says why
if ! grep -Eq '^vulkan +available' "$out/devices.txt"; then
  VK_LOADER_DEBUG=error,warn,driver "$portc" devices 2>&1 | grep -iE 'error|warn|driver|icd|fail' | head -30 >>"$out/devices.txt"
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >>"$out/devices.txt" 2>&1
cat "$out/devices.txt"
# a target the visit needs that this machine lacks ends it at once (one H100 machine had no working
# Vulkan driver): its steps would only fail case by case, spending the device time
need=" $targets "
[[ " $steps " == *" vconv "* ]] && need+=" vulkan "
for t in $need; do
  if ! grep -Eq "^$t +available" "$out/devices.txt"; then
    echo "gpu_visit.sh: target $t is not available on this machine: $(grep -E "^$t " "$out/devices.txt" | head -1)"
    exit 3
  fi
done

# what the Vulkan driver offers of VK_NV_cooperative_matrix2 (workgroup-scope matrices: the way a
# Vulkan shader could reach Hopper's wgmma), in the short table
coop2=$(grep -m1 -A4 'cooperative matrix 2' "$out/devices.txt" | grep -E 'cooperative matrix 2| x .* -> ' | tr -s ' ' | paste -sd ';' -)
[ -n "$coop2" ] && summary+=("vulkan device:$coop2")

# Hopper's matmul in a form a site tune table forces: the matmul-bearing cases, then memcheck and
# racecheck on the f16/bf16 matmul cases, under the command prefix in the array named $1 (env
# PORTC_TUNE_PATH=... PORTC_CUDA_MATMUL=own timeout N); logs NAME ($2), the form described as $3
hopper_form_checks() {
  local -n run=$1
  "${run[@]}" "$portc" verify -t cuda --examples examples --filter 'matmul|linear|model|fusion|dynamic|grad|transformer|mlp' \
    >"$out/verify_$2.txt" 2>&1
  local rc=$?
  grep -E '^FAIL' "$out/verify_$2.txt" | head -10
  summary+=("verify cuda, $3 (rc $rc): $(tail -1 "$out/verify_$2.txt")")
  for tool in memcheck racecheck; do
    "${run[@]}" "$sanitizer" --tool $tool --error-exitcode 3 "$portc" verify -t cuda --no-eager --filter '^matmul/(f16|bf16)|^fusion/matmul' \
      --quiet >"$out/${tool}_$2.txt" 2>&1
    summary+=("$tool, $3 (rc $?): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/${tool}_$2.txt" | tail -1)")
  done
}

# the fused median, min and max of the last `portc bench --json $out/copygap.json`
copy_ms() {
  python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fused"]; print("median %.3f min %.3f max %.3f ms" % (f["median_s"]*1e3, f["min_s"]*1e3, f["max_s"]*1e3))' \
    "$out/copygap.json" 2>&1 | tail -1
  rm -f "$out/copygap.json"
}

for step in $steps; do
  start=$(date +%s)
  case $step in
  tests)
    build/bin/portc_tests --gtest_filter='Targets/Gpu.*:Target/Cuda.*:Targets/Threads.*' >"$out/tests.txt" 2>&1
    summary+=("tests (rc $?): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests.txt" | tr '\n' ' ')")
    ;;
  verify)
    # the targets at once (they share the GPU; each case's check does not depend on time), each
    # under $VERIFY_LIMIT seconds (default 3000; rc 124 where it ran out)
    pids=()
    for t in $targets; do
      timeout "${VERIFY_LIMIT:-3000}" "$portc" verify -t "$t" --examples examples ${VERIFY_FILTER:+--filter "$VERIFY_FILTER"} \
        --json "$out/verify_$t.json" >"$out/verify_$t.txt" 2>&1 &
      pids+=($!)
    done
    i=0
    for t in $targets; do
      wait "${pids[$i]}"
      rc=$?
      i=$((i + 1))
      grep -E '^FAIL' "$out/verify_$t.txt" | head -20
      summary+=("verify $t (rc $rc, $(($(date +%s) - start)) s):" "$(tail -7 "$out/verify_$t.txt")")
    done
    ;;
  profile)
    # Nsight Compute on the first launch of portc's own matmul in $PROFILE_GRAPH (default
    # matmul_bias_gelu_8192_f16): the details page (stall reasons, pipes) and the SASS with its samples
    g=${PROFILE_GRAPH:-bench/gpu/matmul_bias_gelu_8192_f16.ptg}
    ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    PORTC_CUDA_MATMUL=own timeout 300 "$ncu" --set full --import-source no -k 'regex:^k[0-9]+$' -c 1 -f -o "$out/profile" \
      "$portc" bench "$g" -t cuda --no-eager --iters 1 --warmup 0 >"$out/profile.txt" 2>&1
    rc=$?
    "$ncu" --import "$out/profile.ncu-rep" --page details >"$out/profile_details.txt" 2>&1
    "$ncu" --import "$out/profile.ncu-rep" --page source --print-source sass --csv >"$out/profile_sass.csv" 2>&1
    summary+=("profile $(basename "$g") (rc $rc): $(grep -E 'Duration|Compute \(SM\) Throughput|Issue Slots Busy|Registers Per' "$out/profile_details.txt" | tr -s ' ' | paste -sd ';' -)")
    ;;
  matmul)
    for how in cublaslt own; do
      PORTC_CUDA_MATMUL=$how "$portc" verify -t cuda --examples examples --filter 'matmul|linear|model|fusion|dynamic|grad' \
        >"$out/verify_cuda_$how.txt" 2>&1
      rc=$?
      grep -E '^FAIL' "$out/verify_cuda_$how.txt" | head -10
      summary+=("verify cuda, PORTC_CUDA_MATMUL=$how (rc $rc): $(tail -1 "$out/verify_cuda_$how.txt")")
    done
    ;;
  smoke)
    for how in "wgmma matmul|linear|mlp|transformer" "flash attention|transformer" "conv conv2d|cnn"; do
      read -r kernels filter <<<"$how"
      PORTC_CUDA_KERNELS=$kernels PORTC_CUDA_MATMUL=own timeout 120 "$portc" verify -t cuda --no-eager --examples examples \
        --filter "$filter" >"$out/smoke_$kernels.txt" 2>&1
      rc=$?
      grep -E '^FAIL' "$out/smoke_$kernels.txt" | head -5
      summary+=("smoke $kernels (rc $rc): $(tail -1 "$out/smoke_$kernels.txt")")
    done
    for how in "wgmma own matmul_8192_f16" "none own matmul_8192_f16" "none cublaslt matmul_8192_f16" \
      "flash auto attention_16x8x512x64_f16" "none auto attention_16x8x512x64_f16"; do
      read -r kernels matmul g <<<"$how"
      PORTC_CUDA_KERNELS=$kernels PORTC_CUDA_MATMUL=$matmul timeout 60 "$portc" bench "bench/gpu/$g.ptg" -t cuda --no-eager \
        --iters 30 --warmup 3 >"$out/smoke_bench_${g}_${kernels}_$matmul.txt" 2>&1
      summary+=("$g, kernels=$kernels matmul=$matmul (rc $?): $(awk '/^fused/ {print $5, "ms"}' "$out/smoke_bench_${g}_${kernels}_$matmul.txt")")
    done
    ;;
  wgmma)
    own=(env PORTC_CUDA_KERNELS=wgmma PORTC_CUDA_MATMUL=own timeout 150)
    "${own[@]}" "$portc" explain bench/gpu/matmul_8192_f16.ptg -t cuda >"$out/explain_wgmma.txt" 2>&1
    summary+=("explain with PORTC_CUDA_KERNELS=wgmma (rc $?): $(grep -c 'warpgroup matrix' "$out/explain_wgmma.txt") kernels on Hopper's matmul")
    "${own[@]}" "$portc" verify -t cuda --no-eager --examples examples --filter 'matmul|linear|model|fusion|dynamic|grad' >"$out/verify_wgmma.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_wgmma.txt" | head -10
    summary+=("verify cuda, Hopper's matmul (rc $rc): $(tail -1 "$out/verify_wgmma.txt")")
    for tool in memcheck racecheck; do
      "${own[@]}" "$sanitizer" --tool $tool --error-exitcode 3 "$portc" verify -t cuda --no-eager --examples examples --filter '^matmul/(f16|bf16)|^fusion/matmul' \
        --quiet >"$out/${tool}_wgmma.txt" 2>&1
      summary+=("$tool, Hopper's matmul (rc $?): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/${tool}_wgmma.txt" | tail -1)")
    done
    for g in matmul_8192_f16 matmul_bias_gelu_8192_f16 mlp_8192_f16; do
      line="$g, ms:"
      for how in "wgmma own wgmma" "none own mma.sync" "none cublaslt cuBLASLt"; do
        read -r wg matmul name <<<"$how"
        PORTC_CUDA_KERNELS=$wg PORTC_CUDA_MATMUL=$matmul timeout 300 "$portc" bench "bench/gpu/$g.ptg" -t cuda --no-eager --iters 30 --warmup 3 \
          >"$out/bench_wgmma_${g}_$name.txt" 2>&1
        line+=" $name $(awk '/^fused/ {print $5}' "$out/bench_wgmma_${g}_$name.txt")"
      done
      summary+=("$line")
    done
    ;;
  pingpong)
    for cl in 1 2; do
      for dt in f16 bf16; do
        echo "api=cuda kind=matmul dtype=$dt tile=128x128 stages=6 cluster=$cl prov=heuristic source=\"the ping-pong form\""
      done >"$out/pingpong_table_$cl.txt"
    done
    cp "$out/pingpong_table_${PINGPONG_CLUSTER:-2}.txt" "$out/pingpong_table.txt"
    pp=(env PORTC_TUNE_PATH="$out/pingpong_table.txt" PORTC_CUDA_MATMUL=own timeout 300)
    "${pp[@]}" "$portc" explain bench/gpu/matmul_bias_gelu_8192_f16.ptg -t cuda >"$out/explain_pingpong.txt" 2>&1
    summary+=("explain with the ping-pong table (rc $?): $(grep -c 'ping-pong' "$out/explain_pingpong.txt") kernels in the ping-pong form")
    for g in matmul_8192_f16 matmul_bias_gelu_8192_f16 mlp_8192_f16 transformer; do
      args=("bench/gpu/$g.ptg")
      [ "$g" = transformer ] && args=("${transformer[@]}" --autocast f16)
      line="$g, ms:"
      for how in "$out/pingpong_table_1.txt own ping-pong" "$out/pingpong_table_2.txt own pairs" "/dev/null own 128x256" \
        "/dev/null cublaslt cuBLASLt" "$out/pingpong_table.txt auto chosen"; do
        read -r table matmul name <<<"$how"
        PORTC_TUNE_PATH=$table PORTC_CUDA_MATMUL=$matmul timeout 120 "$portc" bench "${args[@]}" -t cuda --no-eager --iters 30 --warmup 3 \
          >"$out/bench_pingpong_${g}_$name.txt" 2>&1
        line+=" $name $(awk '/^fused/ {print $5}' "$out/bench_pingpong_${g}_$name.txt")"
      done
      summary+=("$line")
    done
    hopper_form_checks pp pingpong "the ping-pong form"
    ;;
  rowpairs)
    # Hopper's 128x256 matmul in clusters of 2 on neighbouring row tiles (forced by a site tune table)
    for dt in f16 bf16; do
      echo "api=cuda kind=matmul dtype=$dt tile=128x256 stages=4 cluster=2 prov=heuristic source=\"128x256 in clusters of 2\""
    done >"$out/rowpairs_table.txt"
    rp=(env PORTC_TUNE_PATH="$out/rowpairs_table.txt" PORTC_CUDA_MATMUL=own timeout 300)
    "${rp[@]}" "$portc" explain bench/gpu/matmul_bias_gelu_8192_f16.ptg -t cuda >"$out/explain_rowpairs.txt" 2>&1
    summary+=("explain with the row-pairs table (rc $?): $(grep -c "sharing B's loads" "$out/explain_rowpairs.txt") kernels in clusters sharing B")
    for g in matmul_8192_f16 matmul_bias_gelu_8192_f16 mlp_8192_f16 transformer; do
      args=("bench/gpu/$g.ptg")
      [ "$g" = transformer ] && args=("${transformer[@]}" --autocast f16)
      line="$g, ms:"
      for round in 1 2; do
        for how in "$out/rowpairs_table.txt own row-pairs" "/dev/null own 128x256" "/dev/null cublaslt cuBLASLt"; do
          read -r table matmul name <<<"$how"
          PORTC_TUNE_PATH=$table PORTC_CUDA_MATMUL=$matmul timeout 120 "$portc" bench "${args[@]}" -t cuda --no-eager --iters 30 --warmup 3 \
            >"$out/bench_rowpairs_${g}_${name}_$round.txt" 2>&1
          line+=" $name $(awk '/^fused/ {print $5}' "$out/bench_rowpairs_${g}_${name}_$round.txt")"
        done
      done
      summary+=("$line")
    done
    hopper_form_checks rp rowpairs "128x256 in clusters of 2"
    ;;
  coopwg)
    # the f16 matmul on a work group's matrices (vulkan/matmul_wg.c, PORTC_VULKAN_KERNELS=...,coopwg);
    # the shapes timed: $COOPWG_SHAPES (TILE:K-STEP:STAGES[:INVOCATIONS[:WG[:UNROLL[:ELEMENTS]]]], invocations
    # 256, wg_matrices 1 (2: tensor loads), unroll 1 and wg_elements 0 (1: an elementwise epilogue on the
    # matrices' elements) by default), each forced on every f16 GEMM by a site tune
    # table, as is $COOPWG_VERIFY_SHAPE for the cases (theirs are small GEMMs) and
    # $COOPWG_LARGE_SHAPE (default 128x256:64:1) for the large graphs' outputs; $COOPWG_KERNELS is PORTC_VULKAN_KERNELS with the work
    # group's matrices (default coopattention,coopwg; add coopwgtensor for tensor loads); $COOPWG_GRAPHS
    # (default matmul_8192_f16 matmul_bias_gelu_8192_f16 mlp_8192_f16 transformer) the graphs timed
    wgk=${COOPWG_KERNELS:-coopattention,coopwg}
    shapes=${COOPWG_SHAPES:-128x256:64:1 128x128:64:1} vspec=${COOPWG_VERIFY_SHAPE:-128x128:32:1}
    wg_table() { # TILE:K-STEP:STAGES[:INVOCATIONS[:WG[:UNROLL[:ELEMENTS]]]] -> the table's path
      local tile tk st th wg un el
      IFS=: read -r tile tk st th wg un el <<<"$1"
      echo "api=vulkan kind=matmul dtype=f16 tile=$tile tile_k=$tk stages=$st threads=${th:-256} wg_matrices=${wg:-1} unroll=${un:-1} wg_elements=${el:-0} prov=heuristic source=\"work group $1\"" \
        >"$out/coopwg_table_${1//:/_}.txt"
      echo "$out/coopwg_table_${1//:/_}.txt"
    }
    for v in $shapes; do wg_table "$v" >/dev/null; done
    vshape=$(wg_table "$vspec")
    large=$(wg_table "${COOPWG_LARGE_SHAPE:-128x256:64:1}")
    PORTC_VULKAN_KERNELS=$wgk PORTC_TUNE_PATH=$large PORTC_LOG=tune timeout 120 "$portc" explain bench/gpu/mlp_8192_f16.ptg -t vulkan \
      >"$out/explain_coopwg.txt" 2>&1
    summary+=("explain with coopwg, 128x256 forced (rc $?): $(grep -c 'whole work group' "$out/explain_coopwg.txt") kernels on a work group's matrices")
    PORTC_VULKAN_KERNELS=$wgk PORTC_TUNE_PATH=$vshape timeout 400 "$portc" verify -t vulkan --examples examples \
      --filter 'matmul|linear|model|fusion|transformer|mlp' >"$out/verify_coopwg.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_coopwg.txt" | head -10
    summary+=("verify vulkan, coopwg, $vspec forced (rc $rc): $(tail -1 "$out/verify_coopwg.txt")")
    for g in matmul_bias_gelu_8192_f16 mlp_8192_f16; do # the large graphs against the subgroup kernel's outputs
      PORTC_VULKAN_KERNELS=coopattention timeout 120 "$portc" run "bench/gpu/$g.ptg" -t vulkan --seed 5 --out "$out/run_${g}_subgroup" >>"$out/run_coopwg.txt" 2>&1
      PORTC_VULKAN_KERNELS=$wgk PORTC_TUNE_PATH=$large timeout 120 "$portc" run "bench/gpu/$g.ptg" -t vulkan --seed 5 --out "$out/run_${g}_wg" \
        >>"$out/run_coopwg.txt" 2>&1
      summary+=("$g, work group (128x256) vs subgroup, rel. difference: $(python3 -c "import numpy as n,sys; a=n.load(sys.argv[1]).astype(n.float64); b=n.load(sys.argv[2]).astype(n.float64); print('%.2e' % (n.linalg.norm(a-b)/n.linalg.norm(a)))" \
        "$out/run_${g}_subgroup/y.npy" "$out/run_${g}_wg/y.npy" 2>&1 | tail -1)")
      rm -rf "$out/run_${g}_subgroup" "$out/run_${g}_wg" # outputs of 16-128 MiB: $OUT's logs come back small
    done
    for g in ${COOPWG_GRAPHS:-matmul_8192_f16 matmul_bias_gelu_8192_f16 mlp_8192_f16 transformer}; do
      args=("bench/gpu/$g.ptg")
      [ "$g" = transformer ] && args=("${transformer[@]}" --autocast f16)
      line="$g, ms:"
      hows=("coopattention|/dev/null|subgroup" "$wgk|/dev/null|wg-rule")
      for v in $shapes; do
        hows+=("$wgk|$out/coopwg_table_${v//:/_}.txt|wg-${v//:/-}")
      done
      for how in "${hows[@]}"; do
        IFS='|' read -r k table name <<<"$how"
        PORTC_VULKAN_KERNELS=$k PORTC_TUNE_PATH=$table timeout 120 "$portc" bench "${args[@]}" -t vulkan --no-eager --iters 30 --warmup 3 \
          >"$out/bench_coopwg_${g}_$name.txt" 2>&1
        line+=" $name $(awk '/^fused/ {print $5}' "$out/bench_coopwg_${g}_$name.txt")"
      done
      summary+=("$line")
    done
    ;;
  clocks)
    # the SM clock and the power each f16 matmul path of the CUDA target runs at: nvidia-smi
    # sampled every 50 ms while `portc bench` runs $CLOCKS_GRAPHS (default matmul_8192_f16 and
    # matmul_bias_gelu_8192_f16) for 2000 runs, with portc's own kernel and with cuBLASLt forced
    for g in ${CLOCKS_GRAPHS:-matmul_8192_f16 matmul_bias_gelu_8192_f16}; do
      for how in own cublaslt; do
        nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader,nounits -lms 50 >"$out/clocks_${g}_$how.csv" 2>&1 &
        smi=$!
        PORTC_CUDA_MATMUL=$how timeout 120 "$portc" bench "bench/gpu/$g.ptg" -t cuda --no-eager --iters 2000 --warmup 100 >"$out/bench_clocks_${g}_$how.txt" 2>&1
        kill $smi 2>/dev/null
        wait $smi 2>/dev/null
        # the samples drawn while the GPU ran (over half the largest power), their median clock and power
        summary+=("$g, $how: $(awk '/^fused/ {print $5}' "$out/bench_clocks_${g}_$how.txt") ms; $(python3 -c '
import sys, statistics as st
rows = [[float(x) for x in l.split(",")] for l in open(sys.argv[1]) if l.count(",") == 2 and "N/A" not in l]
top = max((r[1] for r in rows), default=0)
busy = [r for r in rows if r[1] > top / 2]
print("%d samples busy: SM clock %.0f MHz, power %.0f W, %.0f C at the end" % (len(busy), st.median(r[0] for r in busy), st.median(r[1] for r in busy), busy[-1][2])
      if busy else "no samples")' "$out/clocks_${g}_$how.csv" 2>&1 | tail -1)")
      done
    done
    ;;
  tf32x3)
    t3=(env PORTC_CUDA_KERNELS=wgmma,flash,conv,tf32x3 PORTC_CUDA_MATMUL=own timeout 300)
    "${t3[@]}" "$portc" explain bench/gpu/matmul_4096_f32.ptg -t cuda >"$out/explain_tf32x3.txt" 2>&1
    summary+=("explain with tf32x3 (rc $?): $(grep -c 'three TF32' "$out/explain_tf32x3.txt") kernels on Hopper's f32 matmul")
    if [ -x build/bin/portc_tests ]; then # the parts of a parameter kept between runs
      timeout 300 build/bin/portc_tests --gtest_filter='Target/Cuda.*' >"$out/tests_tf32x3.txt" 2>&1
      summary+=("portc_tests Cuda suite (rc $?): $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests_tf32x3.txt" | tr '\n' ' ')")
    fi
    "${t3[@]}" "$portc" verify -t cuda --examples examples --filter 'matmul|linear|model|fusion|dynamic|grad|transformer|mlp' >"$out/verify_tf32x3.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_tf32x3.txt" | head -10
    summary+=("verify cuda, f32 on Hopper's matmul (rc $rc): $(tail -1 "$out/verify_tf32x3.txt")")
    # racecheck over every f32 matmul case took more than 300 s: it takes the two with partial
    # tiles and several k-steps
    for how in "memcheck ^matmul/f32|^fusion/matmul" "racecheck ^matmul/f32-k-steps|^matmul/f32/\[100"; do
      read -r tool filter <<<"$how"
      "${t3[@]}" "$sanitizer" --tool $tool --error-exitcode 3 "$portc" verify -t cuda --no-eager --filter "$filter" \
        --quiet >"$out/${tool}_tf32x3.txt" 2>&1
      summary+=("$tool, f32 on Hopper's matmul (rc $?): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/${tool}_tf32x3.txt" | tail -1)")
    done
    for bn in 192 128; do # the narrower tiles in more stages, forced by a site tune table
      echo "api=cuda kind=matmul dtype=f32 tile=128x$bn stages=$((bn == 192 ? 3 : 4)) prov=heuristic source=\"f32 matmuls on 128x$bn tiles\"" \
        >"$out/tf32x3_table_$bn.txt"
    done
    for g in bench/gpu/matmul_4096_f32.ptg transformer; do
      args=("$g")
      [ "$g" = transformer ] && args=("${transformer[@]}")
      line="$(basename "$g" .ptg) f32, ms:"
      t3k=wgmma,flash,conv,tf32x3
      for how in "$t3k own - tf32x3" "$t3k own 192 tf32x3-192" "$t3k own 128 tf32x3-128" "wgmma,flash,conv cublaslt - cuBLASLt" "$t3k auto - chosen"; do
        read -r kernels matmul bn name <<<"$how"
        table=/dev/null
        [ "$bn" != - ] && table=$out/tf32x3_table_$bn.txt
        env PORTC_CUDA_KERNELS=$kernels PORTC_CUDA_MATMUL=$matmul PORTC_TUNE_PATH=$table timeout 300 \
          "$portc" bench "${args[@]}" -t cuda --no-eager --iters 30 --warmup 3 >"$out/bench_tf32x3_$(basename "$g" .ptg)_$name.txt" 2>&1
        line+=" $name $(awk '/^fused/ {print $5}' "$out/bench_tf32x3_$(basename "$g" .ptg)_$name.txt")"
      done
      summary+=("$line")
    done
    ;;
  flash)
    fa=(env PORTC_CUDA_KERNELS=flash timeout 150)
    "${fa[@]}" "$portc" verify -t cuda --examples examples --filter 'attention|transformer|model' >"$out/verify_flash.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_flash.txt" | head -10
    summary+=("verify cuda, attention on tensor cores (rc $rc): $(tail -1 "$out/verify_flash.txt")")
    for tool in memcheck racecheck; do
      "${fa[@]}" "$sanitizer" --tool $tool --error-exitcode 3 "$portc" verify -t cuda --no-eager --filter 'attention' --quiet \
        >"$out/${tool}_flash.txt" 2>&1
      summary+=("$tool, attention on tensor cores (rc $?): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/${tool}_flash.txt" | tail -1)")
    done
    for g in bench/gpu/attention_16x8x512x64_f16.ptg bench/gpu/attention_causal_8x8x1024x64_f16.ptg transformer; do
      args=("$g")
      [ "$g" = transformer ] && args=("${transformer[@]}" --autocast f16)
      line="$(basename "$g" .ptg), ms:"
      for on in flash none; do
        PORTC_CUDA_KERNELS=$on timeout 300 "$portc" bench "${args[@]}" -t cuda --no-eager --iters 30 --warmup 3 >"$out/bench_flash_$on.txt" 2>&1
        line+=" $on $(awk '/^fused/ {print $5}' "$out/bench_flash_$on.txt")"
      done
      summary+=("$line")
    done
    ;;
  attsimt)
    for t in $targets; do
      PORTC_ATTENTION=kernel PORTC_CUDA_KERNELS=none timeout 300 "$portc" verify -t "$t" --examples examples \
        --filter 'attention|transformer|model' >"$out/verify_attsimt_$t.txt" 2>&1
      rc=$?
      grep -E '^FAIL' "$out/verify_attsimt_$t.txt" | head -10
      summary+=("verify $t, the SIMT attention kernel for every float dtype (rc $rc): $(tail -1 "$out/verify_attsimt_$t.txt")")
    done
    if [[ " $targets " == *" cuda "* ]]; then
      for tool in memcheck racecheck; do
        PORTC_ATTENTION=kernel PORTC_CUDA_KERNELS=none timeout 300 "$sanitizer" --tool $tool --error-exitcode 3 "$portc" verify -t cuda \
          --no-eager --filter 'attention' --quiet >"$out/${tool}_attsimt.txt" 2>&1
        summary+=("$tool, SIMT attention (rc $?): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/${tool}_attsimt.txt" | tail -1)")
      done
    fi
    for t in $targets; do
      for g in bench/gpu/attention_16x8x512x64_f32.ptg bench/gpu/attention_causal_8x8x1024x64_f16.ptg transformer; do
        args=("$g")
        [ "$g" = transformer ] && args=("${transformer[@]}")
        line="$t $(basename "$g" .ptg), ms:"
        for round in 1 2; do
          for who in new base decomposed; do
            bin=$portc lib=$PWD/build/lib env=(PORTC_CUDA_KERNELS=none PORTC_ATTENTION=kernel)
            [ $who = base ] && { [ -n "${BASELINE:-}" ] || continue; bin=$BASELINE/bin/portc lib=$BASELINE/lib; }
            [ $who = decomposed ] && env=(PORTC_CUDA_KERNELS=none PORTC_ATTENTION=decomposed)
            env "${env[@]}" LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" timeout 300 "$bin" bench "${args[@]}" -t "$t" --no-eager --iters 30 \
              --warmup 3 >"$out/bench_attsimt.txt" 2>&1
            line+=" $who $(awk '/^fused/ {print $5}' "$out/bench_attsimt.txt")"
          done
        done
        summary+=("$line")
      done
    done
    ;;
  tconv)
    tc=(env PORTC_CUDA_KERNELS=conv timeout 150)
    "${tc[@]}" "$portc" verify -t cuda --examples examples --filter 'conv|model|cnn|resnet' >"$out/verify_tconv.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_tconv.txt" | head -10
    summary+=("verify cuda, convolutions on tensor cores (rc $rc): $(tail -1 "$out/verify_tconv.txt")")
    "${tc[@]}" "$sanitizer" --tool memcheck --error-exitcode 3 "$portc" verify -t cuda --no-eager --filter 'conv2d' --quiet >"$out/memcheck_tconv.txt" 2>&1
    summary+=("memcheck, convolutions on tensor cores (rc $?): $(grep -E 'ERROR SUMMARY' "$out/memcheck_tconv.txt" | tail -1)")
    "${tc[@]}" "$sanitizer" --tool racecheck --error-exitcode 3 "$portc" verify -t cuda --no-eager --filter 'conv2d/(channels-last|tensor-core)' \
      --quiet >"$out/racecheck_tconv.txt" 2>&1
    summary+=("racecheck, convolutions on tensor cores (rc $?): $(grep -E 'RACECHECK SUMMARY' "$out/racecheck_tconv.txt" | tail -1)")
    for on in conv none; do
      [ "${TCONV_ONNX:-1}" = 0 ] && break
      PORTC_CUDA_KERNELS=$on ONNX_AUTOCAST=f16 TARGETS=cuda ONNX_MODELS=${ONNX_MODELS:-resnet18,resnet50} OUT=$out/tconv_$on \
        scripts/gpu_visit.sh onnx >"$out/tconv_onnx_$on.txt" 2>&1
      summary+=("onnx under --autocast f16, PORTC_CUDA_KERNELS=$on:" "$(tail -8 "$out/tconv_onnx_$on.txt")")
    done
    ;;
  vconv)
    export PORTC_VULKAN_KERNELS=${PORTC_VULKAN_KERNELS:-coopconv}
    timeout 300 "$portc" verify -t vulkan --examples examples --filter 'conv|cnn|resnet' >"$out/verify_vconv.txt" 2>&1
    rc=$?
    grep -E '^FAIL' "$out/verify_vconv.txt" | head -10
    summary+=("verify vulkan, convolutions on cooperative matrices (rc $rc): $(tail -1 "$out/verify_vconv.txt")")
    echo "api=vulkan kind=conv split_k=3 prov=heuristic source=\"every convolution in 3 slices: checks split-K\"" >"$out/vconv_split.tune"
    PORTC_TUNE_PATH=$out/vconv_split.tune timeout 200 "$portc" verify -t vulkan --no-eager --filter 'conv2d' >"$out/verify_vconv_split.txt" 2>&1
    summary+=("verify vulkan, convolution cases in 3 slices (rc $?): $(tail -1 "$out/verify_vconv_split.txt")")
    [ "${VCONV_ONNX:-1}" = 0 ] && continue
    ONNX_AUTOCAST=f16 TARGETS=vulkan ONNX_MODELS=${ONNX_MODELS:-resnet18,resnet50} OUT=$out/vconv scripts/gpu_visit.sh onnx >"$out/vconv_onnx.txt" 2>&1
    summary+=("onnx under --autocast f16 on vulkan, convolutions on cooperative matrices:" "$(tail -8 "$out/vconv_onnx.txt")")
    # the same models checked and timed again under each of $VCONV_VARIANTS (VAR=VALUE words; by
    # default the NCHW SIMT convolutions: PORTC_VULKAN_KERNELS=none), batch 32
    for d in "$out"/vconv/onnx/*/; do
      m=$(basename "$d")
      for variant in ${VCONV_VARIANTS:-PORTC_VULKAN_KERNELS=none}; do
        log=$out/vconv_${m}_${variant//[^a-zA-Z0-9]/_}.txt
        env "$variant" build/bin/onnx_compare "$d/model.onnx" vulkan --autocast f16 "$d/x_1.npy" "$d/y_1.npy" "$d/x_4.npy" "$d/y_4.npy" >"$log" 2>&1
        rc=$?
        env "$variant" "$portc" bench "$d/model.onnx" -t vulkan --set N=32 --autocast f16 --iters 30 --warmup 3 --no-eager \
          --json "$out/vconv_bench.json" >>"$log" 2>&1
        ms=$(python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["fused"]["median_s"] * 1e3))' "$out/vconv_bench.json" 2>/dev/null)
        summary+=("$m under --autocast f16 on vulkan, $variant: onnx_compare rc $rc, ${ms:-nan} ms")
      done
    done
    PORTC_LOG=shader_stats "$portc" bench "$out/vconv/onnx/resnet50/model.onnx" -t vulkan --set N=32 --autocast f16 --iters 3 --warmup 1 \
      --no-eager >"$out/vconv_shader_stats.txt" 2>&1
    unset PORTC_VULKAN_KERNELS
    ;;
  webgpu)
    export PORTC_WEBGPU_LIB=${PORTC_WEBGPU_LIB:-$PWD/.devrun/webgpu/libwebgpu_wrapper.so}
    for m in vulkan run; do
      build/bin/webgpu_test "$m" >"$out/webgpu_$m.txt" 2>&1
      summary+=("webgpu $m (rc $?): $(grep -E '^(Vulkan adapter|device of|y = |webgpu|FAIL)' "$out/webgpu_$m.txt" | tr '\n' ' ')")
    done
    ;;
  copygap)
    build/bin/wgsl_copy 256 random >"$out/wgsl_copy.txt" 2>&1
    summary+=("wgsl_copy: $(awk 'NR > 1 {printf "%s %s; ", $1, $2}' "$out/wgsl_copy.txt")")
    "$portc" bench bench/gpu/copy_64M.ptg -t vulkan --no-eager --iters 30 --warmup 3 --json "$out/copygap.json" >>"$out/copygap_vulkan.txt" 2>&1
    summary+=("portc bench copy_64M vulkan: $(copy_ms)")
    for runs in 3 1000 5000 20000; do
      "$portc" bench bench/gpu/copy_64M.ptg -t webgpu --no-eager --iters 30 --warmup "$runs" --warmup-s 0 --json "$out/copygap.json" >>"$out/copygap_webgpu.txt" 2>&1
      summary+=("portc bench copy_64M webgpu after $runs warm-up runs: $(copy_ms)")
    done
    ;;
  split)
    for t in $targets; do
      echo "api=$t kind=conv split_k=3 prov=heuristic source=\"every convolution in 3 slices: checks split-K\"" >"$out/split_table_$t.txt"
      PORTC_TUNE_PATH=$out/split_table_$t.txt PORTC_LOG=tune "$portc" explain examples/cnn.ptg -t "$t" >"$out/explain_split_$t.txt" 2>&1
      PORTC_TUNE_PATH=$out/split_table_$t.txt "$portc" verify -t "$t" --examples examples --filter 'conv|model|cnn|resnet' >"$out/verify_split_$t.txt" 2>&1
      rc=$?
      grep -E '^FAIL' "$out/verify_split_$t.txt" | head -10
      summary+=("verify $t, split-K forced (rc $rc, $(grep -c 'slices' "$out/explain_split_$t.txt") split kernels in cnn.ptg): $(tail -1 "$out/verify_split_$t.txt")")
    done
    if [[ " $targets " == *" cuda "* ]]; then
      PORTC_TUNE_PATH=$out/split_table_cuda.txt "$sanitizer" --tool memcheck --error-exitcode 3 "$portc" verify -t cuda --no-eager \
        --examples examples --filter 'conv' --quiet >"$out/memcheck_split.txt" 2>&1
      mrc=$?
      summary+=("memcheck, split-K forced (rc $mrc): $(grep -E 'ERROR SUMMARY|passed' "$out/memcheck_split.txt" | tail -2 | tr '\n' ' ')")
    fi
    ;;
  sanitize)
    "$sanitizer" --tool memcheck --error-exitcode 3 "$portc" verify -t cuda --no-eager --examples examples --quiet \
      >"$out/memcheck.txt" 2>&1
    rc=$?
    summary+=("memcheck (rc $rc, $(($(date +%s) - start)) s): $(grep -E 'ERROR SUMMARY|passed' "$out/memcheck.txt" | tail -2 | tr '\n' ' ')")
    ;;
  racecheck)
    "$sanitizer" --tool racecheck --error-exitcode 3 "$portc" verify -t cuda --no-eager --examples examples --quiet \
      --filter 'softmax/f16|layer_norm/f32|matmul/f16-whole|matmul/bf16' >"$out/racecheck.txt" 2>&1
    rc=$?
    summary+=("racecheck (rc $rc, $(($(date +%s) - start)) s): $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|passed' "$out/racecheck.txt" | tail -2 | tr '\n' ' ')")
    ;;
  bench)
    for t in $targets; do
      mkdir -p "$out/$t"
      for g in bench/gpu/*.ptg; do
        name=$(basename "$g" .ptg)
        [ -n "${BENCH_ONLY:-}" ] && [ "$name" != copy_64M ] && ! grep -qE "${BENCH_ONLY//,/|}" <<<"$name" && continue
        flags=()
        [[ $name == matmul* ]] && flags+=(--no-eager)
        "$portc" bench "$g" -t "$t" --iters 30 --warmup 3 --json "$out/$t/$name.json" "${flags[@]}" >>"$out/bench_$t.txt" 2>&1 ||
          echo "bench $t $name failed: $(tail -1 "$out/bench_$t.txt")"
      done
      "$portc" bench "${transformer[@]}" -t "$t" --iters 30 --warmup 3 --json "$out/$t/transformer.json" >>"$out/bench_$t.txt" 2>&1 ||
        echo "bench $t transformer failed: $(tail -1 "$out/bench_$t.txt")"
      "$portc" bench "${transformer[@]}" --autocast f16 -t "$t" --iters 30 --warmup 3 --json "$out/$t/transformer_autocast_f16.json" \
        >>"$out/bench_$t.txt" 2>&1 || echo "bench $t transformer --autocast f16 failed: $(tail -1 "$out/bench_$t.txt")"
      PORTC_LOG=tune "$portc" explain bench/gpu/matmul_8192_f16.ptg -t "$t" >"$out/explain_matmul_$t.txt" 2>&1
    done
    ;;
  attention)
    printf '%-36s %-7s %10s %10s %7s\n' graph target kernel decomposed ratio >"$out/attention_table.txt"
    for t in $targets; do
      mkdir -p "$out/$t"
      for g in bench/gpu/attention_*.ptg examples/transformer.ptg; do
        name=$(basename "$g" .ptg)
        flags=(--iters 30 --warmup 3 --no-eager)
        [[ $name == transformer ]] && flags+=(--set B=16 --set S=512)
        ms=()
        for mode in kernel decomposed; do
          PORTC_ATTENTION=$mode "$portc" bench "$g" -t "$t" "${flags[@]}" --json "$out/$t/att_${name}_$mode.json" >>"$out/attention_$t.txt" 2>&1 ||
            echo "attention $t $name $mode failed: $(tail -1 "$out/attention_$t.txt")"
          ms+=("$(python3 -c 'import json,sys; print("%.3f" % (json.load(open(sys.argv[1]))["fused"]["median_s"] * 1e3))' \
            "$out/$t/att_${name}_$mode.json" 2>/dev/null || echo nan)")
        done
        printf '%-36s %-7s %10s %10s %7s\n' "$name" "$t" "${ms[0]}" "${ms[1]}" \
          "$(python3 -c 'import sys; print("%.2fx" % (float(sys.argv[2]) / float(sys.argv[1])))' "${ms[@]}" 2>/dev/null)" >>"$out/attention_table.txt"
      done
    done
    summary+=("attention kernel vs decomposition (ms; ratio = decomposed / kernel):" "$(cat "$out/attention_table.txt")")
    ;;
  replay)
    for mode in default reduce-overhead; do
      "$portc" bench examples/transformer.ptg --set B=1 --set S=32 -t cuda --mode "$mode" --iters 200 --no-eager \
        >"$out/replay_$mode.txt" 2>&1
      summary+=("transformer B=1 S=32 on cuda, mode $mode: $(grep -E '^fused' "$out/replay_$mode.txt" | head -1)")
    done
    ;;
  train)
    python3 bench/train_vs_torch.py --write "$out/train"
    for t in $targets; do
      mkdir -p "$out/$t"
      "$portc" verify -t "$t" --model "$out/train/train_transformer.ptg" --set B=2 --set S=16 >"$out/train_verify_$t.txt" 2>&1
      summary+=("train verify $t (rc $?): $(tail -1 "$out/train_verify_$t.txt")")
      for name in train_mlp train_mlp_bf16 train_transformer train_transformer_bf16 train_resnet18 train_resnet18_bf16; do
        [[ -n "${TRAIN_ONLY:-}" && ",$TRAIN_ONLY," != *",$name,"* ]] && continue
        sets=()
        [[ $name == train_transformer* ]] && sets=(--set B=16 --set S=512)
        timeout 300 "$portc" bench "$out/train/$name.ptg" "${sets[@]}" -t "$t" --iters 20 --warmup 3 --no-eager --steps 5 \
          --json "$out/$t/$name.json" --trace "$out/$t/$name.trace.json" >>"$out/train_bench_$t.txt" 2>&1 ||
          summary+=("bench $t $name failed (rc $?): $(tail -1 "$out/train_bench_$t.txt")")
      done
    done
    PYTHONUNBUFFERED=1 python3 bench/train_vs_torch.py "$out" --iters 20 --targets "${targets// /,}" ${TRAIN_ONLY:+--only "$TRAIN_ONLY"} \
      >"$out/train_vs_torch.txt" 2>&1
    summary+=("train vs torch (rc $?):" "$(grep -v Warning "$out/train_vs_torch.txt" | tail -12)")
    ;;
  rounds)
    rd=/tmp/portc-rounds # vs_torch.py's layout: TARGET/NAME.json
    only=${ROUNDS_ONLY:-matmul_bias_gelu_8192_f16}
    for name in ${only//,/ }; do
      for t in $targets; do
        mkdir -p "$rd/$t"
        ratios=()
        for r in $(seq "${ROUNDS:-3}"); do
          "$portc" bench "bench/gpu/$name.ptg" -t "$t" --no-eager --iters 30 --warmup 3 --json "$rd/$t/$name.json" >>"$out/rounds.txt" 2>&1
          row=$(PYTHONUNBUFFERED=1 python3 bench/vs_torch.py "$rd" --iters 30 --targets "$t" --only "$name" 2>>"$out/rounds.txt" | grep "^$name ")
          echo "round $r: $row" >>"$out/rounds.txt"
          ratios+=("$(awk '{print $10}' <<<"$row" | tr -d x)")
        done
        summary+=("rounds $t $name, portc vs torch.compile: ${ratios[*]} (median $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')x)")
      done
    done
    ;;
  torch)
    PYTHONUNBUFFERED=1 python3 bench/vs_torch.py "$out" --iters 30 --targets "${targets// /,}" ${TORCH_ONLY:+--only "$TORCH_ONLY"} \
      >"$out/vs_torch.txt" 2>&1
    summary+=("torch (rc $?):" "$(grep -v Warning "$out/vs_torch.txt" | tail -40)")
    ;;
  models)
    mkdir -p "$out/models"
    python3 tests/onnx/export_models.py "$out/models" >"$out/models_export.txt" 2>&1
    python3 tests/onnx/spec_models.py "$out/models" >>"$out/models_export.txt" 2>&1
    : >"$out/models.txt"
    for dir in "$out"/models/*/; do
      m=$(basename "$dir")
      b=$(ls "$dir" | sed -n 's/^x_\([0-9]*\)\.npy$/\1/p' | sort -n | tr '\n' ' ')
      pairs=()
      for n in $b; do pairs+=("$dir/x_$n.npy" "$dir/y_$n.npy"); done
      for t in $targets; do
        if ! "$portc" devices 2>/dev/null | grep -Eq "^$t +available"; then echo "$m $t unavailable"; continue; fi
        if build/bin/onnx_compare "$dir/model.onnx" "$t" "${pairs[@]}" >>"$out/models.txt" 2>&1; then echo "$m $t PASS"; else echo "$m $t FAIL"; fi
      done
    done >"$out/models_table.txt"
    summary+=("models:" "$(awk '{k=$2" "$3; c[k]++} END {for (k in c) print "  " k ": " c[k]}' "$out/models_table.txt" | sort)" "$(grep FAIL "$out/models_table.txt")")
    ;;
  zoo)
    PYTHONUNBUFFERED=1 python3 tests/onnx/zoo.py build/bin/onnx_compare "$out/zoo" --targets "${targets// /,}" --jobs "${ZOO_JOBS:-6}" \
      $([ -n "${ZOO_LONG:-}" ] && echo --long || echo --wide) ${ZOO_ONLY:+--only "$ZOO_ONLY"} >"$out/zoo.txt" 2>&1
    summary+=("zoo (rc $?):" "$(grep -E '^FAIL|^zoo:' "$out/zoo.txt" | cut -c1-300)")
    rm -rf "$out/zoo"
    ;;
  derived)
    models=$out/onnx
    if ! ls "$models"/*/model.onnx >/dev/null 2>&1; then
      ONNX_AUTOCAST=f16 ONNX_MODELS=${ONNX_MODELS:-resnet18,resnet50} OUT=$out/derived scripts/gpu_visit.sh onnx >"$out/derived_onnx.txt" 2>&1
      models=$out/derived/onnx
    fi
    for t in $targets; do
      for g in "$models"/*/model.onnx examples/transformer.ptg; do
        name=$(basename "$(dirname "$g")")
        flags=(-t "$t" --autocast f16 --iters 30 --warmup 3 --no-eager --json "$out/derived.json")
        if [[ $g == *transformer* ]]; then name=transformer flags+=(--set B=16 --set S=512); else flags+=(--set N=32); fi
        line="$t $name under --autocast f16, ms:"
        for round in 1 2; do
          for variant in PORTC_DERIVED=keep PORTC_DERIVED=rerun; do
            env "$variant" "$portc" bench "$g" "${flags[@]}" >>"$out/derived_$t.txt" 2>&1
            ms=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["fused"]; print("%.3f (%d kept)" % (f["median_s"]*1e3, f.get("derived_kernels", 0)))' "$out/derived.json" 2>/dev/null)
            line+=" ${variant#PORTC_DERIVED=} ${ms:-failed}"
            rm -f "$out/derived.json"
          done
        done
        summary+=("$line")
      done
    done
    ;;
  onnx)
    PYTHONUNBUFFERED=1 python3 bench/onnx_vs_torch.py "$out" --iters 30 --targets "${targets// /,}" ${ONNX_MODELS:+--models "$ONNX_MODELS"} \
      ${TUNE_BUDGET:+--tune "$TUNE_BUDGET"} ${ONNX_AUTOCAST:+--autocast "$ONNX_AUTOCAST"} \
      >"$out/onnx_vs_torch.txt" 2>&1
    summary+=("onnx (rc $?):" "$(grep -E '^\||FAIL|failed|torch ' "$out/onnx_vs_torch.txt" | tail -30)")
    ;;
  tune)
    for t in $targets; do
      for g in bench/gpu/*.ptg examples/transformer.ptg; do
        flags=()
        [[ $g == *transformer* ]] && flags+=(--set B=16 --set S=512)
        "$portc" tune "$g" -t "$t" "${flags[@]}" --budget "${TUNE_BUDGET:-60}" --table "$out/tune_$t.txt" >>"$out/tune_$t.log" 2>&1 ||
          echo "tune $t $g failed: $(tail -1 "$out/tune_$t.log")"
      done
      summary+=("tune $t ($(($(date +%s) - start)) s): $(grep -c prov= "$out/tune_$t.txt") entries")
    done
    ;;
  shapes)
    for t in $targets; do
      for g in bench/gpu/matmul_8192_f16.ptg bench/gpu/matmul_bias_gelu_8192_f16.ptg bench/gpu/mlp_8192_f16.ptg; do
        PORTC_LOG=tune "$portc" tune "$g" -t "$t" --budget "${TUNE_BUDGET:-60}" --table "$out/shapes_$t.txt" >>"$out/shapes_$t.log" 2>&1 ||
          echo "shapes $t $g failed: $(tail -1 "$out/shapes_$t.log")"
      done
      summary+=("shapes $t, us per kernel:" "$(grep -E ': (the default|tile=|threads=|tile_k=)[^:]*: [0-9.]+ us' "$out/shapes_$t.log" | sed 's/.*kind=matmul \(dtype=[a-z0-9]*\).* \(m=[0-9]* n=[0-9]* k=[0-9]*\): /\1 \2: /')")
    done
    ;;
  ab)
    base=${BASELINE:?set BASELINE to the other build}
    ab=/tmp/portc-ab # many small JSON files: kept out of $out, which returns few files
    mkdir -p "$ab"
    for t in $targets; do
      for g in bench/gpu/*.ptg examples/transformer.ptg; do
        name=$(basename "$g" .ptg)
        if [ -n "${AB_ONLY:-}" ] && ! grep -qF -e "${AB_ONLY//,/$'\n'}" <<<"$name"; then continue; fi
        flags=(--iters 30 --warmup 3 --no-eager)
        [[ $name == transformer ]] && flags+=(--set B=16 --set S=512)
        for round in 1 2 3; do
          for who in base new; do
            bin=$portc lib=$PWD/build/lib
            [ $who = base ] && bin=$base/bin/portc lib=$base/lib
            LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH}" "$bin" bench "$g" -t "$t" "${flags[@]}" --json "$ab/ab_${t}_${name}_${who}_$round.json" \
              >>"$out/ab_$t.txt" 2>&1 || echo "ab: $who $t $name failed: $(tail -1 "$out/ab_$t.txt")"
          done
        done
      done
    done
    python3 scripts/ab_table.py "$ab" >"$out/ab_table.txt"
    tar czf "$out/ab_json.tar.gz" -C "$ab" .
    summary+=("A/B against $base:" "$(cat "$out/ab_table.txt")")
    ;;
  artifact)
    for t in $targets; do
      mf=$out/enc_$t.portc empty=$(mktemp -d)
      "$portc" compile examples/transformer.ptg -t "$t" -o "$mf" --set B=2 --set S=64 >"$out/artifact_$t.txt" 2>&1
      rc=$?
      "$portc" run examples/transformer.ptg -t "$t" --set B=2 --set S=64 --seed 5 --out "$out/art_graph_$t" >>"$out/artifact_$t.txt" 2>&1
      PORTC_NVRTC=/nonexistent/libnvrtc.so PORTC_CC=/nonexistent/cc PORTC_CACHE_DIR=$empty \
        "$portc" run "$mf" -t "$t" --set B=2 --set S=64 --seed 5 --out "$out/art_file_$t" >>"$out/artifact_$t.txt" 2>&1
      frc=$?
      built=$(ls "$empty" | grep -cE '\.(so|spv|cubin|hsaco)$')
      err=$(python3 -c "import numpy as n,sys; a=n.load(sys.argv[1]); b=n.load(sys.argv[2]); print('%.2e' % (n.linalg.norm(a-b)/n.linalg.norm(a)))" \
        "$out/art_graph_$t/y.npy" "$out/art_file_$t/y.npy" 2>&1 | tail -1)
      summary+=("module file $t: compile rc $rc, $(stat -c %s "$mf" 2>/dev/null) bytes; run with no compiler rc $frc, $built kernels built, rel. difference to the graph's run $err")
      rm -rf "$empty"
    done
    python3 bench/regional.py "$portc" $targets >"$out/regional.txt" 2>&1
    summary+=("$(cat "$out/regional.txt")")
    ;;
  *) echo "unknown step $step (tests, verify, profile, matmul, split, sanitize, racecheck, bench, replay, torch, models, onnx, tune, artifact, ab)"; exit 2 ;;
  esac
done
print_summary
tar czf /tmp/portc-visit.tar.gz -C "$out" . && mv /tmp/portc-visit.tar.gz "$out/visit.tar.gz"
