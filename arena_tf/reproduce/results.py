"""results.json: one row per finished run, with the command that reproduces it.

A row holds the run's suite, task, mechanism and seed (its key), its test and best validation
accuracy, steps, training time, device, dtype (the precision it trained in: float32,
mixed_bfloat16, ...), backend, commit, date and command; rows are written atomically, and
`merge` adds those another machine recorded without ever overwriting one.
"""

import datetime
import json
import os
import pathlib
import statistics
import subprocess

from arena_tf import cli, files
from arena_tf.config import read_run_config
from arena_tf.locks import FileLock
from arena_tf.reproduce.rows import check_rows
from arena_tf.reproduce.suites import ROOT, SUITES, suite_paths
from arena_tf.training.loop import cpu_device

RESULTS = ROOT / "docs" / "results" / "reproduction" / "results.json"
TRAIN_WINDOWS = 10  # logged training windows averaged into a row's final training accuracy
# The dtype of rows recorded before rows named one: train.precision's default since the first
# commit, which no suite, preset or tools/ script changed (`git log -S precision -- configs tools
# arena_tf/reproduce`), so every such run trained in float32.
UNRECORDED_DTYPE = "float32"


def git_commit():
    """The checkout's commit, '+dirty' when tracked files differ from it; outside git (a copy of
    the working tree on a GPU machine) the ARENA_TF_COMMIT the copy was made from, else None."""
    if os.environ.get("ARENA_TF_COMMIT"):
        return os.environ["ARENA_TF_COMMIT"]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+dirty" if dirty else "")


def result_row(run):
    """The results.json row of a finished run, from its metrics.json and TensorBoard events."""
    from arena_tf.training.events import read_scalars  # tensorboard: only to read runs' events

    metrics = json.loads((run.run_dir / "metrics.json").read_text())
    curve = read_scalars(run.run_dir / "validation").get("accuracy", {})
    trained = read_scalars(run.run_dir / "train").get("accuracy", {})
    return {
        "suite": run.suite.name,
        "task": run.task_name,
        "mechanism": run.mechanism,
        "seed": run.seed,
        "test_accuracy": metrics["test_accuracy"],
        "best_val_accuracy": max(curve.values(), default=metrics["validation_accuracy"]),
        "chance": metrics.get("test_chance"),
        "test_examples": metrics["test_examples"],
        "steps": metrics["steps"],
        **training_time(metrics),
        "device": metrics.get("device") or cpu_device(),
        "dtype": run_dtype(run.run_dir, metrics),
        "backend": metrics.get("backend"),
        "git_commit": git_commit(),
        "date": datetime.date.today().isoformat(),
        "command": command_of({"command": run.command, "backend": metrics.get("backend")}),
        "validation_curve": [[step, value] for step, value in sorted(curve.items())],
        "final_train_accuracy": final_train_accuracy(trained),
    }


def run_dtype(run_dir, metrics):
    """The precision a finished run trained in: its metrics.json's, else its config.yaml's
    train.precision (metrics written before they named it)."""
    if metrics.get("precision"):
        return metrics["precision"]
    return read_run_config(run_dir).train.precision


def with_dtype(row):
    """`row` with its dtype: UNRECORDED_DTYPE for a row recorded before rows named one."""
    return row if "dtype" in row else {**row, "dtype": UNRECORDED_DTYPE}


def training_time(metrics):
    """{"train_seconds": the whole run's} (over every session it was resumed in), or, for a run
    resumed from a checkpoint that carries no time, {"train_seconds": None, "last_session":
    {"seconds", "steps"}}: what the last session took, a lower bound."""
    total = metrics.get("train_seconds")
    if total is None and metrics.get("trained_steps", metrics["steps"]) == metrics["steps"]:
        total = metrics["wall_time_s"]  # not resumed (or written before train_seconds existed)
    if total is not None:
        return {"train_seconds": round(total, 1)}
    return {
        "train_seconds": None,
        "last_session": {
            "seconds": round(metrics["wall_time_s"], 1),
            "steps": metrics["trained_steps"],
        },
    }


def command_of(row):
    """The row's command as a shell runs it: a backend other than the default TensorFlow named in
    front (KERAS_BACKEND=jax ...), also for rows recorded before the command carried it."""
    backend, command = row.get("backend"), row["command"]
    if backend in (None, "tensorflow") or command.startswith("KERAS_BACKEND="):
        return command
    return f"KERAS_BACKEND={backend} {command}"


def final_train_accuracy(accuracy_by_step):
    """Mean training accuracy of the last TRAIN_WINDOWS logged windows (None without any): beside
    the validation accuracy it tells a model that underfits from one that overfits."""
    last = [value for _, value in sorted(accuracy_by_step.items())[-TRAIN_WINDOWS:]]
    return statistics.fmean(last) if last else None


def read_results(path=RESULTS):
    """The rows of results.json, each checked whole (UsageError naming the first that is not)."""
    path = pathlib.Path(path)
    if not path.is_file():
        return []
    try:
        listed = json.loads(path.read_text())
    except ValueError as error:
        raise cli.UsageError(
            f"{path} is not JSON ({error})",
            "the JSON list of results rows",
            f"restore it: git checkout -- {path}",
        ) from None
    if not isinstance(listed, list):
        raise cli.UsageError(
            f"{path} holds a {type(listed).__name__}, not a list of rows",
            "the JSON list of results rows",
            f"restore it: git checkout -- {path}",
        )
    return [with_dtype(row) for row in check_rows(listed, path)]


def row_key(row):
    """What identifies a results.json row: its suite, task, mechanism and seed."""
    return row["suite"], row["task"], row["mechanism"], row["seed"]


def record(row, path=RESULTS):
    """results.json with `row` in place of any row of the same suite, task, mechanism and seed."""
    return record_all([row], path)


def record_all(new_rows, path=RESULTS):
    """results.json with `new_rows` in place of any rows of the same keys, written once."""
    new = {row_key(r): r for r in check_rows(list(new_rows), "new results")}
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    with FileLock(f"{path}.lock"):  # one read-modify-write at a time; waits for the other
        rows = [r for r in read_results(path) if row_key(r) not in new] + list(new.values())
        rows.sort(key=row_key)
        files.write_json(path, rows)
    return rows


def without_reruns(row):
    return {name: value for name, value in row.items() if name != "reruns"}


def merge(paths, results=RESULTS, suites_dir=SUITES):
    """Record the rows of other results.json files (a GPU machine's copies) that ours lacks, and
    the re-runs of our rows that ours lacks; the number of rows added or given re-runs. A row that
    differs from ours (re-runs aside) under the same suite, task, mechanism and seed, and a new
    row of a suite no file of `suites_dir` (or archive/suites/) defines or of a mechanism the
    registry lacks, is refused in one line before anything is written, never overwritten."""
    ours = {row_key(r): r for r in read_results(results)}
    new = {}
    for path in paths:
        for name, row in file_rows(path):  # in order: a second row of one key meets the first
            known = new.get(name, ours.get(name))
            if known is None:
                check_named(row, path, suites_dir)
                new[name] = row
                continue
            if without_reruns(known) != without_reruns(row):
                raise cli.UsageError(
                    f"{path} has another result for {'/'.join(map(str, name))}",
                    "rows that results.json lacks or holds unchanged (re-runs aside)",
                    "remove the older row from one of the files, then merge",
                )
            extra = [e for e in row.get("reruns", ()) if e not in known.get("reruns", ())]
            if extra:
                new[name] = {**known, "reruns": [*known.get("reruns", ()), *extra]}
    if new:
        record_all(new.values(), results)
    return len(new)


def check_named(row, path, suites_dir=SUITES):
    """A one-line UsageError when `row` names a suite no suite file defines or a mechanism the
    registry lacks (a misspelt row would otherwise add a section to the report)."""
    import arena_tf.layers as layers  # Keras: only when there is a row to check

    if row["suite"] not in suite_paths(suites_dir):
        raise cli.UsageError(
            f"{path} has a row of suite {row['suite']!r}, which no suite file defines",
            f"rows of the suites of {suites_dir} (or archive/suites/)",
            "correct the row's suite, or add its suite file, then merge",
        )
    if row["mechanism"] not in layers.available():
        raise cli.UsageError(
            f"{path} has a row of mechanism {row['mechanism']!r}, which is not registered",
            f"one of {', '.join(layers.available())}",
            "correct the row's mechanism, then merge",
        )


def file_rows(path):
    """[(key, row)] of the results.json at `path`, in its order; a one-line UsageError when it is
    not one."""
    try:
        listed = json.loads(pathlib.Path(path).read_text())
        if not isinstance(listed, list):
            raise TypeError(f"a {type(listed).__name__}, not a list")
        return [(row_key(r), with_dtype(r)) for r in check_rows(listed, path)]
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise cli.UsageError(
            f"{path} is not a results.json ({error})",
            "a JSON list of rows that `reproduce SUITE` wrote",
            "name the results-N.json files a GPU machine brought back",
        ) from None


def recorded_runs(suite, results=RESULTS):
    """The (task, mechanism, seed) of the suite's rows in results.json."""
    return {
        (r["task"], r["mechanism"], r["seed"])
        for r in read_results(results)
        if r["suite"] == suite.name
    }
