"""Row forms: each task's rows turned back into ids give exactly what load_split gives (the same
examples, lengths and padding), across a JSON round trip; malformed rows are RowErrors; `python -m
arena_tf.data rows` writes them as JSON Lines."""

import json

import numpy as np
import pytest
import tensorflow_datasets as tfds

import arena_tf.tasks as tasks
from arena_tf import data
from arena_tf.tasks import RowError
from tests.tasks.helpers import pathfinder_set
from tests.tasks.mock_tfds import split_mock
from tests.tasks.test_retrieval import write_aan


def assert_rows_give_load_split_ids(task, split="test"):
    """Every row of `split`, sent through JSON, encodes to the ids and label load_split gives; the
    rows checked (at least one)."""
    rows = [json.loads(json.dumps(row)) for row in task.rows(split)]
    examples = list(task.load_split(split).as_numpy_iterator())
    assert rows and len(rows) == len(examples)
    for row, (inputs, label) in zip(rows, examples):
        expected = inputs if isinstance(inputs, tuple) else (inputs,)
        assert set(row) == {*task.input_keys, "target"} and row["target"] == str(label)
        for got, want in zip(task.row_ids(row), expected, strict=True):
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want)
    for got, want in zip(
        task.rows_to_arrays(rows),
        zip(*[e[0] if isinstance(e[0], tuple) else (e[0],) for e in examples]),
    ):
        np.testing.assert_array_equal(got, np.stack(want))
    return rows


@pytest.mark.parametrize("max_len", [None, 24])  # the default 2000, and one that cuts
def test_listops_rows_are_the_file_columns_and_encode_as_load_split(tiny_listops_dir, max_len):
    task = tasks.get("listops", data_dir=tiny_listops_dir, max_len=max_len)
    rows = assert_rows_give_load_split_ids(task)
    first = tiny_listops_dir.joinpath("basic_test.tsv").read_text().splitlines()[1]
    assert rows[0] == dict(zip(("input", "target"), first.split("\t")))


def test_pathfinder_rows_are_pixels_and_encode_as_load_split(tmp_path):
    pathfinder_set(tmp_path, 20)
    rows = assert_rows_give_load_split_ids(tasks.get("pathfinder", data_dir=tmp_path))
    assert all(len(row["input"]) == 1024 for row in rows)


@pytest.mark.parametrize("name", ["text", "image"])
def test_tfds_task_rows_encode_as_load_split_over_mock_data(name):
    task = tasks.get(name)
    with tfds.testing.mock_data(num_examples=6):
        rows = assert_rows_give_load_split_ids(task)
    assert len(rows) == 6


def test_text_rows_carry_bytes_that_are_not_utf8_exactly():
    reviews = [b"caf\xc3\xa9", b"bad \xff\xfe bytes", "é".encode() * 700]

    def examples(spec):
        return {"text": np.array(reviews, dtype=object), "label": np.array([0, 1, 1])}

    with split_mock(examples):
        rows = assert_rows_give_load_split_ids(tasks.get("text"))
    assert rows[0]["input"] == "café" and len(rows[2]["input"]) == 700  # whole, cut when encoded


def test_retrieval_rows_are_both_documents_and_encode_as_load_split(tmp_path):
    lines = ["1.0\tP1\tP2\tfirst doc\tsecond doc", "bad line", "0\tP3\tP4\tü" + "x" * 50 + "\tz"]
    write_aan(tmp_path, lines)
    task = tasks.get("retrieval", data_dir=tmp_path, max_len=16)
    rows = assert_rows_give_load_split_ids(task)
    assert rows[0] == {"input1": "first doc", "input2": "second doc", "target": "1"}
    assert rows[1]["input2"] == "z"  # the line's '\r\n' is not text


@pytest.mark.parametrize(
    "name, row, says",
    [
        ("listops", ["[MAX 1 ]"], "a row is a list"),
        ("listops", {"text": "[MAX 1 ]"}, "no 'input' field"),
        ("listops", {"input": "[MAX 1 nope ]"}, "'nope' is not a ListOps token"),
        ("listops", {"input": 7}, "a ListOps input is a int"),
        ("text", {"input": ["a"]}, "a text input is a list"),
        ("retrieval", {"input1": "a"}, "no 'input2' field"),
        ("pathfinder", {"input": [0] * 1023}, "(a list of 1023 items)"),
        ("pathfinder", {"input": [256] * 1024}, "not 1024 whole numbers 0..255"),
        ("pathfinder", {"input": [0.5] * 1024}, "not 1024 whole numbers 0..255"),
        ("image", {"input": [[0]] * 1024}, "not 1024 whole numbers 0..255"),
        ("image", {"input": "pixels"}, "(a str)"),
    ],
)
def test_malformed_rows_are_row_errors_saying_what_is_wrong(name, row, says):
    with pytest.raises(RowError) as raised:
        tasks.get(name).row_ids(row)
    assert says in str(raised.value)


def test_a_malformed_row_in_a_batch_is_named_by_its_index():
    task = tasks.get("listops")
    with pytest.raises(RowError, match=r"^row 1: 'x' is not a ListOps token; expected"):
        task.rows_to_arrays([{"input": "[MAX 1 ]"}, {"input": "x"}])
    assert [a.shape for a in task.rows_to_arrays([])] == [(0, 2000)]


def test_data_rows_writes_the_first_rows_as_json_lines(tiny_listops_dir, tmp_path, capsys):
    out = tmp_path / "rows" / "test.jsonl"
    code = data.main(
        [
            "rows",
            "--task=listops",
            f"--data_dir={tiny_listops_dir}",
            "--split=validation",
            "--limit=5",
            f"--out={out}",
        ]
    )
    assert code == 0
    task = tasks.get("listops", data_dir=tiny_listops_dir)
    expected = list(task.rows("validation"))[:5]
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected
    assert "5 validation rows written" in capsys.readouterr().err


def test_data_rows_to_stdout_and_an_unknown_split_in_one_line(tiny_listops_dir, capsys):
    assert data.main(["rows", "--task=listops", f"--data_dir={tiny_listops_dir}"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 20
    assert (
        data.main(["rows", "--task=listops", f"--data_dir={tiny_listops_dir}", "--split=dev"]) == 2
    )
    assert capsys.readouterr().err.startswith("error: unknown split 'dev'; expected one of")
