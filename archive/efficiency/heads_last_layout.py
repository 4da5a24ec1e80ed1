"""linear computed in the projections' own [batch, length, heads, head_dim] layout with einsum (as
the Model Garden's KernelAttention does), so that no head transposes are made."""

from keras import ops

from arena_tf.layers.linear import LinearAttention, elu_features
from harness import HEAD_DIM, HEADS, compare


class HeadsLast(LinearAttention):
    def call(self, inputs, mask=None, training=False):
        batch = ops.shape(inputs)[0]
        q, k, v = (ops.reshape(dense(inputs), (batch, -1, self.num_heads, self.head_dim))
                   for dense in (self.query_dense, self.key_dense, self.value_dense))
        q_features, k_features = elu_features(q), elu_features(k)
        summary = ops.einsum("blhf,blhd->bhfd", k_features, v)
        numerator = ops.einsum("blhf,bhfd->blhd", q_features, summary)
        denominator = ops.einsum("blhf,bhf->blh", q_features, ops.sum(k_features, axis=1))
        attended = numerator / (denominator[..., None] + self.eps)
        return self.output_dense(ops.reshape(attended, (batch, -1, self.num_heads * self.head_dim)))


compare("linear, [batch, length, heads, dim] layout", LinearAttention(num_heads=HEADS,
        head_dim=HEAD_DIM), HeadsLast(num_heads=HEADS, head_dim=HEAD_DIM))
