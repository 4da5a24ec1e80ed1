"""Dense softmax attention with the hand-written backward (arena_tf/layers/softmax_attention.py)
equals softmax attention differentiated automatically: outputs and the gradients of q, k and v,
with and without excluded keys, for head and block shapes; and `Attention.softmax_attend` leaves
attention dropout in training to automatic differentiation."""

import keras
import numpy as np
import pytest
from keras import ops

import arena_tf.layers as layers
from arena_tf.layers import base
from arena_tf.layers.softmax_attention import softmax_attention
from tests.layers.gradients import gradients

SHAPES = [(2, 3, 7, 9, 5), (1, 2, 3, 6, 6, 4)]  # [..., queries, keys, width]: heads; blocks


def inputs(shape, seed=0):
    *lead, queries, keys, width = shape
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(*lead, queries, width))
    k, v = (rng.normal(size=(*lead, keys, width)) for _ in range(2))
    allowed = np.ones((lead[0],) + (1,) * (len(lead) - 1) + (1, keys), bool)
    allowed[-1, ..., keys // 2 :] = False  # the last example's second half excluded
    allowed[0, ..., 0] = False
    return q, k, v, allowed


def autodiff_form(q, k, v, allowed):
    scores = ops.matmul(q, ops.swapaxes(k, -1, -2))
    if allowed is not None:
        scores = ops.where(allowed, scores, -1e30)
    return ops.matmul(ops.softmax(scores, axis=-1), v)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("masked", [True, False])
def test_outputs_and_gradients_equal_autodiff_softmax_attention(shape, masked):
    q, k, v, allowed = inputs(shape)
    allowed = ops.convert_to_tensor(allowed) if masked else None
    w = np.random.default_rng(1).normal(size=q.shape[:-1] + (v.shape[-1],))

    def results(attention, dtype):
        variables = [keras.Variable(x, dtype=dtype) for x in (q, k, v)]

        def loss():  # the variables read first: the function gets tensors
            values = [ops.add(variable, 0) for variable in variables]
            return ops.sum(ops.cast(attention(*values, allowed), dtype) * w)

        out = attention(*(ops.convert_to_tensor(x, dtype) for x in (q, k, v)), allowed)
        return ops.convert_to_numpy(out), gradients(loss, variables)

    ours, our_grads = results(softmax_attention, "float32")
    reference, reference_grads = results(autodiff_form, "float64")
    np.testing.assert_allclose(ours, reference, atol=2e-6)
    for name, a, b in zip("qkv", our_grads, reference_grads):
        np.testing.assert_allclose(a, b, atol=2e-5, err_msg=f"d/d{name}")


@pytest.mark.parametrize("name", ["full", "local", "linformer", "longformer", "bigbird"])
def test_dropout_in_training_takes_autodiff_and_the_rest_the_hand_written_backward(
    name, monkeypatch
):
    calls = []

    def counted(*args):
        calls.append(1)
        return softmax_attention(*args)

    monkeypatch.setattr(base, "softmax_attention", counted)
    x = np.random.default_rng(2).normal(size=(2, 16, 8)).astype("float32")
    params = {
        "bigbird": {"block_size": 4},
        "local": {"block_size": 4},
        "longformer": {"window": 4},
    }.get(name, {})
    quiet = layers.get(name, num_heads=2, head_dim=4, max_len=16, **params)
    quiet(x, training=True)
    assert calls, f"{name} without dropout did not use the hand-written backward"
    calls.clear()
    dropped = layers.get(name, num_heads=2, head_dim=4, max_len=16, attention_dropout=0.5, **params)
    dropped(x, training=True)
    assert not calls, f"{name} with attention dropout in training used softmax_attention"
    dropped(x, training=False)
    assert calls
