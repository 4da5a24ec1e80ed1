"""A run's TensorBoard events, written and read with the tensorboard package alone (no TensorFlow
op): the same files under both backends, in an install with or without TensorFlow.

    runs/<run>/train/        metrics/loss, metrics/accuracy (the log_every window's),
                             optimizer/learning_rate, speed/steps_per_second,
                             speed/examples_per_second, memory/peak_mb, time/train_seconds
    runs/<run>/validation/   metrics/loss, metrics/accuracy: what evaluation measures, nothing else
    runs/<run>/              the config as text (`config`), each session's device as text
                             (`device`, training/sessions.py), the hyperparameters (hparams plugin:
                             every config field) and, at the end, final/test_accuracy and
                             final/test_loss, which the hparams dashboard lists beside them

Train and validation share the `metrics/` charts, as Keras's TensorBoard callback draws them; each
tag carries a description with its unit. `read_scalars` gives the scalars by their short name
("accuracy", "train_seconds"), so runs written before the groups read the same.
"""

import pathlib
import time

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins.hparams import summary_v2 as hparams_summary
from tensorboard.plugins.scalar.summary_v2 import scalar_pb
from tensorboard.plugins.text.summary_v2 import text_pb
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.util.tensor_util import make_ndarray

# short name: (tag, description). The group before "/" is the dashboard's section.
SCALARS = {
    "loss": ("metrics/loss", "mean cross-entropy per example (nats)"),
    "accuracy": ("metrics/accuracy", "share of examples predicted as their label (0 to 1)"),
    "learning_rate": ("optimizer/learning_rate", "the optimizer's learning rate at this step"),
    "steps_per_second": (
        "speed/steps_per_second",
        "training steps per second since the last point (steps/s)",
    ),
    "examples_per_second": (
        "speed/examples_per_second",
        "training examples per second since the last point (examples/s)",
    ),
    "peak_memory_mb": ("memory/peak_mb", "peak resident memory of the training process (MiB)"),
    "train_seconds": (
        "time/train_seconds",
        "seconds of training so far, over all sessions of the run (s)",
    ),
    "test_accuracy": ("final/test_accuracy", "the test split's accuracy at the end (0 to 1)"),
    "test_loss": ("final/test_loss", "the test split's mean cross-entropy at the end (nats)"),
}
SHORT_NAMES = {tag: name for name, (tag, _) in SCALARS.items()}
EVALUATED = ("loss", "accuracy")  # all a validation point holds
SPLITS = ("train", "validation")
CONFIG_TAG = "config"
# What the hparams dashboard shows beside each run's hyperparameters: (tag, run, name shown).
HPARAMS_METRICS = (
    ("final/test_accuracy", None, "test accuracy"),
    ("final/test_loss", None, "test loss"),
    ("metrics/accuracy", "validation", "validation accuracy (last)"),
    ("metrics/loss", "validation", "validation loss (last)"),
    ("metrics/accuracy", "train", "train accuracy (last)"),
)


class EventWriter:
    """One TensorBoard run directory's events, in tf.summary's format."""

    def __init__(self, directory):
        self.writer = EventFileWriter(str(directory))

    def scalars(self, step, values):
        """{short name of SCALARS: value} at `step`, each under its tag with its description."""
        for name, value in values.items():
            tag, description = SCALARS[name]
            self.add(step, scalar_pb(tag, float(value), description=description))

    def text(self, step, tag, markdown, description=None):
        self.add(step, text_pb(tag, markdown, description=description))

    def add(self, step, summary):
        self.writer.add_event(Event(wall_time=time.time(), step=step, summary=summary))

    def flush(self):
        self.writer.flush()

    def close(self):
        self.writer.close()


class NoWriter:
    """Where a process writes no events (a worker that is not the chief)."""

    def scalars(self, step, values):
        pass

    def text(self, step, tag, markdown, description=None):
        pass

    def add(self, step, summary):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def open_writers(run_dir, chief=True):
    """{"train", "validation", "run"} writers of the run directory (no-ops off the chief)."""
    if not chief:
        return {split: NoWriter() for split in (*SPLITS, "run")}
    run_dir = pathlib.Path(run_dir)
    return {
        **{split: EventWriter(run_dir / split) for split in SPLITS},
        "run": EventWriter(run_dir),
    }


def flat(config, prefix=""):
    """{"model.num_layers": 2, ...}: a nested dict's leaves as hparams values (bool, number or
    string; lists and None as text)."""
    out = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, f"{name}."))
        elif isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            out[name] = str(value)
    return out


def write_run_record(writer, config_yaml, config_dict):
    """The run's config as a text summary and its hyperparameters (every config field) as the
    hparams plugin's session, with the metrics its dashboard lists (HPARAMS_METRICS)."""
    writer.text(
        0,
        CONFIG_TAG,
        "\n".join("    " + line for line in config_yaml.splitlines()),
        description="the run's config.yaml (every setting the run trained with)",
    )
    values = flat(config_dict)
    metrics = [
        hparams_summary.Metric(tag, group=group, display_name=shown)
        for tag, group, shown in HPARAMS_METRICS
    ]
    writer.add(
        0,
        hparams_summary.hparams_config_pb(
            [hparams_summary.HParam(name) for name in values], metrics
        ),
    )
    writer.add(0, hparams_summary.hparams_pb(values))


def read_scalars(event_dir):
    """{short name: {step: value}} of every scalar in a TensorBoard event directory (later files
    win): "accuracy" for metrics/accuracy (SCALARS' names; another tag is read as written)."""
    scalars = {}
    for path in sorted(pathlib.Path(event_dir).glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name not in ("", "scalars"):
                    continue  # text and hparams records
                number = (
                    value.simple_value
                    if value.WhichOneof("value") == "simple_value"
                    else make_ndarray(value.tensor)
                )
                name = SHORT_NAMES.get(value.tag, value.tag)
                scalars.setdefault(name, {})[event.step] = float(number)
    return scalars


def read_texts(event_dir, tag):
    """{step: text} of the text summary `tag` in a TensorBoard event directory (later files win)."""
    texts = {}
    for path in sorted(pathlib.Path(event_dir).glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.tag == tag:
                    texts[event.step] = make_ndarray(value.tensor).item().decode()
    return texts


def read_tags(event_dir):
    """{tag: plugin name} of every value in a TensorBoard event directory ('scalars', 'text',
    'hparams')."""
    tags = {}
    for path in sorted(pathlib.Path(event_dir).glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                tags[value.tag] = value.metadata.plugin_data.plugin_name
    return tags
