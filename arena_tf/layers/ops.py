"""Small tensor helpers shared by the mechanisms; all in `keras.ops`, all exportable by tf2onnx.

Shapes: q, k, v are [batch, heads, length, head_dim]; masks are bool [batch, length], True = real.
"""

from keras import ops

# Logit given to excluded keys: finite, so a row with no allowed key stays finite (uniform).
NEG_INF = -1e9


def masked_softmax(logits, allowed, dtype):
    """Softmax over the last axis in float32, with `allowed` (broadcastable bool) False excluded."""
    logits = ops.where(allowed, ops.cast(logits, "float32"), NEG_INF)
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
    """[batch, heads, n, block, dim] -> [batch, heads, n * block, dim]."""
    shape = ops.shape(x)
    return ops.reshape(x, (shape[0], shape[1], -1, shape[4]))


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
    return x[:, :, :length, :]
