"""Dense NumPy references for the attention mechanisms, shared by the oracle tests.

A mechanism's test builds the boolean [length, length] (or [batch, length, length]) pattern from
the mechanism's definition and checks the layer against `dense_attention` with that pattern and the
layer's own projection weights.
"""

import numpy as np

import arena_tf.layers as layers


def projections(layer, x):
    """q, k, v as [batch, heads, length, head_dim] NumPy arrays from a built layer's weights."""

    def project(name):
        dense = getattr(layer, f"{name}_dense", None)
        if dense is None:
            return None
        kernel, *bias = [np.asarray(w) for w in dense.weights]
        y = x @ kernel + (bias[0] if bias else 0.0)
        b, length, _ = y.shape
        return y.reshape(b, length, layer.num_heads, layer.head_dim).transpose(0, 2, 1, 3)

    return project("query"), project("key"), project("value")


def output_projection(layer, attended):
    """Merge heads of [batch, heads, length, head_dim] and apply the layer's output Dense."""
    b, h, length, d = attended.shape
    merged = attended.transpose(0, 2, 1, 3).reshape(b, length, h * d)
    kernel, *bias = [np.asarray(w) for w in layer.output_dense.weights]
    return merged @ kernel + (bias[0] if bias else 0.0)


def softmax(logits, allowed):
    logits = np.where(allowed, logits, -1e9)
    logits = logits - logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def dense_attention(q, k, v, allowed, scale=None):
    """softmax(q k^T * scale) v with `allowed` (broadcastable bool [.., Lq, Lk]) as the pattern."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    logits = np.einsum("bhqd,bhkd->bhqk", q, k) * scale
    return np.einsum("bhqk,bhkd->bhqd", softmax(logits, allowed), v)


def reference(layer, x, allowed, mask=None, scale=None):
    """The layer's output if it were dense softmax attention over `allowed` (and the padding
    mask)."""
    q, k, v = projections(layer, x)
    if mask is not None:
        allowed = np.logical_and(allowed, mask[:, None, None, :])
    return output_projection(layer, dense_attention(q, k, v, allowed, scale))


def padded_inputs(length, padding, seed=0):
    """x [2, length, 16]; the second row's last `padding` positions are padding."""
    x = np.random.default_rng(seed).normal(size=(2, length, 16)).astype("float32")
    mask = np.ones((2, length), bool)
    mask[1, length - padding :] = False
    return x, mask


def assert_equals_full(layer, x, mask):
    """`layer` gives what `full` attention with the same weights gives, at every position."""
    full = layers.get("full", num_heads=layer.num_heads, head_dim=layer.head_dim)
    got = layer(x, mask=mask)
    full(x, mask=mask)
    full.set_weights(layer.get_weights())
    np.testing.assert_allclose(got, full(x, mask=mask), atol=1e-5)
