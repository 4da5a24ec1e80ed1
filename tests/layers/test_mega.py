"""`mega` equals its definition: the damped EMA run step by step, then gated single-head softmax
attention over the whole sequence, when the chunk covers it (values and gradients); chunks cut
the attention at their borders."""

import numpy as np
import pytest
import tensorflow as tf

import arena_tf.layers as layers
from arena_tf.layers import long_conv
from tests.layers.attention_oracles import softmax
from tests.layers.state_space_oracles import assert_same_values_and_gradients, float64_inputs

WIDTH = 6


def ema_step_by_step(layer, x):
    """h_t = alpha beta x_t + (1 - alpha delta) h_{t-1} per (dimension, expansion), y = eta h /
    sqrt(n) summed over the expansion, + omega x; backwards too when bidirectional; then silu."""
    alpha, delta = tf.sigmoid(layer.alpha_logit), tf.sigmoid(layer.delta_logit)
    scale = layer.ema_dim ** -0.5
    y = x * layer.omega
    for direction in range(alpha.shape[0]):
        sequence = x if direction == 0 else x[:, ::-1]
        h, outputs = 0.0, []
        for t in range(sequence.shape[1]):
            h = (alpha[direction] * layer.beta[direction] * sequence[:, t, :, None]
                 + (1 - alpha[direction] * delta[direction]) * h)
            outputs.append(scale * tf.reduce_sum(layer.eta[direction] * h, axis=-1))
        out = tf.stack(outputs, axis=1)
        y = y + (out if direction == 0 else out[:, ::-1])
    return tf.nn.silu(y)


def mega_by_definition(layer, x, mask):
    """Mega's output minus X (the block's residual adds X), with dense attention."""
    x = tf.constant(x)
    shared = ema_step_by_step(layer, x * tf.cast(mask[..., None], tf.float64))
    width, z_dim, inner = WIDTH, layer.head_dim, layer.num_heads * layer.head_dim
    update, z, reset, candidate = tf.split(layer.gates(shared), [width, z_dim, inner, width], -1)
    update, z, reset = tf.sigmoid(update), tf.nn.silu(z), tf.nn.silu(reset)
    q = z * layer.qk_scale[0] + layer.qk_shift[0]
    k = z * layer.qk_scale[1] + layer.qk_shift[1]
    v = tf.nn.silu(layer.value_dense(x))
    length = x.shape[1]
    offsets = np.arange(length)[:, None] - np.arange(length)[None, :] + layer.chunk - 1
    logits = q @ tf.transpose(k, (0, 2, 1)) * z_dim**-0.5 + tf.gather(layer.position_bias, offsets)
    earlier = np.tril(np.ones((length, length), bool)) if layer.causal else True
    allowed = mask[:, None, :] & earlier
    logits = tf.where(allowed, logits, -1e9)
    attended = tf.nn.softmax(logits, axis=-1) @ v
    h = tf.nn.silu(candidate + layer.output_dense(attended * reset))
    return update * (h - x)


@pytest.mark.parametrize("causal", [False, True])
def test_mega_equals_its_definition_when_the_chunk_covers_the_sequence(causal):
    layer = layers.get("mega", num_heads=2, head_dim=3, ema_dim=4, chunk_size=12, max_len=12,
                       causal=causal, dtype="float64")
    x, mask = float64_inputs(length=12, width=WIDTH)
    # the attention's softmax is float32 inside the layer, as in every mechanism
    assert_same_values_and_gradients(layer, mega_by_definition, x, mask, atol=1e-6)


def test_ema_equals_its_loop():
    layer = layers.get("mega", num_heads=2, head_dim=3, ema_dim=4, dtype="float64")
    x, _ = float64_inputs(width=WIDTH)
    layer(x)
    with tf.GradientTape(persistent=True) as tape:
        got, want = layer.ema(tf.constant(x)), ema_step_by_step(layer, tf.constant(x))
    np.testing.assert_allclose(got, want, atol=1e-12)
    weights = [layer.alpha_logit, layer.delta_logit, layer.beta, layer.eta, layer.omega]
    for a, b in zip(tape.gradient(got, weights), tape.gradient(want, weights)):
        np.testing.assert_allclose(a, b, atol=1e-10)


def test_chunks_attend_within_their_chunk_only():
    layer = layers.get("mega", num_heads=1, head_dim=4, chunk_size=4, max_len=12)
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 1, 10, 4)).astype("float32") for _ in range(3))
    layer.build((1, 10, 4))
    got = np.asarray(layer.attend(q, k, v, np.ones((1, 10), bool)))
    bias = np.asarray(layer.position_bias)
    for start in range(0, 10, 4):
        part = slice(start, min(start + 4, 10))
        n = part.stop - part.start
        offsets = np.arange(n)[:, None] - np.arange(n)[None, :] + 3
        logits = q[0, 0, part] @ k[0, 0, part].T / 2 + bias[offsets]
        want = softmax(logits, np.ones((n, n), bool)) @ v[0, 0, part]
        np.testing.assert_allclose(got[0, 0, part], want, atol=1e-5)


def test_export_form_equals_the_fft_form():
    layer = layers.get("mega", num_heads=2, head_dim=3, ema_dim=4, chunk_size=8, max_len=30,
                       dtype="float64")
    x, mask = float64_inputs(length=30, width=WIDTH)
    fft = layer(x, mask=mask)
    with long_conv.export_form():
        direct = layer(x, mask=mask)
    np.testing.assert_allclose(direct, fft, atol=1e-6)  # float32 softmax inside
