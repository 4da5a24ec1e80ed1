"""`synthesizer` equals its formula in NumPy for every mode, and full attention with zero synthetic
logits; the key mechanism-contract checks hold for every mode with and without the dot product."""

import re

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers import test_mechanism_contract as contract
from tests.layers.attention_oracles import output_projection, projections, reference, softmax

HEADS, HEAD_DIM, WIDTH, LENGTH, MAX_LEN = 2, 8, 16, 12, 20
MODES = ("dense", "random", "factorized")


def inputs():
    """x [2, LENGTH, WIDTH] with the second sequence padded from position 7 on."""
    x = np.random.default_rng(0).normal(size=(2, LENGTH, WIDTH)).astype("float32")
    mask = np.ones((2, LENGTH), bool)
    mask[1, 7:] = False
    return x, mask


def make(mode, use_dot_product):
    return layers.get(
        "synthesizer",
        num_heads=HEADS,
        head_dim=HEAD_DIM,
        max_len=MAX_LEN,
        mode=mode,
        rank=3,
        use_dot_product=use_dot_product,
    )


def weight(layer, name):
    return np.asarray(getattr(layer, name))


def numpy_dense_logits(layer, q, length):
    hidden = np.maximum(q @ weight(layer, "hidden_kernel") + weight(layer, "hidden_bias"), 0.0)
    kernel, bias = weight(layer, "logits_kernel"), weight(layer, "logits_bias")
    return hidden @ kernel[..., :length] + bias[..., :length]


def numpy_random_logits(layer, q, length):
    return weight(layer, "random_logits")[None, :, :length, :length]


def numpy_factorized_logits(layer, q, length):
    r1, r2 = weight(layer, "query_factors")[:, :length], weight(layer, "key_factors")[:, :length]
    return (r1 @ r2.swapaxes(-1, -2))[None]


SYNTHETIC = {
    "dense": numpy_dense_logits,
    "random": numpy_random_logits,
    "factorized": numpy_factorized_logits,
}


def numpy_synthesizer(layer, x, mask):
    """softmax(synthetic [+ q k^T / sqrt(d)]) v over the real keys, from the layer's weights."""
    q, k, v = projections(layer, x)
    logits = SYNTHETIC[layer.mode](layer, q, x.shape[1])
    if layer.use_dot_product:
        logits = logits + q @ k.swapaxes(-1, -2) / np.sqrt(layer.head_dim)
    return output_projection(layer, softmax(logits, mask[:, None, None, :]) @ v)


@pytest.mark.parametrize("use_dot_product", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_equals_numpy_formula_with_padding(mode, use_dot_product):
    x, mask = inputs()
    layer = make(mode, use_dot_product)
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got, numpy_synthesizer(layer, x, mask), atol=1e-5)


def test_random_mode_with_zero_synthetic_logits_equals_full_attention():
    x, mask = inputs()
    layer = make("random", use_dot_product=True)
    layer(x, mask=mask)
    layer.random_logits.assign(np.zeros(layer.random_logits.shape, "float32"))
    got = np.asarray(layer(x, mask=mask))
    want = reference(layer, x, np.ones((LENGTH, LENGTH), bool), mask)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize(
    "mode, use_dot_product, built",
    [
        ("random", False, ("value",)),
        ("factorized", False, ("value",)),
        ("dense", False, ("query", "value")),
        ("random", True, ("query", "key", "value")),
    ],
)
def test_only_the_projections_a_configuration_reads_are_built(mode, use_dot_product, built):
    layer = make(mode, use_dot_product)
    layer(*inputs())
    present = tuple(name for name in ("query", "key", "value") if hasattr(layer, f"{name}_dense"))
    assert present == built


def test_factorized_factors_start_from_different_values():
    layer = make("factorized", use_dot_product=False)
    layer(*inputs())
    assert not np.allclose(weight(layer, "query_factors"), weight(layer, "key_factors"))


CONTRACT_CHECKS = {
    "shape": lambda tmp_path: contract.test_output_shape_and_finite("synthesizer"),
    "gradients": lambda tmp_path: contract.test_gradients_reach_every_trainable_weight(
        "synthesizer"
    ),
    "padding": lambda tmp_path: contract.test_appended_padding_leaves_real_positions_unchanged(
        "synthesizer"
    ),
    "save_load": lambda tmp_path: contract.test_keras_save_and_load_gives_identical_outputs(
        "synthesizer", tmp_path
    ),
    "float16": lambda tmp_path: contract.test_mixed_precision_outputs_are_finite(
        "synthesizer", "mixed_float16"
    ),
    "tf_function": lambda tmp_path: contract.test_tf_function_serves_any_batch_and_length(
        "synthesizer"
    ),
}


# The tf.function check is TensorFlow's, as the contract test it runs.
CHECKS = [
    pytest.param(check, marks=[pytest.mark.tensorflow_only("a tf.function graph")])
    if check == "tf_function"
    else check
    for check in sorted(CONTRACT_CHECKS)
]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("use_dot_product", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_contract_holds_for_every_mode(mode, use_dot_product, check, monkeypatch, tmp_path):
    params = {"mode": mode, "rank": 4, "use_dot_product": use_dot_product}
    monkeypatch.setitem(contract.SMALL_PARAMS, "synthesizer", params)
    CONTRACT_CHECKS[check](tmp_path)


@pytest.mark.parametrize(
    "param, value, expected",
    [
        ("mode", "dense+random", "one of 'dense', 'random', 'factorized'"),
        ("rank", 0, "a positive integer"),
        ("use_dot_product", "no", "True or False"),
    ],
)
def test_bad_parameter_is_one_clear_error(param, value, expected):
    message = re.escape(f"{param}={value!r} is invalid; expected {expected}")
    with pytest.raises(ValueError, match=message):
        layers.get("synthesizer", num_heads=HEADS, head_dim=HEAD_DIM, **{param: value})
