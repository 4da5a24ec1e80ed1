"""`train.remat=true` trains the same model: with dropout on, a run that recomputes every block in
the backward pass ends with the weights of a run that stores the activations, and config.yaml
records the choice. (That it saves memory is measured, not tested: `python -m arena_tf.benchmark
train --remat both`, docs/results/efficiency/report.md.)"""

import keras
import numpy as np
import yaml

import arena_tf.models  # noqa: F401 (registers the layers model.keras holds)
from tests.training.conftest import TINY, TRAIN, cli_args, finish, loop, start

OVERRIDES = [
    *TINY,
    "model.num_layers=2",
    "model.dropout=0.2",
    "model.attention_dropout=0.2",
    *loop(12),
]


def test_remat_ends_with_the_same_weights(listops_dir, tmp_path):
    runs = {remat: tmp_path / f"remat-{remat}" for remat in ("false", "true")}
    processes = [
        start(TRAIN + cli_args(listops_dir, run_dir, [*OVERRIDES, f"train.remat={remat}"]))
        for remat, run_dir in runs.items()
    ]
    for process in processes:
        code, _, err = finish(process)
        assert code == 0, err[-2000:]
    config = yaml.safe_load((runs["true"] / "config.yaml").read_text())
    assert config["train"]["remat"] is True
    stored, recomputed = (
        keras.saving.load_model(runs[key] / "model.keras").get_weights()
        for key in ("false", "true")
    )
    assert len(stored) == len(recomputed)
    for want, got in zip(stored, recomputed):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
