"""The serving contract every artifact shares, without TensorFlow (serving's processes import it):
input and output names, the lengths and id range the inputs take, and `check_tokens`, the check
every Python runner makes before a graph sees the ids.

    check_tokens([tokens], read_metadata("runs/x/model.onnx"))  # int32 arrays, or TokenError
    sequence_length(config)["dynamic"]                           # shorter inputs allowed?

Inputs: `tokens` (`tokens_1`, `tokens_2` for two towers), ids in [0, vocab_size), shape
[batch, length]. Output: float32 `logits` [batch, num_classes].

Length: a model with a padding id takes any length from 1 to max_len; the graph pads shorter
inputs at the end with the padding id, as the training data is padded, so every mechanism runs on
max_len positions exactly as trained (Linformer's projection and the Synthesizer's weights are
sized by max_len, block mechanisms need whole blocks: padding inside serves them all). A model
without a padding id (pixel tasks: image, pathfinder, pathx) takes exactly max_len ids: every id
there is a pixel value, so a shorter input has no padded form the model was trained on.

The raw graphs do not check ids (docs/guide/export.md): the runners do, through `check_tokens`.
"""

import numpy as np

from arena_tf.export.errors import ExportUsageError

SIGNATURE_NAME = "serving_default"  # int32 ids; the signature serving/ and tf2onnx use
INT64_SIGNATURE_NAME = "serving_int64"  # the same function taking int64 ids (cast inside)
OUTPUT_NAME = "logits"
BATCH_AXIS_NAME = "batch"
LENGTH_AXIS_NAME = "length"
# {precision: name in the run directory} of each exporter's artifacts.
SAVED_MODEL_ARTIFACTS = {
    "fp32": "saved_model",
    "bf16": "saved_model_bf16",
    "fp16": "saved_model_fp16",
}
ONNX_ARTIFACTS = {"fp32": "model.onnx", "fp16": "model.fp16.onnx"}
# OpenVINO IR directories (model.xml, model.bin, arena_tf.json); fp16: weights stored in float16.
OPENVINO_ARTIFACTS = {"fp32": "openvino", "fp16": "openvino_fp16"}
# StableHLO directories (model.stablehlo, weights.npz, arena_tf.json), run by XLA through JAX alone.
STABLEHLO_ARTIFACTS = {"fp32": "stablehlo", "bf16": "stablehlo_bf16", "fp16": "stablehlo_fp16"}
# The artifacts that are single files; every other one is a folder (arena_tf/export/publish.py
# checks the place of each before writing it): a new file artifact joins this list.
FILE_ARTIFACTS = tuple(ONNX_ARTIFACTS.values())
ALL_ARTIFACTS = (
    *SAVED_MODEL_ARTIFACTS.values(),
    *ONNX_ARTIFACTS.values(),
    *OPENVINO_ARTIFACTS.values(),
    *STABLEHLO_ARTIFACTS.values(),
)


def check_artifact_precision(precision, artifacts, kind):
    """`precision` when `artifacts` ({precision: name}, a `kind` exporter's) has it; a one-line
    ExportUsageError naming the choices otherwise."""
    if precision not in artifacts:
        raise ExportUsageError(
            f"unknown {kind} precision {precision!r}",
            f"one of {', '.join(artifacts)}",
            "BF16 is exported as a SavedModel and as StableHLO only "
            "(export/to_savedmodel.py, export/to_stablehlo.py)",
        )
    return precision


class TokenError(ExportUsageError, ValueError):
    """Token ids a model cannot take (out of the vocabulary, wrong shape, length or type)."""


def input_names(config):
    """['tokens'], or ['tokens_1', 'tokens_2'] for a two-tower ModelConfig."""
    return ["tokens_1", "tokens_2"] if config.two_tower else ["tokens"]


def model_inputs(arrays):
    """What a Keras classifier takes: one array, or a list of two for two towers."""
    arrays = list(arrays)
    return arrays[0] if len(arrays) == 1 else arrays


def sequence_length(config):
    """The lengths the artifacts of a ModelConfig take, and why (stored in their metadata)."""
    if config.padding_id is None:
        return {
            "min": config.max_len,
            "max": config.max_len,
            "dynamic": False,
            "padding_id": None,
            "why": "the model has no padding id: every id is a pixel value, so a shorter "
            "input has no padded form it was trained on; send exactly max_len ids",
        }
    return {
        "min": 1,
        "max": config.max_len,
        "dynamic": True,
        "padding_id": config.padding_id,
        "why": f"shorter inputs are padded at the end with padding id {config.padding_id} "
        "to max_len inside the graph, as the training data is, so every mechanism "
        "computes on max_len positions as trained",
    }


def _contract(model):
    """(names, vocab_size, min length, max length) from metadata (a dict) or a ModelConfig."""
    if isinstance(model, dict):
        length = model.get("sequence_length") or {"min": model["max_len"], "max": model["max_len"]}
        names = model.get("input_names") or ["tokens"] * int(model.get("num_inputs") or 1)
        return names, model["vocab_size"], length["min"], length["max"]
    length = sequence_length(model)
    return input_names(model), model.vocab_size, length["min"], length["max"]


def _fail(what, expected, fix="fix the input before calling the model"):
    raise TokenError(what, expected, fix)


def check_tokens(arrays, model):
    """`arrays` (one array-like per model input, or one array for a one-input model) as a tuple
    of int32 arrays, after checking them against `model` (artifact metadata or a ModelConfig):
    integer ids in [0, vocab_size), rank 2, one batch size, a length the model takes. A
    TokenError (one line) otherwise."""
    names, vocab_size, shortest, longest = _contract(model)
    if isinstance(arrays, np.ndarray) or not isinstance(arrays, (list, tuple)):
        arrays = [arrays]
    if len(arrays) != len(names):
        _fail(
            f"{len(arrays)} token array(s) given",
            f"{len(names)} ({', '.join(names)})",
            "pass one array per model input",
        )
    lengths = "max_len" if shortest == longest else f"1 to {longest}"
    checked = []
    for name, array in zip(names, arrays):
        array = np.asarray(array)
        if array.dtype.kind not in "iu":
            _fail(
                f"{name} holds {array.dtype} values",
                "integer token ids (int32 or int64)",
                "convert the ids with .astype('int32')",
            )
        if array.ndim != 2 or not shortest <= array.shape[1] <= longest:
            _fail(
                f"{name} has shape {list(array.shape)}",
                f"[batch, length] with length {lengths} ({longest})",
                "pad or truncate the ids to the model's length",
            )
        bad = (array < 0) | (array >= vocab_size)
        if bad.any():
            row, position = (int(i) for i in np.argwhere(bad)[0])
            _fail(
                f"{name} holds token id {array[row, position]} (row {row}, position "
                f"{position}; {int(bad.sum())} id(s) out of range)",
                f"ids in [0, {vocab_size}), the model's vocabulary",
                "map unknown or out-of-range tokens to a valid id (e.g. the padding or unknown "
                "id) before calling the model",
            )
        checked.append(array.astype(np.int32))
    if len({a.shape[0] for a in checked}) > 1:
        _fail(
            f"the inputs have batch sizes {[a.shape[0] for a in checked]}",
            "one batch size for all inputs",
            "pass the same number of rows to each input",
        )
    return tuple(checked)
