"""Rematerialization (arena_tf/remat.py) changes memory, never results: an encoder block recomputed
in the backward pass gives the same outputs, weight gradients and dropout random state as the block
that stores its activations, with dropout and attention dropout on (the recomputation must draw the
masks the forward pass drew), for mechanisms with their own random draws too (sinkhorn's noise,
performer's redrawn features)."""

import numpy as np
import pytest
from keras import ops

from arena_tf.blocks import TransformerBlock
from arena_tf.remat import SEED_STATE
from tests.layers.gradients import gradients

BATCH, LENGTH, HEADS, HEAD_DIM = 2, 16, 2, 8
MECHANISMS = {  # name: parameters that give it a random draw of its own where it has one
    "full": {},
    "sinkhorn": {"block_size": 4},
    "performer": {"redraw": True},
    "mega": {},
}


def block(name, remat):
    layer = TransformerBlock(
        name,
        MECHANISMS[name],
        HEADS,
        HEAD_DIM,
        mlp_dim=32,
        dropout=0.3,
        attention_dropout=0.3,
        max_len=LENGTH,
        seed=3,
        remat=remat,
    )
    layer.build((BATCH, LENGTH, HEADS * HEAD_DIM))
    return layer


def seed_variables(layer):
    return [v for v in layer.variables if v.path.endswith(SEED_STATE)]


def train_pass(layer, x, mask):
    """(output, weight gradients, seed states after the pass) of a training pass from the
    layer's current seed states; the gradients are those of a second pass from the same states."""
    variables = seed_variables(layer)
    start = [ops.copy(v.value) for v in variables]
    out = ops.convert_to_numpy(layer(x, mask=mask, training=True))
    after = [ops.convert_to_numpy(v.value) for v in variables]
    for variable, value in zip(variables, start):
        variable.assign(value)

    def loss():
        y = layer(x, mask=mask, training=True)
        return ops.sum(y * ops.cos(y))

    return out, gradients(loss, layer.trainable_weights), after


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_a_rematerialized_block_trains_like_the_stored_one(name):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, LENGTH, HEADS * HEAD_DIM)).astype("float32")
    mask = np.ones((BATCH, LENGTH), bool)
    mask[1, 11:] = False
    stored, recomputed = block(name, remat=False), block(name, remat=True)
    recomputed.set_weights(stored.get_weights())
    assert len(seed_variables(stored)) >= 2  # the dropout layers' at least: masks to match
    out, grads, seeds = train_pass(stored, x, mask)
    out_r, grads_r, seeds_r = train_pass(recomputed, x, mask)
    np.testing.assert_allclose(out_r, out, rtol=1e-6, atol=1e-6)
    for weight, got, want in zip(stored.trainable_weights, grads_r, grads):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=weight.path)
    for got, want in zip(seeds_r, seeds):
        np.testing.assert_array_equal(got, want)


def test_a_remat_block_infers_like_the_stored_one():
    """Outside training a block built with remat gives the stored block's output exactly."""
    x = np.ones((BATCH, LENGTH, HEADS * HEAD_DIM), "float32")
    mask = np.ones((BATCH, LENGTH), bool)
    stored, recomputed = block("full", remat=False), block("full", remat=True)
    recomputed.set_weights(stored.get_weights())
    np.testing.assert_array_equal(
        ops.convert_to_numpy(recomputed(x, mask=mask)), ops.convert_to_numpy(stored(x, mask=mask))
    )
