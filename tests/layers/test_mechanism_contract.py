"""What every attention mechanism promises, checked for each one in `arena_tf.layers.available()`.

Shape, config round trip, `.keras` save/load, gradients to every weight, mixed precision, dynamic
batch and length under `tf.function` (TensorFlow only), padding invariance, and one clear error per
bad input.
"""

import keras
import numpy as np
import pytest

import arena_tf.layers as layers
from arena_tf.layers.base import DEFAULT_MAX_LEN
from tests.layers.gradients import gradients

LENGTH, WIDTH, HEADS, HEAD_DIM = 24, 16, 2, 8

# Parameters that make each pattern non-trivial at LENGTH (blocks shorter than the sequence).
SMALL_PARAMS = {
    "full": {},
    "local": {"block_size": 8},
    "linear": {},
    "performer": {"num_features": 16},
    "linformer": {"projected_length": 6},
    "synthesizer": {"mode": "factorized", "rank": 4},
    "sparse": {"block_size": 8, "summary_size": 2},
    "longformer": {"window": 6, "global_positions": [0, 5]},
    "bigbird": {"block_size": 4, "num_random_blocks": 1},
    "sinkhorn": {"block_size": 8},
    "reformer": {"n_hashes": 2, "n_buckets": 4, "chunk_size": 6},
    "s4d": {"state_size": 8},
    "s5": {"state_size": 8},
    "mega": {"ema_dim": 4, "chunk_size": 8},
}

MECHANISMS = layers.available()


def make(name, **overrides):
    params = dict(SMALL_PARAMS.get(name, {}), max_len=LENGTH, **overrides)
    return layers.get(name, num_heads=HEADS, head_dim=HEAD_DIM, **params)


def inputs(batch=2, length=LENGTH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, WIDTH)).astype("float32")
    mask = np.ones((batch, length), bool)
    mask[1, length - 5 :] = False
    return x, mask


def test_every_mechanism_has_small_test_params():
    assert set(MECHANISMS) <= set(SMALL_PARAMS)


@pytest.mark.parametrize("name", MECHANISMS)
def test_output_shape_and_finite(name):
    x, mask = inputs()
    y = make(name)(x, mask=mask)
    assert tuple(y.shape) == x.shape
    assert np.isfinite(np.asarray(y)).all()


@pytest.mark.parametrize("name", MECHANISMS)
def test_config_round_trip(name):
    layer = make(name)
    clone = type(layer).from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


@pytest.mark.parametrize("name", MECHANISMS)
def test_keras_save_and_load_gives_identical_outputs(name, tmp_path):
    x, mask = inputs()
    tokens = keras.Input((LENGTH, WIDTH))
    padding = keras.Input((LENGTH,), dtype="bool")
    model = keras.Model([tokens, padding], make(name)(tokens, mask=padding))
    path = tmp_path / f"{name}.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_array_equal(
        model.predict([x, mask], verbose=0), loaded.predict([x, mask], verbose=0)
    )


@pytest.mark.parametrize("name", MECHANISMS)
def test_gradients_reach_every_trainable_weight(name):
    x, mask = inputs()
    layer = make(name)
    layer(x, mask=mask)

    def loss():
        return keras.ops.sum(keras.ops.square(layer(x, mask=mask, training=True)))

    grads = gradients(loss, layer.trainable_weights)
    assert layer.trainable_weights
    for weight, grad in zip(layer.trainable_weights, grads):
        assert grad is not None, f"no gradient for {weight.path}"
        assert np.abs(grad).max() > 0, f"zero gradient for {weight.path}"


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
@pytest.mark.parametrize("name", MECHANISMS)
def test_mixed_precision_outputs_are_finite(name, policy):
    keras.mixed_precision.set_global_policy(policy)
    x, mask = inputs()
    y = make(name)(x, mask=mask)
    assert y.dtype == policy.split("_")[1]
    assert np.isfinite(keras.ops.convert_to_numpy(y).astype("float32")).all()


@pytest.mark.tensorflow_only("a tf.function graph with unknown batch and length")
@pytest.mark.parametrize("name", MECHANISMS)
def test_tf_function_serves_any_batch_and_length(name):
    import tensorflow as tf

    layer = make(name)
    layer.build((None, None, WIDTH))
    serve = tf.function(
        lambda x, m: layer(x, mask=m),
        input_signature=[tf.TensorSpec([None, None, WIDTH]), tf.TensorSpec([None, None], tf.bool)],
    )
    for batch, length in [(1, 5), (3, 17), (2, LENGTH)]:
        x, mask = inputs(batch=max(batch, 2), length=length)
        x, mask = x[:batch], mask[:batch]
        np.testing.assert_allclose(serve(x, mask), layer(x, mask=mask), atol=1e-5)


@pytest.mark.parametrize("name", MECHANISMS)
def test_appended_padding_leaves_real_positions_unchanged(name):
    layer = make(name)
    x, _ = inputs(batch=2, length=LENGTH)
    real = 15
    short = call_compiled_under_jax(layer, x[:, :real], mask=np.ones((2, real), bool))
    junk = x.copy()
    junk[:, real:] = 100.0 * np.random.default_rng(1).normal(size=junk[:, real:].shape)
    mask = np.zeros((2, LENGTH), bool)
    mask[:, :real] = True
    long = call_compiled_under_jax(layer, junk, mask=mask)
    np.testing.assert_allclose(np.asarray(long)[:, :real], np.asarray(short), atol=1e-4)


@pytest.mark.parametrize("name", MECHANISMS)
def test_length_above_max_len_is_one_clear_error(name):
    x, _ = inputs(length=LENGTH + 3)
    with pytest.raises(ValueError, match=f"sequence length {LENGTH + 3} exceeds max_len={LENGTH}"):
        make(name)(x)


@pytest.mark.parametrize("name", MECHANISMS)
def test_mask_of_wrong_shape_is_one_clear_error(name):
    x, _ = inputs()
    with pytest.raises(ValueError, match=r"mask of shape \(2, 7\) is invalid"):
        make(name)(x, mask=np.ones((2, 7), bool))


@pytest.mark.parametrize("name", MECHANISMS)
def test_unknown_parameter_lists_the_accepted_ones(name):
    with pytest.raises(ValueError, match="unknown parameter.*colour.*accepted: .*max_len"):
        make(name, colour="blue")


@pytest.mark.parametrize("name", MECHANISMS)
def test_wrong_typed_parameter_names_value_and_expectation(name):
    message = r"num_heads='two' is invalid; expected a positive integer"
    with pytest.raises(ValueError, match=message):
        layers.get(name, num_heads="two", head_dim=HEAD_DIM)


def test_unknown_mechanism_lists_the_available_ones():
    with pytest.raises(ValueError, match="unknown attention mechanism 'fullest'.*full"):
        layers.get("fullest", num_heads=1, head_dim=4)


LENGTH_SIZED = {"linformer", "synthesizer", "bigbird"}  # weights with max_len in their shape


def test_only_mechanisms_with_length_sized_weights_have_a_length_limit():
    assert {
        name
        for name in MECHANISMS
        if layers.get(name, num_heads=HEADS, head_dim=HEAD_DIM).length_sized
    } == LENGTH_SIZED


@pytest.mark.parametrize("name", sorted(set(MECHANISMS) - LENGTH_SIZED))
def test_without_length_sized_weights_any_length_is_accepted_by_default(name):
    params = dict(SMALL_PARAMS.get(name, {}))
    layer = layers.get(name, num_heads=HEADS, head_dim=HEAD_DIM, **params)
    assert layer.max_len is None and layer.get_config()["max_len"] is None
    x, _ = inputs(batch=2, length=DEFAULT_MAX_LEN + 5)
    assert call_compiled_under_jax(layer, x).shape == x.shape


def call_compiled_under_jax(layer, x, **arrays):
    """layer(x, **arrays); under JAX in one jit-compiled function, as fit and predict run it:
    eager JAX compiles each op anew for each new shape."""
    if keras.backend.backend() != "jax":
        return layer(x, **arrays)
    import jax

    if not layer.built:
        layer.build(x.shape)
    return jax.jit(lambda x, arrays: layer(x, **arrays))(x, arrays)


@pytest.mark.parametrize("name", sorted(LENGTH_SIZED))
def test_length_sized_weights_keep_max_len_and_the_error_names_what_it_sizes(name):
    layer = layers.get(name, num_heads=HEADS, head_dim=HEAD_DIM, **SMALL_PARAMS[name])
    assert layer.max_len == DEFAULT_MAX_LEN
    x, _ = inputs(length=LENGTH + 3)
    with pytest.raises(
        ValueError, match=f"exceeds max_len={LENGTH}, the length its {layer.length_sized[:10]}"
    ):
        make(name)(x)
