"""What an export starts from: a run directory (model.keras + config.yaml) or a .keras file.

    source = load_source("runs/text-performer")     # or "some/dir/best.keras"
    source.model, source.config.attention, source.task, source.artifact("model.onnx")

Artifacts go into the directory holding the .keras file. Every problem with the input (missing
path, no model.keras, a truncated or foreign file, a bad config.yaml) is one ExportUsageError
line (exit status 2 from the scripts).
"""

import dataclasses
import pathlib
from typing import Optional

import keras

import arena_tf.tasks as tasks
from arena_tf.config import ConfigError, ModelConfig, TaskConfig, read_run_config
from arena_tf.encoder import Encoder  # importing it registers the layers load_model needs
from arena_tf.export.errors import ExportUsageError, one_line
from arena_tf.run_pair import check_pair

MODEL_FILE = "model.keras"
CONFIG_FILE = "config.yaml"
TRAIN_HINT = "python -m arena_tf.train --task=TASK --model=MECHANISM"


@dataclasses.dataclass
class Source:
    """A loaded Keras classifier, its model config and (when config.yaml names it) its task."""

    model_path: pathlib.Path
    model: keras.Model
    config: ModelConfig
    task: Optional[TaskConfig]

    @property
    def directory(self):
        """Where the artifacts are written: beside the .keras file."""
        return self.model_path.parent

    def artifact(self, name):
        """The path of artifact `name` (e.g. 'saved_model', 'model.onnx') for this source."""
        return self.directory / name


def model_file(path):
    """The .keras file named by `path` (a run directory or the file itself); ExportUsageError if
    none."""
    path = pathlib.Path(path)
    expected = (
        f"a run directory holding {MODEL_FILE} and {CONFIG_FILE} (written by "
        f"`{TRAIN_HINT}`) or a .keras file"
    )
    if not path.exists():
        raise ExportUsageError(f"{path} does not exist", expected, "check the path")
    if path.is_dir():
        if not (path / MODEL_FILE).is_file():
            raise ExportUsageError(
                f"{path} is not a run directory: it holds no {MODEL_FILE}",
                expected,
                f"finish training with `{TRAIN_HINT} --run-dir={path}` or pass a .keras file",
            )
        return path / MODEL_FILE
    if path.suffix != ".keras":
        raise ExportUsageError(
            f"{path} is not a .keras file",
            expected,
            "pass the run directory or a model saved by model.save('NAME.keras')",
        )
    return path


def load_model(path):
    """keras.saving.load_model, with any failure (truncated zip, foreign file) as one line."""
    try:
        return keras.saving.load_model(path, compile=False)
    except Exception as error:  # noqa: BLE001 (any failure means "not loadable")
        # zipfile, h5py, JSON and Keras errors all mean "not loadable"
        raise ExportUsageError(
            f"cannot load {path} ({type(error).__name__}: {one_line(error)})",
            "a complete .keras file of an arena_tf classifier",
            f"restore it or re-run `{TRAIN_HINT}`",
        ) from None


def model_config(model, path):
    """The ModelConfig the classifier was built from, read from its encoder layer."""
    encoder = next((layer for layer in model.layers if isinstance(layer, Encoder)), None)
    if encoder is None:
        raise ExportUsageError(
            f"{path} holds a Keras model without an arena_tf Encoder layer",
            "a classifier from arena_tf.models.build_classifier",
            f"export a model trained by `{TRAIN_HINT}`",
        )
    return encoder.config


def run_config(directory):
    """The ExperimentConfig of config.yaml beside the model, or None when there is none; an
    ExportUsageError unless it holds the task and model sections training writes, of a known task
    (a missing one would read as the default task, and the export run on its examples)."""
    if not (directory / CONFIG_FILE).is_file():
        return None
    try:
        config = read_run_config(directory, required=REQUIRED_SECTIONS)
    except ConfigError as error:
        raise config_refused(error.what) from None
    if config.task.name not in tasks.available():
        raise config_refused(f"{directory / CONFIG_FILE}: unknown task {config.task.name!r}")
    return config


def config_refused(what):
    return ExportUsageError(
        what,
        f"the config.yaml written by `{TRAIN_HINT}`",
        f"restore it, or remove it to export {MODEL_FILE} on generated examples",
    )


REQUIRED_SECTIONS = ("task", "model")


def load_source(path):
    """The Source named by `path` (a run directory or a .keras file); a UsageError when config.yaml
    beside the model describes another model (arena_tf/run_pair): a ListOps model with a Pathfinder
    config is refused, not exported on Pathfinder's examples."""
    keras_path = model_file(path).resolve()
    model = load_model(keras_path)
    config = model_config(model, keras_path)
    run = run_config(keras_path.parent)
    if run is None:
        return Source(keras_path, model, config, None)
    check_pair(
        config.to_dict(),
        run.model.to_dict(),
        keras_path,
        keras_path.parent / CONFIG_FILE,
        run.task.name,
        run.task,
    )
    return Source(keras_path, model, config, run.task)
