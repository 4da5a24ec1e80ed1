"""`s5`'s parallel scan equals a Python loop over time (float64, gradients too); its two scans
(associative, doubling) and the exports' convolution form give the same states."""

import numpy as np
import pytest
from keras import ops

import arena_tf.layers as layers
from arena_tf.layers import long_conv, s5
from arena_tf.layers import ops as aops
from tests.layers.state_space_oracles import (
    apply,
    as_complex,
    assert_same_values_and_gradients,
    diagonal_recurrence,
    float64_inputs,
    mixer_input,
    mixer_output,
)

pytestmark = pytest.mark.float64


def s5_step_by_step(layer, x, mask):
    return mixer_output(layer, s5_recurrence(layer, mixer_input(layer, x, mask)))


def s5_recurrence(layer, u):
    """x_t = Lambda_bar x_{t-1} + B_bar u_t, y_t = 2 Re(C x_t) + D u_t over one shared state, for
    u [batch, L, channels]."""
    u = ops.cast(u, "complex128")
    lam = as_complex(-ops.exp(layer.log_lambda_real), layer.lambda_imag)  # [modes]
    dt = ops.cast(ops.exp(layer.log_dt), "complex128")
    decay = ops.exp(dt * lam)
    b_bar = ((decay - 1) / lam)[:, None] * as_complex(layer.b_real, layer.b_imag)
    inputs = apply(b_bar, u)
    y = ops.real(u) * layer.skip
    for direction in range(layer.directions):
        c = as_complex(layer.c_real[direction], layer.c_imag[direction])
        sequence = inputs if direction == 0 else ops.flip(inputs, axis=1)
        states = diagonal_recurrence(sequence, decay, 1.0)
        out = 2 * ops.real(apply(c, states))
        y = y + (out if direction == 0 else ops.flip(out, axis=1))
    return y


@pytest.mark.parametrize("causal", [False, True])
def test_s5_equals_its_recurrence(causal):
    layer = layers.get(
        "s5",
        num_heads=2,
        head_dim=3,
        state_size=8,
        causal=causal,
        dt_min=0.01,
        dt_max=0.5,
        dtype="float64",
    )
    x, mask = float64_inputs()
    assert_same_values_and_gradients(layer, s5_step_by_step, x, mask)


def random_recurrence(length, seed=0):
    rng = np.random.default_rng(seed)
    rate = (-rng.uniform(0.01, 0.5, size=4), rng.normal(size=4))
    inputs = (rng.normal(size=(2, length, 4)), rng.normal(size=(2, length, 4)))
    return rate, inputs


@pytest.mark.tensorflow_only("a length unknown until run time exists only in a tf.function graph")
@pytest.mark.parametrize("length", [1, 2, 7, 16, 21])
def test_doubling_scan_equals_the_associative_scan_at_known_and_unknown_lengths(length):
    """TensorFlow runs the doubling scan, JAX the associative one (each checked against the loop
    above in its job); here the two agree, also in a graph that learns the length only when run."""
    import tensorflow as tf

    rate, inputs = random_recurrence(length)
    factor = aops.complex_exp(*rate)
    want = s5.associative_scan(factor, inputs)
    spec = tf.TensorSpec([None, None, 4], tf.float64)
    graph = tf.function(lambda a, b: s5.doubling_scan(factor, (a, b)), input_signature=[spec, spec])
    for got in (s5.doubling_scan(factor, inputs), graph(*inputs)):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=1e-12)


@pytest.mark.parametrize("reverse", [False, True])
def test_convolution_form_equals_the_scan(reverse):
    rate, inputs = random_recurrence(13)
    with long_conv.export_form():
        got = s5.linear_recurrence_conv(rate, inputs, reverse=reverse)
    for g, w in zip(got, s5.linear_recurrence_scan(rate, inputs, reverse=reverse)):
        np.testing.assert_allclose(g, w, atol=1e-12)


def test_initial_eigenvalues_are_hippo_normal():
    values, vectors = s5.hippo_normal_eigen(8)
    n = np.arange(8)
    roots = np.sqrt(np.outer(2 * n + 1, 2 * n + 1))
    legs = -np.where(n[:, None] > n[None, :], roots, 0) - np.diag(n + 1)
    normal = legs + 0.5 * roots
    np.testing.assert_allclose(values.real, -0.5)
    assert (values.imag > 0).all()
    np.testing.assert_allclose(normal @ vectors, vectors * values, atol=1e-10)


def test_blocks_tile_hippo_normal_with_block_diagonal_eigenvectors():
    """S5's ListOps state (P = 16 in J = 8 blocks): HiPPO-N of size 2, so every mode starts at
    -1/2 + i sqrt(3)/2, each block's eigenvectors on the diagonal of V."""
    values, vectors = s5.blocked_hippo_eigen(16, 8)
    np.testing.assert_allclose(values, -0.5 + 0.5j * np.sqrt(3), atol=1e-12)
    block_values, block_vectors = s5.hippo_normal_eigen(2)
    for block in range(8):
        rows, column = slice(2 * block, 2 * block + 2), vectors[:, block]
        np.testing.assert_allclose(column[rows], block_vectors[:, 0])
        assert not np.delete(column, np.arange(2 * block, 2 * block + 2)).any()
    np.testing.assert_allclose(vectors.conj().T @ vectors, np.eye(8), atol=1e-12)


def test_b_and_c_take_s5s_lecun_scales():
    """B_tilde = V^-1 B with B Lecun-normal over (P, H): variance 1/P per entry (V unitary);
    C_tilde = C V with C complex Lecun-normal over (H, P, 2): variance 1/(P H) per part."""
    size, channels = 16, 256
    layer = layers.get("s5", num_heads=1, head_dim=channels, state_size=size, blocks=8)
    layer.build((1, 4, channels))
    b = np.asarray(layer.b_real) + 1j * np.asarray(layer.b_imag)
    c = np.asarray(layer.c_real) + 1j * np.asarray(layer.c_imag)
    np.testing.assert_allclose(np.mean(np.abs(b) ** 2), 1 / size, rtol=0.1)
    np.testing.assert_allclose(np.mean(c.real**2), 1 / (size * channels), rtol=0.1)
    np.testing.assert_allclose(np.mean(c.imag**2), 1 / (size * channels), rtol=0.1)


def test_blocks_must_split_the_modes_in_conjugate_pairs():
    with pytest.raises(ValueError, match="blocks=3 is invalid; expected a divisor of"):
        layers.get("s5", num_heads=1, head_dim=2, state_size=16, blocks=3)
