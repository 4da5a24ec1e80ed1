"""A TFDS mock whose examples depend on the split asked for, to check which split a task reads."""

import contextlib

import tensorflow as tf
import tensorflow_datasets as tfds

from arena_tf.tasks import SPLITS


@contextlib.contextmanager
def split_mock(make_examples):
    """Within the block, `tfds.load(name, split=spec)` yields the examples `make_examples(spec)`
    returns (a dict of equal-length arrays keyed by TFDS feature name); yields the list of specs
    asked for."""
    requested = []

    def as_dataset(self, split, **kwargs):
        requested.append(str(split))
        return tf.data.Dataset.from_tensor_slices(make_examples(str(split)))

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        yield requested


def mock_data_splits(task, num_examples):
    """{split: [(tokens, label), ...]} of `task` over `tfds.testing.mock_data`, after checking that
    every split yields (int32 tokens [max_len], int32 label) with static shapes."""
    want = (tf.TensorSpec([task.max_len], tf.int32), tf.TensorSpec([], tf.int32))
    splits = {}
    with tfds.testing.mock_data(num_examples=num_examples):
        for split in SPLITS:
            data = task.load_split(split)
            assert data.element_spec == want
            splits[split] = list(data.as_numpy_iterator())
    return splits
