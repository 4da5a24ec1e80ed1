"""The rows a bench run sends: a task split in its row form (`task.rows(split)`, what
`python -m arena_tf.data rows` writes), each encoded once, before any timing.

    pool = instances.load("listops", {"data_dir": "data/listops"})
    pool.fragments[i]      # row i as JSON bytes (json.dumps), joined into request lines
    pool.targets[i]        # its target string, what the submission's output is compared with
    pool.labels            # the task's label set (its target strings), outputs are checked against
    pool.source            # 'listops test split, 2000 rows'

Every scenario draws from the same pool with Pentathlon's fixed seeds, so every model sees the same
rows in the same order. Data is only read here, never generated or downloaded.
"""

import dataclasses
import json

from arena_tf import tasks
from arena_tf.config import TaskConfig
from arena_tf.tasks import sources

DEFAULT_SPLIT = "test"


@dataclasses.dataclass
class Rows:
    """A pool of encoded rows, their targets, the task's label set and where they came from."""

    fragments: list
    targets: list
    labels: tuple
    source: str

    def __len__(self):
        return len(self.fragments)

    @classmethod
    def from_rows(cls, rows, labels, source):
        return cls(
            [json.dumps(row).encode() for row in rows],
            [row.get("target") for row in rows],
            tuple(labels),
            source,
        )


def make_task(name, task_config=None, data_dir=None):
    """The task `name` reading its data where `data_dir` (else the run's config) says, with
    arguments that never download or generate data."""
    task_config = task_config or {}
    params = {
        **(task_config.get("params") or {}),
        **sources.read_only_arguments(tasks.lookup(name)),
    }
    return tasks.from_config(
        TaskConfig(
            name=name,
            data_dir=data_dir or task_config.get("data_dir"),
            max_len=task_config.get("max_len"),
            params=params,
        )
    )


def load(name, task_config=None, data_dir=None, split=DEFAULT_SPLIT):
    """The rows of task `name`'s `split`; ValueError when it has none."""
    try:
        import tensorflow as tf

        tf.config.set_visible_devices([], "GPU")  # the bench must not take the model's GPU memory
    except ImportError:  # a machine without TensorFlow (the XLA runtime's): nothing to hide
        pass
    task = make_task(name, task_config, data_dir)
    rows = list(task.rows(split))
    if not rows:
        raise ValueError(f"{name} {split} split is empty")
    labels = [task.target(label) for label in range(task.num_classes)]
    return Rows.from_rows(rows, labels, f"{name} {split} split, {len(rows)} rows")
