"""`local` equals dense softmax attention restricted to contiguous blocks, padding included."""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import reference


def inputs(length, batch=2, width=16, padded=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, length, width)).astype("float32")
    mask = np.ones((batch, length), bool)
    mask[1, length - padded :] = False
    return x, mask


def same_block(length, block):
    """[length, length] pattern: True where query and key lie in the same contiguous block."""
    index = np.arange(length) // block
    return index[:, None] == index[None, :]


@pytest.mark.parametrize("block_size", [21, 50])
def test_one_block_covering_the_sequence_equals_full_attention(block_size):
    x, mask = inputs(length=21)
    layer = layers.get("local", num_heads=2, head_dim=8, block_size=block_size, max_len=64)
    got = np.asarray(layer(x, mask=mask))
    want = reference(layer, x, np.ones((21, 21), bool), mask)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("length, block_size", [(24, 6), (21, 8), (5, 8)])
def test_small_blocks_equal_dense_attention_within_contiguous_blocks(length, block_size):
    x, mask = inputs(length=length, padded=3)
    layer = layers.get("local", num_heads=2, head_dim=8, block_size=block_size, max_len=32)
    got = np.asarray(layer(x, mask=mask))
    want = reference(layer, x, same_block(length, block_size), mask)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_blocks_are_contiguous_not_strided():
    """Changing a token outside a query's block leaves that query's output unchanged."""
    x, mask = inputs(length=16, padded=0)
    layer = layers.get("local", num_heads=2, head_dim=8, block_size=4, max_len=16)
    before = np.asarray(layer(x, mask=mask))
    changed = x.copy()
    changed[:, 4:8] += 5.0  # the second block only
    after = np.asarray(layer(changed, mask=mask))
    untouched = np.r_[0:4, 8:16]
    np.testing.assert_allclose(after[:, untouched], before[:, untouched], atol=1e-5)
    assert np.abs(after[:, 4:8] - before[:, 4:8]).max() > 1e-2


def test_non_positive_block_size_is_one_clear_error():
    with pytest.raises(ValueError, match=r"block_size=0 is invalid; expected a positive integer"):
        layers.get("local", num_heads=2, head_dim=8, block_size=0)
