"""The base of the sequence mixers that are not attention (state-space models).

They sit in the attention registry, so every config, preset, export and benchmark path that takes
`--model=NAME` takes them, and they keep the base layer's contract: input [batch, length, width],
a bool padding mask (True = real token), `max_len`, the dtype policy, the config round trip and
the one-line parameter errors.

A mixer replaces attention by `mix`, between an input and an output end:

    u = value_projection(x), padded positions zeroed     [batch, length, num_heads * head_dim]
    s = mix(u, mask)
    y = output(s)

`num_heads * head_dim` is the number of channels the state-space model runs over. The ends are
chosen by two arguments, which the encoder's blocks set (`arena_tf/blocks.py`):

- `project_input`: True, the value projection above (the Transformer block's attention slot);
  False, the state space runs on its input itself, as S4's and S5's layers do (the channels are
  then the input's width);
- `output_gate`: "none", W dropout(gelu(s)) (the Transformer slot); "glu", S4's
  Linear(H, 2H) then GLU: a * sigmoid(b) for [a, b] = W dropout(gelu(s)); "half_glu", S5's
  `half_glu2`: s * sigmoid(W dropout(gelu(s))).

Zeroing the padding before mixing means that real positions never depend on what the padding
holds, in either direction. `mix` computes in float32 (float64 for a float64 layer, which the oracle
tests use), also under mixed precision; `attention_dropout` acts on the mixer's output here, as the
S4 block's dropout does.
"""

from keras import ops

from arena_tf.layers import checks
from arena_tf.layers.base import Attention


class Mixer(Attention):
    """Input end -> `mix` over num_heads * head_dim channels -> output end.

    Args:
        project_input: bool, whether a value projection feeds the state space (default True);
            False runs it on the input's own channels, which must then number num_heads *
            head_dim.
        output_gate: str, one of OUTPUT_GATES: "none" (default), "glu" (S4) or "half_glu" (S5).
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).
    """

    projections = ("value",)
    has_attention_weights = False

    def __init__(self, project_input=True, output_gate="none", **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.project_input = checks.boolean(owner, "project_input", project_input)
        self.output_gate = checks.one_of(owner, "output_gate", output_gate, OUTPUT_GATES)
        if not project_input:
            self.projections = ()

    def build(self, input_shape):
        width = input_shape[-1]
        if width != self.channels and (not self.project_input or self.output_gate == "half_glu"):
            checks.fail(
                type(self).__name__,
                "num_heads * head_dim",
                self.channels,
                f"the input width {width} with project_input=False or "
                "output_gate='half_glu' "
                "(the state space's channels are the output's)",
            )
        super().build(input_shape)

    def output_units(self, width):
        return {"none": width, "glu": 2 * width, "half_glu": self.channels}[self.output_gate]

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
        u = self.value_dense(inputs) if self.project_input else inputs
        u = ops.cast(u, self.mix_dtype) * ops.cast(mask[..., None], self.mix_dtype)
        s = self.mix(u, mask, training=training)
        y = self.output_dense(
            self.dropout(ops.cast(exact_gelu(s), self.compute_dtype), training=training)
        )
        if self.output_gate == "glu":
            value, gate = ops.split(y, 2, axis=-1)
            return value * ops.sigmoid(gate)
        if self.output_gate == "half_glu":
            return ops.cast(s, self.compute_dtype) * ops.sigmoid(y)
        return y

    def mix(self, u, mask, training=False):
        """[batch, length, channels] (padding zeroed) -> [batch, length, channels]."""
        raise NotImplementedError(f"{type(self).__name__} must implement mix()")

    def get_config(self):
        config = super().get_config()
        config.update(
            state_size=self.state_size,
            dt_min=self.dt_min,
            dt_max=self.dt_max,
            causal=self.causal,
            project_input=self.project_input,
            output_gate=self.output_gate,
        )
        return config


OUTPUT_GATES = ("none", "glu", "half_glu")


def mix_dtype(layer):
    """float64 for a float64 layer, float32 otherwise (also under mixed precision)."""
    return "float64" if layer.compute_dtype == "float64" else "float32"


def exact_gelu(x):
    """x Phi(x) written with erf: TF's own exact GELU uses Erfc, which tf2onnx does not convert."""
    return 0.5 * x * (1 + ops.erf(x * 0.5**0.5))


def constant_initializer(value):
    """An initializer returning the fixed array `value` (an initialisation computed at build)."""
    return lambda shape, dtype=None: ops.convert_to_tensor(value, dtype=dtype)
