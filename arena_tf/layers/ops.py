"""Small tensor helpers shared by the mechanisms; all in `keras.ops`, all exportable by tf2onnx.

Shapes: q, k, v are [batch, heads, length, head_dim]; masks are bool [batch, length], True = real.
"""

from keras import backend, ops

# Logit given to excluded keys: finite, so a row with no allowed key stays finite (uniform).
NEG_INF = -1e9


def masked_softmax(logits, allowed, dtype):
    """Softmax over the last axis in float32, with `allowed` (broadcastable bool) False excluded;
    allowed=None excludes nothing."""
    logits = ops.cast(logits, "float32")
    if allowed is not None:
        logits = ops.where(allowed, logits, NEG_INF)
    return ops.cast(ops.softmax(logits, axis=-1), dtype)


def key_mask(mask):
    """[batch, length] -> [batch, 1, 1, length], to broadcast over heads and queries."""
    return mask[:, None, None, :]


def zero_padding(x, mask):
    """Zero the padded positions of x [batch, heads, length, dim]."""
    return x * ops.cast(mask[:, None, :, None], x.dtype)


def pad_to_multiple(x, multiple, axis, value=0):
    """Pad x at the end of `axis` to a multiple of `multiple` (works for dynamic lengths)."""
    length = ops.shape(x)[axis]
    widths = [[0, 0] for _ in range(len(x.shape))]
    # (m - L % m) % m, not (-L) % m: the exported graph's modulo may truncate towards zero.
    widths[axis] = [0, (multiple - length % multiple) % multiple]
    return ops.pad(x, widths, constant_values=value)


def split_blocks(x, block):
    """[batch, heads, length, dim] (length a multiple of block) -> [batch, heads, n, block, dim]."""
    shape = ops.shape(x)
    return ops.reshape(x, (shape[0], shape[1], -1, block, shape[3]))


def merge_blocks(x):
    """[batch, heads, n, block, dim] -> [batch, heads, n * block, dim].

    n * block, not -1: JAX cannot infer a -1 size when dim is 0 (no shared keys).
    """
    shape = ops.shape(x)
    return ops.reshape(x, (shape[0], shape[1], shape[2] * shape[3], shape[4]))


def blocked(q, k, v, mask, block):
    """Pad q, k, v and the mask to a multiple of `block` and split them into blocks.

    Returns (qb, kb, vb, mask_blocks) with mask_blocks [batch, n, block]; padded positions are
    marked False, so they are excluded as keys like any other padding.
    """
    qb, kb, vb = (
        None if t is None else split_blocks(pad_to_multiple(t, block, axis=2), block)
        for t in (q, k, v)
    )
    padded_mask = pad_to_multiple(mask, block, axis=1, value=False)
    return qb, kb, vb, ops.reshape(padded_mask, (ops.shape(mask)[0], -1, block))


def cut_to_length(x, length):
    """Undo `pad_to_multiple` on the length axis of [batch, heads, length, dim]."""
    return slice_axis(x, 2, 0, length)


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
    own = masked_logits(ops.matmul(qb, ops.swapaxes(block_kv[0], -1, -2)), allowed[0])
    shared = ops.matmul(merge_blocks(qb), ops.swapaxes(shared_kv[0], -1, -2))
    shared = masked_logits(ops.reshape(shared, ops.shape(qb)[:4] + (-1,)), allowed[1])
    # Any per-row constant gives the same softmax: no gradient flows through the max.
    top = ops.stop_gradient(ops.maximum(row_max(own), row_max(shared)))
    own, shared = own - top, shared - top
    own, shared = ops.exp(own), ops.exp(shared)
    # One small reciprocal, then products: a division of the big parts is slower, twice in backward.
    inverse = 1 / (ops.sum(own, axis=-1, keepdims=True) + ops.sum(shared, axis=-1, keepdims=True))
    own = ops.matmul(dropout(ops.cast(own * inverse, qb.dtype)), block_kv[1])
    shared = dropout(ops.cast(shared * inverse, qb.dtype))
    return merge_blocks(own) + ops.matmul(merge_blocks(shared), shared_kv[1])


def row_max(logits):
    """Max over the last axis; NEG_INF for an empty axis (no shared keys), as for all-masked."""
    return ops.max(logits, axis=-1, keepdims=True, initial=NEG_INF)


def masked_logits(logits, allowed):
    """Logits in float32 with the excluded keys set to NEG_INF."""
    return ops.where(allowed, ops.cast(logits, "float32"), NEG_INF)


def slice_axis(x, axis, start, size):
    """x[..., start:start + size, ...] along `axis`, as a plain slice.

    A strided slice (`x[:, :, a:b]`) has a gradient (StridedSliceGrad) about 20x slower on this CPU
    than the plain slice's (a Pad); at 4K tokens it was most of Longformer's backward pass.
    """
    starts, sizes = [0] * len(x.shape), [-1] * len(x.shape)
    starts[axis], sizes[axis] = start, size
    return ops.slice(x, starts, sizes)


def complex_exp(real, imag):
    """exp(real + i imag) as (real part, imag part), for real tensors of one dtype.

    In float64 (the oracle tests' layers), through the complex exponential: Keras' JAX backend
    computes ops.cos and ops.sin of float64 in float32 (its type promotion maps 64-bit types to
    32 bits), ops.exp keeps the dtype on every backend. Other dtypes stay real (ONNX has no
    complex type).
    """
    modulus = ops.exp(real)
    if backend.standardize_dtype(imag.dtype) == "float64":
        turn = ops.exp(ops.cast(imag, "complex128") * 1j)
        return modulus * ops.real(turn), modulus * ops.imag(turn)
    return modulus * ops.cos(imag), modulus * ops.sin(imag)
