"""The serving signatures every SavedModel has (the contract is in arena_tf/export/contract.py).

`serving_default`: int32 `tokens` [batch, length] (`tokens_1`, `tokens_2` for two towers) ->
float32 `logits` [batch, num_classes]; `serving_int64`: the same with int64 ids. Both cast the ids
to int32 inside and, where the model has a padding id, take any length up to max_len and pad
inside (`to_model_length`); batch is dynamic. tf2onnx converts `serving_default`.
"""

import tensorflow as tf

from arena_tf.export.contract import (  # noqa: F401 (re-exported: the names every exporter uses)
    BATCH_AXIS_NAME,
    INT64_SIGNATURE_NAME,
    LENGTH_AXIS_NAME,
    OUTPUT_NAME,
    SIGNATURE_NAME,
    input_names,
    model_inputs,
    sequence_length,
)


def input_specs(config, dtype=tf.int32):
    """One TensorSpec [None, length] per input, named as in `input_names`; length None (dynamic)
    where the model has a padding id, max_len otherwise."""
    length = None if sequence_length(config)["dynamic"] else config.max_len
    return [tf.TensorSpec([None, length], dtype, name=name) for name in input_names(config)]


def to_model_length(tokens, config):
    """int32 ids [batch, max_len]: cast, and padded at the end with the padding id where shorter.
    A longer input fails in TensorFlow (ensure_shape); the runners refuse it before."""
    tokens = tf.cast(tokens, tf.int32)
    if not sequence_length(config)["dynamic"]:
        return tokens
    missing = tf.maximum(config.max_len - tf.shape(tokens)[1], 0)
    tokens = tf.pad(tokens, [[0, 0], [0, missing]], constant_values=config.padding_id)
    return tf.ensure_shape(tokens, [None, config.max_len])


def feeds(config, arrays):
    """{input name: array} for a SavedModel signature or an ONNX Runtime session."""
    return dict(zip(input_names(config), arrays))
