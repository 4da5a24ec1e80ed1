"""Implied attention weights: exact for every mechanism, equal to the softmax for `full`."""

import numpy as np
import pytest

import arena_tf.layers as layers
from arena_tf.analysis import walk
from arena_tf.analysis.weights import (
    MAX_POSITIONS,
    as_distribution,
    check_length,
    implied_weights,
)
from arena_tf.cli import UsageError
from arena_tf.config import ModelConfig
from arena_tf.encoder import Encoder
from tests.layers.attention_oracles import projections
from tests.layers.test_mechanism_contract import HEAD_DIM, HEADS, LENGTH, inputs, make

# Attention mechanisms (the state-space mixers have no attention weights: the analysis refuses
# them).
ATTENTION = sorted(n for n in layers.available() if layers.lookup(n).has_attention_weights)
# Mechanisms whose implied rows are probability distributions over the real keys.
DISTRIBUTIONS = sorted(set(ATTENTION) - {"linformer"})


def built(name, **overrides):
    """A mechanism at the contract tests' small sizes, built on their inputs."""
    x, mask = inputs()
    layer = make(name, **overrides)
    layer(x, mask=mask)
    return layer, x, mask


def numpy_softmax_weights(layer, x, mask):
    q, k, _ = projections(layer, np.asarray(x))  # from the weights, not the layer's own code
    logits = q @ np.swapaxes(k, -1, -2) / np.sqrt(HEAD_DIM)
    logits = np.where(mask[:, None, None, :], logits, -np.inf)
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


@pytest.mark.parametrize("direct", [True, False], ids=["explicit", "identity-probe"])
def test_full_weights_equal_the_softmax_computed_in_numpy(direct):
    layer, x, mask = built("full")
    weights = implied_weights(layer, x, mask, direct=direct)
    assert weights.shape == (2, HEADS, LENGTH, LENGTH)
    np.testing.assert_allclose(weights, numpy_softmax_weights(layer, x, mask), atol=1e-6)


@pytest.mark.parametrize("name", ATTENTION)
def test_implied_weights_reproduce_the_mechanism_output_for_any_values(name):
    layer, x, mask = built(name)
    q, k, _ = layer.project(x)
    values = np.random.default_rng(1).normal(size=(2, HEADS, LENGTH, HEAD_DIM)).astype("float32")
    expected = np.asarray(layer.attend(q, k, values, mask, training=False))
    weights = implied_weights(layer, x, mask)
    np.testing.assert_allclose(weights @ values, expected, atol=2e-4, rtol=1e-3)
    real_queries = weights[1][:, mask[1]]
    assert np.abs(real_queries[..., ~mask[1]]).max() == 0  # real queries ignore padded keys


@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_rows_of_softmax_and_kernel_mechanisms_sum_to_one(name):
    layer, x, mask = built(name)
    rows = implied_weights(layer, x, mask)[0]
    np.testing.assert_allclose(rows.sum(-1), 1.0, atol=1e-4)
    assert rows.min() >= -1e-6


def test_linformer_weights_can_be_negative_and_their_distribution_is_one():
    layer, x, mask = built("linformer")
    weights = implied_weights(layer, x, mask)
    assert weights.min() < 0
    distribution = as_distribution(weights)
    assert distribution.min() >= 0
    np.testing.assert_allclose(distribution.sum(-1), 1.0, atol=1e-5)


def test_lengths_above_the_limit_are_refused_with_the_limit_named():
    assert check_length(MAX_POSITIONS) == MAX_POSITIONS
    with pytest.raises(UsageError, match=f"the limit is {MAX_POSITIONS} positions"):
        check_length(16385)


@pytest.mark.parametrize("pooling, padding_id", [("cls", 0), ("mean", None)])
def test_walking_the_encoder_reproduces_its_output(pooling, padding_id):
    config = ModelConfig(
        num_layers=2,
        num_heads=2,
        emb_dim=16,
        qkv_dim=16,
        mlp_dim=16,
        max_len=12,
        vocab_size=20,
        pooling=pooling,
        padding_id=padding_id,
        dropout=0.0,
        attention_dropout=0.0,
    )
    encoder = Encoder(config)
    tokens = np.random.default_rng(0).integers(1, 20, size=(2, 12))
    tokens[1, 8:] = 0
    expected = np.asarray(encoder(tokens))
    *_, (block, x, mask) = walk.block_inputs(encoder, tokens)
    x = np.asarray(encoder.final_norm(block(x, mask=mask)))
    weights = np.asarray(mask, "float32")[:, :, None]
    pooled = x[:, 0] if pooling == "cls" else (x * weights).sum(1) / weights.sum(1)
    np.testing.assert_allclose(pooled, expected, atol=1e-5)
