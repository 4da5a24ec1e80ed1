"""`reformer` equals dense softmax attention over the LSH pattern built here in NumPy.

The pattern of one hashing round comes from the layer's stored rotations: buckets
argmax([qR, -qR]) (padding in an extra last bucket), a stable sort by bucket, chunks of the sorted
order, and each query allowed the keys of its own bucket in its own and the previous chunk (no
wrap-around), itself only when nothing else is allowed. Keys are the unit-length queries.
"""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import dense_attention, output_projection, projections

HEADS, HEAD_DIM, WIDTH = 2, 8, 16
SELF_LOGIT, EXCLUDED_LOGIT = -1e5, -1e9


def make(**params):
    return layers.get("reformer", num_heads=HEADS, head_dim=HEAD_DIM, **params)


def inputs(length, real_lengths, seed=0):
    """x [batch, length, WIDTH] and a mask with the given number of real tokens per row."""
    x = np.random.default_rng(seed).normal(size=(len(real_lengths), length, WIDTH))
    mask = np.arange(length)[None, :] < np.array(real_lengths)[:, None]
    return x.astype("float32"), mask


def shared_qkv(layer, x):
    """q, keys = unit-length q, v as NumPy arrays [batch, heads, length, head_dim]."""
    q, _, v = projections(layer, x)
    return q, q / np.linalg.norm(q, axis=-1, keepdims=True), v


def numpy_buckets(layer, q, mask):
    """[batch, heads, rounds, length] buckets from the stored rotations; padding -> n_buckets."""
    rotated = np.einsum("bhld,dnr->bhnlr", q, np.asarray(layer.rotations))
    buckets = np.argmax(np.concatenate([rotated, -rotated], axis=-1), axis=-1)
    return np.where(mask[:, None, None, :], buckets, layer.n_buckets)


def self_when_alone(allowed):
    """Let a query attend to itself only where its row allows nothing else."""
    alone = ~allowed.any(axis=-1)
    return allowed | (alone[..., None] & np.eye(allowed.shape[-1], dtype=bool))


def chunk_window(chunk_of):
    """[.., L, L]: key in the query's chunk or the one before (chunk 0 does not wrap)."""
    step = chunk_of[..., :, None] - chunk_of[..., None, :]
    return (step == 0) | (step == 1)


def lsh_pattern(buckets, chunk, mask):
    """Allowed keys [batch, heads, L, L] of one round from its buckets [batch, heads, L]."""
    order = np.argsort(buckets, axis=-1, kind="stable")
    chunk_of = np.empty_like(order)
    np.put_along_axis(chunk_of, order, np.arange(buckets.shape[-1]) // chunk, axis=-1)
    same_bucket = buckets[..., :, None] == buckets[..., None, :]
    others = chunk_window(chunk_of) & same_bucket & ~np.eye(buckets.shape[-1], dtype=bool)
    return self_when_alone(others & mask[:, None, None, :])


def round_logsumexp(q, keys, allowed):
    """log-sum-exp of one round's logits: SELF_LOGIT for a query alone with itself."""
    eye = np.eye(allowed.shape[-1], dtype=bool)
    logits = np.einsum("bhqd,bhkd->bhqk", q, keys) * HEAD_DIM**-0.5
    logits = np.where(eye, SELF_LOGIT, np.where(allowed, logits, EXCLUDED_LOGIT))
    top = logits.max(axis=-1, keepdims=True)
    return (top + np.log(np.exp(logits - top).sum(axis=-1, keepdims=True)))[..., 0]


def test_one_round_equals_dense_attention_over_the_lsh_pattern():
    layer = make(n_hashes=1, n_buckets=4, chunk_size=4)
    x, mask = inputs(14, [14, 10])
    layer(x, mask=mask)
    q, keys, v = shared_qkv(layer, x)
    buckets = numpy_buckets(layer, q, mask)[:, :, 0]
    allowed = lsh_pattern(buckets, 4, mask)
    others = allowed & ~np.eye(14, dtype=bool)
    assert (~others.any(-1) & mask[:, None, :]).any(), "no real query is alone in its window"
    assert (others.sum(-1) > 1).any(), "no query sees several keys"
    assert len(np.unique(buckets[:, :, mask[1]])) > 2, "real tokens share too few buckets"
    want = output_projection(layer, dense_attention(q, keys, v, allowed, HEAD_DIM**-0.5))
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)


def test_two_rounds_combine_by_their_logsumexp_weights():
    layer = make(n_hashes=2, n_buckets=4, chunk_size=4)
    x, mask = inputs(16, [16, 11], seed=1)
    layer(x, mask=mask)
    q, keys, v = shared_qkv(layer, x)
    buckets = numpy_buckets(layer, q, mask)
    assert (buckets[:, :, 0] != buckets[:, :, 1]).any(), "both rounds hash alike"
    patterns = [lsh_pattern(buckets[:, :, r], 4, mask) for r in range(2)]
    rounds = np.stack([dense_attention(q, keys, v, p, HEAD_DIM**-0.5) for p in patterns])
    lse = np.stack([round_logsumexp(q, keys, p) for p in patterns])
    weights = np.exp(lse - lse.max(axis=0))
    weights /= weights.sum(axis=0)
    want = output_projection(layer, (weights[..., None] * rounds).sum(axis=0))
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)
    first_only = output_projection(layer, rounds[0])
    assert np.abs(got[mask] - first_only[mask]).max() > 1e-3, "second round had no effect"


def one_bucket_layer(chunk_size, x, mask):
    """A layer whose rotations are zero, so every token hashes to bucket 0."""
    layer = make(n_hashes=1, n_buckets=2, chunk_size=chunk_size)
    layer(x, mask=mask)
    layer.rotations.assign(np.zeros(layer.rotations.shape, "float32"))
    return layer


def test_one_bucket_and_one_chunk_is_full_shared_qk_attention_without_self():
    x, mask = inputs(10, [10, 7, 1], seed=2)
    layer = one_bucket_layer(16, x, mask)
    q, keys, v = shared_qkv(layer, x)
    allowed = self_when_alone(~np.eye(10, dtype=bool) & mask[:, None, None, :])
    want = output_projection(layer, dense_attention(q, keys, v, allowed, HEAD_DIM**-0.5))
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)


def test_one_bucket_keeps_order_so_chunks_see_themselves_and_the_previous_without_wrapping():
    x, mask = inputs(12, [12, 9], seed=3)
    layer = one_bucket_layer(4, x, mask)
    q, keys, v = shared_qkv(layer, x)
    window = chunk_window(np.arange(12) // 4)
    assert not window[0, 8], "the pattern wraps from the first chunk to the last"
    allowed = self_when_alone(window & ~np.eye(12, dtype=bool) & mask[:, None, None, :])
    want = output_projection(layer, dense_attention(q, keys, v, allowed, HEAD_DIM**-0.5))
    got = np.asarray(layer(x, mask=mask))
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)


def test_inference_is_deterministic_and_dropout_acts_only_in_training():
    layer = make(n_hashes=2, n_buckets=4, chunk_size=4, attention_dropout=0.5)
    x, mask = inputs(12, [12, 8], seed=4)
    first = np.asarray(layer(x, mask=mask))
    np.testing.assert_array_equal(np.asarray(layer(x, mask=mask)), first)
    assert not np.allclose(np.asarray(layer(x, mask=mask, training=True)), first)


def test_rotations_are_a_fixed_non_trainable_draw_of_the_seed():
    x, mask = inputs(8, [8])
    same, again, other = (make(n_buckets=6, seed=seed) for seed in (3, 3, 4))
    for layer in (same, again, other):
        layer(x, mask=mask)
    assert same.rotations.shape == (HEAD_DIM, 2, 3)
    assert all(w is not same.rotations for w in same.trainable_weights)
    np.testing.assert_array_equal(np.asarray(same.rotations), np.asarray(again.rotations))
    assert not np.allclose(np.asarray(same.rotations), np.asarray(other.rotations))


def test_odd_bucket_count_is_one_clear_error():
    with pytest.raises(ValueError, match="n_buckets=5 is invalid; expected an even positive"):
        make(n_buckets=5)
