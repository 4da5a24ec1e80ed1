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
            aops.merge_blocks(slice_axis(t, 3, first_summary, self.summary_size)) for t in (kb, vb)
        ]
        allowed = (real_blocks[:, None, :, None, :], self._summary_allowed(real_blocks))
        attended = attend_blocks_and_shared(
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


def attend_blocks_and_shared(qb, block_kv, shared_kv, allowed, dropout):
    """Softmax attention of each query block over its own keys plus keys that every block shares.

    One softmax over the m + s keys of each query, computed in two parts (no concatenated
    [n, b, m + s] copy); the shared logits are one [n b, s] product, cut into blocks afterwards
    (no per-block copy of the shared keys). In float32, like `masked_softmax`, whose values it
    gives (excluded keys get NEG_INF). Each big temporary is rebound as soon as it is used, so
    that eager mode frees it (at long lengths the shared part is the largest tensor).

    Args:
        qb: scaled queries [batch, heads, n, b, d].
        block_kv: (keys, values) [batch, heads, n, m, d], the m keys of each query block.
        shared_kv: (keys, values) [batch, heads, s, d], seen by every query block.
        allowed: (bool broadcastable to [batch, heads, n, b, m], to [batch, heads, n, b, s]).
        dropout: callable applied to the attention weights.

    Returns:
        [batch, heads, n * b, d].
    """
    own = _masked(ops.matmul(qb, ops.swapaxes(block_kv[0], -1, -2)), allowed[0])
    shared = ops.matmul(aops.merge_blocks(qb), ops.swapaxes(shared_kv[0], -1, -2))
    shared = _masked(ops.reshape(shared, ops.shape(qb)[:4] + (-1,)), allowed[1])
    # Any per-row constant gives the same softmax: no gradient flows through the max.
    top = ops.stop_gradient(ops.maximum(_row_max(own), _row_max(shared)))
    own, shared = own - top, shared - top
    own, shared = ops.exp(own), ops.exp(shared)
    # One small reciprocal, then products: a division of the big parts is slower, twice in backward.
    inverse = 1 / (ops.sum(own, axis=-1, keepdims=True) + ops.sum(shared, axis=-1, keepdims=True))
    own = ops.matmul(dropout(ops.cast(own * inverse, qb.dtype)), block_kv[1])
    shared = dropout(ops.cast(shared * inverse, qb.dtype))
    return aops.merge_blocks(own) + ops.matmul(aops.merge_blocks(shared), shared_kv[1])


def _row_max(logits):
    """Max over the last axis; NEG_INF for an empty axis (no shared keys), as for all-masked."""
    return ops.max(logits, axis=-1, keepdims=True, initial=aops.NEG_INF)


def _masked(logits, allowed):
    """Logits in float32 with the excluded keys set to NEG_INF."""
    return ops.where(allowed, ops.cast(logits, "float32"), aops.NEG_INF)


def slice_axis(x, axis, start, size):
    """x[..., start:start + size, ...] along `axis`, as a plain slice.

    A strided slice (`x[:, :, a:b]`) has a gradient (StridedSliceGrad) about 20x slower on this CPU
    than the plain slice's (a Pad); at 4K tokens it was most of Longformer's backward pass.
    """
    starts, sizes = [0] * len(x.shape), [-1] * len(x.shape)
    starts[axis], sizes[axis] = start, size
    return ops.slice(x, starts, sizes)
