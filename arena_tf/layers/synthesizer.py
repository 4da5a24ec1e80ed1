"""Synthesizer attention (Tay et al., 2021, "Synthesizer: Rethinking Self-Attention for Transformer
Models").

The attention logits are synthesised instead of (or on top of) being computed from query-key dot
products. Three modes, chosen with `mode`:

- "dense": each query row predicts its own logits over positions with a per-head two-layer MLP,
  Dense(head_dim) -> ReLU -> Dense(max_len), sliced to the first L columns. Unlike the paper,
  which feeds the token x_i itself, the MLP reads the head's query projection of x_i (so each
  head synthesises from its own view of the token).
- "random": a trainable [heads, max_len, max_len] logit matrix, sliced to [L, L], the same for
  every input.
- "factorized": random logits of rank `rank`, R1 [heads, max_len, rank] @ R2[heads, max_len,
  rank]^T, sliced to [L, L].

With `use_dot_product=True` (the LRA default, there with "random") the logits are
synthetic + q k^T / sqrt(d). Padded keys are excluded from the softmax, which is computed in
float32. Only the projections a configuration reads are built: "random" or "factorized" without
the dot product use only the value projection, "dense" without it the query and value ones.

Quadratic in length by definition: time O(L^2 d) and memory O(L^2) per head, plus heads x max_len^2
weights in "random" mode. Synthetic weights are initialised so that logits start with about unit
variance, like scaled dot products of unit-variance queries and keys.

    layer = arena_tf.layers.get("synthesizer", num_heads=4, head_dim=32, max_len=1024,
                                mode="random", use_dot_product=True)
    y = layer(x, mask=mask)          # x [batch, length, width], mask bool [batch, length]
"""

import keras
from keras import ops

from arena_tf.layers import checks
from arena_tf.layers import ops as aops
from arena_tf.layers.base import Attention
from arena_tf.layers.registry import register

MODES = ("dense", "random", "factorized")


def glorot_uniform(fan_in, fan_out):
    """Glorot uniform initialiser for one head's [fan_in, fan_out] slice of a per-head kernel."""
    limit = (6.0 / (fan_in + fan_out)) ** 0.5
    return keras.initializers.RandomUniform(-limit, limit)


@register("synthesizer")
class SynthesizerAttention(Attention):
    """Softmax attention over synthetic logits (dense, random or factorized), optionally plus q k^T.

    Args:
        mode: "dense", "random" or "factorized" (random factorized), see the module docstring.
        rank: rank of the factorized logits (mode "factorized" only).
        use_dot_product: add the scaled dot-product logits q k^T / sqrt(d) to the synthetic ones.
        **kwargs: the base `Attention` arguments (num_heads, head_dim, max_len, ...).

    Returns:
        The attended sequence: a [batch, length, width] tensor like the input (the
        optional bool mask is [batch, length], True = real token).

    Example:
        import keras
        from arena_tf import layers
        x = keras.random.normal((2, 16, 16))  # [batch, length, width]
        y = layers.get("synthesizer", num_heads=2, head_dim=8)(x)  # [2, 16, 16]

    References:
        Tay et al., 2021, "Synthesizer: Rethinking Self-Attention for
            Transformer Models", arXiv:2005.00743.
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """

    quadratic = True
    paper = "Tay et al. (2021), Synthesizer: Rethinking Self-Attention in Transformer Models"
    complexity = "O(L^2 d)"
    length_sized = "synthesized logits (up to [max_len, max_len])"

    def __init__(self, mode="random", rank=8, use_dot_product=True, **kwargs):
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.mode = checks.one_of(owner, "mode", mode, MODES)
        self.rank = checks.positive_int(owner, "rank", rank)
        self.use_dot_product = checks.boolean(owner, "use_dot_product", use_dot_product)

    @property
    def projections(self):
        """The query / key / value projections this mode and `use_dot_product` read."""
        used = {
            "query": self.use_dot_product or self.mode == "dense",
            "key": self.use_dot_product,
            "value": True,
        }
        return tuple(name for name, is_used in used.items() if is_used)

    # -- weights --------------------------------------------------------------------------------

    def build_mechanism(self, input_shape):
        getattr(self, f"_build_{self.mode}")()

    def _build_dense(self):
        heads, dim, max_len = self.num_heads, self.head_dim, self.max_len
        for name, shape, initializer in (
            ("hidden_kernel", (heads, dim, dim), glorot_uniform(dim, dim)),
            ("hidden_bias", (heads, 1, dim), "zeros"),
            ("logits_kernel", (heads, dim, max_len), glorot_uniform(dim, max_len)),
            ("logits_bias", (heads, 1, max_len), "zeros"),
        ):
            setattr(self, name, self.add_weight(name=name, shape=shape, initializer=initializer))

    def _build_random(self):
        self.random_logits = self.add_weight(
            name="random_logits",
            shape=(self.num_heads, self.max_len, self.max_len),
            initializer=keras.initializers.RandomNormal(stddev=1.0),
            autocast=False,
        )

    def _build_factorized(self):
        # Each logit sums `rank` products of two N(0, rank^-1/2) factors: unit variance.
        shape = (self.num_heads, self.max_len, self.rank)
        for name in ("query_factors", "key_factors"):
            init = keras.initializers.RandomNormal(stddev=self.rank**-0.25)  # one draw per weight
            weight = self.add_weight(name=name, shape=shape, initializer=init, autocast=False)
            setattr(self, name, weight)

    # -- logits ---------------------------------------------------------------------------------

    def _dense_logits(self, q, length):
        """[batch, heads, L, L] logits from a per-head MLP of each query row."""
        hidden = ops.relu(ops.matmul(q, self.hidden_kernel) + self.hidden_bias)
        kernel, bias = self.logits_kernel[:, :, :length], self.logits_bias[:, :, :length]
        return ops.cast(ops.matmul(hidden, kernel) + bias, "float32")

    def _random_logits(self, q, length):
        """[1, heads, L, L] trainable logits, the same for every input."""
        return self.random_logits[None, :, :length, :length]

    def _factorized_logits(self, q, length):
        """[1, heads, L, L] logits R1 R2^T of rank `rank`, the same for every input."""
        factors = self.query_factors[:, :length], self.key_factors[:, :length]
        return ops.matmul(factors[0], ops.swapaxes(factors[1], -1, -2))[None]

    def attend(self, q, k, v, mask, training=False):
        length = ops.shape(v)[2]
        logits = getattr(self, f"_{self.mode}_logits")(q, length)
        if self.use_dot_product:
            dot = ops.matmul(q * self.head_dim**-0.5, ops.swapaxes(k, -1, -2))
            logits = logits + ops.cast(dot, "float32")
        weights = aops.masked_softmax(logits, aops.key_mask(mask), v.dtype)
        return ops.matmul(self.dropout_weights(weights, training), v)

    def get_config(self):
        config = super().get_config()
        config.update(mode=self.mode, rank=self.rank, use_dot_product=self.use_dot_product)
        return config
