"""Full softmax attention (Vaswani et al., 2017, "Attention Is All You Need").

Time and memory O(L^2 d): the baseline every efficient mechanism is measured against.

    layer = arena_tf.layers.get("full", num_heads=4, head_dim=32)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

from keras import ops

from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


@register("full")
class FullAttention(Attention):
    """softmax(q k^T / sqrt(d)) v over every real key."""

    paper = "Vaswani et al. (2017), Attention Is All You Need"
    quadratic = True
    complexity = "O(L^2 d)"

    def attend(self, q, k, v, mask, training=False):
        logits = ops.matmul(q * self.head_dim**-0.5, ops.swapaxes(k, -1, -2))
        weights = aops.masked_softmax(logits, aops.key_mask(mask), q.dtype)
        return ops.matmul(self.dropout_weights(weights, training), v)
