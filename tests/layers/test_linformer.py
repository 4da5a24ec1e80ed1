"""`linformer` equals its projection formula in NumPy, and full attention with identity
projections."""

import re

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import output_projection, projections, reference, softmax

HEADS, HEAD_DIM, WIDTH = 2, 8, 16


def inputs(length, padded_from=None, seed=0):
    """x [2, length, WIDTH] and a mask padding the second sequence from `padded_from` on."""
    x = np.random.default_rng(seed).normal(size=(2, length, WIDTH)).astype("float32")
    mask = np.ones((2, length), bool)
    if padded_from is not None:
        mask[1, padded_from:] = False
    return x, mask


def numpy_linformer(layer, x, mask):
    """softmax(q (E^T k)^T / sqrt(d)) (F^T v), padded k and v rows zeroed, the layer's weights."""
    q, k, v = projections(layer, x)
    keep = mask[:, None, :, None]
    k, v = k * keep, v * keep
    length = x.shape[1]
    weights = [np.asarray(w)[:, :, :length] for w in layer.length_projections]
    e, f = weights[0], weights[-1]  # [heads or 1, p, length]
    keys, values = e @ k, f @ v  # [batch, heads, p, head_dim]
    logits = q @ keys.swapaxes(-1, -2) / np.sqrt(layer.head_dim)
    attended = softmax(logits, np.ones(logits.shape, bool)) @ values
    return output_projection(layer, attended)


def test_identity_projections_of_full_length_equal_full_attention():
    length = 10
    x, mask = inputs(length)
    layer = layers.get(
        "linformer", num_heads=HEADS, head_dim=HEAD_DIM, max_len=length, projected_length=length
    )
    layer(x, mask=mask)
    layer.length_projections[0].assign(np.eye(length, dtype="float32")[None])
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got, reference(layer, x, np.ones((length, length), bool)), atol=1e-5)


@pytest.mark.parametrize("share_kv", [True, False])
@pytest.mark.parametrize("share_heads", [True, False])
def test_equals_numpy_projection_formula_with_padding(share_kv, share_heads):
    x, mask = inputs(length=12, padded_from=7)
    layer = layers.get(
        "linformer",
        num_heads=HEADS,
        head_dim=HEAD_DIM,
        max_len=20,
        projected_length=5,
        share_kv=share_kv,
        share_heads=share_heads,
    )
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got, numpy_linformer(layer, x, mask), atol=1e-5)


@pytest.mark.parametrize(
    "share_kv, share_heads, shapes",
    [
        (True, True, [(1, 5, 20)]),
        (False, True, [(1, 5, 20), (1, 5, 20)]),
        (True, False, [(HEADS, 5, 20)]),
        (False, False, [(HEADS, 5, 20), (HEADS, 5, 20)]),
    ],
)
def test_sharing_options_set_the_number_and_shape_of_projections(share_kv, share_heads, shapes):
    layer = layers.get(
        "linformer",
        num_heads=HEADS,
        head_dim=HEAD_DIM,
        max_len=20,
        projected_length=5,
        share_kv=share_kv,
        share_heads=share_heads,
    )
    layer(*inputs(length=8))
    assert [tuple(w.shape) for w in layer.length_projections] == shapes


def test_separate_key_and_value_projections_start_from_different_values():
    layer = layers.get("linformer", num_heads=HEADS, head_dim=HEAD_DIM, max_len=20, share_kv=False)
    layer(*inputs(length=8))
    key_projection, value_projection = (np.asarray(w) for w in layer.length_projections)
    assert not np.allclose(key_projection, value_projection)


@pytest.mark.parametrize(
    "param, value, expected",
    [
        ("projected_length", 0, "a positive integer"),
        ("share_kv", "yes", "True or False"),
        ("share_heads", 1, "True or False"),
    ],
)
def test_bad_parameter_is_one_clear_error(param, value, expected):
    message = re.escape(f"{param}={value!r} is invalid; expected {expected}")
    with pytest.raises(ValueError, match=message):
        layers.get("linformer", num_heads=HEADS, head_dim=HEAD_DIM, **{param: value})
