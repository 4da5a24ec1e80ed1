"""Which kernel computes dense softmax attention softmax(q k^T) v: the one selection rule.

Every dense softmax in the mechanisms goes through `Attention.softmax_attend`: full attention's
dense form, the blocks of local attention, BigBird's gathered key blocks and global rows,
Longformer's global rows, Linformer's projected keys. It asks `choose` which kernel runs:

- "fused": `keras.ops.dot_product_attention` (under JAX on a GPU: cuDNN's flash attention for
  bfloat16 and float16, head width a multiple of 8 up to 128). Chosen where the device and dtype
  have a fused kernel (`fused_device`), or where forced (`forced`, or the environment variable
  ARENA_TF_ATTENTION_KERNEL=fused, which is how the tests take it on CPU).
- "hand": `softmax_attention.softmax_attention`, the dense form with the hand-written backward:
  the fastest form measured on CPU (docs/efficiency), taken everywhere else.
- "dropout": `attention_weights` then dropout then a matmul, differentiated automatically:
  training with attention dropout, and export tracing (ONNX needs the plain ops).
- "blockwise": full attention from `blockwise_from` keys on where "hand" would be chosen
  (`FullAttention.blockwise`), in O(L d) memory.

What the fused path does with:
- padding masks: a [batch, 1, 1, keys] padding mask (full attention, the global rows) under JAX
  goes to `jax.nn.dot_product_attention` as each example's number of real keys
  (`key_value_seq_lengths`: cuDNN's own padding mask, no queries x keys tensor) where the real
  keys come first and every example has one, which `lax.cond` checks at run time; any other mask
  (and every mask under TensorFlow, or of blocks) is broadcast to [batch, 1 or heads, queries,
  keys] ([batch * blocks, 1 or heads, block, keys] for blocks) and handed to
  `keras.ops.dot_product_attention` (cuDNN receives it as a bias of large negative numbers). A
  query with no allowed key gets the mean of all values, as the hand path's finite NEG_INF gives.
- attention dropout: the kernel has none, so it is chosen only where no attention dropout acts
  (inference, or attention_dropout=0); training with attention dropout takes "dropout".
- the float32 softmax: the logits and the softmax are in float32 under both backends' kernels
  (JAX's XLA form, TensorFlow's form, and cuDNN, which accumulates in float32), the weights are cast
  to the compute dtype before the product with v: as `aops.masked_softmax` does.

Tests: tests/layers/test_kernels.py (the fused path forced on CPU against the dense formula, masks
and gradients included, under TensorFlow and JAX).
"""

import contextlib
import os

import keras
from keras import ops

FUSED, HAND, DROPOUT, BLOCKWISE = "fused", "hand", "dropout", "blockwise"
KERNELS = {
    FUSED: "keras.ops.dot_product_attention (cuDNN flash attention under JAX on a GPU)",
    HAND: "dense softmax with the hand-written backward (softmax_attention.py)",
    DROPOUT: "dense softmax, dropout, autodiff (training with attention dropout; export)",
    BLOCKWISE: "full's memory-efficient blocks with a recomputing backward (blockwise.py)",
}
# Dtypes and head widths cuDNN's flash attention takes.
FUSED_DTYPES = ("bfloat16", "float16")
FUSED_MAX_HEAD_DIM = 128
ENVIRONMENT = "ARENA_TF_ATTENTION_KERNEL"
_FORCED = []


@contextlib.contextmanager
def forced(kernel):
    """Within the block, `choose` returns `kernel` (FUSED or HAND) wherever no dropout acts."""
    if kernel not in (FUSED, HAND):
        raise ValueError(f"kernel {kernel!r} cannot be forced; expected {FUSED!r} or {HAND!r}")
    _FORCED.append(kernel)
    try:
        yield
    finally:
        _FORCED.pop()


def forced_kernel():
    """The kernel forced by `forced` or by ARENA_TF_ATTENTION_KERNEL (fused|hand), else None."""
    if _FORCED:
        return _FORCED[-1]
    value = os.environ.get(ENVIRONMENT, "auto")
    if value not in (FUSED, HAND, "auto"):
        raise ValueError(f"{ENVIRONMENT}={value} is invalid; expected {FUSED}, {HAND} or auto")
    return None if value == "auto" else value


def fused_device():
    """Whether this process's Keras backend reaches a fused attention kernel: JAX on a GPU."""
    if keras.backend.backend() != "jax":
        return False
    import jax

    return jax.devices()[0].platform == "gpu"


def fused_shapes(dtype, head_dim):
    """Whether cuDNN's flash attention takes this dtype and head width."""
    return (
        keras.backend.standardize_dtype(dtype) in FUSED_DTYPES
        and head_dim is not None
        and head_dim % 8 == 0
        and head_dim <= FUSED_MAX_HEAD_DIM
    )


def choose(dtype, head_dim, dropout=False, exporting=False):
    """The kernel of a dense softmax in `dtype` with heads of `head_dim`: DROPOUT where attention
    dropout acts or an export is traced, else the forced kernel, else FUSED where the device and
    dtype have one, else HAND."""
    if dropout or exporting:
        return DROPOUT
    forced_now = forced_kernel()
    if forced_now:
        return forced_now
    return FUSED if fused_device() and fused_shapes(dtype, head_dim) else HAND


def describe(kernel):
    """One line naming what `kernel` computes with."""
    return f"{kernel}: {KERNELS[kernel]}"


def fused_attention(q, k, v, allowed):
    """softmax(q k^T) v by `keras.ops.dot_product_attention`, q already scaled.

    q [batch, heads, queries, d] or [batch, heads, blocks, queries, d] (each block its own
    attention), k and v likewise with keys; `allowed` a bool broadcastable to [..., queries, keys]
    or None. Returns q's layout and dtype."""
    blocked = len(q.shape) == 5
    fold = (lambda x: to_bthd_blocks(x)) if blocked else (lambda x: ops.transpose(x, (0, 2, 1, 3)))
    if not blocked and key_padding(allowed) and keras.backend.backend() == "jax":
        out = key_padded_attention(*(fold(x) for x in (q, k, v)), allowed[:, 0, 0, :])
        return ops.transpose(out, (0, 2, 1, 3))
    mask = None if allowed is None else kernel_mask(allowed, q, k, blocked)
    out = ops.dot_product_attention(fold(q), fold(k), fold(v), mask=mask, scale=1.0)
    if not blocked:
        return ops.transpose(out, (0, 2, 1, 3))
    batch, heads, blocks = (ops.shape(q)[i] for i in range(3))
    out = ops.reshape(out, (batch, blocks, ops.shape(q)[3], heads, ops.shape(v)[4]))
    return ops.transpose(out, (0, 3, 1, 2, 4))


def key_padding(allowed):
    """Whether `allowed` is a [batch, 1, 1, keys] padding mask (the same keys for every query)."""
    return allowed is not None and len(allowed.shape) == 4 and tuple(allowed.shape[1:3]) == (1, 1)


def key_padded_attention(q, k, v, key_mask):
    """Attention over [batch, length, heads, d] (JAX) with a [batch, keys] padding mask, without a
    queries x keys mask: where every example's real keys come first and it has at least one (as
    padding is laid out), `jax.nn.dot_product_attention` with `key_value_seq_lengths` (cuDNN's
    padding mask on a GPU: no bias tensor, no bias gradient); any other mask takes the general
    path (`keras.ops.dot_product_attention` with the mask broadcast to queries x keys), chosen at
    run time by `lax.cond`."""
    import jax
    import jax.numpy as jnp

    lengths = jnp.sum(key_mask.astype(jnp.int32), axis=-1)
    prefix = jnp.arange(key_mask.shape[-1])[None, :] < lengths[:, None]
    laid_out = jnp.logical_and(jnp.all(key_mask == prefix), jnp.all(lengths > 0))
    cudnn = fused_device() and fused_shapes(q.dtype, q.shape[-1])

    def by_lengths(q, k, v):
        return jax.nn.dot_product_attention(
            q,
            k,
            v,
            scale=1.0,
            key_value_seq_lengths=lengths,
            implementation="cudnn" if cudnn else None,
        )

    def general(q, k, v):
        return ops.dot_product_attention(q, k, v, mask=key_mask[:, None, None, :], scale=1.0)

    return jax.lax.cond(laid_out, by_lengths, general, q, k, v)


def to_bthd_blocks(x):
    """[batch, heads, blocks, length, d] -> [batch * blocks, length, heads, d]."""
    shape = ops.shape(x)
    moved = ops.transpose(x, (0, 2, 3, 1, 4))
    return ops.reshape(moved, (shape[0] * shape[2], shape[3], shape[1], shape[4]))


def kernel_mask(allowed, q, k, blocked):
    """`allowed` as the kernel's [batch(, * blocks), 1 or heads, queries, keys] bool mask."""
    allowed = ops.convert_to_tensor(allowed)
    allowed = ops.reshape(allowed, (1,) * (len(q.shape) - len(allowed.shape)) + allowed.shape)
    heads = 1 if allowed.shape[1] == 1 else q.shape[1]
    target = (ops.shape(q)[0], heads, *ops.shape(q)[2:-1], ops.shape(k)[-2])
    mask = ops.broadcast_to(ops.cast(allowed, "bool"), target)
    if not blocked:
        return mask
    moved = ops.transpose(mask, (0, 2, 1, 3, 4))
    return ops.reshape(moved, (target[0] * target[2], heads, target[3], target[4]))
