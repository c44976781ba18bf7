#!/usr/bin/env bash
# The main job: install what is missing, build, then check and run every example graph on the
# devices present. Today that is the float64 reference evaluator.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
portc=build/bin/portc
declare -A sets=([mlp]="--set N=64" [softmax]="--set N=64" [layer_norm]="--set N=64"
                 [cnn]="--set N=8" [transformer]="--set B=2 --set S=16")
for f in examples/*.ptg; do
  name=$(basename "$f" .ptg)
  echo "== $f"
  $portc check "$f" --quiet
  # shellcheck disable=SC2086
  $portc run "$f" -t ref --seed 1 ${sets[$name]:-}
done
echo "== examples/hello.c"
build/bin/hello
