"""Runtimes: the registry, artifacts per precision, unsupported combinations, equal predictions."""

import sys
import types

import numpy as np
import pytest

from arena_tf.serving import artifacts, runtimes
from arena_tf.serving.runtimes import Unsupported

from .conftest import MAX_LEN

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = pytest.mark.xdist_group("tiny_run")


def test_registry_maps_names_to_runtimes():
    assert runtimes.available() == ["onnxruntime", "openvino", "tensorrt", "tf", "xla"]
    assert runtimes.get("tf").artifacts["bf16"] == "saved_model_bf16"
    assert runtimes.get("openvino").artifacts == {"fp32": "openvino", "fp16": "openvino_fp16"}
    with pytest.raises(
        ValueError, match="expected one of onnxruntime, openvino, tensorrt, tf, xla"
    ):
        runtimes.get("tvm")


@pytest.mark.parametrize(
    "runtime, precision, device, message",
    [
        (
            "tf",
            "fp16",
            "cpu",
            "saved_model_fp16 is missing; expected .*; export it: .*savedmodel.py",
        ),
        (
            "onnxruntime",
            "fp16",
            "cpu",
            "model.fp16.onnx is missing; expected .*; export it: .*onnx.py",
        ),
        ("onnxruntime", "bf16", "cpu", "no bf16 artifact in the export contract"),
        ("tensorrt", "fp32", "cpu", "tensorrt runs on gpu, not cpu"),
        (
            "openvino",
            "fp16",
            "cpu",
            "openvino_fp16 is missing; expected .*; export it: .*openvino.py",
        ),
        ("openvino", "fp32", "gpu", "openvino runs on cpu, not gpu"),
    ],
)
def test_combinations_that_cannot_run_say_why(tiny_run, runtime, precision, device, message):
    with pytest.raises(Unsupported, match=message):
        runtimes.artifact_path(tiny_run, runtime, precision, device)


def test_an_onnxruntime_fallback_to_the_cpu_is_unsupported_not_run(tiny_run, monkeypatch):
    class Session:
        def __init__(self, path, providers):
            pass

        def get_providers(self):
            return ["CPUExecutionProvider"]  # CUDA could not be created

    fake = types.SimpleNamespace(
        InferenceSession=Session,
        get_available_providers=lambda: ["CUDAExecutionProvider", "CPUExecutionProvider"],
    )
    monkeypatch.setitem(sys.modules, "onnxruntime", fake)
    runtime = runtimes.get("onnxruntime")(tiny_run / "model.onnx", device="gpu")
    with pytest.raises(Unsupported, match="fell back to CPUExecutionProvider"):
        runtime.load()


def test_tensorflow_onnxruntime_and_openvino_predict_the_same_logits(tiny_run):
    tokens = np.random.default_rng(0).integers(1, 16, (3, MAX_LEN)).astype(np.int32)
    logits = []
    for name, artifact in (
        ("tf", "saved_model"),
        ("onnxruntime", "model.onnx"),
        ("openvino", "openvino"),
    ):
        path = tiny_run / artifact
        runtime = runtimes.get(name)(path, metadata=artifacts.read_metadata(path)).load()
        logits.append(runtime.predict((tokens,)))
        assert logits[-1].dtype == np.float32 and logits[-1].shape == (3, 10)
        assert runtime.describe()["providers"]
    np.testing.assert_allclose(logits[0], logits[1], atol=1e-4)
    np.testing.assert_allclose(logits[0], logits[2], atol=1e-4)


def test_openvino_runs_fp16_in_fp16_or_says_it_cannot(tiny_run):
    runtime = runtimes.get("openvino")(tiny_run / "openvino", "fp16")
    try:
        runtime.load()
    except Unsupported as error:  # where OpenVINO would compute it in another precision
        assert "computes f16 as" in str(error)
    else:
        assert runtime.describe()["providers"] == ["CPU (f16)"]


def test_metadata_is_read_from_every_artifact_kind(tiny_run):
    for name in ("saved_model", "model.onnx", "openvino", "stablehlo"):
        metadata = artifacts.read_metadata(tiny_run / name)
        assert metadata["max_len"] == MAX_LEN and metadata["input_names"] == ["tokens"]
    assert artifacts.read_metadata(tiny_run / "config.yaml") == {}


def test_an_artifact_of_an_earlier_model_keras_is_not_served(tiny_run, tmp_path):
    """The run trained on after its export (another model.keras): the artifact no longer stands
    for the run, and saying so beats timing and scoring the earlier model under its name."""
    import json
    import shutil

    import onnx

    from arena_tf.export.metadata import source_digest

    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(tiny_run / "model.keras", run / "model.keras")
    proto = onnx.load(str(tiny_run / "model.onnx"))
    recorded = {
        **artifacts.read_metadata(tiny_run / "model.onnx"),
        "source_sha256": source_digest(run / "model.keras"),
    }
    onnx.helper.set_model_props(proto, {"arena_tf": json.dumps(recorded)})
    onnx.save(proto, str(run / "model.onnx"))
    assert runtimes.artifact_path(run, "onnxruntime", "fp32") == run / "model.onnx"
    with open(run / "model.keras", "ab") as model:  # trained on: other bytes
        model.write(b"\0")
    with pytest.raises(
        Unsupported,
        match=r"model.onnx was exported from an earlier .*model.keras"
        r".*export it again: python export/to_onnx.py",
    ):
        runtimes.artifact_path(run, "onnxruntime", "fp32")
