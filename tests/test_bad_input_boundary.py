"""The faults that are not one bad command line: what reaches a command's error boundary
(arena_tf/cli.py run_main) from inside it, Ctrl-C, a reader that leaves, the submission's two
streams, shared outputs (the bench's --out, results.json), and the memory guard's and the image
check's answers. Each is listed in docs/guide/bad-input.md's faults."""

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from arena_tf import cli, memory_guard
from arena_tf.config import ModelConfig
from arena_tf.locks import FileLock
from arena_tf.reproduce.results import merge, read_results
from tests.one_line import assert_one_error_line
from tests.tasks.helpers import write_listops

pytestmark = pytest.mark.slow  # starts processes

ROOT = pathlib.Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def test_an_unexpected_exception_is_one_internal_error_line_exit_1(capsys):
    def body():
        raise RuntimeError("the unexpected\nsecond line")

    assert cli.run_main(body) == cli.EXIT_FAILURE
    assert_one_error_line(
        capsys.readouterr().err,
        "internal error: RuntimeError: the unexpected second line; expected no internal error",
        "rerun with --debug",
    )
    with pytest.raises(RuntimeError):
        cli.run_main(body, debug=True)


def test_memory_that_runs_out_is_one_line_exit_1(capsys):
    """`export/to_onnx.py RUN --examples 1000000000` asked numpy for 477 GiB: a failure of the
    run in one line, not an internal error."""

    def body():
        raise MemoryError("Unable to allocate 477. GiB for an array")

    assert cli.run_main(body) == cli.EXIT_FAILURE
    assert_one_error_line(
        capsys.readouterr().err,
        "out of memory (Unable to allocate 477. GiB",
        "expected a run that fits in the memory available",
    )


def test_ctrl_c_inside_a_command_is_one_line_and_130(capsys):
    def body():
        raise KeyboardInterrupt

    assert cli.run_main(body) == cli.EXIT_INTERRUPTED == 130
    assert_one_error_line(capsys.readouterr().err, "interrupted (Ctrl-C)")


def test_ctrl_c_while_a_command_imports_is_one_line():
    """Before run_main is reached (TensorFlow importing), the interrupt is the same one line."""
    child = subprocess.Popen(
        [sys.executable, "-m", "arena_tf.train", "--task=listops", "--model=full"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: a shell's `make test &` starts it with Ctrl-C ignored, inherited here
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert child.stdout.readline() == "loading TensorFlow\n"  # printed before the import begins
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=60) == -signal.SIGINT
    assert_one_error_line(child.stderr.read(), "interrupted (Ctrl-C)")


# Runs an export script as `python export/to_onnx.py RUN` runs it, Ctrl-C arriving the moment the
# script first imports a backend (TensorFlow or JAX) or Keras: before its own code runs.
CTRL_C_AT_IMPORT = """
import importlib.abc, runpy, sys
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("tensorflow", "jax", "keras", "tf2onnx", "openvino"):
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupt())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.mark.parametrize("script", ["to_savedmodel", "to_onnx", "to_openvino", "to_stablehlo"])
def test_ctrl_c_while_an_export_script_imports_is_one_line(script, tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", CTRL_C_AT_IMPORT, f"export/{script}.py", str(tmp_path)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=pathlib.Path(__file__).resolve().parent.parent,
    )
    assert done.returncode == -signal.SIGINT, done.stderr[-2000:]
    assert_one_error_line(done.stderr, "interrupted (Ctrl-C)")


def test_ctrl_c_during_an_export_leaves_nothing_but_the_run(tmp_path, capsys, monkeypatch):
    """Interrupted while the SavedModel is checked (written, not yet published): one line, 130,
    and the run directory as it was (no artifact, no temporary)."""
    import arena_tf.export.to_savedmodel as to_savedmodel
    from tests.export.conftest import write_run_dir

    run, _ = write_run_dir(tmp_path / "run", "full")
    before = sorted(p.name for p in run.iterdir())

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(to_savedmodel, "parity_report", interrupted)
    assert to_savedmodel.main([str(run), "--precision", "fp32"]) == 130
    assert_one_error_line(capsys.readouterr().err, "interrupted (Ctrl-C)")
    assert sorted(p.name for p in run.iterdir()) == before


def test_rows_cut_short_by_head_end_quietly_with_141(tmp_path):
    """`python -m arena_tf.data rows ... | head -c 100`: exit 141, nothing on stderr but the
    progress the command prints there (was: a broken-pipe error and exit 1)."""
    data = write_listops(tmp_path / "listops", "( ( [MAX 2 9 ] ) )\t9\n" * 20000)
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena_tf.data",
            "rows",
            "--task=listops",
            f"--data-dir={data}",
            "--split=train",
        ],
        env=ENV,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert len(child.stdout.read(100)) == 100
    child.stdout.close()
    assert child.wait(timeout=300) == cli.EXIT_BROKEN_PIPE
    stderr = child.stderr.read().decode()
    assert "error" not in stderr.lower() and "Traceback" not in stderr, stderr


def test_the_submission_tells_stderr_in_one_line_and_stdout_keeps_the_protocol(tmp_path):
    from arena_tf.serving.protocol import SENTINEL

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("task: 5\n")
    result = subprocess.run(
        [sys.executable, "-m", "serving.submission", str(tmp_path / "run")],
        env=ENV,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1
    assert SENTINEL in result.stdout and "Traceback" in result.stdout
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert_one_error_line(errors[0] + "\n", "section task holds 5, not keys and values")


def test_a_second_bench_on_the_same_out_is_refused_naming_the_holder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    data = write_listops(tmp_path / "listops", "( ( [MAX 2 9 ] ) )\t9\n" * 3)
    with FileLock(out / ".bench.lock"):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "serving.bench",
                "--command",
                "python -c pass",
                "--task",
                "listops",
                f"--data-dir={data}",
                "--out",
                str(out),
            ],
            env=ENV,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 2
    assert_one_error_line(result.stderr, f"is in use by another serving.bench (pid {os.getpid()})")
    assert sorted(p.name for p in out.iterdir()) == []


def test_a_failed_bench_run_again_replaces_its_rows(tmp_path):
    """The command that failed, run again once its cause is mended, is not refused."""
    data = write_listops(tmp_path / "listops", "( ( [MAX 2 9 ] ) )\t9\n" * 3)
    command = [
        sys.executable,
        "-m",
        "serving.bench",
        "--command",
        "python -c pass",
        "--task",
        "listops",
        f"--data-dir={data}",
        "--scenario",
        "fixed_batch",
        "--out",
        str(tmp_path / "out"),
    ]
    first, again = (
        subprocess.run(command, env=ENV, capture_output=True, text=True, timeout=300)
        for _ in range(2)
    )
    assert first.returncode == again.returncode == 1, again.stderr
    assert (
        "unfinished: 1 of 1 rows, not all measured" in (tmp_path / "out" / "results.md").read_text()
    )
    assert "replacing the 1 row of an unfinished run" in again.stdout, again.stdout
    assert "holds another run's results" not in again.stderr


def test_the_bench_keeps_or_replaces_earlier_rows_only_when_told(tmp_path):
    from arena_tf.serving import results_dir

    row = {
        "model": "m",
        "runtime": "tf",
        "precision": "fp32",
        "scenario": "offline",
        "status": "ok",
    }
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n")
    with results_dir.claim(tmp_path, "append") as kept:
        assert kept == [row]
    with results_dir.claim(tmp_path, "overwrite") as kept:
        assert kept == []
    results_dir.finished(tmp_path)
    with pytest.raises(cli.UsageError, match="holds another run's results"):
        with results_dir.claim(tmp_path, None):
            pass
    assert not (tmp_path / ".bench.lock").exists()


def test_the_rows_of_a_bench_that_stopped_are_replaced_by_the_same_command(tmp_path):
    from arena_tf.serving import results_dir

    said = []
    with pytest.raises(KeyboardInterrupt):  # stopped while measuring: no finished() reached
        with results_dir.claim(tmp_path, None, say=said.append):
            results_dir.started(tmp_path)
            (tmp_path / "results.jsonl").write_text(
                json.dumps(
                    {
                        "model": "m",
                        "runtime": "tf",
                        "precision": "fp32",
                        "scenario": "offline",
                        "status": "ok",
                    }
                )
                + "\n"
            )
            raise KeyboardInterrupt
    with results_dir.claim(tmp_path, None, say=said.append) as kept:
        assert kept == []
    assert said == [f"replacing the 1 row of an unfinished run in {tmp_path}"]


def test_a_rerun_keeps_the_rows_an_unfinished_append_run_was_added_to(tmp_path):
    from arena_tf.serving import results_dir

    rows = [
        {"model": name, "runtime": "tf", "precision": "fp32", "scenario": "offline", "status": "ok"}
        for name in ("earlier", "unfinished")
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    results_dir.started(tmp_path, earlier=1)  # an --append run after one row, stopped
    said = []
    with results_dir.claim(tmp_path, None, say=said.append) as kept:
        assert kept == rows[:1]
    assert said == [
        f"replacing the 1 row of an unfinished run in {tmp_path}, keeping the 1 before it"
    ]


def test_merge_of_a_partial_row_leaves_results_json_as_it_was_and_reports_say_why(tmp_path):
    ours, theirs = tmp_path / "results.json", tmp_path / "results-1.json"
    whole = {
        "suite": "s",
        "task": "listops",
        "mechanism": "linear",
        "seed": 0,
        "test_accuracy": 0.3,
        "best_val_accuracy": 0.3,
        "steps": 10,
        "train_seconds": 6.0,
        "device": "CPU",
        "git_commit": "abc",
        "command": "python -m arena_tf.train",
    }
    ours.write_text(json.dumps([whole]))
    before = ours.read_text()
    theirs.write_text(
        json.dumps(
            [
                {**whole, "mechanism": "full"},
                {"suite": "s", "task": "listops", "mechanism": "local", "seed": 0},
            ]
        )
    )
    with pytest.raises(
        cli.UsageError,
        match=r"row 1 \(s/listops/local/0\) is not a whole "
        r"result: no test_accuracy",
    ):
        merge([theirs], ours)
    assert ours.read_text() == before
    ours.write_text(json.dumps([whole, {**whole, "seed": 1, "test_accuracy": float("nan")}]))
    with pytest.raises(cli.UsageError, match="test_accuracy=nan is not a fraction"):
        read_results(ours)  # what `reproduce report` reads: one line, not a KeyError


def tiny_model(**changes):
    return ModelConfig(
        **{
            **dict(
                num_layers=2,
                num_heads=2,
                emb_dim=32,
                qkv_dim=32,
                mlp_dim=64,
                max_len=256,
                vocab_size=20,
                num_classes=10,
            ),
            **changes,
        }
    )


def test_the_memory_guard_refuses_with_the_estimate_and_the_memory_available():
    with pytest.raises(cli.UsageError) as refused:
        memory_guard.check_fits(tiny_model(), batch_size=32, available=0.001, gpu=False)
    line = f"error: {refused.value}\n"
    assert_one_error_line(line, "but this machine has 0.0 GB available", "lower train.batch_size")
    memory_guard.check_fits(tiny_model(), batch_size=32, available=1.0, gpu=False)
    # Host memory says nothing of a GPU's: a GPU run is left to the framework's own error.
    memory_guard.check_fits(tiny_model(), batch_size=32, available=0.001, gpu=True)
    small = memory_guard.estimate_gb(tiny_model(), 32)
    assert memory_guard.estimate_gb(tiny_model(max_len=1024), 32) > 8 * small  # quadratic
    assert memory_guard.estimate_gb(tiny_model(), 64) > 1.9 * small


def test_the_benchmark_skips_a_configuration_larger_than_the_memory_available():
    from arena_tf.benchmark import memory

    assert memory.over_cap(3.0, cap_gb=16, available=2.0) == (
        "estimated 3.0 GB exceeds the 2.0 GB of memory available on this machine"
    )
    assert memory.over_cap(1.0, cap_gb=16, available=2.0) is None


def test_images_of_another_size_or_mode_do_not_fit_pathfinder(tmp_path):
    from PIL import Image

    from arena_tf.tasks.pathfinder import misfit

    for name, mode, size in (
        ("good", "L", (32, 32)),
        ("wide", "L", (33, 32)),
        ("colour", "RGB", (32, 32)),
    ):
        Image.new(mode, size).save(tmp_path / f"{name}.png")
    assert misfit(tmp_path / "good.png", 1024) is None
    assert misfit(tmp_path / "wide.png", 1024) == "33 x 32 pixels"
    assert misfit(tmp_path / "colour.png", 1024) == "RGB mode"
