"""Logits from each kind of model on the same examples: Keras, a SavedModel, ONNX Runtime.

    logits = run_batched(keras_predictor(model), examples.arrays)        # float32 [count, classes]
    session = onnx_session("runs/x/model.onnx"); session.get_providers()  # what really runs
    logits = run_batched(onnx_predictor(session, config), examples.arrays)
"""

import numpy as np
import onnxruntime
import tensorflow as tf

from export.errors import ExportError, one_line
from export.signature import OUTPUT_NAME, SIGNATURE_NAME, feeds, model_inputs

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
    parts = [predict([a[start:start + batch_size] for a in arrays]) for start in starts]
    return np.concatenate(parts).astype("float32")


def keras_predictor(model):
    """Batch of input arrays -> logits, for a Keras classifier in inference mode."""
    return lambda arrays: np.asarray(model(model_inputs(arrays), training=False))


def saved_model_predictor(path, config):
    """Batch of input arrays -> logits, through the SavedModel's serving signature."""
    signature = tf.saved_model.load(str(path)).signatures[SIGNATURE_NAME]

    def predict(arrays):
        tensors = {name: tf.constant(array) for name, array in feeds(config, arrays).items()}
        return signature(**tensors)[OUTPUT_NAME].numpy()

    return predict


def onnx_session(model):
    """An ONNX Runtime session (model: path or serialized bytes) on the preferred providers."""
    available = onnxruntime.get_available_providers()
    providers = [p for p in PREFERRED_PROVIDERS if p in available]
    try:
        return onnxruntime.InferenceSession(model, providers=providers)
    except Exception as error:  # ORT raises its own Fail / InvalidGraph / NoSuchFile types
        raise ExportError(f"ONNX Runtime cannot load the model ({one_line(error)})") from None


def onnx_predictor(session, config):
    """Batch of input arrays -> logits, through an ONNX Runtime session."""
    return lambda arrays: session.run([OUTPUT_NAME], feeds(config, arrays))[0]
