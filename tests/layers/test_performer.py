"""`performer`: FAVOR+ approximates softmax attention, the kernels equal their quadratic forms,
the features are orthogonal random features fixed at inference, and redraw only acts in training.

Approximation bound: with head_dim 8, inputs scaled by 0.5 and length 32 with padding, the mean
relative error against exact softmax attention (same projections, seeds 0-2) measured 0.39 / 0.21 /
0.09 at 16 / 64 / 1024 features. The test asserts the decrease and < 0.15 at 1024 features, and
that this is far below the error of uniform attention (0.40), so a layer that ignored the queries
could not pass.
"""

import keras
import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import output_projection, projections, reference
from tests.layers.gradients import gradients

LENGTH, WIDTH, HEADS, HEAD_DIM = 32, 16, 2, 8


def inputs(seed=0, scale=1.0, batch=2):
    rng = np.random.default_rng(seed)
    x = (scale * rng.normal(size=(batch, LENGTH, WIDTH))).astype("float32")
    mask = np.ones((batch, LENGTH), bool)
    mask[-1, LENGTH - 7 :] = False
    return x, mask


def make(**params):
    return layers.get("performer", num_heads=HEADS, head_dim=HEAD_DIM, max_len=LENGTH, **params)


def relative_error(got, want, mask):
    real = mask[:, :, None]
    return np.linalg.norm((got - want) * real) / np.linalg.norm(want * real)


def softmax_errors(num_features, seeds=(0, 1, 2)):
    """Mean relative errors of performer and of uniform attention against exact softmax."""
    performer, uniform = [], []
    for seed in seeds:
        x, mask = inputs(seed, scale=0.5)
        keras.utils.set_random_seed(seed)  # the same projections for every num_features
        layer = make(num_features=num_features, seed=seed)
        got = np.asarray(layer(x, mask=mask))
        everything = np.ones((LENGTH, LENGTH), bool)
        want = reference(layer, x, everything, mask)
        performer.append(relative_error(got, want, mask))
        uniform.append(relative_error(reference(layer, x, everything, mask, scale=0.0), want, mask))
    return np.mean(performer), np.mean(uniform)


def test_exp_kernel_approximates_softmax_better_with_more_features():
    errors = {m: softmax_errors(m)[0] for m in (16, 64)}
    errors[1024], uniform_error = softmax_errors(1024)
    assert errors[16] > errors[64] > errors[1024], errors
    assert errors[1024] < 0.15, errors
    assert errors[1024] < 0.5 * uniform_error, (errors, uniform_error)


def quadratic_kernel_attention(layer, x, mask, feature_map):
    """NumPy [length, length] form: phi(q) phi(k)^T over real keys, row-normalised, times v."""
    q, k, v = projections(layer, x)
    real = mask[:, None, :, None]  # padded rows zeroed: their junk would overflow, unstabilised
    q, k = (np.where(real, t.astype("float64") * HEAD_DIM**-0.25, 0.0) for t in (q, k))
    features = np.asarray(layer.features, "float64")
    q_features, k_features = feature_map(q, features, None), feature_map(k, features, real)
    similarity = q_features @ np.swapaxes(k_features, -1, -2)
    similarity = similarity * mask[:, None, None, :]
    return output_projection(layer, similarity @ v / similarity.sum(axis=-1, keepdims=True))


def exp_features(x, features, real_keys):
    """FAVOR+ features as the Performer code forms them: exp(w . x - |x|^2 / 2 - shift) + 1e-6,
    the shift being a query's largest exponent, or for keys (`real_keys` given) the largest over
    the real keys of a (batch, head); the factors exp(-|q|^2 / 2) and 1 / sqrt(m) cancel."""
    exponents = x @ features - 0.5 * np.sum(x**2, axis=-1, keepdims=True)
    if real_keys is None:
        return np.exp(exponents - exponents.max(axis=-1, keepdims=True)) + 1e-6
    shift = np.where(real_keys, exponents, -np.inf).max(axis=(2, 3), keepdims=True)
    return np.exp(exponents - shift) + 1e-6


def relu_features(x, features, real_keys):
    return np.maximum(x @ features, 0.0) / np.sqrt(features.shape[-1]) + 1e-3


@pytest.mark.parametrize("kernel, feature_map", [("exp", exp_features), ("relu", relu_features)])
def test_kernel_equals_its_quadratic_form_with_padding(kernel, feature_map):
    """For exp this also shows that junk padding cannot move the key stabiliser."""
    x, mask = inputs(seed=3, scale=2.0)
    x[~mask] *= 50.0
    layer = make(num_features=24, kernel=kernel)
    got = np.asarray(layer(x, mask=mask))
    want = quadratic_kernel_attention(layer, x, mask, feature_map)
    np.testing.assert_allclose(got[mask], want[mask], atol=2e-5)


def test_zero_padding_cannot_move_the_key_stabiliser():
    """Long real keys have exponents far below a zero padded key's; a stabiliser taken over all
    keys would then underflow every real key to nothing."""
    x, mask = inputs(seed=4, scale=20.0)
    x[~mask] = 0.0
    layer = make(num_features=16)
    padded = np.asarray(layer(x, mask=mask))[-1, mask[-1]]
    short = np.asarray(layer(x[-1:, mask[-1]]))[0]
    np.testing.assert_allclose(padded, short, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", ["exp", "relu"])
def test_a_sequence_without_real_keys_gets_zeros_and_finite_gradients(kernel):
    """Its junk padding (here large) must not reach the output through the key features."""
    x, mask = inputs(seed=5)
    mask[0] = False
    x[0] *= 30.0
    layer = make(num_features=16, kernel=kernel)
    out = np.asarray(layer(x, mask=mask))
    assert np.all(out[0] == out[0, 0]), "every position of the empty sequence should be equal"
    np.testing.assert_allclose(out[0, 0], np.asarray(layer.output_dense.bias), atol=1e-6)
    grads = gradients(lambda: keras.ops.sum(layer(x, mask=mask) ** 2), layer.trainable_weights)
    assert all(np.all(np.isfinite(g)) for g in grads if g is not None)


@pytest.mark.parametrize("scale", [30.0, 100.0])
def test_gradients_stay_finite_where_a_query_misses_every_key(scale):
    """Large inputs make each feature map peak sharply: without the features' stabiliser a
    query's normaliser underflowed and its gradient was NaN under JAX (under TensorFlow it
    stayed finite)."""
    x, mask = inputs(seed=6, scale=scale)
    layer = make(num_features=64)
    assert np.all(np.isfinite(np.asarray(layer(x, mask=mask))))
    grads = gradients(lambda: keras.ops.sum(layer(x, mask=mask) ** 2), layer.trainable_weights)
    assert all(np.all(np.isfinite(g)) for g in grads if g is not None)


def test_features_are_seeded_orthogonal_blocks_with_chi_lengths():
    layer = make(num_features=64, seed=5)
    layer.build((None, None, WIDTH))
    features = np.asarray(layer.features)
    assert features.shape == (HEAD_DIM, 64) and not layer.features.trainable
    lengths = np.linalg.norm(features, axis=0)
    for start in range(0, 64, HEAD_DIM):
        block = features[:, start : start + HEAD_DIM] / lengths[start : start + HEAD_DIM]
        np.testing.assert_allclose(block.T @ block, np.eye(HEAD_DIM), atol=1e-5)
    assert np.std(lengths) > 0.3  # chi-distributed lengths, not all equal
    assert abs(np.mean(lengths**2) - HEAD_DIM) < 2.0  # E[chi_d^2] = d; std of this mean is 0.5
    again = make(num_features=64, seed=5)
    again.build((None, None, WIDTH))
    other = make(num_features=64, seed=6)
    other.build((None, None, WIDTH))
    np.testing.assert_array_equal(np.asarray(again.features), features)
    assert not np.allclose(np.asarray(other.features), features)


def test_redraw_changes_features_in_training_only():
    x, mask = inputs()
    layer = make(num_features=16, redraw=True)
    first_inference = np.asarray(layer(x, mask=mask))
    initial = np.asarray(layer.features)
    np.testing.assert_array_equal(np.asarray(layer(x, mask=mask)), first_inference)
    np.testing.assert_array_equal(np.asarray(layer.features), initial)
    outputs, drawn = [], []
    for _ in range(2):
        outputs.append(np.asarray(layer(x, mask=mask, training=True)))
        drawn.append(np.asarray(layer.features))
    assert not np.allclose(drawn[0], initial) and not np.allclose(drawn[1], drawn[0])
    assert not np.allclose(outputs[0], outputs[1])
    after = np.asarray(layer(x, mask=mask))
    np.testing.assert_array_equal(np.asarray(layer(x, mask=mask)), after)
    np.testing.assert_array_equal(np.asarray(layer.features), drawn[1])


def test_without_redraw_training_keeps_the_features():
    x, mask = inputs()
    layer = make(num_features=16)
    inference = np.asarray(layer(x, mask=mask))
    np.testing.assert_array_equal(np.asarray(layer(x, mask=mask, training=True)), inference)


def random_ops(layer, training):
    import tensorflow as tf

    x, mask = inputs()
    layer(x, mask=mask)
    graph = (
        tf.function(lambda x, m: layer(x, mask=m, training=training))
        .get_concrete_function(
            tf.TensorSpec([None, None, WIDTH]), tf.TensorSpec([None, None], tf.bool)
        )
        .graph
    )
    return [op.type for op in graph.get_operations() if "Random" in op.type]


@pytest.mark.tensorflow_only("the ops of a tf.function graph")
def test_inference_graph_holds_no_random_op_even_with_redraw():
    layer = make(num_features=16, redraw=True)
    assert random_ops(layer, training=False) == []
    assert random_ops(layer, training=True)  # the redraw is really in the training graph


@pytest.mark.parametrize(
    "params, message",
    [
        ({"kernel": "softmax"}, r"kernel='softmax' is invalid; expected one of 'exp', 'relu'"),
        ({"num_features": 0}, r"num_features=0 is invalid; expected a positive integer"),
        ({"redraw": "yes"}, r"redraw='yes' is invalid; expected True or False"),
    ],
)
def test_bad_parameter_is_one_clear_error(params, message):
    with pytest.raises(ValueError, match=message):
        make(**params)
