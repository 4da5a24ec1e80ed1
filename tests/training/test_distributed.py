"""Several replicas train as one device does: MirroredStrategy over two logical CPU devices follows
the one-device loss trajectory for the same global batch, and MultiWorkerMirroredStrategy with two
worker processes on this machine ends with the same weights on both, the chief alone writing the
run directory."""

import json

import numpy as np

from arena_tf import train
from arena_tf.training.events import read_scalars
from tests.training.conftest import (
    DRIVER,
    TINY,
    TRAIN,
    cli_args,
    finish,
    free_port,
    load_weights,
    loop,
    run,
    start,
)

STEPS = 6
OVERRIDES = [*TINY, *loop(STEPS)]


def test_mirrored_on_two_cpu_devices_matches_one_device(listops_dir, tmp_path):
    mirrored = tmp_path / "mirrored"
    code, out, err = run(
        TRAIN
        + cli_args(
            listops_dir, mirrored, OVERRIDES, extra=["--strategy=mirrored", "--cpu_devices=2"]
        )
    )
    assert code == 0, err
    assert "strategy: MirroredStrategy with 2 replica(s)" in out
    assert json.loads((mirrored / "metrics.json").read_text())["replicas"] == 2

    config, task = train.build_experiment("listops", "full", OVERRIDES, data_dir=listops_dir)
    single = train.Trainer(
        config, task, tmp_path / "single", train.backend.Distribution(), verbose=False
    )
    single.fit()

    for split in ("train", "validation"):
        expected = read_scalars(single.run_dir / split)["loss"]
        assert len(expected) == (STEPS if split == "train" else 1)
        actual = read_scalars(mirrored / split)["loss"]
        assert actual.keys() == expected.keys()
        np.testing.assert_allclose(
            [actual[s] for s in sorted(actual)], [expected[s] for s in sorted(expected)], rtol=1e-4
        )


def test_two_workers_agree_and_only_the_chief_writes(listops_dir, tmp_path):
    ports = [free_port(), free_port()]
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    workers = []
    for index in range(2):
        tf_config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        command = (
            DRIVER
            + [tmp_path / f"weights{index}.npz"]
            + cli_args(
                listops_dir, tmp_path / f"run{index}", OVERRIDES, extra=["--strategy=multi_worker"]
            )
        )
        workers.append(start(command, env={"TF_CONFIG": json.dumps(tf_config)}))
    results = [finish(worker) for worker in workers]
    for code, _, err in results:
        assert code == 0, err[-3000:]
    assert "MultiWorkerMirroredStrategy with 2 replica(s)" in results[0][1]

    chief, other = (load_weights(tmp_path / f"weights{index}.npz") for index in range(2))
    for a, b in zip(chief, other, strict=True):
        np.testing.assert_array_equal(a, b)
    metrics = json.loads((tmp_path / "run0" / "metrics.json").read_text())
    assert metrics["steps"] == STEPS and metrics["replicas"] == 2
    assert {p.name for p in (tmp_path / "run0").iterdir()} >= {
        "config.yaml",
        "metrics.json",
        "model.keras",
        "checkpoints",
        "train",
        "validation",
    }
    assert not (tmp_path / "run1").exists()
