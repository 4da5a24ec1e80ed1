"""Step-by-step references for the state-space mixers, written with TensorFlow's complex numbers
(an independent formulation of the recurrence: a Python loop over time), so that values and
gradients can both be compared with the layers' convolutions and scans."""

import numpy as np
import tensorflow as tf


def as_complex(real, imag):
    return tf.complex(tf.cast(real, tf.float64), tf.cast(imag, tf.float64))


def diagonal_recurrence(u, decay, gain):
    """x_t = decay x_{t-1} + gain u_t over time for complex u [batch, L, ...]; the states."""
    state, states = tf.zeros_like(gain * u[:, 0]), []
    for t in range(u.shape[1]):
        state = decay * state + gain * u[:, t]
        states.append(state)
    return tf.stack(states, axis=1)


def mixer_input(layer, x, mask):
    """The value projection of x with the padding zeroed, float64 [batch, L, channels]."""
    return layer.value_dense(x) * tf.cast(mask[..., None], tf.float64)


def mixer_output(layer, y):
    return layer.output_dense(0.5 * y * (1 + tf.math.erf(y / np.sqrt(2))))


def float64_inputs(length=12, width=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, length, width))
    mask = np.ones((2, length), bool)
    mask[1, length - 4:] = False
    return x, mask


def assert_same_values_and_gradients(layer, reference, x, mask, atol=1e-10):
    """layer(x) equals reference(x) and so do the gradients of a loss to every weight."""
    results = []
    for function in (lambda: layer(x, mask=mask), lambda: reference(layer, x, mask)):
        with tf.GradientTape() as tape:
            y = function()
            loss = tf.reduce_sum(tf.sin(3 * y))
        results.append((np.asarray(y), tape.gradient(loss, layer.trainable_weights)))
    (got, got_grads), (want, want_grads) = results
    np.testing.assert_allclose(got, want, atol=atol)
    for weight, a, b in zip(layer.trainable_weights, got_grads, want_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(a), tf.convert_to_tensor(b), atol=10 * atol,
                                   err_msg=weight.path)
