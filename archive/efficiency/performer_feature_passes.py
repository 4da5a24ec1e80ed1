"""performer's exp features as they were before commit 907bc04: |x|^2 / 2 subtracted from every
feature of queries and keys, 1 / sqrt(m) multiplied in, the padded keys excluded by a select over
the [length, m] map and zeroed again by `kernel_attention`. Adopted change: a ratio below 1 is the
gain of leaving out the factors that cancel."""

from keras import ops

from arena_tf.layers import ops as aops
from arena_tf.layers.performer import PerformerAttention
from harness import HEAD_DIM, HEADS, compare, performer_with_exp_kernel


def every_factor(q, k, mask, features, scale):
    q, k, norm = q * scale, k * scale, features.shape[-1] ** -0.5
    q_exponents, k_exponents = (ops.matmul(x, features) - 0.5 * ops.sum(
        ops.square(x), axis=-1, keepdims=True) for x in (q, k))
    q_max = ops.stop_gradient(ops.max(q_exponents, axis=-1, keepdims=True))
    real = mask[:, None, :, None]
    k_max = ops.max(ops.where(real, k_exponents, aops.NEG_INF), axis=(2, 3), keepdims=True)
    k_shifted = ops.where(real, k_exponents - ops.stop_gradient(k_max), aops.NEG_INF)
    k_features = aops.zero_padding(ops.exp(k_shifted) * norm, mask)
    return ops.exp(q_exponents - q_max) * norm, k_features


EveryFactor = performer_with_exp_kernel(every_factor)


compare("performer, every factor computed (the form before)", PerformerAttention(
        num_heads=HEADS, head_dim=HEAD_DIM), EveryFactor(num_heads=HEADS, head_dim=HEAD_DIM))
