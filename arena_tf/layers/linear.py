"""Linear attention (Katharopoulos et al., 2020, "Transformers are RNNs: Fast Autoregressive
Transformers with Linear Attention").

Softmax similarity exp(q.k) is replaced by a kernel phi(q).phi(k) with the positive feature map
phi(x) = elu(x) + 1. By associativity the attended value of query i is

    phi(q_i) (sum_j phi(k_j)^T v_j) / (phi(q_i) . sum_j phi(k_j) + eps),

so the [head_dim, head_dim] summary sum_j phi(k_j)^T v_j is built once and no length x length
matrix ever exists. Padded keys and values are zeroed before the sums (the LRA code ignored the
mask). Feature maps and sums are computed in float32, also under mixed precision. There are no
explicit attention weights, so `attention_dropout` has nothing to act on here.

Time O(L d^2) and memory O(L d + d^2) per head for length L and head width d.

    layer = arena_tf.layers.get("linear", num_heads=4, head_dim=32, eps=1e-6)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


def kernel_attention(q_features, k_features, v, mask, eps):
    """phi(q) (phi(k)^T v) / (phi(q) sum_j phi(k_j) + eps), padded keys and values excluded.

    q_features, k_features: [batch, heads, length, features] float32 feature maps, k_features
    zero at padded keys (each feature map zeroes them where it is cheapest); v: [batch, heads,
    length, head_dim]. Returns float32 [batch, heads, length, head_dim]; a query with no real key
    gets zeros, with finite gradients.
    """
    v = aops.zero_padding(ops.cast(v, "float32"), mask)
    summary = ops.matmul(ops.swapaxes(k_features, -1, -2), v)  # [batch, heads, features, dim]
    key_sum = ops.sum(k_features, axis=2)[..., None]  # [batch, heads, features, 1]
    numerator = ops.matmul(q_features, summary)
    denominator = ops.matmul(q_features, key_sum)
    # 1, not eps, where no key is real (0 / 0): a finite gradient also where eps^2 underflows
    return numerator / ops.where(denominator > 0, denominator + eps, 1.0)


def elu_features(x):
    """The feature map phi(x) = elu(x) + 1 of Katharopoulos et al., in float32."""
    return ops.elu(ops.cast(x, "float32")) + 1.0


@register("linear")
class LinearAttention(Attention):
    """Kernelised attention with phi(x) = elu(x) + 1, linear in length.

    Args:
        eps: added to the normaliser phi(q_i) . sum_j phi(k_j) (LRA default 1e-6).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("linear", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Katharopoulos et al., 2020, "Transformers are RNNs: Fast Autoregressive
            Transformers with Linear Attention", arXiv:2006.16236;
            github.com/idiap/fast-transformers.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Katharopoulos et al. (2020), Transformers are RNNs"
    complexity = "O(L d^2)"

    def __init__(self, eps=1e-6, **kwargs):
        super().__init__(**kwargs)
        self.eps = checks.positive_float(type(self).__name__, "eps", eps)

    def attend(self, q, k, v, mask, training=False):
        k_features = aops.zero_padding(elu_features(k), mask)
        attended = kernel_attention(elu_features(q), k_features, v, mask, self.eps)
        return ops.cast(attended, q.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(eps=self.eps)
        return config
