"""The peers our layers are measured against, on identical shapes: what each is, how to build it
and whether it computes our counterpart's function (`agreement`), one registry per Keras backend
(`BY_BACKEND`). Timing and memory are measured by `layers` (each layer alone) and `pairs` (ours
and the peer in one process), which import this module, never the other way round. A builder
gives a `Built` peer: its layer, a call taking our padding mask through the peer's own mask
argument (`masking`; jax_dpa takes none), and the constructor and arguments that rebuild it.

Under TensorFlow (`PEERS`):
- `keras_mha`: keras.layers.MultiHeadAttention (Keras 3), against `full`.
- From tf-models-official (the `peers` extra; tf_keras layers, which live beside Keras 3 in one
  process):
  `kernel_exp` = KernelAttention(feature_transform="exp"), FAVOR+ with 256 random features, against
  `performer`; `kernel_elu` = KernelAttention(feature_transform="elu", num_random_features=0,
  scale=1), the linear attention of Katharopoulos et al., against `linear`; `bigbird_tfm` =
  BigBirdAttention (block 64, 3 random blocks), against `bigbird`; `block_sparse` =
  BlockSparseAttention (block-diagonal, block 64), against `local` with block 64.

Under JAX (`JAX_PEERS`): `jax_dpa` = `jax.nn.dot_product_attention` between projections in
MultiHeadAttention's layout, against `full`; its implementation ("cudnn" on a GPU that compiles it
for float32, "xla" otherwise: `jax_measure.attention_implementation`) comes from the device record
(`Peer.device_params`) and is part of its row's label, e.g. `jax_dpa[implementation=xla]`.

Where a peer computes the same function as its counterpart (`same_function`), `agreement` copies our
weights into the peer (and our random features, for FAVOR+) and compares the outputs on one input
before any time is compared. BigBirdAttention draws its random blocks differently (and only within
its first 1024 tokens), so it is timed but not compared.
"""

import dataclasses

import keras
import numpy as np

import arena_tf.layers as attention_layers
from arena_tf.benchmark import backends, costs, isolated

# The peers' random features (KernelAttention) and ours differ unless copied; after copying, the
# only differences are the stabilisers and the 1e-6 added to the normaliser.
AGREEMENT_TOLERANCE = 1e-3
# KernelAttention(exp) shifts every feature by the largest exponent of the whole batch (not of each
# query) and adds 1e-6 to the normaliser: on unit-scale inputs (exponents up to ~15) the normaliser
# falls to ~1e-15 and the 1e-6 swamps it, so its output collapses towards zero. Its agreement is
# therefore checked on inputs scaled by 0.3 (`Peer.agreement_scale`), and the unit-scale difference
# is reported beside it.


# The module of tf-models-official (the `peers` extra), which the Model Garden's peers need, and
# how to install it.
MODEL_GARDEN = "official"
INSTALL = {MODEL_GARDEN: 'pip install -c constraints.txt -e ".[peers]"'}


@dataclasses.dataclass(frozen=True)
class Peer:
    title: str
    counterpart: str
    counterpart_params: dict
    build: str  # name of the builder function in this module
    same_function: bool
    # Input scale of the agreement check (see AGREEMENT_TOLERANCE).
    agreement_scale: float = 1.0
    # What is known to differ from the counterpart, for the report.
    note: str = ""
    # Builder parameters taken from the device record of the run: {parameter: record key}.
    device_params: dict = dataclasses.field(default_factory=dict)
    # The module it is imported from beyond Keras (see INSTALL); "" for Keras' own.
    package: str = ""
    # Cost-formula parameters where the peer computes differently from its counterpart (a dense
    # peer of `full` keeps the [L, L] scores at every length).
    cost_params: dict = dataclasses.field(default_factory=dict)


# `full`'s cost without its memory-efficient form: the dense peers' memory estimate.
DENSE = {"blockwise_from": None}

PEERS = {
    "keras_mha": Peer(
        "keras.layers.MultiHeadAttention (Keras 3)",
        "full",
        {},
        "_keras_mha",
        True,
        cost_params=DENSE,
    ),
    "kernel_exp": Peer(
        "KernelAttention(exp), tf-models-official",
        "performer",
        {"num_features": 256, "kernel": "exp"},
        "_kernel_exp",
        True,
        0.3,
        package=MODEL_GARDEN,
        note=(
            "shifts features by the largest exponent of the whole batch and adds 1e-6 to the "
            "normaliser, so on unit-scale inputs its output collapses towards zero (see "
            "AGREEMENT_TOLERANCE in arena_tf/benchmark/peers.py); compared on inputs x 0.3"
        ),
    ),
    "kernel_elu": Peer(
        "KernelAttention(elu), tf-models-official",
        "linear",
        {},
        "_kernel_elu",
        True,
        package=MODEL_GARDEN,
    ),
    "bigbird_tfm": Peer(
        "BigBirdAttention, tf-models-official",
        "bigbird",
        {"block_size": 64, "num_random_blocks": 3},
        "_bigbird",
        False,
        package=MODEL_GARDEN,
    ),
    "block_sparse": Peer(
        "BlockSparseAttention, tf-models-official",
        "local",
        {"block_size": 64},
        "_block_sparse",
        True,
        package=MODEL_GARDEN,
        note=(
            "normalises each block's softmax over the queries, not the keys: its tf_keras "
            "MultiHeadAttention base sets the softmax axis for rank-4 scores [B, N, T, S] "
            "(axis 3), "
            "which on its rank-5 block scores [B, N, blocks, query, key] is the query axis; "
            "reproduced exactly by a softmax over axis 3, while ours equals the one over axis 4. "
            "Same operations and cost, so its time is still comparable."
        ),
    ),
}


JAX_PEERS = {
    "jax_dpa": Peer(
        "jax.nn.dot_product_attention (JAX)",
        "full",
        {},
        "_jax_dot_product",
        True,
        device_params={"implementation": "attention_implementation"},
        cost_params=DENSE,
    ),
}
# Keras backend -> its peers (a peer is a layer of one backend only).
BY_BACKEND = {"tensorflow": PEERS, "jax": JAX_PEERS}


def lookup(name):
    """The Peer named `name`, of any backend."""
    for registry in BY_BACKEND.values():
        if name in registry:
            return registry[name]
    known = [peer for registry in BY_BACKEND.values() for peer in registry]
    raise ValueError(f"unknown peer {name!r}; expected one of {', '.join(known)}")


def names(backend=None):
    """The peers of Keras backend `backend` (of every backend when None), in registry order."""
    chosen = BY_BACKEND.values() if backend is None else [BY_BACKEND[backend]]
    return [name for registry in chosen for name in registry]


def build_params(name, device):
    """The builder parameters of peer `name` on the device of a run (its results' "backend")."""
    return {param: device[key] for param, key in lookup(name).device_params.items()}


# -- builders: a `Built` peer on a shape ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Built:
    """A peer built on a shape: its layer; `call(x, training, mask=None)`, where `mask` is our
    padding mask (bool [batch, length], True for real tokens) passed through the peer's own mask
    argument; how it was constructed (`constructor`: {"class", "arguments"}, enough to rebuild
    it); and how it takes the mask (`masking`, in words; None when it takes none)."""

    layer: object
    call: object
    constructor: dict
    masking: str | None


def _constructed(cls, path, **arguments):
    """cls(**arguments) and the record of it, the class named by its public `path`."""
    return cls(**arguments), {"class": path, "arguments": arguments}


def key_mask(mask, length):
    """[batch, length] bool -> MultiHeadAttention's attention_mask [batch, T, S] (every query
    sees the real keys)."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    return tf.repeat(mask[:, None, :], length, axis=1)


def _multi_head(cls, path, shape, **arguments):
    """A MultiHeadAttention-style peer, `layer(x, x, attention_mask=[B, T, S])`."""
    layer, constructor = _constructed(
        cls, path, num_heads=shape.heads, key_dim=shape.head_dim, **arguments
    )

    def call(x, training, mask=None):
        masks = None if mask is None else key_mask(mask, shape.length)
        return layer(x, x, attention_mask=masks, training=training)

    return Built(
        layer,
        call,
        constructor,
        "attention_mask [batch, T, S] bool: the padding mask of the keys repeated for every query",
    )


def _keras_mha(shape, seed):
    return _multi_head(
        keras.layers.MultiHeadAttention, "keras.layers.MultiHeadAttention", shape, seed=seed
    )


def _kernel(shape, seed, **params):
    import tensorflow as tf  # tensorflow: not imported under the JAX backend
    from official.nlp.modeling.layers.kernel_attention import (  # optional (tf-models-official)
        KernelAttention,
    )

    layer, constructor = _constructed(
        KernelAttention,
        "official.nlp.modeling.layers.kernel_attention.KernelAttention",
        num_heads=shape.heads,
        key_dim=shape.head_dim,
        seed=seed,
        **params,
    )

    def call(x, training, mask=None):
        masks = None if mask is None else tf.cast(mask, x.dtype)
        return layer(x, x, attention_mask=masks, training=training)

    return Built(layer, call, constructor, "attention_mask [batch, S] float (keys only)")


def _kernel_exp(shape, seed):
    return _kernel(shape, seed, feature_transform="exp", num_random_features=256)


def _kernel_elu(shape, seed):
    return _kernel(shape, seed, feature_transform="elu", num_random_features=0, scale=1.0)


def _bigbird(shape, seed):
    import tensorflow as tf  # tensorflow: not imported under the JAX backend
    from official.nlp.modeling.layers.bigbird_attention import (  # optional (tf-models-official)
        BigBirdAttention,
        BigBirdMasks,
    )

    layer, constructor = _constructed(
        BigBirdAttention,
        "official.nlp.modeling.layers.bigbird_attention.BigBirdAttention",
        num_heads=shape.heads,
        key_dim=shape.head_dim,
        from_block_size=64,
        to_block_size=64,
        num_rand_blocks=3,
        max_rand_mask_length=shape.length,
        seed=seed,
    )
    masks = BigBirdMasks(block_size=64)

    def call(x, training, mask=None):
        real = tf.ones(tf.shape(x)[:2], x.dtype) if mask is None else tf.cast(mask, x.dtype)
        return layer(x, x, attention_mask=masks(x, real), training=training)

    return Built(
        layer,
        call,
        constructor,
        "attention_mask = BigBirdMasks(block_size=64)(x, "
        "padding [batch, L] float), all ones without padding",
    )


def _block_sparse(shape, seed):
    # optional (tf-models-official)
    from official.nlp.modeling.layers.block_sparse_attention import (
        MultiHeadAttention,
    )

    return _multi_head(
        MultiHeadAttention,
        "official.nlp.modeling.layers.block_sparse_attention.MultiHeadAttention",
        shape,
        src_block_size=64,
    )


class DotProductAttention(keras.layers.Layer):
    """Self-attention around `jax.nn.dot_product_attention` (JAX backend only): query / key /
    value / output projections in keras.layers.MultiHeadAttention's layout, so `copy_projections`
    copies ours in, and JAX's attention, of `implementation` ("xla" or "cudnn"), between them."""

    def __init__(self, num_heads, head_dim, implementation="xla", seed=0, **kwargs):
        super().__init__(**kwargs)
        self.num_heads, self.head_dim, self.implementation = num_heads, head_dim, implementation
        heads = (None, num_heads, head_dim)
        self._query_dense, self._key_dense, self._value_dense = (
            self._projection("btw,whd->bthd", heads, "hd", seed + i) for i in range(3)
        )
        self._output_dense = self._projection(
            "bthd,hdw->btw", (None, num_heads * head_dim), "w", seed + 3
        )

    @staticmethod
    def _projection(equation, output_shape, bias_axes, seed):
        return keras.layers.EinsumDense(
            equation,
            output_shape,
            bias_axes=bias_axes,
            kernel_initializer=keras.initializers.GlorotUniform(seed),
        )

    def build(self, input_shape):
        for dense in (self._query_dense, self._key_dense, self._value_dense):
            dense.build(input_shape)
        self._output_dense.build(tuple(input_shape[:2]) + (self.num_heads, self.head_dim))

    def call(self, x, training=False):
        q, k, v = (dense(x) for dense in (self._query_dense, self._key_dense, self._value_dense))
        return self._output_dense(dot_product_attention(q, k, v, self.implementation))


def dot_product_attention(q, k, v, implementation="xla"):
    """softmax(q k^T / sqrt(d)) v by `jax.nn.dot_product_attention`, over [batch, length, heads,
    head_dim] arrays (JAX's layout), no mask: the core of the `jax_dpa` peer."""
    import jax  # jax: optional, only under the JAX backend

    return jax.nn.dot_product_attention(q, k, v, implementation=implementation)


def _jax_dot_product(shape, seed, implementation="xla"):
    layer, constructor = _constructed(
        DotProductAttention,
        "arena_tf.benchmark.peers.DotProductAttention",
        num_heads=shape.heads,
        head_dim=shape.head_dim,
        implementation=implementation,
        seed=seed,
    )
    layer.build((shape.batch, shape.length, shape.width))

    def call(x, training, mask=None):
        if mask is not None:
            raise ValueError("jax_dpa takes no padding mask")
        return layer(x, training=training)

    return Built(layer, call, constructor, None)


def build_peer(name, shape, seed=0, **params):
    """The `Built` peer `name` for inputs of `shape`, with its builder's `params`."""
    return globals()[lookup(name).build](shape, seed, **params)


def build(name, shape, seed=0, **params):
    """(layer, call(x, training)) of peer `name` for inputs of `shape` (`build_peer`'s)."""
    built = build_peer(name, shape, seed, **params)
    return built.layer, built.call


# -- agreement with our counterpart (in a child process of the peer's backend) -----------------


def copy_projections(ours, peer, shape):
    """Our query / key / value / output weights into a MultiHeadAttention-style peer."""
    heads, dim, width = shape.heads, shape.head_dim, shape.width
    for name in ("query", "key", "value"):
        dense, target = getattr(ours, f"{name}_dense"), getattr(peer, f"_{name}_dense")
        target.kernel.assign(np.reshape(dense.kernel.numpy(), (width, heads, dim)))
        target.bias.assign(np.reshape(dense.bias.numpy(), target.bias.shape))
    kernel = np.reshape(ours.output_dense.kernel.numpy(), (heads, dim, width))
    layouts = {(heads, dim, width): kernel, (width, heads, dim): np.transpose(kernel, (2, 0, 1))}
    peer._output_dense.kernel.assign(layouts[tuple(peer._output_dense.kernel.shape)])
    peer._output_dense.bias.assign(ours.output_dense.bias.numpy())


def copy_features(ours, peer):
    """KernelAttention's random projection [m, d] into our performer's features [d, m]."""
    if getattr(peer, "_projection_matrix", None) is not None and hasattr(ours, "features"):
        ours.features.assign(np.transpose(peer._projection_matrix.numpy()))


def agreement(spec):
    """Child entry: our counterpart and the peer (built with the spec's "params") with copied
    weights on one input; the largest output difference relative to the largest output."""
    peer_spec = lookup(spec["name"])
    shape = costs.Shape(**spec["shape"])
    ours = attention_layers.get(
        peer_spec.counterpart,
        num_heads=shape.heads,
        head_dim=shape.head_dim,
        max_len=shape.length,
        **peer_spec.counterpart_params,
    )
    layer, call = build(spec["name"], shape, **spec.get("params", {}))
    x = backends.current().normal((shape.batch, shape.length, shape.width), seed=1)
    ours(x)
    call(x, False)  # builds the peer's weights
    copy_projections(ours, layer, shape)
    copy_features(ours, layer)
    differences = {}
    for scale in sorted({1.0, peer_spec.agreement_scale}):
        expected, got = np.asarray(ours(x * scale)), np.asarray(call(x * scale, False))
        differences[scale] = float(np.max(np.abs(expected - got)) / np.max(np.abs(expected)))
    difference = differences[peer_spec.agreement_scale]
    return {
        "relative_difference": difference,
        "input_scale": peer_spec.agreement_scale,
        "unit_scale_difference": differences[1.0],
        "agrees": difference <= AGREEMENT_TOLERANCE,
    }


def check_agreement(name, length, measure=isolated.run, timeout=None, params=None):
    """The agreement record of peer `name` (built with `params`), compared (by `measure`, a fresh
    process by default) when it computes the same function."""
    peer = lookup(name)
    record = {
        "peer": name,
        "title": peer.title,
        "counterpart": peer.counterpart,
        "counterpart_params": peer.counterpart_params,
        "length": length,
        "compared": peer.same_function,
        "note": peer.note,
    }
    built = {"params": params} if params else {}  # TensorFlow's peers have none
    record.update(built)
    if peer.same_function:
        shape = costs.Shape(batch=2, length=length, heads=4, head_dim=64)
        record.update(
            measure("agreement", {"name": name, "shape": vars(shape), **built}, timeout=timeout)
        )
    return record


def describe_agreement(record):
    """One console line for an agreement record."""
    built = ",".join(f"{key}={value}" for key, value in sorted(record.get("params", {}).items()))
    head = f"{record['peer']}{f'[{built}]' if built else ''} vs {record['counterpart']}:"
    if not record["compared"]:
        return f"{head} not compared (a different function; timed only)"
    if "error" in record:
        return f"{head} comparison failed: {record['error']}"
    verdict = "agree" if record["agrees"] else "DISAGREE"
    scale = record["input_scale"]
    at = (
        ""
        if scale == 1.0
        else (f" on inputs x {scale:g}; on unit-scale inputs {record['unit_scale_difference']:.1e}")
    )
    return (
        f"{head} outputs {verdict} (max relative difference "
        f"{record['relative_difference']:.1e}{at})"
    )
