"""Measuring under JAX (`backends`' interface), in a child with KERAS_BACKEND=jax; no TensorFlow.

A layer's call becomes a pure function of (weight values, input) through Keras' `StatelessScope`;
forward is `jax.jit` of it, forward + backward `jax.jit(jax.grad(...))` of its sum, with gradients
for the input and every weight (as the TensorFlow path); spec["stages"] may name one of them. Each
is lowered and compiled first (the seconds it took are stored as `compile_s`, outside the timed
calls), then timed by `timing.time_calls` with `jax.block_until_ready`.

Memory: on a device that keeps allocator statistics (a GPU), the peak is its `peak_bytes_in_use`
after the stage's calls (the high-water mark of the process so far, like the resident set of the
TensorFlow path); JAX keeps none on CPU, so there the peak is what XLA's memory analysis of the
compiled executable says it needs: arguments (weights and input) + outputs + temporaries - aliased
buffers. Each stage stores its `peak_source` and the analysis beside the figure.
"""

import functools
import time

import jax
import jax.numpy as jnp
import keras

from arena_tf.benchmark import machine, memory, timing

# What the peak of a stage is, by whether the device keeps allocator statistics.
DEVICE_PEAK, COMPILED_PEAK = "device_peak_bytes_in_use", "xla_memory_analysis"
# The sizes of XLA's memory analysis (CompiledMemoryStats.<name>_size_in_bytes) stored per stage.
ANALYSED = ("argument", "output", "temp", "alias")
# [batch, length, heads, head_dim] of the float32 attention `attention_implementation` compiles
# with cuDNN's fused kernel to see whether this device (and dtype) has it.
PROBE_SHAPE = (1, 128, 1, 64)


def normal(shape, seed):
    """A float32 standard normal array of `shape` from JAX's key `seed`."""
    return jax.random.normal(jax.random.key(seed), shape, jnp.float32)


def stateless(call, weights, training):
    """`call(x, training)` as a pure function of (values of `weights`, x): Keras reads every
    weight from the mapping, so JAX can trace and differentiate through it."""

    def pure(values, x):
        with keras.StatelessScope(state_mapping=list(zip(weights, values))):
            return call(x, training)

    return pure


def summed(function):
    """The scalar loss of forward + backward: the sum of `function`'s output."""
    return lambda *args: jnp.sum(function(*args))


def compiled(function, *args):
    """(`jax.jit(function)` lowered and compiled for `args`, the seconds that took)."""
    start = time.perf_counter()
    executable = jax.jit(function).lower(*args).compile()
    return executable, time.perf_counter() - start


def xla_flops(executable):
    """The FLOPs of XLA's cost analysis of a compiled executable (every op, not only matmuls)."""
    analysis = executable.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
    return float(analysis["flops"]) if analysis and "flops" in analysis else None


def analysed_mb(executable):
    """{argument, output, temp, alias}_mb of XLA's memory analysis of a compiled executable."""
    stats = executable.memory_analysis()
    return {f"{name}_mb": getattr(stats, f"{name}_size_in_bytes") / 2**20 for name in ANALYSED}


def device_peak_mb():
    """The first device's peak_bytes_in_use in MiB, or None where it keeps no statistics (CPU)."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats["peak_bytes_in_use"] / 2**20 if "peak_bytes_in_use" in stats else None


def peak_memory(executable):
    """{peak_mb, peak_source, compiled}: the device's peak where it has one, else the compiled
    executable's arguments + outputs + temporaries - aliases. Call after the stage's calls."""
    analysed = analysed_mb(executable)
    needed = (
        analysed["argument_mb"] + analysed["output_mb"] + analysed["temp_mb"] - analysed["alias_mb"]
    )
    in_use = device_peak_mb()
    source, peak = (COMPILED_PEAK, needed) if in_use is None else (DEVICE_PEAK, in_use)
    return {"peak_mb": peak, "peak_source": source, "compiled": analysed}


def measure_stage(function, args, spec):
    """Compile `function` for `args`, time its calls (compile excluded), then its memory."""
    executable, compile_s = compiled(function, *args)
    stats = timing.time_calls(
        lambda: jax.block_until_ready(executable(*args)), **timing.call_options(spec)
    )
    stats.update(compile_s=compile_s, **peak_memory(executable))
    return stats, executable


def measure_call(call, variables, shape, spec):
    """Time forward and forward + backward of `call(x, training)`, their peak memory and XLA's
    FLOP count. `variables()` gives the (built) weights to differentiate."""
    weights = variables()
    args = (
        [weight.value for weight in weights],
        normal((shape.batch, shape.length, shape.width), spec.get("seed", 0)),
    )
    stages = {
        "forward": stateless(call, weights, False),
        "train": jax.grad(summed(stateless(call, weights, True)), argnums=(0, 1)),
    }
    result, baseline = {"profiled": {}}, memory.current_rss_mb()
    for stage in spec.get("stages", tuple(stages)):
        function = stages[stage]
        result[stage], executable = measure_stage(function, args, spec)
        if spec.get("profile", True):
            result["profiled"][f"{stage}_xla_flops"] = xla_flops(executable)
    result.update(baseline_mb=baseline, peak_rss_mb=memory.peak_rss_mb())
    return result


def matmul_product(size, dtype="float32"):
    """A blocking call of a jitted jnp.matmul of the two [size, size] `machine.operands` in `dtype`
    (float32 by default; bfloat16 for the rate a bf16 model is held against)."""
    a, b = (jax.device_put(operand).astype(dtype) for operand in machine.operands(size))
    product = jax.jit(jnp.matmul)
    return lambda: jax.block_until_ready(product(a, b))


def attention_implementation(device):
    """(implementation, why) of jax.nn.dot_product_attention on `device`: "cudnn" where it is a
    GPU that compiles cuDNN's fused attention for float32 inputs, else "xla"."""
    if device.platform != "gpu":
        return "xla", f"XLA implementation: cuDNN attention needs a GPU, not {device.platform}"
    probe = jnp.zeros(PROBE_SHAPE, jnp.float32)
    try:
        compiled(
            functools.partial(jax.nn.dot_product_attention, implementation="cudnn"),
            probe,
            probe,
            probe,
        )
    except Exception as error:  # noqa: BLE001 (any refusal means: not on this device and dtype)
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return "xla", f"XLA implementation: cuDNN refused float32 attention ({reason})"
    return "cudnn", "cuDNN fused attention"


def device_record():
    """{"device": ...}: the first device (platform, kind: the GPU's name or "cpu"), the number of
    devices and the implementation the jax.nn.dot_product_attention peer uses on it."""
    device = jax.devices()[0]
    implementation, why = attention_implementation(device)
    return {
        "device": {
            "platform": device.platform,
            "kind": device.device_kind,
            "count": jax.device_count(),
            "attention_implementation": implementation,
            "attention_note": why,
        }
    }
