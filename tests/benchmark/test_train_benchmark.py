"""The training benchmark on a tiny length (in-process), and its batch rule."""

import json

from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import training


def test_train_benchmark_runs_and_writes_valid_json(tmp_path):
    output = tmp_path / "train.json"
    cli.main(["train", "--mechanisms", "linear", "--lengths", "16", "--batch", "2", "--warmup",
              "1", "--steps", "2", "--xla", "off", "--in-process", "--output", str(output)])
    results = json.loads(output.read_text())
    assert results["model"]["num_layers"] == 4 and results["options"]["batch"] == 2
    (row,) = results["rows"]
    assert "error" not in row, row.get("error")
    assert (row["name"], row["length"], row["jit"], row["batch"]) == ("linear", 16, False, 2)
    assert row["steps_per_second"] > 0 and len(row["step"]["samples_ms"]) == 2
    assert row["train_flops"] > 0


def test_batch_is_halved_until_the_estimate_fits_the_cap():
    batch, estimate = training.fitting_batch("full", {}, 32, 4096, cap_gb=16)
    assert batch < 32 and estimate <= 16
    doubled, _ = training.fitting_batch("full", {}, batch * 2, 4096, cap_gb=16)
    assert doubled == batch  # the largest power-of-two fraction that fits
    assert training.fitting_batch("linear", {}, 32, 1024, cap_gb=16)[0] == 32
