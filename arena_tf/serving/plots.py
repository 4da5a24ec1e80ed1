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

from arena_tf import plot_style
from arena_tf.files import atomic_path

MIB = 1 << 20
ACCURACY_SPAN = 10.0  # percentage points: the least width of the bubble chart's accuracy axis

# (axis label, row key, scenarios to take it from in order of preference, higher is better, log)
RADAR_AXES = (
    ("throughput\n(inst/s)", "throughput", ("offline", "fixed_batch"), True, False),
    ("latency\n(ms)", "request_latency_mean_ms", ("single_stream", "fixed_batch"), False, False),
    ("memory\n(MiB)", "memory_bytes", ("single_stream", "fixed_batch"), False, False),
    ("energy\n(W.h)", "energy_wh", ("fixed_batch", "offline"), False, False),
    ("parameters", "parameters", ("fixed_batch", "single_stream", "offline"), False, True),
    ("accuracy\n(%)", "accuracy", ("fixed_batch",), True, False),
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


def radar(path, model, named_configs, axis_scores, axis_labels, axis_values):
    """One radar chart: a polygon per runtime / precision of `model` (its own colour and marker),
    and under it the table of the measured values (`axis_values`, in each axis' unit)."""
    plt = pyplot()
    angles = [2 * math.pi * i / len(axis_labels) for i in range(len(axis_labels))]
    figure = plt.figure(figsize=(7.5, 9))
    axes = figure.add_axes([0.12, 0.34, 0.76, 0.58], polar=True)
    styles = plot_style.series_styles(named_configs)
    for name, values in zip(named_configs, axis_scores):
        points = [v or 0.0 for v in values]
        style = styles[name]
        axes.plot(
            angles + angles[:1],
            points + points[:1],
            label=name,
            color=style["color"],
            marker=style["marker"],
            markersize=5,
        )
        axes.fill(angles + angles[:1], points + points[:1], alpha=0.08, color=style["color"])
    axes.set_xticks(angles)
    axes.set_xticklabels(axis_labels, fontsize=8)
    axes.set_ylim(0, 1.05)
    axes.set_yticks([0.25, 0.5, 0.75, 1.0])
    axes.set_yticklabels([])
    axes.set_title(f"{model}: each axis scaled to the bench's best (outer ring)", fontsize=10)
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.05), fontsize=8, frameon=False)
    values = figure.add_axes([0.05, 0.02, 0.9, 0.24])
    values.axis("off")
    grid = values.table(
        cellText=[["-" if v is None else shown(v) for v in row] for row in axis_values],
        rowLabels=named_configs,
        colLabels=[" ".join(label.split()) for label in axis_labels],
        rowColours=[styles[name]["color"] + "40" for name in named_configs],
        loc="center",
        cellLoc="right",
    )
    grid.auto_set_font_size(False)
    grid.set_fontsize(7)
    values.set_title("measured values", fontsize=9)
    save(figure, path)


def shown(value):
    """A measured value in a few significant figures ('4,418', '0.324', '1.2e+06')."""
    if abs(value) >= 1e6:
        return f"{value:.2g}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def save(figure, path):
    with atomic_path(path) as tmp:
        figure.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
    pyplot().close(figure)


def shown_unit(key, value):
    """A row value in its radar axis' unit (memory in MiB, accuracy in %)."""
    if value is None:
        return None
    return value / MIB if key == "memory_bytes" else 100 * value if key == "accuracy" else value


def write_radars(rows, out_dir):
    """One radar PNG per model; the paths."""
    table = configs(rows)
    columns = []
    for label, key, scenarios, higher, log in RADAR_AXES:
        values = [pick(table[c], key, scenarios) for c in table]
        columns.append(scores(values, higher, log))
    per_config = dict(zip(table, zip(*columns))) if columns and table else {}
    raw = {
        c: [
            shown_unit(key, pick(table[c], key, scenarios))
            for _label, key, scenarios, *_ in RADAR_AXES
        ]
        for c in table
    }
    paths = []
    for model in dict.fromkeys(c[0] for c in table):
        mine = [c for c in table if c[0] == model]
        labels = [
            label if any(per_config[c][i] is not None for c in mine) else f"{label}\n(n/a)"
            for i, (label, *_rest) in enumerate(RADAR_AXES)
        ]
        path = pathlib.Path(out_dir) / f"radar_{safe_name(model)}.png"
        radar(
            path,
            model,
            [f"{c[1]} {c[2]}" for c in mine],
            [per_config[c] for c in mine],
            labels,
            [raw[c] for c in mine],
        )
        paths.append(path)
    return paths


def bubble_points(rows):
    """(label, accuracy %, throughput, memory MiB) of each configuration that has all three."""
    points = []
    for (model, runtime, precision), by_scenario in configs(rows).items():
        accuracy = pick(by_scenario, "accuracy", ("fixed_batch",))
        speed = pick(by_scenario, "throughput", ("offline", "fixed_batch"))
        mem = pick(by_scenario, "memory_bytes", ("fixed_batch", "offline", "single_stream"))
        if None not in (accuracy, speed, mem):
            points.append((f"{model} {runtime} {precision}", 100 * accuracy, speed, mem / MIB))
    return points


NO_BUBBLES = (
    "no bubble chart: no configuration has accuracy, throughput and memory (accuracy "
    "is that of a fixed_batch row)"
)
NO_MATPLOTLIB = "no plots: matplotlib is not installed (pip install matplotlib)"


def notes(rows):
    """The notes write_all would return for `rows`, without drawing."""
    try:
        pyplot()
    except ImportError:
        return [NO_MATPLOTLIB]
    return [] if bubble_points(rows) else [NO_BUBBLES]


def write_bubbles(rows, out_dir):
    """bubbles.png: x accuracy (fixed batching, %), y throughput (offline, else fixed), disc area
    memory (with a key); each configuration its own colour in the legend, the accuracy axis at
    least ACCURACY_SPAN points wide so one test example more or less does not fill it.
    Returns (path or None, note)."""
    points = bubble_points(rows)
    if not points:
        return None, NO_BUBBLES
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(8, 5))
    largest = max(p[3] for p in points)
    area_per_mib = 1500 / largest
    styles = plot_style.series_styles([p[0] for p in points])
    for name, accuracy, speed, mib in points:
        axes.scatter(
            accuracy,
            speed,
            s=area_per_mib * mib,
            alpha=0.35,
            edgecolors="black",
            linewidths=0.5,
            color=styles[name]["color"],
        )
        axes.scatter(
            [],
            [],
            s=40,
            alpha=0.6,
            color=styles[name]["color"],
            label=f"{name}: {accuracy:.1f}%, {speed:,.0f}/s, {mib:,.0f} MiB",
        )
    axes.margins(0.2)
    plot_style.at_least(axes, "x", span=ACCURACY_SPAN, bounds=(0.0, 100.0))
    axes.set_ylim(bottom=0)
    axes.set_xlabel("accuracy, fixed batching (%)")
    axes.set_ylabel("throughput (instances/s)")
    axes.set_title("Accuracy, speed and memory of each served configuration", fontsize=10)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    plot_style.size_key(
        axes,
        plot_style.round_values(largest),
        area_per_mib,
        "MiB",
        title="disc area:\npeak memory (MiB)",
    )
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
        return [], [NO_MATPLOTLIB]
    paths = write_radars(rows, out_dir)
    bubbles, note = write_bubbles(rows, out_dir)
    return paths + ([bubbles] if bubbles else []), [note] if note else []
