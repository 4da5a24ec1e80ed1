"""The shipped configs: every task and model loads into a valid experiment, the per-model files name
only real models, and the image / Pathfinder per-model values are the LRA code's."""

import pytest

import arena_tf.layers as attention_layers
import arena_tf.tasks as tasks
from arena_tf.config import CONFIGS_DIR, load_experiment, read_yaml

TASKS = sorted(p.stem for p in (CONFIGS_DIR / "tasks").glob("*.yaml") if "." not in p.stem)
MODELS = sorted(p.stem for p in (CONFIGS_DIR / "models").glob("*.yaml"))
PER_MODEL_FILES = sorted((CONFIGS_DIR / "tasks").glob("*.models.yaml"))

# Values read from google-research/long-range-arena, lra_benchmarks/image/configs/{cifar10,
# pathfinder32}/<model>_base.py (and text_classification/configs/linformer_base.py).
LRA_VALUES = {
    ("image", "full"): {"model.num_heads": 8, "model.emb_dim": 128, "model.qkv_dim": 64},
    ("image", "local"): {
        "model.attention_params.block_size": 64,
        "model.num_heads": 2,
        "model.pooling": "mean",
    },
    ("image", "longformer"): {"model.num_layers": 4, "model.num_heads": 4, "model.pooling": "mean"},
    ("image", "reformer"): {
        "model.num_layers": 4,
        "model.emb_dim": 64,
        "model.qkv_dim": 32,
        "model.mlp_dim": 64,
    },
    ("image", "sinkhorn"): {
        "model.attention_params.block_size": 64,
        "model.dropout": 0.1,
        "model.emb_dim": 32,
        "train.weight_decay": 0.7,
    },
    ("image", "bigbird"): {"model.num_heads": 4, "model.attention_params.block_size": 64},
    ("image", "performer"): {"model.num_layers": 1, "model.num_heads": 8, "model.mlp_dim": 128},
    ("pathfinder", "full"): {
        "model.num_layers": 1,
        "model.num_heads": 4,
        "model.emb_dim": 128,
        "model.dropout": 0.2,
    },
    ("pathfinder", "local"): {
        "model.num_layers": 2,
        "model.num_heads": 4,
        "model.emb_dim": 64,
        "model.attention_params.block_size": 64,
    },
    ("pathfinder", "performer"): {"model.num_layers": 4, "model.num_heads": 8, "model.emb_dim": 32},
    ("pathfinder", "bigbird"): {"model.num_layers": 4, "model.num_heads": 2, "model.emb_dim": 64},
    ("pathfinder", "linear"): {"model.num_layers": 1, "model.num_heads": 2, "model.emb_dim": 128},
    ("pathfinder", "sinkhorn"): {"model.mlp_dim": 64, "model.attention_params.block_size": 64},
    ("text", "linformer"): {"model.attention_params.projected_length": 32},
}


def derived_fields(task_name):
    """The model fields a task decides, read from its class attributes (no data is touched)."""
    task = tasks.lookup(task_name)
    return dict(
        vocab_size=task.vocab_size,
        num_classes=task.num_classes,
        padding_id=task.padding_id,
        max_len=task.max_len,
        two_tower=task.num_inputs == 2,
    )


def value_at(experiment, dotted):
    """experiment.to_dict() looked up along 'section.key[.subkey]'."""
    value = experiment.to_dict()
    for name in dotted.split("."):
        value = value[name]
    return value


def test_every_task_has_a_task_class():
    assert TASKS == tasks.available()


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task", TASKS)
def test_every_task_and_model_builds_its_attention(task, model):
    config = load_experiment(task, model, derived=derived_fields(task)).model
    layer = attention_layers.get(
        config.attention,
        num_heads=config.num_heads,
        head_dim=config.head_dim,
        max_len=config.encoder_len,
        **config.attention_params,
    )
    assert layer.num_heads * layer.head_dim == config.qkv_dim


@pytest.mark.parametrize("path", PER_MODEL_FILES, ids=lambda p: p.name)
def test_per_model_files_name_real_tasks_and_models(path):
    assert path.name.split(".")[0] in TASKS
    unknown = set(read_yaml(path)) - set(MODELS)
    assert not unknown, f"{path.name} has entries for unknown models {sorted(unknown)}"


@pytest.mark.parametrize(("task", "model"), sorted(LRA_VALUES))
def test_per_model_values_match_the_lra_code(task, model):
    experiment = load_experiment(task, model, derived=derived_fields(task))
    actual = {key: value_at(experiment, key) for key in LRA_VALUES[task, model]}
    assert actual == LRA_VALUES[task, model]


def test_command_line_overrides_beat_the_per_model_file():
    experiment = load_experiment("image", "local", ["model.attention_params.block_size=32"])
    assert experiment.model.attention_params["block_size"] == 32
    assert experiment.model.num_heads == 2
