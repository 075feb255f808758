#!/usr/bin/env bash
# The main job on the embedded default: install what is missing, build, and train
# the default model (Fashion-MNIST ViT, mha, 1 epoch) once, writing
# results/demo_train.h5. Extra arguments go to `attnsweep train`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
mkdir -p results
exec ./build/attnsweep train -o results/demo_train.h5 "$@"
