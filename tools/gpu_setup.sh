# shellcheck shell=bash
# Sourced by tools/device_round_trip.sh, tools/gpu_benchmark.sh, tools/serving_gpu.sh and
# tools/offline_wheels.sh, from the repository root; not a command of its own.
#
# WHEELS_DIR (default .whl, which git ignores; relative to the repository root) is the folder of
# wheels that tools/offline_wheels.sh downloads for a machine without internet, with
# WHEELS_DIR/COMMIT, the commit of the checkout they were downloaded from.
WHEELS_DIR=${WHEELS_DIR:-.whl}

checkout_commit() {  # prints this checkout's commit from git ('+dirty' with changed tracked files)
    [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ] || return 1
    local commit
    commit=$(git rev-parse --short=12 HEAD) || return 1
    [ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+dirty"
    echo "$commit"
}

record_commit() {  # exports ARENA_TF_COMMIT, the commit the rows name: as set, else git's, else
    # WHEELS_DIR/COMMIT (a copy of the working tree without its git history)
    if [ -z "${ARENA_TF_COMMIT:-}" ]; then
        ARENA_TF_COMMIT=$(checkout_commit || cat "$WHEELS_DIR/COMMIT" 2>/dev/null)
    fi
    [ -n "$ARENA_TF_COMMIT" ] || {
        echo "error: no commit to record (no git checkout here, no ARENA_TF_COMMIT, no $WHEELS_DIR/COMMIT); expected a git checkout or the commit file of tools/offline_wheels.sh; run tools/offline_wheels.sh in the checkout this copy came from and copy $WHEELS_DIR here, or set ARENA_TF_COMMIT" >&2
        exit 2
    }
    export ARENA_TF_COMMIT
}

install_missing_wheels() {  # MODULE...: if python3 cannot import them, installs WHEELS_DIR's wheels
    # (no index, no dependencies) into /tmp/site and puts it on PYTHONPATH
    local imports
    imports=$(IFS=,; echo "$*")
    python3 -c "import $imports" 2>/dev/null && return 0
    compgen -G "$WHEELS_DIR/*.whl" >/dev/null || {
        echo "error: python3 cannot import ${imports//,/, } and $WHEELS_DIR holds no wheels; expected the jax extra installed, or the wheels of tools/offline_wheels.sh in $WHEELS_DIR; pip install -c constraints.txt -e \".[jax]\" (docs/guide/jax-and-gpu.md), or run tools/offline_wheels.sh where there is internet and copy $WHEELS_DIR here" >&2
        exit 2
    }
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site "$WHEELS_DIR"/*.whl || exit 1
    export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
}
