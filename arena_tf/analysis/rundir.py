"""Read a training run directory (`python -m arena_tf.train` writes config.yaml and model.keras).

run = load_run("runs/pathfinder-full-tiny")
run.encoder                         # the trained Encoder inside run.model
task = make_task(run.config)        # the task it trained on, reading data as training did
sequences(task, "validation", 10)   # the first 10 validation examples' token sequences
"""

import dataclasses
import json
import pathlib

import keras
import numpy as np

import arena_tf.layers as layers
import arena_tf.models  # noqa: F401 (registers the encoder and attention layers for loading)
import arena_tf.tasks as tasks
from arena_tf.cli import UsageError
from arena_tf.config import ExperimentConfig
from arena_tf.config import read_run_config as read_config
from arena_tf.run_pair import check_pair


class RunDirError(UsageError, RuntimeError):
    """A run directory cannot be analysed: what is missing, what was expected, how to get it."""


@dataclasses.dataclass
class Run:
    """A trained run: its directory, merged config and Keras model (with its `encoder` layer)."""

    path: pathlib.Path
    config: ExperimentConfig
    model: object

    @property
    def encoder(self):
        return self.model.get_layer("encoder")

    @property
    def label(self):
        """'task / mechanism (validation accuracy 0.71)', for titles; the accuracy from
        metrics.json when training wrote one."""
        path = self.path / "metrics.json"
        metrics = json.loads(path.read_text()) if path.is_file() else {}
        accuracy = metrics.get("validation_accuracy")
        shown = "" if accuracy is None else f" (validation accuracy {accuracy:.2f})"
        return f"{self.config.task.name} / {self.config.model.attention}{shown}"


def load_run(run_dir):
    """The Run in `run_dir`; a RunDirError naming what is missing when it holds no trained model, a
    UsageError when model.keras is not the model config.yaml describes (before any data work)."""
    run_dir = pathlib.Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(
            f"run directory {run_dir} does not exist",
            "an existing directory",
            "pass the --run-dir of a training run",
        )
    model_path = run_dir / "model.keras"
    if not model_path.is_file():
        raise RunDirError(
            f"{run_dir} holds no trained model",
            "model.keras, which training writes when it finishes",
            f"train with `python -m arena_tf.train ... --run-dir {run_dir}` first",
        )
    config = read_config(run_dir)
    check_analysable(config.model.attention)
    run = Run(run_dir, config, keras.saving.load_model(model_path))
    check_pair(
        run.encoder.config.to_dict(),
        config.model.to_dict(),
        model_path,
        run_dir / "config.yaml",
        config.task.name,
        config.task,
    )
    return run


def check_analysable(mechanism):
    """A UsageError for a state-space mixer, which has no attention weights to recover."""
    if not layers.lookup(mechanism).has_attention_weights:
        attention = [n for n in layers.available() if layers.lookup(n).has_attention_weights]
        raise UsageError(
            f"{mechanism} is a state-space mixer: it has no attention weights to recover",
            f"a run of an attention mechanism ({', '.join(attention)})",
            "analyse a run of one of them",
        )


def make_task(config):
    """The task the run trained on, reading (or generating) data as training did."""
    return tasks.from_config(config.task, seed=config.train.seed)


def examples(task, split, count, start=0):
    """[(inputs tuple of int32 arrays, label)] of examples start .. start + count of the task's
    `split`, in the split's fixed order (one array per model input)."""
    data = task.load_split(split).skip(start).take(count)
    return [
        (tuple(inputs) if isinstance(inputs, tuple) else (inputs,), int(label))
        for inputs, label in data.as_numpy_iterator()
    ]


def sequences(task, split, count):
    """(int32 [n, length], examples): every input sequence of the first `count` examples of
    `split` (both documents of a two-tower example, which pass through the same encoder) and the
    number of examples they came from."""
    found = examples(task, split, count)
    if not found:
        raise RunDirError(
            f"the {split} split of {task.name} is empty",
            "examples to analyse",
            "check the task's data with `python -m arena_tf.data prepare`",
        )
    return np.stack([sequence for inputs, _ in found for sequence in inputs]), len(found)
