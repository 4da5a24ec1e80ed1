#!/usr/bin/env bash
# On a machine with a GPU and JAX with CUDA (TensorFlow not needed): the serving bench's four
# Pentathlon scenarios and the server scenario on the XLA runtime (--device gpu) in fp32, bf16 and
# fp16, for the demo's model and an LRA-size ListOps model (configs/tasks/listops.yaml: 6 layers of
# 512, here at 2,000 tokens, untrained: tools/lra_size_run.py); the rows (results.md, .csv, .jsonl,
# charts) and the device's name go to OUT_DIR (default runs/serving-gpu, a relative path taken from
# the repository root).
#
#   first, where TensorFlow is installed (make run's install):
#            python -m arena_tf.demo                                 (runs/demo-listops-linformer)
#            python export/to_stablehlo.py runs/demo-listops-linformer
#   if the GPU machine is another one, copy runs/demo-listops-linformer and data/listops-tiny-20k
#   into its checkout (and, without internet there, the wheels of tools/offline_wheels.sh)
#   install: pip install -c constraints.txt -e ".[jax]" "jax[cuda12]"  (docs/guide/jax-and-gpu.md)
#   run:     tools/serving_gpu.sh
#   then, in the checkout you commit from:
#            mkdir -p docs/results/serving/gpu && cp -r OUT_DIR/* docs/results/serving/gpu/
#
# The demo's StableHLO artifacts come from the TensorFlow install (lowered for CPU and CUDA); the
# LRA-size model is built and exported by this script on the GPU machine (its weights, 80 MB per
# precision, need not be copied), its parity checked on the CPU on 32 generated examples (no
# TensorFlow there to read the test split). The bench is shortened: MLPerf's minimums become
# MIN_SECONDS (default 2 s) and MIN_QUERIES (300), the server search SERVER_TRIALS (3) rates; each
# row's note says so. XLA's compilation cache is kept in /tmp, so the offline process reuses what
# the online one compiled. DEVICE=cpu runs the same steps on the CPU (a check of this script where
# there is no GPU; rows then say cpu), LRA_MAX_LEN=256 shortens the LRA-size model's inputs for
# such a check.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT_DIR=${OUT_DIR:-runs/serving-gpu}
DEVICE=${DEVICE:-gpu}
ROOT=$PWD
# shellcheck source=tools/gpu_setup.sh
source tools/gpu_setup.sh
mkdir -p "$OUT_DIR"
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export JAX_COMPILATION_CACHE_DIR=/tmp/jax-cache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
install_missing_wheels keras  # a Python with JAX but not Keras: WHEELS_DIR's wheels
export PYTHONPATH=$ROOT:${PYTHONPATH:-}
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || true
  python3 -c "import jax; print('jax', jax.__version__, jax.devices())"; } | tee "$OUT_DIR/device.txt"

DEMO=runs/demo-listops-linformer
LRA=runs/lra-size-listops-linformer
[ -d "$DEMO/stablehlo" ] || { echo "error: $DEMO/stablehlo is missing; expected the demo run \
exported to StableHLO; run python -m arena_tf.demo and python export/to_stablehlo.py $DEMO where \
TensorFlow is installed, and copy $DEMO here (see the top of this script)" >&2; exit 2; }
if [ ! -d "$LRA/stablehlo_fp16" ]; then
    python3 tools/lra_size_run.py "$DEMO" "$LRA" --max-len "${LRA_MAX_LEN:-2000}" || exit 1
    # parity on the CPU in full float32 (the Keras reference too: no TF32 on a GPU)
    JAX_PLATFORMS=cpu python3 export/to_stablehlo.py "$LRA" --examples 32 2>&1 | tail -4
fi

for run in "$DEMO" "$LRA"; do
    python3 -m serving.bench "$run" --runtime xla --precision fp32,bf16,fp16 --scenario all \
        --device "$DEVICE" --out "$OUT_DIR/$(basename "$run")" --min-duration "${MIN_SECONDS:-2}" \
        --min-queries "${MIN_QUERIES:-300}" --server-trials "${SERVER_TRIALS:-3}" --quiet 2>&1 \
        | tail -3
done
cp "$LRA"/*.parity.json "$OUT_DIR/" 2>/dev/null
ls "$OUT_DIR"; echo "tools/serving_gpu.sh: $SECONDS s"
