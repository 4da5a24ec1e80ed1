"""The report's figures (PNG, matplotlib's Agg backend, no display needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.ticker import FuncFormatter  # noqa: E402

from arena_tf import files, plot_style  # noqa: E402


def save(figure, path):
    """Write the figure atomically and close it."""
    with files.atomic_path(path) as tmp:
        figure.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def series(rows, stage, value):
    """{label: ([lengths], [values])} over the measured rows, peers marked by their kind."""
    lines = {}
    for row in rows:
        if stage in row:
            xs, ys = lines.setdefault((row["label"], row["kind"]), ([], []))
            xs.append(row["length"])
            ys.append(value(row[stage]))
    return lines


def length_plot(rows, stage, value, ylabel, title, path):
    """Log-log plot of `value(row[stage])` against length: one colour and marker per mechanism or
    peer, peers dashed and named so in the legend; a line stops where the next length was not
    measured (over the memory cap or the time limit), as the note under the plot says."""
    figure, axes = plt.subplots(figsize=(8.5, 5.5))
    lines = sorted(series(rows, stage, value).items())
    labels = [f"{label} (peer)" if kind == "peer" else label for (label, kind), _ in lines]
    styles = plot_style.series_styles(
        labels, dashed={f"{label} (peer)" for (label, kind), _ in lines if kind == "peer"}
    )
    for shown, (_, (xs, ys)) in zip(labels, lines):
        axes.plot(xs, ys, markersize=4, linewidth=1.2, label=shown, **styles[shown])
    lengths = sorted({row["length"] for row in rows})
    axes.set(
        xscale="log", yscale="log", xlabel="sequence length (tokens)", ylabel=ylabel, title=title
    )
    axes.set_xticks(lengths, labels=[str(n) for n in lengths])
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(
        fontsize=7,
        ncol=1,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
        title="dashed: a peer library's layer",
        title_fontsize=7,
    )
    figure.text(
        0.01,
        -0.02,
        "A line that stops: the next length was skipped (estimated memory "
        "over the cap) or gave up (over the time limit); see the report's table.",
        fontsize=7,
        ha="left",
        va="top",
    )
    return save(figure, path)


def time_plot(rows, path):
    return length_plot(
        rows,
        "train",
        lambda s: s["median_ms"],
        "forward + backward time (ms)",
        "One attention layer, forward + backward: median time per call",
        path,
    )


def memory_plot(rows, path):
    return length_plot(
        rows,
        "train",
        lambda s: max(s["peak_mb"], 1.0),
        "peak memory above baseline (MB)",
        "One attention layer, forward + backward: peak resident memory",
        path,
    )


def figure3(points, path):
    """LRA figure 3: accuracy against training speed, disc area proportional to memory, with a
    key of disc sizes and a legend naming each mechanism's colour and where its accuracy comes
    from (discs drawn with a thick edge: accuracies measured here).

    points: [{name, examples_per_second, accuracy, memory_mb, source}]; source names where the
    accuracy comes from ("ours", "paper" or a mix)."""
    figure, axes = plt.subplots(figsize=(8.5, 5.5))
    largest = max(p["memory_mb"] for p in points)
    area_per_mb = 1500 / largest
    named = {p["name"]: p["source"] for p in points}
    styles = plot_style.series_styles(list(named))
    for point in points:
        ours = point["source"] == "ours"
        axes.scatter(
            point["examples_per_second"],
            point["accuracy"],
            s=area_per_mb * point["memory_mb"],
            alpha=0.35,
            color=styles[point["name"]]["color"],
            edgecolors="black",
            linewidths=1.8 if ours else 0.4,
        )
    for name, source in named.items():
        axes.scatter(
            [],
            [],
            s=40,
            alpha=0.6,
            color=styles[name]["color"],
            label=f"{name} (accuracy: {source})",
        )
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    plot_style.size_key(
        axes,
        plot_style.round_values(largest),
        area_per_mb,
        "MB",
        title="disc area: training\nmemory at 4K (MB)",
    )
    axes.set(
        xscale="log",
        xlabel="training examples per second at 4K tokens (this machine, measured)",
        ylabel="LRA average accuracy (%)",
        title="Accuracy vs training speed and memory (as LRA's figure 3)",
    )
    axes.margins(0.12)
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    axes.xaxis.set_major_formatter(plain)
    axes.xaxis.set_minor_formatter(plain)
    axes.tick_params(axis="x", which="minor", labelsize=7)
    axes.grid(True, which="both", alpha=0.3)
    return save(figure, path)
