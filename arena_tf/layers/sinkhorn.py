"""Sparse Sinkhorn attention (Tay et al., 2020, "Sparse Sinkhorn Attention").

The sequence is cut into n = L / b contiguous blocks. A sorting network scores every block against
every other block; Sinkhorn normalisation turns the scores into a soft permutation P [n, n] (rows
and columns sum to one over the real blocks). Each query block i then attends to its own key block
and to its sorted counterpart, the P-weighted mixture of key and value blocks sum_j P[i, j] K_j,
one softmax over the 2b keys.

Sorting network (our choice among the paper's options): block summaries are the mean of the real
keys of each block, s_i; the block-to-block logits are R[i, j] = (s_i W) . s_j / sqrt(d) with a
learned W [heads, head_dim, head_dim]. Content against content, so it serves any length with no
weight sized by max_len. Log-space Sinkhorn: log P = row_normalise((R + g) / temperature), then
`sinkhorn_iters` rounds of column then row normalisation (so rows always sum to one, and zero
iterations is a row softmax); g is Gumbel noise in training only, none at inference.

Padding: padded keys never count. Blocks made only of padding are masked out of the rows and columns
of the Sinkhorn normalisation, so they take no part in the sort. In the mixture, slot t of the
sorted block averages the real keys at position t of the blocks P picks, weighted by P, and its
logit gets log(coverage), coverage = sum_j P[i, j] [position t of block j is real]; a slot with
coverage below 1e-6 is excluded. With a hard P this is exactly "own block plus picked block".
Unlike the LRA reference, which summed the sorted blocks (so the sort had no effect), the sort here
decides which keys every block sees.

Cost per head: O(L b d) for the block attention, O(n^2 d) for the sort matrix (n^2 is tiny: 82^2
at L = 4096, b = 50), and O(n^2 b d) = O(L n d) for the soft mixture P @ K, one matmul of the
[n, n] matrix with the key and value blocks as [n, b d]. Memory O(L b + n^2 + L d).

    layer = arena_tf.layers.get("sinkhorn", num_heads=4, head_dim=32, block_size=50)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import keras
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register

# A sorted-block slot covering less of P's mass than this is excluded (its weight would be below
# this fraction anyway, through the log-coverage bias).
MIN_COVERAGE = 1e-6


@register("sinkhorn")
class SinkhornAttention(Attention):
    """Block attention to the own block and a Sinkhorn-sorted mixture of blocks.

    Args:
        block_size: length b of the contiguous blocks.
        sinkhorn_iters: rounds of column then row normalisation after the first row softmax.
        temperature: divides the sort logits; low values make P closer to a hard permutation.
        **kwargs: arguments of `arena_tf.layers.base.Attention`.

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("sinkhorn", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Tay et al., 2020, "Sparse Sinkhorn Attention", arXiv:2002.11296.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Tay et al. (2020), Sparse Sinkhorn Attention"
    complexity = "O(L b d + L n d), n = L / b"

    def __init__(self, block_size=50, sinkhorn_iters=5, temperature=0.75, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.block_size = checks.positive_int(owner, "block_size", block_size)
        self.sinkhorn_iters = checks.non_negative_int(owner, "sinkhorn_iters", sinkhorn_iters)
        self.temperature = checks.positive_float(owner, "temperature", temperature)
        self.noise_seed = keras.random.SeedGenerator(self.seed)

    def build_mechanism(self, input_shape):
        self.sort_kernel = self.add_weight(
            name="sort_kernel",
            shape=(self.num_heads, self.head_dim, self.head_dim),
            initializer=keras.initializers.RandomNormal(stddev=self.head_dim**-0.5, seed=self.seed),
        )

    # -- the sort -------------------------------------------------------------------------------

    def sort_logits(self, key_blocks, mask_blocks):
        """R [batch, heads, n, n] in float32 from the mean real key of each block."""
        real = ops.cast(mask_blocks, "float32")[:, None, :, :, None]
        sums = ops.sum(ops.cast(key_blocks, "float32") * real, axis=3)
        summaries = sums / ops.maximum(ops.sum(real, axis=3), 1.0)
        # einsum, not a broadcast matmul: TF 2.20's oneDNN matmul corrupts memory broadcasting a
        # [heads, d, d] weight over [batch > 1, 1 head, n, d] (a crash with one head).
        projected = ops.einsum("bhnd,hde->bhne", summaries, ops.cast(self.sort_kernel, "float32"))
        return ops.matmul(projected, ops.swapaxes(summaries, -1, -2)) * self.head_dim**-0.5

    def sort_matrix(self, key_blocks, mask_blocks, training=False):
        """Soft permutation P [batch, heads, n, n] in float32; zero on rows / columns of padding."""
        real_block = ops.any(mask_blocks, axis=-1)
        pairs = ops.logical_and(real_block[:, None, :, None], real_block[:, None, None, :])
        logits = self.sort_logits(key_blocks, mask_blocks)
        if training:
            logits = logits + self._gumbel(ops.shape(logits))
        log_p = _normalise(logits / self.temperature, pairs, axis=-1)
        for _ in range(self.sinkhorn_iters):
            log_p = _normalise(_normalise(log_p, pairs, axis=-2), pairs, axis=-1)
        return ops.where(pairs, ops.exp(log_p), 0.0)

    def _gumbel(self, shape):
        uniform = keras.random.uniform(shape, minval=1e-9, maxval=1.0, seed=self.noise_seed)
        return -ops.log(-ops.log(uniform))

    # -- attention ------------------------------------------------------------------------------

    def attend(self, q, k, v, mask, training=False):
        length = ops.shape(q)[2]
        qb, kb, vb, mask_blocks = aops.blocked(q, k, v, mask, self.block_size)
        perm = self.sort_matrix(kb, mask_blocks, training)
        sorted_k, sorted_v, coverage = self._mixture(perm, kb, vb, mask_blocks)
        keys = ops.concatenate([kb, sorted_k], axis=3)
        values = ops.concatenate([vb, sorted_v], axis=3)
        own = ops.broadcast_to(ops.cast(mask_blocks, "float32")[:, None], ops.shape(coverage))
        coverage = ops.concatenate([own, coverage], axis=-1)[:, :, :, None, :]
        allowed = coverage > MIN_COVERAGE
        logits = ops.matmul(qb * self.head_dim**-0.5, ops.swapaxes(keys, -1, -2))
        logits = ops.cast(logits, "float32") + ops.log(ops.where(allowed, coverage, 1.0))
        weights = aops.masked_softmax(logits, allowed, q.dtype)
        attended = ops.matmul(self.dropout_weights(weights, training), values)
        return aops.cut_to_length(aops.merge_blocks(attended), length)

    def _mixture(self, perm, key_blocks, value_blocks, mask_blocks):
        """P-weighted mean of the real keys and values per slot, and the coverage of each slot."""
        real = ops.cast(mask_blocks, "float32")
        coverage = ops.matmul(perm, real[:, None])
        safe = ops.where(coverage > MIN_COVERAGE, coverage, 1.0)[..., None]
        both = ops.concatenate([key_blocks, value_blocks], axis=-1)
        both = ops.cast(both, "float32") * real[:, None, :, :, None]
        shape = ops.shape(both)
        flat = ops.reshape(both, (shape[0], shape[1], shape[2], -1))
        mixed = ops.reshape(ops.matmul(perm, flat), shape) / safe
        mixed = ops.cast(mixed, key_blocks.dtype)
        # Plain slices: a strided slice's gradient is a slow scatter on CPU (see ops.slice_axis).
        keys, values = (
            aops.slice_axis(mixed, 4, start, self.head_dim) for start in (0, self.head_dim)
        )
        return keys, values, coverage

    def get_config(self):
        config = super().get_config()
        config.update(
            block_size=self.block_size,
            sinkhorn_iters=self.sinkhorn_iters,
            temperature=self.temperature,
        )
        return config


def _normalise(log_p, pairs, axis):
    """Log-space normalisation along `axis` over the real block pairs; the rest stays NEG_INF."""
    log_p = ops.where(pairs, log_p, aops.NEG_INF)
    return ops.where(pairs, log_p - ops.logsumexp(log_p, axis=axis, keepdims=True), aops.NEG_INF)
