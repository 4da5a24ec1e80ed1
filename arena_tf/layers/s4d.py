"""S4D: the diagonal structured state space (Gu et al., 2022, "On the Parameterization and
Initialization of Diagonal State Space Models").

Each channel c runs a linear recurrence over N/2 complex modes with diagonal A (B folded into C):

    x_t = exp(dt A) x_{t-1} + (exp(dt A) - 1) / A * u_t          (zero-order hold)
    y_t = 2 Re(C x_t) + D u_t

Being time-invariant, the recurrence is a convolution of u with the kernel
K[l] = 2 Re(sum_n C_n (exp(dt A_n) - 1) / A_n * exp(dt A_n l)), materialised for the sequence's
length in real arithmetic (ONNX has no complex type) and applied by FFT (`long_conv`). By default
the mixer is bidirectional, as S4's classifiers are: a second C gives a kernel run over the
reversed sequence, and the two outputs add; `causal=True` keeps only the forward one, so no output
depends on a later input. A and dt are shared by the two directions, as in S4.

Initialisation as in the paper: S4D-Lin (A_n = -1/2 + i pi n) or S4D-Inv
(A_n = -1/2 + i (N / pi) (N / (2n + 1) - 1)); C complex normal of variance 1; dt log-uniform in
[dt_min, dt_max]; D standard normal.

Time O(L log L) per channel for the convolution plus O(L N) matmul work for the kernel (its exp,
cos and sin on O(N sqrt L) values: `long_conv.square_blocks`); memory O(L + N sqrt L) per channel.

    layer = arena_tf.layers.get("s4d", num_heads=4, head_dim=32, state_size=64)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import math

import numpy as np
from keras import initializers, ops

from arena_tf.layers import checks, long_conv
from arena_tf.layers import ops as aops
from arena_tf.layers.mixer import Mixer, constant_initializer
from arena_tf.layers.registry import register


def lin_imaginary(modes, state_size):
    """S4D-Lin: Im(A_n) = pi n."""
    return math.pi * np.arange(modes)


def inv_imaginary(modes, state_size):
    """S4D-Inv: Im(A_n) = (N / pi) (N / (2n + 1) - 1)."""
    return state_size / math.pi * (state_size / (2 * np.arange(modes) + 1) - 1)


INITS = {"lin": lin_imaginary, "inv": inv_imaginary}


def zoh_input_gain(a_real, a_imag, dt):
    """(exp(dt A) - 1) / A for A = a_real + i a_imag, as (real, imag) in real arithmetic."""
    e_real, e_imag = aops.complex_exp(a_real * dt, a_imag * dt)
    e_real = e_real - 1
    norm = a_real**2 + a_imag**2
    return (e_real * a_real + e_imag * a_imag) / norm, (e_imag * a_real - e_real * a_imag) / norm


def powers(a_real, a_imag, dt, length, dtype):
    """exp(dt A l) for l = 0 .. length - 1, as (real, imag) [..., modes, length]."""
    steps = ops.arange(length, dtype=dtype)
    return aops.complex_exp((a_real * dt)[..., None] * steps, (a_imag * dt)[..., None] * steps)


def diagonal_kernel(c_real, c_imag, a_real, a_imag, dt, length, dtype):
    """K[d, h, l] = 2 Re(sum_n C[d, h, n] (exp(dt A) - 1) / A exp(dt A l)) for the S4D recurrence.

    c_*: [directions, channels, modes]; a_*: [channels, modes]; dt: [channels, 1].

    With l = q B + r and B about sqrt(L), exp(dt A l) = exp(dt A B q) exp(dt A r): the kernel of
    each channel is one complex product [directions * Q, modes] @ [modes, B]. exp, cos and sin
    then run on O(modes sqrt(L)) values per channel instead of O(modes L), and no
    [channels, modes, L] tensor exists (at 4,096 tokens and 256 channels those functions were
    28% of s4d's forward + backward time: `python -m arena_tf.benchmark profile s4d`).
    """
    channels, modes = a_real.shape
    gain = zoh_input_gain(a_real, a_imag, dt)
    weight = (c_real * gain[0] - c_imag * gain[1], c_real * gain[1] + c_imag * gain[0])
    block, blocks = long_conv.square_blocks(length)
    outer = powers(a_real, a_imag, dt * ops.cast(block, dtype), blocks, dtype)  # [C, N, Q]
    inner = powers(a_real, a_imag, dt, block, dtype)  # [C, N, B]
    weight = [ops.transpose(w, (1, 0, 2))[:, :, None, :] for w in weight]  # [C, d, 1, N]
    outer = [ops.transpose(p, (0, 2, 1))[:, None, :, :] for p in outer]  # [C, 1, Q, N]
    left = (
        weight[0] * outer[0] - weight[1] * outer[1],
        weight[0] * outer[1] + weight[1] * outer[0],
    )
    left = [ops.reshape(x, (channels, -1, modes)) for x in left]  # [C, d * Q, N]
    kernel = ops.matmul(left[0], inner[0]) - ops.matmul(left[1], inner[1])  # [C, d * Q, B]
    kernel = ops.reshape(kernel, (channels, c_real.shape[0], -1))  # [C, d, Q * B]
    kernel = ops.reshape(aops.slice_axis(kernel, 2, 0, length), (channels, c_real.shape[0], length))
    return 2 * ops.transpose(kernel, (1, 0, 2))  # the reshape keeps static sizes in a graph


@register("s4d")
class S4D(Mixer):
    """Diagonal state space over num_heads * head_dim channels, as an FFT convolution.

    Args:
        state_size: N, the state size of S4D (N / 2 complex modes per channel; default 64).
        init: "lin" (S4D-Lin) or "inv" (S4D-Inv) for the imaginary parts of A.
        dt_min, dt_max: range of the log-uniform initial step sizes.
        causal: one direction only (an output never depends on a later input); default False:
            bidirectional, for classification.
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The mixed sequence: a [batch, length, width] tensor like the input (the optional
        bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("s4d", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Gu et al., 2022, "On the Parameterization and Initialization of Diagonal State
            Space Models", arXiv:2206.11893; github.com/state-spaces/s4.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = (
        "Gu et al. (2022), On the Parameterization and Initialization of Diagonal State "
        "Space Models"
    )
    complexity = "O(L log L + L N) per channel"
    state_space_weights = ("log_dt", "log_a_real", "a_imag")

    def __init__(self, state_size=64, init="lin", dt_min=0.001, dt_max=0.1, causal=False, **kwargs):
        super().__init__(**kwargs)
        self.set_state_space(state_size, dt_min, dt_max, causal)
        self.init = checks.one_of(type(self).__name__, "init", init, tuple(INITS))

    def build_mechanism(self, input_shape):
        modes, channels = self.state_size // 2, self.channels
        imaginary = np.tile(INITS[self.init](modes, self.state_size), (channels, 1))
        self.log_dt = self.add_weight(
            name="log_dt",
            shape=(channels, 1),
            initializer=initializers.RandomUniform(
                math.log(self.dt_min), math.log(self.dt_max), seed=self.seed
            ),
        )
        self.log_a_real = self.add_weight(
            name="log_a_real",
            shape=(channels, modes),
            initializer=initializers.Constant(math.log(0.5)),
        )
        self.a_imag = self.add_weight(
            name="a_imag", shape=(channels, modes), initializer=constant_initializer(imaginary)
        )
        normal = initializers.RandomNormal(stddev=math.sqrt(0.5), seed=self.seed + 1)
        shape = (self.directions, channels, modes)
        self.c_real = self.add_weight(name="c_real", shape=shape, initializer=normal)
        self.c_imag = self.add_weight(
            name="c_imag",
            shape=shape,
            initializer=(initializers.RandomNormal(stddev=math.sqrt(0.5), seed=self.seed + 2)),
        )
        self.skip = self.add_weight(
            name="skip",
            shape=(channels,),
            initializer=(initializers.RandomNormal(stddev=1.0, seed=self.seed + 3)),
        )

    def kernel(self, length):
        """The materialised kernels [directions, channels, length] (forward first)."""
        dtype = self.mix_dtype
        weights = [
            ops.cast(w, dtype)
            for w in (self.c_real, self.c_imag, self.log_a_real, self.a_imag, self.log_dt)
        ]
        c_real, c_imag, log_a_real, a_imag, log_dt = weights
        return diagonal_kernel(
            c_real, c_imag, -ops.exp(log_a_real), a_imag, ops.exp(log_dt), length, dtype
        )

    def mix(self, u, mask, training=False):
        kernels = ops.unstack(self.kernel(ops.shape(u)[1]), axis=0)  # plain slices' gradients
        y = u * ops.cast(self.skip, u.dtype)
        if self.causal:
            return y + long_conv.causal_conv(u, kernels[0])
        return y + long_conv.bidirectional_conv(u, kernels[0], kernels[1])

    def get_config(self):
        config = super().get_config()
        config.update(init=self.init)
        return config
