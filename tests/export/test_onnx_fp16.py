"""The repairs FP16 conversion needs on tf2onnx graphs, on small hand-built ONNX graphs."""

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.transformers import float16

from arena_tf.export.onnx_fp16 import (
    beyond_fp16_nodes,
    convert_to_fp16,
    drop_duplicate_nodes,
    fold_cast_round_trips,
    integer_derived_nodes,
    sort_topologically,
)

LENGTH = 3000  # positions above 2048 are not integers in float16


def model(nodes, inputs, initializers=()):
    graph = helper.make_graph(
        nodes,
        "g",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
        initializer=[
            numpy_helper.from_array(np.asarray(value, np.float32), name)
            for name, value in initializers
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def sinusoid_model():
    """y = x + sin(range(length) * rate): how tf2onnx writes sinusoidal position embeddings."""
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "one"], ["length"], name="length", axis=0),
        helper.make_node("Range", ["zero", "length", "one"], ["positions"], name="range"),
        helper.make_node(
            "Cast", ["positions"], ["float_positions"], name="to_float", to=TensorProto.FLOAT
        ),
        helper.make_node("Mul", ["float_positions", "rate"], ["angles"], name="angles"),
        helper.make_node("Sin", ["angles"], ["table"], name="sin"),
        helper.make_node("Add", ["x", "table"], ["y"], name="add"),
    ]
    graph = model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, LENGTH])],
        [("rate", 1.0)],
    )
    graph.graph.initializer.extend(
        [numpy_helper.from_array(np.int64(1), "one"), numpy_helper.from_array(np.int64(0), "zero")]
    )
    return graph


def run(model_proto, **feeds):
    session = onnxruntime.InferenceSession(
        model_proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return session.run(["y"], feeds)[0]


def cast_targets(model_proto):
    return {n.name: n.attribute[0].i for n in model_proto.graph.node if n.op_type == "Cast"}


def test_position_arithmetic_stays_float32_so_long_sequences_keep_their_positions():
    # ONNX Runtime's CPU provider runs most float16 nodes through float32 kernels, hiding the
    # loss; on GPUs the float16 graph computes position 2049 as 2048. So check the graph.
    fp32 = sinusoid_model()
    plain = float16.convert_float_to_float16(sinusoid_model(), keep_io_types=True)
    assert cast_targets(plain)["to_float"] == TensorProto.FLOAT16
    converted = convert_to_fp16(fp32)
    assert cast_targets(converted)["to_float"] == TensorProto.FLOAT
    assert {"to_float", "angles", "sin"} <= integer_derived_nodes(fp32)
    assert "add" not in integer_derived_nodes(fp32)  # the activations do go to float16
    x = np.zeros((2, LENGTH), np.float32)
    expected = np.sin(np.arange(LENGTH, dtype=np.float32))
    np.testing.assert_allclose(run(converted, x=x)[0], expected, atol=2e-3)


def test_values_beyond_float16_stay_float32_until_exp_bounds_them():
    # masked logits of -1e9 shifted by -1e5 overflow float16 to -inf, and -inf * 0 is NaN
    nodes = [
        helper.make_node("Where", ["mask", "logits", "neg_inf"], ["masked"], name="where"),
        helper.make_node("Add", ["masked", "offset"], ["shifted"], name="shift"),
        helper.make_node("Mul", ["shifted", "zero"], ["zeroed"], name="zero"),
        helper.make_node("Exp", ["zeroed"], ["ones"], name="exp"),
        helper.make_node("Mul", ["ones", "logits"], ["y"], name="use"),
    ]
    inputs = [
        helper.make_tensor_value_info("mask", TensorProto.BOOL, [None, 4]),
        helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 4]),
    ]
    graph = model(nodes, inputs, [("neg_inf", -1e9), ("offset", -1e5), ("zero", 0.0)])
    assert beyond_fp16_nodes(graph) == {"where", "shift", "zero", "exp"}
    feeds = dict(
        mask=np.array([[True, False, True, False]]),
        logits=np.array([[0.5, 2.0, -1.0, 3.0]], np.float32),
    )
    converted = convert_to_fp16(graph)
    kept = {i.name: i.data_type for i in converted.graph.initializer}
    assert kept["neg_inf"] == kept["offset"] == TensorProto.FLOAT  # not clamped to -65504
    np.testing.assert_allclose(run(converted, **feeds), feeds["logits"], atol=1e-3)


def test_cast_round_trips_between_float32_nodes_are_removed():
    nodes = [
        helper.make_node("Sqrt", ["x"], ["root"], name="sqrt"),
        helper.make_node(
            "Cast", ["root"], ["half"], name="root_cast_to_fp16_node", to=TensorProto.FLOAT16
        ),
        helper.make_node(
            "Cast", ["half"], ["back"], name="half_cast_to_fp32_node", to=TensorProto.FLOAT
        ),
        helper.make_node("Neg", ["back"], ["y"], name="neg"),
    ]
    x_input = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    folded = fold_cast_round_trips(model(nodes, [x_input]))
    assert [n.name for n in folded.graph.node] == ["sqrt", "neg"]
    assert list(folded.graph.node[1].input) == ["root"]
    x = np.array([2.0, 1e-3], np.float32)
    np.testing.assert_array_equal(run(folded, x=x), -np.sqrt(x))


def test_identical_nodes_inserted_twice_are_kept_once():
    twice = helper.make_node("Neg", ["x"], ["y"], name="neg")
    graph = model([twice, twice], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])])
    onnx.checker.check_model(drop_duplicate_nodes(graph))
    assert len(graph.graph.node) == 1


def layer_norm_like_model():
    """y = h - GlobalAveragePool(h), h = x + bias: the pool is kept float32 in the FP16 graph."""
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["h"], name="add"),
        helper.make_node("GlobalAveragePool", ["h"], ["mean"], name="pool"),
        helper.make_node("Sub", ["h", "mean"], ["y"], name="center"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])],
        initializer=[numpy_helper.from_array(np.ones((2, 3, 4), np.float32), "bias")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_the_fp16_graph_is_topologically_sorted_and_passes_the_full_checker():
    # the converter appends the Casts around a blocked GlobalAveragePool after every other node
    plain = float16.convert_float_to_float16(
        layer_norm_like_model(), keep_io_types=True, op_block_list=["GlobalAveragePool"]
    )
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(plain, full_check=True)
    converted = convert_to_fp16(layer_norm_like_model())
    onnx.checker.check_model(converted, full_check=True)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    h = x + 1
    np.testing.assert_allclose(run(converted, x=x), h - h.mean(axis=(2,), keepdims=True), atol=2e-3)


def test_sorting_keeps_a_valid_order_and_refuses_a_cycle():
    nodes = [
        helper.make_node("Neg", ["b"], ["y"], name="second"),
        helper.make_node("Abs", ["x"], ["a"], name="first_a"),
        helper.make_node("Neg", ["a"], ["b"], name="first_b"),
    ]
    graph = model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [])])
    sort_topologically(graph.graph)
    assert [n.name for n in graph.graph.node] == ["first_a", "first_b", "second"]
    onnx.checker.check_model(graph, full_check=True)
    cycle = model(
        [
            helper.make_node("Neg", ["b"], ["a"], name="p"),
            helper.make_node("Neg", ["a"], ["b"], name="q"),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(ValueError, match="cycle"):
        sort_topologically(cycle.graph)
