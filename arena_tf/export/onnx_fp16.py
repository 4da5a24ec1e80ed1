"""FP16 ONNX from FP32 ONNX: onnxruntime's converter plus the repairs it needs on tf2onnx graphs.

    fp16_proto = convert_to_fp16(fp32_proto)            # inputs int32, logits float32 kept

`onnxruntime.transformers.float16.convert_float_to_float16(keep_io_types=True)` alone gives an
invalid or failing graph for 7 of the 11 mechanisms (bigbird, linformer, longformer, reformer,
sinkhorn, sparse, synthesizer), because tf2onnx graphs do integer arithmetic in float (a dynamic
slice end is Cast(int -> float) -> Max(x, 1e9) -> Cast(float -> int); sinusoidal positions are
Cast(range) * rates, and position 2049 is 2048 in float16) and the attention layers mask with
-1e9 logits, which overflow float16 to -inf (then -inf * 0 = NaN in a log-sum-exp). The repairs:

1. `integer_derived_nodes`: nodes computing only from integers (through a Cast int -> float),
   initializers and constants stay float32 (node block list).
2. `beyond_fp16_nodes`: nodes downstream of a constant beyond float16's range stay float32 until
   an op bounds the values again (exp, softmax).
3. `fold_cast_round_trips`: the converter routes every tensor between two float32 nodes through
   float16 (Cast to float16, Cast back); the pair is removed so blocked chains really stay float32.
4. `drop_duplicate_nodes`: the converter can insert the same Cast twice for one initializer
   (an invalid graph: "two nodes with same node name").
5. `sort_topologically`: the converter appends the Casts it adds for blocked nodes where it
   meets them, which can be before the node producing their input (a Cast placed before its
   GlobalAveragePool input); ONNX requires every node after the producers of its inputs
   (`onnx.checker.check_model(model, full_check=True)` refuses the graph otherwise).

Numerically fragile op types (`FRAGILE_OPS`: LayerNorm statistics, softmax, exp / log of kernel
features and log-sum-exp) are kept in float32 as well. On the CPU provider this list made no
measurable difference (its float16 graphs run mostly through float32 kernels; argmax agreement
100% for every mechanism with or without it); it is there for GPUs, where float16 kernels exist.
IsInf must stay float32 in any case: it has no float16 kernel before opset 20.
"""

import heapq

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnxruntime.transformers import float16

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.BFLOAT16}

# Op types computed in float32 inside the FP16 graph.
FRAGILE_OPS = (
    "GlobalAveragePool",
    "ReduceMean",
    "Pow",
    "Sqrt",
    "Reciprocal",  # LayerNorm statistics
    "Softmax",
    "Exp",
    "Log",
    "ReduceSum",
    "ReduceMax",
    "IsInf",
    "IsNaN",  # softmax, kernels, lse
)


def tensor_types(model_proto):
    """{tensor name: ONNX element type} from shape inference, initializers and graph inputs."""
    inferred = onnx.shape_inference.infer_shapes(model_proto)
    graph = inferred.graph
    values = (*graph.value_info, *graph.input, *graph.output)
    types = {v.name: v.type.tensor_type.elem_type for v in values}
    types.update({i.name: i.data_type for i in graph.initializer})
    return types


def cast_target(node):
    """The element type a Cast node casts to (None for other nodes)."""
    if node.op_type != "Cast":
        return None
    return next((a.i for a in node.attribute if a.name == "to"), None)


def casts_integer_to_float(node, types):
    """True for Cast(int or bool -> float32), where integer arithmetic enters float."""
    return cast_target(node) == TensorProto.FLOAT and types.get(node.input[0]) not in FLOAT_TYPES


def integer_derived_nodes(model_proto):
    """Names of the nodes whose float inputs all derive from integers, constants or initializers."""
    graph, types = model_proto.graph, tensor_types(model_proto)
    constant = {i.name for i in graph.initializer}
    constant |= {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    derived, names = set(), set()
    for node in graph.node:  # ONNX nodes are in topological order
        float_inputs = [i for i in node.input if i and types.get(i) in FLOAT_TYPES]
        from_integers = any(i in derived for i in float_inputs) and all(
            i in derived or i in constant for i in float_inputs
        )
        if casts_integer_to_float(node, types) or from_integers:
            names.add(node.name)
            derived.update(node.output)
    return names


FP16_MAX = 65504.0
# Ops whose output is bounded whatever the size of their input: a value beyond float16's range
# (a -1e9 mask logit) is back in range after them.
BOUNDED_OPS = {"Exp", "Softmax", "Sigmoid", "Tanh", "Erf", "Sin", "Cos", "Sign"}


def large_constants(graph):
    """Names of initializers and Constant outputs holding a finite value beyond float16's range."""
    tensors = [(i.name, i) for i in graph.initializer]
    tensors += [
        (n.output[0], a.t)
        for n in graph.node
        if n.op_type == "Constant"
        for a in n.attribute
        if a.name == "value"
    ]
    return {
        name
        for name, tensor in tensors
        if tensor.data_type == TensorProto.FLOAT and _beyond_fp16(numpy_helper.to_array(tensor))
    }


def _beyond_fp16(values):
    finite = values[np.isfinite(values)]
    return finite.size > 0 and np.abs(finite).max() > FP16_MAX


def beyond_fp16_nodes(model_proto):
    """Names of the nodes that compute on values float16 cannot hold: downstream of a constant
    beyond its range (mask logits of -1e9), up to the first op that bounds them (exp, softmax)."""
    graph, types = model_proto.graph, tensor_types(model_proto)
    large, names = large_constants(graph), set()
    for node in graph.node:
        if any(i in large for i in node.input):
            names.add(node.name)
            if node.op_type not in BOUNDED_OPS:
                large.update(o for o in node.output if types.get(o) in FLOAT_TYPES)
    return names


def fold_cast_round_trips(model_proto):
    """Remove the converter's Cast(float32 -> float16) -> Cast(-> float32) pairs: consumers read
    the float32 value."""
    graph = model_proto.graph
    producers = {o: n for n in graph.node for o in n.output}
    outputs = {o.name for o in graph.output}
    replaced = {}
    for node in graph.node:
        first = producers.get(node.input[0]) if node.input else None
        if (
            cast_target(node) == TensorProto.FLOAT
            and first is not None
            and cast_target(first) == TensorProto.FLOAT16
            and node.output[0] not in outputs
            and first.name.endswith("_cast_to_fp16_node")
        ):
            replaced[node.output[0]] = first.input[0]
    for node in graph.node:
        node.input[:] = [replaced.get(i, i) for i in node.input]
    _keep_nodes(graph, lambda n: not (n.output and n.output[0] in replaced))
    used = {i for n in graph.node for i in n.input} | outputs
    _keep_nodes(graph, lambda n: n.op_type != "Cast" or any(o in used for o in n.output))
    produced = {o for n in graph.node for o in n.output}
    stale = [v for v in graph.value_info if v.name not in produced]
    for value in stale:
        graph.value_info.remove(value)
    return model_proto


def drop_duplicate_nodes(model_proto):
    """Keep the first of identical nodes (same name, inputs, outputs and attributes)."""
    seen = set()

    def first_time(node):
        key = node.SerializeToString()
        fresh = key not in seen
        seen.add(key)
        return fresh

    _keep_nodes(model_proto.graph, first_time)
    return model_proto


def _keep_nodes(graph, keep):
    kept = [n for n in graph.node if keep(n)]
    del graph.node[:]
    graph.node.extend(kept)


def subgraph_inputs(node):
    """Names a node's subgraphs (If / Loop / Scan bodies) read: its implicit inputs."""
    names = set()
    for attribute in node.attribute:
        for graph in (
            (attribute.g, *attribute.graphs)
            if attribute.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
            else ()
        ):
            for inner in graph.node:
                names.update(i for i in inner.input if i)
                names.update(subgraph_inputs(inner))
    return names


def sort_topologically(graph):
    """Reorder `graph.node` (and its subgraphs' nodes) so that every node comes after the nodes
    producing its inputs, keeping the given order wherever it is already valid. Returns `graph`."""
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                sort_topologically(attribute.g)
            for inner in attribute.graphs:
                sort_topologically(inner)
    nodes = list(graph.node)
    producer = {name: index for index, node in enumerate(nodes) for name in node.output if name}
    consumers = [[] for _ in nodes]
    waiting = [0] * len(nodes)
    for index, node in enumerate(nodes):
        needed = {i for i in node.input if i} | subgraph_inputs(node)
        for first in {producer[name] for name in needed if name in producer} - {index}:
            consumers[first].append(index)
            waiting[index] += 1
    ready = [index for index, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for later in consumers[index]:
            waiting[later] -= 1
            if waiting[later] == 0:
                heapq.heappush(ready, later)
    if len(order) != len(nodes):
        stuck = [nodes[i].name for i in range(len(nodes)) if waiting[i]][:3]
        raise ValueError(f"the graph has a cycle through {', '.join(stuck)}")
    del graph.node[:]
    graph.node.extend(nodes[i] for i in order)
    return graph


def convert_to_fp16(model_proto, fragile_ops=FRAGILE_OPS):
    """A float16 copy of an FP32 tf2onnx model; float32 inputs / outputs, index math in float32."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model_proto)
    converted = float16.convert_float_to_float16(
        copy,
        keep_io_types=True,
        op_block_list=list(float16.DEFAULT_OP_BLOCK_LIST) + list(fragile_ops),
        node_block_list=sorted(integer_derived_nodes(model_proto) | beyond_fp16_nodes(model_proto)),
    )
    converted = drop_duplicate_nodes(fold_cast_round_trips(converted))
    sort_topologically(converted.graph)
    return converted
