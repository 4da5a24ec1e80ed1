"""Local attention: softmax within non-overlapping contiguous blocks (as in the LRA baseline).

The sequence is cut into blocks of `block_size` consecutive positions (positions 0..b-1, b..2b-1,
...); each query attends, with ordinary scaled dot-product softmax, to the real keys of its own
block only. The sequence is padded to a multiple of the block inside and cut back, and padded keys
never contribute. The LRA reference reshaped the sequence so that each "block" held strided
positions (i, i + n, i + 2n, ...); here blocks are contiguous, as the paper describes.

Time O(L b d) and memory O(L b) per head for length L, block b and head width d: the blocks are one
batched matmul over [batch, heads, blocks, block, head_dim].

    layer = arena_tf.layers.get("local", num_heads=4, head_dim=32, block_size=50)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


@register("local")
class LocalAttention(Attention):
    """Softmax attention within contiguous blocks of `block_size` positions.

    Args:
        block_size: positions per block (LRA default 50; 64 for the image task). A block longer
            than a given `max_len` is treated as `max_len` (one block: full attention).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("local", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Parmar et al. (2018), Image Transformer (local blocks as in LRA)"
    complexity = "O(L b d)"

    def __init__(self, block_size=50, **kwargs):
        super().__init__(**kwargs)
        self.block_size = checks.positive_int(type(self).__name__, "block_size", block_size)

    def attend(self, q, k, v, mask, training=False):
        block = min(self.block_size, self.max_len or self.block_size)
        qb, kb, vb, mask_blocks = aops.blocked(q, k, v, mask, block)
        allowed = mask_blocks[:, None, :, None, :]  # [batch, 1, blocks, 1, block]
        attended = self.softmax_attend(qb * self.head_dim**-0.5, kb, vb, allowed, training)
        return aops.cut_to_length(aops.merge_blocks(attended), ops.shape(q)[2])

    def get_config(self):
        config = super().get_config()
        config.update(block_size=self.block_size)
        return config
