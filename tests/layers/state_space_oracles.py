"""Step-by-step references for the state-space mixers, written with complex numbers in keras.ops
(an independent formulation of the recurrence: a Python loop over time, where the layers use real
pairs, convolutions and scans), so that values and gradients can both be compared with the layers'
on either backend. Tests using them are marked float64 (x64 under JAX)."""

import numpy as np
from keras import ops

from tests.layers.gradients import gradients


def as_complex(real, imag):
    return ops.cast(real, "complex128") + ops.cast(imag, "complex128") * 1j


def apply(matrix, x):
    """matrix [m, n] applied to x [..., n] -> [..., m] in complex128 (Keras' einsum and matmul
    of complex128 give complex64 under TensorFlow)."""
    return ops.sum(matrix * x[..., None, :], axis=-1)


def diagonal_recurrence(u, decay, gain):
    """x_t = decay x_{t-1} + gain u_t over time for complex u [batch, L, ...] (x_0 = gain u_0);
    the states."""
    states = [gain * u[:, 0]]
    for t in range(1, u.shape[1]):
        states.append(decay * states[-1] + gain * u[:, t])
    return ops.stack(states, axis=1)


def mixer_input(layer, x, mask):
    """The value projection of x with the padding zeroed, float64 [batch, L, channels]."""
    return layer.value_dense(x) * ops.cast(mask[..., None], "float64")


def mixer_output(layer, y):
    return layer.output_dense(0.5 * y * (1 + ops.erf(y / np.sqrt(2))))


def float64_inputs(length=12, width=6, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, length, width))
    mask = np.ones((2, length), bool)
    mask[1, length - 4 :] = False
    return x, mask


def assert_same_values_and_gradients(layer, reference, x, mask, atol=1e-10):
    """layer(x) equals reference(x) and so do the gradients of a loss to every weight."""
    functions = (lambda: layer(x, mask=mask), lambda: reference(layer, x, mask))
    got, want = (np.asarray(function()) for function in functions)
    np.testing.assert_allclose(got, want, atol=atol)
    weights = layer.trainable_weights
    got_grads, want_grads = (gradients(sin_loss(function), weights) for function in functions)
    for weight, a, b in zip(weights, got_grads, want_grads):
        np.testing.assert_allclose(a, b, atol=10 * atol, err_msg=weight.path)


def sin_loss(function):
    """sum(sin(3 y)) for y = function(), the sine as Im exp(3iy): that stays float64 (Keras' JAX
    backend computes ops.sin of float64 in float32)."""
    return lambda: ops.sum(ops.imag(ops.exp(as_complex(0.0, 3 * function()))))
