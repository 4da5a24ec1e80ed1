"""Several JAX processes train as one: two processes on this machine (CPU collectives through gloo,
coordinator on 127.0.0.1) end with the same weights, follow the loss trajectory of one process
with two devices, and only process 0 writes the run directory; a process that dies, a coordinator
that never answers and an inconsistent cluster each end in one line within a bounded time."""

import json
import signal

import numpy as np
import pytest

from arena_tf import train
from arena_tf.training.cluster import Cluster
from arena_tf.training.errors import StrategyError
from arena_tf.training.events import read_scalars
from tests.training.conftest import (
    DRIVER,
    TINY,
    TRAIN,
    cli_args,
    finish,
    free_port,
    load_weights,
    loop,
    run,
    start,
)

pytestmark = pytest.mark.slow  # starts processes

STEPS = 6
OVERRIDES = [*TINY, *loop(STEPS)]
# A bound on how long a failing process may take to end: JAX would otherwise wait minutes.
BOUNDED_S = 120
JOIN_S = 30  # --join-timeout of the processes these tests stop


def processes(count, coordinator, process_id, timeout=None):
    flags = [
        f"--coordinator={coordinator}",
        f"--num-processes={count}",
        f"--process-id={process_id}",
    ]
    return flags + ([f"--join-timeout={timeout}"] if timeout else [])


def error_lines(err):
    return [line for line in err.splitlines() if line.startswith("error:")]


def test_two_processes_match_two_devices_and_only_process_0_writes(listops_dir, tmp_path, jax_env):
    coordinator = f"127.0.0.1:{free_port()}"
    workers = [
        start(
            DRIVER
            + [tmp_path / f"weights{index}.npz"]
            + cli_args(
                listops_dir,
                tmp_path / f"run{index}",
                OVERRIDES,
                extra=processes(2, coordinator, index),
            ),
            env=jax_env,
        )
        for index in range(2)
    ]
    results = [finish(worker) for worker in workers]
    for code, _, err in results:
        assert code == 0, err[-3000:]
    assert "2 replica(s) in 2 processes (this one: 0)" in results[0][1]

    first, second = (load_weights(tmp_path / f"weights{index}.npz") for index in range(2))
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    metrics = json.loads((tmp_path / "run0" / "metrics.json").read_text())
    assert metrics["steps"] == STEPS and metrics["replicas"] == 2
    assert not (tmp_path / "run1").exists()

    devices = tmp_path / "devices"
    code, _, err = run(
        TRAIN
        + cli_args(
            listops_dir, devices, OVERRIDES, extra=["--strategy=mirrored", "--cpu_devices=2"]
        ),
        env=jax_env,
    )
    assert code == 0, err[-3000:]
    for split in ("train", "validation"):
        expected = read_scalars(devices / split)["loss"]
        actual = read_scalars(tmp_path / "run0" / split)["loss"]
        assert actual.keys() == expected.keys() and len(actual) == (
            STEPS if split == "train" else 1
        )
        np.testing.assert_allclose(
            [actual[s] for s in sorted(actual)], [expected[s] for s in sorted(expected)], atol=1e-4
        )


def test_two_processes_resume_from_process_0s_checkpoint(listops_dir, tmp_path, jax_env):
    """Process 1 has no run directory of its own; it resumes from what process 0 hands it."""
    resumed = tmp_path / "resumed"
    first = [*TINY, *loop(3, checkpoint_every=3)]
    code, _, err = run(TRAIN + cli_args(listops_dir, resumed, first), env=jax_env)
    assert code == 0, err[-3000:]
    coordinator = f"127.0.0.1:{free_port()}"
    more = [*TINY, *loop(STEPS, checkpoint_every=3)]
    workers = [
        start(
            DRIVER
            + [tmp_path / f"weights{index}.npz"]
            + cli_args(
                listops_dir,
                resumed if index == 0 else tmp_path / "elsewhere",
                more,
                extra=processes(2, coordinator, index),
            ),
            env=jax_env,
        )
        for index in range(2)
    ]
    results = [finish(worker) for worker in workers]
    for code, _, err in results:
        assert code == 0, err[-3000:]
    assert "resumed from" in results[0][1]
    for a, b in zip(*(load_weights(tmp_path / f"weights{i}.npz") for i in range(2)), strict=True):
        np.testing.assert_array_equal(a, b)
    assert sorted(read_scalars(resumed / "train")["loss"]) == list(range(1, STEPS + 1))


def start_training(listops_dir, tmp_path, ids, count=2):
    """Processes with these ids training a long run (waiting JOIN_S to join); returned once the
    first reports a step."""
    coordinator = f"127.0.0.1:{free_port()}"
    long_run = [*TINY, *loop(100_000, checkpoint_every=100_000)]
    workers = [
        start(
            TRAIN
            + cli_args(
                listops_dir,
                tmp_path / f"run{number}",
                long_run,
                extra=processes(count, coordinator, index, JOIN_S),
            ),
            env={"KERAS_BACKEND": "jax", "ARENA_TF_PROGRESS_EVERY": "0.5"},
        )
        for number, index in enumerate(ids)
    ]
    for line in workers[0].stdout:  # training has begun, or the process ended
        if line.startswith("step "):
            break
    return workers


def ended_within_the_bound(process):
    """(exit status, stderr) of `process`; the test fails when it runs past BOUNDED_S."""
    code, _, err = finish(process, timeout=BOUNDED_S)
    return code, err


def test_a_killed_process_ends_the_other_in_one_line(listops_dir, tmp_path):
    survivor, victim = start_training(listops_dir, tmp_path, [0, 1])
    victim.send_signal(signal.SIGKILL)
    code, err = ended_within_the_bound(survivor)
    finish(victim)
    assert code == 1, err[-3000:]
    lines = error_lines(err)
    assert len(lines) == 1 and "another process of the run stopped" in lines[0], err[-3000:]
    assert "Traceback" not in err and "Check failure" not in err, err[-3000:]


def test_a_killed_process_0_ends_the_others_through_jax(listops_dir, tmp_path):
    """JAX's runtime ends the others itself (its own report, not one line), without a hang."""
    victim, survivor = start_training(listops_dir, tmp_path, [0, 1])
    victim.send_signal(signal.SIGKILL)
    code, _ = ended_within_the_bound(survivor)
    finish(victim)
    assert code != 0


def test_two_processes_with_one_id_end_through_jax(listops_dir, tmp_path):
    """JAX ends the processes that joined; the one it turned away ends at --join-timeout."""
    workers = start_training(listops_dir, tmp_path, [0, 1, 1], count=2)
    codes = [ended_within_the_bound(worker)[0] for worker in workers]
    assert all(codes), codes


def test_a_coordinator_that_never_answers_ends_in_one_line(listops_dir, tmp_path, jax_env):
    code, out, err = run(
        TRAIN
        + cli_args(
            listops_dir,
            tmp_path / "run",
            OVERRIDES,
            extra=processes(2, f"127.0.0.1:{free_port()}", 1, timeout=5),
        ),
        env=jax_env,
        timeout=BOUNDED_S,
    )
    assert code == 2, err[-3000:]
    assert error_lines(err) == [
        next(line for line in err.splitlines() if "did not all join within 5 s" in line)
    ], err[-3000:]
    assert "Check failure" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "flags, expected",
    [
        (
            ["--coordinator=127.0.0.1:1234", "--num-processes=2", "--process-id=2"],
            "--process-id=2 with --num-processes=2; expected a process id from 0 to 1",
        ),
        (["--num-processes=2", "--process-id=0"], "--coordinator is missing"),
        (
            ["--coordinator=localhost", "--num-processes=2", "--process-id=0"],
            "expected host:port of process 0",
        ),
    ],
)
def test_an_inconsistent_cluster_is_one_line_before_any_wait(
    listops_dir, tmp_path, capsys, flags, expected
):
    code = train.main(cli_args(listops_dir, tmp_path / "run", OVERRIDES, extra=flags))
    err = capsys.readouterr().err
    assert code == 2
    assert len(error_lines(err)) == 1 and expected in err, err[-3000:]


def test_a_batch_the_processes_cannot_share_is_one_line(listops_dir, tmp_path, jax_env):
    coordinator = f"127.0.0.1:{free_port()}"
    odd = [*OVERRIDES, "train.batch_size=33"]
    workers = [
        start(
            TRAIN
            + cli_args(
                listops_dir, tmp_path / f"run{index}", odd, extra=processes(2, coordinator, index)
            ),
            env=jax_env,
        )
        for index in range(2)
    ]
    for worker in workers:
        code, _, err = finish(worker, timeout=BOUNDED_S)
        assert code == 2
        assert error_lines(err) == [
            "error: train.batch_size=33 does not split over 2 replicas; expected a batch size "
            "divisible by the number of replicas; change train.batch_size, --cpu-devices or "
            "--num-processes"
        ], err[-3000:]


def test_the_cluster_comes_from_keras_variables_where_flags_are_missing():
    environ = {
        "KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:2345",
        "KERAS_DISTRIBUTION_NUM_PROCESSES": "2",
        "KERAS_DISTRIBUTION_PROCESS_ID": "1",
    }
    assert Cluster.named(environ=environ) == Cluster("10.0.0.1:1234", 2, 1)
    assert Cluster.named(process_id=0, environ=environ) == Cluster("10.0.0.1:1234", 2, 0)
    with pytest.raises(StrategyError, match="KERAS_DISTRIBUTION_NUM_PROCESSES"):
        Cluster.named(environ={**environ, "KERAS_DISTRIBUTION_NUM_PROCESSES": "two"})
