"""Training steps/s in float32 against mixed_bfloat16 at the reproduction suites' shapes, on this
CPU: the measurement behind `train.precision: auto` choosing float32 on a CPU, also on one that
computes bfloat16 natively (arena_tf/training/auto_precision.py, configs/presets/cpu.yaml).

    python -m arena_tf.benchmark precision [--shapes cpu-listops cpu-pathfinder]
        [--mechanisms linformer full] [--rounds 4] [--steps 3]
        [--output docs/results/efficiency/precision.json]

A shape is a suite's model and batch: cpu-listops (the cpu preset's model, configs/presets/cpu.yaml;
batch 32, 2,000 tokens) or cpu-pathfinder (its one-layer width-32 model; batch 64, 1,024 pixels),
built as `python -m arena_tf.reproduce` builds it (the suite's settings included). Each
(shape, mechanism) runs in a fresh process that builds the model twice, once under each Keras
dtype policy, with the trainer's step (gradient tape, AdamW, one `tf.function`) on random inputs
of the task's vocabulary; after two untimed steps of each (the first traces), `rounds` rounds each
take `steps` steps of one dtype and then of the other, float32 first in even rounds and bfloat16
first in odd ones, so that a change of the machine's load hits both alike. A round's speed-up is
its float32 median step time over its bfloat16 one; the row keeps every round's, their median,
min and max, each dtype's steps/s over all its steps, the load before and after, and the CPU's
bfloat16 flags (arena_tf/cpu_precision.py).
"""

import time

import keras
import numpy as np

from arena_tf import cli, cpu_precision, files
from arena_tf.benchmark import isolated, machine
from arena_tf.models import build_classifier
from arena_tf.reproduce import suites
from arena_tf.schedules import make_optimizer
from arena_tf.training.experiment import build_experiment

DTYPES = ("float32", "mixed_bfloat16")
SHAPES = ("cpu-listops", "cpu-pathfinder")
ORDER = (
    "rounds alternate: float32's steps then bfloat16's in even rounds, bfloat16's then "
    "float32's in odd ones"
)


def experiment(shape, mechanism):
    """The (config, task) of `mechanism`'s run in suite `shape`, as the suite trains it."""
    suite = suites.load_suite(shape)
    return build_experiment(
        suite.tasks[0], mechanism, list(suite.overrides_of(mechanism)), suite.preset
    )


def built(config, policy):
    """(model, optimizer) of `config` under the Keras dtype `policy`."""
    keras.mixed_precision.set_global_policy(policy)
    keras.utils.set_random_seed(0)
    model = build_classifier(config.model)
    optimizer = make_optimizer(config.train)
    optimizer.build(model.trainable_variables)
    keras.mixed_precision.set_global_policy("float32")
    return model, optimizer


def training_step(model, optimizer):
    """The trainer's step (arena_tf/training/tf_trainer.py) without a distribution strategy."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    @tf.function
    def step(tokens, labels):
        with tf.GradientTape() as tape:
            logits = model(tokens, training=True)
            loss = tf.reduce_mean(
                keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(
            zip(tape.gradient(optimizer.scale_loss(loss), variables), variables)
        )
        return loss

    return step


def random_batch(config):
    """Tokens of the task's vocabulary (ids from 1 where 0 pads) and labels, at the run's batch."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    model, rng = config.model, np.random.default_rng(0)
    low = 0 if model.padding_id is None else 1
    tokens = rng.integers(low, model.vocab_size, (config.train.batch_size, model.max_len))
    labels = rng.integers(0, model.num_classes, config.train.batch_size)
    return tf.constant(tokens, tf.int32), tf.constant(labels, tf.int32)


def interleaved(steps, batch, rounds, count):
    """{dtype: [[seconds of each step] for each round]}, the dtypes taking turns as ORDER says."""
    seconds = {dtype: [] for dtype in DTYPES}
    for index in range(rounds):
        for dtype in DTYPES[::-1] if index % 2 else DTYPES:
            taken = []
            for _ in range(count):
                start = time.perf_counter()
                steps[dtype](*batch).numpy()
                taken.append(time.perf_counter() - start)
            seconds[dtype].append(taken)
    return seconds


def summary(seconds):
    """Each round's speed-up (float32 median / bfloat16 median), their median, min and max, and
    each dtype's median step in ms and steps/s over all its steps."""
    medians = {dtype: [float(np.median(r)) for r in seconds[dtype]] for dtype in DTYPES}
    speedups = [single / half for single, half in zip(*(medians[dtype] for dtype in DTYPES))]
    result = {
        "speedups": speedups,
        "speedup_median": float(np.median(speedups)),
        "speedup_min": min(speedups),
        "speedup_max": max(speedups),
    }
    for dtype in DTYPES:
        every = float(np.median([t for one in seconds[dtype] for t in one]))
        result[dtype] = {
            "median_ms": every * 1e3,
            "steps_per_second": 1 / every,
            "round_ms": [m * 1e3 for m in medians[dtype]],
        }
    return result


def measure(spec):
    """Child entry: both dtypes of one (shape, mechanism) built here and timed in turns."""
    config, _ = experiment(spec["shape"], spec["mechanism"])
    batch = random_batch(config)
    models = {dtype: built(config, dtype) for dtype in DTYPES}
    steps = {dtype: training_step(*models[dtype]) for dtype in DTYPES}
    for _ in range(2):  # the first traces
        for dtype in DTYPES:
            steps[dtype](*batch).numpy()
    load_before = machine.load_average()
    seconds = interleaved(steps, batch, spec["rounds"], spec["steps"])
    return {
        **summary(seconds),
        "batch": config.train.batch_size,
        "length": config.model.max_len,
        "parameters": models["float32"][0].count_params(),
        "load_before": load_before,
        "load": machine.load_average(),
    }


def measure_matmul(spec):
    """Child entry: the best GFLOP/s of a square [size, size] matmul in float32 and in bfloat16
    (TensorFlow's, the dtypes taking turns `repeats` times): what the CPU's bfloat16 arithmetic
    gives where the operands are large, beside what the models' small ones gain."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    size, rng = spec["size"], np.random.default_rng(0)
    operands = {
        dtype: [tf.constant(rng.standard_normal((size, size)), dtype) for _ in range(2)]
        for dtype in ("float32", "bfloat16")
    }
    seconds = {dtype: [] for dtype in operands}
    for index in range(spec["repeats"] + 1):  # the first call of each is untimed (warm-up)
        for dtype in operands if index % 2 else reversed(operands):
            start = time.perf_counter()
            tf.linalg.matmul(*operands[dtype]).numpy()
            if index:
                seconds[dtype].append(time.perf_counter() - start)
    return {
        "size": size,
        **{f"{dtype}_gflops": 2 * size**3 / min(taken) / 1e9 for dtype, taken in seconds.items()},
        "load": machine.load_average(),
    }


def describe_row(row):
    head = f"{row['shape']:<15} {row['mechanism']:<10}"
    if "error" in row:
        return f"{head} failed: {row['error']}"
    single, half = (row[dtype] for dtype in DTYPES)
    return (
        f"{head} float32 {single['steps_per_second']:6.2f} steps/s  mixed_bfloat16 "
        f"{half['steps_per_second']:6.2f} steps/s  speed-up {row['speedup_median']:.2f}x "
        f"[{row['speedup_min']:.2f}-{row['speedup_max']:.2f}]  load {row['load_before']:.1f}"
        f"-{row['load']:.1f}"
    )


def describe_matmul(rates):
    if "error" in rates:
        return f"matmul rates failed: {rates['error']}"
    return (
        f"matmul {rates['size']}x{rates['size']}: float32 {rates['float32_gflops']:.0f} "
        f"GFLOP/s, bfloat16 {rates['bfloat16_gflops']:.0f} GFLOP/s (best of 5 each)"
    )


def run(options, say=print):
    """Every (shape, mechanism); writes options.output after each row and returns the results.
    A UsageError under a Keras backend other than TensorFlow (it times tf.function steps) before
    anything is measured; a RunError, the results written, when no row could be measured."""
    if keras.backend.backend() != "tensorflow":
        raise cli.UsageError(
            f"benchmark precision times TensorFlow training steps, but "
            f"KERAS_BACKEND={keras.backend.backend()}",
            "KERAS_BACKEND=tensorflow (or unset)",
            "rerun it without KERAS_BACKEND=jax",
        )
    results = {
        **machine.run_record("precision", options),
        "order": ORDER,
        "bf16_flags": cpu_precision.native_bf16_flags(),
        "rows": [],
    }
    say(
        f"bfloat16 flags of this CPU: {', '.join(results['bf16_flags']) or 'none'}; "
        f"{options.rounds} rounds of {options.steps} steps per dtype"
    )
    measure_one = isolated.runner(options.in_process)
    results["matmul"] = measure_one(
        "precision_matmul", {"size": options.matmul_size, "repeats": 5}, timeout=options.timeout
    )
    say(describe_matmul(results["matmul"]))
    for shape in options.shapes:
        for mechanism in options.mechanisms:
            spec = {
                "shape": shape,
                "mechanism": mechanism,
                "rounds": options.rounds,
                "steps": options.steps,
            }
            row = {
                "shape": shape,
                "mechanism": mechanism,
                **measure_one("precision", spec, timeout=options.timeout),
            }
            results["rows"].append(row)
            say(describe_row(row))
            files.write_json(options.output, results)
    results.update(finished=time.strftime("%Y-%m-%d %H:%M:%S"), load_end=machine.load_average())
    files.write_json(options.output, results)
    say(f"results in {options.output}")
    failed = [row for row in results["rows"] if "error" in row]
    if results["rows"] and len(failed) == len(results["rows"]):
        raise cli.RunError(
            f"no row was measured: all {len(failed)} failed (the first: {failed[0]['error']})",
            "at least one row measured",
            f"see {options.output}; a --timeout too short fails every row",
        )
    return results
