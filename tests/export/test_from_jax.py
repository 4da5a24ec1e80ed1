"""A run trained under KERAS_BACKEND=jax exports on the TensorFlow side: `export/to_onnx.py RUN_DIR`
loads the model.keras the JAX trainer wrote and passes its parity checks (SavedModel and ONNX
against that Keras model on the task's test split). Skipped where JAX is not installed."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests.training.conftest import TINY, TRAIN, cli_args, listops_dir, loop, run  # noqa: F401

pytestmark = pytest.mark.slow  # starts processes

pytest.importorskip("jax")

REPO = pathlib.Path(__file__).resolve().parents[2]


def test_a_run_trained_on_jax_exports_to_onnx_with_parity(listops_dir, tmp_path):  # noqa: F811
    run_dir = tmp_path / "jax-run"
    overrides = [*TINY, *loop(2), "model.attention_params.num_features=16"]
    code, _, err = run(
        TRAIN + cli_args(listops_dir, run_dir, overrides, model="performer"),
        env={"KERAS_BACKEND": "jax"},
    )
    assert code == 0, err
    assert json.loads((run_dir / "metrics.json").read_text())["backend"] == "jax"
    done = subprocess.run(
        [sys.executable, "export/to_onnx.py", str(run_dir), "--examples", "8"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for artifact in ("saved_model", "model.onnx"):
        (line,) = [text for text in lines if text.startswith(f"{run_dir / artifact}:")]
        assert "parity passed" in line and "listops test split" in line
