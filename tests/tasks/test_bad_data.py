"""Malformed data gets one clear line, never a traceback: each case feeds one exact bad input (a
malformed ListOps TSV, broken Pathfinder metadata, corrupt PNGs) to `python -m arena_tf.data
prepare` as a user would, and checks the exit code, the one line on stderr in the shared style
(`error: <what>; expected <what>; <fix>`) naming the file and line, and that nothing was written
or changed, in-process (tests/test_bad_input.py runs one case of each kind as a subprocess).
Training reads the same checks through arena_tf.tasks (the last tests)."""

import shutil

import pytest

import arena_tf.tasks as tasks
from arena_tf import data
from tests.one_line import assert_one_error_line
from tests.tasks.helpers import PATHFINDER_DIR, pathfinder_set, snapshot, truncate, write_listops

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_bad_data")

GOOD = "( ( [MAX 2 9 ] ) )\t9\n"


@pytest.fixture(scope="module")
def pathfinder_12(tmp_path_factory):
    """12 generated images (6 per metadata file), kept pristine: tests work on copies."""
    root = tmp_path_factory.mktemp("pathfinder12")
    pathfinder_set(root, 12)
    return root


@pytest.fixture(scope="module")
def pathfinder_200(tmp_path_factory):
    """200 generated images: the default rule lets 2 unreadable ones be skipped (1%)."""
    root = tmp_path_factory.mktemp("pathfinder200")
    pathfinder_set(root, 200, images_per_folder=100)
    return root


def copy_of(root, tmp_path):
    target = tmp_path / "data"
    shutil.copytree(root, target)
    return target, target / PATHFINDER_DIR


def in_process(capsys, monkeypatch, cwd, *argv):
    """(exit code, stdout, stderr) of `python -m arena_tf.data ARGV` run in this process in
    `cwd`."""
    monkeypatch.chdir(cwd)
    try:
        code = data.main([str(arg) for arg in argv])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def check_refused(code, err, before, after, cwd, *words):
    assert code == 2, err
    assert_one_error_line(err, *words)
    assert after == before, "the command changed the data"
    assert not any(cwd.iterdir()), "the command wrote into the working directory"


# ---------------------------------------------------------------------------------- ListOps TSV


@pytest.mark.parametrize(
    "row, says",
    [
        ("[MIN 3 4 ] ]\t3", "unbalanced brackets (1 operator, 2 ']')"),
        ("[MAX 2 9\t9", "unbalanced brackets (1 operator, 0 ']')"),
        ("( ( [MAX 2 9 ] )\t9", "unbalanced parentheses (2 '(', 1 ')')"),
        ("[MAX 2 9 ]\t9\textra", "3 tab-separated columns instead of 2"),
        ("[MAX 2 9 ]\t10", "the value '10' is not a number 0-9"),
        ("[FOO 2 9 ]\t9", "'[FOO' is not a ListOps token"),
        ("", "1 tab-separated column instead of 2 ('')"),
        ("\t9", "no expression before the tab"),
    ],
)
def test_malformed_listops_row_is_named_by_file_and_line(capsys, monkeypatch, tmp_path, row, says):
    folder = write_listops(tmp_path / "data", GOOD + row + "\n" + GOOD)
    (cwd := tmp_path / "cwd").mkdir()
    before = snapshot(folder)
    code, out, err = in_process(
        capsys, monkeypatch, cwd, "prepare", "--task=listops", f"--data_dir={folder}"
    )
    check_refused(code, err, before, snapshot(folder), cwd, f"basic_train.tsv:3: {says}")
    assert not out


def test_listops_counts_the_malformed_lines_and_advises_regenerating_generated_data(
    tmp_path, tiny_listops_dir
):
    folder = tmp_path / "generated"
    shutil.copytree(tiny_listops_dir, folder)
    lines = (folder / "basic_val.tsv").read_text().splitlines(keepends=True)
    lines[4] = lines[5] = lines[7] = "[MIN 3\n"
    (folder / "basic_val.tsv").write_text("".join(lines))
    with pytest.raises(tasks.BadDataError) as caught:
        tasks.get("listops", data_dir=folder).load_split("train")  # training checks every split
    message = str(caught.value)
    assert "basic_val.tsv:5: 1 tab-separated column" in message
    assert "(and 2 more malformed lines)" in message and f"delete {folder} to generate" in message


# --------------------------------------------------------------------------- Pathfinder metadata


@pytest.mark.parametrize(
    "name, content, says",
    [
        ("0.npy", b"imgs/0 sample_0.png 0 2 1 14\n", "metadata/0.npy:1: malformed line"),
        ("0.npy", b"imgs/0 sample_0.png 0 0\n\x89PNG\x00\xff", "metadata/0.npy:2: not text"),
        ("0.npy", b"../../etc sample_0.png 0 1\n", "metadata/0.npy:1: malformed line"),
        ("notes.npy", b"imgs/0 sample_0.png 0 1\n", "notes.npy: a metadata file not named"),
    ],
)
def test_broken_pathfinder_metadata_is_named_by_file_and_line(
    capsys, monkeypatch, pathfinder_12, tmp_path, name, content, says
):
    root, directory = copy_of(pathfinder_12, tmp_path)
    (directory / "metadata" / name).write_bytes(content)
    (cwd := tmp_path / "cwd").mkdir()
    before = snapshot(root)
    code, out, err = in_process(
        capsys, monkeypatch, cwd, "prepare", "--task=pathfinder", f"--data_dir={root}"
    )
    check_refused(code, err, before, snapshot(root), cwd, says)
    assert not out


# ------------------------------------------------------------------------------- corrupt images


def test_truncated_pngs_past_the_threshold_are_counted_and_the_first_named(
    capsys, monkeypatch, pathfinder_200, tmp_path
):
    root, directory = copy_of(pathfinder_200, tmp_path)
    for number in (3, 5, 8, 9):
        truncate(directory / f"imgs/0/sample_{number}.png")
    (cwd := tmp_path / "cwd").mkdir()
    before = snapshot(root)
    code, out, err = in_process(
        capsys, monkeypatch, cwd, "prepare", "--task=pathfinder", f"--data_dir={root}"
    )
    first = ", ".join(f"{directory}/imgs/0/sample_{n}.png" for n in (3, 5, 8))
    check_refused(
        code,
        err,
        before,
        snapshot(root),
        cwd,
        f"4 of 200 images in {directory} are unreadable (4 truncated: {first}, ...)",
        "at most 2 unreadable to skip",
    )
    assert not out


def test_unreadable_pngs_within_the_threshold_are_skipped_with_one_warning_line(
    capsys, monkeypatch, pathfinder_200, tmp_path
):
    root, directory = copy_of(pathfinder_200, tmp_path)
    (directory / "imgs/0/sample_3.png").write_bytes(b"")
    truncate(directory / "imgs/1/sample_7.png")  # image 107: in the training split
    (cwd := tmp_path / "cwd").mkdir()
    before = snapshot(root)
    code, out, err = in_process(
        capsys, monkeypatch, cwd, "prepare", "--task=pathfinder", f"--data_dir={root}"
    )
    assert code == 0, err
    (line,) = err.splitlines()
    assert (
        line.startswith("warning: pathfinder: 2 of 200 images in ")
        and "1 empty, 1 truncated" in line
    )
    assert "skipped them (at most 2 may be skipped)" in line
    assert "train          158 examples" in out  # 160 less the two unreadable ones
    assert snapshot(root) == before and not any(cwd.iterdir())


def test_max_bad_images_raises_the_threshold(capsys, monkeypatch, pathfinder_12, tmp_path):
    root, directory = copy_of(pathfinder_12, tmp_path)
    (directory / "imgs/0/sample_1.png").write_bytes(b"not a png at all")
    (cwd := tmp_path / "cwd").mkdir()
    code, out, err = in_process(
        capsys,
        monkeypatch,
        cwd,
        "prepare",
        "--task=pathfinder",
        f"--data_dir={root}",
        "--set",
        "task.params.max_bad_images=1",
    )
    assert code == 0 and len(err.splitlines()) == 1 and "(1 not PNG: " in err
    assert "train            9 examples" in out


# ------------------------------------------------------------- what training reads (arena_tf.tasks)


def test_training_reads_the_same_checks_once_per_task(capsys, pathfinder_200, tmp_path):
    root, directory = copy_of(pathfinder_200, tmp_path)
    (directory / "imgs/1/sample_7.png").write_bytes(b"")  # image 107, in the training split
    task = tasks.get("pathfinder", data_dir=root)
    train = list(task.load_split("train").as_numpy_iterator())
    validation = list(task.load_split("validation").as_numpy_iterator())
    assert (len(train), len(validation)) == (159, 20)
    (line,) = capsys.readouterr().err.splitlines()  # one warning for the whole task
    assert "1 of 200 images" in line and f"{directory}/imgs/1/sample_7.png" in line
    for number in range(4):
        (directory / f"imgs/0/sample_{number}.png").write_bytes(b"")
    with pytest.raises(tasks.BadDataError, match="5 of 200 images .* unreadable .* at most 2"):
        tasks.get("pathfinder", data_dir=root).load_split("train")


def test_a_missing_png_is_always_refused(pathfinder_12, tmp_path):
    root, directory = copy_of(pathfinder_12, tmp_path)
    (directory / "imgs/1/sample_2.png").unlink()
    with pytest.raises(tasks.DataNotFoundError, match="1 image listed in the metadata is missing"):
        tasks.get("pathfinder", data_dir=root, max_bad_images=5).load_split("test")


# ------------------------------------------------------------------------------- the error style


def test_data_errors_are_usage_errors_that_old_except_clauses_still_catch():
    from arena_tf import cli

    assert issubclass(tasks.DataNotFoundError, cli.UsageError)
    assert issubclass(tasks.DataNotFoundError, RuntimeError)
    assert issubclass(tasks.BadDataError, tasks.DataNotFoundError)
    assert issubclass(tasks.BadDataError, ValueError)
    assert tasks.DataNotFoundError("a", "b", "c").exit_code == 2


@pytest.mark.parametrize(
    "name, arguments",
    [
        ("retrieval", {}),
        ("text", {}),
        ("image", {}),
        ("pathfinder", {"generate": False}),
        ("listops", {"generate": False}),
    ],
)
def test_missing_data_messages_read_what_expected_fix(tmp_path, name, arguments):
    with pytest.raises(tasks.DataNotFoundError) as caught:
        tasks.get(name, data_dir=tmp_path, **arguments).load_split("train")
    assert_one_error_line(f"error: {caught.value}\n")
