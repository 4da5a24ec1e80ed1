"""The long convolution's two forms (FFT for training, depthwise for exports) equal numpy's."""

import keras
import numpy as np
import pytest

from arena_tf.layers import long_conv
from tests.layers.gradients import gradients
from tests.layers.state_space_oracles import sin_loss

pytestmark = pytest.mark.float64


def numpy_causal(u, kernel):
    length = u.shape[1]
    return np.stack(
        [
            np.stack([np.convolve(u[b, :, c], kernel[c])[:length] for c in range(u.shape[2])], -1)
            for b in range(u.shape[0])
        ]
    )


def example(length=19, channels=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(2, length, channels)), rng.normal(size=(channels, length))


def both(u, kernel):
    return long_conv.causal_conv(u, kernel), long_conv.anticausal_conv(u, kernel)


@pytest.mark.parametrize("form", ["fft", "direct"])
def test_causal_and_anticausal_equal_numpy(form):
    u, kernel = example()
    if form == "direct":
        with long_conv.export_form():
            causal, anticausal = both(u, kernel)
    else:
        causal, anticausal = both(u, kernel)
    np.testing.assert_allclose(causal, numpy_causal(u, kernel), atol=1e-12)
    np.testing.assert_allclose(anticausal, numpy_causal(u[:, ::-1], kernel)[:, ::-1], atol=1e-12)


def test_export_form_is_only_inside_its_block():
    with long_conv.export_form():
        assert long_conv.exporting()
    assert not long_conv.exporting()


def test_fft_and_direct_gradients_agree():
    u, kernel = (keras.Variable(a, dtype="float64") for a in example(length=11))
    grads = [
        gradients(sin_loss(lambda conv=conv: conv(u, kernel)), [u, kernel])
        for conv in (long_conv.fft_conv, long_conv.direct_conv)
    ]
    for fft_grad, direct_grad in zip(*grads):
        np.testing.assert_allclose(fft_grad, direct_grad, atol=1e-10)


@pytest.mark.parametrize("length", [1, 2, 19])
@pytest.mark.parametrize("form", ["fft", "direct"])
def test_bidirectional_is_the_sum_of_both_directions(length, form):
    u, forward = example(length)
    backward = np.random.default_rng(5).normal(size=forward.shape)
    want = numpy_causal(u, forward) + numpy_causal(u[:, ::-1], backward)[:, ::-1]
    if form == "direct":
        with long_conv.export_form():
            got = long_conv.bidirectional_conv(u, forward, backward)
    else:
        got = long_conv.bidirectional_conv(u, forward, backward)
    np.testing.assert_allclose(got, want, atol=1e-12)
