"""Pathfinder / Path-X: the generator draws what the labels say, deterministically, and the task
reads the LRA release layout into the right splits and tokens."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

import arena_tf.tasks as tasks
from arena_tf.analysis.__main__ import main as analysis_main
from arena_tf.generators import pathfinder as generator
from arena_tf.tasks.pathfinder import SkippedImageWarning, read_index, split_distance_baseline

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_pathfinder")

CONFIGS = [generator.PATHFINDER32, generator.PATHX128, generator.config_for(32, "easy")]
IDS = ["32", "128", "32-easy"]


def _connected(mask, first, second):
    """Whether pixels `first` and `second` (row, column) share an 8-connected component of mask."""
    reached = np.zeros_like(mask)
    reached[first] = True
    while not reached[second]:
        grown = reached.copy()
        grown[1:] |= reached[:-1]
        grown[:-1] |= reached[1:]
        grown[:, 1:] |= grown[:, :-1].copy()
        grown[:, :-1] |= grown[:, 1:].copy()
        grown &= mask
        if np.array_equal(grown, reached):
            return False
        reached = grown
    return True


def _markers_joined(example, config):
    """Draw every contour without its gaps (paddle ends joined) and the two marker discs on a
    128 x 128 grid; whether one connected stroke links the two markers."""
    scale = 128 // config.size
    canvas = Image.new("1", (128, 128), 0)
    draw = ImageDraw.Draw(canvas)
    for contour in np.unique(example.contours):
        points = example.paddles[example.contours == contour].reshape(-1, 2) * scale
        draw.line([tuple(point) for point in points.tolist()], fill=1, width=1)
    radius = config.marker_radius * scale
    for x, y in (example.markers * scale).tolist():
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=1)
    (x0, y0), (x1, y1) = (example.markers * scale).astype(int)
    return _connected(np.array(canvas, dtype=bool), (y0, x0), (y1, x1))


@pytest.mark.parametrize("config, count", zip(CONFIGS, [24, 8, 24]), ids=IDS)
def test_markers_are_joined_by_a_contour_exactly_in_positives(config, count):
    examples = [generator.generate_example(config, 3, index) for index in range(count)]
    joined = [_markers_joined(example, config) for example in examples]
    assert joined == [bool(example.label) for example in examples]
    assert {example.label for example in examples} == {0, 1}


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_contours_are_dashed_curves_of_the_lra_lengths(config):
    example = generator.generate_example(config, 0, 1)
    starts, ends = example.paddles[:, :2], example.paddles[:, 2:]
    np.testing.assert_allclose(np.hypot(*(ends - starts).T), config.paddle_length)
    sizes = np.bincount(example.contours)
    assert sizes[:2].tolist() == [config.contour_length] * 2
    assert len(sizes) > 2 and set(sizes[2:]) == {config.distractor_length}
    same = example.contours[1:] == example.contours[:-1]
    gaps = np.hypot(*(starts[1:] - ends[:-1]).T)[same]
    np.testing.assert_allclose(gaps, example.gap)
    headings = np.arctan2(*(ends - starts).T[::-1])
    turns = np.angle(np.exp(1j * (headings[1:] - headings[:-1])))[same]
    assert np.abs(turns).max() <= np.pi / (2 * config.continuity) + 1e-9
    assert np.abs(turns).max() > 0.1  # curved, not straight


def test_same_seed_same_image_other_seed_other_image():
    first, again = (generator.generate_example(generator.PATHFINDER32, 7, 5) for _ in range(2))
    other = generator.generate_example(generator.PATHFINDER32, 8, 5)
    assert np.array_equal(first.image, again.image)
    assert not np.array_equal(first.image, other.image)


def _files(directory):
    return {
        path.relative_to(directory): path.read_bytes()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_dataset_bytes_do_not_depend_on_the_number_of_processes(tmp_path):
    made = [
        generator.write_dataset(
            tmp_path / str(processes),
            generator.PATHFINDER32,
            12,
            processes=processes,
            images_per_folder=3,
        )
        for processes in (1, 2)
    ]
    single, double = (_files(directory) for directory in made)
    assert len(single) == 12 + 4 + 1  # images, metadata files, generator.json
    assert single == double


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """40 generated images in the release layout, 3 per folder (so 14 metadata files: numeric and
    text order differ), under root/pathfinder32/curv_contour_length_14."""
    root = tmp_path_factory.mktemp("pathfinder")
    generator.write_dataset(
        root, generator.PATHFINDER32, 40, seed=1, processes=1, images_per_folder=3
    )
    return root


def _png(path):
    return np.asarray(Image.open(path)).reshape(-1)


def test_layout_metadata_and_images_match_the_generator(release):
    directory = release / generator.PATHFINDER32.release_path
    assert sorted(p.name for p in (directory / "metadata").iterdir())[:3] == [
        "0.npy",
        "1.npy",
        "10.npy",
    ]
    info = generator.read_info(directory)
    config = generator.config_from_info(info)
    line = (directory / "metadata" / "10.npy").read_text().splitlines()[2].split()
    assert line[:4] == ["imgs/10", "sample_2.png", "32", "0"]
    example = generator.generate_example(config, info["seed"], int(line[2]))
    assert np.array_equal(_png(directory / line[0] / line[1]), example.image.reshape(-1))


def test_classes_are_balanced_in_every_split(release):
    summary = tasks.get("pathfinder", data_dir=release).prepare()
    assert {split: stats["examples"] for split, stats in summary.items()} == {
        "train": 32,
        "validation": 4,
        "test": 4,
    }
    for stats in summary.values():
        assert abs(stats["labels"][0] - stats["labels"][1]) <= 1


def test_reader_yields_row_major_pixels_in_metadata_number_order(release):
    task = tasks.get("pathfinder", data_dir=release)
    index = read_index(task.dataset_dir())
    pixels, labels = zip(*task.load_split("validation").as_numpy_iterator())
    expected = index[32:36]  # rows 32..35 of the metadata read in file-number order 0, 1, ..., 13
    assert [Path(path).name for path, _ in expected] == [
        "sample_2.png",
        "sample_0.png",
        "sample_1.png",
        "sample_2.png",
    ]
    assert list(labels) == [label for _, label in expected]
    for tokens, (path, _) in zip(pixels, expected):
        assert tokens.dtype == np.int32 and tokens.shape == (1024,)
        assert np.array_equal(tokens, _png(path))
    assert task.vocab_size == 256 and task.padding_id is None
    assert 0 < max(tokens.max() for tokens in pixels) <= 255


def test_release_in_a_subfolder_with_empty_images_skipped_with_a_warning(release, tmp_path):
    copy = tmp_path / "lra_release" / generator.PATHFINDER32.release_path
    shutil.copytree(release / generator.PATHFINDER32.release_path, copy)
    (copy / generator.INFO_FILE).unlink()  # as the LRA release: no generator.json
    task = tasks.get("pathfinder", data_dir=tmp_path)
    test_paths = [Path(path) for path, _ in task.examples("test")]
    Image.fromarray(np.zeros((32, 32), np.uint8)).save(test_paths[0])  # all zero
    test_paths[2].write_bytes(b"")  # unreadable
    with pytest.warns(SkippedImageWarning) as caught:
        kept = list(task.load_split("test").as_numpy_iterator())
    assert len(kept) == len(test_paths) - 2
    named = " ".join(str(warning.message) for warning in caught)
    assert str(test_paths[0]) in named and str(test_paths[2]) in named


def test_generated_data_made_with_other_settings_is_refused(release):
    with pytest.raises(ValueError, match="num_examples=40"):
        tasks.get("pathfinder", data_dir=release, num_examples=41).location()


def test_difficulties_follow_the_release_formulas_and_folders():
    easy, intermediate = (generator.config_for(32, d) for d in ("easy", "intermediate"))
    assert generator.config_for(32, "hard") == generator.PATHFINDER32
    assert generator.config_for(128, "hard") == generator.PATHX128
    assert (easy.contour_length, easy.distractor_length, easy.num_distractors) == (6, 2, 10)
    assert (intermediate.contour_length, intermediate.num_distractors) == (9, 6)
    assert easy.release_path == "pathfinder32/curv_baseline"
    assert generator.config_for(128, "easy").num_distractors == 17
    with pytest.raises(ValueError, match="difficulty easy, intermediate, hard"):
        generator.config_for(32, "medium")


def test_each_difficulty_reads_and_generates_its_own_release_folder(tmp_path):
    easy = tasks.get(
        "pathfinder", data_dir=tmp_path, difficulty="easy", num_examples=10, processes=1
    )
    assert easy.location() == str(tmp_path / "pathfinder32/curv_baseline")
    assert generator.read_info(easy.location())["config"]["contour_length"] == 6
    hard = tasks.get("pathfinder", data_dir=tmp_path, num_examples=10, processes=1)
    assert hard.location() == str(tmp_path / "pathfinder32/curv_contour_length_14")
    with pytest.raises(ValueError, match="contour_length"):  # the easy folder given as the root
        tasks.get("pathfinder", data_dir=easy.location()).location()


def test_pathx_generates_and_yields_16384_pixel_inputs(tmp_path):
    task = tasks.get("pathx", data_dir=tmp_path, num_examples=10, processes=1)
    tokens, label = next(task.load_split("train").as_numpy_iterator())
    assert tokens.shape == (128 * 128,) and tokens.dtype == np.int32 and label in (0, 1)
    assert (tmp_path / "pathfinder128/curv_contour_length_14/imgs/0/sample_9.png").is_file()
    with pytest.raises(ValueError, match="max_len 1024 is invalid; expected max_len 16384"):
        tasks.get("pathx", data_dir=tmp_path, max_len=1024)


def _frame_colours(path, count, columns):
    grid = np.asarray(Image.open(path))
    tile = grid.shape[1] // columns
    return [tuple(grid[(n // columns) * tile, (n % columns) * tile]) for n in range(count)]


def test_previews_frame_positives_green_and_negatives_red(release, tmp_path):
    green, red = (40, 200, 40), (220, 40, 40)
    path = tmp_path / "cli.png"
    generator.main(["--preview", str(path), "--size", "32", "--count", "4"])
    assert _frame_colours(path, 4, 8) == [red, green, red, green]  # label = index % 2
    generator.main(["--preview", str(tmp_path / "one.png"), "--size", "32", "--count", "1"])
    assert _frame_colours(tmp_path / "one.png", 1, 8) == [red]
    task = tasks.get("pathfinder", data_dir=release)
    (line,) = task.preview(tmp_path / "task")
    labels = [label for _, label in task.examples("train")[:16]]
    assert _frame_colours(tmp_path / "task" / "pathfinder_train.png", 16, 8) == [
        green if label else red for label in labels
    ]
    assert "pathfinder_train.png" in line


def test_best_threshold_finds_the_split_that_scores_best():
    # Positives at 1, 2 and 5, negatives at 3, 4, 6 and 7: "closer than 2.5" gets 6 of 7 right.
    distances = [5, 1, 6, 3, 2, 7, 4]
    labels = [1, 1, 0, 0, 1, 0, 0]
    threshold, accuracy = generator.best_threshold(distances, labels)
    assert threshold == 2.5 and accuracy == 6 / 7
    assert generator.best_threshold([1, 2], [0, 0]) == (0.5, 1.0)  # all negative: call none
    # Two examples at one distance fall on the same side of any threshold.
    assert generator.best_threshold([1, 2, 2, 3], [1, 1, 0, 0]) == (1.5, 0.75)


def test_distance_baseline_scores_the_marker_cue_on_held_out_examples(capsys):
    easy, hard = generator.config_for(32, "easy"), generator.PATHFINDER32
    threshold, fitted, held_out = generator.marker_distance_baseline(easy, 400, seed=1)
    examples = [generator.generate_example(easy, 1, index) for index in range(200, 400)]
    called = [np.hypot(*(e.markers[0] - e.markers[1])) < threshold for e in examples]
    assert held_out == np.mean([c == e.label for c, e in zip(called, examples)])
    # Easy contours are short, so a positive's markers sit closer: the cue alone beats chance.
    assert held_out > 0.6
    generator.main(["--distance_baseline", "--difficulty", "easy", "--count", "40"])
    out = capsys.readouterr().out
    assert out.startswith("pathfinder32 easy: marker distance < ")
    assert "on 20 held-out examples (" in out and ", fitted on 20 fresh examples; chance" in out
    # LRA's hard contours (14 paddles) wander far enough that the cue is weaker there.
    assert generator.marker_distance_baseline(hard, 400, seed=1)[2] < held_out - 0.1


@pytest.mark.parametrize("count", ["0", "-3", "two"])
def test_count_must_be_a_whole_number_of_one_or_more(count, capsys):
    with pytest.raises(SystemExit) as exit:
        generator.main(["--distance-baseline", "--count", count])
    error = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and "\n" not in error
    assert error.startswith(f"error: argument --count: {count!r} is not a whole number >= 1")


def test_distance_baseline_needs_two_examples_or_more(capsys):
    assert generator.main(["--distance-baseline", "--count", "1"]) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith(
        "error: --distance-baseline --count 1 leaves nothing to fit or to score"
    )


@pytest.fixture(scope="module")
def easy_set(tmp_path_factory):
    """200 easy images drawn with seed 3, 64 per folder: 160 train, 20 validation, 20 test."""
    easy = generator.config_for(32, "easy")
    return generator.write_dataset(
        tmp_path_factory.mktemp("easy"), easy, 200, seed=3, processes=1, images_per_folder=64
    )


def _drawn_cues(config, seed, indices):
    """Marker distances and labels of images `indices`, straight from generate_example."""
    examples = [generator.generate_example(config, seed, index) for index in indices]
    return [np.hypot(*(e.markers[0] - e.markers[1])) for e in examples], [e.label for e in examples]


def test_distance_baseline_on_a_dataset_fits_its_train_split_and_scores_its_test_split(easy_set):
    easy = generator.config_for(32, "easy")
    result = split_distance_baseline(easy_set)  # the settings from its generator.json
    threshold, fitted = generator.best_threshold(*_drawn_cues(easy, 3, range(160)))
    distances, labels = _drawn_cues(easy, 3, range(180, 200))
    scored = np.mean((np.array(distances) < threshold) == np.array(labels))
    assert result == (threshold, fitted, scored, 160, 20, easy)
    assert split_distance_baseline(easy_set, size=32, difficulty="easy") == result


def test_distance_baseline_on_a_dataset_refuses_a_label_the_generator_did_not_draw(
    easy_set, tmp_path, capsys
):
    altered = Path(shutil.copytree(easy_set, tmp_path / "altered"))
    metadata = altered / "metadata" / "3.npy"  # images 192..199, all in the test split
    lines = metadata.read_text().splitlines()
    fields = lines[-1].split()
    fields[3] = str(1 - int(fields[3]))
    metadata.write_text("\n".join([*lines[:-1], " ".join(fields)]) + "\n")
    assert analysis_main(["distance-baseline", str(altered)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "sample_7.png: label 0 in the metadata" in errors[0]
    assert "image 199 drawn again with seed 3 has label 1" in errors[0]


def _damaged_copy(easy_set, directory, case):
    """A copy of `easy_set` in `directory`, damaged as `case` says."""
    copy = Path(shutil.copytree(easy_set, directory))
    record = copy / generator.INFO_FILE
    info = json.loads(record.read_text())
    if case == "no info":
        record.unlink()
    if case == "listops":
        record.write_text(json.dumps({**info, "generator": "arena_tf.generators.listops"}))
    if case == "older version":
        record.write_text(json.dumps({**info, "version": 0}))
    if case == "not JSON":
        record.write_text(record.read_text()[:50])
    if case == "a JSON list":
        record.write_text("[]")
    if case == "fewer images":
        metadata = copy / "metadata" / "3.npy"
        metadata.write_text("\n".join(metadata.read_text().splitlines()[:-1]) + "\n")
    return copy


@pytest.mark.parametrize(
    "case, flags, message",
    [
        ("missing", [], "no such directory"),
        ("no info", [], "no generator.json"),
        (
            "listops",
            [],
            "names generator 'arena_tf.generators.listops', version 1, not this "
            "Pathfinder generator (generator 'arena_tf.generators.pathfinder', version",
        ),
        ("older version", [], "version 0, not this Pathfinder generator"),
        (
            "not JSON",
            [],
            "generator.json: not JSON; expected a dataset the Pathfinder generator wrote",
        ),
        ("a JSON list", [], "names a JSON list, not an object, not this Pathfinder generator"),
        (
            "other size",
            ["--size", "128"],
            "holds pathfinder32/curv_baseline images (its "
            "generator.json); expected pathfinder128/curv_baseline",
        ),
        (
            "other difficulty",
            ["--size", "32", "--difficulty", "hard"],
            "expected pathfinder32/curv_contour_length_14 images, as --size and --difficulty say; "
            "leave out --size and --difficulty",
        ),
        ("fewer images", [], "199 images in its metadata where its generator.json records 200"),
    ],
)
def test_distance_baseline_refuses_what_is_not_a_whole_generated_dataset(
    easy_set, tmp_path, capsys, case, flags, message
):
    copy = _damaged_copy(easy_set, tmp_path / "copy", case)
    directory = tmp_path / "nowhere" if case == "missing" else copy
    assert analysis_main(["distance-baseline", str(directory), *flags]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "\n" not in error and message in error


@pytest.mark.parametrize("count, split", [(0, "train"), (4, "test")])
def test_distance_baseline_refuses_an_empty_split(tmp_path, count, split):
    directory = generator.write_dataset(
        tmp_path, generator.config_for(32, "easy"), count, processes=1
    )
    with pytest.raises(
        tasks.BadDataError, match=f"its {split} split holds no image \\({count} images in all"
    ):
        split_distance_baseline(directory)


def test_the_analysis_distance_baseline_command_names_the_test_split(easy_set, capsys):
    assert analysis_main(["distance-baseline", str(easy_set)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pathfinder32 easy: marker distance < ")
    assert f"on the test split of {easy_set}, 20 images (" in out
    assert "%, fitted on its train split of 160 images; chance 50%)" in out


def test_a_read_only_task_refuses_to_generate(tmp_path):
    task = tasks.get("pathfinder", data_dir=tmp_path, difficulty="easy", generate=False)
    with pytest.raises(tasks.DataNotFoundError, match="generating it is off"):
        task.location()
    assert list(tmp_path.iterdir()) == []


def test_a_file_where_the_data_folder_should_be_is_one_clear_error(tmp_path):
    (tmp_path / "a_file").write_text("")
    task = tasks.get("pathfinder", data_dir=tmp_path / "a_file", num_examples=10, processes=1)
    with pytest.raises(tasks.DataNotFoundError, match="could not write there.*--data-dir"):
        task.location()
    assert (tmp_path / "a_file").read_text() == ""
