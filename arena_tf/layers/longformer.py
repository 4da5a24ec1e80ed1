"""Longformer attention (Beltagy et al., 2020, "Longformer: The Long-Document Transformer").

A sliding window plus global tokens. Each query attends to the keys within `window / 2` positions
on each side (and itself); the tokens at `global_positions` (by default the CLS position 0) attend
to every token and are attended by every token.

Computed as banded block attention, never by masking an L x L matrix: the sequence is cut into
blocks of `window / 2`; each query block attends to its previous, own and next key blocks, masked
to the exact window, plus the global keys appended to each block's keys (a global key inside the
window is masked there, so it counts once). The global queries get full rows, O(g L). Global
positions beyond the actual length are ignored; global positions that are padding are not keys.
Time and memory O(L (w + g) d). Where `kernels.choose` picks the fused kernel (bf16 under JAX on a
GPU, no attention dropout), each block's window and global keys go to it side by side
(`fused_blocks_and_shared`); elsewhere the two parts share one softmax without being concatenated.

    layer = arena_tf.layers.get("longformer", num_heads=4, head_dim=32, window=512,
                                global_positions=[0])
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import numpy as np
from keras import ops

from arena_tf.layers import checks, kernels
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register


@register("longformer")
class LongformerAttention(Attention):
    """Sliding window of total width `window` plus global tokens at `global_positions`.

    Args:
        window: total window width w, even; each query sees w / 2 keys on each side and itself.
        global_positions: positions that attend to and are attended by every token ([] for none).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("longformer", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Beltagy et al., 2020, "Longformer: The Long-Document Transformer",
            arXiv:2004.05150; github.com/allenai/longformer.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Beltagy et al. (2020), Longformer: The Long-Document Transformer"
    complexity = "O(L (w + g) d)"

    def __init__(self, window=512, global_positions=(0,), **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.window = checks.positive_int(owner, "window", window)
        if window % 2:
            raise ValueError(
                f"{owner}: window={window} is invalid; expected an even integer (the total width, "
                "window / 2 keys on each side of the query)"
            )
        self.global_positions = checks.int_list(owner, "global_positions", global_positions)

    def attend(self, q, k, v, mask, training=False):
        length = ops.shape(q)[2]
        positions = ops.convert_to_tensor(sorted(set(self.global_positions)), dtype="int32")
        at_global = ops.equal(ops.arange(length, dtype="int32")[:, None], positions[None, :])
        inside = ops.minimum(positions, length - 1)  # beyond the length: masked, and no row written
        q = q * self.head_dim**-0.5
        banded = self._banded(q, k, v, mask, at_global, inside, training)
        rows = self._global_rows(ops.take(q, inside, axis=2), k, v, mask, training)
        at_global = ops.cast(at_global, banded.dtype)
        return banded * (1 - ops.sum(at_global, axis=1)[:, None]) + ops.matmul(at_global, rows)

    def _banded(self, q, k, v, mask, at_global, inside, training):
        """Every query over its window of keys, the global ones excluded, and over the global keys.

        `at_global` [length, g] marks where each global position lies (a column of False for a
        position beyond the length); `inside` holds the positions clipped into the sequence.
        """
        half = self.window // 2
        window_real = ops.logical_and(mask, ops.logical_not(ops.any(at_global, axis=1))[None, :])
        global_real = ops.logical_and(ops.take(mask, inside, axis=1), ops.any(at_global, axis=0))
        qb, kb, vb, real_blocks = aops.blocked(q, k, v, window_real, half)
        window_allowed = ops.logical_and(_band(half), _windows(real_blocks[:, None, :, None, :], 4))
        block_kv = (_windows(kb, 3), _windows(vb, 3))
        shared_kv = (ops.take(k, inside, axis=2), ops.take(v, inside, axis=2))
        allowed = (window_allowed, global_real[:, None, None, None, :])
        if self.attention_kernel(training=training, dtype=q.dtype) == kernels.FUSED:
            attended = fused_blocks_and_shared(qb, block_kv, shared_kv, allowed)
        else:
            attended = aops.attend_blocks_and_shared(
                qb, block_kv, shared_kv, allowed, lambda w: self.dropout_weights(w, training)
            )
        return aops.cut_to_length(attended, ops.shape(q)[2])

    def _global_rows(self, global_q, k, v, mask, training):
        """Full attention rows [batch, heads, g, head_dim] for the global queries."""
        return self.softmax_attend(global_q, k, v, aops.key_mask(mask), training)

    def get_config(self):
        config = super().get_config()
        config.update(window=self.window, global_positions=list(self.global_positions))
        return config


def fused_blocks_and_shared(qb, block_kv, shared_kv, allowed):
    """`aops.attend_blocks_and_shared` by the fused kernel: each block's window keys and the shared
    (global) keys side by side, one kernel call over [batch * blocks] block rows."""
    shape = ops.shape(qb)
    shared = [
        ops.broadcast_to(x[:, :, None], (shape[0], shape[1], shape[2]) + tuple(ops.shape(x)[2:]))
        for x in shared_kv
    ]
    keys, values = (ops.concatenate([own, common], axis=3) for own, common in zip(block_kv, shared))
    window, common = allowed
    mask_shape = (shape[0], 1, shape[2], shape[3])
    mask = ops.concatenate(
        [
            ops.broadcast_to(window, mask_shape + (ops.shape(block_kv[0])[3],)),
            ops.broadcast_to(common, mask_shape + (ops.shape(shared_kv[0])[2],)),
        ],
        axis=-1,
    )
    return aops.merge_blocks(kernels.fused_attention(qb, keys, values, mask))


def _band(half):
    """Bool [half, 3 half]: query a of a block sees window key t (previous, own, next block)."""
    offsets = np.arange(3 * half)[None, :] - half - np.arange(half)[:, None]
    return np.abs(offsets) <= half


def _windows(blocks, axis):
    """Previous, own and next block side by side along `axis`, for blocks on axis 2.

    [batch, heads, n, b, dim] with axis 3 -> [batch, heads, n, 3 b, dim]; outside the sequence the
    neighbours are zeros (False for masks).
    """
    padded = ops.pad(blocks, [[0, 0], [0, 0], [1, 1], [0, 0], [0, 0]])
    blocks_count = ops.shape(blocks)[2]
    return ops.concatenate(
        [aops.slice_axis(padded, 2, shift, blocks_count) for shift in range(3)], axis=axis
    )
