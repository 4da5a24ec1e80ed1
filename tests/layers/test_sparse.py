"""`sparse` equals dense softmax attention masked to Child et al.'s fixed pattern, bidirectional."""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import assert_equals_full, padded_inputs, reference


def fixed_pattern(length, block, summary):
    """Bool [length, length]: query i sees key j in its own block or in any block's last columns."""
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    return (i // block == j // block) | (j % block >= block - summary)


@pytest.mark.parametrize(
    "length, block, summary, padding",
    [
        (12, 4, 2, 3),  # a multiple of the block; padding covers summary columns of the last block
        (13, 4, 2, 2),  # one position beyond a multiple: a last block with one real position
        (14, 5, 1, 4),
        (11, 4, 4, 1),  # the summary is the whole block: every key of the first 8 is visible
    ],
)
def test_sparse_equals_dense_fixed_pattern(length, block, summary, padding):
    x, mask = padded_inputs(length, padding)
    layer = layers.get("sparse", num_heads=2, head_dim=8, block_size=block, summary_size=summary)
    got = np.asarray(layer(x, mask=mask))
    want = reference(layer, x, fixed_pattern(length, block, summary), mask)
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)  # padded queries: any value


@pytest.mark.parametrize("length", [7, 8])
def test_sparse_with_one_block_over_the_sequence_equals_full(length):
    x, mask = padded_inputs(length, padding=2)
    sparse = layers.get("sparse", num_heads=2, head_dim=8, block_size=8, summary_size=3)
    assert_equals_full(sparse, x, mask)


def test_summary_longer_than_the_block_is_one_clear_error():
    expected = r"summary_size=9 is invalid; expected at most block_size=8"
    with pytest.raises(ValueError, match=expected):
        layers.get("sparse", num_heads=1, head_dim=4, block_size=8, summary_size=9)
