"""LRA Table 2 on this machine: training steps per second and peak memory of the byte-level text
classifier (4 layers, 4 heads, width 256, MLP 1024, vocabulary 257, 2 classes) at 1K-4K tokens.

    python -m arena_tf.benchmark train --batch 32 --steps 2 \\
        --memory-cap-gb 20   # docs/results/efficiency

Every (mechanism, length, XLA or not, remat or not) trains in a fresh process on random tokens:
AdamW as in LRA, dropout 0.1, one `tf.function` step (`jit_compile=True` for XLA; `train.remat`'s
block recomputation with `--remat`), the first steps untimed (they trace and compile). LRA used
batch 32 on 16 TPU v3 cores; here that takes about an hour for the whole sweep, so batch and steps
are options (stated in the output), a batch whose estimated memory exceeds the cap is halved until
it fits, and `--update` re-measures chosen rows in place.
"""

import itertools
import json
import pathlib
import time

import keras
import numpy as np

from arena_tf import files
from arena_tf.benchmark import costs, isolated, machine, memory, timing
from arena_tf.benchmark.layer_sweep import lra_params
from arena_tf.cli import UsageError
from arena_tf.config import ModelConfig, TrainConfig
from arena_tf.models import build_classifier
from arena_tf.schedules import make_optimizer

DEFAULT_LENGTHS = (1024, 2048, 3072, 4096)
# The byte-level text classifier of LRA Table 2.
MODEL = dict(
    num_layers=4, num_heads=4, emb_dim=256, qkv_dim=256, mlp_dim=1024, vocab_size=257, num_classes=2
)
ATTENTION_DROPOUT = ModelConfig.attention_dropout


def measure(spec):
    """Child entry: build the classifier, time training steps, peak memory above the baseline."""
    import tensorflow as tf  # tensorflow: not imported under the JAX backend

    keras.utils.set_random_seed(0)
    config = ModelConfig(
        attention=spec["name"], attention_params=spec["params"], max_len=spec["length"], **MODEL
    )
    model = build_classifier(config, remat=spec.get("remat", False))
    optimizer = make_optimizer(TrainConfig())
    optimizer.build(model.trainable_variables)
    rng = np.random.default_rng(0)
    tokens = tf.constant(
        rng.integers(1, MODEL["vocab_size"], (spec["batch"], spec["length"])), tf.int32
    )
    labels = tf.constant(rng.integers(0, MODEL["num_classes"], spec["batch"]), tf.int32)

    @tf.function(jit_compile=spec["jit"])
    def step(tokens, labels):
        with tf.GradientTape() as tape:
            logits = model(tokens, training=True)
            loss = tf.reduce_mean(
                keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
            )
        optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    baseline = memory.current_rss_mb()
    start = time.perf_counter()
    step(tokens, labels).numpy()
    first = time.perf_counter() - start
    stats = timing.time_calls(
        lambda: step(tokens, labels).numpy(),
        warmup=spec["warmup"] - 1,
        repeats=spec["steps"],
        max_seconds=spec["max_seconds"],
        min_repeats=2,
    )
    return {
        "first_step_s": first,
        "step": stats,
        "steps_per_second": 1e3 / stats["median_ms"],
        "peak_mb": memory.peak_rss_mb() - baseline,
        "baseline_mb": baseline,
        "peak_rss_mb": memory.peak_rss_mb(),
    }


# -- the sweep (parent process) -----------------------------------------------------------------


def encoder_shape(batch, length):
    """Shape the attention sees: the CLS token adds one position."""
    return costs.Shape(
        batch, length + 1, MODEL["num_heads"], MODEL["qkv_dim"] // MODEL["num_heads"]
    )


def fitting_batch(name, params, batch, length, cap_gb):
    """(batch, estimate GB): the requested batch halved until its estimate fits under the cap.
    The same with remat (so its time cost is compared at the same batch): remat keeps less, but
    the recomputed block's attention at its peak is more than the estimate of one layer."""
    while True:
        shape = encoder_shape(batch, length)
        # The model trains with attention dropout, under which `full` stays dense.
        cost = costs.attention_cost(name, shape, {**params, "attention_dropout": ATTENTION_DROPOUT})
        estimate = memory.estimated_gb(cost, shape, layers=MODEL["num_layers"])
        if estimate <= cap_gb or batch == 1:
            return batch, estimate
        batch //= 2


def planned_row(name, length, jit, remat, options):
    params = lra_params(name)
    batch, estimate = fitting_batch(name, params, options.batch, length, options.memory_cap_gb)
    shape = encoder_shape(batch, length)
    return {
        "name": name,
        "params": params,
        "length": length,
        "jit": jit,
        "remat": remat,
        "batch": batch,
        "requested_batch": options.batch,
        "estimated_gb": estimate,
        "skipped": memory.over_cap(estimate, options.memory_cap_gb),
        "train_flops": costs.model_train_flops(
            name, shape, params, MODEL["num_layers"], MODEL["mlp_dim"]
        ),
    }


def describe_row(row):
    head = (
        f"{row['name']:<12} L={row['length']:<5} {'XLA' if row['jit'] else '   '} "
        f"{'remat' if row.get('remat') else '     '} batch {row['batch']:<3}"
    )
    if row.get("skipped"):
        return f"{head} skipped: {row['skipped']}"
    if "error" in row:
        return f"{head} failed: {row['error']}"
    return (
        f"{head} {row['steps_per_second']:7.3f} steps/s (IQR {timing.spread(row['step']):4.0%}) "
        f"peak +{row['peak_mb']:7.0f} MB  first step {row['first_step_s']:6.1f} s  "
        f"load {row['load']:.1f}"
    )


def starting_results(options):
    """(results, update): a new results record, or with `options.update` the existing output,
    whose rows the re-measured ones replace, and the record of this update inside it."""
    fresh = {**machine.run_record("train", options), "model": MODEL, "rows": []}
    if not options.update:
        return fresh, None
    path = pathlib.Path(options.output)
    if not path.exists():
        raise UsageError(
            f"--update re-measures rows of {path}, which does not exist",
            "an existing results file",
            "run without --update first",
        )
    results = json.loads(path.read_text())
    if results.get("model") != MODEL:
        raise UsageError(
            f"{path} measured another model ({results.get('model')})",
            f"results of the model {MODEL}",
            "--update can only replace rows of the same model; run without it",
        )
    update = {key: fresh[key] for key in ("started", "load_start", "options")}
    results.setdefault("updates", []).append(update)
    return results, update


def row_key(row):
    """What a training row measured: mechanism, length, XLA or not, remat or not."""
    return row["name"], row["length"], row["jit"], row.get("remat", False)


def place(rows, row):
    """Put `row` in `rows`, replacing a row of the same key."""
    for index, old in enumerate(rows):
        if row_key(old) == row_key(row):
            rows[index] = row
            return
    rows.append(row)


def run(options, say=print):
    """The whole training sweep; writes options.output after every row and returns the results.
    With `options.update` the rows measured now replace those of the existing output."""
    results, update = starting_results(options)
    say(
        f"training benchmark: batch {options.batch} (halved where memory needs), "
        f"{options.warmup} untimed + {options.steps} timed steps, lengths {options.lengths}"
    )
    plans = itertools.product(
        options.lengths, options.mechanisms, options.xla_modes, options.remat_modes
    )
    for length, name, jit, remat in plans:
        row = planned_row(name, length, jit, remat, options)
        if not row["skipped"]:
            spec = {
                "name": name,
                "params": row["params"],
                "length": length,
                "jit": jit,
                "remat": remat,
                "batch": row["batch"],
                "warmup": options.warmup,
                "steps": options.steps,
                "max_seconds": options.max_seconds,
            }
            measure = isolated.runner(options.in_process)
            row.update(measure("train", spec, timeout=options.timeout), load=machine.load_average())
        place(results["rows"], row)
        say(describe_row(row))
        files.write_json(options.output, results)
    (update or results).update(
        finished=time.strftime("%Y-%m-%d %H:%M:%S"), load_end=machine.load_average()
    )
    files.write_json(options.output, results)
    say(f"results in {options.output}")
    return results
