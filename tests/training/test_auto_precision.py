"""`train.precision: auto` (the default): mixed_bfloat16 where a GPU is detected (mocked here),
float32 elsewhere, a named precision kept; metrics.json states what ran and what was asked, and a
GPU run states its model FLOP utilisation against the bf16 matmul rate (mocked: no GPU here)."""

import json

import keras
import pytest

from arena_tf import train
from arena_tf.config import TrainConfig
from arena_tf.training import auto_precision, utilisation
from tests.training.conftest import TINY, loop


def test_auto_is_the_default_and_resolves_by_device():
    assert TrainConfig().precision == auto_precision.AUTO
    assert auto_precision.resolve("auto", gpu=True) == "mixed_bfloat16"
    assert auto_precision.resolve("auto", gpu=False) == "float32"
    assert auto_precision.resolve("float32", gpu=True) == "float32"  # the user's word stands
    assert auto_precision.resolve("mixed_float16", gpu=False) == "mixed_float16"


@pytest.fixture
def restored_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


def tiny_metrics(data_dir, run_dir, overrides=()):
    config, task = train.build_experiment(
        "listops", "full", [*TINY, *loop(2), *overrides], data_dir=data_dir
    )
    trainer = train.Trainer(config, task, run_dir, train.backend.Distribution(), verbose=False)
    trainer.fit()
    return json.loads((run_dir / "metrics.json").read_text())


def test_on_a_gpu_auto_trains_in_bf16_and_states_its_utilisation(
    listops_dir, tmp_path, monkeypatch, restored_policy
):
    monkeypatch.setattr(auto_precision, "gpu_detected", lambda: True)
    monkeypatch.setattr(utilisation, "bf16_matmul_tflops", lambda: 2.0)
    metrics = tiny_metrics(listops_dir, tmp_path / "gpu")
    assert metrics["precision"] == "mixed_bfloat16" and metrics["precision_requested"] == "auto"
    assert metrics["matmul_bf16_tflops"] == 2.0 and metrics["model_flops_per_step"] > 0
    assert 0 < metrics["model_flop_utilisation"]


def test_on_a_gpu_a_named_precision_is_kept(listops_dir, tmp_path, monkeypatch, restored_policy):
    monkeypatch.setattr(auto_precision, "gpu_detected", lambda: True)
    monkeypatch.setattr(utilisation, "bf16_matmul_tflops", lambda: 2.0)
    metrics = tiny_metrics(listops_dir, tmp_path / "named", ["train.precision=float32"])
    assert metrics["precision"] == "float32" and metrics["precision_requested"] == "float32"


def test_on_a_cpu_auto_trains_in_float32_without_utilisation(listops_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(auto_precision, "gpu_detected", lambda: False)
    metrics = tiny_metrics(listops_dir, tmp_path / "cpu")
    assert metrics["precision"] == "float32" and "model_flop_utilisation" not in metrics


def test_a_resumed_run_keeps_the_precision_it_was_saved_in(
    listops_dir, tmp_path, monkeypatch, restored_policy
):
    monkeypatch.setattr(auto_precision, "gpu_detected", lambda: False)
    tiny_metrics(listops_dir, tmp_path / "run")  # float32 on the CPU, config.yaml says so
    monkeypatch.setattr(auto_precision, "gpu_detected", lambda: True)
    monkeypatch.setattr(utilisation, "bf16_matmul_tflops", lambda: 2.0)
    config, _ = train.build_experiment("listops", "full", [*TINY, *loop(2)], data_dir=listops_dir)
    assert auto_precision.resolved(config, tmp_path / "run").train.precision == "float32"
    assert auto_precision.resolved(config, tmp_path / "new").train.precision == "mixed_bfloat16"
