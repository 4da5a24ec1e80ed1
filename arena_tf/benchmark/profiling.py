"""Where the time goes: per-op self time of one mechanism or peer, from TensorFlow's profiler.

    python -m arena_tf.benchmark profile linear --length 4096 --stage train --top 12
    python -m arena_tf.benchmark profile kernel_elu --length 4096     # a peer

The calls are traced with `tf.profiler.experimental` and the trace is read back with the
profiler's own "framework_op_stats" tool (no TensorBoard needed): each op's total self time over
the profiled calls, divided by the number of calls.
"""

import glob
import json
import tempfile

import arena_tf.layers as attention_layers
from arena_tf.benchmark import costs, layer_sweep, peers


def op_table(xplane_paths):
    """[{type, name, occurrences, self_us}] of every op in the trace files (host and device)."""
    from tensorflow.python.profiler.internal import (  # tensorflow: not under the JAX backend
        _pywrap_profiler_plugin as plugin,
    )

    data, ok = plugin.xspace_to_tools_data(xplane_paths, "framework_op_stats", {})
    if not ok:
        raise RuntimeError(f"the profiler could not read its trace: {data[:200]!r}")
    tables = json.loads(data)
    first = tables[0] if isinstance(tables, list) else tables
    columns = [column["id"] for column in first["cols"]]
    rows = [dict(zip(columns, (c["v"] if c else None for c in row["c"]))) for row in first["rows"]]
    return [
        {
            "type": r["type"],
            "name": r["operation"],
            "occurrences": r["occurrences"],
            "self_us": r["total_self_time"],
        }
        for r in rows
        if r["type"] != "IDLE"
    ]


def subject(name, shape):
    """(call(x, training), variables()) of our mechanism or a peer, built for `shape`."""
    if name in peers.PEERS:
        layer, call = peers.build(name, shape)
        return call, lambda: layer.trainable_variables
    entry = layer_sweep.ours(name)
    layer = attention_layers.get(
        name, num_heads=shape.heads, head_dim=shape.head_dim, max_len=shape.length, **entry.params
    )
    layer.build((shape.batch, shape.length, shape.width))
    return (lambda x, training: layer(x, training=training)), lambda: layer.trainable_variables


def profile(name, shape, stage="train", calls=3):
    """Per-op self time (ms per call), largest first, of `calls` calls after two warm-ups."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    call, variables = subject(name, shape)
    x = tf.random.normal((shape.batch, shape.length, shape.width))

    def train(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(call(x, True))
        return tape.gradient(loss, [x, *variables()])

    function = tf.function(train if stage == "train" else lambda x: call(x, False))
    for _ in range(2):
        function(x)
    with tempfile.TemporaryDirectory(prefix="arena_profile_") as logdir:
        tf.profiler.experimental.start(logdir)
        for _ in range(calls):
            function(x)
        tf.profiler.experimental.stop()
        ops = op_table(glob.glob(f"{logdir}/**/*.xplane.pb", recursive=True))
    for op in ops:
        op["ms_per_call"] = op["self_us"] / 1e3 / calls
    return sorted(ops, key=lambda op: -op["ms_per_call"])


def run(options, say=print):
    shape = costs.Shape(options.batch, options.length, options.heads, options.head_dim)
    ops = profile(options.name, shape, options.stage, options.calls)
    total = sum(op["ms_per_call"] for op in ops)
    say(f"{options.name} {options.stage} at {shape}: {total:.1f} ms of op self time per call")
    for op in ops[: options.top]:
        say(
            f"{op['ms_per_call']:9.2f} ms {op['ms_per_call'] / total:6.1%}  {op['type']:<22} "
            f"{op['name']}"
        )
    return ops
