"""Long data steps are never silent: generating ListOps, Pathfinder and Path-X, checking files and
counting labels print a line every few seconds on stderr with done/total, the rate and an ETA,
also when training asks a task for data it must generate first. Time is a fake clock here (each
reading 10 s later than the last), so nothing depends on the machine's speed."""

import re

import pytest
import tensorflow as tf

import arena_tf.tasks as tasks
from arena_tf import data, progress
from arena_tf.generators import pathfinder as pathfinder_generator
from arena_tf.tasks import listops as listops_task
from arena_tf.tasks import sources
from tests.tasks.conftest import TINY_LISTOPS

LINE = r"{what}: [\d,]+/{total} {unit} \(\d+%\), [\d,.]+/s, ETA \d+ (s|min)"


class FakeClock:
    """Each call returns a time `step` seconds after the previous one."""

    def __init__(self, step=10.0):
        self.now, self.step = 0.0, step

    def __call__(self):
        self.now += self.step
        return self.now


@pytest.fixture
def fake_clock(monkeypatch):
    monkeypatch.delenv(progress.EVERY_ENV, raising=False)
    clock = FakeClock()
    monkeypatch.setattr(progress, "clock", clock)
    return clock


def lines_matching(text, what, total, unit):
    """The progress lines of `what` in `text`."""
    pattern = LINE.format(what=re.escape(str(what)), total=total, unit=unit)
    return [line for line in text.splitlines() if re.fullmatch(pattern, line)]


def test_a_line_only_once_the_interval_has_passed(capsys, monkeypatch):
    monkeypatch.setattr(progress, "clock", FakeClock(step=2.0))
    with progress.Progress("work", total=10, unit="items", every=3) as bar:
        bar.update(1)  # 2 s after the start: nothing yet
        assert capsys.readouterr().err == ""
        bar.update(3)  # 4 s: 4 of 10 done at 1 per second
        bar.update(1)  # 6 s, 2 s after the last line: nothing
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["work: 4/10 items (40%), 1/s, ETA 6 s", "work: 5 items in 8 s"]


def test_a_short_step_prints_nothing_and_an_unknown_total_has_no_eta(capsys, monkeypatch):
    monkeypatch.setattr(progress, "clock", FakeClock(step=0.1))
    with progress.Progress("quick", total=3, unit="files", every=3) as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(progress, "clock", FakeClock(step=10))
    bar = progress.Progress("open-ended", unit="examples", every=3)
    bar.update(40)
    assert capsys.readouterr().err == "open-ended: 40 examples, 4/s\n"


def test_listops_generated_on_first_use_as_training_does_shows_progress(
    capsys, fake_clock, tmp_path
):
    task = tasks.get("listops", data_dir=tmp_path, generator_spec=TINY_LISTOPS, processes=1)
    task.load_split("train")  # what the trainer calls first
    err = capsys.readouterr().err
    total = sum(TINY_LISTOPS.size(split) for split in tasks.SPLITS)
    assert lines_matching(err, f"listops: generating into {tmp_path}", total, "expressions"), err
    assert re.search(
        rf"^listops: checking {tmp_path}/basic_train.tsv: [\d.]+/[\d.]+ MB", err, re.MULTILINE
    ), err
    assert f"listops: generating into {tmp_path}: {total} expressions in " in err


def test_pathfinder_generated_on_first_use_shows_generation_and_checking(
    capsys, fake_clock, tmp_path
):
    task = tasks.get("pathfinder", data_dir=tmp_path, num_examples=12, processes=1)
    task.load_split("train")
    err = capsys.readouterr().err
    directory = tmp_path / "pathfinder32/curv_contour_length_14"
    assert lines_matching(err, f"pathfinder32: generating into {directory}", 12, "images"), err
    assert lines_matching(err, f"pathfinder: checking images in {directory}", 12, "images"), err


def test_pathx_generator_shows_progress(capsys, fake_clock, tmp_path):
    pathfinder_generator.write_dataset(
        tmp_path, pathfinder_generator.PATHX128, 2, processes=1, images_per_folder=1
    )
    err = capsys.readouterr().err
    what = f"pathfinder128: generating into {tmp_path}/pathfinder128/curv_contour_length_14"
    shown = lines_matching(err, what, 2, "images")
    assert shown and shown[-1].startswith(f"{what}: 2/2 images (100%)"), err


def test_prepare_shows_progress_while_checking(capsys, monkeypatch, fake_clock, tiny_listops_dir):
    monkeypatch.setattr(listops_task, "_SCANS", {})  # as in a new process: not checked yet
    assert data.main(["prepare", "--task=listops", f"--data_dir={tiny_listops_dir}"]) == 0
    err = capsys.readouterr().err
    assert re.search(rf"^listops: checking {tiny_listops_dir}/basic_val.tsv: ", err, re.MULTILINE)


def test_counting_labels_shows_progress(capsys, fake_clock):
    dataset = tf.data.Dataset.from_tensor_slices(([[1], [2], [3]], [0, 1, 1]))
    assert sources.summarize(dataset, batch_size=1)["labels"] == {0: 1, 1: 2}
    err = capsys.readouterr().err
    assert lines_matching(err, "counting labels", 3, "examples"), err
