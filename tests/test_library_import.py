"""Importing arena_tf as a library leaves the importer's process as it was: no environment variable,
exception hook or signal handler of its own, and a bad KERAS_BACKEND fails at Keras' import, in
Keras' words. The commands prepare their own process (`arena_tf.cli.prepare_process`): each refuses
a bad KERAS_BACKEND in one line before Keras is imported. Each check runs in a fresh interpreter."""

import os
import pathlib
import pkgutil
import subprocess
import sys

import pytest

import arena_tf
from arena_tf import commands

pytestmark = pytest.mark.slow  # starts processes

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Everything under arena_tf but the `python -m` entry modules (importing those runs the command).
LIBRARY = sorted(
    module.name
    for module in pkgutil.walk_packages(arena_tf.__path__, "arena_tf.")
    if not module.name.endswith(".__main__")
)

# The dependencies change the process themselves when imported (TensorFlow sets TF2_BEHAVIOR and
# others, ONNX Runtime's transformers tools add their folder to sys.path): the child imports them
# first, then takes the snapshot the library must leave as it is.
SNAPSHOT_AFTER_DEPENDENCIES = """
import os, signal, sys
import keras, numpy, tensorflow, jax, grain, tensorflow_datasets
import onnx, onnxruntime, onnxruntime.transformers, openvino, tf2onnx
def state():
    return (dict(os.environ), sys.excepthook, list(sys.path),
            {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)})
before = state()
for name in sys.argv[1:]:
    __import__(name)
after = state()
for label, was, now in zip(("os.environ", "sys.excepthook", "sys.path", "signal handlers"),
                           before, after):
    if was != now:
        print(f"{label} changed: {was!r:.300} -> {now!r:.300}")
"""


def child_environment(**changes):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("TF_CPP_MIN_LOG_LEVEL", "KERAS_BACKEND")
    }
    env.update(changes)
    return env


def test_there_is_a_library_to_import():
    assert {"arena_tf.layers", "arena_tf.models", "arena_tf.train", "arena_tf.cli"} <= set(LIBRARY)


def test_importing_every_library_module_leaves_the_process_as_it_was():
    child = subprocess.run(
        [sys.executable, "-c", SNAPSHOT_AFTER_DEPENDENCIES, *LIBRARY],
        capture_output=True,
        text=True,
        timeout=600,
        env=child_environment(),
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout == ""


@pytest.mark.parametrize("backend", ["tensorfow", "torch"])
def test_a_bad_keras_backend_fails_at_keras_import_in_keras_words(backend):
    child = subprocess.run(
        [sys.executable, "-c", "import arena_tf.layers"],
        capture_output=True,
        text=True,
        timeout=300,
        env=child_environment(KERAS_BACKEND=backend),
    )
    assert child.returncode == 1  # an uncaught exception, not a command's exit status 2
    assert "Traceback" in child.stderr and "keras" in child.stderr
    assert "arena_tf runs on" not in child.stderr


SETS_ITS_OWN_BACKEND = "stablehlo"  # always JAX: jax.export traces the model's JAX code
# A console script as setup.py installs it: arena_tf.commands.main, started under the script's name.
CONSOLE_SCRIPT = (
    "import sys; sys.argv[:2] = sys.argv[1:2]; from arena_tf.commands import main; main()"
)


def command_lines():
    """Each command as a user starts it: `python -m MODULE`, a checkout's spellings (`python
    export/to_onnx.py`, `python -m serving.bench`) and the console scripts (`arena-tf-train`)."""
    from tests.test_cli_grammar import COMMANDS

    modules = {module.removesuffix(".__main__") for module, _ in COMMANDS}
    return [
        *[["-m", module] for module in sorted(modules)],
        *[[f"export/{path.name}"] for path in sorted((ROOT / "export").glob("to_*.py"))],
        *[["-m", f"serving.{path.stem}"] for path in sorted((ROOT / "serving").glob("[!_]*.py"))],
        *[["-c", CONSOLE_SCRIPT, script] for script in sorted(commands.COMMANDS)],
    ]


def test_every_console_script_is_a_command():
    from tests.test_cli_grammar import COMMANDS

    modules = {module.removesuffix(".__main__") for module, _ in COMMANDS}
    assert set(commands.COMMANDS.values()) <= modules


@pytest.mark.parametrize("command", command_lines(), ids=lambda command: command[-1])
def test_every_command_refuses_a_bad_keras_backend_in_one_line(command):
    if SETS_ITS_OWN_BACKEND in " ".join(command):
        pytest.skip("the StableHLO exporter sets KERAS_BACKEND=jax itself")
    child = subprocess.run(
        [sys.executable, *command, "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=child_environment(KERAS_BACKEND="torch"),
    )
    assert child.returncode == 2, child.stderr[-2000:]
    assert child.stderr.splitlines() == [
        "error: KERAS_BACKEND='torch' is a Keras backend arena_tf does not run on; expected "
        "tensorflow or jax, the backends arena_tf runs on; set KERAS_BACKEND=tensorflow or "
        "KERAS_BACKEND=jax, or unset it"
    ]
