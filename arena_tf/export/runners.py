"""Logits from each kind of model on the same examples: Keras, a SavedModel, ONNX Runtime,
OpenVINO, XLA (a StableHLO artifact).

    logits = run_batched(keras_predictor(model), examples.arrays)        # float32 [count, classes]
    session = onnx_session("runs/x/model.onnx"); session.get_providers()  # what really runs
    logits = run_batched(onnx_predictor(session, config), examples.arrays)
    predict = artifact_predictor("runs/x/model.onnx"); predict([tokens])  # from its metadata

The SavedModel and ONNX predictors check the ids first (`export.contract.check_tokens`): an id
outside the vocabulary, a wrong length or a non-integer array is one TokenError line, never
passed to a graph that would gather garbage or fail deep inside. int64 ids are accepted (cast to
int32 after the check).
"""

import pathlib

import numpy as np

from arena_tf.export import openvino_model, stablehlo_model
from arena_tf.export.contract import (
    OUTPUT_NAME,
    SIGNATURE_NAME,
    check_tokens,
    input_names,
    model_inputs,
)
from arena_tf.export.errors import ExportError, one_line
from arena_tf.export.metadata import artifact_kind, read_metadata

# Rows per parity batch: at most 32, fewer for long inputs so quadratic attention stays within
# memory (16K tokens per input per batch: 4 rows at 4000 tokens, 1 at 16K).
MAX_BATCH = 32
TOKENS_PER_BATCH = 16384
# Tried in this order where installed; ONNX Runtime falls back to CPU silently, so reports record
# `session.get_providers()`, not this list.
PREFERRED_PROVIDERS = ("CUDAExecutionProvider", "CPUExecutionProvider")


def run_batched(predict, arrays, batch_size=None):
    """float32 logits of `predict` over aligned input arrays, a batch of rows at a time."""
    count, length = arrays[0].shape
    batch_size = batch_size or max(1, min(MAX_BATCH, TOKENS_PER_BATCH // length))
    starts = range(0, count, batch_size)
    parts = [predict([a[start : start + batch_size] for a in arrays]) for start in starts]
    return np.concatenate(parts).astype("float32")


def keras_predictor(model):
    """Batch of input arrays -> logits, for a Keras classifier in inference mode."""
    return lambda arrays: np.asarray(model(model_inputs(arrays), training=False))


def names(model):
    """Input names from artifact metadata (a dict) or a ModelConfig."""
    return model["input_names"] if isinstance(model, dict) else input_names(model)


def saved_model_predictor(saved_model, model, signature_name=SIGNATURE_NAME):
    """Batch of input arrays -> logits, through a signature of the SavedModel (a path, or what
    tf.saved_model.load returned), the ids checked against `model` (a ModelConfig or the
    artifact's metadata) first."""
    import tensorflow as tf  # here: the other runners work without TensorFlow

    if isinstance(saved_model, (str, pathlib.Path)):
        saved_model = tf.saved_model.load(str(saved_model))
    signature = saved_model.signatures[signature_name]
    dtype = signature.structured_input_signature[1][names(model)[0]].dtype

    def predict(arrays):
        checked = check_tokens(arrays, model)
        return signature(
            **{name: tf.constant(array, dtype) for name, array in zip(names(model), checked)}
        )[OUTPUT_NAME].numpy()

    return predict


def onnx_session(model):
    """An ONNX Runtime session (model: path or serialized bytes) on the preferred providers."""
    import onnxruntime

    available = onnxruntime.get_available_providers()
    providers = [p for p in PREFERRED_PROVIDERS if p in available]
    try:
        return onnxruntime.InferenceSession(model, providers=providers)
    except Exception as error:  # noqa: BLE001 (ORT's errors have no common base class)
        # ORT raises its own Fail / InvalidGraph / NoSuchFile types
        raise ExportError(
            f"ONNX Runtime cannot load the model ({one_line(error)})",
            "an ONNX model this onnxruntime runs",
            "re-export it with export/to_onnx.py",
        ) from None


def onnx_predictor(session, model):
    """Batch of input arrays -> logits, through an ONNX Runtime session, the ids checked
    against `model` (a ModelConfig or the artifact's metadata) first."""

    def predict(arrays):
        checked = check_tokens(arrays, model)
        return session.run([OUTPUT_NAME], dict(zip(names(model), checked)))[0]

    return predict


def openvino_predictor(compiled, model):
    """Batch of input arrays -> logits, through a compiled OpenVINO model
    (arena_tf/export/openvino_model.py), the ids checked against `model` (a ModelConfig or the
    artifact's metadata) first."""
    return lambda arrays: compiled.predict(check_tokens(arrays, model), names(model))


def stablehlo_predictor(compiled, model):
    """Batch of input arrays -> logits, through a loaded StableHLO artifact
    (arena_tf/export/stablehlo_model.py), the ids checked against `model` (a ModelConfig or the
    artifact's metadata) first."""
    return lambda arrays: compiled.predict(check_tokens(arrays, model))


def artifact_predictor(path):
    """Batch of input arrays -> logits for an exported artifact (SavedModel directory, OpenVINO
    or StableHLO directory, or .onnx file) on the CPU, its ids checked against the artifact's own
    metadata."""
    path = pathlib.Path(path)
    metadata = read_metadata(path)
    kind = artifact_kind(path)
    if kind == "saved_model":
        return saved_model_predictor(path, metadata)
    if kind == "openvino":
        return openvino_predictor(openvino_model.compile_ir(path, "fp32"), metadata)
    if kind == "stablehlo":
        compiled = stablehlo_model.load(path, metadata["precision"], "cpu", warm_batch=0)
        return stablehlo_predictor(compiled, metadata)
    return onnx_predictor(onnx_session(str(path)), metadata)
