"""The layers are Keras 3 layers in keras.ops: under JAX, importing them imports no TensorFlow."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "import sys, arena_tf.layers; print('tensorflow' in sys.modules)"


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax is not installed")
def test_importing_the_layers_under_jax_imports_no_tensorflow():
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, KERAS_BACKEND="jax"),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == "False", "importing arena_tf.layers imported tensorflow"
