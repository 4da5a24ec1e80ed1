"""The task interface: what a Long Range Arena task declares and the pipelines it builds.

A task reads its data from, in order, a directory the user names, TFDS (where the task has a TFDS
source and the machine can reach it), or the project's own generator; when none serves it raises
`DataNotFoundError` with one message saying what was looked for, where, and how to get it.

    task = arena_tf.tasks.get("listops", data_dir="data/")
    train = task.dataset("train", batch_size=32)   # ((tokens [32, 2000] int32), labels [32] int32)
    train = task.batches("train", batch_size=32)   # the same as NumPy batches, no TensorFlow
    tokens, labels = task.arrays("test")           # the whole split: int32 [N, 2000], int32 [N]

Rows: each task also gives its examples in a row form, the instances an Efficiency Pentathlon driver
sends to a submission (JSON objects), and turns a row back into the token ids training reads:

    row = next(task.rows("test"))          # {"input": "( [MAX 2 9 ] )", "target": "9"}
    (tokens,) = task.row_ids(row)          # int32 [max_len], what load_split gives that example
    arrays = task.rows_to_arrays(rows)     # one int32 [batch, max_len] array per model input

A row holds the raw input ("input", or "input1" and "input2" for two inputs) and "target", the label
as a string. Tokenizing happens on the submission's side, as in any real submission.
"""

import abc

import numpy as np

from arena_tf.tasks import batches
from arena_tf.tasks.errors import BadDataError, DataNotFoundError, RowError

__all__ = ["SPLITS", "BadDataError", "DataNotFoundError", "RowError", "Task", "numpy_tasks"]


SPLITS = ("train", "validation", "test")
ROW_INPUT_KEYS = {1: ("input",), 2: ("input1", "input2")}  # the row fields, by number of inputs


class Task(abc.ABC):
    """One LRA task. Subclasses set the class attributes and implement `load_split` (and, for the
    row form, `rows` and `encode_input`; to be read without TensorFlow, `read_arrays`).

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

    def rows(self, split):
        """Yield the examples of `split` in their row form, in load_split's order: dicts with the
        input field(s) (`input_keys`) and "target" (`target(label)`)."""
        raise NotImplementedError(f"{self.name} has no row form")

    def encode_input(self, value):
        """The int32 [max_len] token ids of one row input, exactly as load_split encodes it;
        RowError when `value` is not an input of this task."""
        raise NotImplementedError(f"{self.name} has no row form")

    @property
    def input_keys(self):
        """The row fields holding the inputs: ("input",), or ("input1", "input2")."""
        return ROW_INPUT_KEYS[self.num_inputs]

    @staticmethod
    def target(label):
        """A label as a row's target (and a submission's output): the class id as a string."""
        return str(int(label))

    def row_ids(self, row):
        """A tuple of int32 [max_len] arrays, one per input: the token ids load_split gives the
        example `row` came from; RowError for anything but a row of this task."""
        if not isinstance(row, dict):
            raise self._not_a_row(f"a row is a {type(row).__name__}")
        missing = [key for key in self.input_keys if key not in row]
        if missing:
            raise self._not_a_row(f"a row has no {', '.join(map(repr, missing))} field")
        return tuple(self.encode_input(row[key]) for key in self.input_keys)

    def rows_to_arrays(self, rows):
        """One int32 [len(rows), max_len] array per model input; a RowError names the first row
        (by index) that is not a row of this task."""
        ids = []
        for index, row in enumerate(rows):
            try:
                ids.append(self.row_ids(row))
            except RowError as error:
                raise RowError(f"row {index}: {error.what}", error.expected, error.fix) from None
        if not ids:
            return tuple(np.zeros((0, self.max_len), np.int32) for _ in self.input_keys)
        return tuple(np.stack(column) for column in zip(*ids))

    def _not_a_row(self, what):
        """The RowError for something that is not a row object with this task's input fields."""
        return RowError(
            f"{self.name}: {what}",
            f"a JSON object with {', '.join(map(repr, self.input_keys))}",
            f"send rows as `python -m arena_tf.data rows --task={self.name}` writes them",
        )

    @abc.abstractmethod
    def prepare(self):
        """Build (generate) or check the task's data; return {split: {"examples": n,
        "labels": {label: count}}} for `python -m arena_tf.data prepare`."""

    def dataset(
        self, split, batch_size, shuffle=None, repeat=False, drop_remainder=None, length_buckets=0
    ):
        """Batched, prefetched pipeline; shuffled (under the task's seed) for training by default.

        Args:
            split: "train", "validation" or "test".
            batch_size: int, examples per batch.
            shuffle: bool, whether to shuffle (a 10,000-example buffer, reshuffled each epoch);
                default: for train only.
            repeat: bool, endless (batches then run across epochs); default False.
            drop_remainder: bool, whether to drop a last short batch; default: for train only.
            length_buckets: int, 0 (default): every batch [batch, max_len] (static shapes);
                N > 0: examples grouped by length into N buckets of equal width up to max_len
                (`batches.bucket_lengths`), each batch cut to its bucket's length, so that a
                compiled step sees at most N shapes and a short batch carries little padding.
                Only for a task with padding (`padding_id`); a ValueError otherwise.
        """
        import tensorflow as tf

        shuffle, drop_remainder = self._batching(split, shuffle, drop_remainder)
        if length_buckets and self.padding_id is None:
            raise ValueError(
                f"{self.name}: length_buckets={length_buckets}, but every token of "
                "this task is real (no padding to cut)"
            )
        data = self.load_split(split)
        if shuffle:
            data = data.shuffle(10_000, seed=self.seed, reshuffle_each_iteration=True)
        if repeat:
            data = data.repeat()
        if length_buckets:
            data = batches.bucketed(
                data,
                batch_size,
                self.padding_id,
                batches.bucket_lengths(self.max_len, length_buckets),
                drop_remainder,
            )
        else:
            data = data.batch(
                batch_size,
                drop_remainder=drop_remainder,
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True,
            )
        return data.prefetch(tf.data.AUTOTUNE)

    def batches(
        self,
        split,
        batch_size,
        shuffle=None,
        repeat=False,
        drop_remainder=None,
        start=0,
        length_buckets=0,
        shard=(0, 1),
    ):
        """The twin of `dataset` without TensorFlow (arena_tf/tasks/batches.py): an iterator of
        NumPy (inputs, labels) batches of the same structure and defaults, prefetched in
        background threads (a grain DatasetIterator: `close()` stops them); `start` skips the
        first `start` batches without reading them, so a resumed run continues the stream. The
        order is grain's global shuffle under the task's seed, not tf.data's 10,000-example
        buffer. `length_buckets` N > 0 groups the examples by length into N buckets, each batch
        cut to its bucket's length (`batches.bucketed_stream`: shuffled, endless and without
        short batches, for training; a ValueError otherwise or for a task without padding).
        `shard` = (index, count) gives one process of a multi-process run its part of every batch
        (`batches.shard_rows`: the same global batches for any count)."""
        shuffle, drop_remainder = self._batching(split, shuffle, drop_remainder)
        if length_buckets:
            if self.padding_id is None:
                raise ValueError(
                    f"{self.name}: length_buckets={length_buckets}, but every token "
                    "of this task is real (no padding to cut)"
                )
            if not (shuffle and repeat and drop_remainder):
                raise ValueError(
                    "length_buckets makes training batches: shuffled, endless, "
                    "without a short batch"
                )
            return batches.bucketed_stream(
                self.held_arrays(split),
                batch_size,
                self.padding_id,
                batches.bucket_lengths(self.max_len, length_buckets),
                seed=self.seed,
                start=start,
                shard=shard,
            )
        return batches.stream(
            self.held_arrays(split),
            batch_size,
            seed=self.seed,
            shuffle=shuffle,
            repeat=repeat,
            drop_remainder=drop_remainder,
            start=start,
            shard=shard,
        )

    def arrays(self, split):
        """The split as NumPy, in load_split's order: (inputs, labels), inputs one int32
        [N, max_len] array (a tuple of two for two inputs), labels int32 [N]. Read without
        TensorFlow where the task can; a DataNotFoundError where it needs TensorFlow and cannot
        import it."""
        inputs, labels = self.held_arrays(split)
        return batches.widen(inputs), labels

    def model_fields(self):
        """The ModelConfig fields this task decides: its vocabulary, classes, padding id, input
        length and number of inputs (`two_tower`)."""
        return dict(
            vocab_size=self.vocab_size,
            num_classes=self.num_classes,
            padding_id=self.padding_id,
            max_len=self.max_len,
            two_tower=self.num_inputs == 2,
        )

    def held_arrays(self, split):
        """`read_arrays(split)`, read once per task object and then held in memory (a trainer
        reads the validation split at every evaluation)."""
        held = self.__dict__.setdefault("_held_arrays", {})
        if split not in held:
            held[split] = self.read_arrays(split)
        return held[split]

    def read_arrays(self, split):
        """`arrays` with the ids kept in `batches.ids_dtype(vocab_size)` (one byte for vocabularies
        of 256 or fewer), as `batches` holds a split in memory. This default reads load_split and
        so needs TensorFlow; a task that can read its files without it overrides this."""
        return batches.tensorflow_arrays(self, split, numpy_tasks())

    @staticmethod
    def _batching(split, shuffle, drop_remainder):
        """(shuffle, drop_remainder) of a batched pipeline over `split`: by default both on for
        train, off otherwise; a ValueError for an unknown split."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        training = split == "train"
        return (
            training if shuffle is None else bool(shuffle),
            training if drop_remainder is None else drop_remainder,
        )


def numpy_tasks():
    """The names of the tasks whose `arrays` read the data without TensorFlow (they override
    `Task.read_arrays`), found among Task's subclasses."""
    found, pending = set(), list(Task.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.name and cls.read_arrays is not Task.read_arrays:
            found.add(cls.name)
    return sorted(found)
