"""The experiment a command line describes, checked before anything is written: the merged
config with the model fields the task's data decides, and the data itself (present, readable, and
of the shape and range the model takes)."""

import dataclasses

import numpy as np

import arena_tf.tasks as tasks
from arena_tf.config import ConfigError, ExperimentConfig, load_experiment
from arena_tf.settings import check_with_the_data
from arena_tf.training.errors import DataMismatchError

# Model fields the task's data decides (build_experiment sets them from the task).
DERIVED = ("vocab_size", "num_classes", "padding_id", "max_len", "two_tower")


def build_experiment(task_name, model_name, overrides=(), preset=None, data_dir=None):
    """The merged, validated config and the task it trains on (model fields the task decides);
    a --set of one of those fields that disagrees with the task is refused."""
    if data_dir:
        overrides = [*overrides, f"task.data_dir={data_dir}"]
    tasks.lookup(task_name)
    config = load_experiment(task_name, model_name, overrides, preset)
    task = tasks.from_config(config.task, seed=config.train.seed)
    derived = task.model_fields()
    check_derived_overrides(config.model, derived, overrides, config.task)
    model = dataclasses.replace(config.model, **derived)
    check_token_embedding(model, task_name)
    experiment = ExperimentConfig(task=config.task, model=model, train=config.train)
    check_with_the_data(experiment, ConfigError)  # the model's length is the data's now
    return experiment, task


def plan_line(config, replicas, run_dir):
    """One line: what the run will do."""
    train = config.train
    return (
        f"plan: train {config.model.attention} on {config.task.name} for "
        f"{train.num_train_steps} steps of batch {train.batch_size} "
        f"({replicas} replica(s)), validating every {train.eval_every} "
        f"steps on {train.eval_batches or 'all'} batches and checkpointing every "
        f"{train.checkpoint_every} in {run_dir} (resumed if it holds a checkpoint), then "
        "testing; an ETA follows once the speed is known"
    )


def check_derived_overrides(model, derived, overrides, task_config):
    """DataMismatchError when a --set gave a model field the data decides another value."""
    keys = {text.partition("=")[0].strip() for text in overrides}
    for name in DERIVED:
        given, decided = getattr(model, name), derived[name]
        if f"model.{name}" not in keys or given == decided:
            continue
        task = task_config.name
        if name == "max_len":
            raise DataMismatchError(
                f"--set model.max_len={given} disagrees with the {task} data, whose examples are "
                f"{decided} tokens long (task.max_len={decided})",
                "model.max_len equal to the data's length (the trainer takes it from the task)",
                f"set task.max_len={given} to cut or pad the data to {given} tokens, or drop "
                "--set model.max_len",
            )
        raise DataMismatchError(
            f"--set model.{name}={given} disagrees with the {task} data, whose {name} is {decided}",
            f"model.{name} as the task's data decides it (the trainer takes it from the task)",
            f"drop --set model.{name}",
        )


def check_token_embedding(model, task_name):
    """ConfigError when pixel brightness is asked of a task whose tokens are not pixels."""
    if model.token_embedding == "intensity" and not model.reads_pixels:
        raise ConfigError(
            "model.token_embedding=intensity reads token ids as pixel brightness, but "
            f"{task_name}'s tokens are not pixels (it pads with id {model.padding_id})",
            "a pixel task (image, pathfinder, pathx)",
            "drop --set model.token_embedding or set it to table",
        )


def check_data(config, task, first_example):
    """Every split present (DataNotFoundError otherwise), and the first training example of the
    shape, token range and label range the model takes (DataMismatchError otherwise).
    `first_example(task, where)` is the backend's reader: it opens every split and returns the
    first training example as NumPy, (inputs, label), or None when there is none."""
    where = f"the {task.name} training data" + (f" in {task.data_dir}" if task.data_dir else "")
    example = first_example(task, where)
    if example is None:
        raise DataMismatchError(
            f"{where} holds no examples",
            "at least one training example",
            "check --data-dir, or delete the folder to generate it",
        )
    check_example(config.model, where, *example)


def check_example(model, where, inputs, label):
    """DataMismatchError naming the config value and the data that disagree."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    wanted = 2 if model.two_tower else 1
    if len(inputs) != wanted:
        raise DataMismatchError(
            f"{where} has {len(inputs)} input(s) per example but model.two_tower={model.two_tower}",
            f"{wanted} input(s) per example",
            "check --data-dir and --task",
        )
    for tokens in inputs:
        shape = tuple(tokens.shape)
        if len(shape) != 1 or shape[0] != model.max_len:
            raise DataMismatchError(
                f"{where} has examples of shape {list(shape)} but model.max_len={model.max_len}",
                f"examples of {model.max_len} tokens (model.max_len, from task.max_len)",
                "check --data-dir (data made for another length or resolution) and task.max_len",
            )
        tokens = np.asarray(tokens)
        if not np.issubdtype(tokens.dtype, np.integer):
            raise DataMismatchError(
                f"{where} holds {tokens.dtype.name} inputs",
                "integer token ids",
                "check --data-dir and --task",
            )
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= model.vocab_size:
            raise DataMismatchError(
                f"{where} holds token id {low if low < 0 else high} outside model.vocab_size="
                f"{model.vocab_size}",
                f"ids from 0 to {model.vocab_size - 1}",
                "check --data-dir and --task",
            )
    label = int(label)
    if not 0 <= label < model.num_classes:
        raise DataMismatchError(
            f"{where} holds label {label} outside model.num_classes={model.num_classes}",
            f"labels from 0 to {model.num_classes - 1}",
            "check --data-dir and --task",
        )
