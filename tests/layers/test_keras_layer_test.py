"""Keras' own layer test harness on every mechanism, and a layer-level mixed precision policy
that reaches every inner layer.

`run_layer_test` builds, calls (symbolic and eager), trains one step, round-trips the config and
the serialization, and calls the layer again with dtype="mixed_float16", checking that the output
has the compute dtype and every float weight stays float32. Keras has no public equivalent of the
harness, so it comes from `keras.src.testing`.
"""

import keras
import numpy as np
import pytest
from keras.src.testing import TestCase

import arena_tf.layers as layers
from tests.layers.test_mechanism_contract import (
    HEAD_DIM,
    HEADS,
    LENGTH,
    MECHANISMS,
    SMALL_PARAMS,
    WIDTH,
    inputs,
    make,
)

MIXED = "mixed_float16"


def init_kwargs(name):
    return dict(SMALL_PARAMS[name], num_heads=HEADS, head_dim=HEAD_DIM, max_len=LENGTH)


@pytest.fixture
def harness():
    filtering = keras.config.is_traceback_filtering_enabled()
    case = TestCase()
    case.setUp()  # clears Keras' global state, and turns traceback filtering off
    yield case
    if filtering:
        keras.config.enable_traceback_filtering()


@pytest.mark.parametrize("name", MECHANISMS)
def test_keras_run_layer_test(harness, name):
    harness.run_layer_test(
        layers.lookup(name),
        init_kwargs(name),
        input_shape=(2, LENGTH, WIDTH),
        expected_output_shape=(2, LENGTH, WIDTH),
        expected_output_dtype="float32",
        supports_masking=True,
        run_training_check=True,
        run_mixed_precision_check=True,
    )


# Configurations whose mixed precision path differs from the SMALL_PARAMS one (other weights,
# other kernels, random draws in training).
VARIANTS = {
    "synthesizer-dense": ("synthesizer", {"mode": "dense"}),
    "synthesizer-random": ("synthesizer", {"mode": "random", "use_dot_product": False}),
    "performer-relu-redraw": ("performer", {"kernel": "relu", "redraw": True}),
    "linformer-unshared": ("linformer", {"share_kv": False, "share_heads": False}),
    "s4d-inv-causal": ("s4d", {"init": "inv", "causal": True}),
    "s5-causal": ("s5", {"causal": True}),
    "mega-causal": ("mega", {"causal": True}),
}
CASES = [pytest.param(name, {}, id=name) for name in MECHANISMS] + [
    pytest.param(name, params, id=case) for case, (name, params) in VARIANTS.items()
]


def sublayers(layer):
    return list(layer._flatten_layers(include_self=False, recursive=True))


def float16_output(layer, training):
    x, mask = inputs()
    y = layer(x, mask=mask, training=training)
    assert keras.backend.standardize_dtype(y.dtype) == "float16"
    return keras.ops.convert_to_numpy(y).astype("float32")


@pytest.mark.parametrize("name, params", CASES)
def test_layer_level_mixed_policy_reaches_every_sublayer(name, params):
    layer = make(name, dtype=MIXED, attention_dropout=0.1, **params)
    for training in (True, False):  # dropout, feature redraws and Gumbel noise in training only
        assert np.isfinite(float16_output(layer, training)).all()
    # at least the projections, the output projection and the dropout (Mega adds its gates)
    assert len(sublayers(layer)) >= len(layer.projections) + 2
    for sublayer in sublayers(layer):
        assert sublayer.dtype_policy.name == MIXED, f"{sublayer.name}: {sublayer.dtype_policy.name}"
    for weight in layer.weights:
        if keras.backend.is_float_dtype(weight.dtype):
            assert keras.backend.standardize_dtype(weight.dtype) == "float32", weight.path


@pytest.mark.parametrize("name, params", CASES)
def test_layer_level_mixed_policy_computes_as_the_global_one(name, params):
    """Same weights, same outputs: nothing inside falls back to the global float32 policy."""
    layer = make(name, dtype=MIXED, **params)
    outputs = float16_output(layer, training=False)
    keras.mixed_precision.set_global_policy(MIXED)
    reference = make(name, **params)
    float16_output(reference, training=False)
    reference.set_weights(layer.get_weights())
    np.testing.assert_array_equal(outputs, float16_output(reference, training=False))


@pytest.mark.parametrize("name", MECHANISMS)
def test_mixed_policy_survives_serialization(name):
    layer = make(name, dtype=MIXED)
    clone = keras.layers.deserialize(keras.layers.serialize(layer))
    assert clone.get_config() == layer.get_config()
    float16_output(clone, training=False)
    assert {sub.dtype_policy.name for sub in [clone] + sublayers(clone)} == {MIXED}
