#!/usr/bin/env bash
# The ONNX importer against PyTorch: Debian's python3-torch exports the models of
# tests/onnx/export_models.py (ResNet-18, MobileNetV2/V3, SqueezeNet, LR-ASPP, a TransformerEncoderLayer,
# an MLP, and models of Resize, norms, recurrent layers, a U-Net decoder, an audio classifier, a
# decoder-only transformer, 3-D convolutions, indexing ops and einsum) with random weights and a
# dynamic batch (opset 17, and the MLP and transformer again at opset 13), with PyTorch's outputs for
# batches 1 and 3; spec_models.py adds nodes with attributes PyTorch never writes, against numpy.
# Each model is compiled once per target (CPU, and Vulkan with the validation layer: lavapipe
# without a GPU) and that module runs both batches, within the bounds of TOLERANCES.md. Then what
# explain must show, `portc convert` and its .npz, external data, and the malformed and
# unsupported files of make_bad_models.py.
# ONNX_TARGETS names other targets for the comparisons (default "cpu vulkan"); with ONNX_MODELS_ONLY=1
# the comparisons are all it does (the WebGPU target's run: onnx_models_webgpu).
# usage: onnx_test.sh PORTC ONNX_COMPARE SOURCE_DIR
set -uo pipefail
portc=$1 compare=$2 src=$3
targets=${ONNX_TARGETS:-cpu vulkan}
py=/usr/bin/python3 # Debian's python, which sees python3-torch, python3-torchvision and python3-onnx
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect() { # expect NAME PATTERN TEXT: TEXT matches the extended regex PATTERN
  if grep -Eq -- "$2" <<<"$3"; then echo "ok: $1"; else fail "$1: expected /$2/ in:"; echo "$3" | head -20; fi
}

if ! $py -c 'import torch, torchvision, onnx, numpy' 2>/dev/null; then
  echo "FAIL: $py cannot import torch, torchvision, onnx and numpy: run scripts/deps.sh"
  exit 1
fi
$py "$src/tests/onnx/export_models.py" "$work/m17" 2>&1 | grep -v -i warn || fail "export at opset 17"
$py "$src/tests/onnx/export_models.py" --opset 13 "$work/m13" mlp transformer 2>&1 | grep -v -i warn || fail "export at opset 13"
$py "$src/tests/onnx/spec_models.py" "$work/spec" || fail "spec_models.py"

export PORTC_VULKAN_VALIDATION=1
for dir in "$work"/m17/* "$work"/m13/* "$work"/spec/*; do
  for target in $targets; do
    out=$("$compare" "$dir/model.onnx" "$target" "$dir/x_1.npy" "$dir/y_1.npy" "$dir/x_3.npy" "$dir/y_3.npy" 2>&1)
    rc=$?
    echo "${out//$work\//}"
    [ $rc -eq 0 ] || fail "$(basename "$(dirname "$dir")")/$(basename "$dir") on $target"
    grep -q "Validation" <<<"$out" && fail "$(basename "$dir") on $target: the validation layer reported problems"
  done
done
# mixed precision (--autocast): the models' autocast copies against PyTorch's float32 outputs, under
# TOLERANCES.md's autocast bounds
for m in mlp:f16 transformer:bf16 squeezenet:f16; do
  for target in $targets; do
    out=$("$compare" "$work/m17/${m%%:*}/model.onnx" "$target" --autocast "${m##*:}" "$work/m17/${m%%:*}/x_1.npy" "$work/m17/${m%%:*}/y_1.npy" 2>&1)
    rc=$?
    echo "${out//$work\//}"
    [ $rc -eq 0 ] || fail "${m%%:*} under autocast ${m##*:} on $target"
    expect "${m%%:*} under autocast ${m##*:} on $target converts its contractions" 'autocast (f16|bf16): [1-9][0-9]* matmul' "$out"
    grep -q "Validation" <<<"$out" && fail "${m%%:*} under autocast on $target: the validation layer reported problems"
  done
done
unset PORTC_VULKAN_VALIDATION
if [ "${ONNX_MODELS_ONLY:-0}" = 1 ]; then
  echo "$fails failed"
  [ $fails -eq 0 ]
  exit
fi

# explain: ResNet-18's conv + (folded) batchnorm + relu is one kernel, and the residual add sits in
# the second conv's epilogue; the transformer's softmax and each layer_norm are one row kernel
r18=$("$portc" explain "$work/m17/resnet18/model.onnx" -t cpu --set N=2)
first=$(awk '/^kernel 0:/,/^$/' <<<"$r18")
expect "resnet18 kernel 0 is conv+bn+relu" 'conv2d over' "$first"
expect "resnet18 kernel 0 fuses the relu" 'fuses: .*\(conv2d\).*\(relu\)' "$first"
expect "resnet18 kernel 0 reads the weights with bn1 folded in" 'reads: .*conv1\.weight\.bn_folded, bn1\.bias\.bn_folded' "$first"
expect "resnet18 residual add in a conv epilogue" 'fuses: .*layer1_layer1\.0_conv2_Conv_output_0\(conv2d\).*\(relu\).*layer1_layer1\.0_Add_output_0\(add\)' "$r18"
[ "$(grep -c 'BatchNormalization' <<<"$r18")" = 0 ] || fail "resnet18: a BatchNormalization was not folded"
tr=$("$portc" explain "$work/m17/transformer/model.onnx" -t cpu --set N=2)
expect "transformer softmax is one row kernel" 'row reduction .*\(max, then sum\)' "$tr"
fuses=$(grep -E '^  fuses:' <<<"$tr")
n1=$(grep -c 'norm1_LayerNormalization' <<<"$fuses")
n2=$(grep -c 'y\.mean.*y\.var\|y\.var.*y\.mean' <<<"$fuses")
[ "$n1" = 1 ] && echo "ok: transformer norm1 is one kernel" || fail "transformer norm1 spans $n1 kernels"
[ "$n2" = 1 ] && [ "$(grep -c 'y\.' <<<"$fuses")" = 1 ] && echo "ok: transformer norm2 is one kernel" || fail "transformer norm2 spans kernels"
[ "$(grep -E '^  fuses:' <<<"$tr" | grep -c 'Softmax')" = 1 ] && echo "ok: transformer softmax in one kernel" || fail "transformer softmax spans kernels"
# with the attention kernel (vulkan's, taken for f32 too) the exported MatMul, Div, Softmax, MatMul are one attention
trv=$(PORTC_ATTENTION=kernel "$portc" explain "$work/m17/transformer/model.onnx" -t vulkan --set N=2 2>&1)
expect "transformer attention formed on vulkan" '^kernel [0-9]+: attention \(online softmax' "$trv"
[ "$(grep -c 'row reduction' <<<"$trv")" = 2 ] && echo "ok: vulkan's transformer: only the two layer_norms are row kernels" ||
  fail "vulkan's transformer: $(grep -c 'row reduction' <<<"$trv") row kernels (a softmax left over?)"
dec=$(PORTC_ATTENTION=kernel "$portc" explain "$work/m17/decoder_only/model.onnx" -t vulkan --set N=2 2>&1)
[ "$(grep -c '^kernel [0-9]*: attention' <<<"$dec")" = 2 ] && echo "ok: decoder_only: an attention kernel per layer (causal mask as a mask input)" ||
  fail "decoder_only: $(grep -c '^kernel [0-9]*: attention' <<<"$dec") attention kernels, not 2"

# recurrent ops are unrolled: each step's states are named for the node, the direction and the step
lstm=$("$portc" explain "$work/m17/lstm/model.onnx" -t cpu --set N=2)
expect "lstm unrolled forwards" 'LSTM\.t6\.h\(mul\)' "$lstm"
expect "lstm unrolled backwards" 'LSTM\.reverse\.t0\.c\(add\)' "$lstm"

# verify with a model: against the float64 reference, fused and eager
out=$("$portc" verify -t cpu --model "$work/m17/mlp/model.onnx" --model "$work/m17/squeezenet/model.onnx" --set N=2 2>&1)
expect "portc verify --model" '^4 passed, 0 failed, 0 skipped' "$out"

# convert: .ptg + .npz that numpy reads, and the same numbers as the .onnx
mkdir -p "$work/conv"
"$portc" convert "$work/m17/resnet18/model.onnx" -o "$work/conv/r18.ptg" >/dev/null || fail "convert"
$py - "$work/conv/r18.npz" "$work/m17/resnet18/model.onnx" <<'PY' || fail "the .npz does not hold the folded weights"
import sys, numpy as np, onnx
from onnx import numpy_helper
z = np.load(sys.argv[1])
inits = {t.name: numpy_helper.to_array(t) for t in onnx.load(sys.argv[2]).graph.initializer}
assert "conv1.weight.bn_folded" in z.files and z["conv1.weight.bn_folded"].shape == inits["conv1.weight"].shape
assert np.array_equal(z["fc.weight.T"], inits["fc.weight"].T), "fc.weight.T differs from fc.weight transposed"
print(f"ok: {len(z.files)} arrays in the .npz, numpy reads them")
PY
"$portc" run "$work/conv/r18.ptg" -t cpu --input x="$work/m17/resnet18/x_3.npy" --out "$work/conv/a" >/dev/null &&
  "$portc" run "$work/m17/resnet18/model.onnx" -t cpu --input x="$work/m17/resnet18/x_3.npy" --out "$work/conv/b" >/dev/null &&
  cmp -s "$work/conv/a/y.npy" "$work/conv/b/y.npy" && echo "ok: converted .ptg runs to the same bits" || fail "converted .ptg differs from the .onnx"

out=$("$portc" convert "$work/m17/mlp/model.onnx" 2>&1)
[ $? -eq 2 ] && expect "convert without -o is a usage error" 'needs a model and -o OUT.ptg' "$out" || fail "convert without -o: $out"
out=$("$portc" convert "$work/m17/mlp/model.onnx" -o "$work/conv/m.ptg" --weights /tmp/elsewhere.npz 2>&1)
[ $? -eq 2 ] && expect "convert refuses weights in another folder" '--weights must be in the folder of' "$out" || fail "convert --weights elsewhere: $out"
out=$("$portc" convert "$work/m17/mlp/model.onnx" -o "$work/no/such/dir/m.ptg" 2>&1)
[ $? -eq 1 ] && expect "convert into a missing folder fails cleanly" 'cannot create' "$out" || fail "convert into a missing folder: $out"

# external data beside the model
$py - "$work/m17/mlp/model.onnx" "$work/ext/mlp.onnx" <<'PY' || fail "saving with external data"
import os, sys, onnx
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
onnx.save_model(onnx.load(sys.argv[1]), sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True, location="mlp.weights", size_threshold=0)
PY
out=$("$compare" "$work/ext/mlp.onnx" cpu "$work/m17/mlp/x_3.npy" "$work/m17/mlp/y_3.npy" 2>&1) && echo "ok: external data" || fail "external data: $out"
# external data through a link that leads out of the model's folder, or from a FIFO: refused
mkdir -p "$work/ext_link" "$work/ext_fifo"
cp "$work/ext/mlp.onnx" "$work/ext_link/" && cp "$work/ext/mlp.onnx" "$work/ext_fifo/"
cp "$work/ext/mlp.weights" "$work/outside.weights" && ln -sf ../outside.weights "$work/ext_link/mlp.weights"
mkfifo "$work/ext_fifo/mlp.weights"
out=$(timeout 60 "$portc" check "$work/ext_link/mlp.onnx" --quiet 2>&1)
[ $? -eq 1 ] && expect "external data through a link out of the folder is refused" "leaves the model's folder" "$out" || fail "link out: $out"
out=$(timeout 60 "$portc" check "$work/ext_fifo/mlp.onnx" --quiet 2>&1)
[ $? -eq 1 ] && expect "external data from a FIFO is refused" "not a regular file" "$out" || fail "FIFO: $out"

# malformed and unsupported files: one clear message, exit 1, no crash
$py "$src/tests/onnx/make_bad_models.py" "$work/bad" || fail "make_bad_models.py"
check_bad() { # check_bad FILE PATTERN
  local out rc
  out=$("$portc" check "$work/bad/$1" --quiet 2>&1)
  rc=$?
  [ $rc -eq 1 ] || fail "$1: exit code $rc"
  expect "$1 refused" "$2" "$out"
}
check_bad unsupported.onnx '3 nodes use operators portc does not import'
check_bad unsupported.onnx "DFT \(node 'dft_1', opset 17\)"
check_bad unsupported.onnx "Det \(node 'det_2', opset 17\)"
check_bad unsupported.onnx "com\.example::FusedGelu \(node 'custom_3', opset 17\)"
check_bad cycle.onnx "node 'first' \(Add, opset 17\): is part of a cycle"
check_bad missing_initializer.onnx "reads 'w_missing', which no node, graph input or initializer defines"
check_bad negative_reshape.onnx "the new shape's dimension 0 is -5: a size \(at most 2\^48\), 0 or -1"
check_bad huge_reshape.onnx "the new shape's dimension 0 is 4611686018427387904"
check_bad impossible_shape.onnx "node 'reshape_bad' \(Reshape, opset 17\): .*element counts differ"
check_bad absurd_size.onnx "tensor 'big' has more than 2\^34 elements"
check_bad short_initializer.onnx "tensor 'b' declares 4 elements of float \(16 bytes\) but holds 8 bytes"
check_bad old_opset.onnx 'opset 9 is not supported: portc imports opsets 13 to 18'
check_bad tile_dynamic.onnx "node 'tile_dyn' \(Tile, opset 17\): input 'r' \(repeats\) must be known when the model is imported"
check_bad resize_cubic.onnx "node 'resize_cubic' \(Resize, opset 17\): mode 'cubic': portc resizes in nearest and linear modes"
check_bad einsum_ellipsis.onnx "node 'einsum_dots' \(Einsum, opset 17\): equation '\.\.\.i,\.\.\.i->\.\.\.': ellipses are not supported"
check_bad topk_dynamic.onnx "node 'topk_dyn' \(TopK, opset 17\): K \('k'\) is computed at run time, so the output's size would depend on the data"
check_bad nonzero.onnx "node 'nonzero_1' \(NonZero, opset 17\): the size of its output depends on the values of its input \('x'\)"
check_bad lstm_dynamic_steps.onnx "node 'lstm_dyn' \(LSTM, opset 17\): the sequence length is S; it must be known at import"
check_bad gru_sequence_lens.onnx "node 'gru_lens' \(GRU, opset 17\): sequence_lens is computed at run time"
check_bad rnn_activation.onnx "node 'rnn_act' \(RNN, opset 17\): activation 'Softsign'"
check_bad resize_dynamic.onnx "node 'resize_dyn' \(Resize, opset 17\): sizes must be known at import"
check_bad loop_dynamic_trips.onnx "node 'loop_m' \(Loop, opset 17\): its trip count \('m'\) must be known when the model is imported"
check_bad loop_data_condition.onnx "node 'loop_while' \(Loop, opset 17\): its body's condition \('more'\) depends on data"
check_bad scatter_runtime_diagonal.onnx "node 'diagonal' \(ScatterND, opset 17\): indices 'idx' are computed at run time and its tuples are not a box of the data"
check_bad if_data_condition.onnx "node 'if_data' \(If, opset 17\): its condition \('pos'\) depends on data"
check_bad loop_unsupported_body.onnx "1 node uses operators portc does not import:"
check_bad loop_unsupported_body.onnx "DFT \(node 'dft_in_body', opset 17\)"
check_bad sequence_output.onnx "graph output 'y' is a sequence of 2 tensors"
check_bad truncated.onnx 'not an ONNX model: the protobuf message is malformed or truncated'
check_bad wrong_field_type.onnx 'not an ONNX model'
check_bad not_onnx.onnx 'not an ONNX model'
check_bad external_escape.onnx "external data location '\.\./\.\./etc/passwd' leaves the model's folder"
out=$("$portc" check "$work/bad/good.onnx" --quiet 2>&1) && expect "good.onnx imports" '# ok' "$out" || fail "good.onnx: $out"

echo "$fails failure(s)"
[ $fails -eq 0 ]
