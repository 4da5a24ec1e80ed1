"""A new export replaces the previous one only when it is complete and passes its parity check;
each precision is judged on its own (FP32 always written, a refused reduced precision reported);
bad inputs give one clear line (`error: what; expected ...; fix`) and exit status 2, a failed
export exit status 1, from the API and from the scripts."""

import json
import pathlib
import re
import subprocess
import sys

import keras
import pytest

from arena_tf import files
from arena_tf.export import context, to_onnx, to_savedmodel
from arena_tf.export.errors import ExportUsageError, ParityError
from arena_tf.export.metadata import read_metadata
from arena_tf.export.parity import Thresholds
from tests.export.conftest import write_run_dir
from tests.one_line import assert_one_error_line

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = [pytest.mark.xdist_group("test_atomic_and_errors"), pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]
FAILING = Thresholds(fp32_max_abs_diff=-1.0)  # no FP32 logits can pass
STRICT = Thresholds(error_allowance=0.0)  # no reduced-precision logits can pass, FP32 can
ERROR_LINE = re.compile(r"^error: [^;]+; expected [^;]+; .+$")


def snapshot(directory):
    """{relative path: bytes} of every file under `directory`."""
    return {p.relative_to(directory): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A linear-attention run with its FP32 SavedModel and ONNX exported once."""
    directory, _ = write_run_dir(tmp_path_factory.mktemp("atomic"), "linear")
    to_onnx.export_onnx(directory, ["fp32"], count=8)
    return directory


def test_failed_fp32_parity_keeps_the_previous_saved_model_and_exits_1(
    run_dir, capsys, monkeypatch
):
    before = snapshot(run_dir / "saved_model")
    report_before = (run_dir / "saved_model.parity.json").read_text()
    monkeypatch.setattr(context, "Thresholds", lambda: FAILING)
    status = to_savedmodel.main([str(run_dir), "--precision", "fp32", "--examples", "8"])
    captured = capsys.readouterr()
    assert status == 1 and captured.out == ""
    (line,) = captured.err.splitlines()
    assert ERROR_LINE.match(line)
    assert line.startswith(
        "error: saved_model not written: parity check failed (max |logit - keras fp32 logit| = "
    )
    assert "; expected FP32 logits within the parity threshold" in line
    assert snapshot(run_dir / "saved_model") == before
    assert (run_dir / "saved_model.parity.json").read_text() == report_before
    failed = json.loads((run_dir / "saved_model.parity.failed.json").read_text())
    assert not failed["passed"]
    assert not list(run_dir.glob(".*"))  # the rejected SavedModel was deleted


def test_failed_parity_keeps_the_previous_onnx_model(run_dir):
    before = (run_dir / "model.onnx").read_bytes()
    with pytest.raises(ParityError, match="model.onnx not written: parity check failed"):
        to_onnx.export_onnx(run_dir, ["fp32"], count=8, thresholds=FAILING)
    assert (run_dir / "model.onnx").read_bytes() == before
    assert not list(run_dir.glob(".*"))


def test_refused_reduced_precisions_do_not_stop_fp32(run_dir, capsys, monkeypatch):
    monkeypatch.setattr(context, "Thresholds", lambda: STRICT)
    status = to_savedmodel.main([str(run_dir), "--examples", "8"])
    captured = capsys.readouterr()
    assert status == 0
    assert not (run_dir / "saved_model_bf16").exists()
    failed = json.loads((run_dir / "saved_model_fp16.parity.failed.json").read_text())
    assert not failed["passed"] and failed["error"]["expected_logit_error"] == 0.0
    assert json.loads((run_dir / "saved_model.parity.json").read_text())["passed"]
    (written,) = captured.out.splitlines()
    assert written.startswith(f"{run_dir / 'saved_model'}: parity passed (max |diff| ")
    refusals = captured.err.splitlines()
    assert [line.split(" ")[1] for line in refusals] == ["saved_model_bf16", "saved_model_fp16"]
    for line, name in zip(refusals, ["saved_model_bf16", "saved_model_fp16"]):
        assert line.startswith(
            f"warning: {name} not written: parity check failed (median logit error vs keras fp32 = "
        )
        assert line.endswith(f"details in {run_dir / name}.parity.failed.json")


def test_crash_while_writing_keeps_the_previous_saved_model(run_dir, monkeypatch):
    before = snapshot(run_dir / "saved_model")

    def half_written(model, config, directory):
        (directory / "variables").mkdir(parents=True)
        (directory / "saved_model.pb").write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(to_savedmodel, "write_saved_model", half_written)
    with pytest.raises(OSError, match="disk full"):
        to_savedmodel.export_savedmodel(run_dir, ["fp32"], count=8)
    assert snapshot(run_dir / "saved_model") == before


def test_a_report_that_cannot_be_written_keeps_the_previous_artifact_and_report(
    run_dir, monkeypatch
):
    before = snapshot(run_dir / "saved_model")
    folder = (run_dir / "saved_model").stat().st_ino  # the same folder, not an equal new one
    report_before = (run_dir / "saved_model.parity.json").read_text()

    def disk_full(data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files, "json_text", disk_full)
    with pytest.raises(OSError, match="No space left"):
        to_savedmodel.export_savedmodel(run_dir, ["fp32"], count=8)
    assert snapshot(run_dir / "saved_model") == before
    assert (run_dir / "saved_model").stat().st_ino == folder
    assert (run_dir / "saved_model.parity.json").read_text() == report_before
    assert not list(run_dir.glob(".*"))  # neither temporary is left


def test_successful_export_replaces_the_previous_one_and_its_failed_report(run_dir):
    (run_dir / "saved_model" / "stale-file").write_text("from an older export")
    (run_dir / "saved_model.parity.failed.json").write_text("{}")
    to_savedmodel.export_savedmodel(run_dir, ["fp32"], count=8)
    assert not (run_dir / "saved_model" / "stale-file").exists()
    assert not (run_dir / "saved_model.parity.failed.json").exists()
    assert json.loads((run_dir / "saved_model.parity.json").read_text())["passed"]
    assert read_metadata(run_dir / "saved_model")["mechanism"] == "linear"


def truncated_copy(run_dir, tmp_path):
    target = tmp_path / "truncated"
    target.mkdir()
    data = (run_dir / "model.keras").read_bytes()
    (target / "model.keras").write_bytes(data[: len(data) // 2])
    return target


def foreign_model(run_dir, tmp_path):
    inputs = keras.Input((4,))
    keras.Model(inputs, keras.layers.Dense(2)(inputs)).save(tmp_path / "model.keras")
    return tmp_path


BAD_INPUTS = {
    "missing": (lambda run_dir, tmp: tmp / "nowhere", "does not exist"),
    "not a run dir": (lambda run_dir, tmp: tmp, "is not a run directory: it holds no model.keras"),
    "truncated": (truncated_copy, "cannot load .*model.keras"),
    "not keras": (lambda run_dir, tmp: run_dir / "config.yaml", "is not a .keras file"),
    "foreign model": (foreign_model, "holds a Keras model without an arena_tf Encoder layer"),
}


@pytest.mark.parametrize("script", [to_savedmodel, to_onnx], ids=["to_savedmodel", "to_onnx"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_error_line_and_exit_status_2(run_dir, tmp_path, capsys, script, case):
    make_path, pattern = BAD_INPUTS[case]
    status = script.main([str(make_path(run_dir, tmp_path))])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    (line,) = captured.err.splitlines()
    assert ERROR_LINE.match(line), line
    assert re.search(pattern, line)


BAD_ARGUMENTS = {
    "precision": (to_savedmodel, ["--precision", "fp8"], "invalid item 'fp8'"),
    "bf16 onnx": (to_onnx, ["--precision", "bf16"], "invalid choice: 'bf16'"),
    "opset": (to_onnx, ["--opset", "9"], "opset 9 is not supported; expected 13 to"),
    "examples": (to_savedmodel, ["--examples", "0"], "'0' is not a whole number >= 1"),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_bad_argument_is_one_error_line_and_exit_status_2(run_dir, capsys, case):
    script, arguments, pattern = BAD_ARGUMENTS[case]
    try:
        status = script.main([str(run_dir), *arguments])
    except SystemExit as exited:  # argparse's own errors exit from parse_args
        status = exited.code
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    (line,) = captured.err.splitlines()
    assert ERROR_LINE.match(line), line
    assert pattern in line


def test_debug_shows_the_traceback_of_a_usage_error(tmp_path):
    with pytest.raises(ExportUsageError, match="does not exist"):
        to_savedmodel.main([str(tmp_path / "missing"), "--debug"])


def test_bad_opset_and_precision_are_usage_errors_of_the_api(run_dir):
    with pytest.raises(ExportUsageError, match="opset 9 is not supported; expected 13 to"):
        to_onnx.export_onnx(run_dir, count=8, opset=9)
    with pytest.raises(ExportUsageError, match="unknown precision 'fp8'; expected one of fp32"):
        to_savedmodel.export_savedmodel(run_dir, ["fp8"], count=8)


def test_read_metadata_of_something_else_is_one_clear_error(run_dir):
    with pytest.raises(ExportUsageError, match="neither a SavedModel directory nor an .onnx file"):
        read_metadata(run_dir / "config.yaml")


def run_script(*args):
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def test_scripts_run_from_the_repository_root(tmp_path):
    run_dir, _ = write_run_dir(tmp_path / "run", "full")
    done = run_script("export/to_onnx.py", str(run_dir), "--precision", "fp16", "--examples", "4")
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == [
        str(run_dir / "saved_model"),
        str(run_dir / "model.fp16.onnx"),
    ]
    failed = run_script("export/to_savedmodel.py", str(tmp_path / "missing"))
    assert failed.returncode == 2
    assert "Traceback" not in failed.stderr
    assert_one_error_line(failed.stderr, "does not exist; expected a run directory")


def test_a_keras_file_without_config_exports_beside_it(run_dir, tmp_path):
    (tmp_path / "best.keras").write_bytes((run_dir / "model.keras").read_bytes())
    (report,) = to_savedmodel.export_savedmodel(tmp_path / "best.keras", ["fp32"], count=4).values()
    assert report["examples"]["origin"] == "generated: no config.yaml names the task"
    metadata = read_metadata(tmp_path / "saved_model")
    assert metadata["task"] is None
    assert metadata["source"] == str((tmp_path / "best.keras").resolve())
