"""Running a suite: each run trained in a child process and recorded in results.json as it
finishes; re-runs of recorded rows; unfinished runs packed into the repository.
"""

import datetime
import os
import subprocess
import sys
import time

from arena_tf import cli
from arena_tf.reproduce import paused_runs, report, reruns, suites
from arena_tf.reproduce.results import (
    RESULTS,
    git_commit,
    read_results,
    record,
    recorded_runs,
    result_row,
    row_key,
    training_time,
)
from arena_tf.reproduce.suites import SUITES
from arena_tf.training.loop import EXIT_PAUSED, cpu_device
from arena_tf.training.run_dir import checkpoint_steps


def run_suite(
    suite, runs, resume=False, results=RESULTS, doc=None, suites_dir=SUITES, time_limit=None
):
    """Train every run not done yet, recording each in `results` as it finishes (and regenerating
    the report `doc` where one is given; the repository's is `python -m arena_tf.reproduce
    report`, never a side effect of training); the number trained. With
    `time_limit` (seconds) the suite stops at a checkpoint once that much time went by (the run
    under way pauses; --resume continues it)."""
    began = time.monotonic()
    recorded = recorded_runs(suite, results)
    states = [run.state() for run in runs]  # a paused run's state reads its archive: once
    interrupted = [
        run
        for run, state in zip(runs, states)
        if state == "interrupted" or (state == "paused" and run.key not in recorded)
    ]
    if interrupted and not resume:
        names = ", ".join(str(run.run_dir) for run in interrupted[:3])
        raise cli.UsageError(
            f"{len(interrupted)} run(s) of {suite.name} were interrupted ({names})",
            "--resume to continue them from their checkpoints",
            "rerun with --resume, or delete those run directories (and their "
            f"archives in {paused_runs.PAUSED.name}/) to start over",
        )
    trained = 0
    for number, (run, state) in enumerate(zip(runs, states), 1):
        if state != "interrupted" and run.key in recorded:  # else: recorded on another machine
            elsewhere = (
                ""
                if state == "done"
                else (" (recorded in results.json; remove its row to run it again)")
            )
            print(f"reproduce: [{number}/{len(runs)}] {run.run_dir} done{elsewhere}", flush=True)
            continue
        if state == "paused":
            step = paused_runs.unpack(run.archive, run.run_dir)
            print(f"reproduce: unpacked {run.archive} into {run.run_dir} (step {step})", flush=True)
        elif state == "new" and run.archive.is_file():
            step, backend = paused_runs.archived(run.archive)
            print(
                f"reproduce: {run.archive} (step {step}) was written under {backend}; the run "
                f"starts again under {suites.keras_backend()}",
                flush=True,
            )
        if state != "done":
            print(
                f"reproduce: [{number}/{len(runs)}] {'running' if state == 'new' else 'resuming'}"
                f" {run.command}",
                flush=True,
            )
            if not train(run.arguments, run.run_dir, time_left(time_limit, began)):
                return trained
            trained += 1
        record(result_row(run), results)
        run.archive.unlink(missing_ok=True)  # finished: its row replaces what was carried
        print(f"reproduce: recorded {run.mechanism} seed {run.seed} in {results}", flush=True)
        regenerate(results, doc, suites_dir)
        if time_limit is not None and time.monotonic() - began >= time_limit:
            print("reproduce: time limit reached; rerun with --resume to go on", flush=True)
            return trained
    return trained


def time_left(time_limit, began):
    """Seconds of `time_limit` left since `began` (None: no limit)."""
    return None if time_limit is None else max(0, round(time_limit - (time.monotonic() - began)))


def train(arguments, run_dir, time_limit=None, environment=None, again="--resume"):
    """One `python -m arena_tf.train` run in a child process: True when it finished, False when it
    paused at `time_limit` (`again` continues it); a failure stops the suite in one line."""
    limit = [] if time_limit is None else [f"--time-limit={time_limit}"]
    status = subprocess.call(
        [sys.executable, "-m", "arena_tf.train", *arguments, *limit],
        env={**os.environ, **(environment or {})},
    )
    if status == EXIT_PAUSED:
        print(
            f"reproduce: paused {run_dir} at the time limit; rerun with {again} to continue it",
            flush=True,
        )
        return False
    if status:
        raise cli.RunError(
            f"run {run_dir} stopped with exit status {status}",
            "every run of the suite to finish",
            f"see its error above; rerun with {again} to continue",
        )
    return True


def regenerate(results, doc, suites_dir):
    """The report `doc` from `results` where one is given; else how to regenerate the
    repository's."""
    if doc is None:
        print("reproduce: `python -m arena_tf.reproduce report` regenerates the report", flush=True)
    else:
        report.write(results, doc, suites_dir)


def rerun_rows(
    suite,
    runs,
    results=RESULTS,
    doc=None,
    suites_dir=SUITES,
    time_limit=None,
    reruns_dir=reruns.RERUNS,
):
    """Re-run the recorded rows of `runs` with their own commands (continuing a re-run directory
    left unfinished) and add each finished re-run to its row's `reruns`; the number added."""
    began, added = time.monotonic(), 0
    rows = {row_key(r): r for r in read_results(results)}
    for run in runs:
        row = rows.get((suite.name, *run.key))
        if row is None:
            print(f"reproduce: {run.mechanism} seed {run.seed} has no row to re-run", flush=True)
            continue
        run_dir = reruns.run_dir_of(row, reruns_dir)
        environment, arguments = reruns.command_of(row, run_dir)
        if not (run_dir / "metrics.json").is_file():
            print(f"reproduce: re-running {row['command']} in {run_dir}", flush=True)
            if not train(arguments, run_dir, time_left(time_limit, began), environment, "--rerun"):
                break
        metrics = reruns.finished(run_dir)
        if metrics is None:
            print(f"reproduce: the re-run in {run_dir} is recorded already", flush=True)
        else:
            entry = reruns.entry(
                metrics,
                training_time(metrics),
                cpu_device(),
                git_commit(),
                datetime.date.today().isoformat(),
            )
            record({**row, "reruns": [*row.get("reruns", ()), entry]}, results)
            (run_dir / reruns.RECORDED).touch()
            regenerate(results, doc, suites_dir)
            added += 1
            print(
                f"reproduce: re-run of {run.mechanism} seed {run.seed}: "
                f"{100 * entry['test_accuracy']:.2f}% against {100 * row['test_accuracy']:.2f}% "
                f"({reruns.difference(row, entry):+.2f} points)",
                flush=True,
            )
    return added


def pack_unfinished(runs, results=RESULTS):
    """Carry every interrupted run of `runs` in the repository (its archive replaced, unless the
    archive holds a checkpoint as far on: an unchanged run is not packed again) and drop the
    archives of recorded runs; printed per run."""
    recorded = {row_key(r) for r in read_results(results)}
    for run in runs:
        if (run.suite.name, *run.key) in recorded:
            if run.archive.is_file():
                run.archive.unlink()
                print(f"reproduce: {run.run_dir} is recorded; removed {run.archive}")
            continue
        if run.state() != "interrupted":
            continue
        carried, _ = paused_runs.archived(run.archive) if run.archive.is_file() else (None, None)
        if carried and carried >= checkpoint_steps(run.run_dir / "checkpoints")[0]:
            print(f"reproduce: kept {run.archive} (step {carried}: {run.run_dir} is no further)")
            continue
        step = paused_runs.pack(run.run_dir, run.archive)
        megabytes = run.archive.stat().st_size / 2**20
        if megabytes > paused_runs.MAX_MB:
            run.archive.unlink()
            print(
                f"reproduce: not carried: {run.run_dir} at step {step} packs into "
                f"{megabytes:.0f} MB, over {paused_runs.MAX_MB} MB"
            )
            continue
        print(f"reproduce: packed {run.run_dir} at step {step} into {run.archive}")
