"""`linear` equals its quadratic kernel form phi(q) phi(k)^T v, normalised, in NumPy."""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import output_projection, projections


def elu_plus_one(x):
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def quadratic_linear_attention(q, k, v, mask, eps):
    """The [length, length] form: similarities phi(q_i).phi(k_j) over real keys, row-normalised."""
    similarity = elu_plus_one(q) @ np.swapaxes(elu_plus_one(k), -1, -2)
    similarity = similarity * mask[:, None, None, :]
    return similarity @ v / (similarity.sum(axis=-1, keepdims=True) + eps)


@pytest.mark.parametrize("eps", [1e-6, 0.5])
def test_linear_equals_its_quadratic_kernel_form_with_padding(eps):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 13, 16)).astype("float32")
    mask = np.ones((2, 13), bool)
    mask[1, 9:] = False
    layer = layers.get("linear", num_heads=2, head_dim=8, eps=eps)
    got = np.asarray(layer(x, mask=mask))
    q, k, v = (t.astype("float64") for t in projections(layer, x))
    want = output_projection(layer, quadratic_linear_attention(q, k, v, mask, eps))
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_non_positive_eps_is_one_clear_error():
    with pytest.raises(ValueError, match=r"eps=0 is invalid; expected a positive number"):
        layers.get("linear", num_heads=2, head_dim=8, eps=0)
