"""Linformer attention (Wang et al., 2020, "Linformer: Self-Attention with Linear Complexity").

Keys and values are projected along the length axis to a fixed `projected_length` p with learned
matrices E, F of shape [max_len, p], sliced to the actual length L:

    keys' = E[:L]^T k,   values' = F[:L]^T v,   out = softmax(q keys'^T / sqrt(d)) values'

so each query attends to p summaries instead of L keys, and no L x L matrix exists. By default
one matrix serves keys and values and every head of the layer (the LRA setting); `share_kv=False`
gives keys and values their own matrices and `share_heads=False` gives every head its own.
Padded keys and values are zeroed before the projection (the LRA code ignored the mask), so
appended padding changes nothing at the real positions. The softmax is computed in float32.

The matrices are stored transposed, as [heads or 1, p, max_len], and initialised with
N(0, 1 / max_len): at L = max_len a projected key has the scale of one key.

Time O(L p d) and memory O(L p + p d) per head for length L, projected length p, head width d.

    layer = arena_tf.layers.get("linformer", num_heads=4, head_dim=32, max_len=4096,
                                projected_length=32)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import keras
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


@register("linformer")
class LinformerAttention(Attention):
    """Softmax attention over keys and values projected along the length to `projected_length`.

    Args:
        projected_length: number p of projected keys and values each query attends to.
        share_kv: one projection for keys and values (True) or one each (False).
        share_heads: one projection for all heads (True) or one per head (False).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("linformer", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Wang et al., 2020, "Linformer: Self-Attention with Linear Complexity",
            arXiv:2006.04768.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Wang et al. (2020), Linformer: Self-Attention with Linear Complexity"
    complexity = "O(L k d)"
    length_sized = "projections E and F ([k, max_len])"

    def __init__(self, projected_length=32, share_kv=True, share_heads=True, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.projected_length = checks.positive_int(owner, "projected_length", projected_length)
        self.share_kv = checks.boolean(owner, "share_kv", share_kv)
        self.share_heads = checks.boolean(owner, "share_heads", share_heads)

    def build_mechanism(self, input_shape):
        heads = 1 if self.share_heads else self.num_heads
        shape = (heads, self.projected_length, self.max_len)
        names = ("length_projection",) if self.share_kv else ("key_projection", "value_projection")
        self.length_projections = [
            self.add_weight(name=name, shape=shape, initializer=self._initializer())
            for name in names
        ]

    def _initializer(self):
        """N(0, 1 / max_len); a new instance per weight, so separate projections start apart."""
        return keras.initializers.RandomNormal(stddev=self.max_len**-0.5)

    def attend(self, q, k, v, mask, training=False):
        key_projection, value_projection = self._sliced_projections(ops.shape(k)[2], k.dtype)
        keys = ops.matmul(key_projection, aops.zero_padding(k, mask))  # [batch, heads, p, dim]
        values = ops.matmul(value_projection, aops.zero_padding(v, mask))
        return self.softmax_attend(q * self.head_dim**-0.5, keys, values, None, training)

    def _sliced_projections(self, length, dtype):
        """(key, value) projections [1, heads or 1, p, length] cut to the sequence length."""
        sliced = [ops.cast(w[None, :, :, :length], dtype) for w in self.length_projections]
        return sliced[0], sliced[-1]

    def get_config(self):
        config = super().get_config()
        config.update(
            projected_length=self.projected_length,
            share_kv=self.share_kv,
            share_heads=self.share_heads,
        )
        return config
