"""Paused reproduction runs carried in the repository from one machine or session to the next.

A reproduction run takes hours, and the machine that trains it may be gone before it ends (a work
session stops, a GPU machine is no longer at hand, and `runs/` is not committed). `pack` puts an
unfinished run's newest checkpoint, its config.yaml and its TensorBoard logs into one archive,
named after the run directory, under docs/results/reproduction/paused/ (committed beside
results.json); `unpack` makes the run directory again from it on another checkout, where
`--resume` continues from that checkpoint.

    python -m arena_tf.reproduce pack              # every unfinished run under runs/reproduce/
    python -m arena_tf.reproduce cpu-listops --resume    # unpacks what it finds, then continues

A run that finishes drops its archive: its row is in results.json. A checkpoint continues under
the Keras backend that wrote it (TensorFlow's here, JAX's on a GPU machine); under the other backend
the run starts again, and `pack` keeps whichever of the two went further.
"""

import contextlib
import gzip
import pathlib
import re
import tarfile
import zlib

from arena_tf import cli, files
from arena_tf.training.run_dir import CHECKPOINT_FORMATS, checkpoint_steps

PAUSED = (
    pathlib.Path(__file__).resolve().parents[2] / "docs" / "results" / "reproduction" / "paused"
)
SUFFIX = ".tar.gz"
KEPT = ("config.yaml", "train", "validation")  # beside the newest checkpoint
MAX_MB = 24  # larger archives are not kept in the repository (the LRA models' runs start again)


def archive_of(run_dir, runs_dir, paused_dir=PAUSED):
    """docs/results/reproduction/paused/SUITE/[TASK/]MECHANISM-seedN.tar.gz of a run directory."""
    relative = pathlib.Path(run_dir).relative_to(runs_dir)
    return pathlib.Path(paused_dir) / relative.parent / (relative.name + SUFFIX)


@contextlib.contextmanager
def readable(archive):
    """Reading `archive`: a damaged one (cut short, overwritten) is a one-line UsageError naming
    it, not a ReadError from deep in tarfile."""
    try:
        yield
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise cli.UsageError(
            f"{archive} cannot be read ({type(error).__name__}: {error})",
            "an archive `python -m arena_tf.reproduce pack` wrote",
            f"restore it (git checkout -- {archive}) or delete it to train that "
            "run again from its start",
        ) from None


def archived(archive):
    """(step, backend) of the checkpoint an archive holds ((None, None) without one): a run
    continues only under the backend that wrote its checkpoint."""
    with readable(archive), tarfile.open(archive) as tar:
        names = tar.getnames()
    for backend, suffix in CHECKPOINT_FORMATS.items():
        steps = [
            int(match.group(1))
            for name in names
            if (match := re.fullmatch(rf"checkpoints/ckpt-(\d+){re.escape(suffix)}", name))
        ]
        if steps:
            return max(steps), backend
    return None, None


def pack(run_dir, archive):
    """Write `archive` (atomically) from the newest checkpoint of `run_dir` and its config and
    logs; the step packed. A run still training may write a newer checkpoint meanwhile: the
    archive then holds the one that was newest when packing began, complete."""
    run_dir = pathlib.Path(run_dir)
    for _ in range(3):  # a checkpoint deleted by the trainer while being read: take the next one
        (step, *_) = checkpoint_steps(run_dir / "checkpoints")
        try:
            check_readable(run_dir / "checkpoints", step)
            with files.atomic_path(archive) as tmp, tarfile.open(tmp, "w:gz") as tar:
                for name in KEPT:
                    if (run_dir / name).exists():
                        tar.add(run_dir / name, arcname=name)
                for path in sorted((run_dir / "checkpoints").glob(f"ckpt-{step}.*")):
                    tar.add(path, arcname=f"checkpoints/{path.name}")
            return step
        except FileNotFoundError:
            continue
    raise RuntimeError(f"{run_dir}: its checkpoints kept changing while being packed")


def check_readable(checkpoint_dir, step):
    """A one-line UsageError when checkpoint `step` in `checkpoint_dir` cannot be read (its
    TensorFlow index or JAX archive cut short or damaged): packing it would carry a run that
    cannot resume."""
    index = checkpoint_dir / f"ckpt-{step}{CHECKPOINT_FORMATS['tensorflow']}"
    try:
        if index.is_file():
            import tensorflow as tf

            tf.train.load_checkpoint(str(index.with_suffix(""))).get_variable_to_shape_map()
        else:
            import numpy as np

            with np.load(checkpoint_dir / f"ckpt-{step}{CHECKPOINT_FORMATS['jax']}") as arrays:
                arrays.files  # noqa: B018 (reads the archive's directory)
    except FileNotFoundError:
        raise
    except Exception as error:  # noqa: BLE001 (any failure to read means unreadable)
        # TensorFlow's DataLossError, zipfile's BadZipFile, ...
        raise cli.UsageError(
            f"{checkpoint_dir}/ckpt-{step} cannot be read ({type(error).__name__}: "
            f"{' '.join(str(error).split())[:200]})",
            "a complete checkpoint to pack",
            f"delete {checkpoint_dir}/ckpt-{step}.* to pack the checkpoint before it, or resume "
            "the run to write a new one",
        ) from None


def unpack(archive, run_dir):
    """Make `run_dir` from `archive` (atomically, replacing a directory there without
    checkpoints); the step of the checkpoint it holds."""
    with readable(archive), files.atomic_path(run_dir) as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
    return checkpoint_steps(pathlib.Path(run_dir) / "checkpoints")[0]
