"""Re-runs of recorded reproduction rows: does a row's own command give its number again?

    python -m arena_tf.reproduce cpu-listops --rerun [--mechanisms linformer] [--seeds 0]

A re-run takes the row's stored command as it is (its settings, seed and backend), with only the
run directory changed to runs/rerun/SUITE/TASK/MECHANISM-seedN, so a suite edited since the row was
made does not change what is re-run. When it finishes, its test accuracy, steps, training time,
device, backend, commit and date are added to the row's `reruns` in results.json, and the report
puts each re-run beside its row with the difference in points, flagged where it is more than
TOLERANCE points away.
"""

import json
import pathlib
import shlex

TOLERANCE = 3.0  # points of test accuracy a re-run may land from its row
RERUNS = pathlib.Path("runs") / "rerun"
RECORDED = ".rerun-recorded"  # in a re-run directory whose entry results.json holds
TRAIN = ["python", "-m", "arena_tf.train"]
# The run directory's flag: commands recorded before the kebab-case grammar say --run_dir=.
RUN_DIR_FLAGS = ("--run-dir=", "--run_dir=")


def run_dir_of(row, runs_dir=RERUNS):
    name = f"{row['mechanism']}-seed{row['seed']}"
    return pathlib.Path(runs_dir) / row["suite"] / row["task"] / name


def command_of(row, run_dir):
    """({name: value} of the environment the command sets, the train arguments) of the row's
    command, with `run_dir` in place of its run directory."""
    words = shlex.split(row["command"])
    environment = {}
    while words and "=" in words[0] and not words[0].startswith("-"):
        name, _, value = words.pop(0).partition("=")
        environment[name] = value
    if words[: len(TRAIN)] != TRAIN:
        raise ValueError(f"{row['command']!r} is not a `python -m arena_tf.train` command")
    if row.get("backend") not in (None, "tensorflow"):
        environment.setdefault("KERAS_BACKEND", row["backend"])
    arguments = [word for word in words[len(TRAIN) :] if not word.startswith(RUN_DIR_FLAGS)]
    return environment, [*arguments, f"--run-dir={run_dir}"]


def entry(metrics, timing, device, commit, date):
    """A `reruns` entry from a finished re-run's metrics.json and its training time (`timing`:
    reproduce.training_time's dict)."""
    return {
        "test_accuracy": metrics["test_accuracy"],
        "steps": metrics["steps"],
        **timing,
        "device": metrics.get("device") or device,
        "dtype": metrics.get("precision"),
        "backend": metrics.get("backend"),
        "git_commit": commit,
        "date": date,
    }


def finished(run_dir):
    """metrics.json of a re-run that finished and is not recorded yet, else None."""
    run_dir = pathlib.Path(run_dir)
    if (run_dir / RECORDED).exists() or not (run_dir / "metrics.json").is_file():
        return None
    return json.loads((run_dir / "metrics.json").read_text())


def difference(row, rerun):
    """The re-run's test accuracy minus the row's, in points."""
    return 100 * (rerun["test_accuracy"] - row["test_accuracy"])


def cell(row):
    """The report's re-run cell: '35.80 (-0.05, NVIDIA H200 x1, jax)' per re-run, flagged beyond
    TOLERANCE."""
    parts = []
    for rerun in row.get("reruns", ()):
        points = difference(row, rerun)
        where = ", ".join(filter(None, (rerun["device"], rerun.get("backend"))))
        flag = f"; more than {TOLERANCE:g} points away" if abs(points) > TOLERANCE else ""
        parts.append(f"{100 * rerun['test_accuracy']:.2f} ({points:+.2f}, {where}{flag})")
    return "; ".join(parts)
