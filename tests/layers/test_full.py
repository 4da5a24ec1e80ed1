"""`full` equals NumPy softmax attention with the same weights, padding mask included."""

import numpy as np

import arena_tf.layers as layers
from tests.layers.attention_oracles import reference


def test_full_equals_numpy_softmax_attention():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 12, 16)).astype("float32")
    mask = np.ones((2, 12), bool)
    mask[1, 9:] = False
    layer = layers.get("full", num_heads=2, head_dim=8)
    got = np.asarray(layer(x, mask=mask))
    want = reference(layer, x, np.ones((12, 12), bool), mask)
    np.testing.assert_allclose(got, want, atol=1e-5)
