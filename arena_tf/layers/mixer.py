"""The base of the sequence mixers that are not attention (state-space models).

They sit in the attention registry, so every config, preset, export and benchmark path that takes
`--model=NAME` takes them, and they keep the base layer's contract: input [batch, length, width],
a bool padding mask (True = real token), `max_len`, the dtype policy, the config round trip and
the one-line parameter errors.

A mixer keeps the base's input and output projections and replaces attention by `mix`:

    u = value_projection(x), padded positions zeroed     [batch, length, num_heads * head_dim]
    y = output_projection(dropout(gelu(mix(u, mask))))

`num_heads * head_dim` is the number of channels the state-space model runs over. Zeroing the
padding before mixing means that real positions never depend on what the padding holds, in either
direction. `mix` computes in float32 (float64 for a float64 layer, which the oracle tests use),
also under mixed precision; `attention_dropout` acts on the mixer's output here, as the S4 block's
dropout does.
"""

from keras import ops

from arena_tf.layers import checks
from arena_tf.layers.base import Attention


class Mixer(Attention):
    """Value projection -> `mix` over num_heads * head_dim channels -> GELU -> output projection."""

    projections = ("value",)
    has_attention_weights = False

    def set_state_space(self, state_size, dt_min, dt_max, causal):
        """Check and keep the parameters S4D and S5 share: an even state size (conjugate pairs),
        the range of the initial step sizes and the direction."""
        owner = type(self).__name__
        self.state_size = checks.positive_int(owner, "state_size", state_size)
        if state_size % 2:
            checks.fail(owner, "state_size", state_size, "an even positive integer")
        self.dt_min = checks.positive_float(owner, "dt_min", dt_min)
        self.dt_max = checks.positive_float(owner, "dt_max", dt_max)
        if dt_max < dt_min:
            checks.fail(owner, "dt_max", dt_max, f"a number >= dt_min={dt_min}")
        self.causal = checks.boolean(owner, "causal", causal)

    @property
    def directions(self):
        """1 for a causal mixer, 2 (forward and backward) otherwise."""
        return 1 if self.causal else 2

    @property
    def channels(self):
        return self.num_heads * self.head_dim

    @property
    def mix_dtype(self):
        return mix_dtype(self)

    def call(self, inputs, mask=None, training=False):
        mask = self._checked_mask(inputs, mask)
        u = ops.cast(self.value_dense(inputs), self.mix_dtype)
        u = u * ops.cast(mask[..., None], self.mix_dtype)
        y = ops.cast(exact_gelu(self.mix(u, mask, training=training)), self.compute_dtype)
        return self.output_dense(self.dropout(y, training=training))

    def mix(self, u, mask, training=False):
        """[batch, length, channels] (padding zeroed) -> [batch, length, channels]."""
        raise NotImplementedError(f"{type(self).__name__} must implement mix()")

    def get_config(self):
        config = super().get_config()
        config.update(state_size=self.state_size, dt_min=self.dt_min, dt_max=self.dt_max,
                      causal=self.causal)
        return config


def mix_dtype(layer):
    """float64 for a float64 layer, float32 otherwise (also under mixed precision)."""
    return "float64" if layer.compute_dtype == "float64" else "float32"


def exact_gelu(x):
    """x Phi(x) written with erf: TF's own exact GELU uses Erfc, which tf2onnx does not convert."""
    return 0.5 * x * (1 + ops.erf(x * 0.5**0.5))


def constant_initializer(value):
    """An initializer returning the fixed array `value` (an initialisation computed at build)."""
    return lambda shape, dtype=None: ops.convert_to_tensor(value, dtype=dtype)
