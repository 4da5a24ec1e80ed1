"""Cost model of every attention mechanism: matmul FLOPs and the size of its attention tensors.

FLOPs count matrix products only, 2 per multiply-add: the convention of a dense matmul rate and of
TensorFlow's profiler for MatMul / BatchMatMul. One layer's forward pass is the query / key / value
projections it uses, the output projection and the mechanism's own products; forward + backward is
taken as 3x the forward (the backward of a product is two products of its size). Element-wise work
(softmax, exp, masks) is not counted; `profiled_flops` can count it where TensorFlow registers it.

Checks: `profiled_flops` is TensorFlow's profiler (tf.compat.v1.profiler, float_operation). Its
BatchMatMul statistics ignore the adj_x / adj_y attributes (the contracted size is always read from
the first input's last axis), which gradient graphs use, so for forward + backward graphs
`graph_matmul_flops` counts the products itself, honouring transposes.

Every formula below is per example and head, from the code of arena_tf/layers/<name>.py, with L the
length, d the head width, b a block, c a chunk or summary width, m features, p projected length, r
random blocks, h hash rounds and g global positions.
"""

import dataclasses
import inspect
import math

import arena_tf.layers as attention_layers
from arena_tf.layers.long_conv import square_blocks

MATMUL_OPS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")


@dataclasses.dataclass(frozen=True)
class Shape:
    """One attention call: inputs [batch, length, heads * head_dim]."""

    batch: int = 1
    length: int = 1024
    heads: int = 4
    head_dim: int = 64

    @property
    def width(self):
        return self.heads * self.head_dim


@dataclasses.dataclass(frozen=True)
class Cost:
    """One layer's forward matmul FLOPs and the elements of its attention-sized tensors."""

    flops: float
    attention_elements: float

    @property
    def train_flops(self):
        """Forward + backward."""
        return 3 * self.flops


@dataclasses.dataclass(frozen=True)
class HeadCost:
    """Per example and head: matmul FLOPs, attention-sized elements, input projections used."""

    flops: float
    elements: float
    projections: int = 3


def padded(length, block):
    """Length padded up to a multiple of `block` (as `ops.pad_to_multiple`)."""
    return math.ceil(length / block) * block


def _full(s, p):
    """Dense [L, L] scores below `blockwise_from` keys or with attention dropout (the cost is
    that of training); otherwise one [L, block_size] block of scores at a time
    (arena_tf/layers/blockwise.py; its backward recomputes the blocks, which the 3x-forward
    convention does not count)."""
    blockwise_from = p.get("blockwise_from")
    blockwise = (
        blockwise_from is not None and s.length >= blockwise_from and not p.get("attention_dropout")
    )
    keys_held = min(p["block_size"], s.length) if blockwise else s.length
    return HeadCost(4 * s.length**2 * s.head_dim, s.length * keys_held)


def _synthesizer(s, p):
    L, d = s.length, s.head_dim
    synthetic = {
        "dense": 2 * L * d * d + 2 * L * d * L,
        "random": 0,
        "factorized": 2 * L * L * p["rank"] / s.batch,  # shared by the batch
    }[p["mode"]]
    dot = 2 * L * L * d if p["use_dot_product"] else 0
    # Random logits are a [heads, L, L] weight with a gradient of its own.
    weights = 2 * L * L / s.batch if p["mode"] == "random" else 0
    projections = (
        1 + bool(p["use_dot_product"]) + bool(p["use_dot_product"] or p["mode"] == "dense")
    )
    return HeadCost(2 * L * L * d + dot + synthetic, L * L + weights, projections)


def _local(s, p):
    length = padded(s.length, p["block_size"])
    return HeadCost(4 * length * p["block_size"] * s.head_dim, length * p["block_size"])


def _linear(s, p):
    L, d = s.length, s.head_dim
    return HeadCost(4 * L * d * d + 2 * L * d, L * d)


def _performer(s, p):
    L, d, m = s.length, s.head_dim, p["num_features"]
    return HeadCost(8 * L * d * m + 2 * L * m, L * m)


def _linformer(s, p):
    L, k = s.length, p["projected_length"]
    return HeadCost(8 * L * k * s.head_dim, L * k)


def _bigbird(s, p):
    b, slots = p["block_size"], 5 + p["num_random_blocks"]
    length = padded(s.length, b)
    return HeadCost(4 * length * (slots + 2) * b * s.head_dim, length * (slots + 2) * b)


def _sparse(s, p):
    b, c = p["block_size"], p["summary_size"]
    length = padded(s.length, b)
    keys = b + length // b * c
    return HeadCost(4 * length * keys * s.head_dim, length * keys)


def _longformer(s, p):
    half, g, d = p["window"] // 2, len(set(p["global_positions"])), s.head_dim
    length = padded(s.length, half)
    banded = 12 * length * half * d + 4 * length * g * d
    global_rows = 4 * g * s.length * d + 2 * s.length * g * d
    return HeadCost(banded + global_rows, length * (3 * half + g) + g * s.length)


def _sinkhorn(s, p):
    b, d = p["block_size"], s.head_dim
    length = padded(s.length, b)
    n = length // b
    sort = 2 * n * d * d + 2 * n * n * d
    mixture = 2 * n * n * b + 4 * n * n * b * d
    return HeadCost(sort + mixture + 8 * length * b * d, length * 2 * b + n * n)


def _reformer(s, p):
    c, h = p["chunk_size"], p["n_hashes"]
    length = padded(s.length, c)
    hashing = length * s.head_dim * h * p["n_buckets"]
    return HeadCost(hashing + 8 * h * length * c * s.head_dim, h * length * 2 * c, projections=2)


def directions(p):
    return 1 if p["causal"] else 2


def _s4d(s, p):
    # Materialising the kernel: per channel two real [directions * Q, modes] x [modes, B] products
    # (B = ceil(sqrt(L)), Q = ceil(L / B)), shared by the batch; the FFT convolution and the skip
    # are element-wise (not counted).
    modes, d, dirs = p["state_size"] // 2, s.head_dim, directions(p)
    block, blocks = square_blocks(s.length)
    kernel = 4 * dirs * blocks * modes * block * d / s.batch
    elements = (dirs * blocks * (modes + block) + modes * block) * d / s.batch
    return HeadCost(kernel, elements + dirs * s.length * d / s.batch, projections=1)


def _s5(s, p):
    # Into the state (real and imaginary B) and out of it (real and imaginary C per direction),
    # over all channels: a layer's cost spread over its heads; the scan is element-wise.
    modes, d = p["state_size"] // 2, s.head_dim
    return HeadCost(
        4 * s.length * d * modes * (1 + directions(p)),
        4 * s.length * modes / s.heads,
        projections=1,
    )


def _mega(s, p):
    # One head for the whole layer (spread over `heads`): the gates' projection (width to
    # 2 width + head_dim + inner), chunked attention with head_dim-wide queries and keys and
    # inner-wide values, and the EMA kernel (shared by the batch).
    width, z, chunk = s.width, s.head_dim, min(p["chunk_size"], s.length)
    length = padded(s.length, chunk)
    gates = 2 * s.length * width * (2 * width + z + width)
    attention = 2 * length * chunk * (z + width)
    block, blocks = square_blocks(s.length)
    ema = 2 * directions(p) * width * p["ema_dim"] * blocks * block / s.batch
    elements = length * chunk + directions(p) * width * p["ema_dim"] * (blocks + block) / s.batch
    return HeadCost((gates + attention + ema) / s.heads, elements / s.heads, projections=1)


FORMULAS = {
    "full": _full,
    "synthesizer": _synthesizer,
    "local": _local,
    "linear": _linear,
    "performer": _performer,
    "linformer": _linformer,
    "bigbird": _bigbird,
    "sparse": _sparse,
    "longformer": _longformer,
    "sinkhorn": _sinkhorn,
    "reformer": _reformer,
    "s4d": _s4d,
    "s5": _s5,
    "mega": _mega,
}


def mechanism_params(name, params=None):
    """The mechanism's own constructor parameters: its defaults updated with `params`."""
    cls = attention_layers.lookup(name)
    defaults = {}
    own = [
        k
        for k in cls.__mro__[: cls.__mro__.index(attention_layers.Attention)]
        if "__init__" in vars(k)
    ]
    for klass in reversed(own):
        for param in inspect.signature(klass.__init__).parameters.values():
            if param.default is not param.empty:
                defaults[param.name] = param.default
    return {**defaults, **(params or {})}


def attention_cost(name, shape, params=None):
    """Cost of one attention layer `name` (with `params`) on `shape`."""
    if name not in FORMULAS:
        raise ValueError(
            f"no cost formula for attention {name!r}; expected one of {', '.join(sorted(FORMULAS))}"
        )
    head = FORMULAS[name](shape, mechanism_params(name, params))
    projection = 2 * shape.batch * shape.length * shape.width * shape.width
    per_head = shape.batch * shape.heads
    return Cost(
        (head.projections + 1) * projection + per_head * head.flops, per_head * head.elements
    )


def model_train_flops(name, shape, params, num_layers, mlp_dim):
    """Forward + backward matmul FLOPs of an LRA encoder (attention + MLP per layer)."""
    mlp = 2 * 2 * shape.batch * shape.length * shape.width * mlp_dim
    return 3 * num_layers * (attention_cost(name, shape, params).flops + mlp)


def profiled_flops(concrete_function, op_types=MATMUL_OPS):
    """FLOPs TensorFlow's profiler counts in a concrete function's graph, for ops of `op_types`
    (None: every op with registered FLOP statistics). None when it counts nothing (shapes
    unknown), since a zero would read as a measurement."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    builder = tf.compat.v1.profiler.ProfileOptionBuilder
    options = builder(builder.float_operation()).with_empty_output()
    if op_types is not None:
        options = options.with_accounted_types([f"^{op}$" for op in op_types])
    profile = tf.compat.v1.profiler.profile(graph=concrete_function.graph, options=options.build())
    return profile.total_float_ops or None


def graph_matmul_flops(concrete_function):
    """2 x contracted size x output elements, summed over the graph's matrix products (transposed
    operands honoured); None when a shape is unknown."""
    total = 0
    for op in concrete_function.graph.get_operations():
        if op.type not in MATMUL_OPS:
            continue
        first, output = op.inputs[0].shape, op.outputs[0].shape
        if not (first.is_fully_defined() and output.is_fully_defined()):
            return None
        transposed = op.get_attr("transpose_a" if op.type == "MatMul" else "adj_x")
        total += 2 * first[-2 if transposed else -1] * output.num_elements()
    return total
