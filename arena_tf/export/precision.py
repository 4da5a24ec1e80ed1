"""A Keras classifier computing in float32, bfloat16 or float16, with the trained weights.

The model is rebuilt from its ModelConfig under the Keras dtype policy of the precision and the
weights (float32 variables under every policy) are copied over; inputs stay int32 and logits
float32 (the classifier's last layer is float32 under mixed precision).

    bf16_model = model_in_precision(source.model, source.config, "bf16")
"""

import contextlib

import keras

from arena_tf.export.errors import ExportUsageError
from arena_tf.models import build_classifier
from arena_tf.precision import POLICIES


@contextlib.contextmanager
def global_policy(name):
    """Set Keras's global dtype policy inside the block; restore the previous one after."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def check_precision(precision):
    """`precision` if known; a one-line ExportError naming the choices otherwise."""
    if precision not in POLICIES:
        raise ExportUsageError(
            f"unknown precision {precision!r}", f"one of {', '.join(POLICIES)}", "pick one of those"
        )
    return precision


def model_in_precision(model, config, precision):
    """A classifier built anew from `config` under `precision`'s policy, with `model`'s weights."""
    with global_policy(POLICIES[check_precision(precision)]):
        rebuilt = build_classifier(config)
    try:
        rebuilt.set_weights(model.get_weights())
    except ValueError as error:
        raise ExportUsageError(
            f"the saved weights do not fit a model built from its own config ({error})",
            "a .keras file saved by arena_tf's training for this version of its classifier",
            "re-run training",
        ) from None
    return rebuilt


def model_for(context, precision):
    """The Keras model an export writes at `precision` (an ExportContext's FP32 reference model
    for fp32)."""
    if precision == "fp32":
        return context.reference.model
    return model_in_precision(context.source.model, context.source.config, precision)
