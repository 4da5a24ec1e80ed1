"""Mega: moving average equipped gated attention (Ma et al., 2023, "Mega: Moving Average Equipped
Gated Attention").

For input X [batch, L, width]:

1. Multi-dimensional damped EMA: each input dimension j is expanded to `ema_dim` dimensions by beta,
   each follows h_t = alpha * beta * x_t + (1 - alpha * delta) * h_{t-1} (alpha, delta in (0, 1)
   by sigmoids), and eta projects back: X' = silu(EMA(X) + omega * X). Time-invariant, so it is a
   long convolution with K[j, l] = sum_n eta alpha beta (1 - alpha delta)^l (`long_conv`, FFT);
   bidirectional by default (a second set of EMA parameters runs over the reversed sequence),
   one direction with `causal=True`.
2. From X': an update gate phi = sigmoid, a shared representation Z = silu (queries and keys are
   Z scaled and shifted per dimension), a reset gate r = silu and a candidate part.
3. Single-head softmax attention of Q, K over values V = silu(X W_v), with a learned relative
   position bias, within chunks of `chunk_size` positions (Mega-chunk: linear cost; a chunk that
   covers the sequence gives Mega's full attention).
4. H = silu(candidate + (r * attention) W_h); Mega's output is phi * H + (1 - phi) * X.

This layer returns phi * (H - X) for its input X: a block that adds the same X back computes Mega's
output, phi * H + (1 - phi) * X. Mega's own block (`model.block: mega`, `arena_tf.blocks`) is
post-norm, so X is the block's input and the sum is Mega's gated residual exactly; inside the
Transformer's pre-norm block X is LN(x), and the block computes x + phi * (H - LN(x)), where Mega's
pre-norm variant computes x + phi * (H - x).

Widths: Z and the queries and keys have `head_dim` dimensions, V and r have `num_heads * head_dim`
(the base's value and output projections are W_v and W_h).
Padded positions are zeroed before the EMA and excluded as keys.

Time O(L (c + ema_dim) d + L log L d) for chunk c; memory O(L c + L ema_dim d).

    layer = arena_tf.layers.get("mega", num_heads=4, head_dim=32, chunk_size=128)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import math

from keras import initializers, ops

from arena_tf.layers import checks, long_conv
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.mixer import mix_dtype
from arena_tf.layers.registry import register


def ema_kernel(alpha, delta, beta, eta, length, dtype):
    """K[d, j, l] = sum_n eta alpha beta (1 - alpha delta)^l / sqrt(n) for the damped EMA.

    alpha, delta: (0, 1) [directions, width, n]; beta, eta: [directions, width, n]. With
    l = q B + r (`long_conv.square_blocks`), one matmul [Q, n] @ [n, B] per dimension.
    """
    log_decay = ops.log(1 - alpha * delta)[..., None]  # [d, width, n, 1]
    block, blocks = long_conv.square_blocks(length)
    outer = ops.exp(log_decay * (ops.arange(blocks, dtype=dtype) * ops.cast(block, dtype)))
    inner = ops.exp(log_decay * ops.arange(block, dtype=dtype))  # [d, width, n, B]
    weight = (eta * alpha * beta / math.sqrt(alpha.shape[-1]))[..., None]
    kernel = ops.matmul(ops.swapaxes(weight * outer, -1, -2), inner)  # [d, width, Q, B]
    kernel = aops.slice_axis(ops.reshape(kernel, (*alpha.shape[:2], -1)), 2, 0, length)
    return ops.reshape(kernel, (*alpha.shape[:2], length))  # keeps the static sizes in a graph


def relative_bias(table, size):
    """[size, size] bias with entry (i, j) = table[i - j + size - 1] (a learned bias per offset)."""
    offsets = ops.arange(size)[:, None] - ops.arange(size)[None, :] + size - 1
    return ops.take(table, offsets)


@register("mega")
class Mega(Attention):
    """Damped multi-dimensional EMA, then single-head gated attention within chunks.

    Args:
        ema_dim: expansion dimensions of the EMA per input dimension (Mega's h; default 16).
        chunk_size: positions per attention chunk (default 128); one at least `max_len` long
            gives full attention over the sequence.
        causal: one-directional EMA and attention that sees no later position; default False.
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The mixed sequence: a [batch, length, width] tensor like the input (the optional
        bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("mega", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Ma et al., 2023, "Mega: Moving Average Equipped Gated Attention",
            arXiv:2209.10655; github.com/facebookresearch/mega.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Ma et al. (2023), Mega: Moving Average Equipped Gated Attention"
    complexity = "O(L (c + log L) d + L e d)"
    state_space_weights = ("alpha_logit", "delta_logit", "beta", "eta")
    projections = ("value",)
    has_attention_weights = False  # its attention reads queries and keys from the EMA's gates

    def __init__(self, ema_dim=16, chunk_size=128, causal=False, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.ema_dim = checks.positive_int(owner, "ema_dim", ema_dim)
        self.chunk_size = checks.positive_int(owner, "chunk_size", chunk_size)
        self.causal = checks.boolean(owner, "causal", causal)

    @property
    def chunk(self):
        return min(self.chunk_size, self.max_len or self.chunk_size)

    def build_mechanism(self, input_shape):
        width, inner = input_shape[-1], self.num_heads * self.head_dim
        shape = (1 if self.causal else 2, width, self.ema_dim)
        normal = self._normal
        self.alpha_logit = self.add_weight(
            name="alpha_logit", shape=shape, initializer=normal(0.2, 1)
        )
        self.delta_logit = self.add_weight(
            name="delta_logit", shape=shape, initializer=normal(0.2, 2)
        )
        # Mega's beta: alternating +1 / -1 over the expansion dimensions, plus small noise.
        signs = ops.convert_to_tensor([1.0 if n % 2 == 0 else -1.0 for n in range(self.ema_dim)])
        self.beta = self.add_weight(
            name="beta",
            shape=shape,
            initializer=(lambda shape, dtype=None: ops.cast(normal(0.02, 3)(shape) + signs, dtype)),
        )
        self.eta = self.add_weight(name="eta", shape=shape, initializer=normal(1.0, 4))
        self.omega = self.add_weight(name="omega", shape=(width,), initializer=normal(1.0, 5))
        self.gates = self._dense(2 * width + self.head_dim + inner, "gates")
        self.gates.build(tuple(input_shape))
        self.qk_scale = self.add_weight(
            name="qk_scale", shape=(2, self.head_dim), initializer=normal(0.02, 6)
        )
        self.qk_shift = self.add_weight(
            name="qk_shift", shape=(2, self.head_dim), initializer="zeros"
        )
        self.position_bias = self.add_weight(
            name="position_bias", shape=(2 * self.chunk - 1,), initializer=normal(0.02, 7)
        )

    def _normal(self, std, offset):
        return initializers.RandomNormal(stddev=std, seed=self.seed + offset)

    def ema(self, x):
        """silu(EMA(x) + omega x) in float32 for x [batch, L, width] (padding zeroed)."""
        sigmoid = [ops.sigmoid(ops.cast(w, x.dtype)) for w in (self.alpha_logit, self.delta_logit)]
        kernels = ema_kernel(
            *sigmoid,
            ops.cast(self.beta, x.dtype),
            ops.cast(self.eta, x.dtype),
            ops.shape(x)[1],
            x.dtype,
        )
        y = x * ops.cast(self.omega, x.dtype)
        kernels = ops.unstack(kernels, axis=0)
        if self.causal:
            y = y + long_conv.causal_conv(x, kernels[0])
        else:
            y = y + long_conv.bidirectional_conv(x, kernels[0], kernels[1])
        return ops.silu(y)

    def call(self, inputs, mask=None, training=False):
        mask = self._checked_mask(inputs, mask)
        dtype = mix_dtype(self)
        x = ops.cast(inputs, dtype) * ops.cast(mask[..., None], dtype)
        shared = ops.cast(self.ema(x), self.compute_dtype)
        width, inner = inputs.shape[-1], self.num_heads * self.head_dim
        gates = self.gates(shared)
        update = ops.sigmoid(gates[..., :width])
        z = ops.silu(gates[..., width : width + self.head_dim])
        reset = ops.silu(gates[..., width + self.head_dim : width + self.head_dim + inner])
        candidate = gates[..., width + self.head_dim + inner :]
        scale, shift = ops.cast(self.qk_scale, z.dtype), ops.cast(self.qk_shift, z.dtype)
        q, k = z * scale[0] + shift[0], z * scale[1] + shift[1]
        v = ops.silu(self.value_dense(inputs))
        attended = self.attend(q[:, None], k[:, None], v[:, None], mask, training=training)[:, 0]
        h = ops.silu(candidate + self.output_dense(attended * reset))
        return update * (h - ops.cast(inputs, h.dtype))

    def attend(self, q, k, v, mask, training=False):
        """Softmax attention within chunks, with the relative position bias; one head."""
        qb, kb, vb, mask_blocks = aops.blocked(q, k, v, mask, self.chunk)
        logits = ops.matmul(qb * self.head_dim**-0.5, ops.swapaxes(kb, -1, -2))
        logits = ops.cast(logits, "float32") + ops.cast(
            relative_bias(self.position_bias, self.chunk), "float32"
        )
        allowed = mask_blocks[:, None, :, None, :]  # [batch, 1, chunks, 1, chunk]
        if self.causal:
            allowed = allowed & (ops.arange(self.chunk)[:, None] >= ops.arange(self.chunk)[None, :])
        weights = aops.masked_softmax(logits, allowed, q.dtype)
        attended = ops.matmul(self.dropout_weights(weights, training), vb)
        return aops.cut_to_length(aops.merge_blocks(attended), ops.shape(q)[2])

    def get_config(self):
        config = super().get_config()
        config.update(ema_dim=self.ema_dim, chunk_size=self.chunk_size, causal=self.causal)
        return config
