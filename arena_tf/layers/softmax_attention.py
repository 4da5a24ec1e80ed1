"""Dense softmax attention softmax(q k^T) v over the allowed keys, with the backward pass written
by hand (`ops.custom_gradient`) so that it makes fewer passes over the [queries, keys] weights P:

    dV = P^T dO,   dS = P * (dO V^T - rowsum(dO * O)),   dQ = dS K,   dK = dS^T Q.

Automatic differentiation of the softmax takes rowsum(dP * P) over the [queries, keys] matrix and
differentiates the mask's select as another such pass; the identity rowsum(dP * P) = rowsum(dO * O)
(used by FlashAttention, Dao et al. 2022) takes that sum over [queries, d] instead, and P is
already 0 at the excluded keys. Without those passes full's forward + backward at 4,096 tokens
took 0.90 of its autodiff form's time on this project's CPU
(archive/efficiency/autodiff_softmax_backward.py). P is stored for the backward as automatic
differentiation would store it (unlike `blockwise`, which recomputes it); it equals the autodiff
form to float32 rounding, gradients included (tests/layers/test_softmax_attention.py).

`Attention.softmax_attend` chooses it; attention dropout in training and export tracing take the
plain form (the identity needs the dropped weights' mask, and exports need no gradient).
"""

from keras import ops

from arena_tf.layers import ops as aops


def attention_weights(q, k, allowed, dtype):
    """softmax(q k^T) over the allowed keys in float32 (`aops.masked_softmax`), cast to dtype."""
    return aops.masked_softmax(ops.matmul(q, ops.swapaxes(k, -1, -2)), allowed, dtype)


def softmax_attention(q, k, v, allowed):
    """softmax(q k^T) v, q already scaled: q [..., queries, d], k and v [..., keys, d], allowed a
    bool broadcastable to [..., queries, keys] (False: excluded key). The softmax is computed in
    float32 (`aops.masked_softmax`); returns [..., queries, d] in q's dtype."""
    dtype = q.dtype

    @ops.custom_gradient
    def attend(q, k, v):
        weights = attention_weights(q, k, allowed, dtype)
        out = ops.matmul(weights, v)

        def grad(*args, upstream=None):
            upstream = ops.cast(args[0] if upstream is None else upstream, dtype)
            row_dot = ops.sum(ops.cast(upstream * out, "float32"), axis=-1, keepdims=True)
            d_weights = ops.cast(ops.matmul(upstream, ops.swapaxes(v, -1, -2)), "float32")
            d_logits = ops.cast(ops.cast(weights, "float32") * (d_weights - row_dot), dtype)
            return (
                ops.matmul(d_logits, k),
                ops.matmul(ops.swapaxes(d_logits, -1, -2), q),
                ops.matmul(ops.swapaxes(weights, -1, -2), upstream),
            )

        return out, grad

    return attend(q, k, v)
