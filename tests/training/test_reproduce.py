"""`python -m arena_tf.reproduce`: a suite runs each of its runs once, refuses an interrupted run
without --resume and continues it with it, records every finished run in results.json, and the
report is regenerated from results.json alone."""

import dataclasses
import functools
import json
import os
import re
import shlex
import shutil
import sys
import types

import pytest
import yaml

from arena_tf import cli
from arena_tf.reproduce import paused_runs, report, reruns, running
from arena_tf.reproduce import suites as suites_module
from arena_tf.reproduce.__main__ import main as reproduce_main
from arena_tf.reproduce.report import write as write_report
from arena_tf.reproduce.results import TRAIN_WINDOWS, command_of
from arena_tf.reproduce.results import merge as merge_results
from arena_tf.reproduce.running import pack_unfinished, rerun_rows
from arena_tf.reproduce.suites import load_suite, plan
from arena_tf.training.events import read_scalars
from arena_tf.training.run_dir import checkpoint_steps
from tests.one_line import assert_one_error_line
from tests.training.conftest import TINY, loop

pytestmark = pytest.mark.slow  # starts processes

STEPS = 4


@pytest.fixture
def setting(listops_dir, tmp_path):
    """(suite, runs dir, results.json, report path, suites dir) of a two-mechanism tiny suite."""
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "tiny-listops.yaml").write_text(
        yaml.safe_dump(
            {
                "task": "listops",
                "data_dir": str(listops_dir),
                "overrides": [*TINY, *loop(STEPS, checkpoint_every=2)],
                "mechanisms": ["linear", "local"],
                "seeds": [0],
                "target": 33.4,
                "paper": {"linear": 16.13, "local": 15.82},
            }
        )
    )
    suite = load_suite("tiny-listops", suites)
    return suite, tmp_path / "runs", tmp_path / "results.json", tmp_path / "doc.md", suites


@pytest.fixture
def forked_runs(command_server):
    """The runs a suite starts are forked from the command server (tests/forked_command.py) with
    the arguments of their `python -m arena_tf.train`, their output passed on, instead of a new
    process each that imports TensorFlow again. Only the module `running` sees the fork; the first
    test keeps new processes, as a user's suite starts them."""

    def call(command, env):
        result = command_server.run(command[1:], cwd=os.getcwd(), env=env)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode

    with pytest.MonkeyPatch.context() as patch:  # its own: a test's monkeypatch.undo() keeps it
        patch.setattr(running, "subprocess", types.SimpleNamespace(call=call))
        yield


def run_suite(setting, mechanisms=None, resume=False):
    suite, runs_dir, results, doc, suites = setting
    runs = plan(suite, mechanisms, runs_dir=runs_dir)
    return running.run_suite(suite, runs, resume, results, doc, suites)


def test_a_suite_runs_once_resumes_with_resume_and_reports_from_results(setting, capfd):
    suite, runs_dir, results, doc, suites = setting
    assert run_suite(setting, ["linear"]) == 1
    rows = json.loads(results.read_text())
    assert [(r["mechanism"], r["seed"], r["steps"]) for r in rows] == [("linear", 0, STEPS)]
    row = rows[0]
    assert row["command"].startswith("python -m arena_tf.train --task=listops --model=linear")
    assert row["validation_curve"][-1][0] == STEPS and row["git_commit"] and row["device"]
    logged = read_scalars(runs_dir / "tiny-listops" / "linear-seed0" / "train")["accuracy"]
    last = [logged[step] for step in sorted(logged)[-TRAIN_WINDOWS:]]
    assert row["final_train_accuracy"] == pytest.approx(sum(last) / len(last))
    assert "`local` | missing: not run yet" in doc.read_text()

    # local is interrupted after its first checkpoint: a run of 2 of its 4 steps, same settings.
    local = plan(suite, ["local"], runs_dir=runs_dir)[0]
    shorter = [a.replace(f"num_train_steps={STEPS}", "num_train_steps=2") for a in local.arguments]
    from arena_tf import train

    assert train.main(shorter) == 0
    (local.run_dir / "metrics.json").unlink()
    assert local.state() == "interrupted"
    capfd.readouterr()
    code = cli.run_main(lambda: run_suite(setting))
    assert code == 2
    assert_one_error_line(capfd.readouterr().err, "were interrupted", "--resume")

    assert run_suite(setting, resume=True) == 1  # linear is skipped, local continues
    rows = json.loads(results.read_text())
    assert [(r["mechanism"], r["steps"]) for r in rows] == [("linear", STEPS), ("local", STEPS)]
    assert "resumed from" in capfd.readouterr().out
    assert run_suite(setting) == 0  # all done: nothing trains

    rows[0]["test_accuracy"] = 0.4321  # the report reads results.json, nothing else
    results.write_text(json.dumps(rows))
    write_report(results, doc, suites)
    text = doc.read_text()
    assert "| `linear` | 43.2 |" in text and "16.13" in text
    assert (doc.parent / "tiny-listops.png").stat().st_size > 0


def test_unknown_suite_and_mechanism_are_one_line(setting, capfd):
    suite, *_, suites = setting
    with pytest.raises(cli.UsageError, match="unknown suite 'nope'"):
        load_suite("nope", suites)
    with pytest.raises(cli.UsageError, match="'full' is not in suite tiny-listops"):
        plan(suite, ["full"])
    (suites / "taskless.yaml").write_text("mechanisms: [full]\n")
    with pytest.raises(
        cli.UsageError, match="taskless.yaml: no 'task'; expected a suite names its"
    ):
        load_suite("taskless", suites)
    (suites / "cut.yaml").write_text("task: listops\nmechanisms: [full, linear\n")
    with pytest.raises(cli.UsageError, match="cut.yaml: not valid YAML at line 3"):
        load_suite("cut", suites)
    (suites / "five.yaml").write_text("5\n")
    with pytest.raises(
        cli.UsageError,
        match="five.yaml: holds a int, not a mapping; expected a mapping of data_dir, mechanisms",
    ):
        load_suite("five", suites)
    with pytest.raises(cli.UsageError, match="unknown suite '../suites/five'"):  # a path
        load_suite("../suites/five", suites)


def test_a_mechanism_can_have_its_own_settings_target_and_paper_source(tmp_path):
    (tmp_path / "mixed.yaml").write_text(
        yaml.safe_dump(
            {
                "task": "listops",
                "overrides": ["train.learning_rate=0.0001"],
                "overrides_per_mechanism": {"s4d": ["train.learning_rate=0.001"]},
                "target_per_mechanism": {"s4d": 50.0},
                "target": 33.4,
                "mechanisms": ["linear", "s4d"],
                "paper": {"linear": 16.13, "s4d": 60.0},
                "paper_source": "published",
            }
        )
    )
    suite = load_suite("mixed", tmp_path)
    linear, s4d = plan(suite, runs_dir=tmp_path)
    assert linear.command.count("learning_rate") == 1
    assert s4d.command.index("learning_rate=0.0001") < s4d.command.index("learning_rate=0.001 ")
    rows = [
        {
            "mechanism": m,
            "test_accuracy": 0.45,
            "best_val_accuracy": 0.5,
            "chance": 0.17,
            "final_train_accuracy": train,
        }
        for m, train in (("linear", 0.6), ("s4d", None))
    ]
    text = report.suite_table("mixed", rows, suite)
    assert "| published % |" in text
    assert "| `linear` | 45.0 | 50.0 | 60.0 | 16.13 | 17.0 | met |" in text
    assert "| `s4d` | 45.0 | 50.0 |  | 60.00 | 17.0 | missed (50.0) |" in text
    assert "`s4d` 50.0%" in report.suite_heading(suite)
    unpublished = dataclasses.replace(suite, paper={})
    text = report.suite_table("mixed", rows, unpublished)
    assert "published %" not in text  # a suite without paper numbers has no paper column
    assert "| `linear` | 45.0 | 50.0 | 60.0 | 17.0 | met |" in text


def test_a_stored_command_survives_the_shell_when_a_setting_holds_spaces(tmp_path):
    (tmp_path / "spaced.yaml").write_text(
        yaml.safe_dump(
            {
                "task": "listops",
                "mechanisms": ["linear"],
                "paper": {},
                "overrides": ["task.params.generator_spec={train: 20, min_length: 40}"],
            }
        )
    )
    (run,) = plan(load_suite("spaced", tmp_path), runs_dir=tmp_path)
    words = shlex.split(run.command)
    assert words[:3] == ["python", "-m", "arena_tf.train"] and words[3:] == run.arguments
    assert "--set=task.params.generator_spec={train: 20, min_length: 40}" in words


@pytest.mark.usefixtures("forked_runs")
def test_a_time_limit_pauses_at_a_checkpoint_and_resume_finishes(setting, capfd):
    """Long runs go in chunks (a GPU machine's ten-minute commands): at --time_limit the run
    checkpoints the step it reached and exits 3, the suite stops there, and --resume continues it
    to the end."""
    suite, runs_dir, results, doc, suites = setting
    (linear,) = plan(suite, ["linear"], runs_dir=runs_dir)
    runs = plan(suite, ["linear"], runs_dir=runs_dir)
    # a limit of 0 s: every run trains one step, then pauses
    assert running.run_suite(suite, runs, False, results, doc, suites, time_limit=0) == 0
    out = capfd.readouterr().out
    assert "paused at step 1 of 4" in out and "rerun with --resume to continue it" in out
    assert linear.state() == "interrupted" and not results.exists()
    assert checkpoint_steps(linear.run_dir / "checkpoints") == [1]
    first_seconds = read_scalars(linear.run_dir / "train")["train_seconds"][1]
    assert run_suite(setting, ["linear"], resume=True) == 1
    (row,) = json.loads(results.read_text())
    assert row["steps"] == STEPS
    # the row's time is the whole run's, both sessions, not the last one's
    metrics = json.loads((linear.run_dir / "metrics.json").read_text())
    assert metrics["trained_steps"] == STEPS - 1
    assert metrics["train_seconds"] == pytest.approx(first_seconds + metrics["wall_time_s"])
    assert row["train_seconds"] == round(metrics["train_seconds"], 1) and "last_session" not in row


@pytest.mark.usefixtures("forked_runs")
def test_a_run_resumed_from_a_checkpoint_without_its_time_reports_a_lower_bound(setting):
    """A checkpoint written before training times were kept: the total is unknown, so the row
    keeps the last session's time and steps, and the report says that the run took longer."""
    suite, runs_dir, results, doc, suites = setting
    runs = plan(suite, ["linear"], runs_dir=runs_dir)
    assert running.run_suite(suite, runs, False, results, doc, suites, time_limit=0) == 0
    for events in (runs[0].run_dir / "train").iterdir():  # as an older run's: no time in them
        events.unlink()
    assert run_suite(setting, ["linear"], resume=True) == 1
    (row,) = json.loads(results.read_text())
    assert row["train_seconds"] is None and row["last_session"]["steps"] == STEPS - 1
    minutes = f"{row['last_session']['seconds'] / 60:.0f}"
    assert f"| unknown: over {minutes} min (the last session's 3 of 4 steps) |" in doc.read_text()


def test_a_suite_of_several_tasks_runs_each_and_reports_each_beside_its_paper(tmp_path):
    (tmp_path / "two.yaml").write_text(
        yaml.safe_dump(
            {
                "task": ["listops", "image"],
                "mechanisms": ["full", "linear"],
                "paper": {"listops": {"full": 36.37, "linear": 16.13}, "image": {"full": 42.44}},
            }
        )
    )
    suite = load_suite("two", tmp_path)
    runs = plan(suite, runs_dir=tmp_path / "runs")
    assert [(run.task_name, run.mechanism) for run in runs] == [
        ("listops", "full"),
        ("listops", "linear"),
        ("image", "full"),
        ("image", "linear"),
    ]
    assert runs[2].run_dir == tmp_path / "runs" / "two" / "image" / "full-seed0"
    assert runs[2].command.startswith("python -m arena_tf.train --task=image --model=full")
    assert plan(suite, ["linear"], tasks=["image"], runs_dir=tmp_path / "runs") == runs[3:]
    with pytest.raises(cli.UsageError, match="task 'text' is not in suite two"):
        plan(suite, tasks=["text"])
    rows = [
        {
            "suite": "two",
            "task": "image",
            "mechanism": "full",
            "seed": 0,
            "test_accuracy": 0.4,
            "best_val_accuracy": 0.41,
            "chance": 0.1,
            "steps": 9,
            "train_seconds": 60,
            "device": "NVIDIA H100 x1",
            "git_commit": "abc",
            "command": runs[2].command,
        }
    ]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(rows))
    text = write_report(results, tmp_path / "doc.md", tmp_path).read_text()
    listops, image = text.split("### listops\n")[1].split("### image\n")
    assert "| `full` | missing: not run yet |  |  | 36.37 |" in listops
    assert "| `full` | 40.0 | 41.0 |  | 42.44 | 10.0 |" in image
    assert "| `linear` | missing: not run yet |" in image


def test_the_readme_summary_shows_each_suite_with_its_paper_column_where_it_has_one(tmp_path):
    (tmp_path / "easy.yaml").write_text(
        yaml.safe_dump(
            {
                "task": "pathfinder",
                "mechanisms": ["full", "local"],
                "target": 70,
                "paper": {"full": 71.4},
                "paper_source": "LRA",
            }
        )
    )
    (tmp_path / "harder.yaml").write_text(
        yaml.safe_dump(
            {"task": "pathfinder", "mechanisms": ["full"], "target": 60.3, "paper": None}
        )
    )
    rows = [
        {"suite": "easy", "mechanism": "full", "test_accuracy": 0.729},
        {"suite": "harder", "mechanism": "full", "test_accuracy": 0.5},
    ]
    paused = tmp_path / "paused"
    text = report.headline(rows, tmp_path, ("easy", "harder"), paused)
    assert text.splitlines()[0] == (
        "| mechanism | `easy` (pathfinder) test % | LRA % | `harder` (pathfinder) test % |"
    )
    assert "| `full` | 72.9, met | 71.40 | 50.0, under 60.3 |" in text
    assert "| `local` | not run |  |  |" in text
    # a run carried unfinished reads paused, not "not run"
    (carried,) = plan(load_suite("easy", tmp_path), ["local"], paused_dir=paused)
    carried.archive.parent.mkdir(parents=True)
    carried.archive.touch()
    assert "| `local` | paused |  |  |" in report.headline(
        rows, tmp_path, ("easy", "harder"), paused
    )


def report_row(suite, mechanism, accuracy, command, **extra):
    return {
        "suite": suite,
        "task": "listops",
        "mechanism": mechanism,
        "seed": 0,
        "test_accuracy": accuracy,
        "best_val_accuracy": accuracy,
        "chance": 0.17,
        "steps": 10,
        "train_seconds": 60,
        "device": "CPU",
        "git_commit": "abc",
        "command": command,
        **extra,
    }


def test_a_row_of_another_backend_shows_a_command_that_runs_it_there(tmp_path):
    """A JAX run's row names its backend beside the device and in front of its command, so that
    pasting the command reproduces the run under JAX, not under the default TensorFlow."""
    command = "python -m arena_tf.train --task=listops --model={}"
    results = tmp_path / "results.json"
    results.write_text(
        json.dumps(
            [
                report_row(
                    "a",
                    "full",
                    0.19,
                    command.format("full"),
                    backend="jax",
                    device="NVIDIA H200 x1",
                ),
                report_row("a", "linear", 0.36, command.format("linear"), backend="tensorflow"),
            ]
        )
    )
    text = write_report(results, tmp_path / "doc.md", tmp_path).read_text()
    assert (
        "| NVIDIA H200 x1, jax | abc | `KERAS_BACKEND=jax python -m arena_tf.train "
        "--task=listops --model=full` |" in text
    )
    assert (
        "| CPU, tensorflow | abc | `python -m arena_tf.train --task=listops --model=linear` |"
        in text
    )
    assert command_of({"command": "KERAS_BACKEND=jax x", "backend": "jax"}) == (
        "KERAS_BACKEND=jax x"
    )


def test_the_report_sets_each_mechanisms_attempts_side_by_side_with_what_differs(tmp_path):
    """A mechanism trained in two suites gets a table of both runs with the settings that differ
    between them (a later --set of a name wins; logging and checkpoint settings are left out); a
    mechanism trained in one suite gets none."""
    base = (
        "python -m arena_tf.train --task=listops --model={} --preset=cpu "
        "--set=train.learning_rate=0.0001 --set=train.log_every={} {} --set=train.seed=0"
    )
    commands = {
        ("a", "linear"): base.format("linear", 50, ""),
        ("b", "linear"): base.format(
            "linear", 10, "--set=train.learning_rate=0.001 --set=model.pooling=cls --data_dir=short"
        ),
        ("a", "local"): base.format("local", 50, ""),
    }
    rows = [
        report_row(suite, mechanism, accuracy, commands[suite, mechanism])
        for (suite, mechanism), accuracy in zip(commands, (0.179, 0.352, 0.18))
    ]
    results = tmp_path / "results.json"
    results.write_text(json.dumps(rows))
    text = write_report(results, tmp_path / "doc.md", tmp_path).read_text()
    attempts = text.split("## Attempts: what changed the result\n")[1]
    assert "### listops: `linear`" in attempts and "`local`" not in attempts
    first = "| a | 0 | data_dir=unset model.pooling=unset train.learning_rate=0.0001 | 17.9 |"
    second = "| b | 0 | data_dir=short model.pooling=cls train.learning_rate=0.001 | 35.2 |"
    assert first in attempts and second in attempts


def result(mechanism, accuracy, suite="tiny-listops"):
    """A whole row (merge refuses one without the fields the report reads)."""
    return report_row(suite, mechanism, accuracy, f"python -m arena_tf.train --model={mechanism}")


def test_merge_adds_the_rows_another_machine_recorded_and_never_overwrites(tmp_path, capfd):
    """A GPU machine's copy of results.json holds our rows plus its new ones: merge adds the new
    ones, skips the unchanged ones, and refuses a changed one (and a file that is not results) in
    one line, leaving results.json as it was."""
    ours, theirs = tmp_path / "results.json", tmp_path / "results-1.json"
    (tmp_path / "tiny-listops.yaml").write_text("task: listops\nmechanisms: [linear, local]\n")
    merge = functools.partial(merge_results, suites_dir=tmp_path)
    ours.write_text(json.dumps([result("linear", 0.36)]))
    theirs.write_text(json.dumps([result("linear", 0.36), result("local", 0.35)]))
    assert merge([theirs], ours) == 1
    assert merge([theirs], ours) == 0
    assert [(r["mechanism"], r["test_accuracy"]) for r in json.loads(ours.read_text())] == [
        ("linear", 0.36),
        ("local", 0.35),
    ]
    before = ours.read_text()
    theirs.write_text(json.dumps([result("full", 0.3), result("linear", 0.2)]))
    with pytest.raises(cli.UsageError, match="another result for tiny-listops/listops/linear/0"):
        merge([theirs], ours)
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(cli.UsageError, match="is not a results.json"):
        merge([tmp_path / "bad.json"], ours)
    theirs.write_text(json.dumps([result("full", 0.3), result("full", 0.9)]))  # one file, one key
    with pytest.raises(cli.UsageError, match="another result for tiny-listops/listops/full/0"):
        merge([theirs], ours)
    theirs.write_text(json.dumps([result("full", 0.3, suite="cpu-listop")]))
    with pytest.raises(cli.UsageError, match="a row of suite 'cpu-listop', which no suite file"):
        merge([theirs], ours)
    theirs.write_text(json.dumps([result("nope", 0.3)]))
    with pytest.raises(cli.UsageError, match="a row of mechanism 'nope', which is not registered"):
        merge([theirs], ours)
    assert ours.read_text() == before
    assert reproduce_main(["cpu-listops", str(theirs)]) == 2
    assert_one_error_line(capfd.readouterr().err, "results files are read by `merge` alone")


@pytest.mark.usefixtures("forked_runs")
def checkpointed_run(run_dir, step=250):
    """A run directory holding a real TensorFlow checkpoint at `step` (one variable)."""
    import tensorflow as tf

    (run_dir / "checkpoints").mkdir(parents=True)
    tf.train.Checkpoint(v=tf.Variable(tf.ones([64]))).write(
        str(run_dir / "checkpoints" / f"ckpt-{step}")
    )
    (run_dir / "config.yaml").write_text("task: {name: listops}\n")
    return run_dir


@pytest.mark.tensorflow_only("a TensorFlow checkpoint")
@pytest.mark.parametrize("damage", ["cut", "garbage"])
def test_a_damaged_paused_archive_is_one_line_naming_it(tmp_path, damage):
    run_dir = checkpointed_run(tmp_path / "runs" / "s4d-seed0")
    archive = tmp_path / "s4d-seed0.tar.gz"
    assert paused_runs.pack(run_dir, archive) == 250
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) // 2] if damage == "cut" else b"not an archive" * 100)
    for read in (paused_runs.archived, lambda a: paused_runs.unpack(a, tmp_path / "again")):
        with pytest.raises(
            cli.UsageError,
            match=rf"{archive.name} cannot be read .*; expected an "
            r"archive .* pack. wrote; restore it",
        ):
            read(archive)
    assert not (tmp_path / "again").exists()


@pytest.mark.tensorflow_only("a TensorFlow checkpoint")
def test_pack_refuses_a_checkpoint_that_cannot_be_read(tmp_path):
    run_dir = checkpointed_run(tmp_path / "runs" / "s4d-seed0")
    index = run_dir / "checkpoints" / "ckpt-250.index"
    index.write_bytes(index.read_bytes()[: index.stat().st_size // 2])
    archive = tmp_path / "s4d-seed0.tar.gz"
    with pytest.raises(
        cli.UsageError,
        match=r"ckpt-250 cannot be read .*; expected a complete "
        r"checkpoint to pack; delete .*ckpt-250\.\*",
    ):
        paused_runs.pack(run_dir, archive)
    assert not archive.exists()


def test_a_packed_run_goes_on_in_a_fresh_checkout_and_a_recorded_row_is_not_trained_again(
    setting, capfd, monkeypatch
):
    """A session ends with a run unfinished and runs/ is not committed: `pack` carries the run's
    newest checkpoint in the repository; a fresh checkout (no runs/) lists it as paused, shows the
    step in the report, refuses it without --resume, and with --resume unpacks it and finishes it
    from that step; the finished run drops its archive, and its recorded row is not trained
    again in the next fresh checkout."""
    suite, runs_dir, results, doc, suites = setting
    paused = runs_dir.parent / "paused"
    runs = plan(suite, ["linear"], runs_dir=runs_dir, paused_dir=paused)
    assert running.run_suite(suite, runs, False, results, doc, suites, time_limit=0) == 0
    pack_unfinished(runs, results)
    archive = paused / "tiny-listops" / "linear-seed0.tar.gz"
    assert f"packed {runs[0].run_dir} at step 1 into {archive}" in capfd.readouterr().out
    assert paused_runs.archived(archive) == (1, "tensorflow")
    carried = archive.read_bytes()
    monkeypatch.setattr(paused_runs, "MAX_MB", 0)  # too large to keep in git
    archive.rename(archive.with_suffix(".kept"))
    pack_unfinished(runs, results)
    assert "not carried" in capfd.readouterr().out and not archive.exists()
    archive.with_suffix(".kept").rename(archive)

    shutil.rmtree(runs_dir)  # the next session's fresh checkout
    assert runs[0].state() == "paused"
    monkeypatch.setattr(suites_module, "keras_backend", lambda: "jax")  # another backend
    assert runs[0].state() == "new"
    monkeypatch.undo()
    write_report(results, doc, suites, paused)
    assert "| `linear` | missing: paused at step 1 (carried in paused/) |" in doc.read_text()
    with pytest.raises(cli.UsageError, match="were interrupted"):
        running.run_suite(suite, runs, False, results, doc, suites)
    assert running.run_suite(suite, runs, True, results, doc, suites) == 1
    assert "resumed from" in capfd.readouterr().out
    (row,) = json.loads(results.read_text())
    metrics = json.loads((runs[0].run_dir / "metrics.json").read_text())
    assert row["steps"] == STEPS and metrics["trained_steps"] == STEPS - 1
    assert not archive.exists()

    shutil.rmtree(runs_dir)  # another fresh checkout: the recorded run is done, not retrained
    archive.write_bytes(carried)  # as if another machine had carried it meanwhile
    assert running.run_suite(suite, runs, False, results, doc, suites) == 0
    assert "recorded in results.json" in capfd.readouterr().out
    assert not runs_dir.exists()
    pack_unfinished(runs, results)  # a recorded run's carried checkpoint is dropped
    assert not archive.exists()


@pytest.mark.usefixtures("forked_runs")
def test_a_rerun_takes_the_rows_own_command_and_is_reported_beside_it(setting, capfd):
    """--rerun runs a recorded row's stored command again (not the suite's current settings) in a
    directory of its own, adds the result to the row's re-runs once, and the report shows it with
    its difference from the row; more than 3 points away is flagged."""
    suite, runs_dir, results, doc, suites = setting
    assert run_suite(setting, ["linear"]) == 1
    (row,) = json.loads(results.read_text())
    edited = dataclasses.replace(suite, overrides=(*suite.overrides, "train.learning_rate=0.5"))
    runs = plan(edited, ["linear"], runs_dir=runs_dir)
    reruns_dir = runs_dir.parent / "reruns"
    assert rerun_rows(edited, runs, results, doc, suites, reruns_dir=reruns_dir) == 1
    rerun_dir = reruns_dir / "tiny-listops" / "listops" / "linear-seed0"
    assert "learning_rate: 0.003" in (rerun_dir / "config.yaml").read_text()  # the row's, not 0.5
    (rerun,) = json.loads(results.read_text())[0]["reruns"]
    assert rerun["steps"] == STEPS and rerun["device"] and rerun["git_commit"]
    points = 100 * (rerun["test_accuracy"] - row["test_accuracy"])
    assert f"{100 * rerun['test_accuracy']:.2f} ({points:+.2f}, " in doc.read_text()
    assert f"({points:+.2f} points)" in capfd.readouterr().out
    assert rerun_rows(edited, runs, results, doc, suites, reruns_dir=reruns_dir) == 0
    assert len(json.loads(results.read_text())[0]["reruns"]) == 1

    far = {**row, "reruns": [{**rerun, "test_accuracy": row["test_accuracy"] + 0.031}]}
    assert "(+3.10, " in reruns.cell(far) and "more than 3 points away" in reruns.cell(far)
    assert "more than" not in reruns.cell({**far, "reruns": [rerun]})


@pytest.mark.parametrize("flag", ["--run_dir", "--run-dir"])
def test_a_rerun_moves_old_and_new_commands_to_its_own_run_directory(flag):
    """Rows recorded before the kebab-case grammar say --run_dir=; newer ones --run-dir=."""
    row = {
        "command": f"KERAS_BACKEND=jax python -m arena_tf.train --task=listops {flag}=runs/a "
        "--set=train.seed=0",
        "backend": "jax",
    }
    assert reruns.command_of(row, "runs/rerun/b") == (
        {"KERAS_BACKEND": "jax"},
        ["--task=listops", "--set=train.seed=0", "--run-dir=runs/rerun/b"],
    )


def test_a_suite_records_its_train_command_in_the_kebab_case_grammar(setting):
    suite, runs_dir, *_ = setting
    (run,) = plan(suite, ["linear"], runs_dir=runs_dir)
    assert f"--run-dir={run.run_dir}" in run.arguments and "--run_dir" not in run.command


def test_merge_adds_the_reruns_another_machine_made_of_our_rows(tmp_path):
    ours, theirs = tmp_path / "results.json", tmp_path / "results-1.json"
    ours.write_text(json.dumps([result("linear", 0.36)]))
    rerun = {"test_accuracy": 0.35, "device": "NVIDIA H200 x1", "backend": "jax"}
    theirs.write_text(json.dumps([{**result("linear", 0.36), "reruns": [rerun]}]))
    assert merge_results([theirs], ours) == 1
    assert merge_results([theirs], ours) == 0
    assert json.loads(ours.read_text())[0]["reruns"] == [rerun]


def test_recorded_commands_read_the_same_in_either_flag_spelling():
    """Rows recorded before the kebab-case grammar say --data_dir; newer ones --data-dir."""
    old = "python -m arena_tf.train --preset=cpu --data_dir=short --set=model.pooling=cls"
    new = "python -m arena_tf.train --preset=cpu --data-dir=short --set=model.pooling=cls"
    assert (
        report.settings_of(old)
        == report.settings_of(new)
        == {"preset": "cpu", "data_dir": "short", "model.pooling": "cls"}
    )


def test_the_intermediate_pathfinder_target_is_its_recorded_distance_baseline_plus_five_points():
    """pathfinder-intermediate's target stands on the distance rule's score on the suite's own test
    split, as `analysis distance-baseline` printed it into distance-baselines.txt."""
    recorded = (
        suites_module.ROOT / "docs" / "results" / "reproduction" / "distance-baselines.txt"
    ).read_text()
    found = re.search(
        r"pathfinder32 intermediate: .* scores ([\d.]+)% on the test split of "
        r"data/pathfinder/pathfinder32/curv_contour_length_9",
        recorded,
    )
    suite = load_suite("pathfinder-intermediate")
    assert "task.params.difficulty=intermediate" in suite.overrides
    assert suite.target == pytest.approx(float(found.group(1)) + 5.0)
