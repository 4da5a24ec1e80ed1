"""Full softmax attention (Vaswani et al., 2017, "Attention Is All You Need").

Time O(L^2 d): the baseline every efficient mechanism is measured against. Memory O(L^2) in the
dense form; from `blockwise_from` keys on (8,192 by default; 0: always, None: never) the same
softmax is computed by `blockwise.blockwise_attention` (keys in blocks of `block_size`, online
softmax, a backward that recomputes each block) in O(L d) memory, equal to the dense form to
float32 rounding. The blockwise form has no attention weights to drop out: with attention_dropout
it is used only outside training. Where `kernels.choose` picks the fused kernel (bf16 under JAX on
a GPU: cuDNN's flash attention, itself O(L d) in memory), it is taken at every length instead of
either form. Exports trace the dense form (`long_conv.export_form`).

    layer = arena_tf.layers.get("full", num_heads=4, head_dim=32)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

from keras import ops

from arena_tf.layers import checks, kernels
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.blockwise import blockwise_attention
from arena_tf.layers.registry import register


@register("full")
class FullAttention(Attention):
    """softmax(q k^T / sqrt(d)) v over every real key.

    Args:
        block_size: keys per block of the memory-efficient form.
        blockwise_from: the key length from which the memory-efficient form is used (0: always,
            None: never).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("full", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Vaswani et al., 2017, "Attention Is All You Need", arXiv:1706.03762.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Vaswani et al. (2017), Attention Is All You Need"
    quadratic = True
    complexity = "O(L^2 d)"

    def __init__(self, block_size=512, blockwise_from=8192, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.block_size = checks.positive_int(owner, "block_size", block_size)
        self.blockwise_from = (
            None
            if blockwise_from is None
            else checks.non_negative_int(owner, "blockwise_from", blockwise_from)
        )

    def blockwise(self, keys, training):
        """Whether `keys` (a static length, or None) take the memory-efficient form: from
        `blockwise_from` on, where no fused kernel is chosen (the fused kernel needs no length x
        length weights either) and no attention dropout acts."""
        if self.blockwise_from is None or keys is None:
            return False
        return (
            keys >= self.blockwise_from and super().attention_kernel(keys, training) == kernels.HAND
        )

    def attention_kernel(self, length=None, training=False, dtype=None):
        if self.blockwise(length, training):
            return kernels.BLOCKWISE
        return super().attention_kernel(length, training, dtype)

    def attend(self, q, k, v, mask, training=False):
        q = q * self.head_dim**-0.5
        if self.blockwise(k.shape[2], training):
            return ops.cast(blockwise_attention(q, k, v, mask, self.block_size), q.dtype)
        return self.softmax_attend(q, k, v, aops.key_mask(mask), training)

    def get_config(self):
        return {
            **super().get_config(),
            "block_size": self.block_size,
            "blockwise_from": self.blockwise_from,
        }
