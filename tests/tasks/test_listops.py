"""ListOps: the evaluator, the generator's rules and determinism, the task's reader and encoding."""

import dataclasses

import numpy as np
import pytest

import arena_tf.tasks as tasks
from arena_tf.generators import listops as generator
from arena_tf.tasks.listops import VOCABULARY
from tests.tasks.conftest import TINY_LISTOPS as TINY


def read_release(path):
    """(text, label) rows of a release file, after checking its header."""
    lines = path.read_text().splitlines()
    assert lines[0] == "Source\tTarget"
    return [(text, int(label)) for text, label in (line.split("\t") for line in lines[1:])]


def write_release(folder, rows):
    """The three release files, each holding `rows` (text, label) with CRLF line ends (csv's)."""
    folder.mkdir(parents=True, exist_ok=True)
    body = "".join(f"{text}\t{label}\r\n" for text, label in rows)
    for name in generator.SPLIT_FILES.values():
        (folder / name).write_text("Source\tTarget\r\n" + body, newline="")


@pytest.mark.parametrize(
    "text, value",
    [
        ("7", 7),
        ("[MAX 2 9 ]", 9),
        ("( ( ( [MAX 2 ) 9 ) ] )", 9),
        ("[MIN 3 [MAX 1 0 ] 5 ]", 1),
        ("[MED 5 1 9 ]", 5),
        ("[MED 1 7 4 2 ]", 3),  # even count: (2 + 4) / 2
        ("[MED 1 8 ]", 4),  # 4.5 floored
        ("[SM 7 8 9 ]", 4),  # 24 mod 10
        ("[SM [MAX 9 1 ] [MED 2 3 ] 5 ]", 6),  # 9 + 2 + 5 = 16
        ("( ( ( [MIN ( ( ( [SM 5 ) 5 ) ] ) ) ( ( ( [MAX 3 ) 4 ) ] ) ) ] )", 0),
    ],
)
def test_evaluator_agrees_with_hand_checked_expressions(text, value):
    assert generator.evaluate(text) == value


@pytest.mark.parametrize("text", ["[MAX 2 9", "[MAX 2 ] 3", "[FOO 1 ]", "]", "[SM ]", "12"])
def test_evaluator_rejects_malformed_expressions(text):
    with pytest.raises(ValueError, match="malformed ListOps"):
        generator.evaluate(text)


def test_generated_labels_are_evaluated_values_and_lengths_within_bounds(tiny_listops_dir):
    for split, name in generator.SPLIT_FILES.items():
        rows = read_release(tiny_listops_dir / name)
        assert len(rows) == TINY.size(split)
        for text, label in rows:
            assert generator.evaluate(text) == label
            assert TINY.min_length < len(generator.tokens(text)) < TINY.max_length
    train = read_release(tiny_listops_dir / "basic_train.tsv")
    operators = {token for text, _ in train for token in text.split()}
    assert set(generator.OPERATORS) <= operators


def test_splits_hold_distinct_trees(tiny_listops_dir):
    files = [tiny_listops_dir / name for name in generator.SPLIT_FILES.values()]
    texts = [text for path in files for text, _ in read_release(path)]
    assert len(set(texts)) == len(texts)


def test_same_seed_same_bytes_whatever_the_number_of_processes(tiny_listops_dir, tmp_path):
    generator.generate(tmp_path / "again", TINY, processes=2)
    generator.generate(tmp_path / "other", dataclasses.replace(TINY, seed=4), 1)
    for name in generator.SPLIT_FILES.values():
        assert (tmp_path / "again" / name).read_bytes() == (tiny_listops_dir / name).read_bytes()
        assert (tmp_path / "other" / name).read_bytes() != (tiny_listops_dir / name).read_bytes()
    assert not list((tmp_path / "again").glob(".*.tmp"))  # temporary files renamed away


@pytest.mark.parametrize(
    "bounds, says",
    [
        ({"min_length": 10, "max_length": 11}, "min_length < max_length - 1"),
        ({"max_args": 1}, "max_args >= 2"),
        ({"max_depth": 2, "min_length": 12}, "out of reach: .* at most 12 tokens"),
    ],
)
def test_specs_that_cannot_be_met_are_refused(bounds, says):
    with pytest.raises(ValueError, match=says):
        generator.ListOpsSpec(**bounds)


def test_reader_parses_release_lines_with_and_without_parentheses(tmp_path):
    rows = [("( ( ( [MAX 2 ) 9 ) ] )", 9), ("[SM 3 [MIN 4 8 ] ]", 7)]
    write_release(tmp_path / "listops-1000", rows)
    task = tasks.get("listops", data_dir=tmp_path)
    examples = list(task.load_split("test").as_numpy_iterator())
    tokens, label = examples[0]
    assert tokens.dtype == np.int32 and tokens.shape == (2000,) and label == 9
    # "[MAX" is id 12, "2" -> 3, "9" -> 10, "]" -> 15, then padding.
    np.testing.assert_array_equal(tokens[:5], [12, 3, 10, 15, 0])
    assert not tokens[4:].any()
    assert task.decode(examples[1][0]) == "[SM 3 [MIN 4 8 ] ]" and examples[1][1] == 7


def test_encoding_round_trip_on_generated_data(tiny_listops_dir):
    task = tasks.get("listops", data_dir=tiny_listops_dir, max_len=TINY.max_length)
    rows = read_release(tiny_listops_dir / "basic_val.tsv")
    examples = list(task.load_split("validation").as_numpy_iterator())
    assert len(examples) == len(rows)
    for (tokens, label), (text, want) in zip(examples, rows):
        assert tokens.shape == (TINY.max_length,) and 0 <= tokens.min() and tokens.max() < 16
        assert task.decode(tokens) == " ".join(generator.tokens(text)) and label == want
    assert task.vocab_size == len(VOCABULARY) + 1 == 16


def test_task_generates_once_into_its_data_dir_and_reuses_the_files(tmp_path, monkeypatch):
    task = tasks.get("listops", data_dir=tmp_path, generator_spec=TINY, processes=1)
    summary = task.prepare()
    assert {split: stats["examples"] for split, stats in summary.items()} == {
        "train": 60,
        "validation": 20,
        "test": 20,
    }
    assert sum(summary["train"]["labels"].values()) == 60
    monkeypatch.setattr(generator, "generate", lambda *args, **kwargs: pytest.fail("regenerated"))
    again = tasks.get("listops", data_dir=tmp_path, generator_spec=TINY)
    assert len(list(again.load_split("test"))) == 20


def test_missing_data_messages(tmp_path):
    write_release(tmp_path / "only_train", [("[MAX 1 2 ]", 2)])
    (tmp_path / "only_train" / "basic_val.tsv").unlink()
    (tmp_path / "only_train" / "basic_test.tsv").unlink()
    with pytest.raises(tasks.DataNotFoundError, match="found only .*basic_train.tsv.*restore"):
        tasks.get("listops", data_dir=tmp_path / "only_train").load_split("train")
    (tmp_path / "a_file").write_text("")
    with pytest.raises(tasks.DataNotFoundError, match="could not write there.*--data-dir"):
        tasks.get("listops", data_dir=tmp_path / "a_file", generator_spec=TINY).prepare()
