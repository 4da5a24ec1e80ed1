"""linear with its query, key and value projections as one [256, 768] product (the three kernels
concatenated at call time, the product split in three): one larger matmul instead of three."""

from keras import ops

from arena_tf.layers.linear import LinearAttention
from harness import HEAD_DIM, HEADS, compare


class FusedProjections(LinearAttention):
    def project(self, inputs):
        batch = ops.shape(inputs)[0]
        denses = (self.query_dense, self.key_dense, self.value_dense)
        kernel = ops.concatenate([dense.kernel for dense in denses], axis=-1)
        bias = ops.concatenate([dense.bias for dense in denses], axis=-1)
        joint = ops.matmul(inputs, kernel) + bias
        return tuple(self._split_heads(part, batch) for part in ops.split(joint, 3, axis=-1))


compare("linear, fused q/k/v projections", LinearAttention(num_heads=HEADS, head_dim=HEAD_DIM),
        FusedProjections(num_heads=HEADS, head_dim=HEAD_DIM))
