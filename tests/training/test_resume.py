"""A run killed (SIGKILL) after a checkpoint resumes from it when started again with the same run
directory, and ends with the same weights as a run never interrupted: the step, the optimizer, the
data position and the dropout random state all come back. The uninterrupted run's console output
is also checked: plain lines in a log, and the TensorBoard command."""

import json
import re
import signal
import time

import keras
import numpy as np
import pytest

import arena_tf.models  # noqa: F401 (registers the layers model.keras holds)
from tests.training.conftest import HANG_GUARD_S, TINY, TRAIN, cli_args, finish, loop, start

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_resume")

STEPS, EVERY = 400, 50
DROPOUT = ["model.dropout=0.1", "model.attention_dropout=0.1"]  # the RNG state must be restored
OVERRIDES = [*TINY, *DROPOUT, *loop(STEPS, log_every=EVERY, checkpoint_every=EVERY)]


def wait_for_checkpoint(process, checkpoints, timeout=HANG_GUARD_S):
    """Poll until the first checkpoint is recorded; fail if the process ends first (the timeout
    only guards against a hang)."""
    deadline = time.monotonic() + timeout
    while not (checkpoints / "checkpoint").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            _, _, err = finish(process)
            pytest.fail(f"no checkpoint appeared in {checkpoints}; stderr:\n{err[-2000:]}")
        time.sleep(0.02)


def weights(run_dir):
    return keras.saving.load_model(run_dir / "model.keras").get_weights()


@pytest.fixture(scope="module")
def runs(listops_dir, tmp_path_factory):
    """(uninterrupted run dir, its stdout, resumed run dir, stdout of the restart)."""
    root = tmp_path_factory.mktemp("resume")
    whole, killed = root / "whole", root / "killed"
    reference = start(TRAIN + cli_args(listops_dir, whole, OVERRIDES))
    victim = start(TRAIN + cli_args(listops_dir, killed, OVERRIDES))
    wait_for_checkpoint(victim, killed / "checkpoints")
    if victim.poll() is not None:
        pytest.fail(f"the run ended before it could be killed; raise STEPS above {STEPS}")
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not (killed / "metrics.json").exists()
    code, restart_out, err = finish(start(TRAIN + cli_args(listops_dir, killed, OVERRIDES)))
    assert code == 0, err
    code, whole_out, err = finish(reference)
    assert code == 0, err
    return whole, whole_out, killed, restart_out


def test_restart_continues_from_the_checkpoint_step(runs):
    _, _, killed, restart_out = runs
    resumed = re.search(r"resumed from (\S+) at step (\d+)", restart_out)
    assert resumed, restart_out
    step = int(resumed.group(2))
    assert resumed.group(1).endswith(f"ckpt-{step}") and step % EVERY == 0 and 0 < step < STEPS
    logged = [int(s) for s in re.findall(rf"^step (\d+)/{STEPS}: loss", restart_out, re.MULTILINE)]
    assert logged == list(range(step + EVERY, STEPS + 1, EVERY))


def test_resumed_run_ends_with_the_uninterrupted_weights(runs):
    whole, _, killed, _ = runs
    for resumed, reference in zip(weights(killed), weights(whole), strict=True):
        np.testing.assert_allclose(resumed, reference, rtol=1e-5, atol=1e-6)


def test_log_output_is_one_plain_line_per_update_and_names_tensorboard(runs):
    whole, whole_out, _, _ = runs
    assert f"TensorBoard: tensorboard --logdir {whole}" in whole_out.splitlines()
    assert "\b" not in whole_out and "\x1b" not in whole_out and "\r" not in whole_out
    logged = re.findall(
        rf"^step (\d+)/{STEPS}: loss [\d.]+, accuracy [\d.]+, steps/s [\d.]+"
        r"(?:, ETA (?:\d+ min )?\d+ s)?$",
        whole_out,
        re.MULTILINE,
    )
    assert [int(s) for s in logged] == list(range(EVERY, STEPS + 1, EVERY))


def test_finished_run_extends_with_more_steps_and_a_lower_learning_rate(
    listops_dir, tmp_path, capsys
):
    from arena_tf import train

    first = [*TINY, *loop(2)]
    assert train.main(cli_args(listops_dir, tmp_path, first)) == 0
    more = [*TINY, *loop(3), "train.learning_rate=0.001"]
    assert train.main(cli_args(listops_dir, tmp_path, more)) == 0
    out = capsys.readouterr().out
    assert f"resumed from {tmp_path}/checkpoints/ckpt-2 at step 2" in out
    assert "resuming with train.learning_rate changed: saved 0.003, now 0.001" in out
    assert "resuming with train.num_train_steps changed: saved 2, now 3" in out
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["steps"] == 3 and metrics["trained_steps"] == 1
    assert "learning_rate: 0.001" in (tmp_path / "config.yaml").read_text()
