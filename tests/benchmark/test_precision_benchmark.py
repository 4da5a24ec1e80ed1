"""`python -m arena_tf.benchmark precision`: both dtypes of a suite's model timed in turns, on a
tiny stand-in of the suite's shape (the command's numbers are the benchmark's, not a test's)."""

import json

import pytest

from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import precision
from arena_tf.training.experiment import build_experiment


@pytest.fixture
def tiny_shapes(monkeypatch):
    """Every suite's shape replaced by a 32-token, batch-2 model of the same mechanism."""

    def tiny(shape, mechanism):
        return build_experiment(
            "listops",
            mechanism,
            [
                "task.max_len=32",
                "train.batch_size=2",
                "model.num_layers=1",
                "model.attention_params.projected_length=8",
            ],
            preset="cpu",
        )

    monkeypatch.setattr(precision, "experiment", tiny)


def test_precision_writes_both_dtypes_and_the_rounds_speed_ups(tiny_shapes, tmp_path, capsys):
    output = tmp_path / "precision.json"
    cli.main(
        [
            "precision",
            "--shapes",
            "cpu-listops",
            "--mechanisms",
            "linformer",
            "--rounds",
            "2",
            "--steps",
            "1",
            "--matmul-size",
            "64",
            "--in-process",
            "--output",
            str(output),
        ]
    )
    results = json.loads(output.read_text())
    assert set(results["bf16_flags"]) <= {"avx512_bf16", "amx_bf16"}
    assert results["matmul"]["size"] == 64 and results["matmul"]["bfloat16_gflops"] > 0
    (row,) = results["rows"]
    assert "error" not in row, row.get("error")
    assert (row["shape"], row["mechanism"], row["batch"], row["length"]) == (
        "cpu-listops",
        "linformer",
        2,
        32,
    )
    assert len(row["speedups"]) == 2
    for dtype in precision.DTYPES:
        assert len(row[dtype]["round_ms"]) == 2 and row[dtype]["steps_per_second"] > 0
    printed = capsys.readouterr().out
    assert "mixed_bfloat16" in printed and "speed-up" in printed


def test_rounds_alternate_which_dtype_goes_first():
    calls = []

    def step(dtype):
        class Done:
            def numpy(self):
                calls.append(dtype)

        return lambda *batch: Done()

    seconds = precision.interleaved(
        {dtype: step(dtype) for dtype in precision.DTYPES}, (), rounds=2, count=1
    )
    assert calls == ["float32", "mixed_bfloat16", "mixed_bfloat16", "float32"]
    assert all(len(rounds) == 2 for rounds in seconds.values())


def test_a_rounds_speed_up_is_float32_time_over_bfloat16_time():
    result = precision.summary(
        {"float32": [[2.0, 2.0], [3.0, 3.0]], "mixed_bfloat16": [[1.0, 1.0], [3.0, 3.0]]}
    )
    assert result["speedups"] == [2.0, 1.0]
    assert (result["speedup_min"], result["speedup_max"]) == (1.0, 2.0)
    assert result["float32"]["steps_per_second"] == pytest.approx(1 / 2.5)


def test_when_no_row_could_be_measured_it_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    output = tmp_path / "precision.json"
    monkeypatch.setattr(
        precision.isolated,
        "runner",
        lambda in_process: lambda kind, spec, timeout: {"error": "timed out after 1 s"},
    )
    status = cli.main(
        [
            "precision",
            "--shapes",
            "cpu-listops",
            "--mechanisms",
            "linformer",
            "--in-process",
            "--output",
            str(output),
        ]
    )
    error = capsys.readouterr().err.strip()
    assert status == 1 and len(error.splitlines()) == 1
    assert "no row was measured: all 1 failed (the first: timed out after 1 s)" in error
    assert json.loads(output.read_text())["rows"][0]["error"] == "timed out after 1 s"


def test_under_jax_it_refuses_before_measuring(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(precision.keras.backend, "backend", lambda: "jax")
    status = cli.main(["precision", "--output", str(tmp_path / "precision.json")])
    error = capsys.readouterr().err.strip()
    assert status == 2 and "times TensorFlow training steps, but KERAS_BACKEND=jax" in error
    assert not (tmp_path / "precision.json").exists()
