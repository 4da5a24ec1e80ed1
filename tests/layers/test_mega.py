"""`mega` equals its definition: the damped EMA run step by step, then gated single-head softmax
attention over the whole sequence, when the chunk covers it (values and gradients); chunks cut
the attention at their borders."""

import numpy as np
import pytest
from keras import ops

import arena_tf.layers as layers
from arena_tf.layers import long_conv
from tests.layers.attention_oracles import softmax
from tests.layers.gradients import gradients
from tests.layers.state_space_oracles import assert_same_values_and_gradients, float64_inputs

pytestmark = pytest.mark.float64

WIDTH = 6


def ema_step_by_step(layer, x):
    """h_t = alpha beta x_t + (1 - alpha delta) h_{t-1} per (dimension, expansion), y = eta h /
    sqrt(n) summed over the expansion, + omega x; backwards too when bidirectional; then silu."""
    alpha, delta = ops.sigmoid(layer.alpha_logit), ops.sigmoid(layer.delta_logit)
    scale = layer.ema_dim**-0.5
    y = x * layer.omega
    for direction in range(alpha.shape[0]):
        sequence = x if direction == 0 else ops.flip(x, axis=1)
        h, outputs = 0.0, []
        for t in range(sequence.shape[1]):
            h = (
                alpha[direction] * layer.beta[direction] * sequence[:, t, :, None]
                + (1 - alpha[direction] * delta[direction]) * h
            )
            outputs.append(scale * ops.sum(layer.eta[direction] * h, axis=-1))
        out = ops.stack(outputs, axis=1)
        y = y + (out if direction == 0 else ops.flip(out, axis=1))
    return ops.silu(y)


def mega_by_definition(layer, x, mask):
    """Mega's output minus X (the block's residual adds X), with dense attention."""
    x = ops.convert_to_tensor(x)
    shared = ema_step_by_step(layer, x * ops.cast(mask[..., None], "float64"))
    width, z_dim, inner = WIDTH, layer.head_dim, layer.num_heads * layer.head_dim
    splits = [width, width + z_dim, width + z_dim + inner]
    update, z, reset, candidate = ops.split(layer.gates(shared), splits, axis=-1)
    update, z, reset = ops.sigmoid(update), ops.silu(z), ops.silu(reset)
    q = z * layer.qk_scale[0] + layer.qk_shift[0]
    k = z * layer.qk_scale[1] + layer.qk_shift[1]
    v = ops.silu(layer.value_dense(x))
    length = x.shape[1]
    offsets = np.arange(length)[:, None] - np.arange(length)[None, :] + layer.chunk - 1
    logits = ops.einsum("bqd,bkd->bqk", q, k) * z_dim**-0.5 + ops.take(layer.position_bias, offsets)
    earlier = np.tril(np.ones((length, length), bool)) if layer.causal else True
    allowed = mask[:, None, :] & earlier
    logits = ops.where(allowed, logits, -1e9)
    attended = ops.matmul(ops.softmax(logits, axis=-1), v)
    h = ops.silu(candidate + layer.output_dense(attended * reset))
    return update * (h - x)


@pytest.mark.parametrize("causal", [False, True])
def test_mega_equals_its_definition_when_the_chunk_covers_the_sequence(causal):
    layer = layers.get(
        "mega",
        num_heads=2,
        head_dim=3,
        ema_dim=4,
        chunk_size=12,
        max_len=12,
        causal=causal,
        dtype="float64",
    )
    x, mask = float64_inputs(length=12, width=WIDTH)
    # the attention's softmax is float32 inside the layer, as in every mechanism
    assert_same_values_and_gradients(layer, mega_by_definition, x, mask, atol=1e-6)


def test_ema_equals_its_loop():
    layer = layers.get("mega", num_heads=2, head_dim=3, ema_dim=4, dtype="float64")
    x, _ = float64_inputs(width=WIDTH)
    layer(x)
    x = ops.convert_to_tensor(x)
    ema = (lambda: layer.ema(x), lambda: ema_step_by_step(layer, x))
    np.testing.assert_allclose(*(np.asarray(function()) for function in ema), atol=1e-12)
    weights = [layer.alpha_logit, layer.delta_logit, layer.beta, layer.eta, layer.omega]
    grads = [gradients(lambda f=function: ops.sum(f()), weights) for function in ema]
    for a, b in zip(*grads):
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
    layer = layers.get(
        "mega", num_heads=2, head_dim=3, ema_dim=4, chunk_size=8, max_len=30, dtype="float64"
    )
    x, mask = float64_inputs(length=30, width=WIDTH)
    fft = layer(x, mask=mask)
    with long_conv.export_form():
        direct = layer(x, mask=mask)
    np.testing.assert_allclose(direct, fft, atol=1e-6)  # float32 softmax inside
