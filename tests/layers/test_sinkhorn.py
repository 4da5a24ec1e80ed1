"""`sinkhorn` equals a NumPy reference of its definition, and dense attention when the sort is hard.

The reference rebuilds every step from the layer's weights: blocks, mean real key per block, the
sort logits, Sinkhorn normalisation over the real blocks only, the P-weighted mixture of keys and
values, and a masked softmax over the own block plus the sorted block.
"""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import output_projection, projections, reference, softmax

BLOCK, LENGTH, WIDTH, HEADS, HEAD_DIM = 4, 16, 16, 2, 8
MIN_COVERAGE = 1e-6


def make(**params):
    params = {"block_size": BLOCK, **params}
    return layers.get("sinkhorn", num_heads=HEADS, head_dim=HEAD_DIM, **params)


def inputs(seed=0):
    """Batch 2: one full sequence, one with 9 real tokens (a partial block and a padding block)."""
    x = np.random.default_rng(seed).normal(size=(2, LENGTH, WIDTH)).astype("float32")
    mask = np.ones((2, LENGTH), bool)
    mask[1, 9:] = False
    return x, mask


def built(seed=0, sort_scale=3.0, **params):
    """A layer built on `inputs()`, its sort kernel redrawn large enough to make P non-uniform."""
    layer = make(**params)
    x, mask = inputs()
    layer(x, mask=mask)
    kernel = np.random.default_rng(seed).normal(size=layer.sort_kernel.shape) * sort_scale
    layer.sort_kernel.assign(kernel.astype("float32"))
    return layer


# -- NumPy reference of the definition ------------------------------------------------------------


def key_blocks_and_mask(layer, x, mask):
    """k, v split into [batch, heads, n, b, d] blocks and the mask into [batch, n, b]."""
    _, k, v = projections(layer, x)
    n = k.shape[2] // layer.block_size
    split = lambda t: t.reshape(*t.shape[:2], n, layer.block_size, t.shape[-1])  # noqa: E731
    return split(k), split(v), mask.reshape(mask.shape[0], n, layer.block_size)


def block_summaries(kb, mb):
    """s [batch, heads, n, d]: the mean real key of each block (0 for a block of padding)."""
    real = mb[:, None, :, :, None]
    return (kb * real).sum(axis=3) / np.maximum(real.sum(axis=3), 1)


def sort_logits(layer, kb, mb):
    """R[b, h, i, j] = (s_i W) . s_j / sqrt(d), s_i the mean real key of block i."""
    summaries = block_summaries(kb, mb)
    kernel = np.asarray(layer.sort_kernel)
    return np.einsum("bhid,hde,bhje->bhij", summaries, kernel, summaries) / np.sqrt(layer.head_dim)


def log_normalise(log_p, axis):
    top = log_p.max(axis=axis, keepdims=True)
    return log_p - top - np.log(np.exp(log_p - top).sum(axis=axis, keepdims=True))


def sinkhorn(logits, temperature, iters):
    """Row softmax of logits / temperature, then `iters` rounds of column then row normalisation."""
    log_p = log_normalise(logits / temperature, axis=1)
    for _ in range(iters):
        log_p = log_normalise(log_normalise(log_p, axis=0), axis=1)
    return np.exp(log_p)


def sort_matrix(layer, kb, mb):
    """P [batch, heads, n, n]: Sinkhorn over the submatrix of real blocks, zero elsewhere."""
    logits = sort_logits(layer, kb, mb)
    perm = np.zeros_like(logits)
    for b, h in np.ndindex(*logits.shape[:2]):
        real = np.flatnonzero(mb[b].any(axis=-1))
        perm[b, h][np.ix_(real, real)] = sinkhorn(
            logits[b, h][np.ix_(real, real)], layer.temperature, layer.sinkhorn_iters
        )
    return perm


def definition(layer, x, mask):
    """The layer's output from its definition, one query block at a time."""
    q, _, _ = projections(layer, x)
    kb, vb, mb = key_blocks_and_mask(layer, x, mask)
    perm = sort_matrix(layer, kb, mb)
    out = np.zeros_like(q)
    size = layer.block_size
    for b, h, i in np.ndindex(*kb.shape[:3]):
        slot_weights = perm[b, h, i][:, None] * mb[b]  # [n, block]: P[i, j] where slot t is real
        coverage = slot_weights.sum(axis=0)
        safe = np.where(coverage > MIN_COVERAGE, coverage, 1.0)[:, None]
        sorted_k = np.einsum("jt,jtd->td", slot_weights, kb[b, h]) / safe
        sorted_v = np.einsum("jt,jtd->td", slot_weights, vb[b, h]) / safe
        keys = np.concatenate([kb[b, h, i], sorted_k])
        values = np.concatenate([vb[b, h, i], sorted_v])
        allowed = np.concatenate([mb[b, i], coverage > MIN_COVERAGE])
        bias = np.log(np.concatenate([np.ones(size), safe[:, 0]]))
        rows = slice(i * size, (i + 1) * size)
        logits = q[b, h, rows] @ keys.T / np.sqrt(layer.head_dim) + bias
        out[b, h, rows] = softmax(logits, allowed) @ values
    return output_projection(layer, out)


# -- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("iters", [0, 5])
def test_equals_numpy_definition_with_padding(iters):
    layer = built(sinkhorn_iters=iters)
    x, mask = inputs()
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got[mask], definition(layer, x, mask)[mask], atol=1e-5)


def test_sort_matrix_is_doubly_stochastic_over_real_blocks_and_zero_elsewhere():
    layer = built(sinkhorn_iters=50, sort_scale=1.0)
    x, mask = inputs()
    kb, _, mb = key_blocks_and_mask(layer, x, mask)
    perm = np.asarray(layer.sort_matrix(kb, mb))
    np.testing.assert_allclose(perm, sort_matrix(layer, kb, mb), atol=1e-5)
    np.testing.assert_allclose(perm[0].sum(axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(perm[0].sum(axis=-2), 1.0, atol=1e-3)
    real = np.array([True, True, True, False])  # sample 1: blocks 0-1 full, 2 partial, 3 padding
    np.testing.assert_allclose(perm[1][:, real][:, :, real].sum(axis=-2), 1.0, atol=1e-3)
    assert (perm[1][:, ~real, :] == 0).all() and (perm[1][:, :, ~real] == 0).all()


def solve_sort_kernel(layer, x, mask, target):
    """Set W so that the sort logits over the real blocks equal `target` in every head.

    With s the [n_real, d] summaries (n_real <= d, full row rank), W = pinv(s) target pinv(s)^T
    gives s W s^T = target; the layer scales the logits by 1 / sqrt(d), so W is scaled back up.
    """
    kb, _, mb = key_blocks_and_mask(layer, x, mask)
    real = mb[0].any(axis=-1)
    kernel = [
        np.linalg.pinv(s) @ target @ np.linalg.pinv(s).T * np.sqrt(layer.head_dim)
        for s in block_summaries(kb, mb)[0][:, real]
    ]
    layer.sort_kernel.assign(np.stack(kernel).astype("float32"))


def identity(n):
    return np.arange(n)


def next_block(n):
    return (np.arange(n) + 1) % n


@pytest.mark.parametrize("iters", [0, 5])
@pytest.mark.parametrize("picks", [identity, next_block])
@pytest.mark.parametrize("sample", [0, 1], ids=["full", "padded"])
def test_hard_sort_equals_dense_attention_to_own_and_picked_block(sample, picks, iters):
    """Weights set so that P is a known hard permutation of the real blocks: the layer is then dense
    masked attention where block i sees its own block and block picks(i), padding excluded."""
    layer = built(sinkhorn_iters=iters)
    x, mask = (t[sample : sample + 1] for t in inputs())
    real_blocks = int(np.ceil(mask.sum() / BLOCK))
    chosen = picks(real_blocks)
    solve_sort_kernel(layer, x, mask, 40.0 * np.eye(real_blocks)[chosen])
    kb, _, mb = key_blocks_and_mask(layer, x, mask)
    perm = np.asarray(layer.sort_matrix(kb, mb))[0, :, :real_blocks, :real_blocks]
    hard = np.broadcast_to(np.eye(real_blocks)[chosen], perm.shape)
    np.testing.assert_allclose(perm, hard, atol=1e-6)

    block_of = np.arange(LENGTH) // BLOCK
    allowed = np.ones((LENGTH, LENGTH), bool)  # rows of padding blocks: not compared
    for i, j in enumerate(chosen):
        allowed[block_of == i] = (block_of == i) | (block_of == j)
    got = np.asarray(layer(x, mask=mask))
    want = reference(layer, x, allowed, mask)
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)


def test_the_sort_decides_the_output():
    x, mask = inputs()
    layer = built(seed=0)
    before = np.asarray(layer(x, mask=mask))
    layer.sort_kernel.assign(np.asarray(built(seed=1).sort_kernel))
    after = np.asarray(layer(x, mask=mask))
    assert np.abs(after - before)[mask].max() > 1e-2


def test_inference_is_deterministic_and_training_noise_changes_outputs():
    layer = built()
    x, mask = inputs()
    inference = [np.asarray(layer(x, mask=mask, training=False)) for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])
    training = [np.asarray(layer(x, mask=mask, training=True)) for _ in range(2)]
    assert np.abs(training[0] - training[1])[mask].max() > 1e-3
    assert np.abs(training[0] - inference[0])[mask].max() > 1e-3


def random_ops(layer, training):
    """Types of the random ops in the graph of one call with a fixed `training` flag."""
    import tensorflow as tf

    graph = (
        tf.function(lambda x, m: layer(x, mask=m, training=training))
        .get_concrete_function(
            tf.TensorSpec([None, None, WIDTH]), tf.TensorSpec([None, None], tf.bool)
        )
        .graph
    )
    return {op.type for op in graph.get_operations() if "Random" in op.type}


@pytest.mark.tensorflow_only("the ops of a tf.function graph")
def test_inference_graph_holds_no_random_op_and_training_graph_draws_noise():
    layer = built()
    assert random_ops(layer, training=False) == set()
    assert random_ops(layer, training=True)


@pytest.mark.parametrize(
    "param, value, expected",
    [
        ("block_size", 0, "a positive integer"),
        ("sinkhorn_iters", -1, "an integer >= 0"),
        ("temperature", 0.0, "a positive number"),
    ],
)
def test_bad_parameter_is_one_clear_error(param, value, expected):
    with pytest.raises(ValueError, match=f"{param}={value!r} is invalid; expected {expected}"):
        make(**{param: value})
