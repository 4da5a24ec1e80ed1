"""`python -m arena_tf.benchmark gpu`: its --help, a --dry-run at tiny sizes on the CPU under JAX
(rows dated, naming the device and the kernel, the commit read from git), the one-line refusal
under another backend, and the GPU tables: "not measured" without results, targets held against
the measured rows. No timing value is asserted."""

import json
import os
import subprocess
import sys

import pytest

from arena_tf.benchmark import gpu_report
from arena_tf.benchmark.__main__ import DRY_RUNS, RESULTS, default_gpu_paths, main, parse_args

pytestmark = pytest.mark.slow  # starts processes


def test_help_documents_the_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["gpu", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for words in ("8 minutes", "Table 2", "ListOps", "--dry-run", "never estimated", "fused"):
        assert words in text


def test_dry_run_on_cpu_under_jax_writes_dated_rows_and_tables(tmp_path):
    output, report = tmp_path / "gpu.json", tmp_path / "gpu.md"
    env = {**os.environ, "KERAS_BACKEND": "jax", "ARENA_TF_COMMIT": ""}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena_tf.benchmark",
            "gpu",
            "--dry-run",
            "--mechanisms",
            "linformer",
            "--output",
            str(output),
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(output.read_text())
    head = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert results["commit"].startswith(head) and results["dry_run"]
    parts = {row["part"] for row in results["rows"]}
    assert parts == {"layers", "table2", "listops"}
    names = {row["name"] for row in results["rows"] if row["part"] == "layers"}
    assert names == {"linformer", "jax_dpa"}
    for row in results["rows"]:
        assert row["device"] == "cpu"
        assert row["status"] in ("measured", "not measured"), row
        if row["status"] == "measured":
            assert row["date"].endswith("UTC") and row["kernel"]
    text = report.read_text()
    assert "a --dry-run at tiny sizes" in text and "linformer" in text


def test_when_every_row_is_skipped_it_says_so_and_exits_1(tmp_path):
    output, report = tmp_path / "gpu.json", tmp_path / "gpu.md"
    env = {**os.environ, "KERAS_BACKEND": "jax", "ARENA_TF_COMMIT": ""}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena_tf.benchmark",
            "gpu",
            "--dry-run",
            "--parts",
            "layers",
            "--mechanisms",
            "linformer",
            "--memory-cap-gb",
            "0.000001",
            "--output",
            str(output),
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "no row was measured (the first failed: MemoryError: skipped: estimated" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not any(row["status"] == "measured" for row in json.loads(output.read_text())["rows"])


def test_under_another_backend_it_refuses_in_one_line(tmp_path, capsys):
    import keras

    if keras.backend.backend() == "jax":
        pytest.skip("the refusal is for a backend other than JAX")
    status = main(["gpu", "--dry-run", "--output", str(tmp_path / "gpu.json")])
    error = capsys.readouterr().err.strip()
    assert status == 2 and len(error.splitlines()) == 1
    assert "measures under JAX" in error and "KERAS_BACKEND=jax" in error


def test_a_dry_run_writes_under_runs_unless_told_where():
    for flags, folder in ((["--dry-run"], DRY_RUNS), ([], RESULTS)):
        options = parse_args(["gpu", *flags])
        default_gpu_paths(options)
        assert (options.output, options.report) == (folder / "gpu.json", folder / "gpu.md")
    options = parse_args(["gpu", "--dry-run", "--output", "a.json", "--report", "b.md"])
    default_gpu_paths(options)
    assert (str(options.output), str(options.report)) == ("a.json", "b.md")


def test_without_results_every_table_reads_not_measured():
    text = gpu_report.render(None)
    assert "No GPU run's results yet" in text
    layer_lines = [line for line in text.splitlines() if line.startswith("| full |")]
    assert layer_lines and all("ms" not in line for line in layer_lines)
    assert "not measured" in layer_lines[0]
    assert text.count("waits for a GPU run") >= 10


def results_with(rows):
    return {
        "device": {"kind": "NVIDIA H200", "platform": "gpu"},
        "started": "2026-11-27",
        "finished": "2026-11-27",
        "commit": "abc",
        "matmul_tflops": {"bf16": 500.0, "fp32": 50.0},
        "rows": [
            {
                "status": "measured",
                "device": "NVIDIA H200",
                "kernel": "fused",
                "memory_mb": 1.0,
                **row,
            }
            for row in rows
        ],
    }


def layer(name, length, batch, ms, precision="bf16"):
    return {
        "part": "layers",
        "name": name,
        "length": length,
        "batch": batch,
        "ms": ms,
        "precision": precision,
    }


def test_targets_are_held_against_the_measured_rows():
    results = results_with(
        [
            layer("jax_dpa", 16384, 1, 4.8),
            layer("full", 16384, 1, 5.0),
            layer("bigbird", 16384, 1, 4.0),
            layer("full", 16384, 1, 38.0, "fp32"),
        ]
    )
    text = gpu_report.render(results)
    assert "full >= 0.8x the fused kernel at 16K (bf16): met (0.96x)" in text
    assert "bigbird >= 2x the fused kernel at 16K: missed (1.20x)" in text
    assert "full at 16K faster in bf16 than in float32: met (5.0 vs 38.0 ms)" in text
    assert "full >= 0.8x the fused kernel at 64K (bf16): waits for a GPU run" in text
    assert "5.00 ms (fused)" in text and "NVIDIA H200" in text


def test_a_failed_row_reads_not_measured_in_the_tables():
    results = results_with([])
    results["rows"].append(
        {
            **layer("full", 65536, 1, 0.0),
            "status": "failed",
            "error": "XlaRuntimeError: RESOURCE_EXHAUSTED",
        }
    )
    assert "0.00 ms" not in gpu_report.layers_table(results)
