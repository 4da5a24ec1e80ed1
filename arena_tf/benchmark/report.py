"""docs/results/efficiency/report.md from the results of `layers`, `pairs` and `train`, with its
plots beside it.

    python -m arena_tf.benchmark report [--layers L.json] [--train T.json] [--mixers M.json]
                                        [--pairs P.json] [--exact E.json] [--gpu G.json]
                                        [--output docs/results/efficiency/report.md]

Any results file may be missing (its sections are left out). Hand-written findings (profiles of
missed targets) in the notes file are included at the end, so the page stays generated.

A layers results file measured under another Keras backend than TensorFlow (`layers --backend
jax`) says so in its "backend" record; its sections are then labelled with the backend and device
in their headings, and say how its calls ran and what its memory figures are (`METHODS`).
"""

import dataclasses
import pathlib

from arena_tf import files
from arena_tf.benchmark import costs, memory, paper, plots, targets, timing
from arena_tf.cli import UsageError
from arena_tf.markdown import table


def fmt(value, spec=".1f", missing="–"):
    return missing if value is None else format(value, spec)


# -- how a results file was measured ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Method:
    """How the layer numbers of one Keras backend were taken, in the report's words."""

    label: str  # heading label ("" for TensorFlow, the page's default)
    calls: str  # how the calls ran
    memory: str  # what the memory figures are
    matmul: str  # the product of the matmul rate
    peer_flops: str  # the FLOP-check cells of a peer row


METHODS = {
    "tensorflow": Method(
        "",
        "`tf.function`, no XLA",
        "memory is the peak resident set above the process's baseline",
        "tf.matmul",
        "n/a (einsum)",
    ),
    "jax": Method(
        "JAX",
        "`jax.jit` (XLA; compile time excluded, stored as compile_s)",
        "memory is the device's peak_bytes_in_use where it keeps allocator statistics "
        "(a GPU), else (a CPU) XLA's memory analysis of the compiled call: arguments "
        "(weights and input) + outputs + temporaries",
        "jnp.matmul under jax.jit",
        "–",
    ),
}


def backend_of(results):
    """The results' backend record; files from before --backend are TensorFlow's."""
    return results.get("backend", {"name": "tensorflow"})


def method(results):
    """The `Method` of the results' backend."""
    return METHODS[backend_of(results)["name"]]


def backend_label(results):
    """A heading suffix, ' (JAX on cpu)', so that no other backend's numbers read as
    TensorFlow's; '' for TensorFlow's."""
    label = method(results).label
    device = backend_of(results).get("kind", "an unrecorded device")
    return f" ({label} on {device})" if label else ""


def backend_line(results):
    """The conditions line of a backend record that names its device, else None."""
    record = backend_of(results)
    if "kind" not in record:
        return None
    return (
        f"- Backend: Keras on {method(results).label}, device {record['kind']} (platform "
        f"{record['platform']}, {record['count']} device(s)); the `jax_dpa` peer: "
        f"{record['attention_note']}."
    )


# -- conditions ---------------------------------------------------------------------------------


def conditions(results):
    """Machine, versions, load and options of one results file."""
    machine = results["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in machine["versions"].items())
    loads = [row["load"] for row in results["rows"] if "load" in row]
    lines = [
        f"- Machine: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gb']} GB "
        f"({machine['platform']}); {versions}.",
        *filter(None, [backend_line(results)]),
        f"- Run {results['started']} to {results.get('finished', '(unfinished)')}; 1-minute load "
        f"average {fmt(results['load_start'], '.1f')} at the start"
        + (f", {min(loads):.1f}-{max(loads):.1f} after each configuration" if loads else "")
        + ".",
    ]
    if "matmul" in results:
        rates = ", ".join(f"{m['gflops']:.1f}" for m in results["matmul"])
        lines.append(
            f"- Dense float32 matmul rate ({method(results).matmul} of square "
            "matrices up to "
            f"{results['options'].get('matmul_size')}, best call of the best size), "
            f"measured at the start and end of the run: {rates} GFLOP/s; fractions of "
            "the matmul rate use the higher."
        )
    options = results["options"]
    shown = {k: v for k, v in options.items() if k not in ("output", "mechanisms", "run")}
    lines.append("- Options: " + ", ".join(f"{k}={v}" for k, v in sorted(shown.items())) + ".")
    for update in results.get("updates", []):
        chosen = update["options"]
        lines.append(
            f"- Re-measured with `--update` from {update['started']} to "
            f"{update.get('finished', '(unfinished)')} (load {fmt(update['load_start'], '.1f')} "
            f"at the start), replacing the rows of {', '.join(chosen['mechanisms'])} at "
            f"{', '.join(map(str, chosen['lengths']))} tokens (XLA {chosen['xla']})."
        )
    return "\n".join(lines)


# -- layers -------------------------------------------------------------------------------------


def labels_in_order(rows):
    order = []
    for row in rows:
        if row["label"] not in order:
            order.append(row["label"])
    return order


def unmeasured(row):
    """Why a row has no numbers ("–" absent, skipped, failed), or None when it has them."""
    if row is None:
        return "–"
    if row.get("skipped"):
        return f"skipped ({row['estimated_gb']:.0f} GB est.)"
    if "error" in row:
        return "failed"
    return None


def cell(row, stage, value, spec):
    """A table cell: the value, or why there is none."""
    return unmeasured(row) or format(value(row[stage]), spec)


def length_table(rows, stage, value, spec):
    lengths = sorted({row["length"] for row in rows})
    by_key = {(row["label"], row["length"]): row for row in rows}
    body = [
        [label] + [cell(by_key.get((label, n)), stage, value, spec) for n in lengths]
        for label in labels_in_order(rows)
    ]
    return table(["mechanism / peer"] + [str(n) for n in lengths], body)


def detail_table(rows, length, peer_flops="n/a (einsum)"):
    body = []
    for row in rows:
        if row["length"] != length or "train" not in row:
            continue
        profiled = row.get("profiled") or {}
        fwd_check = ratio(profiled.get("forward_matmul_flops"), row["formula_flops"])
        train_check = ratio(profiled.get("train_matmul_flops"), row["formula_train_flops"])
        checks = [fmt(fwd_check, ".3f"), fmt(train_check, ".2f")]
        if row["kind"] == "peer":  # TensorFlow's: tf.einsum, which has no FLOP statistics
            checks = [peer_flops] * 2
        fwd, train = row["forward"], row["train"]
        body.append(
            [
                row["label"],
                params_cell(row),
                f"{fwd['median_ms']:.1f} ({timing.spread(fwd):.0%})",
                f"{train['median_ms']:.1f} ({timing.spread(train):.0%})",
                f"{train['peak_mb']:.0f}",
                f"{row['estimated_gb']:.2f}",
                f"{row['formula_flops'] / 1e9:.2f}",
                *checks,
                f"{train['gflops']:.1f}",
                f"{train['matmul_fraction']:.0%}",
            ]
        )
    return table(
        [
            "mechanism / peer",
            "parameters",
            "forward ms (IQR)",
            "fwd+bwd ms (IQR)",
            "peak MB",
            "estimate GB",
            "forward GFLOP",
            "profiler / formula (fwd)",
            "graph count / 3x formula (fwd+bwd)",
            "fwd+bwd GFLOP/s",
            "of matmul rate",
        ],
        body,
    )


def times(value):
    """'2.50x', or '–' for a missing ratio."""
    return fmt(value, ".2f") + "x" if value is not None else "–"


def ratio(numerator, denominator):
    return numerator / denominator if numerator and denominator else None


def params_cell(row):
    return ", ".join(f"{k}={v}" for k, v in sorted(row["params"].items())) or "–"


def agreement_table(records):
    body = [
        [
            r["peer"],
            r["title"],
            f"{r['counterpart']} {r['counterpart_params'] or ''}".strip(),
            "yes" if r["compared"] else "no (different function)",
            fmt(r.get("relative_difference"), ".1e"),
            fmt(r.get("input_scale"), "g"),
            {True: "yes", False: "**no**", None: "–"}[r.get("agrees")],
            r.get("note", ""),
        ]
        for r in records
    ]
    return table(
        [
            "peer",
            "layer",
            "our counterpart",
            "outputs compared",
            "max relative difference",
            "input scale",
            "agree",
            "note",
        ],
        body,
    )


def time_and_memory_tables(rows):
    """Headings and tables: forward + backward time, forward time, peak memory over length."""
    return [
        "### Forward + backward time (ms)",
        length_table(rows, "train", lambda s: s["median_ms"], ".1f"),
        "### Forward time (ms)",
        length_table(rows, "forward", lambda s: s["median_ms"], ".1f"),
        f"### Peak memory, forward + backward ({memory.peak_heading(rows)})",
        length_table(rows, "train", lambda s: s["peak_mb"], ".0f"),
    ]


def layer_section(results, output_dir):
    rows = results["rows"]
    time_png = plots.time_plot(rows, output_dir / "efficiency_time.png")
    memory_png = plots.memory_plot(rows, output_dir / "efficiency_memory.png")
    shape = rows[0]["shape"] if rows else {}
    width = shape.get("heads", 0) * shape.get("head_dim", 0)
    parts = [
        f"## One attention layer{backend_label(results)}",
        f"Inputs [batch {shape.get('batch')}, length, width {width}] "
        f"({shape.get('heads')} heads of {shape.get('head_dim')}), float32, "
        f"{method(results).calls}. Forward + backward takes gradients for the input and every "
        "weight. Times are medians (interquartile spread relative to the median in brackets); "
        f"{method(results).memory}, each configuration in a fresh process. FLOPs count "
        "matrix products (2 per multiply-add) from each mechanism's formula "
        "(`arena_tf/benchmark/costs.py`); forward + backward is 3x the forward. Our mechanisms "
        "use the LRA parameters of `configs/models/`; rows named `name[param=value]` are the "
        "counterpart of a peer that needs other parameters.",
        conditions(results),
        *time_and_memory_tables(rows),
        "### Achieved rate, forward + backward, as a fraction of the matmul rate",
        length_table(rows, "train", lambda s: s["matmul_fraction"], ".0%"),
        f"![time vs length]({time_png.name})",
        f"![memory vs length]({memory_png.name})",
    ]
    for length in (4096,):
        parts += [f"### Detail at {length}", detail_table(rows, length, method(results).peer_flops)]
    parts += [
        "### Peers",
        "Outputs compared with our weights copied into the peer (and our "
        "random features, for FAVOR+), no padding, before any time is compared.",
        agreement_table(results.get("agreement", [])),
        "Speed-up of ours over each peer (peer time / our time):",
        peer_speedup_table(rows),
    ]
    return "\n\n".join(parts)


def peer_speedup_table(rows):
    body = []
    for ours, peer, minimum in targets.PEER_TARGETS:
        for stage in ("forward", "train"):
            found = targets.speedups(rows, ours, peer, stage)
            body.append(
                [f"{ours} vs {peer}", {"train": "fwd+bwd"}.get(stage, stage), f"{minimum:g}x"]
                + [
                    f"{found[n]:.2f}x" if n in found else "–"
                    for n in sorted({r["length"] for r in rows})
                ]
            )
    lengths = [str(n) for n in sorted({r["length"] for r in rows})]
    return table(["pair", "pass", "target"] + lengths, body)


# -- pairs side by side -------------------------------------------------------------------------


def ratio_cell(row):
    """ "2.31x [2.10-2.52]", or why the configuration has no ratio."""
    if "ratio_median" in row:
        return f"{row['ratio_median']:.2f}x [{row['ratio_min']:.2f}-{row['ratio_max']:.2f}]"
    if "unsupported" in row:
        return f"unsupported: {row['unsupported']}"
    return "failed"


def pair_table(rows):
    body = [
        [
            str(row["batch"]),
            row["mask"],
            ratio_cell(row),
            fmt(row.get("ours_ms")),
            fmt(row.get("peer_ms")),
            f"{row['rounds']} x {len(row.get('runs', [row]))}",
            " / ".join(f"{run['ratio_median']:.2f}x" for run in row.get("runs", [])),
        ]
        for row in rows
    ]
    return table(
        [
            "batch",
            "mask",
            "ratio median [min-max]",
            "ours ms",
            "peer ms",
            "rounds x runs",
            "each run's median",
        ],
        body,
    )


def call_text(function, *positional, **arguments):
    """`function(value, ..., key=value, ...)`, the values as Python literals."""
    shown = [repr(value) for value in positional] + [f"{k}={v!r}" for k, v in arguments.items()]
    return f"`{function}({', '.join(shown)})`"


def pair_configuration(rows):
    """How ours and the peer were built and take the padding mask (from the rows that say)."""
    ours = next((row["ours"] for row in rows if "arguments" in row["ours"]), None)
    peer = next((row["peer"] for row in rows if "class" in row["peer"]), None)
    lines = []
    if ours:
        built = call_text(
            "arena_tf.layers.get", ours["name"], **ours["arguments"], **ours["params"]
        )
        lines.append(f"- Ours: {built}; padding through {ours['masking']}.")
    if peer:
        lines.append(
            f"- Peer: {call_text(peer['class'], **peer['arguments'])}; padding through "
            f"{peer['masking'] or 'nothing (it takes no mask)'}. Its whole "
            "`get_config()` is in the results file."
        )
    return "\n".join(lines) or "- Neither layer was built (every configuration failed)."


def rate_line(results):
    """The matmul rate beside the physical peak lscpu gives."""
    rate, peak = results["matmul_rate"], results["peak"]
    line = (
        f"- Dense float32 matmul rate (tf.matmul of square matrices up to "
        f"{results['options'].get('matmul_size')}, best call of the best size), measured "
        f"once at the start: {rate['gflops']:.1f} GFLOP/s. "
    )
    if not peak.get("gflops"):
        unknown = peak.get("error", "lscpu gives no clock or vector flags")
        return line + f"Physical peak: unknown ({unknown})."
    return line + (
        f"Physical peak from lscpu: {peak['cores']} cores x {peak['mhz']:.0f} MHz x "
        f"{peak['flops_per_cycle']} FLOPs/cycle (2 FMA units x "
        f"{peak['flops_per_cycle'] // 4} floats x 2) = {peak['gflops']:.0f} GFLOP/s; "
        "the MHz is the nominal clock lscpu states, so a boost clock lets the "
        "measured rate exceed it."
    )


def threads_text(threads):
    variables = ", ".join(f"{k}={v}" for k, v in sorted(threads["environment"].items()))
    return (
        f"TensorFlow intra-op {threads['intra_op']}, inter-op {threads['inter_op']} "
        f"(0: TensorFlow's default, from the cores); "
        f"{variables or 'no thread variables set in the environment'}"
    )


def pairs_section(results):
    rows = results["rows"]
    settings = dict.fromkeys(threads_text(row["threads"]) for row in rows if "threads" in row)
    parts = [
        "## Pairs side by side",
        "Each of our mechanisms and its peer built in one process (a fresh process per "
        "configuration), one `tf.function` forward + backward step each (gradients for the input "
        "and every weight), warmed up, then timed in interleaved rounds ("
        + results["order"]
        + "). A round's ratio is the peer's median time over ours. The sweep ran several times, "
        "each configuration in a new process each time; the table gives the median of all rounds' "
        "ratios with their min-max (pooled over the runs), each side's median time (median of the "
        "runs) and each run's own median ratio. Padded: the last quarter of the sequence is "
        "padding at batch 1; at larger batches the padding grows from none (first example) to a "
        "quarter (last). Reproduce with the independent script: `python tools/side_by_side.py "
        "--check docs/results/efficiency/pairs.json`.",
        "\n".join(
            [
                conditions(results),
                rate_line(results),
                "- Threads: " + (" / ".join(settings) or "not recorded") + ".",
            ]
        ),
    ]
    for pair in dict.fromkeys(row["pair"] for row in rows):
        mine = [row for row in rows if row["pair"] == pair]
        ours, peer = pair.rsplit(":", 1)
        parts += [
            f"### {ours} vs {peer} ({mine[0]['length']} tokens)",
            pair_table(mine),
            pair_configuration(mine),
        ]
    return "\n\n".join(parts)


# -- training -----------------------------------------------------------------------------------


def train_table(rows, value, spec, jit):
    """Mechanisms x lengths of `value(row, full_row)` (full's row at the same length and mode)."""
    lengths = sorted({row["length"] for row in rows})
    names = []
    for row in rows:
        if row["name"] not in names:
            names.append(row["name"])
    by_key = {(r["name"], r["length"], r["jit"]): r for r in rows}
    body = []
    for name in names:
        cells = []
        for length in lengths:
            row, full = by_key.get((name, length, jit)), by_key.get(("full", length, jit))
            cells.append(train_cell(row, lambda r: value(r, full), spec))
        body.append([name] + cells)
    return table(["mechanism"] + [str(n) for n in lengths], body)


def relative(measure):
    """value(row, full): `measure(row)` over `measure(full)`, per example (NaN without full)."""

    def value(row, full):
        if unmeasured(full):
            return float("nan")
        return measure(row) / measure(full)

    return value


def train_cell(row, value, spec):
    """A training cell: the value (with the batch, bN, where memory made it smaller)."""
    if unmeasured(row):
        return unmeasured(row)
    requested = row.get("requested_batch", row["batch"])
    batch = "" if row["batch"] == requested else f" (b{row['batch']})"
    return format(value(row), spec) + batch


def paper_table():
    body = [
        [name] + [f"{s} / {m}" for s, m in zip(steps, paper.MEMORY_GB[name])]
        for name, steps in paper.STEPS_PER_SECOND.items()
    ]
    return table(["model (paper)"] + [f"{n} steps/s / GB" for n in paper.LENGTHS], body)


def speed_table(train_rows):
    plain = {r["name"]: r for r in targets.speed_comparison(train_rows, jit=False)}
    xla = {r["name"]: r for r in targets.speed_comparison(train_rows, jit=True)}
    body = [
        [
            name,
            times(row["ours"]),
            times(xla[name]["ours"]),
            f"{row['paper']}x",
            times(row["flops_ratio"]),
            row["nearest"] or "–",
        ]
        for name, row in plain.items()
    ]
    return table(
        ["mechanism", "ours (no XLA)", "ours (XLA)", "paper (TPU)", "FLOPs ratio", "ours nearest"],
        body,
    )


def run_accuracy(runs_dir, task, name):
    """Our test accuracy (%) of `name` on `task` from runs/<task>-<name>/metrics.json, or None."""
    metrics = files.read_json(pathlib.Path(runs_dir) / f"{task}-{name}" / "metrics.json")
    return 100 * metrics["test_accuracy"] if metrics and "test_accuracy" in metrics else None


def figure3_points(train_rows, runs_dir, length=4096):
    points = []
    for row in train_rows:
        if row["length"] != length or row["jit"] or "step" not in row:
            continue
        ours = [run_accuracy(runs_dir, task, row["name"]) for task in paper.TASKS]
        published = paper.ACCURACY.get(row["name"])
        if published is None and None in ours:
            continue
        scores = [o if o is not None else p for o, p in zip(ours, published or ours)]
        count = sum(o is not None for o in ours)
        source = {0: "paper", len(paper.TASKS): "ours"}.get(count, f"ours {count}/5, paper rest")
        points.append(
            {
                "name": row["name"],
                "examples_per_second": targets.examples_per_second(row),
                "accuracy": sum(scores) / len(scores),
                "memory_mb": row["peak_mb"],
                "source": source,
            }
        )
    return points


def steps(row, full):
    return row["steps_per_second"]


def peak(row, full):
    return row["peak_mb"]


def remat_table(rows, length=targets.JUDGED_LENGTH):
    """At `length`, no XLA: each mechanism with a train.remat row, stored against recomputed."""
    body = []
    full = targets.training_row(rows, "full", length)
    for name in dict.fromkeys(row["name"] for row in rows if row.get("remat")):
        stored = targets.training_row(rows, name, length)
        recomputed = targets.training_row(rows, name, length, remat=True)
        if not (stored and recomputed):
            continue
        cost = targets.examples_per_second(stored) / targets.examples_per_second(recomputed)
        share = (
            targets.per_example_memory(recomputed) / targets.per_example_memory(full)
            if full
            else float("nan")
        )
        body.append(
            [
                name,
                f"{stored['batch']} / {recomputed['batch']}",
                f"{stored['steps_per_second']:.3f} / {recomputed['steps_per_second']:.3f}",
                f"{cost:.2f}x",
                f"{stored['peak_mb']:.0f} / {recomputed['peak_mb']:.0f}",
                f"{targets.per_example_memory(stored):.0f} / "
                f"{targets.per_example_memory(recomputed):.0f}",
                f"{share:.3f}",
            ]
        )
    return table(
        [
            "mechanism",
            "batch",
            "steps/s",
            "time per example, remat / stored",
            "peak MB",
            "MB per example",
            "remat per example / full's stored",
        ],
        body,
    )


def train_section(results, output_dir, runs_dir):
    every_row = results["rows"]
    rows = [row for row in every_row if not row.get("remat")]
    options = results["options"]
    parts = [
        "## Training (LRA Table 2 on this machine)",
        "The byte-level text classifier ({num_layers} layers, {num_heads} heads, width {emb_dim}, "
        "MLP {mlp_dim}, vocabulary {vocab_size}, {num_classes} classes), ".format_map(
            results["model"]
        )
        + "AdamW, dropout 0.1, random tokens; "
        f"batch {options['batch']} (LRA: 32; a smaller batch is marked bN where memory needed it), "
        f"{options['warmup']} untimed steps then up to {options['steps']} timed; each (mechanism, "
        "length, XLA or not) in a fresh process. Memory is the peak resident set above the "
        "baseline after building the model and optimizer.",
        conditions(results),
        "### Steps per second (no XLA)",
        train_table(rows, steps, ".3f", False),
        "### Steps per second (XLA, jit_compile=True)",
        train_table(rows, steps, ".3f", True),
        "### Speed relative to full (examples per second, no XLA)",
        train_table(rows, relative(targets.examples_per_second), ".2f", False),
        "### Speed relative to full (XLA)",
        train_table(rows, relative(targets.examples_per_second), ".2f", True),
        "### Peak memory (MB above baseline, no XLA)",
        train_table(rows, peak, ".0f", False),
        "### Peak memory (MB above baseline, XLA)",
        train_table(rows, peak, ".0f", True),
        "### Memory relative to full (per example, no XLA)",
        train_table(rows, relative(targets.per_example_memory), ".3f", False),
        "### The paper's Table 2 (batch 32, 4x4 TPU v3)",
        paper_table(),
        "### Speed at 4K relative to full",
        "Ours per example (steps/s x batch); FLOPs ratio = full's training matmul FLOPs over the "
        "mechanism's (the speed-up if both ran at the same rate); nearest = which of the paper's "
        "ratio and the FLOPs ratio ours is closer to, on a log scale.",
        speed_table(rows),
    ]
    if any(row.get("remat") for row in every_row):
        parts += [
            f"### Rematerialization at {targets.JUDGED_LENGTH} (`train.remat`, no XLA)",
            "Each block's forward pass recomputed in the backward pass "
            "(`arena_tf/remat.py`; same gradients, tested), against the stored "
            "activations: stored / remat in each cell, both measured in the same sweep "
            "(`python -m arena_tf.benchmark train --remat both --xla off --update ...`); "
            "each at the batch of its stored row.",
            remat_table(every_row),
        ]
    points = figure3_points(rows, runs_dir)
    if points:
        png = plots.figure3(points, output_dir / "efficiency_lra_figure3.png")
        parts += [
            "### Accuracy vs speed (LRA figure 3)",
            "Accuracy: the LRA average over five tasks, ours from run directories where "
            "they exist (labelled), the paper's Table 1 otherwise; speed (examples per "
            "second, so a smaller batch does not look faster) and memory: ours at 4K, no "
            "XLA.",
            f"![LRA figure 3]({png.name})",
        ]
    return "\n\n".join(parts)


# -- the page -----------------------------------------------------------------------------------


def runs_section(heading, intro, runs, output_dir=None, plot_stem=None):
    """A section of `layers` results files, each a run of its own (its shape as a subheading);
    the first one's plots when `plot_stem` names them."""
    parts = [heading, intro]
    for number, results in enumerate(runs):
        rows, shape = results["rows"], results["rows"][0]["shape"] if results["rows"] else {}
        parts += [
            f"### Batch {shape.get('batch')}, {shape.get('heads')} heads of "
            f"{shape.get('head_dim')}{backend_label(results)}",
            conditions(results),
            *time_and_memory_tables(rows),
        ]
        if number == 0 and plot_stem:
            time_png = plots.time_plot(rows, output_dir / f"{plot_stem}_time.png")
            memory_png = plots.memory_plot(rows, output_dir / f"{plot_stem}_memory.png")
            parts += [
                f"![time vs length]({time_png.name})",
                f"![memory vs length]({memory_png.name})",
            ]
    return "\n\n".join(parts)


def mixer_section(runs, output_dir):
    """The state-space mixers (the first run beside `full` over the usual lengths, with plots;
    later ones at other shapes, such as 131,072 tokens)."""
    return runs_section(
        "## State-space mixers, one layer",
        "`s4d`, `s5` and `mega` (parameters of `configs/models/`), measured by "
        "`python -m arena_tf.benchmark layers --mechanisms ... --peers --output "
        "docs/results/efficiency/mixers*.json` under the rules of the section above. Their FFTs "
        "and scans are element-wise work, not in the matmul FLOPs, so no rate is given.",
        runs,
        output_dir,
        "efficiency_mixers",
    )


def exact_section(results):
    """`full` across its switch to the memory-efficient form (one run of `layers`)."""
    defaults = costs.mechanism_params("full")
    return runs_section(
        "## Exact attention without the L x L matrix",
        f"`full` computes its scores densely below `blockwise_from` keys "
        f"({defaults['blockwise_from']:,} by default) and from there in blocks of `block_size` "
        f"keys ({defaults['block_size']}) with an online softmax and a backward "
        "pass that recomputes each block (`arena_tf/layers/blockwise.py`; equal to dense "
        "attention with its gradients in tests/layers/test_blockwise.py); with attention dropout "
        "in training it stays dense. Measured by `python -m arena_tf.benchmark layers "
        "--mechanisms full --lengths 4096 8192 16384 --peers --memory-cap-gb 20 --output "
        "docs/results/efficiency/exact.json`; the layer tables above may predate the switch (see "
        "their run dates).",
        [results],
    )


def gpu_section(runs):
    """Layer results measured under JAX on a GPU machine: beside the CPU's, never judged by its
    targets."""
    return runs_section(
        "## On a GPU machine",
        "Measured under JAX on a GPU machine (`tools/device_round_trip.sh`: "
        "`python -m arena_tf.benchmark layers --backend jax ... --peers jax_dpa` after its "
        "training jobs, cut off at its time limit, so some lengths may be missing); each heading "
        "names the device. The targets above are judged on this CPU's results alone.",
        runs,
    )


def targets_section(
    layer_results, train_results, mixer_results=None, pair_results=None, exact_results=None
):
    """The targets' verdicts; the mixers' growth is judged on their first results file."""
    judged = targets.evaluate(
        layer_results, train_results, mixer_results, pair_results, exact_results
    )
    body = [
        [
            t["target"],
            fmt(t["value"], ".3g"),
            fmt(t["threshold"], ".3g"),
            {True: "met", False: "**missed**", None: "not measured"}[t["met"]],
            t["detail"],
        ]
        for t in judged
    ]
    labels = [
        f"{kind} results{backend_label(results)}"
        for kind, results in (("layer", layer_results), ("mixer", mixer_results))
        if results and backend_label(results)
    ]
    measured = (
        [f"Judged on the {' and the '.join(labels)}: not TensorFlow numbers."] if labels else []
    )
    return "\n\n".join(
        ["## Targets", *measured, table(["target", "value", "threshold", "status", "detail"], body)]
    )


def render(
    layer_results,
    train_results,
    output_dir,
    runs_dir,
    notes,
    mixer_results=None,
    pair_results=None,
    exact_results=None,
    gpu_results=None,
):
    parts = [
        "# Efficiency of the attention mechanisms",
        "Generated by `python -m arena_tf.benchmark report` from the results of "
        "`python -m arena_tf.benchmark layers`, `... pairs` and `... train` (in "
        "`docs/results/efficiency/`); do not edit by hand: findings go in "
        "`docs/results/efficiency/notes.md`, included at the end.",
        targets_section(
            layer_results,
            train_results,
            mixer_results[0] if mixer_results else None,
            pair_results,
            exact_results,
        ),
    ]
    if layer_results:
        parts.append(layer_section(layer_results, output_dir))
    if pair_results:
        parts.append(pairs_section(pair_results))
    if exact_results:
        parts.append(exact_section(exact_results))
    if mixer_results:
        parts.append(mixer_section(mixer_results, output_dir))
    if train_results:
        parts.append(train_section(train_results, output_dir, runs_dir))
    if gpu_results:
        parts.append(gpu_section(gpu_results))
    if notes:
        parts.append(notes.strip())
    return "\n\n".join(parts) + "\n"


def run(options, say=print):
    layer_results = files.read_json(options.layers)
    train_results = files.read_json(options.train)
    if not (layer_results or train_results):
        raise UsageError(
            f"no results at {options.layers} or {options.train}",
            "the JSON results of the benchmarks",
            "run `python -m arena_tf.benchmark layers` or `... train` first",
        )
    notes_path = pathlib.Path(options.notes)
    notes = notes_path.read_text() if notes_path.exists() else ""
    output = pathlib.Path(options.output)
    mixers = [found for found in map(files.read_json, options.mixers) if found]
    gpu = [found for found in map(files.read_json, options.gpu) if found]
    with files.staged(output.parent) as stage:  # the page and its plots whole, or nothing
        text = render(
            layer_results,
            train_results,
            stage,
            options.runs,
            notes,
            mixers,
            files.read_json(options.pairs),
            files.read_json(options.exact),
            gpu,
        )
        files.write_text(stage / output.name, text)
    say(f"wrote {output}")
    return output
