"""Reformer LSH attention (Kitaev, Kaiser and Levskaya 2020, "Reformer: The Efficient Transformer").

Queries and keys are shared: the keys are the queries normalised to unit length, and there is no
key projection. Each of `n_hashes` rounds hashes every token with a fixed random rotation R
(bucket = argmax([xR, -xR]) over `n_buckets` buckets), sorts the tokens by (bucket, position),
cuts the sorted sequence into chunks of `chunk_size` and lets each chunk attend to itself and to
the previous chunk. Within that window a query sees only keys of its own bucket, and sees itself
only when nothing else is available (its own logit is set to -1e5, above the -1e9 of excluded
keys). The rounds are combined with weights softmax(logsumexp of each round's logits).

Padding: padded tokens are put in an extra bucket after every real one, and the first chunk does
not look back to the last. Appending padding therefore never changes which real tokens share a
chunk, and outputs at real positions are invariant to it. Logits are divided by sqrt(head_dim)
(the LRA code multiplied by it). The rotations are drawn once from `seed` with NumPy and stored
as a non-trainable weight, so the exported graph holds no random op.

Cost per head, with h = n_hashes rounds and chunk c: O(L c h d) for the attention, plus the sort,
O(h L log L).

    layer = arena_tf.layers.get("reformer", num_heads=4, head_dim=64, n_hashes=2, n_buckets=32,
                                chunk_size=64)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import numpy as np
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register

# Logit of a query for itself: it wins only over excluded keys (ops.NEG_INF), so a token attends
# to itself only when no other key of its bucket is in its window.
SELF_LOGIT = -1e5

# Bucket given to the look-back of the first chunk: no query has it, so nothing wraps around.
NO_BUCKET = -1


# Sizes below are passed in rather than read back with ops.shape from reshaped tensors: tf2onnx
# folds the shape of a Reshape into its target shape, -1 included, which breaks dynamic lengths.


def gather_rows(x, index, groups, rows):
    """Rows of x (groups * rows rows of width x.shape[-1]) picked per group by index
    [groups, picks] (positions within the group), as one gather: [groups * picks, width]."""
    offsets = ops.reshape(ops.arange(groups, dtype="int32") * rows, (groups, 1))
    flat = ops.reshape(index, (groups, -1)) + offsets
    return ops.take(ops.reshape(x, (-1, x.shape[-1])), ops.reshape(flat, (-1,)), axis=0)


def with_previous_chunk(x, first, chunks):
    """x [b, h, rounds, chunks, c, ...] -> [b, h, rounds, chunks, 2c, ...]: each chunk followed by
    the previous one; the first chunk's previous is filled with `first` (no wrap-around).

    `ops.slice` rather than indexing: its gradient is a cheap pad, a strided slice's is not."""
    start = [0] * len(x.shape)
    chunks = [-1, -1, -1, chunks - 1] + [-1] * (len(x.shape) - 4)
    head = ops.full_like(ops.slice(x, start, chunks[:3] + [1] + chunks[4:]), first)
    previous = ops.concatenate([head, ops.slice(x, start, chunks)], axis=3)
    return ops.concatenate([x, previous], axis=4)


def round_weights(lse):
    """softmax over the rounds axis (2) of [b, h, rounds, L] log-sum-exps, as [b, h, rounds, L, 1].

    Max-shifted, so rounds where a token was alone (lse = SELF_LOGIT) weigh exactly 1/rounds
    between themselves (exp(lse - logsumexp(lse)) loses that to float32 rounding near 1e5), and
    without ops.softmax's warning about an axis of size 1 when n_hashes is 1."""
    weights = ops.exp(lse - ops.max(lse, axis=2, keepdims=True))
    return (weights / ops.sum(weights, axis=2, keepdims=True))[..., None]


@register("reformer")
class ReformerAttention(Attention):
    """LSH attention: shared query/key, hashed into buckets, sorted, chunked; see the module doc.

    Args:
        n_hashes: hashing rounds, combined by their log-sum-exp weights.
        n_buckets: buckets per round (even: half from xR, half from -xR).
        chunk_size: tokens per chunk of the sorted sequence; each chunk also sees the previous one.

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("reformer", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Kitaev, Kaiser and Levskaya, 2020, "Reformer: The Efficient Transformer",
            arXiv:2001.04451; github.com/google/trax.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    quadratic = False
    paper = "Kitaev et al. (2020), Reformer: The Efficient Transformer"
    complexity = "O(L c h d + h L log L)"
    projections = ("query", "value")

    def __init__(self, n_hashes=2, n_buckets=32, chunk_size=64, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.n_hashes = checks.positive_int(owner, "n_hashes", n_hashes)
        self.n_buckets = checks.positive_int(owner, "n_buckets", n_buckets)
        if self.n_buckets % 2:
            raise ValueError(
                f"{owner}: n_buckets={n_buckets!r} is invalid; expected an even positive integer "
                "(buckets come in pairs: xR and -xR)"
            )
        self.chunk_size = checks.positive_int(owner, "chunk_size", chunk_size)
        if self.max_len is not None:
            self.check_sort_key(self.max_len, f"max_len={self.max_len}")

    def check_sort_key(self, length, named):
        """A ValueError where sequences of `length` (`named` in the message) overflow the int32
        sort key (n_buckets + 1) * (length + chunk_size)."""
        if (self.n_buckets + 1) * (length + self.chunk_size) >= 2**31:
            raise ValueError(
                f"{type(self).__name__}: n_buckets={self.n_buckets} with {named} overflows the "
                "int32 sort key (n_buckets + 1) * (length + chunk_size); use fewer buckets or "
                "shorter sequences"
            )

    def build_mechanism(self, input_shape):
        shape = (self.head_dim, self.n_hashes, self.n_buckets // 2)
        drawn = np.random.default_rng(self.seed).normal(size=shape).astype("float32")
        self.rotations = self.add_weight(
            name="rotations",
            shape=shape,
            initializer=lambda shape, dtype=None: ops.convert_to_tensor(drawn, dtype=dtype),
            trainable=False,
            autocast=False,
            dtype="float32",
        )

    def attend(self, q, k, v, mask, training=False):
        length = ops.shape(q)[2]
        if q.shape[2] is not None:
            self.check_sort_key(q.shape[2], f"sequences of {q.shape[2]} tokens")
        q, v = (aops.pad_to_multiple(t, self.chunk_size, axis=2) for t in (q, v))
        mask = aops.pad_to_multiple(mask, self.chunk_size, axis=1, value=False)
        sizes = tuple(ops.shape(q)[:3])
        padded = sizes[2]
        # The keys are distinct, so sorting them is the stable sort by (bucket, position), and the
        # sorted keys carry the permutation (key % L) and the sorted buckets (key // L).
        sorted_keys = ops.sort(self._sort_keys(q, mask, sizes), axis=-1)
        order = sorted_keys % padded
        outputs, lse = self._attend_sorted(q, v, order, sorted_keys // padded, sizes, training)
        outputs, lse = self._unsort(outputs, lse, order, sizes)
        combined = ops.sum(ops.cast(outputs, "float32") * round_weights(lse), axis=2)
        return aops.cut_to_length(ops.cast(combined, q.dtype), length)

    # -- hashing and sorting -------------------------------------------------------------------

    def _buckets(self, q, mask, sizes):
        """Bucket of every token in every round, [b, h, rounds, L]; padding in bucket n_buckets."""
        rotations = ops.reshape(self.rotations, (self.head_dim, -1))
        rotated = ops.matmul(ops.cast(q, "float32"), rotations)
        rotated = ops.reshape(rotated, sizes + (self.n_hashes, -1))
        # argmax as top-1: keras's float argmax emits a Bitcast that ONNX Runtime cannot load.
        _, buckets = ops.top_k(ops.concatenate([rotated, -rotated], axis=-1), k=1)
        buckets = ops.transpose(ops.cast(buckets[..., 0], "int32"), (0, 1, 3, 2))
        return ops.where(mask[:, None, None, :], buckets, self.n_buckets)

    def _sort_keys(self, q, mask, sizes):
        """bucket * L + position, [b, h, rounds, L]: sorting it sorts by (bucket, position)."""
        padded = sizes[2]
        positions = ops.arange(padded, dtype="int32")
        return self._buckets(q, mask, sizes) * ops.cast(padded, "int32") + positions

    # -- chunked attention in sorted order -----------------------------------------------------

    def _attend_sorted(self, q, v, order, buckets, sizes, training):
        """Attention within sorted chunks: outputs [b, h, rounds, chunks, c, d] and float32
        logsumexp [b, h, rounds, chunks, c, 1], both in sorted order."""
        batch, heads, padded = sizes
        chunks = padded // self.chunk_size
        chunked = (batch, heads, self.n_hashes, chunks, self.chunk_size)

        def sort_and_chunk(x):
            rows = gather_rows(x, order, batch * heads, padded)
            return ops.reshape(rows, chunked + (self.head_dim,))

        queries, values = sort_and_chunk(q), sort_and_chunk(v)
        keys = ops.cast(self._unit_length(queries), q.dtype)
        keys, values = (with_previous_chunk(t, 0, chunks) for t in (keys, values))
        logits = ops.matmul(queries * self.head_dim**-0.5, ops.swapaxes(keys, -1, -2))
        positions, buckets = (ops.reshape(t, chunked) for t in (order, buckets))
        logits = self._masked_logits(logits, positions, buckets, chunks)
        lse = ops.logsumexp(logits, axis=-1, keepdims=True)
        weights = self.dropout_weights(ops.cast(ops.exp(logits - lse), v.dtype), training)
        return ops.matmul(weights, values), lse

    @staticmethod
    def _unit_length(q):
        """Keys: the queries scaled to unit length, in float32."""
        q = ops.cast(q, "float32")
        return q * ops.rsqrt(ops.sum(ops.square(q), axis=-1, keepdims=True) + 1e-12)

    @staticmethod
    def _masked_logits(logits, positions, buckets, chunks):
        """float32 logits [.., c, 2c]: other buckets' keys excluded, own logit set to SELF_LOGIT."""
        key_positions = with_previous_chunk(positions, -1, chunks)
        key_buckets = with_previous_chunk(buckets, NO_BUCKET, chunks)
        same_bucket = buckets[..., :, None] == key_buckets[..., None, :]
        itself = positions[..., :, None] == key_positions[..., None, :]
        replacement = ops.where(itself, SELF_LOGIT, aops.NEG_INF)
        return ops.where(same_bucket & ~itself, ops.cast(logits, "float32"), replacement)

    def _unsort(self, outputs, lse, order, sizes):
        """Sorted chunks back to the original order, [b, h, rounds, L, d] and [b, h, rounds, L],
        with the inverse permutation (argsort of the sort)."""
        batch, heads, padded = sizes
        rounds = (batch, heads, self.n_hashes, padded)
        undo = ops.argsort(order, axis=-1)
        groups = batch * heads * self.n_hashes
        outputs = gather_rows(outputs, undo, groups, padded)
        lse = gather_rows(lse, undo, groups, padded)
        return ops.reshape(outputs, rounds + (self.head_dim,)), ops.reshape(lse, rounds)

    def get_config(self):
        config = super().get_config()
        config.update(n_hashes=self.n_hashes, n_buckets=self.n_buckets, chunk_size=self.chunk_size)
        return config
