#!/usr/bin/env bash
# There, on a lent GPU machine, from the repository root: one chunk of the `lra` reproduction suite
# under JAX, then the layer benchmark under JAX; what it produced is copied to $OUT.
#
#   here:  tools/device_wheels.sh                                  (once: .whl/, about 10 MiB)
#   device run, carry [".whl"], timeout_s 600:
#          ARENA_TF_COMMIT=<git rev-parse --short=12 HEAD here> tools/device_round_trip.sh
#   here:  cp <files_at>/results.json docs/reproduction/results.json
#          python -m arena_tf.reproduce report && git add docs/reproduction* && git commit
#
# The run directories stay on the machine while it is warm (runs/ is ignored, so a later call keeps
# them): the next call goes on with --resume where this one paused. A cold machine starts the
# interrupted run again from step 0 (its checkpoints are too large to carry). Settings, through the
# environment: LRA_TASKS (default listops; the generated tasks listops, pathfinder and pathx work
# without TensorFlow, the TFDS ones do not), LRA_MECHANISMS (default all), TRAIN_SECONDS (default
# 420, the training chunk), BENCHMARK (default 1: also the layer benchmark under JAX).
set -uo pipefail
OUT=${OUT:-/tmp/arena_tf_out}
mkdir -p "$OUT"
if ! python3 -c "import keras, grain" 2>/dev/null; then  # the lent machine's image lacks them
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-} KERAS_BACKEND=jax PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 - <<'PY' | tee -a "$OUT/device.txt"
import jax, keras
print("jax", jax.__version__, jax.devices(), "keras", keras.__version__, keras.backend.backend())
PY
args=(lra --tasks "${LRA_TASKS:-listops}" --resume --time_limit "${TRAIN_SECONDS:-420}")
[ -n "${LRA_MECHANISMS:-}" ] && args+=(--mechanisms "$LRA_MECHANISMS")
python3 -m arena_tf.reproduce "${args[@]}" 2>&1 | tee "$OUT/reproduce.log" | grep -v "steps/s, ETA"
python3 -m arena_tf.reproduce lra --list --tasks "${LRA_TASKS:-listops}" > "$OUT/state.txt"
cp docs/reproduction/results.json "$OUT/results.json"
if [ "${BENCHMARK:-1}" = 1 ]; then
    python3 -m arena_tf.benchmark layers --backend jax --peers \
        --output "$OUT/efficiency-jax.json" 2>&1 | tail -40 > "$OUT/benchmark.log"
fi
ls -l "$OUT"
