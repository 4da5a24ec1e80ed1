"""performer with each key's features stabilised by its own maximum and the remaining per-key
factor exp(max - |k|^2 / 2 - shift) applied to its value and to the key sum ([length, d] instead
of [length, m] work for the |k|^2 term and the padding)."""

from keras import ops

from arena_tf.layers import ops as aops
from arena_tf.layers.performer import DENOMINATOR_FLOOR, PerformerAttention
from harness import HEAD_DIM, HEADS, compare


class KeyFactorsOnValues(PerformerAttention):
    def attend(self, q, k, v, mask, training=False):
        scale = self.head_dim**-0.25
        features = self.features * scale
        q, k, v = (ops.cast(x, "float32") for x in (q, k, v))
        q_logits, k_logits = ops.matmul(q, features), ops.matmul(k, features)
        q_features = ops.exp(q_logits - ops.stop_gradient(ops.max(q_logits, -1, keepdims=True)))
        k_top = ops.stop_gradient(ops.max(k_logits, axis=-1, keepdims=True))
        k_features = ops.exp(k_logits - k_top)
        log_factor = k_top - (0.5 * scale**2) * ops.sum(ops.square(k), axis=-1, keepdims=True)
        real = mask[:, None, :, None]
        shift = ops.max(ops.where(real, log_factor, aops.NEG_INF), axis=2, keepdims=True)
        factor = ops.where(real, ops.exp(log_factor - ops.stop_gradient(shift)), 0.0)
        keys = ops.swapaxes(k_features, -1, -2)
        summary, key_sum = ops.matmul(keys, v * factor), ops.matmul(keys, factor)
        denominator = ops.matmul(q_features, key_sum) + DENOMINATOR_FLOOR
        return ops.matmul(q_features, summary) / denominator


compare("performer, key factors on the values", PerformerAttention(num_heads=HEADS,
        head_dim=HEAD_DIM), KeyFactorsOnValues(num_heads=HEADS, head_dim=HEAD_DIM))
