"""A tiny run writes a complete run directory: config.yaml, TensorBoard events with every scalar
for train and validation, checkpoints, metrics.json and a model.keras that loads and predicts as
the trained model.

The run directory does not depend on the mechanism; what does is the state a checkpoint and
model.keras carry. RUN_MECHANISMS are the kinds of state there are: plain weights (full), random
draws kept as non-trainable state (bigbird, performer, reformer, sinkhorn) and a state space (s5).
Every mechanism's training step itself is compiled under each backend by tests/layers (Keras'
layer harness fits each layer; the save/load contract predicts through a masked model)."""

import collections
import json

import keras
import numpy as np
import pytest
import yaml

from arena_tf import train
from arena_tf.training.events import read_scalars
from arena_tf.training.verdict import verdict
from tests.training.conftest import TINY, loop

# Patterns small enough for 33 positions (32 tokens and CLS).
SMALL = {
    "bigbird": ["block_size=8", "num_random_blocks=1"],
    "linformer": ["projected_length=8"],
    "local": ["block_size=8"],
    "longformer": ["window=8"],
    "performer": ["num_features=16"],
    "reformer": ["n_buckets=2", "chunk_size=16"],
    "sinkhorn": ["block_size=8"],
    "sparse": ["block_size=8", "summary_size=2"],
}
SCALARS = {
    "loss",
    "accuracy",
    "learning_rate",
    "steps_per_second",
    "examples_per_second",
    "peak_memory_mb",
}
METRICS = {
    "test_accuracy",
    "test_loss",
    "test_chance",
    "test_verdict",
    "steps",
    "wall_time_s",
    "examples_per_second",
    "parameters",
    "peak_memory_mb",
}
STEPS = 3


def tiny_run(name, data_dir, run_dir):
    params = [f"model.attention_params.{setting}" for setting in SMALL.get(name, [])]
    config, task = train.build_experiment(
        "listops", name, [*TINY, *params, *loop(STEPS, checkpoint_every=2)], data_dir=data_dir
    )
    trainer = train.Trainer(config, task, run_dir, train.backend.Distribution(), verbose=False)
    trainer.fit()
    return trainer


RUN_MECHANISMS = ("full", "bigbird", "performer", "reformer", "sinkhorn", "s5")


@pytest.mark.parametrize("name", RUN_MECHANISMS)
def test_tiny_run_writes_a_complete_run_directory(name, listops_dir, tmp_path):
    trainer = tiny_run(name, listops_dir, tmp_path / name)
    run_dir = trainer.run_dir

    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert saved == trainer.config.to_dict()
    assert saved["model"]["attention"] == name

    for split in ("train", "validation"):
        scalars = read_scalars(run_dir / split)
        expected = SCALARS if split == "train" else {"loss", "accuracy"}  # what evaluation measures
        assert expected <= set(scalars) and (split == "train" or set(scalars) == expected), (
            f"{split} holds {sorted(scalars)}"
        )
        assert max(scalars["loss"]) == STEPS
        assert all(np.isfinite(list(values.values())).all() for values in scalars.values())
    assert sorted(read_scalars(run_dir / "train")["loss"]) == list(range(1, STEPS + 1))

    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt-*.index"))
    assert checkpoints == ["ckpt-2.index", f"ckpt-{STEPS}.index"]

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert METRICS <= set(metrics)
    assert metrics["steps"] == STEPS and metrics["parameters"] == trainer.model.count_params()
    assert 0 <= metrics["test_accuracy"] <= 1 and metrics["test_examples"] == 300
    assert metrics["examples_per_second"] > 0 and metrics["peak_memory_mb"] > 0
    labels = collections.Counter(int(y) for _, y in trainer.task.load_split("test"))
    assert metrics["test_chance"] == pytest.approx(max(labels.values()) / 300)
    assert metrics["test_verdict"] == verdict(metrics["test_accuracy"], metrics["test_chance"], 300)

    loaded = keras.saving.load_model(run_dir / "model.keras")
    tokens = next(iter(trainer.task.dataset("test", 8)))[0]
    np.testing.assert_allclose(
        loaded(tokens, training=False), trainer.model(tokens, training=False), atol=1e-5
    )
