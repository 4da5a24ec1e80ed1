"""The base attention layer every mechanism extends.

It owns the query / key / value projections, the split into heads, the padding mask, attention
dropout and the output projection. A mechanism implements one method,
`attend(q, k, v, mask, training)`, over [batch, heads, length, head_dim] tensors and a bool
[batch, length] mask (True = real token), and returns [batch, heads, length, head_dim].

Mixed precision: the layer's dtype policy (`dtype="mixed_float16"`, or the global policy when none
is given) is passed to every inner layer, so q, k, v, the dropout and the output are in the compute
dtype and the weights in the variable dtype (float32 under a mixed policy). Mechanisms compute
softmaxes, kernel feature maps, normalisers and Sinkhorn iterations in float32 and return the
compute dtype.
"""

import keras
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers.long_conv import exporting
from arena_tf.layers.softmax_attention import attention_weights, softmax_attention


class Attention(keras.layers.Layer):
    """Multi-head attention skeleton; subclasses register with `@register(name)`.

    Args:
        num_heads: number of heads.
        head_dim: width of each head (query, key and value).
        max_len: longest sequence the layer accepts (mechanisms with length-shaped weights size
            them by it).
        attention_dropout: dropout rate on explicit attention weights, training only.
        seed: seed for everything the layer draws (dropout, random features, hashes).
        use_bias: whether the projections have biases.
    """

    # The paper the mechanism comes from, as "Authors (year), Title", for docs and the catalogue.
    paper = ""
    # Quadratic in length by definition (full, synthesizer); every other mechanism must not be.
    quadratic = False
    # Cost of one head over a length-L sequence of head width d, for docs and the README catalogue.
    complexity = "O(L^2 d)"

    # Projections a mechanism uses; one that is not needed gets None in `attend` and no weights.
    projections = ("query", "key", "value")
    # Whether `attend(q, k, v)` is A v with weights A from the projected q and k, which the
    # analysis tools recover (arena_tf/analysis/weights.py); not so for the state-space mixers.
    has_attention_weights = True

    def __init__(
        self,
        num_heads,
        head_dim,
        max_len=4096,
        attention_dropout=0.0,
        seed=0,
        use_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.num_heads = checks.positive_int(owner, "num_heads", num_heads)
        self.head_dim = checks.positive_int(owner, "head_dim", head_dim)
        self.max_len = checks.positive_int(owner, "max_len", max_len)
        self.attention_dropout = checks.probability(owner, "attention_dropout", attention_dropout)
        self.seed = checks.non_negative_int(owner, "seed", seed)
        self.use_bias = checks.boolean(owner, "use_bias", use_bias)
        self.dropout = keras.layers.Dropout(
            self.attention_dropout, seed=self.seed, dtype=self.dtype_policy
        )
        self.supports_masking = True

    # -- building -------------------------------------------------------------------------------

    def build(self, input_shape):
        width = input_shape[-1]
        inner = self.num_heads * self.head_dim
        for name in self.projections:
            dense = self._dense(inner, name)
            dense.build(input_shape)
            setattr(self, f"{name}_dense", dense)
        self.output_dense = self._dense(width, "output")
        self.output_dense.build(tuple(input_shape[:-1]) + (inner,))
        self.build_mechanism(input_shape)

    def _dense(self, units, name):
        """A projection under the layer's own dtype policy (not the global one)."""
        return keras.layers.Dense(units, use_bias=self.use_bias, name=name, dtype=self.dtype_policy)

    def build_mechanism(self, input_shape):
        """Create the mechanism's own weights (projections along length, random features...)."""

    # -- calling --------------------------------------------------------------------------------

    def call(self, inputs, mask=None, training=False):
        mask = self._checked_mask(inputs, mask)
        attended = self.attend(*self.project(inputs), mask, training=training)
        return self.output_dense(self._merge_heads(attended, ops.shape(inputs)[0]))

    def project(self, inputs):
        """(q, k, v) as [batch, heads, length, head_dim]; None for a projection not in use."""
        batch = ops.shape(inputs)[0]
        return tuple(
            self._split_heads(getattr(self, f"{name}_dense")(inputs), batch)
            if name in self.projections
            else None
            for name in ("query", "key", "value")
        )

    def attend(self, q, k, v, mask, training=False):
        """Attended values [batch, heads, length, head_dim] from q, k, v and the padding mask."""
        raise NotImplementedError(f"{type(self).__name__} must implement attend()")

    def dropout_weights(self, weights, training):
        """Attention dropout on explicit attention weights."""
        return self.dropout(weights, training=training)

    def softmax_attend(self, q, k, v, allowed, training):
        """softmax(q k^T) v over the allowed keys (q scaled; `allowed` a bool broadcastable to the
        [..., queries, keys] logits, or None), attention dropout in training included: the
        hand-written backward of `softmax_attention` where no dropout acts, else autodiff."""
        if (training and self.attention_dropout) or exporting():
            weights = attention_weights(q, k, allowed, q.dtype)
            return ops.matmul(self.dropout_weights(weights, training), v)
        return softmax_attention(q, k, v, allowed)

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_mask(self, inputs, mask=None):
        return mask

    def _checked_mask(self, inputs, mask):
        owner = type(self).__name__
        if len(inputs.shape) != 3:
            raise ValueError(
                f"{owner}: inputs of shape {tuple(inputs.shape)} are invalid; expected "
                "[batch, length, width]"
            )
        length = inputs.shape[1]
        if length is not None and length > self.max_len:
            raise ValueError(
                f"{owner}: sequence length {length} exceeds max_len={self.max_len}; shorten the "
                "input or build the layer with a larger max_len"
            )
        if mask is None:
            return ops.ones(ops.shape(inputs)[:2], dtype="bool")
        if len(mask.shape) != 2 or (
            None not in (mask.shape[1], length) and mask.shape[1] != length
        ):
            raise ValueError(
                f"{owner}: mask of shape {tuple(mask.shape)} is invalid; expected "
                f"[batch, length] = [batch, {length}] (True for real tokens)"
            )
        return ops.cast(mask, "bool")

    # Sizes come from the layer's input: after tf2onnx, the shape of a Dense output can read as
    # [batch * length, inner].
    def _split_heads(self, x, batch):
        x = ops.reshape(x, (batch, -1, self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def _merge_heads(self, x, batch):
        x = ops.transpose(x, (0, 2, 1, 3))
        return ops.reshape(x, (batch, -1, self.num_heads * self.head_dim))

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            head_dim=self.head_dim,
            max_len=self.max_len,
            attention_dropout=self.attention_dropout,
            seed=self.seed,
            use_bias=self.use_bias,
        )
        return config
