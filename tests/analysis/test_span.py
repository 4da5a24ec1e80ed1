"""Required attention span and attention rollout on attention patterns with known answers."""

import numpy as np
import pytest

from arena_tf.analysis.rollout import rollout, with_residual
from arena_tf.analysis.span import SpanAccumulator, head_spans, uniform_span


def identity(batch, heads, length):
    return np.broadcast_to(np.eye(length, dtype="float32"), (batch, heads, length, length)).copy()


def uniform(batch, heads, length, real=None):
    """Every query attends equally to the first `real` positions (all by default)."""
    real = length if real is None else real
    weights = np.zeros((batch, heads, length, length), "float32")
    weights[..., :real] = 1.0 / real
    return weights


def test_span_of_identity_attention_is_zero():
    spans = head_spans(identity(2, 3, 17), np.ones((2, 17), bool))
    assert spans.shape == (2, 3)
    np.testing.assert_array_equal(spans, 0.0)


@pytest.mark.parametrize("length", [2, 7, 100])
def test_span_of_uniform_attention_is_the_closed_form(length):
    spans = head_spans(uniform(1, 2, length), np.ones((1, length), bool))
    expected = (length**2 - 1) / (3 * length)
    assert uniform_span(length) == pytest.approx(expected)
    np.testing.assert_allclose(spans, expected, rtol=1e-5)


def test_padding_is_neither_query_nor_key():
    mask = np.zeros((1, 12), bool)
    mask[0, :9] = True
    spans = head_spans(uniform(1, 1, 12, real=9), mask)
    np.testing.assert_allclose(spans, uniform_span(9), rtol=1e-5)


def test_negative_weights_count_by_their_magnitude():
    weights = np.array([[[[0.0, -1.0], [1.0, 0.0]]]], "float32")
    np.testing.assert_allclose(head_spans(weights, np.ones((1, 2), bool)), 1.0)


def test_accumulator_averages_heads_layers_and_sequences():
    length, mask = 10, np.ones((3, 10), bool)
    accumulator = SpanAccumulator(num_layers=2, num_heads=2)
    for _ in range(2):  # two batches of three sequences
        accumulator.add(0, identity(3, 2, length), mask)
        accumulator.add(1, uniform(3, 2, length), mask)
    result = accumulator.result()
    assert result["sequences"] == 6
    np.testing.assert_allclose(result["per_layer"], [0.0, uniform_span(length)], rtol=1e-5)
    np.testing.assert_allclose(result["per_head"], [[0, 0], [uniform_span(length)] * 2], rtol=1e-5)
    assert result["span"] == pytest.approx(uniform_span(length) / 2, rel=1e-5)
    assert result["negative_mass"] == 0 and result["row_sum_min"] == pytest.approx(1.0)


def test_rollout_of_identity_attention_is_the_identity():
    layers = [np.eye(6, dtype="float32")] * 3
    np.testing.assert_allclose(rollout(layers), np.eye(6), atol=1e-7)


def test_rollout_mixes_in_the_residual_and_multiplies_the_last_layer_on_the_left():
    first = np.array([[0.0, 1.0], [0.0, 1.0]])  # everyone reads position 1
    second = np.array([[1.0, 0.0], [1.0, 0.0]])  # everyone reads position 0
    np.testing.assert_allclose(with_residual(first), [[0.5, 0.5], [0.0, 1.0]])
    expected = with_residual(second) @ with_residual(first)
    np.testing.assert_allclose(rollout([first, second]), expected)
    assert not np.allclose(expected, with_residual(first) @ with_residual(second))
    np.testing.assert_allclose(rollout([first, second]).sum(-1), 1.0)
