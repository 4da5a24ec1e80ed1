"""`python -m arena_tf.data prepare`: sizes and label balance, previews, one-line errors."""

import re

import pytest

from arena_tf import data
from arena_tf.config import ConfigError
from arena_tf.generators import listops
from tests.one_line import assert_one_error_line


def run(capsys, *argv):
    """(exit code, stdout, stderr) of the CLI run in this process."""
    try:
        code = data.main(list(argv))
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def test_prepare_prints_split_sizes_and_label_balance(capsys, tiny_listops_dir):
    code, out, err = run(capsys, "prepare", "--task=listops", f"--data_dir={tiny_listops_dir}")
    assert code == 0, err
    sizes = dict(re.findall(r"^(train|validation|test) +(\d+) examples", out, re.MULTILINE))
    assert sizes == {"train": "60", "validation": "20", "test": "20"}
    train_line = next(line for line in out.splitlines() if line.startswith("train"))
    counts = [int(n) for n in re.findall(r"\d: (\d+) \(", train_line)]
    shares = [float(p) for p in re.findall(r"\((\d+\.\d)%\)", train_line)]
    assert sum(counts) == 60 and abs(sum(shares) - 100) < 1
    assert str(tiny_listops_dir) in out


def test_preview_prints_decoded_examples(capsys, tiny_listops_dir):
    argv = ["prepare", "--task=listops", f"--data_dir={tiny_listops_dir}", "--preview"]
    code, out, _ = run(capsys, *argv)
    previews = [line for line in out.splitlines() if line.startswith("train[")]
    assert code == 0 and len(previews) == 3
    first = tiny_listops_dir.joinpath("basic_train.tsv").read_text().splitlines()[1]
    text, label = first.split("\t")
    assert previews[0].startswith(f"train[0] label {label}: {' '.join(listops.tokens(text))[:40]}")


@pytest.mark.parametrize(
    "argv, code, says",
    [
        (["prepare", "--task=nope"], 2, "unknown task 'nope'; expected one of image, listops"),
        (["prepare"], 2, "the following arguments are required: --task"),
        (["prepare", "--task=listops", "--bogus=1"], 2, "unrecognized arguments: --bogus=1"),
        (["prepare", "--task=retrieval", "--data_dir=/nonexistent"], 2, "no public mirror"),
        (["prepare", "--task=text", "--data_dir=/nonexistent"], 2, "'imdb_reviews' is not"),
        (
            ["prepare", "--task=listops", "--set", "model.num_layers=2"],
            2,
            "'model.num_layers=2' is not a task parameter",
        ),
        (
            ["prepare", "--task=listops", "--set", "task.params.nope=1"],
            2,
            "unexpected keyword argument 'nope'",
        ),
        (["bench", "--task=listops", "--batches=0"], 2, "'0' is not a whole number >= 1"),
    ],
)
def test_errors_are_one_line_in_the_shared_style_and_exit_2(capsys, argv, code, says):
    got, out, err = run(capsys, *argv)
    assert got == code and not out
    assert_one_error_line(err, says)


def test_a_failure_of_the_run_itself_is_one_line_and_exit_1(capsys, monkeypatch, tiny_listops_dir):
    import tensorflow as tf

    from arena_tf.tasks.listops import ListOps

    def broken(self):
        raise tf.errors.InternalError(None, None, "disk read failed")

    monkeypatch.setattr(ListOps, "prepare", broken)
    code, _, err = run(capsys, "prepare", "--task=listops", f"--data_dir={tiny_listops_dir}")
    assert code == 1
    assert_one_error_line(err, "TensorFlow could not read the data (disk read failed)")


def test_debug_shows_the_traceback_instead(capsys):
    with pytest.raises(ConfigError, match="unknown task 'nope'"):
        data.main(["prepare", "--task=nope", "--debug"])


def test_bench_times_the_training_pipeline(capsys, tiny_listops_dir):
    code, out, err = run(
        capsys,
        "bench",
        "--task=listops",
        f"--data_dir={tiny_listops_dir}",
        "--batch_size=4",
        "--batches=10",
    )
    assert code == 0, err
    rate = re.search(r"listops: ([\d,]+) examples/s \(10 batches of 4", out)
    assert rate and int(rate.group(1).replace(",", "")) > 0
