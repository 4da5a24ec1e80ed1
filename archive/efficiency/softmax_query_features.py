"""performer with each query's features as one fused softmax over its features (equal up to a
per-query factor, which cancels) instead of max, subtract and exp."""

from keras import ops

from arena_tf.layers import performer
from arena_tf.layers.performer import PerformerAttention
from harness import HEAD_DIM, HEADS, compare, performer_with_exp_kernel


def softmax_queries(q, k, mask, features, scale):
    _, k_features = performer.exp_kernel(q, k, mask, features, scale)
    return ops.softmax(ops.matmul(q, features * scale), axis=-1), k_features


SoftmaxQueries = performer_with_exp_kernel(softmax_queries)


compare("performer, softmax query features", PerformerAttention(num_heads=HEADS,
        head_dim=HEAD_DIM), SoftmaxQueries(num_heads=HEADS, head_dim=HEAD_DIM))
