"""Why XLA (`jit_compile=True`) trains slower and with more memory here than TensorFlow's executor.

    python -m arena_tf.benchmark xla [--mechanisms full linear] [--length 4096] [--batch 2]

Two measurements, each in a fresh process: the rates of the two kinds of work a training step is
made of, with and without XLA (float32 matmuls of square matrices; an element-wise pass, the exact
GELU plus a softmax over a [batch, length + 1, 1024] tensor, the LRA text model's MLP width); and,
per mechanism, one training step of the LRA Table 2 model (arena_tf/benchmark/lra_table2.py) with
and without XLA, with XLA's own memory plan for the step read from its dump (`Total bytes used` of
the compiled module's memory-usage report) next to both measured peaks.
"""

import os
import pathlib
import re
import tempfile

from arena_tf import files
from arena_tf.benchmark import isolated, machine, timing
from arena_tf.benchmark.layer_sweep import lra_params
from arena_tf.blocks import gelu

MATMUL_SIZES = (1024, 2048, 4096)
PLAN_PATTERN = re.compile(r"Total bytes used: (\d+)")


def measure_kernels(spec):
    """Child entry: best-of-`repeats` seconds of matmuls and of the element-wise pass, XLA or
    not."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    def best_seconds(function, *args):
        stats = timing.time_calls(
            lambda: function(*args).numpy(),
            warmup=1,
            repeats=spec["repeats"],
            min_repeats=spec["repeats"],
        )
        return stats["min_ms"] / 1e3

    result = {"matmul_gflops": {}, "elementwise_ms": {}}
    for jit in (False, True):
        mode = "xla" if jit else "tf"
        matmul = tf.function(tf.linalg.matmul, jit_compile=jit)
        result["matmul_gflops"][mode] = {
            str(n): 2
            * n**3
            / best_seconds(matmul, tf.random.normal([n, n]), tf.random.normal([n, n]))
            / 1e9
            for n in spec["matmul_sizes"]
        }
        passes = tf.function(lambda x: gelu(x) + tf.nn.softmax(x, axis=-1), jit_compile=jit)
        shape = [spec["batch"], spec["length"] + 1, 1024]
        result["elementwise_ms"][mode] = best_seconds(passes, tf.random.normal(shape)) * 1e3
    return result


def planned_bytes(dump_dir):
    """The largest `Total bytes used` among the memory-usage reports XLA dumped, or None."""
    totals = [
        int(match.group(1))
        for path in pathlib.Path(dump_dir).glob("*memory-usage-report*")
        for match in [PLAN_PATTERN.search(path.read_text())]
        if match
    ]
    return max(totals, default=None)


def measure_step(name, options, jit):
    """One training-step measurement in a fresh process (with XLA's dump when `jit`)."""
    spec = {
        "name": name,
        "params": lra_params(name),
        "length": options.length,
        "jit": jit,
        "batch": options.batch,
        "warmup": 1,
        "steps": options.steps,
        "max_seconds": 30.0,
    }
    if not jit:
        return isolated.run("train", spec, timeout=options.timeout)
    with tempfile.TemporaryDirectory(prefix="arena_xla_") as dump:
        previous = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = (
            f"{previous} --xla_dump_to={dump} --xla_dump_hlo_pass_re=NONE_MATCHES"
        ).strip()
        try:
            result = isolated.run("train", spec, timeout=options.timeout)
        finally:
            os.environ["XLA_FLAGS"] = previous
        plan = planned_bytes(dump)
    return {**result, "xla_planned_mb": None if plan is None else plan / 2**20}


def describe_step(name, tf_row, xla_row):
    def peak(row):
        return f"{row['peak_mb']:.0f} MB" if "peak_mb" in row else f"failed ({row.get('error')})"

    plan = xla_row.get("xla_planned_mb")
    return (
        f"{name:<12} step peak above baseline: TensorFlow {peak(tf_row)}, XLA {peak(xla_row)}"
        f" (XLA's plan for the step: {'unknown' if plan is None else f'{plan:.0f} MB'})"
    )


def run(options, say=print):
    results = machine.run_record("xla", options)
    kernels = isolated.run(
        "xla_kernels",
        {
            "matmul_sizes": list(MATMUL_SIZES),
            "repeats": 10,
            "batch": options.batch,
            "length": options.length,
        },
        timeout=options.timeout,
    )
    results["kernels"] = kernels
    if "error" in kernels:
        say(f"kernel rates failed: {kernels['error']}")
    else:
        for n in MATMUL_SIZES:
            rates = {mode: kernels["matmul_gflops"][mode][str(n)] for mode in ("tf", "xla")}
            say(f"matmul {n}x{n}: TensorFlow {rates['tf']:.0f} GFLOP/s, XLA {rates['xla']:.0f}")
        passes = kernels["elementwise_ms"]
        say(
            f"GELU + softmax over [{options.batch}, {options.length + 1}, 1024]: TensorFlow "
            f"{passes['tf']:.1f} ms, XLA {passes['xla']:.1f} ms"
        )
    results["steps"] = {}
    for name in options.mechanisms:
        rows = {mode: measure_step(name, options, mode == "xla") for mode in ("tf", "xla")}
        results["steps"][name] = rows
        say(describe_step(name, rows["tf"], rows["xla"]))
        files.write_json(options.output, results)
    files.write_json(options.output, results)
    say(f"results in {options.output}")
    return results
