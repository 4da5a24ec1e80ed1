"""What the state-space mixers promise beyond the attention contract: with `causal=True` no output
depends on a later input (up to the FFT's rounding); every output can depend on inputs anywhere in
the sequence (the bidirectional default) or anywhere before it (causal), across Mega's chunks."""

import numpy as np
import pytest

import arena_tf.layers as layers

pytestmark = pytest.mark.float64

MIXERS = {
    "s4d": {"state_size": 8},
    "s5": {"state_size": 8},
    "mega": {"ema_dim": 4, "chunk_size": 8},
}
LENGTH = 40


def make(name, causal):
    # float64: the FFT's rounding (about 1e-7 of the output in float32) stays below 1e-12
    return layers.get(
        name,
        num_heads=2,
        head_dim=4,
        max_len=LENGTH,
        causal=causal,
        dtype="float64",
        **MIXERS[name],
    )


def change_at(layer, position):
    """|output change| per position [LENGTH] when the input at `position` changes."""
    x = np.random.default_rng(0).normal(size=(1, LENGTH, 8))
    changed = x.copy()
    changed[0, position] += 5.0
    return np.abs(np.asarray(layer(changed)) - np.asarray(layer(x)))[0].max(axis=-1)


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_causal_outputs_never_depend_on_later_inputs(name):
    layer = make(name, causal=True)
    change = change_at(layer, 25)
    assert change[:25].max() < 1e-12
    assert change[25] > 1e-3 and change[-1] > 1e-6


@pytest.mark.parametrize("name", sorted(MIXERS))
def test_bidirectional_outputs_reach_both_ends(name):
    layer = make(name, causal=False)
    assert change_at(layer, LENGTH - 1)[0] > 1e-6  # the first output sees the last input
    assert change_at(layer, 0)[LENGTH - 1] > 1e-6  # and the last output the first input
