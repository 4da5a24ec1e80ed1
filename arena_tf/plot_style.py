"""One look for the project's plots, each readable on its own: a distinct colour and marker per
series, chance drawn on learning curves, axes that do not magnify noise, and a key for disc sizes.

    styles = plot_style.series_styles(["full", "linear", "local"])
    axes.plot(xs, ys, label="full", **styles["full"])
    plot_style.chance_line(axes, 50.0)                       # a learning curve's floor
    plot_style.at_least(axes, "y", span=10.0, bounds=(0, 100))  # +-0.5 points is not a trend
    plot_style.size_key(axes, [100, 1000], area_per_unit=0.5, unit="MiB")

No matplotlib import here: the plotting modules choose the backend and pass their axes.
"""

# matplotlib's tab10 then eight darker or brighter hues unlike them (the efficiency plots draw
# 17 series), and markers of unlike shapes, in a cycle (11) prime to the colours' (18): series i
# and j share colour and marker only 198 apart.
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#000000",
    "#1a237e",
    "#b8860b",
    "#00e676",
    "#800000",
    "#ff00ff",
    "#004d40",
    "#827717",
)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "p")
CHANCE_STYLE = {"color": "#555555", "linestyle": ":", "linewidth": 1.2}
REFERENCE_STYLES = (
    {"color": "#999999", "linestyle": "--", "linewidth": 1.0},
    {"color": "#999999", "linestyle": "-.", "linewidth": 1.0},
)


def series_styles(labels, dashed=()):
    """{label: plot keywords}: the i-th distinct label gets colour i mod 18 and marker i mod 11,
    so no two of up to 198 series look alike; labels in `dashed` are drawn dashed."""
    unique = list(dict.fromkeys(labels))
    return {
        label: {
            "color": COLOURS[i % len(COLOURS)],
            "marker": MARKERS[i % len(MARKERS)],
            "linestyle": "--" if label in dashed else "-",
        }
        for i, label in enumerate(unique)
    }


def chance_line(axes, chance, label=None):
    """A horizontal dotted line at `chance` (in the axis' units), labelled for the legend."""
    axes.axhline(chance, label=label or f"chance ({chance:.1f})", **CHANCE_STYLE)


def reference_lines(axes, levels):
    """Horizontal grey lines at the values of `levels` ({label: value}, in the axis' units), each
    in its own dash: what a simple rule scores, for a learning curve to be read against."""
    for index, (label, value) in enumerate(levels.items()):
        axes.axhline(value, label=label, **REFERENCE_STYLES[index % len(REFERENCE_STYLES)])


def at_least(axes, axis, span, bounds=(None, None)):
    """Widen the `axis` ("x" or "y") limits to cover at least `span` units around the data, kept
    inside `bounds`: a flat series stays flat instead of filling the plot with its noise."""
    get, set_ = getattr(axes, f"get_{axis}lim"), getattr(axes, f"set_{axis}lim")
    low, high = get()
    if high - low >= span:
        return
    middle = (low + high) / 2
    low, high = middle - span / 2, middle + span / 2
    floor, ceiling = bounds
    if floor is not None and low < floor:
        low, high = floor, floor + span
    if ceiling is not None and high > ceiling:
        low, high = ceiling - span, ceiling
    set_(low, high)


def size_key(axes, values, area_per_unit, unit, title=None, colour="#999999"):
    """A legend of discs for `values` (in `unit`), drawn at the area a data disc of that value has
    (`area_per_unit` points^2 per unit), so a reader can read sizes off the chart."""
    handles = [
        axes.scatter(
            [],
            [],
            s=value * area_per_unit,
            color=colour,
            alpha=0.4,
            edgecolors="black",
            linewidths=0.5,
            label=f"{value:,.0f} {unit}",
        )
        for value in values
    ]
    # A figure legend beside the axes: not clipped by them, and the axes keep their own legend.
    return axes.figure.legend(
        handles=handles,
        title=title or f"disc area: {unit}",
        loc="lower left",
        bbox_to_anchor=(1.01, 0.0),
        bbox_transform=axes.transAxes,
        labelspacing=2.6,
        borderpad=1.2,
        handletextpad=1.6,
        fontsize=7,
        title_fontsize=8,
        frameon=False,
    )


def round_values(largest):
    """Up to three round values (1, 2 or 5 times a power of ten) up to `largest`, for a size key."""
    candidates = [m * 10.0**k for k in range(-2, 10) for m in (1, 2, 5)]
    return [value for value in candidates if value <= largest][-3:] or [largest]
