"""`python -m arena_tf.data prepare`: sizes and label balance, previews, one-line errors."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arena_tf import data
from arena_tf.generators import listops


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
        (["prepare", "--task=retrieval", "--data_dir=/nonexistent"], 1, "no public mirror"),
        (["prepare", "--task=text", "--data_dir=/nonexistent"], 1, "'imdb_reviews' is not"),
    ],
)
def test_errors_are_one_line_and_a_nonzero_exit(capsys, argv, code, says):
    got, out, err = run(capsys, *argv)
    assert got == code and says in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and not out


def test_module_entry_point_exits_nonzero_with_one_line():
    done = subprocess.run(
        [sys.executable, "-m", "arena_tf.data", "prepare", "--task=nope"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],  # the checkout, so `-m arena_tf.data` resolves
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    lines = [line for line in done.stderr.splitlines() if "unknown task" in line]
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr


def test_bench_times_the_training_pipeline(capsys, tiny_listops_dir):
    code, out, err = run(capsys, "bench", "--task=listops", f"--data_dir={tiny_listops_dir}",
                         "--batch_size=4", "--batches=10")
    assert code == 0, err
    rate = re.search(r"listops: ([\d,]+) examples/s \(10 batches of 4", out)
    assert rate and int(rate.group(1).replace(",", "")) > 0
