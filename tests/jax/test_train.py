"""Training under KERAS_BACKEND=jax writes the run directory the TensorFlow trainer writes:
config.yaml, TensorBoard events, checkpoints that resume exactly, metrics.json with test_accuracy
and a model.keras that predicts as the trained model; data parallelism over two CPU devices follows
the one-device losses; what has no JAX meaning is refused in one line."""

import json
import sys

import keras
import numpy as np
import pytest
import yaml

from arena_tf import train
from arena_tf.training.events import read_scalars
from tests.training.conftest import TINY, TRAIN, cli_args, loop, run
from tests.training.test_artifacts import METRICS, RUN_MECHANISMS, SCALARS, SMALL

STEPS = 3


def trainer_for(name, data_dir, run_dir, overrides=()):
    params = [f"model.attention_params.{setting}" for setting in SMALL.get(name, [])]
    config, task = train.build_experiment(
        "listops",
        name,
        [*TINY, *params, *loop(STEPS, checkpoint_every=2), *overrides],
        data_dir=data_dir,
    )
    return train.Trainer(config, task, run_dir, train.backend.Distribution(), verbose=False)


@pytest.mark.parametrize("name", RUN_MECHANISMS)  # why these: tests/training/test_artifacts.py
def test_tiny_run_writes_a_complete_run_directory(name, listops_dir, tmp_path):
    trainer = trainer_for(name, listops_dir, tmp_path / name)
    metrics = trainer.fit()
    run_dir = trainer.run_dir

    assert yaml.safe_load((run_dir / "config.yaml").read_text()) == trainer.config.to_dict()
    for split in ("train", "validation"):
        scalars = read_scalars(run_dir / split)
        expected = SCALARS if split == "train" else {"loss", "accuracy"}  # what evaluation measures
        assert expected <= set(scalars) and (split == "train" or set(scalars) == expected), (
            f"{split} holds {sorted(scalars)}"
        )
        assert all(np.isfinite(list(values.values())).all() for values in scalars.values())
    assert sorted(read_scalars(run_dir / "train")["loss"]) == list(range(1, STEPS + 1))
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == [
        "ckpt-2.npz",
        f"ckpt-{STEPS}.npz",
    ]

    assert json.loads((run_dir / "metrics.json").read_text()) == metrics
    assert METRICS <= set(metrics) and metrics["backend"] == "jax"
    assert metrics["steps"] == STEPS and 0 <= metrics["test_accuracy"] <= 1
    assert metrics["test_examples"] == 300

    loaded = keras.saving.load_model(run_dir / "model.keras")
    tokens, _ = next(trainer.task.batches("test", 8))
    np.testing.assert_allclose(
        loaded(tokens, training=False), trainer.model(tokens, training=False), atol=1e-5
    )


def weights(run_dir):
    return keras.saving.load_model(run_dir / "model.keras").get_weights()


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(listops_dir, tmp_path):
    # dropout on (its seed state must come back) and a constant rate (the step count changes)
    settings = ["model.dropout=0.1", "model.attention_dropout=0.1", "train.schedule=constant"]
    whole = trainer_for(
        "full",
        listops_dir,
        tmp_path / "whole",
        [*settings, "train.num_train_steps=6", "train.checkpoint_every=3"],
    )
    whole.fit()
    first = trainer_for(
        "full",
        listops_dir,
        tmp_path / "split",
        [*settings, "train.num_train_steps=3", "train.checkpoint_every=3"],
    )
    first.fit()
    rest = trainer_for(
        "full",
        listops_dir,
        tmp_path / "split",
        [*settings, "train.num_train_steps=6", "train.checkpoint_every=3"],
    )
    assert rest.resume() == 3
    rest.fit()
    assert rest.metrics["trained_steps"] == 3
    # the whole run's training time: the first session's, kept beside its checkpoint, plus this one
    first_seconds = read_scalars(tmp_path / "split" / "train")["train_seconds"][3]
    assert 0 < first_seconds <= first.metrics["train_seconds"]
    assert rest.metrics["train_seconds"] == pytest.approx(
        first_seconds + rest.metrics["wall_time_s"]
    )
    for a, b in zip(weights(tmp_path / "whole"), weights(tmp_path / "split"), strict=True):
        np.testing.assert_array_equal(a, b)
    losses = read_scalars(tmp_path / "split" / "train")["loss"]
    expected = read_scalars(tmp_path / "whole" / "train")["loss"]
    assert losses == expected


def test_data_parallel_on_two_cpu_devices_matches_one_device(listops_dir, tmp_path, jax_env):
    overrides = [*TINY, *loop(STEPS)]
    code, out, err = run(
        TRAIN
        + cli_args(
            listops_dir,
            tmp_path / "parallel",
            overrides,
            extra=["--strategy=mirrored", "--cpu_devices=2"],
        ),
        env=jax_env,
    )
    assert code == 0, err
    assert "strategy: DataParallel (keras.distribution, JAX) with 2 replica(s)" in out
    assert json.loads((tmp_path / "parallel" / "metrics.json").read_text())["replicas"] == 2
    single = trainer_for("full", listops_dir, tmp_path / "single", loop(STEPS))
    single.fit()
    for split in ("train", "validation"):
        expected = read_scalars(single.run_dir / split)["loss"]
        actual = read_scalars(tmp_path / "parallel" / split)["loss"]
        assert actual.keys() == expected.keys()
        np.testing.assert_allclose(
            [actual[s] for s in sorted(actual)], [expected[s] for s in sorted(expected)], rtol=1e-4
        )


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--strategy=multi_worker"], "error: JAX could not join the run's processes: "),
        (["--tpu=local"], "error: --tpu names TensorFlow's TPUStrategy"),
    ],
)
def test_what_jax_does_not_have_is_refused_in_one_line(
    listops_dir, tmp_path, jax_env, extra, message
):
    code, out, err = run(
        TRAIN + cli_args(listops_dir, tmp_path / "run", [*TINY, *loop(1)], extra=extra), env=jax_env
    )
    assert code == 2
    assert err.strip().startswith(message) and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


BLOCK_TENSORFLOW = (
    "import sys, runpy; sys.modules['tensorflow'] = None; "
    "sys.argv = ['arena_tf.train', *sys.argv[1:]]; "
    "runpy.run_module('arena_tf.train', run_name='__main__')"
)


@pytest.mark.slow
def test_the_command_trains_where_tensorflow_cannot_be_imported(listops_dir, tmp_path, jax_env):
    """What `pip install -e ".[jax]"` gives: the package, its data and TensorBoard events work
    with `import tensorflow` failing."""
    run_dir = tmp_path / "run"
    code, out, err = run(
        [
            sys.executable,
            "-c",
            BLOCK_TENSORFLOW,
            *cli_args(listops_dir, run_dir, [*TINY, *loop(2)]),
        ],
        env=jax_env,
    )
    assert code == 0, err
    assert json.loads((run_dir / "metrics.json").read_text())["steps"] == 2
    assert sorted(read_scalars(run_dir / "train")["loss"]) == [1, 2]
    assert (run_dir / "model.keras").is_file()
