"""Pathfinder and Path-X images: two marker dots and dashed contours of short line segments.

An image holds two target contours whose first paddles start `seed_distance` apart, short
distractor contours, and two marker dots. A positive image (label 1) has the markers at the two
ends of one target contour; a negative image (label 0) has one marker at the start of one target
contour and the other at the end of the other. The task is Linsley, Kim et al.'s ("Learning
long-range spatial dependencies with horizontal gated recurrent units", 2018; "Disentangling neural
mechanisms for perceptual grouping", 2020), at the settings the Long Range Arena data was made with
(contour length 14, "hard"). This module is written anew with vector geometry (complex numbers,
plain Python: about 1.5 ms of CPU per image at either size). A contour grows one paddle at a time,
`gap` after the previous one, turning by an angle drawn with density cos^2(continuity * turn) (no
turn beyond 90 / continuity degrees) until the paddle fits: its centre line must stay
`2 * gap + thickness` from every other paddle, so distinct contours never touch while the gap inside
a contour is only `gap`. At a dead end the last paddle is drawn again. The targets grow one after
the other (the original alternated); which of them carries the first marker is drawn afterwards, so
the order says nothing about the label. Marker ends keep `marker_radius + gap + thickness / 2` from
the other contours. Images are drawn with Pillow at `antialias` times the size and box-filtered
down.

Everything drawn for image `index` depends on (seed, index) only, so a dataset is the same bytes
whatever the number of worker processes, and `generate_example(config, seed, index)` re-creates
the geometry of any stored image (the metadata keeps the index; `generator.json` keeps the config
and seed).

    python -m arena_tf.generators.pathfinder --preview grid.png --size 32
    python -m arena_tf.generators.pathfinder --out-dir data/pathfinder --num-examples 200000
    python -m arena_tf.generators.pathfinder --distance-baseline --difficulty easy --count 4000
"""

import dataclasses
import functools
import json
import logging
import math
import multiprocessing
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from arena_tf import cli
from arena_tf.generators import atomic_writer
from arena_tf.progress import Progress

log = logging.getLogger(__name__)

INFO_FILE = "generator.json"
INFO_VERSION = 1
MAX_ATTEMPTS = 1000


@dataclasses.dataclass(frozen=True)
class PathfinderConfig:
    """Drawing parameters, in pixels of the final image (names follow the original generator).

    paddle_gaps: the gap between consecutive paddles of a contour; one is drawn per image.
    continuity: turns are weighted cos^2(continuity * turn), so the largest turn per paddle is
        90 / continuity degrees.
    seed_distance: distance between the starts of the two target contours.
    antialias: drawing scale before box-filtering down to `size`.
    candidates: turning angles (or seed positions) drawn per paddle before giving up.
    distractor_tries: attempts per distractor contour before it is left out.
    """

    size: int
    padding: int
    paddle_length: float
    paddle_thickness: float
    paddle_gaps: tuple
    marker_radius: float
    contour_length: int
    distractor_length: int
    num_distractors: int
    continuity: float
    seed_distance: float
    antialias: int
    candidates: int = 16
    distractor_tries: int = 5

    def __post_init__(self):
        if self.clearance(min(self.paddle_gaps)) <= self.paddle_length / 2:
            raise ValueError(
                f"clearance 2 * gap + thickness = {self.clearance(min(self.paddle_gaps))} must "
                f"exceed paddle_length / 2 = {self.paddle_length / 2} so that crossing paddles are "
                "detected; use a larger gap or thickness or shorter paddles"
            )

    @property
    def release_path(self):
        """Directory of this dataset inside an LRA release (`release_path`)."""
        return release_path(self.size, self.contour_length)

    def clearance(self, gap):
        """Least distance between the centre lines of two paddles that are not neighbours."""
        return 2 * gap + self.paddle_thickness

    def marker_clearance(self, gap):
        """Least distance from a contour end (a marker centre) to another contour's centre line."""
        return self.marker_radius + gap + self.paddle_thickness / 2


# The Long Range Arena settings (docs/guide/lra-reference.md, data formats), contour length 14
# ("hard").
PATHFINDER32 = PathfinderConfig(
    size=32,
    padding=1,
    paddle_length=2,
    paddle_thickness=0.5,
    paddle_gaps=(1,),
    marker_radius=1.5,
    contour_length=14,
    distractor_length=14 // 3,
    num_distractors=20 // (14 // 3),
    continuity=1.0,
    seed_distance=7,
    antialias=2,
)
PATHX128 = PathfinderConfig(
    size=128,
    padding=1,
    paddle_length=5,
    paddle_thickness=1.5,
    paddle_gaps=(2, 3),
    marker_radius=3,
    contour_length=14,
    distractor_length=14 // 3,
    num_distractors=35 // (14 // 3),
    continuity=1.8,
    seed_distance=20,
    antialias=2,
)
CONFIGS = {32: PATHFINDER32, 128: PATHX128}
# The release's three difficulties (contour lengths of Linsley et al.); LRA uses "hard". Distractors
# scale with them: contour // 3 paddles each, as many as fit in 20 (32 px) or 35 (128 px) paddles.
DIFFICULTIES = {"easy": 6, "intermediate": 9, "hard": 14}
DISTRACTOR_PADDLES = {32: 20, 128: 35}


def config_for(size, difficulty="hard"):
    """The LRA settings at `size` (32 or 128 pixels) for one of the release's difficulties."""
    if size not in CONFIGS or difficulty not in DIFFICULTIES:
        raise ValueError(
            f"no Pathfinder settings for size {size}, difficulty {difficulty!r}; "
            f"expected size {' or '.join(map(str, CONFIGS))} and difficulty "
            f"{', '.join(DIFFICULTIES)}"
        )
    contour = DIFFICULTIES[difficulty]
    return dataclasses.replace(
        CONFIGS[size],
        contour_length=contour,
        distractor_length=contour // 3,
        num_distractors=DISTRACTOR_PADDLES[size] // (contour // 3),
    )


def release_path(size, contour_length):
    """Directory of a dataset inside an LRA release, e.g. pathfinder32/curv_contour_length_14 (the
    easy difficulty, contour length 6, is curv_baseline)."""
    folder = "curv_baseline" if contour_length == 6 else f"curv_contour_length_{contour_length}"
    return f"pathfinder{size}/{folder}"


def config_name(config):
    """ "pathfinder32 easy" for the LRA settings of a size and difficulty (`config_for`); the
    release path and "other drawing settings" for any other config."""
    for difficulty in DIFFICULTIES if config.size in CONFIGS else ():
        if config_for(config.size, difficulty) == config:
            return f"pathfinder{config.size} {difficulty}"
    return f"{config.release_path} (other drawing settings)"


@dataclasses.dataclass
class Example:
    """One image and the geometry it was drawn from (coordinates are (x, y) pixels).

    paddles: [n, 4] float, x0 y0 x1 y1 of each paddle, in drawing order.
    contours: [n] int, the contour of each paddle: 0 and 1 the targets, 2+ distractors.
    markers: [2, 2] float, the marker centres.
    """

    label: int
    image: np.ndarray
    paddles: np.ndarray
    contours: np.ndarray
    markers: np.ndarray
    gap: int


def _distance(point, start, unit, length):
    """Distance from a complex point to the paddle of `length` at complex `start` along `unit`."""
    local = (point - start) * unit.conjugate()
    along = local.real
    return abs(local - (0.0 if along < 0.0 else length if along > length else along))


class _Draws:
    """Uniform [0, 1) numbers from a NumPy generator, drawn in blocks (one call per 256 draws)."""

    def __init__(self, rng):
        self.rng = rng
        self.block = []

    def __call__(self):
        if not self.block:
            self.block = self.rng.random(256).tolist()
        return self.block.pop()


@functools.lru_cache(maxsize=None)
def _turn_rotations(continuity, steps=4096):
    """Complex rotations by `steps` equally likely turning angles: the quantiles of the density
    cos^2(continuity * turn) on |turn| < pi / (2 * continuity), found by inverting its cumulative
    distribution (x + sin x cos x) / pi + 1/2 in x = continuity * turn."""
    x = np.linspace(-np.pi / 2, np.pi / 2, 16 * steps + 1)
    cumulative = (x + np.sin(x) * np.cos(x)) / np.pi + 0.5
    turns = np.interp((np.arange(steps) + 0.5) / steps, cumulative, x) / continuity
    return np.exp(1j * turns).tolist()


def _unit(angle):
    """The complex unit vector at `angle` radians."""
    return complex(math.cos(angle), math.sin(angle))


class _Scene:
    """The paddles placed so far in one image (complex start, unit direction, end and middle, in
    drawing order) and the test a new paddle must pass. Contours are grown one at a time, so a
    contour's paddles are contiguous and its previous paddle is always the last one placed."""

    def __init__(self, config, gap):
        self.config = config
        self.gap = gap
        self.length = config.paddle_length
        self.starts, self.units, self.ends, self.middles = [], [], [], []
        self.tips = []
        self.low = config.padding + config.paddle_thickness / 2
        self.high = config.size - self.low
        self.clearance = config.clearance(gap)
        self.tip_clearance = config.marker_clearance(gap)
        # Paddles whose middles are this far apart are clear of each other.
        self.apart = self.length + self.clearance

    @property
    def count(self):
        """Number of paddles placed."""
        return len(self.starts)

    def truncate(self, count):
        """Take back the paddles placed after the first `count`."""
        for values in (self.starts, self.units, self.ends, self.middles):
            del values[count:]

    def fits(self, start, unit, continues=False):
        """Whether a paddle at complex `start` along `unit` lies inside the window, clear of the
        marker tips and clear of every placed paddle (but the last one when it `continues` it).

        Both ends of each paddle are measured against the other paddle; as the clearance exceeds
        half a paddle, two crossing paddles always have an end closer than the clearance.
        """
        low, high, length = self.low, self.high, self.length
        end = start + length * unit
        if not (
            low <= start.real <= high
            and low <= start.imag <= high
            and low <= end.real <= high
            and low <= end.imag <= high
        ):
            return False
        middle, apart, middles = (start + end) * 0.5, self.apart, self.middles
        for index in range(len(middles) - continues):
            if abs(middles[index] - middle) < apart and self._touches(index, start, unit, end):
                return False
        for tip in self.tips:
            if _distance(tip, start, unit, length) < self.tip_clearance:
                return False
        return True

    def _touches(self, index, start, unit, end):
        """Whether placed paddle `index` comes within the clearance of the paddle start-end."""
        other_start, other_unit, length = self.starts[index], self.units[index], self.length
        clearance = self.clearance
        return (
            _distance(start, other_start, other_unit, length) < clearance
            or _distance(end, other_start, other_unit, length) < clearance
            or _distance(other_start, start, unit, length) < clearance
            or _distance(self.ends[index], start, unit, length) < clearance
        )

    def add(self, start, unit):
        """Place a paddle; return its index."""
        self.starts.append(start)
        self.units.append(unit)
        self.ends.append(start + self.length * unit)
        self.middles.append(start + (self.length / 2) * unit)
        return self.count - 1

    def start(self, contour):
        """The free end of a contour's first paddle (complex)."""
        return self.starts[contour[0]]

    def end(self, contour):
        """The free end of a contour's last paddle (complex)."""
        return self.ends[contour[-1]]

    def paddles(self):
        """[n, 4] float x0 y0 x1 y1 of the placed paddles."""
        return np.array([(s.real, s.imag, e.real, e.imag) for s, e in zip(self.starts, self.ends)])


def _seed(scene, draws, tip):
    """Start a contour (a list of paddle indices) at a tip drawn by `tip()` with a random heading:
    the first of `candidates` draws that fits; None when none fits."""
    for _ in range(scene.config.candidates):
        start, unit = tip(), _unit((2 * draws() - 1) * math.pi)
        if scene.fits(start, unit):
            return [scene.add(start, unit)]
    return None


def _extend(scene, draws, contour):
    """Add one paddle to the contour grown last, turning by an angle drawn with density
    cos^2(continuity * turn) until one fits (at most `candidates` draws); False if none fits."""
    config = scene.config
    joint, heading = scene.end(contour), scene.units[contour[-1]]
    rotations = _turn_rotations(config.continuity)
    for _ in range(config.candidates):
        unit = heading * rotations[int(draws() * len(rotations))]
        start = joint + scene.gap * unit
        if scene.fits(start, unit, continues=True):
            contour.append(scene.add(start, unit))
            return True
    return False


def _grow(scene, draws, contour, length):
    """Extend the contour grown last to `length` paddles. At a dead end the last paddle is taken
    back and drawn again, at most `length` times in all; False when that does not suffice."""
    retries = length
    while len(contour) < length:
        if _extend(scene, draws, contour):
            continue
        if retries == 0 or len(contour) == 1:
            return False
        retries -= 1
        contour.pop()
        scene.truncate(scene.count - 1)
    return True


def _uniform_point(draws, low, high):
    """A function drawing complex points uniformly in the square [low, high]^2."""
    return lambda: complex(low + (high - low) * draws(), low + (high - low) * draws())


def _grow_targets(scene, draws):
    """The two target contours, the first started near the centre and the second
    `seed_distance` from its start; None on failure."""
    config = scene.config
    low, high = 2 * config.seed_distance, config.size - 2 * config.seed_distance
    if low >= high:
        low, high = scene.low, scene.high
    origin = _uniform_point(draws, low, high)()
    first = _seed(scene, draws, lambda: origin)
    if first is None or not _grow(scene, draws, first, config.contour_length):
        return None

    def around_origin():
        return origin + config.seed_distance * _unit((2 * draws() - 1) * math.pi)

    second = _seed(scene, draws, around_origin)
    if second is None or not _grow(scene, draws, second, config.contour_length):
        return None
    return first, second


def _markers_clear(scene, first, second):
    """True when a marker on any end of either target would touch neither the other target nor
    a marker on an end of the other pairing (so either label can be drawn unambiguously)."""
    config = scene.config
    for own, other in ((first, second), (second, first)):
        for tip in (scene.start(own), scene.end(own)):
            for paddle in other:
                start, unit = scene.starts[paddle], scene.units[paddle]
                if _distance(tip, start, unit, scene.length) < scene.tip_clearance:
                    return False
    least = 2 * config.marker_radius + scene.gap
    pairs = [(first, first), (second, second), (first, second), (second, first)]
    return all(abs(scene.start(a) - scene.end(b)) >= least for a, b in pairs)


def _add_distractors(scene, draws):
    """Place up to `num_distractors` distractor contours anywhere they fit; return them."""
    config = scene.config
    anywhere = _uniform_point(draws, scene.low, scene.high)
    placed = []
    for _ in range(config.num_distractors):
        for _ in range(config.distractor_tries):
            mark = scene.count
            contour = _seed(scene, draws, anywhere)
            if contour is not None and _grow(scene, draws, contour, config.distractor_length):
                placed.append(contour)
                break
            scene.truncate(mark)
    return placed


def _targets(config, draws):
    """A scene holding two target contours whose ends can all carry markers."""
    for _ in range(MAX_ATTEMPTS):
        scene = _Scene(config, config.paddle_gaps[int(draws() * len(config.paddle_gaps))])
        targets = _grow_targets(scene, draws)
        if targets is not None and _markers_clear(scene, *targets):
            return scene, targets
    raise RuntimeError(
        f"could not place two contours of {config.contour_length} paddles in {MAX_ATTEMPTS} "
        f"attempts at size {config.size}; use a shorter contour_length or a smaller clearance"
    )


def _as_xy(points):
    """[n, 2] float (x, y) of complex points."""
    return np.array([(p.real, p.imag) for p in points]).reshape(-1, 2)


def generate_example(config, seed, index):
    """Image `index` of the dataset drawn with `seed`: label index % 2 (classes balanced)."""
    draws = _Draws(np.random.default_rng([seed, index]))
    label = index % 2
    scene, targets = _targets(config, draws)
    origin = int(draws() * 2)
    terminal = origin if label else 1 - origin
    markers = _as_xy([scene.start(targets[origin]), scene.end(targets[terminal])])
    scene.tips = [point for t in targets for point in (scene.start(t), scene.end(t))]
    contours = [*targets, *_add_distractors(scene, draws)]
    owner = np.empty(scene.count, dtype=np.int64)
    for number, contour in enumerate(contours):
        owner[contour] = number
    paddles = scene.paddles()
    return Example(label, render(config, paddles, markers), paddles, owner, markers, scene.gap)


def render(config, paddles, markers):
    """uint8 [size, size] image: paddles [n, 4] and marker discs [2, 2] drawn white on black at
    `antialias` times the size, then box-filtered down."""
    scale = config.antialias
    canvas = Image.new("L", (config.size * scale, config.size * scale), 0)
    draw = ImageDraw.Draw(canvas)
    width = max(1, round(config.paddle_thickness * scale))
    for x0, y0, x1, y1 in (paddles * scale - 0.5).tolist():
        draw.line((x0, y0, x1, y1), fill=255, width=width)
    radius = config.marker_radius * scale
    for x, y in (markers * scale - 0.5).tolist():
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=255)
    return np.asarray(canvas.reduce(scale))


# ---------------------------------------------------------------------------- the release layout


def dataset_info(config, seed, num_examples, images_per_folder):
    """What `generator.json` records about a generated dataset (compared before reuse), in its
    JSON form (tuples as lists)."""
    return json.loads(
        json.dumps(
            {
                "generator": "arena_tf.generators.pathfinder",
                "version": INFO_VERSION,
                "config": dataclasses.asdict(config),
                "seed": seed,
                "num_examples": num_examples,
                "images_per_folder": images_per_folder,
            }
        )
    )


def read_info(dataset_dir):
    """The generator.json of a generated dataset directory, or None (e.g. an LRA release)."""
    path = Path(dataset_dir) / INFO_FILE
    return json.loads(path.read_text()) if path.exists() else None


def config_from_info(info):
    """The PathfinderConfig recorded in a generator.json."""
    fields = dict(info["config"])
    fields["paddle_gaps"] = tuple(fields["paddle_gaps"])
    return PathfinderConfig(**fields)


def _metadata_line(config, folder, name, index, example):
    """One metadata row as in the LRA release: folder, file, index, label, then the settings
    (continuity, contour length, distractor length, paddle length, thickness, gap, contrasts)."""
    settings = (
        config.continuity,
        config.contour_length,
        config.distractor_length,
        config.paddle_length,
        config.paddle_thickness,
        example.gap,
        1,
    )
    return " ".join(
        [f"imgs/{folder}", name, str(index), str(example.label)]
        + [f"{value:g}" for value in settings]
    )


def _write_folder(job):
    """Draw images [start, stop) into imgs/<folder>/ and then metadata/<folder>.npy."""
    config, seed, folder, start, stop, dataset_dir = job
    images = Path(dataset_dir) / "imgs" / str(folder)
    images.mkdir(parents=True, exist_ok=True)
    lines = []
    for number, index in enumerate(range(start, stop)):
        example = generate_example(config, seed, index)
        name = f"sample_{number}.png"
        Image.fromarray(example.image).save(images / name)
        lines.append(_metadata_line(config, folder, name, index, example))
    with atomic_writer(Path(dataset_dir) / "metadata" / f"{folder}.npy") as metadata:
        metadata.write("\n".join(lines) + "\n")
    return stop - start


def _run(jobs, processes, report):
    """Run folder jobs in `processes` spawned processes (in this one when there is one)."""
    if processes <= 1 or len(jobs) <= 1:
        for job in jobs:
            report(_write_folder(job))
        return
    with multiprocessing.get_context("spawn").Pool(min(processes, len(jobs))) as pool:
        for done in pool.imap_unordered(_write_folder, jobs):
            report(done)


def write_dataset(root, config, num_examples, seed=0, processes=None, images_per_folder=1000):
    """Generate `num_examples` images in the LRA release layout under `root` and return the dataset
    directory (root/pathfinder<size>/curv_contour_length_<n>): imgs/<k>/sample_<n>.png and
    metadata/<k>.npy (text), plus generator.json. An existing identical dataset is reused; an
    interrupted run resumes from its last finished folder. A progress line (done/total, rate, ETA)
    goes to stderr every few seconds."""
    final = Path(root) / config.release_path
    info = dataset_info(config, seed, num_examples, images_per_folder)
    if final.exists():
        found = read_info(final) or {}
        if found != info:
            differ = ", ".join(
                f"{key} {found.get(key)!r} there, {info.get(key)!r} asked"
                for key in sorted(set(found) | set(info))
                if found.get(key) != info.get(key)
            )
            raise cli.UsageError(
                f"{final} exists but holds other data than asked for ({differ})",
                f"an empty place, or the data its {INFO_FILE} describes",
                "delete it, or write to another root",
            )
        return final
    partial = final.with_name(f".{final.name}.partial")
    if partial.exists() and read_info(partial) != info:
        shutil.rmtree(partial)
    (partial / "metadata").mkdir(parents=True, exist_ok=True)
    with atomic_writer(partial / INFO_FILE) as record:
        json.dump(info, record, indent=1)
    jobs = [
        (config, seed, folder, start, min(start + images_per_folder, num_examples), str(partial))
        for folder, start in enumerate(range(0, num_examples, images_per_folder))
        if not (partial / "metadata" / f"{folder}.npy").exists()
    ]
    progress = Progress(
        f"pathfinder{config.size}: generating into {final}",
        sum(stop - start for _, _, _, start, stop, _ in jobs),
        "images",
    )
    with progress.ticking():
        _run(jobs, processes or len(os.sched_getaffinity(0)), progress.update)
    progress.finish()
    os.replace(partial, final)
    return final


# ---------------------------------------------------------------------------- looking at examples


def preview_grid(images, labels, columns=8, scale=None):
    """An RGB grid of uint8 images [n, h, w], each enlarged `scale` times (nearest) and framed
    green when positive (markers on one contour) and red when negative."""
    images = np.asarray(images)
    scale = scale or max(1, 128 // images.shape[1])
    border = 3
    tile = images.shape[1] * scale + 2 * border
    rows = -(-len(images) // columns)
    grid = np.full((rows * tile, columns * tile, 3), 64, dtype=np.uint8)
    for number, (image, label) in enumerate(zip(images, labels)):
        top, left = (number // columns) * tile, (number % columns) * tile
        grid[top : top + tile, left : left + tile] = (40, 200, 40) if label else (220, 40, 40)
        big = np.kron(image, np.ones((scale, scale), dtype=np.uint8))
        grid[top + border : top + tile - border, left + border : left + tile - border] = big[
            ..., None
        ]
    return Image.fromarray(grid)


def write_preview(path, config, count=16, seed=0):
    """Draw `count` fresh examples and save their grid as a PNG at `path`; return the path."""
    examples = [generate_example(config, seed, index) for index in range(count)]
    with atomic_writer(path, "wb") as out:
        preview_grid([e.image for e in examples], [e.label for e in examples]).save(out, "PNG")
    return Path(path)


def best_threshold(distances, labels):
    """(t, accuracy) of the rule "positive when the markers are closer than t" that scores best
    on these (distance, label) pairs; t is a midpoint between neighbouring distinct distances."""
    order = np.argsort(distances)
    distances, labels = np.asarray(distances, dtype=float)[order], np.asarray(labels)[order]
    # Calling the first k (closest) positive: positives among them plus negatives after them.
    correct = np.concatenate([[0], np.cumsum(labels == 1)]) + np.concatenate(
        [np.cumsum((labels == 0)[::-1])[::-1], [0]]
    )
    # No threshold separates equal distances: k may not fall between two of them.
    splittable = np.concatenate([[True], distances[1:] > distances[:-1], [True]])
    k = int(np.argmax(np.where(splittable, correct, -1)))
    bounds = np.concatenate([[distances[0] - 1], distances, [distances[-1] + 1]])
    return (bounds[k] + bounds[k + 1]) / 2, correct[k] / len(labels)


def threshold_accuracy(threshold, distances, labels):
    """Accuracy of "positive when the markers are closer than `threshold`" on these pairs."""
    return float(np.mean((np.asarray(distances) < threshold) == np.asarray(labels)))


def marker_cues(config, seed, indices):
    """(marker distance in pixels, label) of each image of `indices` of the dataset drawn with
    `seed`, drawn again one at a time (`generate_example`)."""
    for index in indices:
        example = generate_example(config, seed, index)
        yield float(np.hypot(*(example.markers[0] - example.markers[1]))), example.label


def marker_distance_baseline(config, count, seed=0):
    """How far the distance between the two markers alone predicts the label: the best threshold
    on `count` // 2 fresh examples and its accuracy on the next `count` // 2, as
    (threshold, fitted accuracy, held-out accuracy). A model above chance may have learnt only
    this cue, not the contour. (On a generated dataset's own splits: the Pathfinder task's
    `split_distance_baseline`.)"""
    distances, labels = map(list, zip(*marker_cues(config, seed, range(count))))
    half = count // 2
    threshold, fitted = best_threshold(distances[:half], labels[:half])
    return threshold, fitted, threshold_accuracy(threshold, distances[half:], labels[half:])


def parse_args(argv=None):
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.generators.pathfinder", description=__doc__.split("\n\n")[0]
    )
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--preview", metavar="PNG", help="write a grid of examples to this PNG")
    action.add_argument(
        "--out-dir", metavar="ROOT", help="generate a dataset in the release layout"
    )
    action.add_argument(
        "--distance-baseline",
        action="store_true",
        help="accuracy of the marker distance alone (one threshold), on --count "
        "fresh examples: half to fit, half to score (on a generated "
        "dataset's own splits: python -m arena_tf.analysis distance-baseline)",
    )
    parser.add_argument("--size", type=int, choices=sorted(CONFIGS), default=32)
    parser.add_argument(
        "--difficulty",
        choices=list(DIFFICULTIES),
        default="hard",
        help="contour length 6, 9 or 14 (LRA: hard)",
    )
    parser.add_argument(
        "--count",
        type=cli.positive_int,
        default=16,
        help="examples in the preview, or in the distance baseline (at least 2: "
        "it fits on one half and scores the other)",
    )
    parser.add_argument("--num-examples", type=cli.positive_int, default=200_000)
    parser.add_argument(
        "--processes", type=cli.positive_int, default=None, help="default: all CPUs"
    )
    parser.add_argument("--seed", type=cli.whole_number(0), default=0)
    return parser.parse_args(argv)


def main(argv=None):
    """Command line: write a preview grid, or generate a dataset and report images per second.

    Args:
        argv: --preview, --out-dir or --distance-baseline, then the flags of `--help` (default:
            sys.argv[1:]).

    Exit status:
        0 when the grid, the dataset or the baseline is done; 2 and one `error: ...` line for a
            user's mistake; 1 when drawing or writing failed (`--debug`: the traceback).

    Example:
        python -m arena_tf.generators.pathfinder --preview grid.png --size 32

    References:
        Linsley, Kim et al., 2018, "Learning long-range spatial dependencies with horizontal
            gated recurrent units" (NeurIPS 2018); Kim, Linsley et al., 2020, "Disentangling
            neural mechanisms for perceptual grouping" (ICLR 2020).
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    args = parse_args(argv)
    return cli.run_main(lambda: run(args), debug=args.debug)


def run(args):
    config = config_for(args.size, args.difficulty)
    if args.preview:
        path = cli.output_file(args.preview, "--preview", example="grid.png")
        print(write_preview(path, config, args.count, args.seed))
        return
    if args.distance_baseline:
        if args.count < 2:
            raise cli.UsageError(
                f"--distance-baseline --count {args.count} leaves nothing to fit or to score",
                "at least 2 examples (one half fits, the other scores)",
                "pass --count 2 or more (e.g. --count 20000)",
            )
        threshold, fitted, held_out = marker_distance_baseline(config, args.count, args.seed)
        print(
            baseline_line(
                config,
                threshold,
                fitted,
                held_out,
                f"{args.count - args.count // 2} held-out examples",
                f"{args.count // 2} fresh examples",
            )
        )
        return
    logging.basicConfig(format="%(message)s", level=logging.INFO)
    cli.output_dir(args.out_dir)
    if (Path(args.out_dir) / config.release_path).exists():
        print(f"{write_dataset(args.out_dir, config, args.num_examples, args.seed)}: already there")
        return
    start = time.perf_counter()
    directory = write_dataset(args.out_dir, config, args.num_examples, args.seed, args.processes)
    seconds = time.perf_counter() - start
    print(
        f"{directory}: {args.num_examples} images in {seconds:.1f} s "
        f"({args.num_examples / seconds:.0f} images/s)"
    )


def baseline_line(config, threshold, fitted, scored, scored_on, fitted_on):
    """The one line of --distance-baseline: the rule, its accuracy where it was scored and where
    it was fitted: "<size> <difficulty>: marker distance < T px called positive scores S on
    SCORED_ON (F, fitted on FITTED_ON; chance 50%)"."""
    return (
        f"{config_name(config)}: marker distance < {threshold:.2f} px called positive "
        f"scores {scored:.1%} on {scored_on} ({fitted:.1%}, fitted on {fitted_on}; "
        "chance 50%)"
    )


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
