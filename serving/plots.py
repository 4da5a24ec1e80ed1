"""Bench plots (PNG, matplotlib): a radar per model, as Efficiency Pentathlon's figure 2, and a
bubble chart of accuracy, throughput and memory, as LRA's figure 3 and MOROCCO's leaderboard.

Radar axes take each metric from the scenario Pentathlon takes it from: throughput from offline,
latency and memory from single stream, energy and accuracy from fixed batching; parameters on a
log scale. Each axis is scaled over every model in the bench so that the outer ring is best
(higher throughput and accuracy, lower latency, memory, energy and parameters). A missing value
sits at the centre and its axis label says "n/a".

    paths, notes = plots.write_all(rows, "bench/")
"""

import math
import pathlib

from arena_tf.files import atomic_path

# (axis label, row key, scenarios to take it from in order of preference, higher is better, log)
RADAR_AXES = (
    ("throughput\n(inst/s)", "throughput", ("offline", "fixed_batch"), True, False),
    ("latency\n(ms)", "request_latency_mean_ms", ("single_stream", "fixed_batch"), False, False),
    ("memory\n(MiB)", "memory_bytes", ("single_stream", "fixed_batch"), False, False),
    ("energy\n(W.h)", "energy_wh", ("fixed_batch", "offline"), False, False),
    ("parameters", "parameters", ("fixed_batch", "single_stream", "offline"), False, True),
    ("accuracy", "accuracy", ("fixed_batch",), True, False),
)


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def configs(rows):
    """{(model, runtime, precision): {scenario: row}} of the rows that ran."""
    out = {}
    for row in rows:
        if row.get("status") == "ok":
            key = (row["model"], row["runtime"], row["precision"])
            out.setdefault(key, {})[row["scenario"]] = {**row, "memory_bytes": memory(row)}
    return out


def memory(row):
    """Peak GPU memory where measured, else the model process's peak RSS."""
    return row.get("peak_gpu_bytes") or row.get("peak_rss_bytes")


def pick(by_scenario, key, scenarios):
    """The first value of `key` among `scenarios` that is present."""
    for name in scenarios:
        value = by_scenario.get(name, {}).get(key)
        if value is not None:
            return value
    return None


def scores(values, higher_better, log):
    """Each value scaled to [0, 1] with 1 the best of them (0 is a value: zero accuracy scores 0,
    zero energy scores 1); None stays None (drawn at the centre)."""
    present = [v for v in values if v is not None]
    if not present:
        return [None] * len(values)
    scale = (lambda v: math.log10(max(v, 1)) + 1) if log else (lambda v: v)
    if higher_better:
        best = scale(max(present))
        return [None if v is None else (scale(v) / best if best > 0 else 0.0) for v in values]
    positive = [scale(v) for v in present if scale(v) > 0]
    best = min(positive) if positive else 0.0
    return [None if v is None else (best / scale(v) if scale(v) > 0 else 1.0) for v in values]


def radar(path, model, named_configs, axis_scores, axis_labels):
    """One radar chart: a polygon per runtime / precision of `model`."""
    plt = pyplot()
    angles = [2 * math.pi * i / len(axis_labels) for i in range(len(axis_labels))]
    figure, axes = plt.subplots(figsize=(6, 6), subplot_kw={"polar": True})
    for name, values in zip(named_configs, axis_scores):
        points = [v or 0.0 for v in values]
        axes.plot(angles + angles[:1], points + points[:1], label=name)
        axes.fill(angles + angles[:1], points + points[:1], alpha=0.15)
    axes.set_xticks(angles)
    axes.set_xticklabels(axis_labels, fontsize=8)
    axes.set_ylim(0, 1)
    axes.set_yticklabels([])
    axes.set_title(f"{model} (outer ring is better)", fontsize=10)
    axes.legend(loc="lower right", bbox_to_anchor=(1.25, -0.1), fontsize=8)
    save(figure, path)


def save(figure, path):
    with atomic_path(path) as tmp:
        figure.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    pyplot().close(figure)


def write_radars(rows, out_dir):
    """One radar PNG per model; the paths."""
    table = configs(rows)
    columns = []
    for label, key, scenarios, higher, log in RADAR_AXES:
        values = [pick(table[c], key, scenarios) for c in table]
        columns.append(scores(values, higher, log))
    per_config = dict(zip(table, zip(*columns))) if columns and table else {}
    paths = []
    for model in dict.fromkeys(c[0] for c in table):
        mine = [c for c in table if c[0] == model]
        labels = [label if any(per_config[c][i] is not None for c in mine) else f"{label}\n(n/a)"
                  for i, (label, *_rest) in enumerate(RADAR_AXES)]
        path = pathlib.Path(out_dir) / f"radar_{safe_name(model)}.png"
        radar(path, model, [f"{c[1]} {c[2]}" for c in mine], [per_config[c] for c in mine], labels)
        paths.append(path)
    return paths


def write_bubbles(rows, out_dir):
    """bubbles.png: x accuracy (fixed), y throughput (offline, else fixed), disc area memory.
    Returns (path or None, note)."""
    points = []
    for (model, runtime, precision), by_scenario in configs(rows).items():
        accuracy = pick(by_scenario, "accuracy", ("fixed_batch",))
        speed = pick(by_scenario, "throughput", ("offline", "fixed_batch"))
        mem = pick(by_scenario, "memory_bytes", ("fixed_batch", "offline", "single_stream"))
        if None not in (accuracy, speed, mem):
            points.append((f"{model} {runtime} {precision}", accuracy, speed, mem))
    if not points:
        return None, ("no bubble chart: no configuration has accuracy, throughput and memory "
                      "(accuracy is that of a fixed_batch row)")
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 5))
    largest = max(p[3] for p in points)
    for name, accuracy, speed, mem in points:
        axes.scatter(accuracy, speed, s=2000 * mem / largest, alpha=0.4)
        axes.annotate(name, (accuracy, speed), fontsize=7, ha="center")
    axes.set_xlabel("accuracy (fixed batching)")
    axes.set_ylabel("throughput (instances/s)")
    axes.set_title("accuracy, speed and memory (disc area: peak memory)", fontsize=10)
    path = pathlib.Path(out_dir) / "bubbles.png"
    save(figure, path)
    return path, ""


def safe_name(text):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def write_all(rows, out_dir):
    """Every plot; (paths, notes). Without matplotlib: no plots and a note saying how to get it."""
    try:
        pyplot()
    except ImportError:
        return [], ["no plots: matplotlib is not installed (pip install matplotlib)"]
    paths = write_radars(rows, out_dir)
    bubbles, note = write_bubbles(rows, out_dir)
    return paths + ([bubbles] if bubbles else []), [note] if note else []
