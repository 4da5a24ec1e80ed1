"""Sparse attention, "fixed" pattern (Child et al., 2019, "Generating Long Sequences with Sparse
Transformers"), made bidirectional for an encoder.

The sequence is cut into contiguous blocks of `block_size` positions; the last `summary_size`
positions of every block are its "summary" columns. Each query attends to every key of its own
block and to the summary columns of all blocks, so information crosses blocks through the
summaries in one layer.

Computed by gathering, never by masking an L x L matrix: per query block, the keys are its own
block plus the summary keys of all blocks (one [L, (L / b) c] product shared by the blocks, not a
copy per block); a summary key of the query's own block is masked there, since the own block already
holds it. Time and memory O(L (b + c L / b) d), i.e. O(L^1.5 d) with b ~ sqrt(L).

    layer = arena_tf.layers.get("sparse", num_heads=4, head_dim=32, block_size=50, summary_size=10)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


@register("sparse")
class SparseAttention(Attention):
    """Own contiguous block + the last `summary_size` positions of every block.

    Args:
        block_size: length b of the contiguous blocks (Child et al. use about sqrt(L)).
        summary_size: number c of summary positions at the end of each block (c <= b).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("sparse", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Child et al., 2019, "Generating Long Sequences with Sparse Transformers",
            arXiv:1904.10509; github.com/openai/sparse_attention.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Child et al. (2019), Generating Long Sequences with Sparse Transformers"
    complexity = "O(L (b + c L / b) d)"

    def __init__(self, block_size=50, summary_size=10, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.block_size = checks.positive_int(owner, "block_size", block_size)
        self.summary_size = checks.positive_int(owner, "summary_size", summary_size)
        if summary_size > block_size:
            raise ValueError(
                f"{owner}: summary_size={summary_size} is invalid; expected at most "
                f"block_size={block_size} (the summary columns are the last positions of a block)"
            )

    def attend(self, q, k, v, mask, training=False):
        first_summary = self.block_size - self.summary_size
        qb, kb, vb, real_blocks = aops.blocked(q * self.head_dim**-0.5, k, v, mask, self.block_size)
        summary_kv = [
            aops.merge_blocks(aops.slice_axis(t, 3, first_summary, self.summary_size))
            for t in (kb, vb)
        ]
        allowed = (real_blocks[:, None, :, None, :], self._summary_allowed(real_blocks))
        attended = aops.attend_blocks_and_shared(
            qb, (kb, vb), summary_kv, allowed, lambda w: self.dropout_weights(w, training)
        )
        return aops.cut_to_length(attended, ops.shape(q)[2])

    def _summary_allowed(self, real_blocks):
        """[batch, 1, blocks, 1, blocks * c]: the real summary keys of the other blocks."""
        batch, blocks = ops.shape(real_blocks)[0], ops.shape(real_blocks)[1]
        first_summary = self.block_size - self.summary_size
        summary_real = ops.reshape(real_blocks[:, :, first_summary:], (batch, -1))
        key_block = ops.arange(blocks * self.summary_size) // self.summary_size
        other_block = key_block[None, :] != ops.arange(blocks)[:, None]
        return ops.logical_and(
            summary_real[:, None, None, None, :], other_block[None, None, :, None, :]
        )

    def get_config(self):
        config = super().get_config()
        config.update(block_size=self.block_size, summary_size=self.summary_size)
        return config
