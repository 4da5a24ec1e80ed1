"""The fused attention kernel (arena_tf/layers/kernels.py), forced on CPU, equals the dense formula
(outputs and gradients of q, k and v, with padding and block masks, a fully excluded row
included), and the mechanisms that take it give the hand path's outputs and weight gradients;
and the selection rule picks it only where the device and dtype have one and no dropout acts."""

import keras
import numpy as np
import pytest
from keras import ops

import arena_tf.layers as layers
from arena_tf.layers import kernels
from tests.layers.gradients import gradients
from tests.layers.test_softmax_attention import autodiff_form, inputs

SHAPES = [(2, 3, 7, 9, 8), (2, 2, 3, 6, 6, 8)]  # [..., queries, keys, width]: heads; blocks


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("masked", [True, False])
def test_fused_kernel_equals_the_dense_formula_with_gradients(shape, masked):
    q, k, v, allowed = inputs(shape)
    if masked:
        allowed[-1, ..., :] = False  # the last example: no key allowed at all
    allowed = ops.convert_to_tensor(allowed) if masked else None
    w = np.random.default_rng(1).normal(size=q.shape[:-1] + (v.shape[-1],))

    def results(attention):
        variables = [keras.Variable(x, dtype="float32") for x in (q, k, v)]

        def loss():
            values = [ops.add(variable, 0) for variable in variables]
            return ops.sum(attention(*values, allowed) * w)

        out = attention(*(ops.convert_to_tensor(x, "float32") for x in (q, k, v)), allowed)
        return ops.convert_to_numpy(out), gradients(loss, variables)

    fused, fused_grads = results(kernels.fused_attention)
    reference, reference_grads = results(autodiff_form)
    np.testing.assert_allclose(fused, reference, atol=2e-5)
    for name, a, b in zip("qkv", fused_grads, reference_grads):
        np.testing.assert_allclose(a, b, atol=1e-4, err_msg=f"d/d{name}")


CASES = {  # mechanism: parameters at 24 tokens (blocks of 8, so every path has several blocks)
    "full": {},
    "local": {"block_size": 8},
    "bigbird": {"block_size": 4, "num_random_blocks": 1},
    "longformer": {"window": 8},
    "linformer": {},
    "full[blockwise]": {"blockwise_from": 0},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mechanisms_give_the_same_outputs_and_gradients_fused_or_by_hand(case, monkeypatch):
    calls = []
    fused_attention = kernels.fused_attention
    monkeypatch.setattr(
        kernels, "fused_attention", lambda *a: calls.append(1) or fused_attention(*a)
    )
    name = case.split("[")[0]
    layer = layers.get(name, num_heads=2, head_dim=8, max_len=24, **CASES[case])
    rng = np.random.default_rng(3)
    x = ops.convert_to_tensor(rng.normal(size=(2, 24, 16)), "float32")
    mask = ops.convert_to_tensor(np.arange(24)[None, :] < np.array([[24], [17]]))
    layer(x, mask=mask)

    def run(kernel):
        with kernels.forced(kernel):
            out = ops.convert_to_numpy(layer(x, mask=mask, training=True))
            grads = gradients(
                lambda: ops.sum(layer(x, mask=mask, training=True) ** 2), layer.trainable_weights
            )
        return out, grads

    fused, fused_grads = run(kernels.FUSED)
    assert calls, f"{case} did not take the fused kernel where it was forced"
    calls.clear()
    by_hand, hand_grads = run(kernels.HAND)
    assert not calls
    np.testing.assert_allclose(fused, by_hand, atol=2e-5)
    for weight, a, b in zip(layer.trainable_weights, fused_grads, hand_grads):
        np.testing.assert_allclose(a, b, atol=2e-4, err_msg=weight.path)


@pytest.fixture
def gpu(monkeypatch):
    """The selection rule as on a device with a fused kernel (a GPU under JAX)."""
    monkeypatch.setattr(kernels, "fused_device", lambda: True)
    monkeypatch.delenv(kernels.ENVIRONMENT, raising=False)


def test_the_rule_takes_the_fused_kernel_for_bf16_on_a_gpu_only_without_dropout(gpu):
    assert kernels.choose("bfloat16", 64) == kernels.FUSED
    assert kernels.choose("float16", 128) == kernels.FUSED
    assert kernels.choose("float32", 64) == kernels.HAND  # no flash kernel for float32
    assert kernels.choose("bfloat16", 256) == kernels.HAND  # head too wide for cuDNN
    assert kernels.choose("bfloat16", 64, dropout=True) == kernels.DROPOUT
    assert kernels.choose("bfloat16", 64, exporting=True) == kernels.DROPOUT


def test_on_cpu_the_rule_keeps_the_hand_written_backward(monkeypatch):
    monkeypatch.delenv(kernels.ENVIRONMENT, raising=False)
    assert kernels.choose("bfloat16", 64) == kernels.HAND
    monkeypatch.setenv(kernels.ENVIRONMENT, "fused")
    assert kernels.choose("float32", 64) == kernels.FUSED
    monkeypatch.setenv(kernels.ENVIRONMENT, "flash")
    with pytest.raises(ValueError, match="ARENA_TF_ATTENTION_KERNEL=flash is invalid"):
        kernels.choose("float32", 64)


def test_full_names_the_kernel_it_takes(gpu):
    long = layers.get("full", num_heads=2, head_dim=64, blockwise_from=8192, dtype="mixed_bfloat16")
    assert long.attention_kernel(16384) == kernels.FUSED  # fused, not blockwise, at 16K
    assert long.attention_kernel(16384, training=False) == kernels.FUSED
    plain = layers.get("full", num_heads=2, head_dim=64, blockwise_from=8192)
    assert plain.attention_kernel(16384) == kernels.BLOCKWISE  # float32: no fused kernel
    assert plain.attention_kernel(1024) == kernels.HAND
    dropped = layers.get(
        "full", num_heads=2, head_dim=64, attention_dropout=0.1, dtype="mixed_bfloat16"
    )
    assert dropped.attention_kernel(1024, training=True) == kernels.DROPOUT
    assert dropped.attention_kernel(1024, training=False) == kernels.FUSED
