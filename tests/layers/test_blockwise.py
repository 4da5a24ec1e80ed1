"""Memory-efficient exact attention (arena_tf/layers/blockwise.py) equals dense softmax attention:
outputs and the gradients of q, k and v, with padded keys, lengths that are not a multiple of the
block, one block or many, and a sequence without any real key."""

import keras
import numpy as np
import pytest
from keras import ops

from arena_tf.layers.blockwise import blockwise_attention
from tests.layers.gradients import gradients

CASES = [  # (batch, heads, queries, keys, width, block)
    (2, 2, 37, 37, 8, 8),  # keys not a multiple of the block
    (1, 3, 16, 16, 4, 16),  # one block
    (2, 1, 5, 29, 6, 4),  # fewer queries than keys, many blocks
]


def dense(q, k, v, mask):
    """Softmax attention over the real keys in float64 NumPy; zeros where no key is real."""
    scores = np.where(mask[:, None, None, :], q @ np.swapaxes(k, -1, -2), -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    weights = np.exp(scores - np.where(np.isfinite(top), top, 0))
    total = weights.sum(-1, keepdims=True)
    return np.where(total > 0, weights / np.where(total > 0, total, 1), 0) @ v


def inputs(batch, heads, queries, keys, width, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(batch, heads, queries, width))
    k, v = (rng.normal(size=(batch, heads, keys, width)) for _ in range(2))
    mask = np.ones((batch, keys), bool)
    mask[-1, keys * 2 // 3 :] = False  # the last sequence is padded
    return q, k, v, mask


@pytest.mark.parametrize("case", CASES)
def test_output_equals_dense_attention(case):
    *shape, block = case
    q, k, v, mask = inputs(*shape)
    out = blockwise_attention(
        *(ops.convert_to_tensor(x, "float32") for x in (q, k, v)),
        ops.convert_to_tensor(mask),
        block_size=block,
    )
    np.testing.assert_allclose(ops.convert_to_numpy(out), dense(q, k, v, mask), atol=2e-6)


def test_a_sequence_without_real_keys_gets_zeros():
    q, k, v, mask = inputs(2, 1, 6, 10, 4)
    mask[0] = False
    out = ops.convert_to_numpy(
        blockwise_attention(
            *(ops.convert_to_tensor(x, "float32") for x in (q, k, v)),
            ops.convert_to_tensor(mask),
            block_size=4,
        )
    )
    np.testing.assert_array_equal(out[0], 0)
    np.testing.assert_allclose(out[1], dense(q, k, v, mask)[1], atol=2e-6)


def dense_keras(q, k, v, mask):
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
    scores = ops.where(mask[:, None, None, :], scores, -1e30)
    return ops.matmul(ops.softmax(scores, axis=-1), v)


@pytest.mark.parametrize("case", CASES)
def test_gradients_equal_dense_attention(case):
    """d/d(q, k, v) of sum(out * w): the hand-written backward against autodiff through the
    dense formula in float64."""
    *shape, block = case
    q, k, v, mask = inputs(*shape, seed=1)
    w = np.random.default_rng(2).normal(size=q.shape[:3] + (v.shape[-1],))
    mask_tensor = ops.convert_to_tensor(mask)

    def grads(attention, dtype):
        variables = [keras.Variable(x, dtype=dtype) for x in (q, k, v)]

        def loss():  # the variables read first: the layer hands the function tensors
            values = [ops.add(variable, 0) for variable in variables]
            return ops.sum(ops.cast(attention(*values), dtype) * w)

        return gradients(loss, variables)

    ours = grads(lambda q, k, v: blockwise_attention(q, k, v, mask_tensor, block), "float32")
    reference = grads(lambda q, k, v: dense_keras(q, k, v, mask_tensor), "float64")
    for name, a, b in zip("qkv", ours, reference):
        np.testing.assert_allclose(a, b, atol=2e-5, err_msg=f"d/d{name}")


def full_layers(**kwargs):
    """A dense `full` and one taking the memory-efficient form, with the same weights."""
    import arena_tf.layers as layers

    dense_layer = layers.get("full", num_heads=2, head_dim=4, blockwise_from=None, **kwargs)
    blockwise_layer = layers.get(
        "full", num_heads=2, head_dim=4, blockwise_from=0, block_size=4, **kwargs
    )
    x = np.random.default_rng(3).normal(size=(2, 11, 8)).astype("float32")
    dense_layer(x), blockwise_layer(x)
    blockwise_layer.set_weights(dense_layer.get_weights())
    return dense_layer, blockwise_layer, x


def test_the_full_layer_in_blockwise_form_equals_its_dense_form_with_gradients():
    dense_layer, blockwise_layer, x = full_layers()
    mask = np.ones((2, 11), bool)
    mask[1, 7:] = False
    assert blockwise_layer.blockwise(11, training=True) and not dense_layer.blockwise(11, True)
    outputs = [layer(x, mask=mask) for layer in (dense_layer, blockwise_layer)]
    np.testing.assert_allclose(*(ops.convert_to_numpy(o)[mask] for o in outputs), atol=2e-6)
    grads = [
        gradients(lambda layer=layer: ops.sum(layer(x, mask=mask) ** 2), layer.trainable_weights)
        for layer in (dense_layer, blockwise_layer)
    ]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, atol=2e-5)


def test_with_attention_dropout_training_stays_dense_and_the_config_round_trips():
    _, layer, _ = full_layers(attention_dropout=0.1)
    assert not layer.blockwise(11, training=True) and layer.blockwise(11, training=False)
    config = layer.get_config()
    assert (config["block_size"], config["blockwise_from"]) == (4, 0)
    assert type(layer).from_config(config).blockwise_from == 0
