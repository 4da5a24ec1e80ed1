"""PNG figures of the analysis, drawn with matplotlib (Agg, no display needed) at exact pixel sizes.

- `draw_image_maps`: the input image, then one heatmap per map drawn over it (pixel tasks).
- `draw_text_maps`: one strip per map over the input tokens, wrapped into rows, each token's cell
  coloured by its weight and labelled with its text (byte and token tasks).
- `draw_span_chart`: bars of the required attention span of several runs.

Heatmaps are scaled to each map's own maximum (the maximum is printed in the panel title), so
they show where attention goes, not how much it differs between maps.
"""

import math

import numpy as np

from arena_tf import files
from arena_tf.cli import UsageError

DPI = 100
COLORMAP = "inferno"
# Image figures: one square panel per map (and one for the input), a header for the title.
PANEL_PIXELS = 240
HEADER_PIXELS = 60
# Text figures: cells of one token each, WRAP per row; tokens are labelled up to MAX_LABELLED.
WRAP = 64
CELL_WIDTH, CELL_HEIGHT = 24, 18
STRIP_TITLE_PIXELS = 24
MARGIN_PIXELS = 16
MIN_TEXT_WIDTH = 640
MAX_LABELLED = 4096
# Span charts: pixels per bar and the fixed part.
BAR_PIXELS, CHART_BASE_PIXELS, CHART_HEIGHT_PIXELS = 110, 200, 440


class PlottingError(UsageError, RuntimeError):
    """The figures cannot be drawn (matplotlib missing); the message says how to fix it."""


def new_figure(width_pixels, height_pixels):
    """A matplotlib Figure of exactly width x height pixels at DPI, not tied to any display."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlottingError(
            "drawing the analysis figures needs matplotlib, which is not installed",
            "matplotlib importable",
            "run `pip install matplotlib`",
        ) from None
    figure = Figure(figsize=(width_pixels / DPI, height_pixels / DPI), dpi=DPI)
    FigureCanvasAgg(figure)
    return figure


def save(figure, path):
    """Write the figure as a PNG at its exact size (atomically); the path written."""
    with files.atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI)
    return path


def scaled(values):
    """values / max(values) (all zero stays zero), for display."""
    peak = float(np.max(values)) if np.size(values) else 0.0
    return np.asarray(values, "float32") / peak if peak > 0 else np.zeros_like(values, "float32")


def image_figure_size(num_maps):
    """(width, height) in pixels of `draw_image_maps` with `num_maps` maps."""
    return (num_maps + 1) * PANEL_PIXELS, PANEL_PIXELS + HEADER_PIXELS


def draw_image_maps(path, pixels, maps, title):
    """PNG at `path`: the image pixels [side, side] (0..255), then each map {name: [side * side]}
    as a heatmap over it."""
    side = pixels.shape[0]
    width, height = image_figure_size(len(maps))
    figure = new_figure(width, height)
    figure.suptitle(title, fontsize=9, wrap=True)
    panels = [("input", None), *maps.items()]
    for index, (name, values) in enumerate(panels):
        axes = figure.add_axes(
            [
                (index * PANEL_PIXELS + 8) / width,
                8 / height,
                (PANEL_PIXELS - 16) / width,
                (PANEL_PIXELS - 28) / height,
            ]
        )
        axes.imshow(pixels, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        if values is not None:
            heat = scaled(values).reshape(side, side)
            axes.imshow(heat, cmap=COLORMAP, alpha=0.65, vmin=0, vmax=1, interpolation="nearest")
            name = f"{name} (max {float(np.max(values)):.3g})"
        axes.set_title(name, fontsize=8)
        axes.set_axis_off()
    return save(figure, path)


def text_grid(count):
    """(rows, columns) of the cells for `count` tokens: WRAP per row, fewer for a short input."""
    columns = max(1, min(WRAP, count))
    return math.ceil(max(count, 1) / columns), columns


def text_figure_size(num_maps, count):
    """(width, height) in pixels of `draw_text_maps` with `num_maps` maps over `count` tokens."""
    rows, columns = text_grid(count)
    strip = STRIP_TITLE_PIXELS + rows * CELL_HEIGHT + MARGIN_PIXELS
    width = max(MIN_TEXT_WIDTH, columns * CELL_WIDTH + 2 * MARGIN_PIXELS)
    return width, HEADER_PIXELS + num_maps * strip


def draw_text_maps(path, labels, maps, title):
    """PNG at `path`: for each map {name: [count]} a strip of the `count` tokens (`labels`, their
    text), wrapped every WRAP tokens, each cell coloured by the token's weight."""
    count = len(labels)
    rows, columns = text_grid(count)
    width, height = text_figure_size(len(maps), count)
    strip = (height - HEADER_PIXELS) // max(len(maps), 1)
    figure = new_figure(width, height)
    figure.suptitle(title, fontsize=9, wrap=True)
    for index, (name, values) in enumerate(maps.items()):
        grid = np.full(rows * columns, np.nan, "float32")
        grid[:count] = scaled(values)
        top = HEADER_PIXELS + index * strip + STRIP_TITLE_PIXELS
        axes = figure.add_axes(
            [
                MARGIN_PIXELS / width,
                1 - (top + rows * CELL_HEIGHT) / height,
                columns * CELL_WIDTH / width,
                rows * CELL_HEIGHT / height,
            ]
        )
        axes.imshow(
            grid.reshape(rows, columns),
            cmap=COLORMAP,
            vmin=0,
            vmax=1,
            aspect="auto",
            interpolation="nearest",
        )
        axes.set_title(f"{name} (max {float(np.max(values)):.3g})", fontsize=8, loc="left")
        axes.set_axis_off()
        if count <= MAX_LABELLED:
            label_cells(axes, labels, grid, columns)
    return save(figure, path)


def label_cells(axes, labels, grid, columns):
    """Write each token's text in its cell, dark on bright cells and light on dark ones."""
    for position, label in enumerate(labels):
        row, column = divmod(position, columns)
        colour = "black" if grid[position] > 0.6 else "white"
        axes.text(
            column,
            row,
            label,
            ha="center",
            va="center",
            fontsize=5,
            color=colour,
            parse_math=False,
            clip_on=True,
        )


def span_chart_size(count):
    """(width, height) in pixels of `draw_span_chart` with `count` bars."""
    return CHART_BASE_PIXELS + count * BAR_PIXELS, CHART_HEIGHT_PIXELS


def draw_span_chart(path, results):
    """PNG at `path`: one bar per result {'task', 'model', 'span', 'uniform_span'}, with a tick at
    the span uniform attention over the same real positions would have."""
    width, height = span_chart_size(len(results))
    figure = new_figure(width, height)
    axes = figure.add_axes([80 / width, 110 / height, 1 - 100 / width, 1 - 150 / height])
    positions = np.arange(len(results))
    spans = [r["span"] for r in results]
    uniform = [r["uniform_span"] for r in results]
    bars = axes.bar(positions, spans, width=0.6, color="tab:blue", label="required attention span")
    axes.bar_label(bars, fmt="%.0f", fontsize=8)
    axes.scatter(
        positions,
        uniform,
        marker="_",
        s=600,
        color="black",
        label="uniform attention over the same positions",
    )
    axes.set_ylim(0, 1.15 * max(spans + uniform))
    axes.set_xticks(positions, [f"{r['task']}\n{r['model']}" for r in results], fontsize=8)
    axes.set_ylabel("mean distance (positions)")
    axes.set_title("Required attention span (LRA section 2.3)", fontsize=10)
    figure.legend(loc="lower center", fontsize=7, ncols=1, frameon=False)
    return save(figure, path)
