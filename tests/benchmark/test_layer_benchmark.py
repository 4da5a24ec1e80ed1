"""The layer benchmark end to end on a tiny shape (no timing assertions), and a peer comparison."""

import json

import keras
import numpy as np
import pytest

import arena_tf.layers as attention_layers
from arena_tf.benchmark import __main__ as cli
from arena_tf.benchmark import costs, isolated, peers


def test_layer_benchmark_runs_and_writes_valid_json(tmp_path, capsys):
    output = tmp_path / "layers.json"
    cli.main(
        [
            "layers",
            "--mechanisms",
            "full",
            "linear",
            "--peers",
            "--lengths",
            "64",
            "96",
            "--batch",
            "1",
            "--heads",
            "2",
            "--head-dim",
            "8",
            "--repeats",
            "2",
            "--matmul-size",
            "128",
            "--in-process",
            "--output",
            str(output),
        ]
    )
    results = json.loads(output.read_text())
    assert results["machine"]["cores"] >= 1 and "tensorflow" in results["machine"]["versions"]
    assert len(results["matmul"]) == 2 and all(m["gflops"] > 0 for m in results["matmul"])
    rows = {(row["label"], row["length"]): row for row in results["rows"]}
    assert set(rows) == {(name, n) for name in ("full", "linear") for n in (64, 96)}
    for row in rows.values():
        assert "error" not in row, row.get("error")
        for stage in ("forward", "train"):
            assert row[stage]["median_ms"] > 0 and len(row[stage]["samples_ms"]) == 2
            assert row[stage]["gflops"] > 0 and row[stage]["peak_mb"] >= 0
        assert row["profiled"]["forward_matmul_flops"] == row["formula_flops"]
        assert row["profiled"]["train_matmul_flops"] == row["formula_train_flops"]
    printed = capsys.readouterr().out
    assert "full" in printed and "linear" in printed and "GFLOP/s" in printed


@pytest.mark.slow
def test_a_configuration_runs_in_a_fresh_process():
    spec = {
        "name": "linear",
        "params": {},
        "repeats": 2,
        "shape": {"batch": 1, "length": 32, "heads": 2, "head_dim": 8},
    }
    result = isolated.run("layer", spec, timeout=300)
    assert "error" not in result, result.get("error")
    assert result["train"]["median_ms"] > 0
    assert 0 < result["baseline_mb"] <= result["peak_rss_mb"]


def test_a_failed_configuration_gives_one_sentence():
    text = isolated.failure(-9, "Traceback...\nMemoryError: boom\n")
    assert text == "exit status -9 (killed: out of memory?): MemoryError: boom"
    tensorflow_style = "ResourceExhaustedError: OOM when allocating\n [Op:__inference_step_1]\n"
    assert isolated.failure(1, tensorflow_style).endswith(
        ": ResourceExhaustedError: OOM when allocating"
    )


def test_multi_head_attention_peer_matches_full_with_copied_weights():
    shape = {"batch": 2, "length": 32, "heads": 2, "head_dim": 8}
    result = peers.agreement({"name": "keras_mha", "shape": shape})
    assert result["agrees"] and result["relative_difference"] < 1e-5


def test_copied_weights_change_the_peer_output():
    """The comparison is not vacuous: without copying, the peer's output differs."""
    shape = costs.Shape(1, 16, 2, 8)
    layer, call = peers.build("keras_mha", shape)
    ours = attention_layers.get("full", num_heads=2, head_dim=8)
    x = keras.random.normal((1, 16, 16), seed=3)
    before = np.asarray(call(x, False))
    ours(x)
    peers.copy_projections(ours, layer, shape)
    after, expected = np.asarray(call(x, False)), np.asarray(ours(x))
    assert np.abs(before - expected).max() > 1e-3
    np.testing.assert_allclose(after, expected, atol=1e-5)
