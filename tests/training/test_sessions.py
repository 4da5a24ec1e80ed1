"""A run resumed on another device names both in metrics.json (and so in its results.json row),
each with the steps it trained; a run on one device names it alone."""

import json

import pytest

from arena_tf.training import sessions
from tests.training.conftest import TINY, cli_args, loop

AMD, INTEL = "CPU: AMD EPYC (family 23 model 1, AVX2), 2 cores", "CPU: Intel Xeon, 2 cores"


@pytest.mark.parametrize(
    "runs, steps, named",
    [
        ([(0, AMD)], 10, AMD),
        ([(0, AMD), (4, AMD)], 10, AMD),
        ([(0, AMD), (4, INTEL)], 10, f"{AMD} (steps 0-4), then {INTEL} (steps 4-10)"),
        (
            [(0, AMD), (4, INTEL), (6, AMD)],
            8000,
            f"{AMD} (steps 0-4), then {INTEL} (steps 4-6), then {AMD} (steps 6-8,000)",
        ),
        ([(3250, INTEL)], 10000, f"unrecorded (steps 0-3,250), then {INTEL} (steps 3,250-10,000)"),
        ([(0, AMD), (10, INTEL)], 10, AMD),  # a session that only evaluated trained nothing
    ],
)
def test_the_devices_of_a_run_are_named_with_their_steps(runs, steps, named):
    assert sessions.described(runs, steps) == named


def test_a_run_resumed_on_another_device_names_both(listops_dir, tmp_path, monkeypatch):
    from arena_tf import train
    from arena_tf.training import tf_trainer

    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(2)])) == 0
    first = json.loads((tmp_path / "metrics.json").read_text())["device"]
    assert first == tf_trainer.cpu_device()
    monkeypatch.setattr(tf_trainer.Distribution, "device", lambda self: "another device")
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(3)])) == 0
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["device"] == f"{first} (steps 0-2), then another device (steps 2-3)"
    assert sessions.earlier(tmp_path, 3) == [(0, first), (2, "another device")]
