"""The PNG figures: written, of the size their layout promises, robust to any token text."""

import numpy as np
from PIL import Image

from arena_tf.analysis import plots


def png_size(path):
    with Image.open(path) as image:
        return image.size


def test_long_text_wraps_into_rows_of_fixed_width(tmp_path):
    count = 2 * plots.WRAP + 5  # three rows
    labels = list("The $price$ is 5^2_3 \\ {braces} %" * 6)[:count]  # mathtext would choke on these
    maps = {"layer 1": np.random.default_rng(0).random(count), "rollout": np.ones(count)}
    path = plots.draw_text_maps(tmp_path / "text.png", labels, maps, "title")
    strip = plots.STRIP_TITLE_PIXELS + 3 * plots.CELL_HEIGHT + plots.MARGIN_PIXELS
    assert png_size(path) == (
        plots.WRAP * plots.CELL_WIDTH + 2 * plots.MARGIN_PIXELS,
        plots.HEADER_PIXELS + 2 * strip,
    )


def test_image_maps_show_where_the_weight_is(tmp_path):
    side = 8
    pixels = np.zeros((side, side), np.uint8)
    weights = np.zeros(side * side)
    weights[side * side - 1] = 1.0  # all attention on the bottom-right pixel
    path = plots.draw_image_maps(tmp_path / "image.png", pixels, {"rollout": weights}, "title")
    assert png_size(path) == (2 * plots.PANEL_PIXELS, plots.PANEL_PIXELS + plots.HEADER_PIXELS)
    gray = np.asarray(Image.open(path).convert("L"))
    panel = gray[-plots.PANEL_PIXELS + 40 : -10, plots.PANEL_PIXELS + 10 : -10]  # inside the axes
    rows, columns = np.nonzero((panel > 60) & (panel < 250))  # the heat (not the white margin)
    assert rows.size
    assert rows.min() > panel.shape[0] * 0.75 and columns.min() > panel.shape[1] * 0.75


def test_an_all_zero_map_draws_without_dividing_by_zero(tmp_path):
    path = plots.draw_image_maps(
        tmp_path / "zero.png", np.zeros((4, 4), np.uint8), {"layer 1": np.zeros(16)}, "title"
    )
    assert path.exists()
