"""Exact softmax attention without the length x length matrix (memory-efficient attention:
Rabe & Staats 2021, "Self-attention Does Not Need O(n^2) Memory"; the online softmax and the
recomputing backward of Dao et al. 2022, FlashAttention), in keras.ops for every backend.

The keys and values go in blocks of `block_size`. The forward pass keeps, per query, the running
maximum m, the running normaliser l and the running weighted sum of values, rescaling them as each
block arrives (the online softmax); it returns the output O and the log-sum-exp L = m + log l. The
backward pass is written by hand (`ops.custom_gradient`) and recomputes each block's weights
P = exp(q k^T - L) from q, k and L instead of storing them:

    dV_j = P_j^T dO,   dS_j = P_j * (dO V_j^T - rowsum(dO * O)),
    dQ = sum_j dS_j K_j,   dK_j = dS_j^T Q

so what training keeps between the passes is O(L d) (q, k, v, O, L), and the largest temporary is
one [queries, block_size] block per head. Everything is computed in float32 (also under mixed
precision) and equals dense softmax attention to float32 rounding, gradients included
(tests/layers/test_blockwise.py). Padded keys are excluded; a query without any real key gets
zeros, as the dense form gives.
"""

from keras import ops

from arena_tf.layers import ops as aops

# A finite "minus infinity": exp(NEG - m) is 0 in float32 and NEG - NEG stays finite.
NEG = -1e30


def blocks(x, block_size):
    """[batch, heads, length, d] -> [blocks, batch, heads, block_size, d], the length padded with
    zeros to a multiple of block_size."""
    batch, heads, _, width = (ops.shape(x)[i] for i in range(4))
    padded = aops.pad_to_multiple(x, block_size, axis=2)
    split = ops.reshape(padded, (batch, heads, -1, block_size, width))
    return ops.transpose(split, (2, 0, 1, 3, 4))


def key_keep(mask, like, block_size):
    """1.0 for a real key, 0.0 for padding (and for the block padding), as [blocks, batch, 1,
    1, block_size] float32; from `mask` [batch, keys] (None: every key real)."""
    batch, length = ops.shape(like)[0], ops.shape(like)[2]
    keep = ops.ones((batch, length), "float32") if mask is None else ops.cast(mask, "float32")
    keep = aops.pad_to_multiple(keep, block_size, axis=1)
    keep = ops.reshape(keep, (batch, -1, 1, 1, block_size))
    return ops.transpose(keep, (1, 0, 2, 3, 4))


def block_scores(q, k_block, keep_block):
    """q k^T of one block with padded keys at NEG: [batch, heads, queries, block_size]."""
    scores = ops.matmul(q, ops.swapaxes(k_block, -1, -2))
    return ops.where(keep_block > 0, scores, NEG)


def forward(q, k_blocks, v_blocks, keep):
    """(O, L): the attention output and each query's log-sum-exp, by the online softmax."""
    shape = ops.shape(q)
    start = (
        ops.full((*shape[:3], 1), NEG, "float32"),
        ops.zeros((*shape[:3], 1), "float32"),
        ops.zeros(shape, "float32"),
    )

    def step(carry, block):
        running_max, normaliser, total = carry
        k_block, v_block, keep_block = block
        scores = block_scores(q, k_block, keep_block)
        new_max = ops.maximum(running_max, ops.max(scores, axis=-1, keepdims=True))
        weights = ops.exp(scores - new_max) * keep_block
        rescale = ops.exp(running_max - new_max)
        return (
            new_max,
            normaliser * rescale + ops.sum(weights, axis=-1, keepdims=True),
            total * rescale + ops.matmul(weights, v_block),
        ), None

    (running_max, normaliser, total), _ = ops.scan(step, start, (k_blocks, v_blocks, keep))
    safe = ops.maximum(normaliser, 1e-30)
    return total / safe, running_max + ops.log(safe)


def backward(q, k_blocks, v_blocks, keep, out, log_sum, upstream):
    """(dq, dk blocks, dv blocks), recomputing each block's weights from the log-sum-exp."""
    row_dot = ops.sum(upstream * out, axis=-1, keepdims=True)

    def step(index, carry):
        dq, dk_blocks, dv_blocks = carry
        k_block, v_block, keep_block = (
            ops.take(x, index, axis=0) for x in (k_blocks, v_blocks, keep)
        )
        weights = ops.exp(block_scores(q, k_block, keep_block) - log_sum) * keep_block
        d_scores = weights * (ops.matmul(upstream, ops.swapaxes(v_block, -1, -2)) - row_dot)
        at = (index, 0, 0, 0, 0)
        return (
            dq + ops.matmul(d_scores, k_block),
            ops.slice_update(dk_blocks, at, ops.matmul(ops.swapaxes(d_scores, -1, -2), q)[None]),
            ops.slice_update(
                dv_blocks, at, ops.matmul(ops.swapaxes(weights, -1, -2), upstream)[None]
            ),
        )

    # a loop writing each block's dk and dv in place (Keras' TensorFlow scan, 3.15, stacks
    # per-step outputs only of the carry's shape)
    start = (ops.zeros_like(q), ops.zeros_like(k_blocks), ops.zeros_like(v_blocks))
    return ops.fori_loop(0, ops.shape(k_blocks)[0], step, start)


def unblocks(x_blocks, length):
    """The inverse of `blocks`, cut back to `length`."""
    batch, heads, width = (ops.shape(x_blocks)[i] for i in (1, 2, 4))
    joined = ops.reshape(ops.transpose(x_blocks, (1, 2, 0, 3, 4)), (batch, heads, -1, width))
    return joined[:, :, :length]


def blockwise_attention(q, k, v, mask=None, block_size=512):
    """softmax(q k^T) v over the real keys, q already scaled; q [batch, heads, queries, d], k and
    v [batch, heads, keys, d], mask bool [batch, keys] or None. Returns float32 [batch, heads,
    queries, d_v]; gradients reach q, k and v."""
    length = ops.shape(k)[2]
    keep = key_keep(mask, k, block_size)

    dtypes = [x.dtype for x in (q, k, v)]

    @ops.custom_gradient
    def attend(q, k, v):
        q, k, v = (ops.cast(x, "float32") for x in (q, k, v))
        k_blocks, v_blocks = blocks(k, block_size), blocks(v, block_size)
        out, log_sum = forward(q, k_blocks, v_blocks, keep)

        def grad(*args, upstream=None):
            upstream = ops.cast(args[0] if upstream is None else upstream, "float32")
            dq, dk_blocks, dv_blocks = backward(q, k_blocks, v_blocks, keep, out, log_sum, upstream)
            grads = dq, unblocks(dk_blocks, length), unblocks(dv_blocks, length)
            return tuple(ops.cast(g, dtype) for g, dtype in zip(grads, dtypes))

        return out, grad

    return attend(q, k, v)
