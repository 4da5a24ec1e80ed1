"""A killed export leaves hidden temporaries beside its targets (arena_tf.files.atomic_path); the
next export removes them when it starts, and never touches those of a writer still running."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from arena_tf import files
from arena_tf.export.to_savedmodel import export_savedmodel
from tests.export.conftest import write_run_dir

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = [pytest.mark.xdist_group("test_leftovers"), pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]


def killed_writer(target, content="half written"):
    """Enter atomic_path(target) in another process, write part of the artifact, die (SIGKILL's
    effect: no cleanup runs); the temporary directory it left."""
    code = textwrap.dedent(f"""
        import os, pathlib
        from arena_tf import files
        writing = files.atomic_path(pathlib.Path({str(target)!r}))
        tmp = writing.__enter__()
        tmp.mkdir(parents=True) if {target.suffix == ""!r} else None
        (tmp / "part" if tmp.is_dir() else tmp).write_text({content!r})
        print(tmp.parent)
        os._exit(9)
    """)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 9, done.stderr
    return pathlib.Path(done.stdout.strip())


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    directory, _ = write_run_dir(tmp_path_factory.mktemp("leftovers"), "linear")
    return directory


def test_the_next_export_removes_what_a_killed_export_left(run_dir):
    leftovers = [
        killed_writer(run_dir / "saved_model"),
        killed_writer(run_dir / "model.onnx"),
        killed_writer(run_dir / "saved_model_bf16.parity.json"),
    ]
    old_style = run_dir / ".saved_model_fp16.k3j9x_a1"  # written before temporaries had a pid
    (old_style / "saved_model_fp16" / "variables").mkdir(parents=True)
    running = run_dir / f".saved_model.{os.getpid()}.abcdefgh"  # a writer still running
    running.mkdir()
    assert all(path.is_dir() for path in leftovers)
    export_savedmodel(run_dir, ["fp32"], count=4)
    assert not any(path.exists() for path in leftovers) and not old_style.exists()
    assert running.is_dir()
    running.rmdir()
    assert sorted(p.name for p in run_dir.glob(".*")) == []


def test_a_directory_that_is_not_a_temporary_is_kept(tmp_path):
    target = tmp_path / "saved_model"
    foreign = [tmp_path / ".saved_model.notatemp", tmp_path / ".saved_model.12345678"]
    for path in foreign:
        (path / "something else").mkdir(parents=True)
    assert files.remove_stale_temporaries(target) == []
    assert all(path.is_dir() for path in foreign)


def test_a_writer_killed_while_swapping_directories_leaves_the_previous_one_restored(tmp_path):
    target = tmp_path / "saved_model"
    leftover = tmp_path / ".saved_model.999999999.abcdefgh"  # no such pid
    (leftover / "old").mkdir(parents=True)
    (leftover / "old" / "saved_model.pb").write_text("previous")
    (leftover / "saved_model").mkdir()  # the new one, never moved in
    assert files.remove_stale_temporaries(target) == [leftover]
    assert (target / "saved_model.pb").read_text() == "previous"
    assert not leftover.exists()


def test_atomic_path_keeps_its_api_and_cleans_its_own_leftovers(tmp_path):
    target = tmp_path / "metrics.json"
    leftover = killed_writer(target)
    files.write_json(target, {"a": 1})
    assert target.read_text() == '{\n  "a": 1\n}\n'
    with files.atomic_writer(tmp_path / "notes.txt") as handle:
        handle.write("line\n")
    assert (tmp_path / "notes.txt").read_text() == "line\n"
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json", "notes.txt"]
