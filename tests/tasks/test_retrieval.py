"""Retrieval (AAN pairs): two byte inputs per example, malformed lines reported and skipped."""

import logging

import numpy as np
import pytest
import tensorflow as tf

import arena_tf.tasks as tasks
from arena_tf.tasks.retrieval import REPORTED_LINES, SPLIT_FILES

GOOD = [
    "1.0\tP01\tP02\tfirst paper, citing\tsecond paper, cited",
    "0.0\tP03\tP04\tünïcode text\t" + "x" * 5000,
]
BAD = [
    "1.0\tP05\tonly four columns\ttext",  # line 3
    "yes\tP06\tP07\ttext a\ttext b",  # line 4: label not a number
    "2.0\tP08\tP09\ttext a\ttext b",  # line 5: label not 0 / 1
]


def write_aan(folder, lines):
    """The three AAN release files in `folder`, each holding `lines` (CRLF line ends)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in SPLIT_FILES.values():
        (folder / name).write_bytes("".join(f"{line}\r\n" for line in lines).encode())


@pytest.fixture
def aan_dir(tmp_path):
    write_aan(tmp_path / "tsv_data", GOOD + BAD + ["1\tP10\tP11\tlast good\tpair"])
    return tmp_path


def test_each_example_is_two_byte_inputs_and_the_float_label(aan_dir):
    task = tasks.get("retrieval", data_dir=aan_dir)
    data = task.load_split("train")
    spec = tf.TensorSpec([4000], tf.int32)
    assert data.element_spec == ((spec, spec), tf.TensorSpec([], tf.int32))
    examples = list(data.as_numpy_iterator())
    decoded = [(task.decode(a), task.decode(b), label) for (a, b), label in examples]
    assert decoded == [
        ("first paper, citing", "second paper, cited", 1),
        ("ünïcode text", "x" * 4000, 0),
        ("last good", "pair", 1),
    ]
    (first, _), _ = examples[0]
    want = np.frombuffer(b"first paper, citing", np.uint8) + 1
    np.testing.assert_array_equal(first[: len(want)], want)
    assert not first[len(want) :].any()


def test_malformed_lines_are_reported_with_file_and_line_number_and_skipped(aan_dir, caplog):
    task = tasks.get("retrieval", data_dir=aan_dir)
    with caplog.at_level(logging.WARNING, logger="arena_tf.tasks.retrieval"):
        summary = task.prepare()
    path = aan_dir / "tsv_data" / SPLIT_FILES["train"]
    warned = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert [m.split(": ")[0] for m in warned] == [f"{path}:3", f"{path}:4", f"{path}:5"]
    assert "4 tab-separated columns" in warned[0] and "'2.0'" in warned[2]
    assert summary["validation"] == {"examples": 3, "labels": {0: 1, 1: 2}}


def test_many_malformed_lines_are_listed_up_to_a_limit_then_counted(tmp_path, caplog):
    write_aan(tmp_path, GOOD + BAD * 10)
    with caplog.at_level(logging.WARNING, logger="arena_tf.tasks.retrieval"):
        scan = tasks.get("retrieval", data_dir=tmp_path).scan(tmp_path / SPLIT_FILES["test"])
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == REPORTED_LINES + 1 and "skipped 30 malformed lines" in messages[-1]
    assert scan.summary == {"examples": 2, "labels": {0: 1, 1: 1}}


def test_max_len_cuts_each_document(aan_dir):
    task = tasks.get("retrieval", data_dir=aan_dir, max_len=8)
    (first, second), _ = next(iter(task.load_split("test")))
    assert first.shape == second.shape == (8,)
    assert task.decode(first.numpy()) == "first pa"


def test_missing_data_says_there_is_no_mirror_and_where_it_looked(tmp_path):
    with pytest.raises(tasks.DataNotFoundError) as caught:
        tasks.get("retrieval", data_dir=tmp_path).load_split("train")
    message = str(caught.value)
    for part in ("new_aan_pairs.train.tsv", str(tmp_path / "tsv_data"), "no public mirror"):
        assert part in message


def test_a_file_without_any_valid_line_is_an_error(tmp_path):
    write_aan(tmp_path, BAD)
    with pytest.raises(tasks.DataNotFoundError, match="holds no valid line"):
        tasks.get("retrieval", data_dir=tmp_path).prepare()
