"""The FLOP formulas against TensorFlow's profiler, and the memory-cap skip rule."""

import pytest
import tensorflow as tf

import arena_tf.layers as attention_layers
from arena_tf.benchmark import costs, layer_sweep, memory

SHAPE = costs.Shape(batch=2, length=96, heads=2, head_dim=16)


def profiled(name, params):
    """Matmul FLOPs of one layer on SHAPE: the profiler's for the forward graph, the adjoint-aware
    graph count for forward + backward (the profiler ignores BatchMatMul's adj_x / adj_y)."""
    layer = attention_layers.get(
        name, num_heads=SHAPE.heads, head_dim=SHAPE.head_dim, max_len=SHAPE.length, **params
    )
    layer.build((SHAPE.batch, SHAPE.length, SHAPE.width))
    spec = tf.TensorSpec((SHAPE.batch, SHAPE.length, SHAPE.width))

    def train(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x, training=True))
        return tape.gradient(loss, [x, *layer.trainable_variables])

    forward = tf.function(lambda x: layer(x)).get_concrete_function(spec)
    backward = tf.function(train).get_concrete_function(spec)
    return costs.profiled_flops(forward), costs.graph_matmul_flops(backward)


def test_full_formula_equals_profiler_count():
    forward, train = profiled("full", {})
    cost = costs.attention_cost("full", SHAPE)
    assert forward == cost.flops
    assert train == cost.train_flops


def test_linear_formula_equals_profiler_count():
    forward, train = profiled("linear", {})
    cost = costs.attention_cost("linear", SHAPE)
    assert forward == cost.flops
    assert train == cost.train_flops


def test_formula_follows_parameters():
    # Local with a block that does not divide the length pads to whole blocks (96 -> 100).
    forward, _ = profiled("local", {"block_size": 25})
    assert forward == costs.attention_cost("local", SHAPE, {"block_size": 25}).flops
    assert (
        costs.attention_cost("local", SHAPE, {"block_size": 25}).flops
        != costs.attention_cost("local", SHAPE, {"block_size": 32}).flops
    )


def test_length_over_the_memory_cap_is_skipped_and_said_so(monkeypatch):
    monkeypatch.setattr(memory, "available_gb", lambda: 64.0)  # the cap decides, not this machine
    long = costs.Shape(batch=1, length=16384, heads=4, head_dim=64)
    short = costs.Shape(batch=1, length=4096, heads=4, head_dim=64)
    dense, linear = layer_sweep.ours("full", {"blockwise_from": None}), layer_sweep.ours("linear")
    skipped = layer_sweep.planned_row(dense, long, cap_gb=16)
    assert skipped["estimated_gb"] > 16
    assert "exceeds the 16 GB memory cap" in skipped["skipped"]
    assert layer_sweep.planned_row(dense, short, cap_gb=16)["skipped"] is None
    assert layer_sweep.planned_row(linear, long, cap_gb=16)["skipped"] is None
    assert memory.over_cap(2.0, cap_gb=2.0) is None
    assert "of memory available on this machine" in memory.over_cap(3.0, cap_gb=16, available=2.0)


@pytest.mark.parametrize(
    "name, params",
    [
        ("s4d", {}),
        ("s4d", {"causal": True}),
        ("s5", {}),
        ("s5", {"causal": True}),
        ("mega", {"chunk_size": 32}),
        ("mega", {"chunk_size": 40, "causal": True}),
    ],
)
def test_state_space_formulas_equal_profiler_count(name, params):
    """The kernels' materialisation and the gates count; FFTs and scans are element-wise."""
    forward, train = profiled(name, params)
    cost = costs.attention_cost(name, SHAPE, params)
    assert forward == cost.flops
    assert train == cost.train_flops


def test_memory_estimate_follows_full_to_its_blockwise_form():
    """From `blockwise_from` keys full holds [L, block_size] scores, not [L, L]; a dense peer of
    full (keras_mha) and full under attention dropout (training) keep the dense estimate."""
    long = costs.Shape(batch=1, length=16384, heads=4, head_dim=64)
    by_label = {
        entry.label: layer_sweep.planned_row(entry, long, cap_gb=16)
        for entry in layer_sweep.entries(["full"], ["keras_mha"])
    }
    assert by_label["full"]["skipped"] is None
    assert by_label["keras_mha"]["skipped"] is not None
    dense = costs.attention_cost("full", long, {"blockwise_from": None}).attention_elements
    blocks = costs.attention_cost("full", long).attention_elements
    assert blocks * 16384 // 512 == dense
    assert (
        costs.attention_cost("full", long, {"attention_dropout": 0.1}).attention_elements == dense
    )
    assert (
        costs.attention_cost("full", long).flops
        == costs.attention_cost("full", long, {"blockwise_from": None}).flops
    )
