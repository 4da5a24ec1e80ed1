#!/usr/bin/env bash
# On a machine with a GPU and JAX with CUDA (TensorFlow not needed): `python -m arena_tf.benchmark
# gpu` (about 8 minutes), its JSON, tables and log and the device's name written to OUT_DIR
# (default runs/gpu-benchmark; a relative path is taken from the repository root).
#
#   install: pip install -c constraints.txt -e ".[jax]" "jax[cuda12]"  (docs/guide/jax-and-gpu.md;
#            without internet: the wheels of tools/offline_wheels.sh in WHEELS_DIR, default .whl)
#   run:     tools/gpu_benchmark.sh [gpu options, e.g. --parts layers]
#   then, in the checkout you commit from (this one, or another after copying OUT_DIR there):
#            cp OUT_DIR/gpu.json docs/results/efficiency/
#            python -m arena_tf.benchmark gpu --report-only    (docs/results/efficiency/gpu.md)
#            git add docs/results/efficiency/gpu.* && git commit
#
# The rows name ARENA_TF_COMMIT if it is set, else the checkout's commit from git, else
# WHEELS_DIR/COMMIT (a copy without its git history). GPU_BENCHMARK_SECONDS (default 540) bounds the
# whole command; what it wrote by then stays in OUT_DIR (the JSON is written after every row).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT_DIR=${OUT_DIR:-runs/gpu-benchmark}
# shellcheck source=tools/gpu_setup.sh
source tools/gpu_setup.sh
record_commit
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
install_missing_wheels keras  # a Python with JAX but not Keras: WHEELS_DIR's wheels
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT_DIR/device.txt"
timeout "${GPU_BENCHMARK_SECONDS:-540}" python3 -m arena_tf.benchmark gpu \
    --output "$OUT_DIR/gpu.json" --report "$OUT_DIR/gpu.md" "$@" 2>&1 | tee "$OUT_DIR/gpu.log" \
    | tail -n 80
ls -l "$OUT_DIR"
