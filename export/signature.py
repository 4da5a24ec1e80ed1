"""The serving signature every artifact shares (the contract between export/ and serving/).

Inputs int32 `tokens` [batch, max_len] (`tokens_1`, `tokens_2` for the two-tower model), output
float32 `logits` [batch, num_classes]; batch dynamic, length fixed to the model's max_len.
"""

import tensorflow as tf

SIGNATURE_NAME = "serving_default"
OUTPUT_NAME = "logits"
BATCH_AXIS_NAME = "batch"


def input_names(config):
    """['tokens'], or ['tokens_1', 'tokens_2'] for a two-tower ModelConfig."""
    return ["tokens_1", "tokens_2"] if config.two_tower else ["tokens"]


def input_specs(config):
    """One int32 TensorSpec [None, max_len] per input, named as in `input_names`."""
    shape = [None, config.max_len]
    return [tf.TensorSpec(shape, tf.int32, name=name) for name in input_names(config)]


def model_inputs(arrays):
    """What a Keras classifier takes: one array, or a list of two for two towers."""
    arrays = list(arrays)
    return arrays[0] if len(arrays) == 1 else arrays


def feeds(config, arrays):
    """{input name: array} for a SavedModel signature or an ONNX Runtime session."""
    return dict(zip(input_names(config), arrays))
