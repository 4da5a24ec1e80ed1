"""BigBird block-sparse attention (Zaheer et al., 2020, "Big Bird: Transformers for Longer
Sequences"), the ITC variant: global + sliding window + random blocks.

The sequence is cut into blocks of `block_size` (b) tokens (the last one padded inside). With
"real block" meaning a block that holds at least one real (mask True) token, and `last` the index
of the last real block of each example (0 when an example has no real token):

- Query blocks `0` and `last` are global: their queries attend to every real key.
- Every other query block i attends to the real keys of the set of key blocks
  {i - 1, i, i + 1} (window) + {0, last} (global) + R[head, i] (random); a block reached twice
  counts once (duplicates are masked), and indices outside the input are dropped.
- R is a [heads, ceil(max_len / b), r] table of absolute block indices, drawn once from `seed`
  with NumPy at build time and stored as a non-trainable int32 weight (`random_blocks`), so the
  graph holds no random op. Row (h, i) holds r distinct blocks drawn uniformly from the blocks of
  the max_len table outside {0, i - 1, i, i + 1}; a row with fewer candidates than r is filled up
  with i itself (a duplicate of the window, hence masked).

Padding invariance, which the original BigBird lacks (its last global block is the last block of
the padded input, and its random blocks are drawn per padded length): `last` comes from the mask,
and random indices are absolute positions, so a random block beyond the real tokens is padding
and excluded. Appending padding thus leaves the outputs at real positions unchanged.

Computed by laying the 5 + r key blocks of every query block side by side (`slot_blocks`: the
window as shifted slices, the global blocks broadcast, the r random ones gathered: a gather that
tf2onnx converts) plus one dense pass of the 2 global query blocks over all keys: time and memory
O(L (5 + r) b d + 2 b L d), never an L x L tensor.

    layer = arena_tf.layers.get("bigbird", num_heads=4, head_dim=64, block_size=64,
                                num_random_blocks=3, max_len=4096)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import numpy as np
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


@register("bigbird")
class BigBirdAttention(Attention):
    """Block-sparse softmax attention: window of 3 blocks, global first / last real block, random.

    Args:
        block_size: tokens per block (b).
        num_random_blocks: random key blocks per query block (r), fixed by `seed`.
        **kwargs: `Attention` arguments (num_heads, head_dim, max_len, seed, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("bigbird", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Zaheer et al., 2020, "Big Bird: Transformers for Longer Sequences",
            arXiv:2007.14062; github.com/google-research/bigbird.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Zaheer et al. (2020), Big Bird: Transformers for Longer Sequences"
    complexity = "O(L (5 + r) b d)"
    length_sized = "random-block table ([heads, max_len / block_size, r])"

    def __init__(self, num_heads, head_dim, block_size=64, num_random_blocks=3, **kwargs):
        super().__init__(num_heads=num_heads, head_dim=head_dim, **kwargs)
        owner = type(self).__name__
        self.block_size = checks.positive_int(owner, "block_size", block_size)
        self.num_random_blocks = checks.non_negative_int(
            owner, "num_random_blocks", num_random_blocks
        )

    def build_mechanism(self, input_shape):
        table = random_block_table(
            self.seed, self.num_heads, -(-self.max_len // self.block_size), self.num_random_blocks
        )
        self.random_blocks = self.add_weight(
            name="random_blocks",
            shape=table.shape,
            dtype="int32",
            trainable=False,
            initializer=lambda shape, dtype=None: ops.convert_to_tensor(table, "int32"),
        )

    def attend(self, q, k, v, mask, training=False):
        length = ops.shape(q)[2]
        qb, kb, vb, mask_blocks = aops.blocked(
            q * ops.cast(self.head_dim**-0.5, q.dtype), k, v, mask, self.block_size
        )
        last = last_real_block(mask_blocks)
        indices, valid = key_block_slots(self.random_blocks, last, qb)
        sparse_rows = self._attend_slots(qb, kb, vb, mask_blocks, indices, valid, training)
        global_rows = self._attend_globally(qb, kb, vb, mask_blocks, last, training)
        blocks = place_global_rows(sparse_rows, global_rows, last)
        return aops.cut_to_length(aops.merge_blocks(blocks), length)

    def _attend_slots(self, qb, kb, vb, mask_blocks, indices, valid, training):
        """Each query block over the key blocks of its slots: [batch, heads, n, b, d]."""
        last = indices[:, 0, 0, 4]
        random = indices[..., 5:]
        keys, values = (flatten_slots(slot_blocks(t, last, random)) for t in (kb, vb))
        heads_mask = ops.broadcast_to(mask_blocks[:, None], ops.shape(qb)[:4])
        allowed = ops.logical_and(slot_blocks(heads_mask, last, random), valid[..., None])
        allowed = ops.reshape(allowed, tuple(ops.shape(qb)[:3]) + (1, -1))
        return self.softmax_attend(qb, keys, values, allowed, training)

    def _attend_globally(self, qb, kb, vb, mask_blocks, last, training):
        """Query blocks 0 and `last` over every key: [batch, heads, 2, b, d]."""
        shape = ops.shape(qb)
        rows = ops.stack([ops.zeros_like(last), last], axis=1)[:, None, :]
        queries = gather_blocks(qb, ops.broadcast_to(rows, (shape[0], shape[1], 2)))
        keys, values = aops.merge_blocks(kb), aops.merge_blocks(vb)
        padded_mask = ops.reshape(mask_blocks, (shape[0], -1))
        attended = self.softmax_attend(
            aops.merge_blocks(queries), keys, values, aops.key_mask(padded_mask), training
        )
        return aops.split_blocks(attended, self.block_size)

    def get_config(self):
        config = super().get_config()
        config.update(block_size=self.block_size, num_random_blocks=self.num_random_blocks)
        return config


def random_block_table(seed, num_heads, num_blocks, num_random):
    """[heads, blocks, r] int32 table of random key blocks (definition in the module docstring)."""
    rng = np.random.default_rng(seed)
    rows = [
        draw_random_row(rng, block, num_blocks, num_random)
        for _ in range(num_heads)
        for block in range(num_blocks)
    ]
    return np.asarray(rows, np.int32).reshape(num_heads, num_blocks, num_random)


def draw_random_row(rng, block, num_blocks, num_random):
    """r distinct blocks outside {0, block - 1, block, block + 1}, filled up with `block`."""
    excluded = sorted({0, block - 1, block, block + 1} & set(range(num_blocks)))
    count = min(num_random, num_blocks - len(excluded))
    drawn = rng.choice(num_blocks - len(excluded), size=count, replace=False)
    for skipped in excluded:  # the v-th candidate: step over each excluded block at or below it
        drawn = drawn + (drawn >= skipped)
    return np.concatenate([drawn, np.full(num_random - count, block)])


def last_real_block(mask_blocks):
    """[batch] index of the last block holding a real token (0 if none), from [batch, n, b]."""
    has_real = ops.any(mask_blocks, axis=-1)
    block_ids = ops.arange(ops.shape(mask_blocks)[1], dtype="int32")
    return ops.max(ops.where(has_real, block_ids[None, :], 0), axis=-1)


def key_block_slots(random_blocks, last, qb):
    """Key-block index of each slot and whether the slot counts: two [batch, heads, n, 5 + r].

    Slots are previous, own, next, first, last, then the random blocks; a slot counts when its
    block lies inside the input and no earlier slot of the same query block names it.
    """
    batch, heads, num_blocks = ops.shape(qb)[0], ops.shape(qb)[1], ops.shape(qb)[2]
    own = ops.arange(num_blocks, dtype="int32")[:, None]
    fixed = ops.concatenate([own - 1, own, own + 1, ops.zeros_like(own)], axis=1)
    shape = (batch, heads, num_blocks)
    random = random_blocks[None, :, :num_blocks]
    indices = ops.concatenate(
        [
            ops.broadcast_to(fixed, shape + (fixed.shape[-1],)),
            ops.broadcast_to(last[:, None, None, None], shape + (1,)),
            ops.broadcast_to(random, shape + (random_blocks.shape[-1],)),
        ],
        axis=-1,
    )
    inside = ops.logical_and(indices >= 0, indices < num_blocks)
    valid = ops.logical_and(inside, first_occurrences(indices))
    return ops.clip(indices, 0, num_blocks - 1), valid


def first_occurrences(indices):
    """True where no earlier entry on the last axis holds the same value."""
    slots = indices.shape[-1]
    earlier = ops.convert_to_tensor(np.tril(np.ones((slots, slots), bool), -1))
    repeats = ops.logical_and(indices[..., :, None] == indices[..., None, :], earlier)
    return ops.logical_not(ops.any(repeats, axis=-1))


def gather_blocks(blocks, indices):
    """blocks [batch, heads, n, ...] at indices [batch, heads, ...] -> [batch, heads, ..., ...].

    One flat gather (block index offset per batch and head), which tf2onnx converts.
    """
    shape = ops.shape(blocks)
    batch, heads, num_blocks = shape[0], shape[1], shape[2]
    offsets = ops.reshape(ops.arange(batch * heads, dtype="int32") * num_blocks, (batch, heads))
    flat_indices = indices + ops.reshape(offsets, (batch, heads) + (1,) * (len(indices.shape) - 2))
    flat_blocks = ops.reshape(blocks, (-1,) + tuple(shape[3:]))
    return ops.take(flat_blocks, flat_indices, axis=0)


def slot_blocks(blocks, last, random):
    """The key blocks of every query block's slots, [batch, heads, n, 5 + r, b, ...], from blocks
    [batch, heads, n, b, ...], `last` [batch] and the random slots' indices [batch, heads, n, r].

    Only the random slots are gathered: the window (previous, own, next block) is three shifted
    slices of the blocks (zeros beyond the ends, where the slot does not count), the first global
    block is block 0 broadcast, the last one block `last` of each example. A gather's gradient is
    a scatter-add, which on a GPU serialises on atomic adds; a slice's is a pad. (With all 5 + r
    slots gathered, bigbird took 2.6x the fused kernel's time at 16K on an H200.)
    """
    shape = ops.shape(blocks)
    count, rank = shape[2], len(blocks.shape)
    padded = ops.pad(blocks, [[0, 0], [0, 0], [1, 1]] + [[0, 0]] * (rank - 3))
    window = [aops.slice_axis(padded, 2, shift, count) for shift in range(3)]
    first = ops.broadcast_to(blocks[:, :, :1], shape)
    at_last = ops.reshape(last, (-1, 1, 1) + (1,) * (rank - 3))
    last_block = ops.broadcast_to(ops.take_along_axis(blocks, at_last, axis=2), shape)
    fixed = ops.stack(window + [first, last_block], axis=3)
    return ops.concatenate([fixed, gather_blocks(blocks, random)], axis=3)


def flatten_slots(gathered):
    """[batch, heads, n, slots, b, d] -> [batch, heads, n, slots * b, d]."""
    shape = ops.shape(gathered)
    return ops.reshape(gathered, (shape[0], shape[1], shape[2], -1, shape[5]))


def place_global_rows(sparse_rows, global_rows, last):
    """Replace query blocks 0 and `last` of [batch, heads, n, b, d] by the global rows."""
    block_ids = ops.arange(ops.shape(sparse_rows)[2], dtype="int32")
    is_last = (block_ids[None, :] == last[:, None])[:, None, :, None, None]
    is_first = (block_ids == 0)[None, None, :, None, None]
    placed = ops.where(is_last, global_rows[:, :, 1:2], sparse_rows)
    return ops.where(is_first, global_rows[:, :, 0:1], placed)
