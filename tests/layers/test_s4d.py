"""`s4d`'s FFT convolution equals the same state space run step by step (float64, gradients too)."""

import numpy as np
import pytest
from keras import ops

import arena_tf.layers as layers
from arena_tf.layers import long_conv
from tests.layers.state_space_oracles import (
    as_complex,
    assert_same_values_and_gradients,
    diagonal_recurrence,
    float64_inputs,
    mixer_input,
    mixer_output,
)

pytestmark = pytest.mark.float64


def s4d_step_by_step(layer, x, mask):
    return mixer_output(layer, s4d_recurrence(layer, mixer_input(layer, x, mask)))


def s4d_recurrence(layer, u):
    """x_t = exp(dt A) x_{t-1} + (exp(dt A) - 1) / A u_t, y_t = 2 Re(C x_t) + D u_t per channel
    of u [batch, L, channels], plus the same over the reversed sequence with the second C when
    bidirectional."""
    a = as_complex(-ops.exp(layer.log_a_real), layer.a_imag)  # [channels, modes]
    dt = ops.cast(ops.exp(layer.log_dt), "complex128")
    decay = ops.exp(dt * a)
    gain = (decay - 1) / a
    y = u * layer.skip
    for direction in range(layer.directions):
        c = as_complex(layer.c_real[direction], layer.c_imag[direction])
        sequence = u if direction == 0 else ops.flip(u, axis=1)
        states = diagonal_recurrence(ops.cast(sequence, "complex128")[..., None], decay, gain)
        out = 2 * ops.real(ops.sum(c * states, axis=-1))
        y = y + (out if direction == 0 else ops.flip(out, axis=1))
    return y


@pytest.mark.parametrize("init", ["lin", "inv"])
@pytest.mark.parametrize("causal", [False, True])
def test_s4d_equals_its_recurrence(init, causal):
    layer = layers.get(
        "s4d",
        num_heads=2,
        head_dim=3,
        state_size=8,
        init=init,
        causal=causal,
        dt_min=0.01,
        dt_max=0.5,
        dtype="float64",
    )
    x, mask = float64_inputs()
    assert_same_values_and_gradients(layer, s4d_step_by_step, x, mask)


def test_export_form_equals_the_fft_form():
    layer = layers.get("s4d", num_heads=2, head_dim=3, state_size=8, dtype="float64")
    x, mask = float64_inputs(length=30)
    fft = layer(x, mask=mask)
    with long_conv.export_form():
        direct = layer(x, mask=mask)
    np.testing.assert_allclose(direct, fft, atol=1e-12)


def test_initial_eigenvalues_are_the_papers():
    lin = layers.get("s4d", num_heads=1, head_dim=2, state_size=8, init="lin")
    inv = layers.get("s4d", num_heads=1, head_dim=2, state_size=8, init="inv")
    for layer in (lin, inv):
        layer.build((1, 4, 2))
        np.testing.assert_allclose(-np.exp(layer.log_a_real), -0.5, rtol=1e-6)
    np.testing.assert_allclose(lin.a_imag[0], np.pi * np.arange(4), rtol=1e-6)
    inverse = 8 / np.pi * (8 / (2 * np.arange(4) + 1) - 1)
    np.testing.assert_allclose(inv.a_imag[0], inverse, rtol=1e-6)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"state_size": 7}, r"state_size=7 is invalid; expected an even positive integer"),
        ({"init": "legs"}, r"init='legs' is invalid; expected one of 'lin', 'inv'"),
        ({"dt_min": 0.2, "dt_max": 0.1}, r"dt_max=0.1 is invalid; expected a number >= dt_min=0.2"),
    ],
)
def test_bad_parameters_are_one_clear_error(params, message):
    with pytest.raises(ValueError, match=message):
        layers.get("s4d", num_heads=1, head_dim=2, **params)
