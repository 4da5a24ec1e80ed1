"""Serving fixtures: a tiny exported run directory, made here until export/ writes real ones.

`tiny_run` holds what the export contract promises for FP32: saved_model/ (Keras 3
`model.export`, int32 input `tokens` [None, 32]), model.onnx (tf2onnx), openvino/ (OpenVINO's
conversion of the SavedModel), stablehlo/ (export/to_stablehlo.py in a KERAS_BACKEND=jax process,
from the model.keras saved here), each with its arena_tf metadata, and a config.yaml whose task
(ListOps) reads a 20-instance generated test split.
`listops_300` is a ListOps data directory whose test split has 300 rows (three batches of 128).
"""

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

MAX_LEN = 32
ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = [sys.executable, "-m", "tests.serving.reference_submission"]  # + MODE


def export_tiny_model(run, data_dir):
    """Write saved_model/, model.onnx (with metadata) and config.yaml into `run`."""
    import onnx
    import tensorflow as tf
    import tf2onnx

    from arena_tf.config import ModelConfig
    from arena_tf.models import build_classifier

    config = ModelConfig(
        attention="full",
        num_layers=1,
        num_heads=2,
        emb_dim=16,
        qkv_dim=16,
        mlp_dim=32,
        max_len=MAX_LEN,
        vocab_size=16,
        num_classes=10,
        dropout=0.0,
        attention_dropout=0.0,
    )
    model = build_classifier(config)
    model.save(run / "model.keras")
    spec = tf.TensorSpec([None, MAX_LEN], tf.int32, name="tokens")
    metadata = {
        "task": "listops",
        "mechanism": "full",
        "model_config": config.to_dict(),
        "vocab_size": 16,
        "max_len": MAX_LEN,
        "num_inputs": 1,
        "input_names": ["tokens"],
        "output_name": "logits",
        "num_classes": 10,
        "padding_id": 0,
        "parameters": model.count_params(),
        "precision": "fp32",
        "source": "fixture",
    }
    model.export(
        str(run / "saved_model"), format="tf_saved_model", input_signature=[spec], verbose=False
    )
    (run / "saved_model" / "assets.extra").mkdir()
    (run / "saved_model" / "assets.extra" / "arena_tf.json").write_text(json.dumps(metadata))
    logits = tf.function(lambda tokens: {"logits": model(tokens, training=False)})
    proto, _ = tf2onnx.convert.from_function(logits, input_signature=[spec], opset=17)
    onnx.helper.set_model_props(proto, {"arena_tf": json.dumps(metadata)})
    onnx.save(proto, str(run / "model.onnx"))
    export_openvino_ir(run, metadata)
    task = {"name": "listops", "data_dir": str(data_dir), "max_len": MAX_LEN, "params": {}}
    (run / "config.yaml").write_text(yaml.safe_dump({"task": task, "model": config.to_dict()}))
    export_stablehlo(run)


def export_stablehlo(run):
    """stablehlo/ (FP32) of run/model.keras, by the export script in its own JAX process (where
    JAX is installed; the xla tests are skipped otherwise)."""
    if importlib.util.find_spec("jax") is None:
        return
    done = subprocess.run(
        [
            sys.executable,
            "export/to_stablehlo.py",
            str(run),
            "--precision",
            "fp32",
            "--examples",
            "8",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr


def export_openvino_ir(run, metadata):
    """openvino/ (model.xml, model.bin, arena_tf.json) converted from run/saved_model."""
    import openvino

    from arena_tf.export.metadata import OPENVINO_MODEL, write_openvino_metadata

    (run / "openvino").mkdir()
    openvino.save_model(
        openvino.convert_model(str(run / "saved_model")),
        str(run / "openvino" / OPENVINO_MODEL),
        compress_to_fp16=False,
    )
    write_openvino_metadata(run / "openvino", metadata)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """A run directory with an FP32 SavedModel and ONNX model of a 1-layer ListOps classifier."""
    from arena_tf.generators import listops

    root = tmp_path_factory.mktemp("serving")
    data_dir = root / "listops"
    spec = listops.ListOpsSpec(train=4, validation=4, test=20, min_length=10, max_length=40, seed=3)
    listops.generate(data_dir, spec, processes=1)
    run = root / "tiny"
    run.mkdir()
    export_tiny_model(run, data_dir)
    return run


@pytest.fixture(scope="session")
def listops_300(tmp_path_factory):
    """A generated ListOps data directory with a 300-row test split."""
    from arena_tf.generators import listops

    data_dir = tmp_path_factory.mktemp("listops300") / "listops"
    spec = listops.ListOpsSpec(
        train=4, validation=4, test=300, min_length=10, max_length=40, seed=5
    )
    listops.generate(data_dir, spec, processes=1)
    return data_dir
