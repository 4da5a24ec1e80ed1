"""The training benchmark on a tiny length (in-process), and its batch rule."""

import json

from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import lra_table2
from tests.one_line import assert_one_error_line


def test_train_benchmark_runs_and_writes_valid_json(tmp_path):
    output = tmp_path / "train.json"
    cli.main(
        [
            "train",
            "--mechanisms",
            "linear",
            "--lengths",
            "16",
            "--batch",
            "2",
            "--warmup",
            "1",
            "--steps",
            "2",
            "--xla",
            "off",
            "--in-process",
            "--output",
            str(output),
        ]
    )
    results = json.loads(output.read_text())
    assert results["model"]["num_layers"] == 4 and results["options"]["batch"] == 2
    (row,) = results["rows"]
    assert "error" not in row, row.get("error")
    assert (row["name"], row["length"], row["jit"], row["batch"]) == ("linear", 16, False, 2)
    assert row["steps_per_second"] > 0 and len(row["step"]["samples_ms"]) == 2
    assert row["train_flops"] > 0


def test_batch_is_halved_until_the_estimate_fits_the_cap():
    batch, estimate = lra_table2.fitting_batch("full", {}, 32, 4096, cap_gb=16)
    assert batch < 32 and estimate <= 16
    doubled, _ = lra_table2.fitting_batch("full", {}, batch * 2, 4096, cap_gb=16)
    assert doubled == batch  # the largest power-of-two fraction that fits
    assert lra_table2.fitting_batch("linear", {}, 32, 1024, cap_gb=16)[0] == 32


def test_update_replaces_the_re_measured_rows_and_keeps_the_others(tmp_path):
    output = tmp_path / "train.json"
    common = [
        "train",
        "--lengths",
        "16",
        "--batch",
        "2",
        "--warmup",
        "1",
        "--steps",
        "2",
        "--xla",
        "off",
        "--in-process",
        "--output",
        str(output),
    ]
    cli.main([*common, "--mechanisms", "linear", "local"])
    first = json.loads(output.read_text())
    cli.main([*common, "--mechanisms", "local", "--update"])
    updated = json.loads(output.read_text())
    assert [row["name"] for row in updated["rows"]] == ["linear", "local"]
    assert updated["rows"][0] == first["rows"][0]
    assert updated["rows"][1]["step"] != first["rows"][1]["step"]  # measured again
    (update,) = updated["updates"]
    assert update["options"]["mechanisms"] == ["local"] and "finished" in update
    assert updated["started"] == first["started"]


def test_update_without_results_says_to_run_first(tmp_path, capsys):
    assert (
        cli.main(["train", "--update", "--in-process", "--output", str(tmp_path / "none.json")])
        == 2
    )
    assert_one_error_line(
        capsys.readouterr().err,
        "does not exist; expected an existing results file; run without --update first",
    )


def test_remat_both_measures_each_mechanism_stored_and_recomputed(tmp_path):
    output = tmp_path / "train.json"
    cli.main(
        [
            "train",
            "--mechanisms",
            "linear",
            "--lengths",
            "16",
            "--batch",
            "2",
            "--warmup",
            "1",
            "--steps",
            "2",
            "--xla",
            "off",
            "--remat",
            "both",
            "--in-process",
            "--output",
            str(output),
        ]
    )
    rows = json.loads(output.read_text())["rows"]
    assert [(row["name"], row["remat"]) for row in rows] == [("linear", False), ("linear", True)]
    assert all("error" not in row and row["steps_per_second"] > 0 for row in rows)
