"""`longformer` equals dense softmax attention masked to a sliding window plus global tokens."""

import numpy as np
import pytest

import arena_tf.layers as layers
from tests.layers.attention_oracles import assert_equals_full, padded_inputs, reference


def window_and_global_pattern(length, window, global_positions):
    """Bool [length, length]: |i - j| <= window / 2, plus whole rows and columns at the globals."""
    i, j = np.arange(length)[:, None], np.arange(length)[None, :]
    allowed = np.abs(i - j) <= window // 2
    inside = [p for p in global_positions if p < length]
    allowed[inside, :] = True
    allowed[:, inside] = True
    return allowed


@pytest.mark.parametrize(
    "length, window, global_positions, padding",
    [
        (12, 6, [0], 2),  # a multiple of the window's half
        (13, 6, [0, 5, 11], 3),  # global 11 is padding in the second row
        (10, 4, [7, 2, 7, 30], 1),  # unsorted, repeated, and one beyond the length
        (9, 6, [], 4),  # no global token: the window alone
        (5, 2, [3], 0),
    ],
)
def test_longformer_equals_dense_window_and_global_pattern(
    length, window, global_positions, padding
):
    x, mask = padded_inputs(length, padding)
    layer = layers.get(
        "longformer", num_heads=2, head_dim=8, window=window, global_positions=global_positions
    )
    got = np.asarray(layer(x, mask=mask))
    pattern = window_and_global_pattern(length, window, global_positions)
    want = reference(layer, x, pattern, mask)
    np.testing.assert_allclose(got[mask], want[mask], atol=1e-5)  # padded queries: any value


@pytest.mark.parametrize("window, global_positions", [(16, []), (16, [0, 3]), (40, [2])])
def test_longformer_with_a_window_over_the_sequence_equals_full(window, global_positions):
    x, mask = padded_inputs(9, padding=3)
    longformer = layers.get(
        "longformer", num_heads=2, head_dim=8, window=window, global_positions=global_positions
    )
    assert_equals_full(longformer, x, mask)


def test_odd_window_is_one_clear_error():
    with pytest.raises(ValueError, match=r"window=5 is invalid; expected an even integer"):
        layers.get("longformer", num_heads=1, head_dim=4, window=5)
