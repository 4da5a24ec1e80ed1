#!/usr/bin/env bash
# There, on a GPU machine (JAX with CUDA, no TensorFlow), from the repository root, in one
# call: `python -m arena_tf.benchmark gpu` (about 8 minutes), its JSON and tables copied to $OUT.
#
#   here:  tools/device_wheels.sh      (before the call: .whl/ with Keras, and .whl/COMMIT from git)
#   device run, carry [".whl"], timeout_s 600:
#          tools/gpu_benchmark.sh [gpu options, e.g. --parts layers]
#   here:  cp <files_at>/gpu.json docs/results/efficiency/
#          python -m arena_tf.benchmark gpu --report-only    (docs/results/efficiency/gpu.md)
#          git add docs/results/efficiency/gpu.* && git commit
#
# The rows' commit is the one tools/device_wheels.sh read from git (the machine's copy has no
# history). GPU_BENCHMARK_SECONDS (default 540) bounds the whole command; what it wrote by then
# comes back (the JSON is written after every row).
set -uo pipefail
OUT=${OUT:-/tmp/arena_tf_out}
[ -s .whl/COMMIT ] || { echo "error: .whl/COMMIT is missing; expected the commit written by tools/device_wheels.sh; run it here and carry .whl" >&2; exit 2; }
ARENA_TF_COMMIT=$(cat .whl/COMMIT)
export ARENA_TF_COMMIT KERAS_BACKEND=jax PYTHONUNBUFFERED=1
mkdir -p "$OUT"
if ! python3 -c "import keras" 2>/dev/null; then  # the GPU machine's image lacks Keras
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/device.txt"
timeout "${GPU_BENCHMARK_SECONDS:-540}" python3 -m arena_tf.benchmark gpu \
    --output "$OUT/gpu.json" --report "$OUT/gpu.md" "$@" 2>&1 | tee "$OUT/gpu.log" | tail -n 80
ls -l "$OUT"
