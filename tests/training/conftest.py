"""Shared pieces of the training tests: one small generated ListOps set, tiny model settings, a
command-line runner and a TensorBoard reader.

Every run sets the model and loop explicitly (no preset), so these tests do not move when the
presets are tuned.
"""

import os
import pathlib
import socket
import subprocess
import sys

import numpy as np
import pytest

from arena_tf.generators import listops

# Short expressions (at most 29 tokens) so a tiny model learns them in seconds.
LISTOPS = listops.ListOpsSpec(
    train=3000, validation=300, test=300, min_length=1, max_length=30, seed=1
)
MAX_LEN = 32

# A tiny model and loop; tests add the number of steps and what they exercise.
TINY = [
    f"task.max_len={MAX_LEN}",
    "model.num_layers=1",
    "model.num_heads=2",
    "model.emb_dim=32",
    "model.qkv_dim=32",
    "model.mlp_dim=64",
    "model.dropout=0.0",
    "model.attention_dropout=0.0",
    "train.batch_size=32",
    "train.learning_rate=0.003",
    "train.schedule=cosine",
    "train.warmup_steps=10",
    "train.weight_decay=0.0",
    "train.eval_batches=4",
]


def loop(steps, log_every=1, eval_every=None, checkpoint_every=None):
    """--set overrides for the loop: `steps` steps, validation and checkpoint at the end by
    default."""
    return [
        f"train.num_train_steps={steps}",
        f"train.log_every={log_every}",
        f"train.eval_every={eval_every or steps}",
        f"train.checkpoint_every={checkpoint_every or steps}",
    ]


def cli_args(data_dir, run_dir, overrides, model="full", extra=()):
    """`python -m arena_tf.train` arguments for ListOps with these --set overrides."""
    sets = [f"--set={text}" for text in overrides]
    return [
        "--task=listops",
        f"--model={model}",
        f"--data_dir={data_dir}",
        f"--run_dir={run_dir}",
        *sets,
        *extra,
    ]


TRAIN = [sys.executable, "-m", "arena_tf.train"]
DRIVER = [sys.executable, str(pathlib.Path(__file__).with_name("driver.py"))]


def start(command, env=None):
    """Start a command (a Popen; stdout and stderr piped, as text) with extra environment (a value
    of None removes that variable)."""
    environ = {
        key: value for key, value in {**os.environ, **(env or {})}.items() if value is not None
    }
    return subprocess.Popen(
        [str(part) for part in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )


# A hang guard, not a speed limit: generous enough for a crowded 2-core machine.
HANG_GUARD_S = 900


def finish(process, timeout=HANG_GUARD_S):
    """(returncode, stdout, stderr) of a started process; fail with its stderr when it hangs."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"{process.args} did not finish in {timeout} s; stderr:\n{err[-3000:]}")
    return process.returncode, out, err


def run(command, env=None, timeout=HANG_GUARD_S):
    return finish(start(command, env), timeout)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def load_weights(path):
    """The arrays of an .npz written by tests/training/driver.py, in order."""
    with np.load(path) as data:
        return [data[f"arr_{i}"] for i in range(len(data.files))]


@pytest.fixture(scope="session")
def listops_dir(tmp_path_factory):
    """ListOps release files generated from LISTOPS (3000 / 300 / 300 short expressions)."""
    out = tmp_path_factory.mktemp("listops")
    listops.generate(out, LISTOPS, processes=1)
    return out
