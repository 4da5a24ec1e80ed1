"""The encoder's blocks: one layout per model family, around a sequence mixer from the registry.

`model.block` names the layout (`BLOCKS`); each is the one its papers train with:

- "transformer" (Vaswani et al.; LRA's encoder): pre-LayerNorm, x + mixer(LN x), then
  x + MLP(LN x) with MLP = Dense(mlp_dim) -> GELU -> Dense(width). Any mechanism.
- "s4" (S4 and S4D, github.com/state-spaces/s4, `SequenceResidualBlock` around `S4Block`):
  post-norm LN(x + dropout(mixer(x))), no MLP; the state space runs on the residual stream itself
  (no value projection) and ends in GELU -> dropout -> Dense(2 width) -> GLU. s4d and s5.
- "s5" (S5, github.com/lindermanlab/S5, `SequenceLayer` with `half_glu2`): pre-norm
  x + dropout(mixer(LN x)), no MLP; the state space runs on its input and ends in
  y * sigmoid(Dense(dropout(gelu(y)))). s4d and s5.
- "mega" (Mega, github.com/facebookresearch/mega, its LRA encoder layer): post-norm
  LN(x + mega(x)), where mega(x) = phi (H - x) makes Mega's gated residual x + phi (H - x) over the
  block's un-normalised input, then LN(x + Dense(dropout(silu(Dense(mlp_dim)(x))))). mega.

The references normalise S4 and S5 blocks with BatchNorm in their LRA runs; here every block uses
LayerNorm, which padding cannot reach (BatchNorm's statistics would count padded positions). A
pre-norm layout ends the encoder with a final LayerNorm, a post-norm one does not (its blocks end
normalised).
"""

import math

import keras
from keras import ops

import arena_tf.layers as attention_layers
from arena_tf.layers.mega import Mega
from arena_tf.layers.mixer import Mixer
from arena_tf.remat import rematerialized

SERIALIZABLE = keras.saving.register_keras_serializable(package="arena_tf")

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@ops.custom_gradient
def gelu(x):
    """Exact GELU written with erf (Keras's built-in becomes an `Erfc` node that ONNX lacks).

    The gradient is written out so that training keeps only `x` for it: left to autodiff, the
    formula keeps three more tensors of the MLP's width per block (x / sqrt 2, x / 2 and 1 + erf).
    """

    def gradient(*args, upstream=None):
        upstream = args[0] if upstream is None else upstream
        cdf = 0.5 * (1.0 + ops.erf(x * _INV_SQRT2))
        density = ops.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return upstream * (cdf + x * density)

    return 0.5 * x * (1.0 + ops.erf(x * _INV_SQRT2)), gradient


class Block(keras.layers.Layer):
    """A residual block around the mechanism `attention` (a registry name).

    Args:
        attention: str, the mechanism's registry name.
        attention_params: dict, its own parameters (`model.attention_params`).
        num_heads, head_dim: int, the mechanism's heads and their width.
        mlp_dim: int, the hidden width of the feed-forward sublayer, where the layout has one.
        dropout: float, dropout on each sublayer's output (and the MLP's hidden units).
        attention_dropout: float, the mechanism's own dropout.
        max_len: int, the longest sequence the mechanism takes.
        seed: int, seed of the block's dropout and the mechanism's draws; default 0.
        remat: bool, whether training recomputes the block's forward pass in the backward pass
            rather than storing it (the block's input is all it keeps); a training choice, so not
            part of the saved configuration. Default False.
    """

    # What the layout sets on the mechanism (a mixer's ends); a user's attention_params may not.
    mixer_params = {}
    # Whether the block normalises its sublayers' inputs (then the encoder ends with a LayerNorm).
    prenorm = True
    # Whether the mechanism runs on the residual stream's own channels (no value projection): the
    # encoder then gives it one head as wide as the stream.
    on_residual_stream = False

    def __init__(
        self,
        attention,
        attention_params,
        num_heads,
        head_dim,
        mlp_dim,
        dropout,
        attention_dropout,
        max_len,
        seed=0,
        remat=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.check_mechanism(attention)
        clash = sorted(set(attention_params) & set(self.mixer_params))
        if clash:
            raise ValueError(
                f"model.attention_params sets {', '.join(clash)}, which the {self.layout!r} block "
                f"sets itself ({self.mixer_params}); drop it from model.attention_params or "
                "choose model.block=transformer"
            )
        self.remat = remat
        self.attention_name = attention
        self.attention_params = dict(attention_params)
        self.num_heads, self.head_dim, self.mlp_dim = num_heads, head_dim, mlp_dim
        self.dropout_rate, self.attention_dropout = dropout, attention_dropout
        self.max_len = max_len
        self.seed = seed
        self.attention = attention_layers.get(
            attention,
            num_heads=num_heads,
            head_dim=head_dim,
            max_len=max_len,
            attention_dropout=attention_dropout,
            seed=seed,
            name="attention",
            dtype=self.dtype_policy,
            **attention_params,
            **self.mixer_params,
        )
        self.dropout = keras.layers.Dropout(dropout, seed=seed, dtype=self.dtype_policy)
        self.supports_masking = True

    @property
    def layout(self):
        """The block's name in BLOCKS."""
        return next(name for name, cls in BLOCKS.items() if cls is type(self))

    @classmethod
    def check_mechanism(cls, attention):
        """ValueError where the layout cannot hold the mechanism `attention`."""

    def norm(self, name):
        return keras.layers.LayerNormalization(epsilon=1e-6, name=name, dtype=self.dtype_policy)

    def dense(self, units, name, input_shape, activation=None):
        layer = keras.layers.Dense(units, activation=activation, name=name, dtype=self.dtype_policy)
        layer.build(input_shape)
        return layer

    def call(self, x, mask, training=False):
        if self.remat and training:
            return rematerialized(self, lambda x: self.forward(x, mask, training))(x)
        return self.forward(x, mask, training)

    def forward(self, x, mask, training):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def mixed(self, x, mask, training):
        """dropout(mechanism(x))."""
        return self.dropout(self.attention(x, mask=mask, training=training), training=training)

    def get_config(self):
        return {
            **super().get_config(),
            "attention": self.attention_name,
            "attention_params": self.attention_params,
            "num_heads": self.num_heads,
            "head_dim": self.head_dim,
            "mlp_dim": self.mlp_dim,
            "dropout": self.dropout_rate,
            "attention_dropout": self.attention_dropout,
            "max_len": self.max_len,
            "seed": self.seed,
        }


def _require(block, accepted, attention):
    cls = attention_layers.lookup(attention)
    if not issubclass(cls, accepted):
        names = ", ".join(
            name
            for name in attention_layers.available()
            if issubclass(attention_layers.lookup(name), accepted)
        )
        raise ValueError(
            f"model.block={block} cannot hold model.attention={attention}; expected "
            f"one of {names}; choose model.block=transformer for {attention}"
        )


@SERIALIZABLE
class TransformerBlock(Block):
    """Pre-LayerNorm Transformer block: x + mechanism(LN x), then x + MLP(LN x)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.attention_norm = self.norm("attention_norm")
        self.mlp_norm = self.norm("mlp_norm")

    def build(self, input_shape):
        self.attention_norm.build(input_shape)
        self.attention.build(input_shape)
        self.mlp_norm.build(input_shape)
        self.mlp_in = self.dense(self.mlp_dim, "mlp_in", input_shape)
        self.mlp_out = self.dense(
            input_shape[-1], "mlp_out", tuple(input_shape[:-1]) + (self.mlp_dim,)
        )

    def forward(self, x, mask, training):
        x = x + self.mixed(self.attention_norm(x), mask, training)
        hidden = self.dropout(gelu(self.mlp_in(self.mlp_norm(x))), training=training)
        return x + self.dropout(self.mlp_out(hidden), training=training)


class StateSpaceBlock(Block):
    """A state space on the residual stream (no value projection) with one norm and no MLP."""

    on_residual_stream = True

    @classmethod
    def check_mechanism(cls, attention):
        _require(next(name for name, block in BLOCKS.items() if block is cls), Mixer, attention)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mixer_norm = self.norm("mixer_norm")

    def build(self, input_shape):
        self.mixer_norm.build(input_shape)
        self.attention.build(input_shape)


@SERIALIZABLE
class S4Block(StateSpaceBlock):
    """S4's post-norm residual block: LN(x + dropout(GLU(Dense(2H)(GELU(state space(x))))))."""

    mixer_params = {"project_input": False, "output_gate": "glu"}
    prenorm = False

    def forward(self, x, mask, training):
        return self.mixer_norm(x + self.mixed(x, mask, training))


@SERIALIZABLE
class S5Block(StateSpaceBlock):
    """S5's pre-norm residual block: x + dropout(half-GLU(state space(LN x)))."""

    mixer_params = {"project_input": False, "output_gate": "half_glu"}

    def forward(self, x, mask, training):
        return x + self.mixed(self.mixer_norm(x), mask, training)


@SERIALIZABLE
class MegaBlock(Block):
    """Mega's LRA layer: LN(x + phi (H - x)) (its gated residual), then a post-norm SiLU MLP."""

    prenorm = False

    @classmethod
    def check_mechanism(cls, attention):
        _require("mega", Mega, attention)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.attention_norm = self.norm("attention_norm")
        self.mlp_norm = self.norm("mlp_norm")

    def build(self, input_shape):
        self.attention.build(input_shape)
        self.attention_norm.build(input_shape)
        self.mlp_in = self.dense(self.mlp_dim, "mlp_in", input_shape)
        self.mlp_out = self.dense(
            input_shape[-1], "mlp_out", tuple(input_shape[:-1]) + (self.mlp_dim,)
        )
        self.mlp_norm.build(input_shape)

    def forward(self, x, mask, training):
        x = self.attention_norm(x + self.mixed(x, mask, training))
        hidden = self.dropout(ops.silu(self.mlp_in(x)), training=training)
        return self.mlp_norm(x + self.dropout(self.mlp_out(hidden), training=training))


# model.block -> its layout (config.BLOCKS lists the same names).
BLOCKS = {"transformer": TransformerBlock, "s4": S4Block, "s5": S5Block, "mega": MegaBlock}
