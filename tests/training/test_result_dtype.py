"""Every results.json row names the dtype its run trained in and the device: new rows from the
run's metrics.json, rows recorded before rows named a dtype as float32 (what every such run
used)."""

import json

import pytest
import yaml

from arena_tf.reproduce import running
from arena_tf.reproduce.results import UNRECORDED_DTYPE, merge, read_results, record
from arena_tf.reproduce.suites import load_suite, plan
from tests.training.conftest import TINY, loop


@pytest.mark.parametrize("precision", ["float32", "mixed_bfloat16"])
def test_a_new_row_names_the_precision_and_device_its_run_trained_on(
    precision, listops_dir, tmp_path
):
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "tiny.yaml").write_text(
        yaml.safe_dump(
            {
                "task": "listops",
                "data_dir": str(listops_dir),
                "mechanisms": ["linear"],
                "seeds": [0],
                "overrides": [*TINY, *loop(2), f"train.precision={precision}"],
                "paper": {},
            }
        )
    )
    suite = load_suite("tiny", suites)
    runs = plan(suite, runs_dir=tmp_path / "runs")
    results = tmp_path / "results.json"
    running.run_suite(suite, runs, results=results, doc=tmp_path / "doc.md", suites_dir=suites)
    metrics = json.loads((runs[0].run_dir / "metrics.json").read_text())
    assert metrics["precision"] == precision
    (row,) = json.loads(results.read_text())
    assert row["dtype"] == precision
    assert row["device"].startswith("CPU: ") and row["device"] == metrics["device"]


def old_row(mechanism):
    """A row as results.json held it before rows named their dtype."""
    return {
        "suite": "s",
        "task": "listops",
        "mechanism": mechanism,
        "seed": 0,
        "test_accuracy": 0.35,
        "best_val_accuracy": 0.36,
        "test_examples": 2000,
        "steps": 5000,
        "train_seconds": 1800.0,
        "device": "CPU: AMD EPYC, 2 cores",
        "date": "2026-11-27",
        "git_commit": "2de9d5f",
        "backend": "tensorflow",
        "command": f"python -m arena_tf.train --model={mechanism}",
        "validation_curve": [[5000, 0.36]],
    }


def test_rows_recorded_without_a_dtype_read_as_float32_and_are_written_with_it(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps([old_row("full")]))
    assert UNRECORDED_DTYPE == "float32"
    assert [row["dtype"] for row in read_results(results)] == ["float32"]
    record({**old_row("linear"), "dtype": "mixed_bfloat16"}, results)
    stored = json.loads(results.read_text())
    assert [(row["mechanism"], row["dtype"]) for row in stored] == [
        ("full", "float32"),
        ("linear", "mixed_bfloat16"),
    ]


def test_merging_an_older_copy_of_a_row_is_not_a_conflict(tmp_path):
    results, older = tmp_path / "results.json", tmp_path / "older.json"
    record({**old_row("full"), "dtype": "float32"}, results)
    older.write_text(json.dumps([old_row("full")]))  # the same row, written before dtypes
    assert merge([older], results) == 0
