"""The plots' shared look (arena_tf/plot_style.py): no two series alike, a flat series drawn flat
(not stretched over the whole axis), disc sizes given a key."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from arena_tf import plot_style  # noqa: E402


def test_seventeen_series_each_get_their_own_colour_and_marker():
    labels = [f"mechanism {i}" for i in range(17)]  # the efficiency plots' count
    styles = plot_style.series_styles(labels, dashed={"mechanism 3"})
    assert len({style["color"] for style in styles.values()}) == 17
    assert len({(s["color"], s["marker"]) for s in styles.values()}) == 17
    assert styles["mechanism 3"]["linestyle"] == "--" and styles["mechanism 4"]["linestyle"] == "-"


def test_a_flat_curve_at_chance_is_not_magnified():
    figure, axes = plt.subplots()
    axes.plot([1, 2, 3], [50.0, 50.01, 50.0])
    plot_style.at_least(axes, "y", span=10.0, bounds=(0.0, 100.0))
    low, high = axes.get_ylim()
    assert high - low >= 10.0 and low <= 50.0 <= high
    plt.close(figure)
    figure, axes = plt.subplots()
    axes.plot([1, 2], [0.0, 0.2])  # near the floor: the span stays inside the bounds
    plot_style.at_least(axes, "y", span=10.0, bounds=(0.0, 100.0))
    assert axes.get_ylim() == (0.0, 10.0)
    plt.close(figure)


def test_a_size_key_shows_round_values_up_to_the_largest():
    assert plot_style.round_values(747) == [100, 200, 500]
    assert plot_style.round_values(12_000) == [2000, 5000, 10_000]
    figure, axes = plt.subplots()
    key = plot_style.size_key(axes, [100, 200], area_per_unit=1.0, unit="MiB")
    assert [text.get_text() for text in key.get_texts()] == ["100 MiB", "200 MiB"]
    plt.close(figure)
