"""Length-bucketed training batches (`Task.dataset` and `Task.batches` with length_buckets=N):
every example once an epoch (tf.data) or at most once (grain, which leaves out each bucket's short
batch), each batch cut to the bucket of its longest example (never shorter), at most N shapes, the
grain stream the same from any batch on; a classifier gives the same logits on a cut batch as on
the same examples padded to max_len."""

import numpy as np
import pytest

import arena_tf.tasks as tasks
from arena_tf.config import ModelConfig
from arena_tf.models import build_classifier
from arena_tf.tasks import batches

TF_DATA = pytest.mark.tensorflow_only("a tf.data pipeline")
MAX_LEN = 160


def listops(data_dir):
    return tasks.get("listops", data_dir=str(data_dir), max_len=MAX_LEN)


def real_lengths(ids):
    return batches.real_lengths(ids, 0)


def test_bucket_lengths_cover_max_len_in_equal_steps():
    assert batches.bucket_lengths(2000, 8) == [250, 500, 750, 1000, 1250, 1500, 1750, 2000]
    assert batches.bucket_lengths(10, 3) == [4, 7, 10]


@TF_DATA
def test_every_example_once_an_epoch_each_batch_cut_to_its_bucket(tiny_listops_dir):
    task = listops(tiny_listops_dir)
    bounds = batches.bucket_lengths(MAX_LEN, 4)
    padded, labels = task.arrays("train")
    seen = []
    for ids, label in task.dataset(
        "train", 8, shuffle=True, drop_remainder=False, length_buckets=4
    ).as_numpy_iterator():
        assert ids.shape[1] in bounds
        longest = real_lengths(ids).max()
        assert ids.shape[1] == bounds[np.searchsorted(bounds, longest)]  # its bucket, no wider
        seen.extend(zip(map(tuple, np.pad(ids, [[0, 0], [0, MAX_LEN - ids.shape[1]]])), label))
    assert sorted(seen) == sorted(zip(map(tuple, padded), labels))
    assert len({length for length in real_lengths(padded)}) > 4  # lengths of several buckets


@TF_DATA
@pytest.mark.parametrize(
    "attention, block", [("s4d", "s4"), ("full", "transformer"), ("mega", "mega")]
)
def test_a_cut_batch_gives_the_padded_batch_logits(tiny_listops_dir, attention, block):
    task = listops(tiny_listops_dir)
    model = build_classifier(
        ModelConfig(
            attention=attention,
            block=block,
            num_layers=2,
            num_heads=2,
            emb_dim=16,
            qkv_dim=16,
            mlp_dim=16,
            max_len=MAX_LEN,
            vocab_size=task.vocab_size,
            num_classes=10,
            pooling="mean",
            position_embedding="none",
            dropout=0.0,
            attention_dropout=0.0,
        )
    )
    ids, _ = next(task.dataset("train", 8, length_buckets=8).as_numpy_iterator())
    assert ids.shape[1] < MAX_LEN
    padded = np.pad(ids, [[0, 0], [0, MAX_LEN - ids.shape[1]]])
    np.testing.assert_allclose(model(ids), model(padded), atol=1e-5)


def test_grain_batches_are_cut_to_their_bucket_and_each_example_comes_once_an_epoch(
    tiny_listops_dir,
):
    task = listops(tiny_listops_dir)
    bounds = batches.bucket_lengths(MAX_LEN, 4)
    padded, labels = task.arrays("train")
    buckets = np.searchsorted(bounds, real_lengths(padded))
    per_epoch = int(sum(np.bincount(buckets) // 4))  # each bucket's full batches of 4
    stream = task.batches("train", 4, repeat=True, length_buckets=4)
    examples = set(zip(map(tuple, padded), labels))
    for _ in range(2):
        seen = []
        for ids, label in (next(stream) for _ in range(per_epoch)):
            assert ids.shape[1] == bounds[np.searchsorted(bounds, real_lengths(ids).max())]
            seen.extend(zip(map(tuple, np.pad(ids, [[0, 0], [0, MAX_LEN - ids.shape[1]]])), label))
        assert len(set(seen)) == len(seen) == 4 * per_epoch and set(seen) <= examples
    assert len(set(buckets)) > 1


def test_grain_bucketed_stream_continues_from_any_batch(tiny_listops_dir):
    task = listops(tiny_listops_dir)
    stream = task.batches("train", 4, repeat=True, length_buckets=4)
    expected = [next(stream) for _ in range(25)]  # across epochs (about 12 batches each)
    resumed = task.batches("train", 4, repeat=True, length_buckets=4, start=17)
    for ids, labels in expected[17:]:
        got_ids, got_labels = next(resumed)
        np.testing.assert_array_equal(got_ids, ids)
        np.testing.assert_array_equal(got_labels, labels)


@pytest.mark.parametrize("pipeline", ["dataset", "batches"])
def test_a_task_without_padding_refuses_buckets(pipeline):
    with pytest.raises(ValueError, match="every token of this task is real"):
        getattr(tasks.get("image"), pipeline)("train", 8, repeat=True, length_buckets=4)
