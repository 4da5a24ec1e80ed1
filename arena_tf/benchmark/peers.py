"""The peers our layers are measured against, on identical shapes.

- `keras_mha`: keras.layers.MultiHeadAttention (Keras 3), against `full`.
- From tf-models-official (the `peers` extra; tf_keras layers, each measured in its own process):
  `kernel_exp` = KernelAttention(feature_transform="exp"), FAVOR+ with 256 random features, against
  `performer`; `kernel_elu` = KernelAttention(feature_transform="elu", num_random_features=0,
  scale=1), the linear attention of Katharopoulos et al., against `linear`; `bigbird_tfm` =
  BigBirdAttention (block 64, 3 random blocks), against `bigbird`; `block_sparse` =
  BlockSparseAttention (block-diagonal, block 64), against `local` with block 64.

Where a peer computes the same function as its counterpart (`same_function`), `agreement` copies our
weights into the peer (and our random features, for FAVOR+) and compares the outputs on one input
before any time is compared. BigBirdAttention draws its random blocks differently (and only within
its first 1024 tokens), so it is timed but not compared.
"""

import dataclasses

import numpy as np

from arena_tf.benchmark import costs, isolated

# The peers' random features (KernelAttention) and ours differ unless copied; after copying, the
# only differences are the stabilisers and the 1e-6 added to the normaliser.
AGREEMENT_TOLERANCE = 1e-3
# KernelAttention(exp) shifts every feature by the largest exponent of the whole batch (not of each
# query) and adds 1e-6 to the normaliser: on unit-scale inputs (exponents up to ~15) the normaliser
# falls to ~1e-15 and the 1e-6 swamps it, so its output collapses towards zero. Its agreement is
# therefore checked on inputs scaled by 0.3 (`Peer.agreement_scale`), and the unit-scale difference
# is reported beside it.


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


PEERS = {
    "keras_mha": Peer("keras.layers.MultiHeadAttention (Keras 3)", "full", {}, "_keras_mha", True),
    "kernel_exp": Peer(
        "KernelAttention(exp), tf-models-official", "performer",
        {"num_features": 256, "kernel": "exp"}, "_kernel_exp", True, 0.3, note=(
            "shifts features by the largest exponent of the whole batch and adds 1e-6 to the "
            "normaliser, so on unit-scale inputs its output collapses towards zero (see "
            "AGREEMENT_TOLERANCE in arena_tf/benchmark/peers.py); compared on inputs x 0.3"
        ),
    ),
    "kernel_elu": Peer("KernelAttention(elu), tf-models-official", "linear", {}, "_kernel_elu",
                       True),
    "bigbird_tfm": Peer("BigBirdAttention, tf-models-official", "bigbird",
                        {"block_size": 64, "num_random_blocks": 3}, "_bigbird", False),
    "block_sparse": Peer(
        "BlockSparseAttention, tf-models-official", "local", {"block_size": 64}, "_block_sparse",
        True, note=(
            "normalises each block's softmax over the queries, not the keys: its tf_keras "
            "MultiHeadAttention base sets the softmax axis for rank-4 scores [B, N, T, S] (axis 3), "
            "which on its rank-5 block scores [B, N, blocks, query, key] is the query axis; "
            "reproduced exactly by a softmax over axis 3, while ours equals the one over axis 4. "
            "Same operations and cost, so its time is still comparable."
        ),
    ),
}


def lookup(name):
    if name not in PEERS:
        raise ValueError(f"unknown peer {name!r}; expected one of {', '.join(PEERS)}")
    return PEERS[name]


# -- builders: (layer, call(x, training)) on a shape --------------------------------------------


def _keras_mha(shape, seed):
    import keras

    layer = keras.layers.MultiHeadAttention(num_heads=shape.heads, key_dim=shape.head_dim,
                                            seed=seed)
    return layer, lambda x, training: layer(x, x, training=training)


def _kernel(shape, seed, **params):
    from official.nlp.modeling.layers.kernel_attention import KernelAttention

    layer = KernelAttention(num_heads=shape.heads, key_dim=shape.head_dim, seed=seed, **params)
    return layer, lambda x, training: layer(x, x, training=training)


def _kernel_exp(shape, seed):
    return _kernel(shape, seed, feature_transform="exp", num_random_features=256)


def _kernel_elu(shape, seed):
    return _kernel(shape, seed, feature_transform="elu", num_random_features=0, scale=1.0)


def _bigbird(shape, seed):
    import tensorflow as tf
    from official.nlp.modeling.layers.bigbird_attention import BigBirdAttention, BigBirdMasks

    layer = BigBirdAttention(num_heads=shape.heads, key_dim=shape.head_dim, from_block_size=64,
                             to_block_size=64, num_rand_blocks=3,
                             max_rand_mask_length=shape.length, seed=seed)
    masks = BigBirdMasks(block_size=64)

    def call(x, training):
        everything = tf.ones(tf.shape(x)[:2], x.dtype)
        return layer(x, x, attention_mask=masks(x, everything), training=training)

    return layer, call


def _block_sparse(shape, seed):
    from official.nlp.modeling.layers.block_sparse_attention import MultiHeadAttention

    layer = MultiHeadAttention(num_heads=shape.heads, key_dim=shape.head_dim, src_block_size=64)
    return layer, lambda x, training: layer(x, x, training=training)


def build(name, shape, seed=0):
    """(layer, call) of peer `name` for inputs of `shape`."""
    return globals()[lookup(name).build](shape, seed)


# -- in the child process -----------------------------------------------------------------------


def measure(spec):
    """Child entry for a peer: build it on the spec's shape and measure it like our layers."""
    import tensorflow as tf

    from arena_tf.benchmark.layers import measure_call

    shape = costs.Shape(**spec["shape"])
    layer, call = build(spec["name"], shape, spec.get("seed", 0))
    return measure_call(call, lambda: layer.trainable_variables, shape, spec, tf)


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
    """Child entry: our counterpart and the peer with copied weights on one input; the largest
    output difference relative to the largest output."""
    import tensorflow as tf

    import arena_tf.layers as attention_layers

    peer_spec = lookup(spec["name"])
    shape = costs.Shape(**spec["shape"])
    ours = attention_layers.get(peer_spec.counterpart, num_heads=shape.heads,
                                head_dim=shape.head_dim, max_len=shape.length,
                                **peer_spec.counterpart_params)
    layer, call = build(spec["name"], shape)
    x = tf.random.normal((shape.batch, shape.length, shape.width), seed=1)
    ours(x)
    call(x, False)  # builds the peer's weights
    copy_projections(ours, layer, shape)
    copy_features(ours, layer)
    differences = {}
    for scale in sorted({1.0, peer_spec.agreement_scale}):
        expected, got = ours(x * scale).numpy(), call(x * scale, False).numpy()
        differences[scale] = float(np.max(np.abs(expected - got)) / np.max(np.abs(expected)))
    difference = differences[peer_spec.agreement_scale]
    return {"relative_difference": difference, "input_scale": peer_spec.agreement_scale,
            "unit_scale_difference": differences[1.0], "agrees": difference <= AGREEMENT_TOLERANCE}


def check_agreement(name, length, measure=isolated.run, timeout=None):
    """The agreement record of peer `name`, compared (by `measure`, a fresh process by default)
    when it computes the same function."""
    peer = lookup(name)
    record = {"peer": name, "title": peer.title, "counterpart": peer.counterpart,
              "counterpart_params": peer.counterpart_params, "length": length,
              "compared": peer.same_function, "note": peer.note}
    if peer.same_function:
        shape = costs.Shape(batch=2, length=length, heads=4, head_dim=64)
        record.update(measure("agreement", {"name": name, "shape": vars(shape)}, timeout=timeout))
    return record


def describe_agreement(record):
    """One console line for an agreement record."""
    head = f"{record['peer']} vs {record['counterpart']}:"
    if not record["compared"]:
        return f"{head} not compared (a different function; timed only)"
    if "error" in record:
        return f"{head} comparison failed: {record['error']}"
    verdict = "agree" if record["agrees"] else "DISAGREE"
    scale = record["input_scale"]
    at = "" if scale == 1.0 else (f" on inputs x {scale:g}; on unit-scale inputs "
                                  f"{record['unit_scale_difference']:.1e}")
    return f"{head} outputs {verdict} (max relative difference {record['relative_difference']:.1e}{at})"
