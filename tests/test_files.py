"""Atomic writes refuse a place they cannot write in one line (cli.UsageError), leaving what was
there as it was."""

import pytest

from arena_tf import cli, files


def test_a_file_written_where_a_folder_stands_is_refused_and_the_folder_kept(tmp_path):
    (tmp_path / "report.md" / "inside").mkdir(parents=True)
    with pytest.raises(cli.UsageError, match="report.md is a folder, where a file is to be"):
        files.write_text(tmp_path / "report.md", "text")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]
    assert (tmp_path / "report.md" / "inside").is_dir()


@pytest.mark.parametrize("stands", ["file", "dangling link"])
def test_a_folder_written_where_a_file_or_a_dangling_link_stands_is_refused(tmp_path, stands):
    place = tmp_path / "saved_model"
    if stands == "file":
        place.write_text("notes")
    else:
        place.symlink_to(tmp_path / "gone")
    with pytest.raises(cli.UsageError, match="saved_model is a file, where a folder is to be"):
        with files.atomic_path(place) as tmp:
            tmp.mkdir()
    assert place.is_symlink() or place.read_text() == "notes"
    assert [p.name for p in tmp_path.iterdir()] == ["saved_model"]


def test_staged_outputs_move_none_in_when_one_of_their_places_is_a_folder(tmp_path):
    (tmp_path / "page.md").mkdir()
    with pytest.raises(cli.UsageError, match="page.md is a folder"):
        with files.staged(tmp_path) as stage:
            (stage / "chart.png").write_bytes(b"png")
            (stage / "page.md").write_text("page")
    assert [p.name for p in tmp_path.iterdir()] == ["page.md"]


@pytest.mark.parametrize(
    "place, words",
    [
        ("notes/x.json", "notes is a file, not a folder"),
        ("/proc/arena_tf_test/x.json", "/proc/arena_tf_test: cannot write there"),
    ],
)
def test_a_folder_that_cannot_be_made_is_one_usage_error(tmp_path, place, words):
    (tmp_path / "notes").write_text("")
    with pytest.raises(cli.UsageError, match=words):
        files.write_json(tmp_path / place, {"a": 1})
    assert [p.name for p in tmp_path.iterdir()] == ["notes"]


def test_a_folder_that_cannot_move_in_leaves_the_previous_folder_in_place(tmp_path, monkeypatch):
    place = tmp_path / "saved_model"
    place.mkdir()
    (place / "saved_model.pb").write_text("previous")
    moves = []

    def replace(source, target, real=files.os.replace):
        moves.append(target)
        if len(moves) == 2:  # the new folder's move, after the old one moved aside
            raise OSError(5, "Input/output error")
        real(source, target)

    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(OSError, match="Input/output error"):
        with files.atomic_path(place) as tmp:
            tmp.mkdir()
            (tmp / "saved_model.pb").write_text("new")
    assert (place / "saved_model.pb").read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["saved_model"]
