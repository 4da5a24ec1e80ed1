"""Long convolutions along the sequence: the shared core of the state-space mixers.

A state-space mixer with a time-invariant recurrence materialises its kernel k [channels, L] (the
impulse response of the recurrence) and applies it to u [batch, L, channels]:

    causal:      y[b, t, c] = sum_{s <= t} k[c, t - s] u[b, s, c]
    anticausal:  y[b, t, c] = sum_{s >= t} k[c, s - t] u[b, s, c]    (the causal one, reversed)

Two forms, equal to float32 rounding (tests/layers/test_long_conv.py):

- FFT: u and k zero-padded to 2L, rfft, product, irfft; O(L log L) time and O(L) memory per
  channel. Training and Keras inference use it.
- Depthwise convolution whose window is the whole kernel: O(L^2) time, O(L) memory. Exports use
  it: ONNX has no real FFT that tf2onnx and ONNX Runtime both take (RFFT converts to a node ONNX
  Runtime does not register at opset 17 or 18; IRFFT, Real, Imag and Complex do not convert at
  all: tests/export/test_export_forms.py). `export_form()` selects it while a graph is traced for
  export.

The mixers call them in float32 (float64 for a float64 layer), also under mixed precision.
"""

import contextlib
import contextvars
import math

from keras import ops

from arena_tf.layers import ops as aops

_DIRECT = contextvars.ContextVar("arena_tf_direct_convolution", default=False)


@contextlib.contextmanager
def export_form():
    """Within this block, long convolutions are traced as depthwise convolutions (no FFT)."""
    token = _DIRECT.set(True)
    try:
        yield
    finally:
        _DIRECT.reset(token)


def exporting():
    """Whether a graph is being traced for export (inside `export_form()`)."""
    return _DIRECT.get()


def causal_conv(u, kernel):
    """u [batch, L, channels], kernel [channels, L] -> [batch, L, channels] in u's dtype."""
    kernel = ops.cast(kernel, u.dtype)
    return direct_conv(u, kernel) if exporting() else fft_conv(u, kernel)


def anticausal_conv(u, kernel):
    """y[t] = sum_{s >= t} k[s - t] u[s]: the causal convolution of the time-reversed input."""
    return ops.flip(causal_conv(ops.flip(u, axis=1), kernel), axis=1)


def bidirectional_conv(u, forward, backward):
    """causal_conv(u, forward) + anticausal_conv(u, backward), as one FFT convolution.

    Over a circle of 2L positions the two kernels fit in one: lags 0 .. L - 1 hold `forward`,
    lags -1 .. -(L - 1) (positions 2L - 1 .. L + 1) hold `backward`, lag 0 both; one rfft of u,
    one product and one irfft instead of two of each.
    """
    if exporting():
        return causal_conv(u, forward) + anticausal_conv(u, backward)
    forward, backward = ops.cast(forward, u.dtype), ops.cast(backward, u.dtype)
    length = ops.shape(u)[1]
    first = aops.slice_axis(forward, 1, 0, 1) + aops.slice_axis(backward, 1, 0, 1)
    later = ops.flip(aops.slice_axis(backward, 1, 1, length - 1), axis=1)
    kernel = ops.concatenate(
        [first, aops.slice_axis(forward, 1, 1, length - 1), ops.zeros_like(first), later], axis=1
    )
    return fft_conv(u, kernel)


def fft_conv(u, kernel):
    """The causal convolution through real FFTs of length 2L (no circular wrap-around); a kernel
    of 2L positions is applied circularly (`bidirectional_conv`)."""
    length = ops.shape(u)[1]
    size = 2 * length
    u_real, u_imag = ops.rfft(ops.transpose(u, (0, 2, 1)), size)  # [batch, channels, L + 1]
    k_real, k_imag = ops.rfft(kernel, size)
    product = (u_real * k_real - u_imag * k_imag, u_real * k_imag + u_imag * k_real)
    y = aops.slice_axis(ops.irfft(product, size), 2, 0, length)
    return ops.transpose(y, (0, 2, 1))


def direct_conv(u, kernel):
    """The causal convolution as one depthwise convolution with an L-wide window.

    Keras convolutions correlate, so the kernel is flipped; L - 1 zeros before the input make the
    window at position t cover positions t - L + 1 .. t.
    """
    length = ops.shape(u)[1]
    window = ops.flip(ops.transpose(kernel), axis=0)[:, :, None]  # [L, channels, 1]
    padded = ops.pad(u, [[0, 0], [length - 1, 0], [0, 0]])
    return ops.depthwise_conv(padded, window, strides=1, padding="valid")


def square_blocks(length):
    """(B, Q) with B = ceil(sqrt(L)) and Q = ceil(L / B), so that l = q B + r covers 0 .. L - 1;
    Python ints for a static length, tensors for one known only when the graph runs.

    The mixers materialise their kernels from powers z^l = z^(q B) z^r: exp, cos and sin on
    O(sqrt(L)) values per mode and one matmul, instead of O(L) values per mode."""
    if isinstance(length, int):
        block = math.isqrt(max(length - 1, 0)) + 1
        return block, -(-length // block)
    block = ops.cast(ops.ceil(ops.sqrt(ops.cast(length, "float32"))), "int32")
    return block, (length + block - 1) // block
