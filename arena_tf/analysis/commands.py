"""The two analysis commands, on run directories of `python -m arena_tf.train`.

result = measure_span("runs/pathfinder-full", num_examples=1000)   # also writes span.json there
plots.draw_span_chart("span.png", [result, ...])                   # bars of several runs' spans
draw_attention("runs/pathfinder-full", example=3)       # writes attention_example_3.png there
"""

import math

import keras
import numpy as np

from arena_tf import files
from arena_tf.analysis import plots
from arena_tf.analysis.maps import example_maps
from arena_tf.analysis.rundir import examples, load_run, make_task, sequences
from arena_tf.analysis.span import SpanAccumulator, uniform_span
from arena_tf.analysis.walk import real_tokens, token_offset
from arena_tf.analysis.weights import (
    DIRECT,
    DISTRIBUTION,
    batch_size_for,
    check_length,
    layer_weights,
)
from arena_tf.cli import UsageError

SPLIT = "validation"
SPAN_FILE = "span.json"
SPAN_DEFINITION = (
    "mean over real query positions i of sum_j w_ij |i - j|, averaged over heads (per_head), then "
    "layers (per_layer, then span) and sequences; positions are encoder positions (CLS at 0 when "
    "the model pools by CLS); padding is neither a query nor a key"
)


def measure_span(run_dir, num_examples=1000, verbose=True):
    """The required attention span of the run's model over the first `num_examples` validation
    examples; written to run_dir/span.json and returned as a dict."""
    run = load_run(run_dir)
    model_config = run.config.model
    positions = check_length(model_config.encoder_len)
    tokens, count = sequences(make_task(run.config), SPLIT, num_examples)
    accumulator = SpanAccumulator(model_config.num_layers, model_config.num_heads)
    batch = batch_size_for(model_config.num_heads, positions)
    progress = keras.utils.Progbar(len(tokens), verbose=1 if verbose else 0, unit_name="sequence")
    for start in range(0, len(tokens), batch):
        chunk = tokens[start : start + batch]
        for layer, (weights, mask) in enumerate(layer_weights(run.encoder, chunk)):
            accumulator.add(layer, weights, mask)
        progress.add(len(chunk))
    result = {
        "task": run.config.task.name,
        "model": model_config.attention,
        "run_dir": str(run.path),
        "split": SPLIT,
        "examples": count,
        "positions": positions,
        "uniform_span": mean_uniform_span(run, tokens),
        "definition": SPAN_DEFINITION,
        "weights": DISTRIBUTION,
        "method": "explicit weights" if model_config.attention in DIRECT else "identity probe",
        **accumulator.result(),
    }
    files.write_json(run.path / SPAN_FILE, result)
    return result


def mean_uniform_span(run, tokens):
    """The span uniform attention over each sequence's real positions (its tokens, plus CLS) would
    have, averaged over the sequences [n, length]: the reference a span is compared with."""
    real = real_tokens(tokens, run.config.model.padding_id)
    return float(np.mean(uniform_span(real.sum(axis=1) + token_offset(run.encoder))))


def span_summary(result):
    """One line: the span of a run and where it was written."""
    layers = ", ".join(f"{value:.1f}" for value in result["per_layer"])
    return (
        f"{result['task']} / {result['model']}: required attention span {result['span']:.1f} "
        f"positions (per layer {layers}; uniform attention {result['uniform_span']:.1f}) over "
        f"{result['examples']} {result['split']} examples -> {result['run_dir']}/{SPAN_FILE}"
    )


# -- attention maps -----------------------------------------------------------------------------


def token_labels(task, tokens):
    """Each token's text through the task's `decode`, with line breaks and tabs made visible."""
    return [task.decode([int(t)]).replace("\n", "\u23ce").replace("\t", "\u21e5") for t in tokens]


def render_text(path, task, tokens, maps, title, padding_id):
    """A strip over the real (non-padding) tokens."""
    real = real_tokens(tokens, padding_id)
    shown = {name: values[real] for name, values in maps.items()}
    return plots.draw_text_maps(path, token_labels(task, tokens[real]), shown, title)


def render_image(path, task, tokens, maps, title, padding_id):
    """Heatmaps over the image (the tokens are its pixels, row by row, side sqrt(length))."""
    side = math.isqrt(len(tokens))
    if side * side != len(tokens):
        raise UsageError(
            f"{task.name}: {len(tokens)} tokens are not a square image",
            "a pixel task (image, pathfinder) or a task with a decode() method for text strips",
            "analyse a run of one of those tasks",
        )
    return plots.draw_image_maps(path, tokens.reshape(side, side), maps, title)


def renderer(task):
    """Text strips for tasks whose tokens decode to text, image heatmaps for pixel tasks."""
    return {True: render_text, False: render_image}[callable(getattr(task, "decode", None))]


def draw_attention(run_dir, example):
    """PNGs of the pooled query's attention per layer and rolled out, for validation example
    `example` (one file per model input), written into the run directory; their paths."""
    run = load_run(run_dir)
    check_length(run.config.model.encoder_len)
    task = make_task(run.config)
    found = examples(task, SPLIT, 1, start=example)
    if example < 0 or not found:
        raise UsageError(
            f"--example {example} is outside the {SPLIT} split of {task.name}",
            "an index from 0 to its number of examples - 1",
            "pass a smaller --example",
        )
    inputs, label = found[0]
    draw = renderer(task)
    paths = []
    for number, tokens in enumerate(inputs, 1):
        maps = example_maps(run.encoder, tokens)
        named = {f"layer {i}": values for i, values in enumerate(maps["layers"], 1)}
        named["rollout"] = maps["rollout"]
        suffix = f"_input_{number}" if len(inputs) > 1 else ""
        path = run.path / f"attention_example_{example}{suffix}.png"
        title = (
            f"{run.label}, {SPLIT} example {example} (label {label}): attention of "
            f"{maps['query']}, heads averaged, per layer and rolled out (Abnar & Zuidema 2020)"
        )
        paths.append(draw(path, task, tokens, named, title, run.config.model.padding_id))
    return paths
