"""The run directory: who may write it, and which run it belongs to.

While a run trains, the chief holds an exclusive lock on the run directory (`.train.lock`, holding
its pid): a second trainer on the same directory is refused; the lock dies with its process, so a
killed run never blocks its rerun. A directory whose checkpoints another configuration saved is
refused, except for the loop settings in ADJUSTABLE. A run directory that holds no checkpoint is
not a run to protect: a new start replaces its config.yaml and the event files and results of the
earlier start (`stale_artifacts`).
"""

import pathlib

from arena_tf.config import read_run_config
from arena_tf.locks import FileLock
from arena_tf.training.errors import RunDirError

# Settings a resumed run may change: they steer the loop, not what the model and data are.
ADJUSTABLE = {
    f"train.{name}"
    for name in (
        "learning_rate",
        "grad_clip",
        "num_train_steps",
        "eval_every",
        "eval_batches",
        "checkpoint_every",
        "keep_checkpoints",
        "log_every",
        "remat",
    )
}


LOCK_NAME = ".train.lock"


def differences(saved, current, prefix=""):
    """{'section.key': 'saved X, now Y'} for every leaf that differs between two nested dicts."""
    changed = {}
    for key in sorted(set(saved) | set(current)):
        old, new = saved.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changed.update(differences(old, new, f"{prefix}{key}."))
        elif old != new:
            changed[f"{prefix}{key}"] = f"saved {old!r}, now {new!r}"
    return changed


# How each backend's checkpoints are named: ckpt-STEP plus this suffix (TensorFlow's index file
# beside its data shards; one NumPy archive under JAX).
CHECKPOINT_FORMATS = {"tensorflow": ".index", "jax": ".npz"}


def checkpoint_steps(checkpoint_dir, backend=None):
    """Steps of the checkpoints in a directory (one backend's format, or any), newest first."""
    found = set()
    for name in [backend] if backend else CHECKPOINT_FORMATS:
        suffix = CHECKPOINT_FORMATS[name]
        for path in pathlib.Path(checkpoint_dir).glob(f"ckpt-*{suffix}"):
            number = path.name[len("ckpt-") : -len(suffix)]
            if number.isdecimal():
                found.add(int(number))
    return sorted(found, reverse=True)


def check_same_experiment(run_dir, config):
    """Refuse a run directory whose checkpoints another configuration saved; {key: change} of the
    ADJUSTABLE changes it allows. A directory without checkpoints is not checked."""
    run_dir = pathlib.Path(run_dir)
    saved_path = run_dir / "config.yaml"
    if not checkpoint_steps(run_dir / "checkpoints"):
        refuse_a_trained_model(run_dir)
        return {}
    if not saved_path.is_file():
        return {}
    # Read through the config classes: a setting added since the file was saved is at its default.
    changed = differences(read_run_config(run_dir).to_dict(), config.to_dict())
    refused = {key: text for key, text in changed.items() if key not in ADJUSTABLE}
    if refused:
        listed = " and ".join(f"{key}: {text}" for key, text in refused.items())
        raise RunDirError(
            f"run directory {run_dir} belongs to another configuration ({listed})",
            f"the settings its checkpoints were saved with ({saved_path}; a resumed run may "
            "change only the loop settings: "
            f"{', '.join(sorted(key.split('.')[1] for key in ADJUSTABLE))})",
            "use a new --run-dir, or the saved settings to resume",
        )
    return changed


def refuse_a_trained_model(run_dir):
    """RunDirError for a directory holding a finished run's model.keras but no checkpoint (they
    were deleted, or the directory was copied without them): a start there would replace the
    model, and the exports made from it would no longer match."""
    model = run_dir / "model.keras"
    if model.is_file():
        raise RunDirError(
            f"run directory {run_dir} holds a trained model ({model.name}) but no "
            "checkpoint to resume from",
            "a new --run-dir, or a run directory with its checkpoints",
            f"choose another --run-dir, or delete {model} to train afresh there",
        )


class RunLock(FileLock):
    """An exclusive lock on a run directory: `.train.lock` holding the owner's pid
    (arena_tf/locks.py); a second trainer is refused with RunDirError naming the holder."""

    def __init__(self, run_dir):
        super().__init__(
            pathlib.Path(run_dir) / LOCK_NAME,
            busy=lambda who: RunDirError(
                f"run directory {run_dir} is in use by another trainer ({who})",
                "one trainer per run directory at a time",
                f"wait for {who} to finish or stop it, or choose another --run-dir",
            ),
        )


RUN_FILES = ("config.yaml", "metrics.json", "model.keras")  # what a run writes at its top


def check_writable(run_dir):
    """Refuse a run directory that is a file, or where a folder stands in the place of a file the
    run writes (found before training, not after it)."""
    run_dir = pathlib.Path(run_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(
            f"cannot write to run directory {run_dir} (a file is there)",
            "a directory",
            "choose another --run-dir",
        )
    folder = next((run_dir / name for name in RUN_FILES if (run_dir / name).is_dir()), None)
    if folder is not None:
        raise RunDirError(
            f"cannot write to run directory {run_dir}: {folder.name} is a folder, "
            "where the run writes a file",
            f"no folders named {', '.join(RUN_FILES)} there",
            "move that folder away, or choose another --run-dir",
        )


def stale_artifacts(run_dir):
    """What an earlier start that left no checkpoint put in a run directory: config.yaml, event
    files, metrics.json, model.keras and an orphan checkpoint state file."""
    run_dir = pathlib.Path(run_dir)
    found = [run_dir / name for name in (*RUN_FILES, "checkpoints/checkpoint")]
    found = [path for path in found if path.exists()]
    for split in (".", "train", "validation"):  # "." : the config and hparams record
        found += sorted((run_dir / split).glob("events.out.tfevents.*"))
    return found


def remove_created(path, existing):
    """Remove the empty directories from `path` up to (not including) `existing`, the deepest
    directory that existed before (`first_existing`)."""
    path = pathlib.Path(path).absolute()
    if not path.is_relative_to(existing):
        return
    while path != existing and path.is_dir():
        try:
            path.rmdir()
        except OSError:
            return
        path = path.parent


def first_existing(path):
    path = pathlib.Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
