"""The `xla` runtime: the tiny run's StableHLO artifact (tests/serving/conftest.py) served by XLA
through JAX alone. The Pentathlon driver runs its submission in test_submission.py beside the
other runtimes; here: the same logits as ONNX Runtime, the same fixed-batch accuracy in the bench,
a process without TensorFlow, Keras or model code, and the combinations it cannot run."""

import json
import subprocess
import sys

import numpy as np
import pytest

from arena_tf.serving import artifacts, runtimes
from arena_tf.serving.runtimes import Unsupported

from .conftest import MAX_LEN, ROOT
from .test_bench import SMALL, run_bench

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = [pytest.mark.xdist_group("tiny_run"), pytest.mark.slow]

pytest.importorskip("jax")


def loaded(run, runtime, artifact):
    path = run / artifact
    return runtimes.get(runtime)(path, metadata=artifacts.read_metadata(path)).load()


def test_xla_predicts_onnxruntimes_logits_whatever_the_batch_size(tiny_run):
    tokens = np.random.default_rng(0).integers(0, 16, size=(5, MAX_LEN)).astype("int32")
    xla = loaded(tiny_run, "xla", "stablehlo")
    expected = loaded(tiny_run, "onnxruntime", "model.onnx").predict((tokens,))
    np.testing.assert_allclose(xla.predict((tokens,)), expected, atol=1e-4)
    # 3 rows run padded to 4, 1 row alone: the padding never reaches the answers
    one_by_one = np.concatenate([xla.predict((tokens[i : i + 1],)) for i in range(3)])
    np.testing.assert_allclose(one_by_one, expected[:3], atol=1e-4)
    assert xla.describe()["providers"] == ["cpu:0 (cpu, fp32)"]


@pytest.mark.parametrize(
    "precision, device, message",
    [
        ("bf16", "cpu", "stablehlo_bf16 is missing; expected .*; export it: .*stablehlo.py"),
        ("fp16", "cpu", "stablehlo_fp16 is missing; expected .*; export it: .*stablehlo.py"),
    ],
)
def test_missing_artifacts_are_unsupported(tiny_run, precision, device, message):
    with pytest.raises(Unsupported, match=message):
        runtimes.artifact_path(tiny_run, "xla", precision, device)


def test_a_gpu_jax_cannot_see_or_another_precision_is_unsupported_not_run(tiny_run):
    with pytest.raises(Unsupported, match="computes in fp32, not bf16"):
        runtimes.get("xla")(tiny_run / "stablehlo", "bf16").load()
    import jax

    if not any(d.platform == "gpu" for d in jax.devices()):
        with pytest.raises(Unsupported, match="JAX sees no GPU .*install jax with its CUDA"):
            runtimes.get("xla")(tiny_run / "stablehlo", "fp32", "gpu").load()


def test_the_xla_submission_loads_no_tensorflow_keras_or_model_code(tiny_run):
    """Its memory and start-up are XLA's own, as a deployment of the artifact has them."""
    script = (
        "import json, sys\n"
        "from arena_tf.serving.submission import Submission\n"
        "submission = Submission.load(sys.argv[1], 'xla')\n"
        "print(json.dumps(submission.predict([{'input': '( [MAX 2 9 ] )'}])))\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tensorflow', 'keras', 'torch') or m.startswith(('arena_tf.layers', "
        "'arena_tf.models', 'arena_tf.encoder', 'arena_tf.export.to_', "
        "'arena_tf.export.parity')))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tiny_run)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    predicted, imported = map(json.loads, done.stdout.splitlines())
    assert len(predicted) == 1 and imported == []


def test_xla_and_onnxruntime_rows_agree_on_the_same_instances(tiny_run, tmp_path):
    status, rows = run_bench(
        tiny_run,
        "--runtime",
        "onnxruntime,xla",
        "--scenario",
        "fixed_batch",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 0 and [(r["runtime"], r["status"]) for r in rows] == [
        ("onnxruntime", "ok"),
        ("xla", "ok"),
    ]
    onnxruntime, xla = rows
    assert xla["accuracy"] == onnxruntime["accuracy"]
    assert (xla["count"], xla["batches"]) == (onnxruntime["count"], onnxruntime["batches"])
    assert xla["runtime_used"] == "xla" and xla["precision_used"] == "fp32"
