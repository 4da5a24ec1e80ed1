#!/usr/bin/env bash
# On a machine with a GPU and JAX with CUDA (TensorFlow not needed): reproduction runs under JAX,
# several jobs side by side on the one GPU, then (if BENCHMARK_SECONDS is set) the layer benchmark
# under JAX; what they produced is copied to OUT_DIR (default runs/gpu-round-trip, a relative path
# taken from the repository root; the device's name in OUT_DIR/device.txt, the jobs' logs in
# OUT_DIR/logs.tar.gz).
#
#   install: pip install -c constraints.txt -e ".[jax]" "jax[cuda12]"  (docs/guide/jax-and-gpu.md;
#            without internet: the wheels of tools/offline_wheels.sh in WHEELS_DIR, default .whl)
#   run:     tools/device_round_trip.sh lra:listops:linformer,linear cpu-pathfinder::performer,linear
#   then, in the checkout you commit from (this one, or another after copying OUT_DIR there):
#            python -m arena_tf.reproduce merge OUT_DIR/results-*.json
#            for each job's SUITE: rm -rf docs/results/reproduction/paused/SUITE and copy
#            OUT_DIR/paused/SUITE there, if the job wrote one          (the paused runs, see below)
#            git add docs/results/reproduction* && git commit
#
# A job is SUITE:TASKS:MECHANISMS (TASKS empty: the suite's own); its mechanisms run one after the
# other in the order given, so the cheap ones finish first when TRAIN_SECONDS is short. Give each
# suite to one job only, and do not train the same run in the checkout meanwhile (merge refuses two
# rows for one run): a job works in its suite's own copy of the tree under /tmp/arena_tf_jobs (its
# results.json and run directories; data/ is shared, the ListOps set generated once before the jobs
# start), made at the suite's first run of this script on this machine, and writes
# OUT_DIR/results-<job number>.json. Every run pauses at a checkpoint when TRAIN_SECONDS (default
# 420) have gone by since the jobs started; the copies stay until /tmp is cleared, so a later run of
# this script for the same suite goes on where this one paused (with the code of the first). Runs
# go on across machines as on CPU (arena_tf/reproduce/paused_runs.py): the copy holds
# docs/results/reproduction/paused/ as it is in the checkout, `--resume` unpacks the archives
# written under JAX (one written under TensorFlow starts again), and `reproduce pack SUITE` at the
# end packs every run left unfinished (archives over 24 MB are not kept: the LRA ListOps models
# start again) into OUT_DIR/paused/SUITE, the suite's whole new state of
# docs/results/reproduction/paused/SUITE. Jobs share the GPU: on an H200 the lra ListOps linformer
# run went at 7 steps/s beside two small-model jobs and 14 alone (docs/results/reproduction/device/).
# Generated tasks (listops, pathfinder, pathx) work without TensorFlow, the TFDS ones do not.
# BENCHMARK_SECONDS (default 0: none) bounds a layer benchmark under JAX (BENCHMARK_ARGS, default
# the jax_dpa peer beside full and linformer) after the jobs. The rows name ARENA_TF_COMMIT if it is
# set, else the checkout's commit from git, else WHEELS_DIR/COMMIT (a copy without its git history).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
OUT_DIR=${OUT_DIR:-runs/gpu-round-trip}
ROOT=$PWD
# shellcheck source=tools/gpu_setup.sh
source tools/gpu_setup.sh
record_commit  # the jobs' copies have no git history: they record this commit
mkdir -p "$OUT_DIR" /tmp/arena_tf_jobs data
OUT_DIR=$(cd "$OUT_DIR" && pwd -P)  # absolute: the jobs work in their copies
# Several processes share the GPU: each takes memory as it needs it, not 75% up front.
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
install_missing_wheels keras grain  # a Python with JAX but not these: WHEELS_DIR's wheels
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT_DIR/device.txt"
PYTHONPATH=$ROOT:${PYTHONPATH:-} python3 - <<'PY' | tee -a "$OUT_DIR/device.txt"
import jax, keras
print("jax", jax.__version__, jax.devices(), "keras", keras.__version__, keras.backend.backend())
PY
if [ ! -f data/listops/generator.json ]; then  # once, on every core, before jobs that read it
    PYTHONPATH=$ROOT:${PYTHONPATH:-} python3 -m arena_tf.generators.listops --out_dir=data/listops \
        2>&1 | tail -1
fi

deadline=$(( $(date +%s) + ${TRAIN_SECONDS:-420} ))

run_job() {  # number, SUITE:TASKS:MECHANISMS; runs in its suite's own copy of the tree
    local number=$1 suite tasks mechanisms copy
    IFS=: read -r suite tasks mechanisms <<<"$2"
    copy=/tmp/arena_tf_jobs/$suite  # the same suite in a later call finds its run directories
    if [ ! -d "$copy" ]; then
        mkdir -p "$copy" && cp -a arena_tf archive configs docs setup.py "$copy"/ \
            && ln -s "$ROOT/data" "$copy/data" || return 1
    fi
    cd "$copy" || return 1
    export PYTHONPATH=$copy:${PYTHONPATH:-}
    local mechanism left
    for mechanism in ${mechanisms//,/ } ""; do  # "": the suite's own, when none are named
        [ -z "$mechanism" ] && [ -n "$mechanisms" ] && break
        left=$(( deadline - $(date +%s) ))
        [ "$left" -gt 30 ] || break
        python3 -m arena_tf.reproduce "$suite" ${tasks:+--tasks "$tasks"} \
            ${mechanism:+--mechanisms "$mechanism"} --resume --time_limit "$left" 2>&1
    done
    python3 -m arena_tf.reproduce "$suite" ${tasks:+--tasks "$tasks"} --list
    cp docs/results/reproduction/results.json "$OUT_DIR/results-$number.json"
    python3 -m arena_tf.reproduce pack "$suite" 2>&1
    mkdir -p "$OUT_DIR/paused" && rm -rf "${OUT_DIR:?}/paused/$suite"
    if [ -d "docs/results/reproduction/paused/$suite" ]; then
        cp -a "docs/results/reproduction/paused/$suite" "$OUT_DIR/paused/"
    fi
}

number=0
for job in "$@"; do
    number=$((number + 1))
    run_job "$number" "$job" > "/tmp/arena_tf_jobs/job-$number.log" 2>&1 &
done
wait
for log in /tmp/arena_tf_jobs/job-*.log; do
    echo "== $log"; grep -v "steps/s, ETA" "$log" | tail -n 20; grep "steps/s, ETA" "$log" | tail -n 1
done
(cd /tmp/arena_tf_jobs && tar -czf "$OUT_DIR/logs.tar.gz" job-*.log)

if [ "${BENCHMARK_SECONDS:-0}" -gt 0 ]; then
    # shellcheck disable=SC2086
    PYTHONPATH=$ROOT:${PYTHONPATH:-} timeout "$BENCHMARK_SECONDS" python3 -m arena_tf.benchmark \
        layers --backend jax ${BENCHMARK_ARGS:---mechanisms full linformer --peers jax_dpa} \
        --output "$OUT_DIR/efficiency-jax.json" 2>&1 | tail -40
fi
ls -l "$OUT_DIR"
