#!/usr/bin/env bash
# Here, before a GPU machine's first call (see tools/device_round_trip.sh): download into .whl/
# the Python 3.12 wheels that machine lacks for the JAX trainer. Its image has JAX with CUDA,
# NumPy, PyYAML, Pillow, Matplotlib and TensorBoard, but not Keras or grain. The versions are
# constraints.txt's. It also writes .whl/COMMIT, this checkout's commit read from git ('+dirty' with
# uncommitted changes to tracked files): the GPU machine's copy has no git history, and its rows
# name the commit from that file, never one typed by hand. Run it again before each call.
set -euo pipefail
cd "$(dirname "$0")/.."
PACKAGES="keras namex optree grain array_record portpicker"
mkdir -p .whl
for name in $PACKAGES; do
    pin=$(grep -i -E "^${name//_/[-_]}==" constraints.txt || true)
    [ -n "$pin" ] || { echo "error: $name is not pinned in constraints.txt; expected a pin; add one" >&2; exit 2; }
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
        --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d .whl "$pin"
done
du -sh .whl
commit=$(git rev-parse --short=12 HEAD)
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit+dirty"
echo "$commit" > .whl/COMMIT
echo "commit $commit written to .whl/COMMIT"
