"""The inputs a parity check runs: the task's test split where its data exists, generated otherwise.

    examples = load_examples(source, count=256)
    examples.arrays      # one int32 [count, max_len] array per model input
    examples.labels      # int32 [count] for real examples, None for generated ones
    examples.origin      # 'listops test split (data/listops)' or 'generated: <why>'

Looking for data never downloads (TFDS tasks get download=False) and never starts a generator:
a generated task (ListOps, Pathfinder) is read only where its data root already holds files.
Generated examples are random ids from the vocabulary (the padding id excluded) with padding
tails of random length where the model has a padding id.
"""

import dataclasses
from typing import Optional

import numpy as np

import arena_tf.tasks as tasks
from arena_tf.export.errors import one_line
from arena_tf.tasks import sources

DEFAULT_COUNT = 256


@dataclasses.dataclass
class Examples:
    """Inputs (one array per model input), labels when known, and where they came from."""

    arrays: list
    labels: Optional[np.ndarray]
    origin: str

    @property
    def count(self):
        return len(self.arrays[0])

    def describe(self):
        """{'origin', 'count', 'labelled'} for parity reports."""
        return {"origin": self.origin, "count": self.count, "labelled": self.labels is not None}


def generated_ids(rng, shape, vocab_size, padding_id):
    """Uniform ids in [0, vocab_size) without `padding_id`."""
    if padding_id is None:
        return rng.integers(0, vocab_size, size=shape)
    ids = rng.integers(0, vocab_size - 1, size=shape)
    return ids + (ids >= padding_id)


def generated_input(rng, config, count):
    """int32 [count, max_len] random tokens; with a padding id, each row after the first ends in
    a padding tail (real length uniform in [max_len / 4, max_len])."""
    ids = generated_ids(rng, (count, config.max_len), config.vocab_size, config.padding_id)
    if config.padding_id is not None:
        lengths = rng.integers(max(1, config.max_len // 4), config.max_len + 1, size=count)
        lengths[0] = config.max_len
        ids[np.arange(config.max_len)[None, :] >= lengths[:, None]] = config.padding_id
    return ids.astype("int32")


def generated_examples(config, count, why, seed=0):
    """`count` generated examples for every input of the model described by `config`."""
    rng = np.random.default_rng(seed)
    inputs = 2 if config.two_tower else 1
    return Examples(
        [generated_input(rng, config, count) for _ in range(inputs)], None, f"generated: {why}"
    )


def task_arguments(task_class, task_config, config):
    """Keyword arguments building the task at the model's length, reading only: no downloads, no
    generated data (a missing set is a DataNotFoundError, and generated examples are used)."""
    return dict(
        data_dir=task_config.data_dir,
        max_len=config.max_len,
        **task_config.params,
        **sources.read_only_arguments(task_class),
    )


def mismatch(task, config):
    """Why the task's examples do not fit the model, or None."""
    inputs = 2 if config.two_tower else 1
    if task.num_inputs != inputs or task.vocab_size > config.vocab_size:
        return (
            f"the {task.name} task ({task.num_inputs} inputs, vocabulary {task.vocab_size}) "
            f"does not fit the model ({inputs} inputs, vocabulary {config.vocab_size})"
        )
    return None


def read_test_split(task, count):
    """(arrays, labels) of the first `count` test examples of `task`."""
    inputs, labels = [], []
    for features, label in task.load_split("test").take(count).as_numpy_iterator():
        inputs.append(features if isinstance(features, tuple) else (features,))
        labels.append(label)
    if not inputs:
        raise ValueError("the test split is empty")
    arrays = [np.stack(column).astype("int32") for column in zip(*inputs)]
    return arrays, np.asarray(labels, dtype="int32")


def task_examples(task_config, config, count):
    """Examples from the task's test split, or (None, why not)."""
    try:
        task_class = tasks.lookup(task_config.name)
    except ValueError as error:
        return None, str(error)
    try:
        task = task_class(**task_arguments(task_class, task_config, config))
        why_not = mismatch(task, config)
        if why_not:
            return None, why_not
        arrays, labels = read_test_split(task, count)
    except Exception as error:  # noqa: BLE001 (any failure: fall back to generated)
        # DataNotFoundError, TypeError, tf.errors...: fall back to generated
        return None, (
            f"{task_config.name} test split unreadable ({type(error).__name__}: {one_line(error)})"
        )
    where = task.location() if hasattr(task, "location") else task_config.data_dir
    return Examples(arrays, labels, f"{task_config.name} test split ({where})"), None


def load_examples(source, count=DEFAULT_COUNT, seed=0):
    """Real test examples of the source's task where they can be read, generated ones otherwise."""
    if source.task is None:
        return generated_examples(source.config, count, "no config.yaml names the task", seed)
    examples, why_not = task_examples(source.task, source.config, count)
    return examples or generated_examples(source.config, count, why_not, seed)
