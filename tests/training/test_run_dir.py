"""The run directory: nothing is written before everything is checked, a directory without a
checkpoint is not a run to protect (unless it holds a trained model), one trainer at a time holds it
(a killed one never blocks), and an unreadable newest checkpoint gives way to the newest intact
one."""

import shutil
import subprocess
import sys

import pytest
import yaml

from arena_tf import train
from arena_tf.training.run_dir import LOCK_NAME
from tests.one_line import assert_one_error_line
from tests.training.conftest import HANG_GUARD_S, TINY, cli_args, loop

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_run_dir")

LOCAL = ["model.attention_params.block_size=8"]


def snapshot(path):
    """{relative path: bytes} of every file under `path`."""
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


def truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def test_a_start_refused_by_validation_leaves_nothing_and_the_corrected_rerun_proceeds(
    capsys, listops_dir, tmp_path
):
    run_dir = tmp_path / "run"
    impossible = cli_args(
        listops_dir,
        run_dir,
        [*TINY, *loop(1), "model.attention_params.block_size=0"],
        model="local",
    )
    assert train.main(impossible) == 2
    assert_one_error_line(capsys.readouterr().err, "block_size=0 is invalid")
    assert not run_dir.exists()

    assert train.main(cli_args(listops_dir, run_dir, [*TINY, *loop(1), *LOCAL], model="local")) == 0
    assert "block_size: 8" in (run_dir / "config.yaml").read_text()


def test_a_run_dir_without_checkpoints_takes_another_configuration(capsys, listops_dir, tmp_path):
    """What an earlier start left without a checkpoint (another config, its event files, results)
    is replaced, not protected."""
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "events.out.tfevents.1.earlier").write_bytes(b"")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": {"num_layers": 5}}))
    (tmp_path / "metrics.json").write_text("{}")
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 0
    out = capsys.readouterr().out
    assert f"starting afresh in {tmp_path}: it holds no checkpoint" in out
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert saved["model"]["num_layers"] == 1
    assert not (tmp_path / "train" / "events.out.tfevents.1.earlier").exists()
    assert len(list((tmp_path / "train").glob("events.out.tfevents.*"))) == 1


def test_a_trained_model_without_its_checkpoints_is_not_replaced(capsys, listops_dir, tmp_path):
    """A finished run whose checkpoints were deleted (or not copied) still holds the model its
    exports came from: a start there is refused, the directory left as it was."""
    (tmp_path / "model.keras").write_bytes(b"a trained model")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"model": {"num_layers": 5}}))
    before = snapshot(tmp_path)
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 2
    assert_one_error_line(
        capsys.readouterr().err,
        f"run directory {tmp_path} holds a trained "
        "model (model.keras) but no checkpoint to resume from",
    )
    assert snapshot(tmp_path) == before


HOLD_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, str(os.getpid()).encode())
print("locked", flush=True)
sys.stdin.read()
"""


@pytest.mark.slow
def test_a_second_trainer_on_a_busy_run_dir_is_refused_naming_the_pid(
    capsys, listops_dir, tmp_path
):
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, tmp_path / LOCK_NAME],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "locked\n"
        before = snapshot(tmp_path)
        assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 2
        assert_one_error_line(
            capsys.readouterr().err,
            f"run directory {tmp_path} is in use by another trainer (pid {holder.pid})",
            "--run-dir",
        )
        assert snapshot(tmp_path) == before
    finally:
        holder.stdin.close()
        holder.wait(timeout=HANG_GUARD_S)


@pytest.mark.slow
def test_a_stale_lock_of_a_dead_trainer_does_not_block(capsys, listops_dir, tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    (tmp_path / LOCK_NAME).write_text(dead.stdout)
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 0
    assert capsys.readouterr().err == ""
    assert not (tmp_path / LOCK_NAME).exists()
    assert (tmp_path / "metrics.json").exists()


@pytest.fixture(scope="module")
def checkpointed(listops_dir, tmp_path_factory):
    """A run directory with checkpoints at steps 1 and 2 (and its arguments' overrides)."""
    run_dir = tmp_path_factory.mktemp("checkpointed")
    assert train.main(cli_args(listops_dir, run_dir, [*TINY, *loop(2, checkpoint_every=1)])) == 0
    assert {p.name for p in (run_dir / "checkpoints").glob("*.index")} == {
        "ckpt-1.index",
        "ckpt-2.index",
    }
    return run_dir


def test_a_truncated_newest_checkpoint_gives_way_to_the_newest_intact_one(
    capsys, listops_dir, checkpointed, tmp_path
):
    run_dir = tmp_path / "run"
    shutil.copytree(checkpointed, run_dir)
    truncate(run_dir / "checkpoints" / "ckpt-2.data-00000-of-00001")
    capsys.readouterr()
    assert train.main(cli_args(listops_dir, run_dir, [*TINY, *loop(3, checkpoint_every=1)])) == 0
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("warning: checkpoint ckpt-2 in ") and "is unreadable" in lines[0]
    assert lines[0].endswith(f"resuming from the newest intact one, {run_dir}/checkpoints/ckpt-1")
    assert f"resumed from {run_dir}/checkpoints/ckpt-1 at step 1" in out
    assert '"steps": 3' in (run_dir / "metrics.json").read_text()


def test_no_intact_checkpoint_is_one_error_line_and_changes_nothing(
    capsys, listops_dir, checkpointed, tmp_path
):
    run_dir = tmp_path / "run"
    shutil.copytree(checkpointed, run_dir)
    truncate(run_dir / "checkpoints" / "ckpt-2.data-00000-of-00001")
    (run_dir / "checkpoints" / "ckpt-1.index").write_bytes(b"")
    before = snapshot(run_dir)
    capsys.readouterr()
    assert train.main(cli_args(listops_dir, run_dir, [*TINY, *loop(3, checkpoint_every=1)])) == 2
    assert_one_error_line(
        capsys.readouterr().err,
        f"no checkpoint in {run_dir}/checkpoints can be read (ckpt-2, ckpt-1: ",
        f"delete {run_dir}/checkpoints",
    )
    assert snapshot(run_dir) == before


def test_ctrl_c_is_one_line_with_where_to_resume_and_releases_the_run_dir(
    capsys, monkeypatch, listops_dir, tmp_path
):
    def interrupted(self, start):
        raise KeyboardInterrupt

    monkeypatch.setattr(train.Trainer, "_loop", interrupted)
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 130
    assert_one_error_line(
        capsys.readouterr().err,
        "interrupted",
        "no checkpoint was written yet, so a rerun starts from step 0",
    )
    assert not (tmp_path / LOCK_NAME).exists()
