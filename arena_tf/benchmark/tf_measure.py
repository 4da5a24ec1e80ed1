"""Measuring under TensorFlow (`backends`' interface): `tf.function` without XLA, peak resident
set above the process's baseline, FLOPs from TensorFlow's profiler. TensorFlow is imported by the
functions, in the child that measures, never by importing this module."""

from arena_tf.benchmark import costs, machine, memory, timing


def normal(shape, seed):
    """A float32 standard normal tensor of `shape` (TensorFlow's op-level `seed`)."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    return tf.random.normal(shape, seed=seed)


def measure_call(call, variables, shape, spec):
    """Time forward and forward + backward of `call(x, training)`, peak memory, profiled FLOPs.

    `variables()` gives the weights to differentiate (after the first trace has built them)."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    x = normal((shape.batch, shape.length, shape.width), spec.get("seed", 0))
    forward = tf.function(lambda x: call(x, False))
    backward = train_step(call, variables)
    result = {"profiled": profile(forward, backward, x, spec.get("profile", True))}
    baseline = memory.current_rss_mb()
    options = timing.call_options(spec)
    result["forward"] = timing.time_calls(lambda: forward(x), **options)
    result["forward"]["peak_mb"] = memory.peak_rss_mb() - baseline
    result["train"] = timing.time_calls(lambda: backward(x), **options)
    result["train"]["peak_mb"] = memory.peak_rss_mb() - baseline
    result.update(baseline_mb=baseline, peak_rss_mb=memory.peak_rss_mb())
    return result


def train_step(call, variables):
    """A `tf.function` of x: forward + backward of `call(x, True)`, the gradients of its sum for
    the input and every weight of `variables()` (read when traced, after the call built them)."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(call(x, True))
        return tape.gradient(loss, [x, *variables()])

    return tf.function(step)


def thread_settings():
    """TensorFlow's thread pools as this process set them (0: TensorFlow's default, chosen from
    the cores) and the thread variables of the environment (`machine.thread_environment`)."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    return {
        "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        "environment": machine.thread_environment(),
    }


def profile(forward, backward, x, enabled):
    """FLOPs counted in the forward and forward + backward graphs: TensorFlow's profiler (matmul
    ops, and every op it has statistics for) and, for forward + backward, the adjoint-aware
    count of `costs.graph_matmul_flops`."""
    if not enabled:
        return {}
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    spec = tf.TensorSpec(x.shape, x.dtype)
    graphs = {
        "forward": forward.get_concrete_function(spec),
        "train": backward.get_concrete_function(spec),
    }
    return {
        "forward_matmul_flops": costs.profiled_flops(graphs["forward"]),
        "forward_all_flops": costs.profiled_flops(graphs["forward"], op_types=None),
        "train_matmul_flops": costs.graph_matmul_flops(graphs["train"]),
        "train_profiler_matmul_flops": costs.profiled_flops(graphs["train"]),
        "train_all_flops": costs.profiled_flops(graphs["train"], op_types=None),
    }


def matmul_product(size):
    """A blocking call of a traced float32 tf.matmul of the two [size, size] `machine.operands`."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    a, b = (tf.constant(operand) for operand in machine.operands(size))
    product = tf.function(lambda: tf.matmul(a, b))
    return lambda: product().numpy()


def device_record():
    """Nothing: TensorFlow's results keep the format they always had (the machine record only)."""
    return {}
