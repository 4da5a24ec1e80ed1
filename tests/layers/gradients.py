"""Gradients to Keras variables under the test's backend (Keras has no backend-neutral API).

    grads = gradients(lambda: ops.sum(layer(x) ** 2), layer.trainable_weights)

TensorFlow records `loss()` on a tape; JAX differentiates it as a function of the variables'
values, which a `keras.StatelessScope` hands to every read of the variables inside `loss`, and
compiles the gradient once with jax.jit (eager JAX would compile each op of the backward pass
anew at each new shape).
"""

import keras


def gradients(loss, variables):
    """d loss() / d variable for each of `variables`, as NumPy arrays (the variables built)."""
    backend = keras.backend.backend()
    if backend not in BY_BACKEND:
        raise NotImplementedError(f"gradients under the {backend} backend")
    grads = BY_BACKEND[backend](loss, variables)
    return [None if g is None else keras.ops.convert_to_numpy(g) for g in grads]


def _tensorflow_gradients(loss, variables):
    import tensorflow as tf

    with tf.GradientTape() as tape:
        value = loss()
    # a gathered weight's gradient is IndexedSlices: made dense
    return [None if g is None else tf.convert_to_tensor(g) for g in tape.gradient(value, variables)]


def _jax_gradients(loss, variables):
    import jax

    def loss_of(values):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))):
            return loss()

    return jax.jit(jax.grad(loss_of))([v.value for v in variables])


BY_BACKEND = {"tensorflow": _tensorflow_gradients, "jax": _jax_gradients}
