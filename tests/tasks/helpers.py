"""Pieces the bad-data tests share: running a command as a user does, and what it left behind."""

import os
import pathlib
import subprocess
import sys

from arena_tf.generators import pathfinder as generator

ROOT = pathlib.Path(__file__).resolve().parents[2]
PATHFINDER_DIR = generator.PATHFINDER32.release_path  # pathfinder32/curv_contour_length_14


def run_module(argv, cwd):
    """`python -m ARGV...` in `cwd` (offline, this checkout importable): the CompletedProcess."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "ARENA_TF_DOWNLOAD": "0",
        "TF_CPP_MIN_LOG_LEVEL": "3",
    }
    return subprocess.run(
        [sys.executable, "-m", *map(str, argv)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def snapshot(path):
    """{relative path: bytes} of every file under `path` (to see that nothing changed)."""
    path = pathlib.Path(path)
    return {p.relative_to(path): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def write_listops(folder, body):
    """The three ListOps release files in `folder`, each the header and then `body`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("basic_train.tsv", "basic_val.tsv", "basic_test.tsv"):
        (folder / name).write_text("Source\tTarget\n" + body)
    return folder


def pathfinder_set(root, count, images_per_folder=6):
    """`count` generated Pathfinder images under root/pathfinder32/...; the dataset directory."""
    return generator.write_dataset(
        root,
        generator.PATHFINDER32,
        count,
        seed=0,
        processes=1,
        images_per_folder=images_per_folder,
    )


def truncate(path):
    """Cut a file to half its bytes, as an interrupted copy leaves it."""
    data = pathlib.Path(path).read_bytes()
    pathlib.Path(path).write_bytes(data[: len(data) // 2])
