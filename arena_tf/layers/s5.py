"""S5: one multi-input multi-output diagonal state space (Smith et al., 2023, "Simplified State
Space Layers for Sequence Modeling").

All H = num_heads * head_dim channels drive one state of P / 2 complex modes (conjugate symmetry
keeps half of the P eigenvalues):

    x_t = Lambda_bar x_{t-1} + B_bar u_t,   Lambda_bar = exp(dt Lambda),
    B_bar = (Lambda_bar - 1) / Lambda * B                              (zero-order hold)
    y_t = 2 Re(C x_t) + D u_t

The recurrence runs as a parallel scan over pairs (a, b) with (a1, b1) . (a2, b2) =
(a2 a1, a2 b1 + b2), in real arithmetic (ONNX has no complex type): under JAX
`keras.ops.associative_scan` (jax.lax.associative_scan); under TensorFlow a doubling scan of
ceil(log2 L) rounds, because Keras' TensorFlow associative_scan unrolls its recursion into the
graph (`python tools/s5_scan_timing.py` times both: its first step is many times slower, and its
later steps slower too).
Bidirectional by default, as S5's classifiers: a second scan runs backwards over
the same B_bar u and its own C; `causal=True` keeps the forward scan only.

Exports trace the same recurrence as long convolutions of B_bar u with the powers Lambda_bar^l
(`long_conv.export_form`, no scan): equal to rounding, tested.

Initialisation as in S5 (github.com/lindermanlab/S5, s5/ssm.py and its training script): Lambda
from the eigenvalues of the normal part of HiPPO-LegS (real parts -1/2), of size P / J tiled over
J blocks (`blocks`) with block-diagonal eigenvectors V; B real Lecun-normal over (P, H) and C
complex Lecun-normal over (H, P, 2), mapped by V (B_tilde = V^-1 B, C_tilde = C V; S5 draws both
from truncated normals of those variances, here plain normals); dt log-uniform in [dt_min, dt_max]
per mode; D standard normal.

Time O(L H P) for the projections into and out of the state plus O(L P) (associative) or
O(L P log L) (doubling) for the scan; memory O(L P).

    layer = arena_tf.layers.get("s5", num_heads=4, head_dim=32, state_size=64)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import math

import keras
import numpy as np
from keras import initializers, ops

from arena_tf.layers import checks, long_conv
from arena_tf.layers import ops as aops
from arena_tf.layers.mixer import Mixer, constant_initializer
from arena_tf.layers.registry import register
from arena_tf.layers.s4d import powers, zoh_input_gain


def hippo_normal_eigen(state_size):
    """Eigenvalues and eigenvectors of the normal part of HiPPO-LegS (P x P), the P / 2 with
    positive imaginary part (the others are their conjugates).

    HiPPO-LegS plus P P^T (P_n = sqrt(n + 1/2)) is -1/2 I plus a skew-symmetric matrix S, so its
    eigenvalues are -1/2 + i eig(-i S), from one Hermitian eigendecomposition.
    """
    n = np.arange(state_size)
    root = np.sqrt(2 * n + 1)
    skew = 0.5 * np.outer(root, root) * np.sign(n[None, :] - n[:, None])  # n < k: +, n > k: -
    values, vectors = np.linalg.eigh(-1j * skew)
    keep = np.argsort(-values)[: state_size // 2]
    return -0.5 + 1j * values[keep], vectors[:, keep]


def blocked_hippo_eigen(state_size, blocks):
    """S5's block-diagonal initialisation: the eigenvalues of HiPPO-N of size state_size / blocks
    (`hippo_normal_eigen`, half of them) tiled `blocks` times, and the [state_size,
    state_size / 2] eigenvector matrix with the block's eigenvectors on its diagonal."""
    values, vectors = hippo_normal_eigen(state_size // blocks)
    rows, columns = vectors.shape
    diagonal = np.zeros((state_size, state_size // 2), complex)
    for block in range(blocks):
        diagonal[block * rows : (block + 1) * rows, block * columns : (block + 1) * columns] = (
            vectors
        )
    return np.tile(values, blocks), diagonal


def complex_product(a, b):
    """(a_re + i a_im)(b_re + i b_im) for pairs of real tensors."""
    return a[0] * b[0] - a[1] * b[1], a[0] * b[1] + a[1] * b[0]


def linear_recurrence_scan(rate, inputs, reverse=False):
    """x_t = exp(rate) x_{t-1} + inputs_t by a parallel scan; complex values as (real, imag).

    rate: dt Lambda, ([modes], [modes]); inputs: ([batch, L, modes], [batch, L, modes]). Returns
    the states ([batch, L, modes], [batch, L, modes]); reverse=True runs from the end. JAX takes
    `keras.ops.associative_scan`; TensorFlow the doubling scan (a graph of one while loop for any
    length, known or not).
    """
    if reverse:
        states = linear_recurrence_scan(rate, tuple(ops.flip(x, axis=1) for x in inputs))
        return tuple(ops.flip(x, axis=1) for x in states)
    factor = aops.complex_exp(*rate)
    return backend_scan()(factor, inputs)


def backend_scan():
    """The scan this backend runs best: JAX's native associative scan, else the doubling scan."""
    return associative_scan if keras.backend.backend() == "jax" else doubling_scan


def associative_scan(factor, inputs):
    """Blelloch-style scan over pairs (a, b), (a1, b1) . (a2, b2) = (a2 a1, a2 b1 + b2)."""
    shape = ops.shape(inputs[0])
    elements = (ops.broadcast_to(factor[0], shape), ops.broadcast_to(factor[1], shape), *inputs)

    def combine(earlier, later):
        a = complex_product(later[:2], earlier[:2])
        b = complex_product(later[:2], earlier[2:])
        return (a[0], a[1], b[0] + later[2], b[1] + later[3])

    states = ops.associative_scan(combine, elements, axis=1)[2:]
    # In a TF graph the scan's outputs lose their rank; the inputs' shape restores it.
    return tuple(ops.reshape(state, shape) for state in states)


def doubling_scan(factor, inputs):
    """Hillis-Steele scan: after round k, x_t sums the inputs of the last 2^k steps, decayed
    (x_t += a^(2^k) x_(t - 2^k)); ceil(log2 L) rounds of a while loop, for any length."""
    length = ops.shape(inputs[0])[1]

    def shifted(x, step):
        return aops.slice_axis(ops.pad(x, [[0, 0], [step, 0], [0, 0]]), 1, 0, length)

    def round_(step, power_real, power_imag, real, imag):
        earlier = (shifted(real, step), shifted(imag, step))
        added = complex_product((power_real, power_imag), earlier)
        power = complex_product((power_real, power_imag), (power_real, power_imag))
        return step * 2, power[0], power[1], real + added[0], imag + added[1]

    result = ops.while_loop(lambda step, *_: step < length, round_, (1, *factor, *inputs))
    return result[3:]


def linear_recurrence_conv(rate, inputs, reverse=False):
    """The same states as long convolutions of the inputs with exp(rate l) (for exports)."""
    power = powers(rate[0], rate[1], 1.0, ops.shape(inputs[0])[1], inputs[0].dtype)
    conv = long_conv.anticausal_conv if reverse else long_conv.causal_conv
    return (
        conv(inputs[0], power[0]) - conv(inputs[1], power[1]),
        conv(inputs[0], power[1]) + conv(inputs[1], power[0]),
    )


@register("s5")
class S5(Mixer):
    """Multi-input multi-output diagonal state space by parallel scan.

    Args:
        state_size: P, the state size (P / 2 complex modes are kept; default 64).
        blocks: J, the HiPPO-N blocks Lambda comes from (default 1): HiPPO-N of size P / J,
            diagonalised, its eigenvalues tiled J times with block-diagonal eigenvectors (S5's
            `--blocks`; its ListOps run takes P = 16 in J = 8 blocks).
        dt_min, dt_max: range of the log-uniform initial step sizes.
        causal: forward scan only; default False (bidirectional, for classification).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The mixed sequence: a [batch, length, width] tensor like the input (the optional
        bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("s5", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Smith et al., 2023, "Simplified State Space Layers for Sequence Modeling",
            arXiv:2208.04933; github.com/lindermanlab/S5.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    paper = "Smith et al. (2023), Simplified State Space Layers for Sequence Modeling"
    complexity = "O(L H P + L P log L) per layer"
    state_space_weights = ("log_lambda_real", "lambda_imag", "log_dt")

    def __init__(self, state_size=64, blocks=1, dt_min=0.001, dt_max=0.1, causal=False, **kwargs):
        super().__init__(**kwargs)
        self.set_state_space(state_size, dt_min, dt_max, causal)
        owner = type(self).__name__
        self.blocks = checks.positive_int(owner, "blocks", blocks)
        if state_size % (2 * blocks):
            checks.fail(
                owner,
                "blocks",
                blocks,
                f"a divisor of state_size / 2 = {state_size // 2} "
                "(each block an even size, its modes in conjugate pairs)",
            )

    def build_mechanism(self, input_shape):
        channels, size = self.channels, self.state_size
        eigenvalues, vectors = blocked_hippo_eigen(size, self.blocks)
        rng = np.random.default_rng(self.seed)
        # S5's init: B real Lecun-normal over (P, H), C complex Lecun-normal over (H, P, 2) (fan-in
        # P H), then B_tilde = V^-1 B and C_tilde = C V (V block-diagonal, unitary).
        b = vectors.conj().T @ (rng.normal(size=(size, channels)) / math.sqrt(size))
        c = np.stack(
            [
                (rng.normal(size=(channels, size)) + 1j * rng.normal(size=(channels, size)))
                / math.sqrt(size * channels)
                @ vectors
                for _ in range(self.directions)
            ]
        )
        values = {
            "log_lambda_real": np.log(-eigenvalues.real),
            "lambda_imag": eigenvalues.imag,
            "b_real": b.real,
            "b_imag": b.imag,
            "c_real": c.real,
            "c_imag": c.imag,
        }
        for name, value in values.items():
            setattr(
                self,
                name,
                self.add_weight(
                    name=name, shape=value.shape, initializer=constant_initializer(value)
                ),
            )
        log_dt = initializers.RandomUniform(
            math.log(self.dt_min), math.log(self.dt_max), seed=self.seed
        )
        self.log_dt = self.add_weight(name="log_dt", shape=(size // 2,), initializer=log_dt)
        self.skip = self.add_weight(
            name="skip",
            shape=(channels,),
            initializer=(initializers.RandomNormal(stddev=1.0, seed=self.seed + 1)),
        )

    def discretised(self):
        """dt Lambda [modes] and B_bar [modes, channels], each as a (real, imag) pair."""
        dtype = self.mix_dtype
        a_real = -ops.exp(ops.cast(self.log_lambda_real, dtype))
        a_imag = ops.cast(self.lambda_imag, dtype)
        dt = ops.exp(ops.cast(self.log_dt, dtype))
        gain = zoh_input_gain(a_real, a_imag, dt)
        b = (ops.cast(self.b_real, dtype), ops.cast(self.b_imag, dtype))
        return (a_real * dt, a_imag * dt), complex_product((gain[0][:, None], gain[1][:, None]), b)

    def mix(self, u, mask, training=False):
        rate, b_bar = self.discretised()
        inputs = (ops.einsum("blh,ph->blp", u, b_bar[0]), ops.einsum("blh,ph->blp", u, b_bar[1]))
        recurrence = linear_recurrence_conv if long_conv.exporting() else linear_recurrence_scan
        y = u * ops.cast(self.skip, u.dtype)
        for direction in range(self.directions):
            states = recurrence(rate, inputs, reverse=direction == 1)
            c_real = ops.cast(self.c_real[direction], u.dtype)
            c_imag = ops.cast(self.c_imag[direction], u.dtype)
            y = y + 2 * (
                ops.einsum("blp,hp->blh", states[0], c_real)
                - ops.einsum("blp,hp->blh", states[1], c_imag)
            )
        return y

    def get_config(self):
        config = super().get_config()
        config.update(blocks=self.blocks)
        return config
