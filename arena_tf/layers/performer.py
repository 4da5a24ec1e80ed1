"""Performer attention (Choromanski et al., 2021, "Rethinking Attention with Performers"), FAVOR+.

Softmax attention is approximated with positive orthogonal random features: with x scaled by
d^-1/4 (so that q.k becomes q.k / sqrt(d)) and w_1..w_m random directions,

    phi(x) = exp(w_i . x - |x|^2 / 2) / sqrt(m),    E[phi(q) . phi(k)] = exp(q . k / sqrt(d)),

and the attended value of query i is phi(q_i) (sum_j phi(k_j)^T v_j) / (phi(q_i) . sum_j phi(k_j)),
linear in length (no length x length matrix). The features are orthogonal within blocks of d (QR of
Gaussian matrices) and each has the length of a Gaussian vector (chi distribution with d degrees of
freedom), as in the paper. They are drawn once with NumPy from the layer's seed into a
non-trainable weight `features` of shape [head_dim, num_features], so inference is deterministic
and the exported graph holds no random op.

Numerical stabiliser: each query's features are divided by exp(its largest exponent) and each
(batch, head)'s key features by exp(the largest exponent over its REAL keys); both factors cancel
between numerator and denominator (exactly, but for the 1e-6 below), and padding cannot change
them. So do exp(-|q|^2 / 2)
and 1 / sqrt(m), which are therefore never computed. As in the Performer code, 1e-6 is then added
to every stabilised feature (whose largest is 1), which keeps the normaliser and its gradient
finite where a query's features miss every key's.

kernel="relu" is the generalised-attention kernel phi(x) = relu(w_i . x) / sqrt(m) + 1e-3 on the
same stored random features (x scaled by d^-1/4 as above). The LRA code's default was this ReLU
kernel with "deterministic" (identity) features, i.e. relu(x) + 1e-3 on the raw head vectors; we
keep the random features so that `num_features` and `redraw` mean the same for both kernels.

redraw=True draws new features (with a Keras seed generator) on every training call and stores
them in the weight, so inference uses the last draw; calls with training=False never draw, and
their graph holds no random op. Feature maps and sums are computed in float32, also under mixed
precision. There are no explicit attention weights, so `attention_dropout` has nothing to act on.

Time O(L m d) and memory O(L m + m d) per head for length L, m features and head width d.

    layer = arena_tf.layers.get("performer", num_heads=4, head_dim=32, num_features=256)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import keras
import numpy as np
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.linear import kernel_attention
from arena_tf.layers.registry import register

# Added to every ReLU feature (as in the Performer code), so a normaliser is never zero.
RELU_EPSILON = 1e-3
# Added to every stabilised exp feature (whose largest is 1), as the Performer code's
# `numerical_stabilizer`: it keeps the normaliser phi(q) . sum phi(k) at least m n 1e-12 (n real
# keys), where a query whose features miss every key's would otherwise underflow it and overflow
# its gradient (NaN under JAX for inputs scaled by 30: tests/layers/test_performer.py).
FEATURE_STABILISER = 1e-6
# Added to the normaliser only to keep a query with no real key finite (0 / 0); far below any
# normaliser with a real key (FEATURE_STABILISER's bound), so it changes none of them.
DENOMINATOR_FLOOR = 1e-30


def orthogonal_random_features(blocks, scales, xp):
    """[d, m] matrix whose columns are orthogonal within each block of d and chi(d)-long.

    blocks: [ceil(m / d), d, d] standard Gaussian; scales: [m, d] standard Gaussian, whose row
    norms give the lengths. xp: `numpy` (the initial draw) or `keras.ops` (redraws in the graph).
    """
    depth, count = blocks.shape[-1], scales.shape[0]
    orthonormal, triangular = xp.linalg.qr(blocks)
    # QR fixes the signs of its columns by convention, which biases their directions; signs from
    # R's diagonal make each block a uniformly (Haar) distributed rotation.
    orthonormal = orthonormal * xp.sign(xp.diagonal(triangular, axis1=-2, axis2=-1))[:, None, :]
    directions = xp.reshape(xp.transpose(orthonormal, (1, 0, 2)), (depth, -1))[:, :count]
    return directions * xp.sqrt(xp.sum(xp.square(scales), axis=-1))[None, :]


def gaussian_shapes(head_dim, num_features):
    """Shapes of the (blocks, scales) Gaussians `orthogonal_random_features` takes."""
    return (-(-num_features // head_dim), head_dim, head_dim), (num_features, head_dim)


def exp_kernel(q, k, mask, features, scale):
    """FAVOR+ positive softmax features of q and k (both scaled by `scale`), each stabilised.

    Factors shared by all features of one query (exp(-|q|^2 / 2), its shift, 1 / sqrt(m)) or of
    all keys of a (batch, head) (their shift, 1 / sqrt(m)) cancel between the numerator and the
    denominator, so they are left out or folded into one [length, 1] offset instead of passes over
    the [batch, heads, length, num_features] maps (the form with those passes took 1.05x this
    one's time: archive/efficiency/performer_feature_passes.py). Each stabilised feature
    then gets FEATURE_STABILISER. Padded keys get an offset of 1e9 (so their exp never overflows)
    and zero features (also in a sequence without any real key).
    """
    features = features * scale
    q_logits = ops.matmul(q, features)
    q_max = ops.max(q_logits, axis=-1, keepdims=True)
    k_logits = ops.matmul(k, features)
    half_square = (0.5 * scale**2) * ops.sum(ops.square(k), axis=-1, keepdims=True)
    real = mask[:, None, :, None]
    key_max = ops.max(k_logits, axis=-1, keepdims=True) - half_square
    k_max = ops.max(ops.where(real, key_max, aops.NEG_INF), axis=2, keepdims=True)
    k_offset = half_square + ops.stop_gradient(ops.where(real, k_max, -aops.NEG_INF))
    q_features = ops.exp(q_logits - ops.stop_gradient(q_max)) + FEATURE_STABILISER
    k_features = ops.exp(k_logits - k_offset) + FEATURE_STABILISER
    return q_features, aops.zero_padding(k_features, mask)


def relu_kernel(q, k, mask, features, scale):
    """Generalised-attention ReLU features relu(w . x) / sqrt(m) + eps of q and k (scaled by
    `scale`); padded keys get zero features."""
    features = features * (scale * features.shape[-1] ** -0.5)
    q_features, k_features = (ops.relu(ops.matmul(x, features)) + RELU_EPSILON for x in (q, k))
    return q_features, aops.zero_padding(k_features, mask)


KERNELS = {"exp": exp_kernel, "relu": relu_kernel}


@register("performer")
class PerformerAttention(Attention):
    """FAVOR+ attention with positive orthogonal random features, linear in length.

    Args:
        num_features: number of random features m (default 256).
        kernel: "exp" (FAVOR+ approximation of softmax) or "relu" (generalised attention).
        redraw: draw new features on every training call (never at inference).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, seed, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("performer", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Choromanski et al., 2021, "Rethinking Attention with Performers",
            arXiv:2009.14794; github.com/google-research/google-research (performer/).
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Choromanski et al. (2021), Rethinking Attention with Performers"
    complexity = "O(L m d)"

    def __init__(self, num_features=256, kernel="exp", redraw=False, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.num_features = checks.positive_int(owner, "num_features", num_features)
        self.kernel = checks.one_of(owner, "kernel", kernel, tuple(KERNELS))
        self.redraw = checks.boolean(owner, "redraw", redraw)
        self.redraw_seed = keras.random.SeedGenerator(self.seed) if redraw else None

    def build_mechanism(self, input_shape):
        self.features = self.add_weight(
            name="features",
            shape=(self.head_dim, self.num_features),
            initializer=lambda shape, dtype: self._initial_features(),
            dtype="float32",
            trainable=False,
            autocast=False,
            # A redraw under a distribution strategy keeps the first replica's draw.
            aggregation="only_first_replica",
        )

    def _initial_features(self):
        rng = np.random.default_rng(self.seed)
        shapes = gaussian_shapes(self.head_dim, self.num_features)
        return orthogonal_random_features(*map(rng.standard_normal, shapes), np).astype("float32")

    def _redrawn_features(self):
        shapes = gaussian_shapes(self.head_dim, self.num_features)
        gaussians = [keras.random.normal(shape, seed=self.redraw_seed) for shape in shapes]
        features = orthogonal_random_features(*gaussians, ops)
        self.features.assign(features)
        return features

    def attend(self, q, k, v, mask, training=False):
        features = self._redrawn_features() if training and self.redraw else self.features
        q, k = (ops.cast(x, "float32") for x in (q, k))
        q_features, k_features = KERNELS[self.kernel](q, k, mask, features, self.head_dim**-0.25)
        attended = kernel_attention(q_features, k_features, v, mask, DENOMINATOR_FLOOR)
        return ops.cast(attended, v.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(num_features=self.num_features, kernel=self.kernel, redraw=self.redraw)
        return config
