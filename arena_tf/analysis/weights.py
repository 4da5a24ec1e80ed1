"""The attention weights of any mechanism, recovered exactly from its own `attend`.

Every mechanism's output is linear in the values, out = A v, with weights A [batch, heads, L, L]
that depend only on the queries, the keys and the padding mask (softmax, blocks, hashes, random
features, length projections alike). Calling `attend(q, k, V, mask)` with V = columns
start .. start + head_dim of the identity matrix I_L therefore returns exactly those columns of A,
and ceil(L / head_dim) calls give the whole implied matrix, for every mechanism, without knowing
how it computes:

    A = implied_weights(block.attention, normed_inputs, mask)     # numpy [batch, heads, L, L]

Cost: ceil(L / head_dim) forward passes of the mechanism and batch x heads x L^2 floats, so it is
tractable up to a few thousand positions; `MAX_POSITIONS` is the limit (Path-X, 16K, is refused).
On 2 CPU cores the LRA Pathfinder transformer (4 layers, 4 heads of width 4, 1024 pixels) takes
about 9 s per example this way. Mechanisms listed in `DIRECT` compute their explicit weights in
one pass instead (full: softmax(q k^T / sqrt(d)), tens of milliseconds); the tests check that they
agree with the identity probe.

What the weights are: for softmax mechanisms (full, local, sparse, longformer, bigbird, sinkhorn,
reformer, synthesizer) every row of A is a probability distribution over the real keys. Kernel
mechanisms (linear, performer) give non-negative rows that sum to 1 up to their epsilon; linformer
mixes keys through a learned length projection, so its implied weights can be negative and rows
need not sum to 1. `as_distribution` uses |A| normalised per row, which is A itself wherever A is
already a distribution; `weight_summary` says how far A was from one.
"""

import numpy as np
from keras import ops

from arena_tf.analysis.walk import block_inputs
from arena_tf.cli import UsageError
from arena_tf.layers import ops as attention_ops

# Longest sequence (encoder positions, CLS included) whose matrices are recovered: 4096 + CLS.
MAX_POSITIONS = 4097

# Floats of attention matrices held at once; sets how many sequences go through together.
MEMORY_BUDGET = 2**26

DISTRIBUTION = (
    "|A| / sum_j |A_ij|: the implied attention matrix A (out = A v) with each query row made a "
    "distribution; equal to A for softmax and kernel mechanisms, whose rows are (up to eps) "
    "distributions; linformer's implied weights can be negative and count by their magnitude "
    "(negative_mass: the largest share of sum |A| held by negative weights in any batch)"
)


def check_length(length):
    """`length` if its matrices can be recovered; a UsageError otherwise."""
    if length > MAX_POSITIONS:
        raise UsageError(
            f"sequences of {length} positions are too long to recover attention matrices "
            "(ceil(L / head_dim) passes and L^2 floats per head)",
            f"at most {MAX_POSITIONS} positions (the limit is {MAX_POSITIONS} positions)",
            "analyse a task or model with a shorter max_len",
        )
    return length


def batch_size_for(num_heads, length):
    """Sequences per batch so that one layer's matrices stay within MEMORY_BUDGET floats."""
    return max(1, MEMORY_BUDGET // (num_heads * length * length))


def identity_columns(length, start, width):
    """Columns start .. start + width of I_L as a [length, width] array (zero past the end)."""
    basis = np.zeros((length, width), "float32")
    stop = min(start + width, length)
    basis[np.arange(start, stop), np.arange(stop - start)] = 1.0
    return basis


def to_numpy(x):
    """A float32 NumPy copy of a tensor."""
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")))


def probed_weights(attention, q, k, mask):
    """A [batch, heads, L, L] from ceil(L / head_dim) calls of `attend` on identity columns."""
    batch, heads, length, width = q.shape[0], attention.num_heads, q.shape[2], attention.head_dim
    columns = []
    for start in range(0, length, width):
        basis = ops.cast(identity_columns(length, start, width), attention.compute_dtype)
        values = ops.broadcast_to(basis, (batch, heads, length, width))
        attended = attention.attend(q, k, values, mask, training=False)
        columns.append(to_numpy(attended))
    return np.concatenate(columns, axis=-1)[..., :length]


def softmax_weights(attention, q, k, mask):
    """Full attention's explicit weights softmax(q k^T / sqrt(d)) over the real keys, one pass."""
    logits = ops.matmul(q * attention.head_dim**-0.5, ops.swapaxes(k, -1, -2))
    return to_numpy(attention_ops.masked_softmax(logits, attention_ops.key_mask(mask), "float32"))


# Mechanism name -> function (layer, q, k, mask) -> A computing its explicit weights in one pass;
# every other mechanism goes through the identity probe.
DIRECT = {"full": softmax_weights}


def implied_weights(attention, inputs, mask, direct=True):
    """A [batch, heads, L, L] float32 NumPy with attention.attend(q, k, v, mask) == A @ v for every
    v, where q, k come from `inputs` [batch, L, width] through the layer's own projections.

    A[b, h, i, j] is the weight query i gives to key j; padded keys get 0. `direct=False` forces
    the identity probe even where `DIRECT` has a one-pass formula."""
    check_length(inputs.shape[1])
    q, k, _ = attention.project(inputs)
    mask = ops.cast(mask, "bool")
    method = DIRECT.get(attention.mechanism, probed_weights) if direct else probed_weights
    return method(attention, q, k, mask)


def layer_weights(encoder, tokens):
    """Yield (A [batch, heads, P, P], mask bool [batch, P]) for every block of `encoder` in order,
    for int tokens [batch, length] (P encoder positions: the tokens, plus CLS when it pools by
    CLS)."""
    for block, x, mask in block_inputs(encoder, tokens):
        yield implied_weights(block.attention, block.attention_norm(x), mask), np.asarray(mask)


def as_distribution(weights):
    """|A| normalised over the keys (last axis): A itself where A's rows are distributions."""
    magnitude = np.abs(weights)
    return magnitude / np.maximum(magnitude.sum(axis=-1, keepdims=True), np.finfo("float32").tiny)


def weight_summary(weights, mask):
    """How far the implied weights of real queries are from distributions:
    {'row_sum_min', 'row_sum_max', 'negative_mass'} (negative_mass: the share of sum |A| held by
    negative entries; 0 for softmax and kernel mechanisms)."""
    rows = weights[np.broadcast_to(mask[:, None, :], weights.shape[:-1])]
    magnitude = np.abs(rows).sum()
    return {
        "row_sum_min": float(rows.sum(axis=-1).min()),
        "row_sum_max": float(rows.sum(axis=-1).max()),
        "negative_mass": float(np.abs(rows[rows < 0]).sum() / magnitude) if magnitude else 0.0,
    }
