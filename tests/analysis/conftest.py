"""Run directories like `python -m arena_tf.train` writes, with tiny untrained models and data.

`pathfinder_run`: 32 x 32 pixels, `full` attention, mean pooling (explicit weights, image maps).
`listops_run`: ListOps tokens, `local` attention, CLS pooling (identity probe, text strips).
"""

import dataclasses

import pytest

import arena_tf.tasks as tasks
from arena_tf.config import ExperimentConfig, ModelConfig, TaskConfig, TrainConfig
from arena_tf.generators import listops
from arena_tf.models import build_classifier

LAYERS = 2
LISTOPS_SPEC = listops.ListOpsSpec(train=4, validation=4, test=4, min_length=10, max_length=60)


def write_run(run_dir, task, model):
    """config.yaml and model.keras of an untrained classifier, as training leaves them."""
    run_dir.mkdir(parents=True)
    config = ExperimentConfig(task=task, model=model, train=TrainConfig())
    (run_dir / "config.yaml").write_text(config.to_yaml())
    build_classifier(model).save(run_dir / "model.keras")
    return run_dir


@pytest.fixture(scope="session")
def pathfinder_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("pathfinder_data")
    params = {"num_examples": 40, "processes": 1}
    tasks.get("pathfinder", data_dir=str(data), **params).prepare()  # generate once
    task = TaskConfig(name="pathfinder", data_dir=str(data), params=params)
    model = ModelConfig(
        attention="full",
        num_layers=LAYERS,
        num_heads=2,
        emb_dim=16,
        qkv_dim=16,
        mlp_dim=16,
        max_len=1024,
        vocab_size=256,
        pooling="mean",
        padding_id=None,
    )
    return write_run(tmp_path_factory.mktemp("runs") / "pathfinder-full", task, model)


@pytest.fixture(scope="session")
def listops_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("listops_data")
    listops.generate(data, LISTOPS_SPEC, processes=1)
    task = TaskConfig(
        name="listops",
        data_dir=str(data),
        max_len=64,
        params={"generator_spec": dataclasses.asdict(LISTOPS_SPEC)},
    )
    model = ModelConfig(
        attention="local",
        attention_params={"block_size": 16},
        num_layers=LAYERS,
        num_heads=2,
        emb_dim=16,
        qkv_dim=16,
        mlp_dim=16,
        max_len=64,
        vocab_size=16,
        num_classes=10,
        pooling="cls",
        padding_id=0,
    )
    return write_run(tmp_path_factory.mktemp("runs") / "listops-local", task, model)
