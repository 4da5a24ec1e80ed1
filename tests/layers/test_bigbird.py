"""`bigbird` equals dense attention over the BigBird pattern, built here from its definition."""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import reference

WIDTH, HEADS, HEAD_DIM = 16, 2, 8


def make(block_size=4, num_random_blocks=2, max_len=64, seed=0):
    return layers.get(
        "bigbird",
        num_heads=HEADS,
        head_dim=HEAD_DIM,
        max_len=max_len,
        seed=seed,
        block_size=block_size,
        num_random_blocks=num_random_blocks,
    )


def inputs(length, real_lengths):
    rng = np.random.default_rng(length)
    x = rng.normal(size=(len(real_lengths), length, WIDTH)).astype("float32")
    mask = np.arange(length)[None, :] < np.asarray(real_lengths)[:, None]
    return x, mask


def bigbird_pattern(layer, mask):
    """[batch, heads, length, length] bool: which key each query may see (before the key mask)."""
    batch, length = mask.shape
    block_of = np.arange(length) // layer.block_size
    num_blocks = block_of[-1] + 1
    table = np.asarray(layer.random_blocks)
    allowed = np.zeros((batch, layer.num_heads, length, length), bool)
    for example in range(batch):
        last = block_of[mask[example]].max(initial=0)
        for head in range(layer.num_heads):
            for block in range(num_blocks):
                sparse = {block - 1, block, block + 1, 0, last} | set(table[head, block].tolist())
                keys = range(num_blocks) if block in (0, last) else sorted(sparse)
                rows, cols = block_of == block, np.isin(block_of, list(keys))
                allowed[example, head] |= rows[:, None] & cols[None, :]
    return allowed


def real_outputs(y, mask):
    return np.asarray(y)[mask]


@pytest.mark.parametrize("length", [64, 50])
def test_equals_dense_attention_over_the_bigbird_pattern(length):
    layer = make()
    x, mask = inputs(length, real_lengths=[length, 23, 6])
    got = layer(x, mask=mask)
    allowed = bigbird_pattern(layer, mask)
    real_pairs = np.broadcast_to(mask[:, None, :, None] & mask[:, None, None, :], allowed.shape)
    assert not allowed[real_pairs].all(), "the pattern should be sparse at this length"
    want = reference(layer, x, allowed, mask)
    np.testing.assert_allclose(real_outputs(got, mask), want[mask], atol=1e-5)


@pytest.mark.parametrize("block_size, length", [(16, 12), (4, 16)])
def test_equals_full_when_the_pattern_covers_everything(block_size, length):
    bigbird = make(block_size=block_size, max_len=length)
    full = layers.get("full", num_heads=HEADS, head_dim=HEAD_DIM, max_len=length)
    x, mask = inputs(length, real_lengths=[length, 9])
    bigbird(x, mask=mask)
    full(x, mask=mask)
    for name in ("query", "key", "value", "output"):
        getattr(full, f"{name}_dense").set_weights(getattr(bigbird, f"{name}_dense").get_weights())
    np.testing.assert_allclose(
        real_outputs(bigbird(x, mask=mask), mask), real_outputs(full(x, mask=mask), mask), atol=1e-5
    )


def built_table(seed, num_random_blocks=3):
    layer = make(seed=seed, num_random_blocks=num_random_blocks)
    layer.build((None, None, WIDTH))
    return np.asarray(layer.random_blocks)


def test_random_blocks_are_fixed_by_the_seed():
    np.testing.assert_array_equal(built_table(seed=3), built_table(seed=3))
    assert (built_table(seed=3) != built_table(seed=4)).any()


def test_random_blocks_are_distinct_and_outside_window_and_first_block():
    table = built_table(seed=0)
    heads, num_blocks, per_row = table.shape
    assert (heads, num_blocks, per_row) == (HEADS, 16, 3)
    for block in range(num_blocks):
        row = table[:, block]
        assert all(len(set(r)) == per_row for r in row.tolist())
        assert not np.isin(row, [0, block - 1, block, block + 1]).any()
        assert ((row >= 0) & (row < num_blocks)).all()


def test_inference_is_deterministic():
    layer = make()
    x, mask = inputs(50, real_lengths=[50, 23])
    np.testing.assert_array_equal(np.asarray(layer(x, mask=mask)), np.asarray(layer(x, mask=mask)))
