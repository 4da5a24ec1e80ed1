"""The task interface: what a Long Range Arena task declares and the pipelines it builds.

A task reads its data from, in order, a directory the user names, TFDS (where the task has a TFDS
source and the machine can reach it), or the project's own generator; when none serves it raises
`DataNotFoundError` with one message saying what was looked for, where, and how to get it.

    task = arena_tf.tasks.get("listops", data_dir="data/")
    train = task.dataset("train", batch_size=32)   # ((tokens [32, 2000] int32), labels [32] int32)
"""

import abc

from arena_tf.cli import UsageError


class DataNotFoundError(UsageError, RuntimeError):
    """No source could serve a task's data; the message says what was looked for and how to get it.

    A user's mistake (exit 2 on the command line, `arena_tf.cli`): raise it with three parts,
    `DataNotFoundError(what, expected, fix)`, read as `<what>; expected <expected>; <fix>`. Still a
    RuntimeError, for the `except` clauses written before."""


class BadDataError(DataNotFoundError, ValueError):
    """The data is there but not in the task's format (a malformed line, unreadable images,
    generated with other settings); the message names the file (and line) and how to repair it.
    Also a ValueError, as these checks raised before."""


SPLITS = ("train", "validation", "test")


class Task(abc.ABC):
    """One LRA task. Subclasses set the class attributes and implement `load_split`.

    Class attributes:
        name: registry name.
        num_classes: number of labels.
        vocab_size: token ids are in [0, vocab_size).
        max_len: default sequence length (per input).
        num_inputs: 1, or 2 for the two-tower retrieval task.
        padding_id: the id of padding, or None where every id is real (pixels).
    """

    name = None
    num_classes = None
    vocab_size = None
    max_len = None
    num_inputs = 1
    padding_id = 0

    def __init__(self, data_dir=None, max_len=None, seed=0):
        self.data_dir = data_dir
        self.max_len = max_len or type(self).max_len
        self.seed = seed

    @abc.abstractmethod
    def load_split(self, split):
        """An unbatched tf.data.Dataset of (inputs, label) for `split`, inputs int32 [max_len]
        (a tuple of two for two inputs), in a fixed order; raises DataNotFoundError."""

    @abc.abstractmethod
    def prepare(self):
        """Build (generate) or check the task's data; return {split: {"examples": n,
        "labels": {label: count}}} for `python -m arena_tf.data prepare`."""

    def dataset(self, split, batch_size, shuffle=None, repeat=False, drop_remainder=None):
        """Batched, prefetched pipeline with static shapes; shuffled (under the task's seed) for
        training by default."""
        import tensorflow as tf

        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        training = split == "train"
        data = self.load_split(split)
        if shuffle if shuffle is not None else training:
            data = data.shuffle(10_000, seed=self.seed, reshuffle_each_iteration=True)
        if repeat:
            data = data.repeat()
        data = data.batch(
            batch_size,
            drop_remainder=training if drop_remainder is None else drop_remainder,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
        return data.prefetch(tf.data.AUTOTUNE)
