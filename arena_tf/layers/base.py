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

from arena_tf.layers import checks, kernels
from arena_tf.layers.long_conv import exporting
from arena_tf.layers.softmax_attention import attention_weights, softmax_attention

# max_len of a mechanism whose weights are sized by it, when none is given.
DEFAULT_MAX_LEN = 4096


class Attention(keras.layers.Layer):
    """Multi-head attention skeleton; subclasses register with `@register(name)`.

    Args:
        num_heads: number of heads.
        head_dim: width of each head (query, key and value).
        max_len: longest sequence the layer accepts. A mechanism whose weights are sized by it
            (`length_sized`: Linformer's projections, the Synthesizer's logits, BigBird's
            random-block table) defaults to DEFAULT_MAX_LEN; every other mechanism accepts any
            length unless max_len is given (None: no limit).
        attention_dropout: dropout rate on explicit attention weights, training only.
        seed: seed for everything the layer draws (dropout, random features, hashes).
        use_bias: whether the projections have biases.

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).
        A subclass implements `attend` over [batch, heads, length, head_dim] tensors.

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("full", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Vaswani et al., 2017, "Attention Is All You Need", arXiv:1706.03762.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    # The paper the mechanism comes from, as "Authors (year), Title", for docs and the catalogue.
    paper = ""
    # Quadratic in length by definition (full, synthesizer); every other mechanism must not be.
    quadratic = False
    # Cost of one head over a length-L sequence of head width d, for docs and the catalogue.
    complexity = "O(L^2 d)"

    # Projections a mechanism uses; one that is not needed gets None in `attend` and no weights.
    projections = ("query", "key", "value")
    # Whether `attend(q, k, v)` is A v with weights A from the projected q and k, which the
    # analysis tools recover (arena_tf/analysis/weights.py); not so for the state-space mixers.
    has_attention_weights = True
    # What a mechanism sizes by max_len (for the error at a longer input); "" where no weight has
    # a length in its shape, and then max_len defaults to None (any length).
    length_sized = ""
    # Names of the weights that make a state space (its state matrix, step sizes), which S4 and S5
    # train at their own rate and without weight decay (`arena_tf.schedules.make_optimizer`).
    state_space_weights = ()

    def __init__(
        self,
        num_heads,
        head_dim,
        max_len=None,
        attention_dropout=0.0,
        seed=0,
        use_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.num_heads = checks.positive_int(owner, "num_heads", num_heads)
        self.head_dim = checks.positive_int(owner, "head_dim", head_dim)
        if max_len is None and self.length_sized:
            max_len = DEFAULT_MAX_LEN
        self.max_len = None if max_len is None else checks.positive_int(owner, "max_len", max_len)
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
        self.output_dense = self._dense(self.output_units(width), "output")
        self.output_dense.build(tuple(input_shape[:-1]) + (inner,))
        self.build_mechanism(input_shape)

    def output_units(self, width):
        """Width of the output projection for an input `width` wide: the input's own."""
        return width

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

    def attention_kernel(self, length=None, training=False, dtype=None):
        """The kernel (`kernels`' names) the layer's dense softmax takes for sequences of
        `length` (None: unknown) in `dtype` (default: the compute dtype)."""
        return kernels.choose(
            dtype or self.compute_dtype,
            self.head_dim,
            dropout=bool(training and self.attention_dropout),
            exporting=exporting(),
        )

    def softmax_attend(self, q, k, v, allowed, training):
        """softmax(q k^T) v over the allowed keys (q scaled; `allowed` a bool broadcastable to the
        [..., queries, keys] logits, or None), attention dropout in training included, by the
        kernel `kernels.choose` names: the fused kernel, the hand-written backward of
        `softmax_attention`, or (attention dropout acting, or an export traced) autodiff."""
        kernel = self.attention_kernel(training=training, dtype=q.dtype)
        if kernel == kernels.DROPOUT:
            weights = attention_weights(q, k, allowed, q.dtype)
            return ops.matmul(self.dropout_weights(weights, training), v)
        dense = {kernels.FUSED: kernels.fused_attention, kernels.HAND: softmax_attention}
        return dense[kernel](q, k, v, allowed)

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
        if None not in (length, self.max_len) and length > self.max_len:
            sized = (
                f", the length its {self.length_sized} are sized by" if self.length_sized else ""
            )
            raise ValueError(
                f"{owner}: sequence length {length} exceeds max_len={self.max_len}{sized}; "
                "shorten the input or build the layer with a larger max_len"
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
