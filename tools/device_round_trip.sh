#!/usr/bin/env bash
# There, on a lent GPU machine, from the repository root: reproduction runs under JAX, several jobs
# side by side on the one GPU, then (if time is left) the layer benchmark under JAX; what they
# produced is copied to $OUT.
#
#   here:  tools/device_wheels.sh                                  (once: .whl/, about 10 MiB)
#   device run, carry [".whl", "runs/device"], timeout_s 600:
#          ARENA_TF_COMMIT=<git rev-parse --short=12 HEAD here> tools/device_round_trip.sh \
#              lra:listops:linformer,linear cpu-pathfinder::full,linformer,s4d
#   here:  python -m arena_tf.reproduce merge <files_at>/results-*.json
#          rm -rf runs/device && tar -xzf <files_at>/runs.tar.gz    (the paused runs, see below)
#          git add docs/reproduction* && git commit
#
# A job is SUITE:TASKS:MECHANISMS (TASKS empty: the suite's own); its mechanisms run one after the
# other in the order given, so the cheap ones land first in a short lease. Give each suite to one
# job only: a job works in its suite's own copy of the tree (its results.json and run directories;
# data/ is shared, the ListOps set generated once before the jobs start), made at the suite's first
# call on this machine, and brings back results-<job number>.json. Every run pauses at a checkpoint
# when TRAIN_SECONDS (default 420) have gone by since the jobs started; the copies stay while the
# machine is warm, so a later call for the same suite goes on where this one paused (with the code
# of the first call). A run paused with a newest checkpoint (with its config and logs) of at most
# CARRY_MB (default 24) comes back in $OUT/runs.tar.gz, the whole new state of runs/device/SUITE/
# (runs carried in and neither finished nor run again stay in it): replace runs/device with it here
# and carry "runs/device" beside ".whl" in a later call, on a cold machine too, and the run goes on
# from that checkpoint; a larger one (the LRA ListOps models) starts again from step 0 on a cold
# machine. Jobs share the GPU: on an H200 the lra ListOps linformer run went at 7 steps/s beside
# two small-model jobs and 14 alone (docs/reproduction/device/). Generated tasks
# (listops, pathfinder, pathx) work without TensorFlow, the TFDS ones do not. BENCHMARK_SECONDS
# (default 0: none) bounds a layer benchmark under JAX (BENCHMARK_ARGS, default the jax_dpa peer
# beside full and linformer) after the jobs.
set -uo pipefail
OUT=${OUT:-/tmp/arena_tf_out}
ROOT=$PWD
mkdir -p "$OUT" /tmp/arena_tf_jobs data
# Several processes share the GPU: each takes memory as it needs it, not 75% up front.
export KERAS_BACKEND=jax PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if ! python3 -c "import keras, grain" 2>/dev/null; then  # the lent machine's image lacks them
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/device.txt"
PYTHONPATH=$ROOT:${PYTHONPATH:-} python3 - <<'PY' | tee -a "$OUT/device.txt"
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
        mkdir -p "$copy" && cp -a arena_tf configs docs setup.py "$copy"/ \
            && ln -s "$ROOT/data" "$copy/data" || return 1
        if [ -d "$ROOT/runs/device/$suite" ]; then  # paused runs carried from an earlier call
            mkdir -p "$copy/runs/reproduce" && cp -a "$ROOT/runs/device/$suite" "$copy/runs/reproduce/"
        fi
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
    cp docs/reproduction/results.json "$OUT/results-$number.json"
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
(cd /tmp/arena_tf_jobs && tar -czf "$OUT/logs.tar.gz" job-*.log)

pack_paused() {  # runs/device/ as it now stands: every paused run small enough to carry on
    local staging=/tmp/arena_tf_carry checkpoints run relative newest
    rm -rf "$staging" && mkdir -p "$staging/runs/device"
    [ -d "$ROOT/runs/device" ] && cp -a "$ROOT/runs/device/." "$staging/runs/device/"
    while IFS= read -r checkpoints; do
        run=${checkpoints%/checkpoints}
        relative=${run#/tmp/arena_tf_jobs/*/runs/reproduce/}
        rm -rf "${staging:?}/runs/device/$relative"
        [ -f "$run/metrics.json" ] && continue  # finished: its row is in results-N.json
        newest=$(ls "$checkpoints" | grep -E '^ckpt-[0-9]+' | sort -t- -k2 -n | tail -n 1)
        [ -n "$newest" ] || continue
        mkdir -p "$staging/runs/device/$relative/checkpoints"
        cp -a "$run/config.yaml" "$run/train" "$run/validation" "$staging/runs/device/$relative/"
        cp -a "$checkpoints/$newest" "$staging/runs/device/$relative/checkpoints/"
        if [ "$(du -sm "$staging/runs/device/$relative" | cut -f1)" -gt "${CARRY_MB:-24}" ]; then
            echo "not carried (over ${CARRY_MB:-24} MB): $relative"
            rm -rf "${staging:?}/runs/device/$relative"
        else
            echo "carried back, paused at $newest: $relative"
        fi
    done < <(find /tmp/arena_tf_jobs -path '*/runs/reproduce/*' -type d -name checkpoints)
    find "$staging/runs/device" -mindepth 1 -type d -empty -delete  # suites left with no run
    tar -czf "$OUT/runs.tar.gz" -C "$staging" runs
}
pack_paused

if [ "${BENCHMARK_SECONDS:-0}" -gt 0 ]; then
    # shellcheck disable=SC2086
    PYTHONPATH=$ROOT:${PYTHONPATH:-} timeout "$BENCHMARK_SECONDS" python3 -m arena_tf.benchmark \
        layers --backend jax ${BENCHMARK_ARGS:---mechanisms full linformer --peers jax_dpa} \
        --output "$OUT/efficiency-jax.json" 2>&1 | tail -40
fi
ls -l "$OUT"
