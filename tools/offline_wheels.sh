#!/usr/bin/env bash
# On a machine with internet, from the checkout: download the wheels that a GPU machine without
# internet needs to run tools/device_round_trip.sh, tools/gpu_benchmark.sh and tools/serving_gpu.sh
# when its Python already has JAX with CUDA, NumPy, PyYAML, Pillow, Matplotlib and TensorBoard but
# not Keras or grain: PACKAGES (default below), at constraints.txt's versions, without their
# dependencies, for PYTHON_VERSION (default 3.12) on Linux x86_64, into WHEELS_DIR (the first
# argument, else $WHEELS_DIR, else .whl; relative to the repository root). It also writes
# WHEELS_DIR/COMMIT, this checkout's commit read from git ('+dirty' with uncommitted changes to
# tracked files): a copy of the working tree without its git history names that commit in its rows,
# never one typed by hand. Run it again after each change to the checkout, then copy the checkout
# and WHEELS_DIR to the GPU machine; the scripts install from WHEELS_DIR where Keras is missing.
#
#   tools/offline_wheels.sh [WHEELS_DIR]
#
# For a machine with nothing installed, docs/guide/jax-and-gpu.md ("Installing without internet")
# downloads a whole extra with `pip download` and installs it with `pip install --no-index`.
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELS_DIR=${1:-${WHEELS_DIR:-.whl}}
# shellcheck source=tools/gpu_setup.sh
source tools/gpu_setup.sh
PACKAGES=${PACKAGES:-keras namex optree grain array_record portpicker}
commit=$(checkout_commit) || { echo "error: $PWD is not a git checkout; expected the checkout whose commit the rows will name; run tools/offline_wheels.sh in a clone of the repository" >&2; exit 2; }
mkdir -p "$WHEELS_DIR"
for name in $PACKAGES; do
    pin=$(grep -i -E "^${name//_/[-_]}==" constraints.txt || true)
    [ -n "$pin" ] || { echo "error: $name is not pinned in constraints.txt; expected a pin; add one" >&2; exit 2; }
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "${PYTHON_VERSION:-3.12}" \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHEELS_DIR" "$pin"
done
du -sh "$WHEELS_DIR"
echo "$commit" > "$WHEELS_DIR/COMMIT"
echo "commit $commit written to $WHEELS_DIR/COMMIT"
