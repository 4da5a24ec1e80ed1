"""The LRA encoder: embeddings, blocks, a final LayerNorm after pre-norm blocks, pooling.

The blocks are the layout `model.block` names (`arena_tf.blocks`: the Transformer's pre-LayerNorm
block by default, or S4's, S5's or Mega's own), each around a mechanism from the registry
(`arena_tf.layers.get`), so every mechanism plugs in here.
"""

import math

import keras
from keras import ops

from arena_tf.blocks import BLOCKS
from arena_tf.config import ModelConfig

SERIALIZABLE = keras.saving.register_keras_serializable(package="arena_tf")


def sinusoids(positions, width):
    """[n, width] sinusoidal embeddings (Vaswani et al.) of float positions [n]: sine and cosine
    pairs at rates 10000^(-2i / width)."""
    rates = ops.exp(ops.arange(0, width, 2, dtype="float32") * (-math.log(10000.0) / width))
    angles = positions[:, None] * rates[None, :]
    pairs = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)  # [n, width / 2 rounded up, 2]
    return ops.reshape(pairs, (-1, 2 * ops.shape(rates)[0]))[:, :width]


def image_side(max_len, prefix=0):
    """The side of the square image behind `max_len` positions after `prefix` other tokens;
    ValueError where they are not a square."""
    side = math.isqrt(max_len - prefix)
    if side * side != max_len - prefix:
        raise ValueError(
            f"sinusoidal_2d positions need a square image, but max_len is {max_len} "
            f"with {prefix} token(s) in front of the image"
        )
    return side


def grid_sinusoids(max_len, width, prefix=0):
    """[max_len, width] embeddings of a square image read row by row after `prefix` other tokens
    (a CLS token in front), which get zeros: the first half of the width encodes the row, the
    second the column (MAE's 2-D sine-cosine table, He et al. 2022, up to the order of channels)."""
    side = image_side(max_len, prefix)
    cells = ops.arange(side * side, dtype="float32")
    rows, columns = ops.floor(cells / side), ops.mod(cells, side)
    half = width // 2
    table = ops.concatenate([sinusoids(rows, half), sinusoids(columns, width - half)], axis=-1)
    return ops.pad(table, [[prefix, 0], [0, 0]])


# config.position_embedding -> [length, width] table added to the inputs, from the layer's settings.
POSITION_TABLES = {
    "sinusoidal": lambda layer, length, width: sinusoids(
        ops.cast(ops.arange(length), "float32"), width
    ),
    "sinusoidal_2d": lambda layer, length, width: grid_sinusoids(
        layer.max_len, width, layer.prefix
    )[:length],
    "learned": lambda layer, length, width: layer.table[:length],
    "none": None,
}


@SERIALIZABLE
class PositionEmbedding(keras.layers.Layer):
    """Adds position embeddings to [batch, length, width]: "sinusoidal" (Vaswani et al.),
    "sinusoidal_2d" (row and column of a square image after `prefix` tokens, `grid_sinusoids`),
    "learned", or "none" (state-space mixers carry position in their kernels, as in S4)."""

    def __init__(self, max_len, kind="sinusoidal", prefix=0, **kwargs):
        super().__init__(**kwargs)
        self.max_len, self.kind, self.prefix = max_len, kind, prefix
        if kind == "sinusoidal_2d":
            image_side(max_len, prefix)  # refuses a max_len that is not a square image

    def build(self, input_shape):
        if self.kind == "learned":
            self.table = self.add_weight(
                name="table",
                shape=(self.max_len, input_shape[-1]),
                initializer=keras.initializers.RandomNormal(stddev=0.02),
            )

    def call(self, x):
        table = POSITION_TABLES[self.kind]
        if table is None:
            return x
        return x + ops.cast(table(self, ops.shape(x)[1], x.shape[-1]), x.dtype)[None]

    def get_config(self):
        return {
            **super().get_config(),
            "max_len": self.max_len,
            "kind": self.kind,
            "prefix": self.prefix,
        }


@SERIALIZABLE
class IntensityEmbedding(keras.layers.Layer):
    """Token ids 0..levels-1 read as pixel brightness: id t -> (2 t / (levels - 1) - 1) * scale +
    shift, two learned vectors, so neighbouring grey levels get neighbouring inputs (a table gives
    each of 256 levels its own vector, learnt only from the pixels that have that level)."""

    def __init__(self, levels, width, **kwargs):
        super().__init__(**kwargs)
        self.levels, self.width = levels, width

    def build(self, input_shape):
        self.scale = self.add_weight(
            name="scale",
            shape=(self.width,),
            initializer=keras.initializers.RandomNormal(stddev=1.0),
        )
        self.shift = self.add_weight(name="shift", shape=(self.width,), initializer="zeros")

    def call(self, tokens):
        brightness = ops.cast(tokens, self.compute_dtype) * (2.0 / (self.levels - 1)) - 1.0
        return brightness[..., None] * ops.cast(self.scale, self.compute_dtype) + ops.cast(
            self.shift, self.compute_dtype
        )

    def compute_output_shape(self, input_shape):
        return tuple(input_shape) + (self.width,)

    def get_config(self):
        return {**super().get_config(), "levels": self.levels, "width": self.width}


def _table_embedding(config, dtype):
    return keras.layers.Embedding(
        config.vocab_size,
        config.emb_dim,
        name="token_embedding",
        dtype=dtype,
        embeddings_initializer=keras.initializers.RandomNormal(stddev=1.0),
    )


def _intensity_embedding(config, dtype):
    return IntensityEmbedding(
        config.vocab_size, config.emb_dim, name="token_embedding", dtype=dtype
    )


# config.token_embedding -> the encoder's first layer.
TOKEN_EMBEDDINGS = {"table": _table_embedding, "intensity": _intensity_embedding}


@SERIALIZABLE
class Encoder(keras.layers.Layer):
    """Tokens int [batch, length] -> pooled features [batch, emb_dim], as configured by ModelConfig.

    Token ids equal to `padding_id` are masked everywhere (attention and mean pooling). With CLS
    pooling a learned CLS vector is prepended (as in the LRA code) and read out after the blocks.
    """

    def __init__(self, config, remat=False, **kwargs):
        super().__init__(**kwargs)
        self.config = config if isinstance(config, ModelConfig) else ModelConfig(**config)
        c = self.config
        self.token_embedding = TOKEN_EMBEDDINGS[c.token_embedding](c, self.dtype_policy)
        self.position_embedding = PositionEmbedding(
            c.encoder_len,
            c.position_embedding,
            prefix=c.encoder_len - c.max_len,
            name="position_embedding",
            dtype=self.dtype_policy,
        )
        self.dropout = keras.layers.Dropout(c.dropout, seed=c.seed, dtype=self.dtype_policy)
        block = BLOCKS[c.block]
        heads = (1, c.emb_dim) if block.on_residual_stream else (c.num_heads, c.head_dim)
        self.blocks = [
            block(
                c.attention,
                c.attention_params,
                *heads,
                c.mlp_dim,
                c.dropout,
                c.attention_dropout,
                c.encoder_len,
                seed=c.seed + i,
                remat=remat,
                name=f"block_{i}",
                dtype=self.dtype_policy,
            )
            for i in range(c.num_layers)
        ]
        self.final_norm = (
            keras.layers.LayerNormalization(
                epsilon=1e-6, name="final_norm", dtype=self.dtype_policy
            )
            if block.prenorm
            else None
        )

    def build(self, input_shape):
        c = self.config
        embedded = tuple(input_shape) + (c.emb_dim,)
        self.token_embedding.build(input_shape)
        if c.pooling == "cls":
            self.cls = self.add_weight(name="cls", shape=(1, 1, c.emb_dim), initializer="zeros")
        self.position_embedding.build(embedded)
        for block in self.blocks:
            block.build(embedded)
        if self.final_norm is not None:
            self.final_norm.build(embedded)

    def call(self, tokens, training=False):
        x, mask = self.embed(tokens)
        x = self.dropout(x, training=training)
        for block in self.blocks:
            x = block(x, mask=mask, training=training)
        return self.pool(x if self.final_norm is None else self.final_norm(x), mask)

    def embed(self, tokens):
        """(x [batch, positions, emb_dim], mask bool [batch, positions]) entering the first block:
        token and position embeddings, with the CLS position first when pooling by CLS."""
        c = self.config
        tokens = ops.cast(tokens, "int32")
        if len(tokens.shape) == 2 and tokens.shape[1] is not None and tokens.shape[1] > c.max_len:
            raise ValueError(
                f"input length {tokens.shape[1]} exceeds max_len={c.max_len}; truncate the input "
                "or raise max_len in the config"
            )
        mask = (
            ops.ones_like(tokens, dtype="bool") if c.padding_id is None else tokens != c.padding_id
        )
        x = self.token_embedding(tokens)
        if c.pooling == "cls":
            batch = ops.shape(x)[0]
            cls = ops.broadcast_to(ops.cast(self.cls, x.dtype), (batch, 1, c.emb_dim))
            x = ops.concatenate([cls, x], axis=1)
            mask = ops.concatenate([ops.ones((batch, 1), dtype="bool"), mask], axis=1)
        return self.position_embedding(x), mask

    def pool(self, x, mask):
        """The CLS position, or the mean over real positions."""
        if self.config.pooling == "cls":
            return x[:, 0]
        weights = ops.cast(mask, x.dtype)[:, :, None]
        return ops.sum(x * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.config.emb_dim)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict()}
