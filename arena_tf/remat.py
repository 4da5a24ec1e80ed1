"""Rematerialization: a layer's forward pass recomputed in the backward pass instead of stored.

`keras.remat` (tf.recompute_grad / jax.checkpoint) alone would draw new dropout masks when it
recomputes, since Keras' seed generators have moved on by then, and the gradient would belong to
another forward pass. Here the recomputed function is pure: the layer's weights are its arguments
and its seed states are the values they held before the forward pass, so the recomputation draws
the same masks and the gradient equals the stored one's (tests/layers/test_remat.py); the seed
states then advance exactly as without remat.
"""

import keras
from keras import ops

SEED_STATE = "seed_generator_state"


def rematerialized(layer, function):
    """`function(x)`, a computation of `layer`, as a callable whose activations are recomputed in
    the backward pass; everything but `x` that it reads must belong to `layer` or be constant."""
    seeds = [v for v in layer.variables if v.path.endswith(SEED_STATE)]
    weights = [v for v in layer.variables if not v.path.endswith(SEED_STATE)]
    start = []

    def pure(x, *values):
        mapping = list(zip(weights, values)) + list(zip(seeds, start))
        with keras.StatelessScope(mapping) as scope:
            outputs = function(x)
        return outputs, [scope.get_current_value(v) for v in seeds]

    recomputed = keras.remat(pure)

    def call(x):
        start[:] = [ops.copy(v.value) for v in seeds]  # values, not the variables themselves
        outputs, advanced = recomputed(x, *[v.value for v in weights])
        for variable, value in zip(seeds, advanced):
            variable.assign(value)
        return outputs

    return call
