"""full as it was before `softmax_attention` (commit dcfca5f): the softmax and the mask's select
differentiated automatically. Adopted change: a ratio below 1 is the hand-written backward's
gain."""

from keras import ops

from arena_tf.layers import ops as aops
from arena_tf.layers.full import FullAttention
from harness import HEAD_DIM, HEADS, compare


class AutodiffSoftmax(FullAttention):
    def attend(self, q, k, v, mask, training=False):
        logits = ops.matmul(q * self.head_dim**-0.5, ops.swapaxes(k, -1, -2))
        weights = aops.masked_softmax(logits, aops.key_mask(mask), q.dtype)
        return ops.matmul(self.dropout_weights(weights, training), v)


compare("full, autodiff softmax backward (the form before)", FullAttention(num_heads=HEADS,
        head_dim=HEAD_DIM), AutodiffSoftmax(num_heads=HEADS, head_dim=HEAD_DIM))
