"""Parity examples: the task's test split where its files exist, generated inputs otherwise, and
never a download or a generator run."""

import dataclasses

import numpy as np

from arena_tf.export.examples import generated_examples, load_examples
from arena_tf.export.source import load_source
from tests.export.conftest import LENGTH, tiny_config, write_run_dir

LISTOPS_TEST = [("[MAX 2 9 ]", 9), ("[MIN 4 [SM 3 5 ] 7 ]", 4), ("[MED 1 2 3 ]", 2)]


def write_listops_files(directory):
    """Three tiny ListOps release files (header, source tab target)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("basic_train.tsv", "basic_val.tsv", "basic_test.tsv"):
        lines = [f"( ( {source} ) )\t{label}" for source, label in LISTOPS_TEST]
        (directory / name).write_text("Source\tTarget\n" + "\n".join(lines) + "\n")
    return directory


def test_real_examples_come_from_the_task_test_split_with_labels(tmp_path):
    data_dir = write_listops_files(tmp_path / "listops")
    run_dir, _ = write_run_dir(
        tmp_path / "run",
        "full",
        num_classes=10,
        task={"name": "listops", "data_dir": str(data_dir)},
    )
    examples = load_examples(load_source(run_dir), count=10)
    assert examples.origin.startswith("listops test split")
    assert examples.count == len(LISTOPS_TEST)  # the split is shorter than the count asked
    np.testing.assert_array_equal(examples.labels, [label for _, label in LISTOPS_TEST])
    assert examples.arrays[0].shape == (3, LENGTH) and examples.arrays[0].dtype == np.int32
    assert examples.arrays[0][0, :4].tolist() == [12, 3, 10, 15]  # [MAX 2 9 ] at ids 12, 3, 10, 15


def test_missing_task_data_gives_generated_examples_and_is_not_generated(tmp_path):
    empty = tmp_path / "listops-data"
    empty.mkdir()
    run_dir, _ = write_run_dir(
        tmp_path / "run", "full", task={"name": "listops", "data_dir": str(empty)}
    )
    examples = load_examples(load_source(run_dir), count=6)
    assert examples.origin.startswith("generated: listops test split unreadable (DataNotFoundError")
    assert "listops: no data in" in examples.origin  # the read-only task, not the generator
    assert examples.labels is None and examples.count == 6
    assert list(empty.iterdir()) == []  # the ListOps generator did not run


def test_tfds_task_without_prepared_data_does_not_download(tmp_path):
    run_dir, _ = write_run_dir(
        tmp_path / "run",
        "full",
        vocab_size=257,
        task={"name": "text", "data_dir": str(tmp_path / "tfds")},
    )
    examples = load_examples(load_source(run_dir), count=4)
    assert examples.origin.startswith("generated: text test split unreadable")
    assert not (tmp_path / "tfds" / "downloads").exists()


def test_generated_examples_are_vocabulary_ids_with_padding_tails():
    config = tiny_config("full", vocab_size=7)
    (tokens,) = generated_examples(config, 200, "test").arrays
    assert tokens.shape == (200, LENGTH) and tokens.dtype == np.int32
    assert tokens.min() >= 0 and tokens.max() < 7
    real = tokens != config.padding_id
    assert real[0].all()  # one row without padding
    lengths = real.sum(axis=1)
    assert (real == (np.arange(LENGTH)[None] < lengths[:, None])).all()  # padding only at the end
    assert len(set(lengths.tolist())) > 10 and lengths.min() >= LENGTH // 4


def test_generated_examples_for_two_towers_and_for_pixels():
    two = generated_examples(tiny_config("full", two_tower=True), 8, "test").arrays
    assert len(two) == 2 and not np.array_equal(two[0], two[1])
    pixels = dataclasses.replace(tiny_config("full", vocab_size=256), padding_id=None)
    (values,) = generated_examples(pixels, 50, "test").arrays
    assert values.max() < 256 and (values == 0).sum() < values.size / 50  # zeros are real pixels
