"""The report's figures (PNG, matplotlib's Agg backend, no display needed)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

from arena_tf import files  # noqa: E402


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
    """Log-log plot of `value(row[stage])` against length, one line per mechanism or peer."""
    figure, axes = plt.subplots(figsize=(8, 5.5))
    for (label, kind), (xs, ys) in sorted(series(rows, stage, value).items()):
        axes.plot(xs, ys, "--" if kind == "peer" else "-", marker="o", markersize=3, label=label)
    axes.set(xscale="log", yscale="log", xlabel="sequence length", ylabel=ylabel, title=title)
    axes.set_xticks(sorted({row["length"] for row in rows}),
                    labels=[str(n) for n in sorted({row["length"] for row in rows})])
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, ncol=2)
    return save(figure, path)


def time_plot(rows, path):
    return length_plot(rows, "train", lambda s: s["median_ms"], "forward + backward time (ms)",
                       "One attention layer, forward + backward (peers dashed)", path)


def memory_plot(rows, path):
    return length_plot(rows, "train", lambda s: max(s["peak_mb"], 1.0),
                       "peak memory above baseline (MB)",
                       "One attention layer, forward + backward: peak resident memory", path)


def figure3(points, path):
    """LRA figure 3: accuracy against training speed, disc area proportional to memory.

    points: [{name, examples_per_second, accuracy, memory_mb, source}]; source names where the
    accuracy comes from ("ours", "paper" or a mix)."""
    figure, axes = plt.subplots(figsize=(8, 5.5))
    largest = max(p["memory_mb"] for p in points)
    for point in points:
        ours = point["source"] == "ours"
        axes.scatter(point["examples_per_second"], point["accuracy"],
                     s=2000 * point["memory_mb"] / largest, alpha=0.45,
                     edgecolors="black", linewidths=1.5 if ours else 0.5)
        axes.annotate(f"{point['name']} ({point['source']})",
                      (point["examples_per_second"], point["accuracy"]), fontsize=7,
                      ha="center", va="center")
    axes.set(xlabel="training examples per second at 4K (this machine)",
             ylabel="LRA average accuracy (%)",
             title="Accuracy vs speed, disc area = training memory at 4K (LRA figure 3)")
    axes.grid(True, alpha=0.3)
    return save(figure, path)
