"""Pathfinder: are the two dots joined by one dashed contour? 32 x 32 pixels, "hard" (contour 14).

Data, in order: the LRA release layout in `data_dir` (or its `curv_contour_length_14/`,
`pathfinder32/curv_contour_length_14/`, `lra_release/pathfinder32/...` or
`lra_release/lra_release/pathfinder32/...` subfolder): `imgs/<k>/sample_<n>.png` and
`metadata/<k>.npy`, text files with one line per image (field 0 the image folder, field 1 the file
name, field 3 the label). Otherwise the project's generator (`arena_tf.generators.pathfinder`, the
LRA settings) writes that layout once under `data_dir` (default ./data/pathfinder) and later runs
reuse it; `num_examples` sets its size (default 200K, as the release). `difficulty="easy"` or
`"intermediate"` reads or generates the release's other folders (curv_baseline, contour length 6;
curv_contour_length_9) instead.

Splits, as in LRA: the metadata files in numeric order, their lines in file order; the first 80%
train, the next 10% validation, the last 10% test. A malformed metadata line is a BadDataError
naming the file and line.

Unreadable images: the first use of a dataset in a process (prepare, or training's first split)
reads every listed file once, without decoding it: the PNG signature, each chunk's length and
checksum, and the closing IEND chunk. Unreadable files
(0 bytes, truncated, not a PNG, a bad checksum) are counted: up to `max_bad_images` (default at
most 10 and at most 1% of the images) are left out of their splits with one warning line on stderr
naming the first few; more are a BadDataError naming the first few. A missing file is always a
DataNotFoundError. The pixels are decoded once, by the input pipeline: tf.data's decode_png, or
Pillow for `arrays` / `batches` (no TensorFlow; the same pixels, for the grayscale PNGs of the
release and the generator). An all-zero image (the release has one,
curv_baseline/imgs/0/sample_172.png) is skipped there with a `SkippedImageWarning` naming the
file.

Encoding: pixel values 0..255 flattened row-major to 1024 tokens, vocabulary 256, no padding id
(the reference code treated 0 as padding and so masked black pixels, a bug not copied here).

Rows: `{"input": [pixels 0..255, row by row], "target": "0" or "1"}`, as load_split gives them.

    task = arena_tf.tasks.get("pathfinder", data_dir="lra_release")
    pixels, label = next(iter(task.load_split("test")))   # int32 [1024] in 0..255, int32 0 / 1
"""

import collections
import io
import logging
import os
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

from arena_tf.config import ConfigError
from arena_tf.generators import pathfinder as generator
from arena_tf.progress import Progress
from arena_tf.tasks import register, sources
from arena_tf.tasks.base import SPLITS, BadDataError, DataNotFoundError, Task

log = logging.getLogger(__name__)

SPLIT_BOUNDS = {"train": (0.0, 0.8), "validation": (0.8, 0.9), "test": (0.9, 1.0)}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FIRST_METADATA = "metadata/0.npy"
BAD_IMAGE_LIMIT = 10  # unreadable images skipped at most (and at most BAD_IMAGE_SHARE of them)
BAD_IMAGE_SHARE = 0.01
NAMED_IMAGES = 3  # unreadable images named in a message
# What png_problem and misfit call a file that cannot be read: skipped up to a limit. Anything else
# they report (another size, another mode) is refused.
UNREADABLE = (
    "missing",
    "unreadable",
    "empty",
    "not PNG",
    "truncated",
    "bad checksum",
    "undecodable",
)
GRAY_MODES = ("L", "1", "LA")  # Pillow modes whose grey is decode_png's (channels=1)
METADATA_FORMAT = (
    "lines 'imgs/<k> sample_<n>.png index label ...' (at least 4 fields, label 0 "
    "or 1) in metadata/<number>.npy text files, as in the LRA release"
)
SplitBaseline = collections.namedtuple(
    "SplitBaseline", "threshold train_accuracy test_accuracy train_count test_count config"
)


class SkippedImageWarning(UserWarning):
    """An image was all zero or not a complete PNG and was left out of the split."""


def read_index(dataset_dir):
    """[(image path, label)] of a release-layout directory: metadata/<k>.npy in numeric order of k,
    lines in file order; paths are strings. A malformed line raises BadDataError (a ValueError)
    naming the file and line."""
    index = []
    fix = _repair_advice(dataset_dir)
    for metadata in sorted(Path(dataset_dir, "metadata").glob("*.npy"), key=_metadata_number):
        try:
            text = metadata.read_bytes().decode("utf-8")
        except UnicodeDecodeError as error:
            line = metadata.read_bytes()[: error.start].count(b"\n") + 1
            byte = error.object[error.start]
            raise BadDataError(
                f"{metadata}:{line}: not text (byte {byte:#04x})", METADATA_FORMAT, fix
            ) from None
        except OSError as error:
            raise BadDataError(
                f"cannot read {metadata} ({error.strerror or error})", METADATA_FORMAT, fix
            ) from None
        for number, line in enumerate(text.split("\n"), 1):
            fields = line.split()
            if not fields:
                continue
            if (
                len(fields) < 4
                or fields[3] not in ("0", "1")
                or ".." in Path(fields[0]).parts
                or os.path.isabs(fields[0])
            ):
                shown = line if len(line) <= 60 else line[:57] + "..."
                raise BadDataError(
                    f"{metadata}:{number}: malformed line {shown!r}", METADATA_FORMAT, fix
                )
            index.append((os.path.join(dataset_dir, fields[0], fields[1]), int(fields[3])))
    return index


def _repair_advice(dataset_dir):
    """How to repair a dataset directory: regenerate what the generator made, restore a release."""
    if generator.read_info(dataset_dir) is not None:
        return f"delete {dataset_dir} to generate it again"
    return "restore the files from the LRA release"


def png_problem(path):
    """None for a whole PNG file, else what is wrong with it ('missing', 'empty' (0 bytes),
    'truncated', 'not PNG', 'bad checksum', 'unreadable'), found from its bytes without decoding
    the pixels: the signature, each chunk's length and CRC, and a closing IEND chunk."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    if not data:
        return "empty"
    if not data.startswith(PNG_SIGNATURE):
        return "not PNG"
    position, size = len(PNG_SIGNATURE), len(data)
    while position + 12 <= size:
        length = int.from_bytes(data[position : position + 4], "big")
        end = position + 12 + length
        if end > size:
            return "truncated"
        if zlib.crc32(data[position + 4 : end - 4]) != int.from_bytes(data[end - 4 : end], "big"):
            return "bad checksum"
        if data[position + 4 : position + 8] == b"IEND":
            return None
        position = end
    return "truncated"


def misfit(path, count):
    """None for an image the task takes, else what does not fit it: its size ('33 x 32 pixels')
    or its mode ('RGB mode'), read by decoding it (Pillow); 'undecodable' for data that does not
    decode. Call on a whole PNG (`png_problem` None)."""
    try:
        with Image.open(path) as image:
            image.load()
            if image.mode not in GRAY_MODES:
                return f"{image.mode} mode"
            if image.width * image.height != count:
                return f"{image.width} x {image.height} pixels"
    except (OSError, ValueError):  # Pillow's errors for data it cannot decode
        return "undecodable"
    return None


def split_bounds(count, split):
    """(start, stop) of `split` among `count` examples: 80% / 10% / 10% in order."""
    low, high = SPLIT_BOUNDS[split]
    return round(low * count), round(high * count)


def _metadata_number(path):
    if not path.stem.isdecimal():
        raise BadDataError(
            f"{path}: a metadata file not named by a number",
            "metadata/<number>.npy files only",
            "move or rename this file",
        )
    return int(path.stem)


def warn_skipped(path):
    """Warn that the image at `path` (a string) is left out of its split."""
    warnings.warn(f"skipped {path}: all-zero or unreadable PNG", SkippedImageWarning)


def _skip(path):
    """`warn_skipped` for a bytes tensor `path`; False for tf.data's filter."""
    warn_skipped(path.numpy().decode())
    return False


def whole_png(contents):
    """Whether `contents` starts with the PNG signature and ends with an IEND chunk: the test both
    pipelines make before decoding (a file that fails it decodes as all zero, and is skipped)."""
    tail = max(len(contents) - 8, 0)
    return contents[:8] == PNG_SIGNATURE and contents[tail : tail + 4] == b"IEND"


def png_pixels(path, count):
    """uint8 [count]: the pixels of the grayscale PNG at `path`, row by row, as tf.io.decode_png
    (channels=1) decodes them; all zero when it is not a whole PNG (`whole_png`). A BadDataError
    for a colour or 16-bit image (TensorFlow's grey differs from Pillow's by rounding), another
    size, or data Pillow cannot decode."""
    with open(path, "rb") as f:
        contents = f.read()
    if not whole_png(contents):
        return np.zeros(count, np.uint8)
    expected = f"8-bit grayscale PNGs of {count} pixels, as the LRA release and the generator write"
    try:
        image = Image.open(io.BytesIO(contents))
        if image.mode not in GRAY_MODES:
            raise BadDataError(
                f"{path}: a {image.mode} image", expected, "convert the images to 8-bit grayscale"
            )
        pixels = np.asarray(image.convert("L")).reshape(-1)
    except OSError as error:  # Pillow's error for data it cannot decode
        raise BadDataError(
            f"{path}: cannot be decoded ({error})", expected, "restore or delete the file"
        ) from None
    if pixels.size != count:
        raise BadDataError(
            f"{path}: {image.width} x {image.height} pixels",
            expected,
            "use images of the task's size",
        )
    return pixels


def split_distance_baseline(dataset_dir, size=None, difficulty=None):
    """The marker-distance baseline (`generator.marker_distance_baseline`) on a generated
    dataset's own splits, split as the task splits it (`read_index`, `split_bounds`): the threshold
    is fitted on every image of the train split and scored on every image of the test split. Each
    image's markers are drawn again (`generator.marker_cues`) from the seed and settings its
    generator.json records, image i of the metadata order being the generator's image i; its
    metadata label must be the one drawn again.

    Args:
        dataset_dir: a dataset directory `generator.write_dataset` wrote (holding generator.json).
        size: None, or the size (32, 128) the record must name.
        difficulty: None, or the difficulty ("easy", "intermediate", "hard") the record must name.

    Returns:
        SplitBaseline(threshold, train_accuracy, test_accuracy, train_count, test_count, config),
        config being the recorded PathfinderConfig. A DataNotFoundError or BadDataError (one line,
        exit 2 on the command line) when the directory is missing, is not such a dataset (or not
        of `size` / `difficulty`), lists another number of images than it records, has an empty
        train or test split, or holds a label the generator did not draw.
    """
    info, config = _generated_info(dataset_dir, size, difficulty)
    index = read_index(dataset_dir)
    if len(index) != info["num_examples"]:
        raise BadDataError(
            f"{dataset_dir}: {len(index)} images in its metadata where its {generator.INFO_FILE} "
            f"records {info['num_examples']}",
            "every image the generator wrote, listed once",
            _repair_advice(dataset_dir),
        )
    train, test = (_nonempty_split(dataset_dir, len(index), split) for split in ("train", "test"))
    with Progress(
        f"pathfinder: drawing the markers of {dataset_dir} again", len(train) + len(test), "images"
    ) as progress:
        fit = _checked_cues(dataset_dir, config, info["seed"], index, train, progress)
        scored = _checked_cues(dataset_dir, config, info["seed"], index, test, progress)
    threshold, train_accuracy = generator.best_threshold(*fit)
    test_accuracy = generator.threshold_accuracy(threshold, *scored)
    return SplitBaseline(threshold, train_accuracy, test_accuracy, len(train), len(test), config)


def _nonempty_split(dataset_dir, count, split):
    """The positions of `split` among `count` images; a BadDataError when it holds none."""
    positions = range(*split_bounds(count, split))
    if not positions:
        raise BadDataError(
            f"{dataset_dir}: its {split} split holds no image ({count} images in "
            "all, split 80/10/10)",
            "a dataset of 5 images or more",
            "generate more images (--num-examples)",
        )
    return positions


def _generated_info(dataset_dir, size, difficulty):
    """(generator.json, its PathfinderConfig) of a dataset the generator wrote, of `size` and
    `difficulty` where given; a DataNotFoundError or BadDataError when `dataset_dir` is not one."""
    expected = (
        f"a dataset the Pathfinder generator wrote (the folder holding {generator.INFO_FILE})"
    )
    record = Path(dataset_dir) / generator.INFO_FILE
    if not Path(dataset_dir).is_dir():
        raise DataNotFoundError(
            f"{dataset_dir}: no such directory",
            expected,
            "pass the folder that the generator's --out-dir made",
        )
    try:
        info = generator.read_info(dataset_dir)
    except ValueError:  # not JSON (or not text)
        raise BadDataError(
            f"{record}: not JSON",
            expected,
            f"delete {dataset_dir} to generate it again, or pass another generated dataset",
        ) from None
    if info is None:
        raise BadDataError(
            f"{dataset_dir}: no {generator.INFO_FILE}, so no seed to draw its "
            "images again (an LRA release has none)",
            expected,
            "pass pathfinder<size>/<folder> of a generated ROOT",
        )
    ours = generator.dataset_info(generator.PATHFINDER32, None, None, None)
    if _writer(info) != _writer(ours):
        raise BadDataError(
            f"{record} names {_writer(info)}, not this Pathfinder generator ({_writer(ours)})",
            expected,
            f"delete {dataset_dir} to generate it "
            "again with this version, or pass a dataset it generated",
        )
    for key in ("seed", "num_examples"):  # they size and seed the images drawn again
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise BadDataError(
                f"{record} holds {key} {str(value)[:40]!r}",
                "a whole number >= 0, as the generator records it",
                f"delete {dataset_dir} to generate it again",
            )
    return info, _recorded_config(dataset_dir, info, size, difficulty)


def _writer(info):
    """Who a generator.json says wrote it ("generator 'G', version V"), or what JSON it holds when
    it is no object."""
    if not isinstance(info, dict):
        return f"a JSON {type(info).__name__}, not an object"
    return f"generator {info.get('generator')!r}, version {info.get('version')!r}"


def _recorded_config(dataset_dir, info, size, difficulty):
    """The PathfinderConfig of a generator.json; a BadDataError when it is not of `size` or
    `difficulty` (None: any)."""
    try:
        config = generator.config_from_info(info)
    except (KeyError, TypeError, ValueError) as error:
        raise BadDataError(
            f"{dataset_dir}/{generator.INFO_FILE}: no Pathfinder config ({error})",
            "the config the generator recorded",
            f"delete {dataset_dir} to generate it again",
        ) from None
    asked = generator.release_path(
        size or config.size, generator.DIFFICULTIES.get(difficulty, config.contour_length)
    )
    if asked != config.release_path:
        raise BadDataError(
            f"{dataset_dir} holds {config.release_path} images (its {generator.INFO_FILE})",
            f"{asked} images, as --size and --difficulty say",
            "leave out --size and --difficulty: the record says which",
        )
    return config


def _checked_cues(dataset_dir, config, seed, index, positions, progress):
    """(marker distances, metadata labels) of the images at `positions` of `index`, drawn again;
    a BadDataError at the first whose metadata label is not the one drawn."""
    distances = np.zeros(len(positions))
    cues = generator.marker_cues(config, seed, positions)
    for row, (position, (distance, label)) in enumerate(zip(positions, cues)):
        path, recorded = index[position]
        if recorded != label:
            raise BadDataError(
                f"{path}: label {recorded} in the metadata, but image {position} drawn again with "
                f"seed {seed} has label {label}",
                f"the images the generator drew with the seed and settings of "
                f"{generator.INFO_FILE}",
                _repair_advice(dataset_dir),
            )
        distances[row] = distance
        progress.update()
    return distances, np.array([index[position][1] for position in positions])


@register
class Pathfinder(sources.PixelRows, Task):
    """Pathfinder from the LRA release layout, or generated once under a seed.

    `difficulty`: "hard" (contour length 14, what LRA uses; default), "intermediate" (9) or "easy"
    (6, the release's curv_baseline): which release folder is read, or which settings generate.
    Extra arguments (generated data only; a release is read as it is): `num_examples` (images to
    generate, default `default_num_examples`), `generator_seed` (default 0), `processes`
    (generator processes; the images do not depend on it) and `generate` (False: read only). When
    `num_examples` or `generator_seed` is None, an existing generated set is reused whatever its
    value; a value given must match it. `max_bad_images`: how many unreadable images may be
    skipped (default: at most BAD_IMAGE_LIMIT and at most BAD_IMAGE_SHARE of the images).
    """

    name = "pathfinder"
    num_classes = 2
    vocab_size = 256
    max_len = 32 * 32
    num_inputs = 1
    padding_id = None
    generator_config = generator.PATHFINDER32
    default_num_examples = 200_000

    def __init__(
        self,
        data_dir=None,
        max_len=None,
        seed=0,
        difficulty="hard",
        num_examples=None,
        generator_seed=None,
        processes=None,
        generate=True,
        max_bad_images=None,
    ):
        super().__init__(data_dir=data_dir, max_len=max_len, seed=seed)
        self.generate = generate
        self.generator_config = generator.config_for(self.generator_config.size, difficulty)
        side = self.generator_config.size
        if self.max_len != side * side:
            raise ConfigError(
                f"{self.name}: max_len {self.max_len} is invalid",
                f"max_len {side * side} ({side} x {side} pixels)",
                "leave task.max_len unset for this task",
            )
        if max_bad_images is not None and (
            isinstance(max_bad_images, bool)
            or not isinstance(max_bad_images, int)
            or max_bad_images < 0
        ):
            raise ConfigError(
                f"{self.name}: max_bad_images={max_bad_images!r} is invalid",
                "a count >= 0",
                "set task.params.max_bad_images to 0 or more",
            )
        self.num_examples = num_examples
        self.generator_seed = generator_seed
        self.processes = processes
        self.max_bad_images = max_bad_images
        self._index = None
        self._unreadable = frozenset()

    @property
    def subfolders(self):
        """Where a release-layout directory is looked for, relative to the data root."""
        path = self.generator_config.release_path
        return ("", Path(path).name, path, f"lra_release/{path}", f"lra_release/lra_release/{path}")

    def dataset_dir(self):
        """The release-layout directory read, generating it first if no candidate holds one."""
        root = sources.data_root(self.name, self.data_dir)
        folder = sources.found_or_generated(
            self,
            root,
            self.generator_config.release_path,
            lambda: sources.find_folder(root, [FIRST_METADATA], self.subfolders),
            lambda: self._generate(root),
        )
        self._check_generated(folder)
        return folder

    def location(self):
        """The directory holding the images and metadata."""
        return str(self.dataset_dir())

    def examples(self, split):
        """[(image path string, label)] of `split`, in order, without the unreadable files (before
        skipping all-zero images). The first call checks every file (`check_images`)."""
        if self._index is None:
            directory = self.dataset_dir()
            index = read_index(directory)
            if not index:
                raise DataNotFoundError(
                    f"{self.name}: no metadata lines in {directory}/metadata",
                    METADATA_FORMAT,
                    "restore the files from the LRA release or delete the directory to "
                    "regenerate it",
                )
            self._unreadable = self.check_images(directory, index)
            self._index = index
        start, stop = split_bounds(len(self._index), sources.check_split(split))
        return [pair for pair in self._index[start:stop] if pair[0] not in self._unreadable]

    def bad_image_limit(self, count):
        """How many unreadable images of `count` may be skipped."""
        if self.max_bad_images is not None:
            return self.max_bad_images
        return min(BAD_IMAGE_LIMIT, int(BAD_IMAGE_SHARE * count))

    def check_images(self, directory, index):
        """The set of unreadable image paths of `index`, after reading each file once (with a
        progress line every few seconds); a DataNotFoundError if one is missing, a BadDataError if
        more are unreadable than may be skipped, else one warning line on stderr when any is."""
        problems = {}
        with Progress(
            f"{self.name}: checking images in {directory}", len(index), "images"
        ) as progress:
            for path, _ in index:
                problem = png_problem(path) or misfit(path, self.max_len)
                if problem:
                    problems[path] = problem
                progress.update()
        if not problems:
            return frozenset()
        self.refuse_misfits(
            directory,
            len(index),
            {path: problem for path, problem in problems.items() if problem not in UNREADABLE},
        )
        kinds = collections.Counter(problems.values())
        named = ", ".join(list(problems)[:NAMED_IMAGES])
        named += ", ..." * (len(problems) > NAMED_IMAGES)
        fix = _repair_advice(directory)
        if "missing" in kinds:
            missing = [path for path, problem in problems.items() if problem == "missing"]
            are = (
                "image listed in the metadata is"
                if len(missing) == 1
                else "images listed in the metadata are"
            )
            raise DataNotFoundError(
                f"{self.name}: {len(missing)} {are} missing (first: {missing[0]})",
                "every listed image in place",
                fix,
            )
        summary = ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())
        limit = self.bad_image_limit(len(index))
        what = (
            f"{self.name}: {len(problems)} of {len(index)} images in {directory} are "
            f"unreadable ({summary}: {named})"
        )
        if len(problems) > limit:
            raise BadDataError(
                what,
                f"whole PNG files, or at most {limit} unreadable to skip (at most "
                f"{BAD_IMAGE_LIMIT} and {BAD_IMAGE_SHARE:.0%} of the images, unless "
                f"task.params.max_bad_images says otherwise)",
                f"{fix}, or skip up to N with --set task.params.max_bad_images=N",
            )
        print(
            f"warning: {what}; skipped them (at most {limit} may be skipped); to use them, {fix}",
            file=sys.stderr,
            flush=True,
        )
        return frozenset(problems)

    def refuse_misfits(self, directory, total, misfits):
        """BadDataError naming the first images of another size or mode and their count: never
        skipped, they are another dataset's (a 64 x 64 image among 32 x 32 ones)."""
        if not misfits:
            return
        kinds = collections.Counter(misfits.values())
        named = ", ".join(list(misfits)[:NAMED_IMAGES]) + ", ..." * (len(misfits) > NAMED_IMAGES)
        side = int(round(self.max_len**0.5))
        raise BadDataError(
            f"{self.name}: {len(misfits)} of {total} images in {directory} do not fit the task "
            f"({', '.join(f'{count} {kind}' for kind, count in kinds.most_common())}: {named})",
            f"8-bit grayscale PNGs of {side} x {side} pixels, as the LRA release and the "
            "generator write",
            f"replace or remove them; {_repair_advice(directory)}",
        )

    def load_split(self, split):
        import tensorflow as tf

        paths, labels = zip(*self.examples(split))
        data = tf.data.Dataset.from_tensor_slices((list(paths), np.array(labels, np.int32)))
        data = data.map(self._decode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        return data.filter(_keep).map(lambda path, pixels, label: (pixels, label))

    def read_arrays(self, split):
        """The split's pixels (uint8) and labels decoded with Pillow: load_split's images in its
        order, the unreadable files left out (`examples`) and the all-zero ones skipped with a
        SkippedImageWarning, as there."""
        examples = self.examples(split)
        pixels = np.zeros((len(examples), self.max_len), np.uint8)
        with Progress(
            f"{self.name}: decoding the {split} images", len(examples), "images"
        ) as progress:
            for row, (path, _) in enumerate(examples):
                pixels[row] = png_pixels(path, self.max_len)
                progress.update()
        labels = np.array([label for _, label in examples], np.int32)
        kept = pixels.any(axis=1)
        if kept.all():
            return pixels, labels
        for row in np.flatnonzero(~kept):
            warn_skipped(examples[row][0])
        return pixels[kept], labels[kept]

    def prepare(self):
        summary = {}
        for split in SPLITS:
            examples = self.examples(split)
            labels = np.bincount([label for _, label in examples], minlength=2)
            summary[split] = {"examples": len(examples), "labels": dict(enumerate(labels.tolist()))}
        return summary

    def preview(self, out_dir, count=16):
        """Save the first `count` training images as one grid PNG in `out_dir` (green frame:
        markers joined, red: not); one line naming it."""
        pairs = sources.take_examples(self, "train", count)
        side = self.generator_config.size
        images = [pixels.reshape(side, side).astype(np.uint8) for pixels, _ in pairs]
        path = Path(out_dir) / f"{self.name}_train.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        generator.preview_grid(images, [label for _, label in pairs]).save(path)
        return [
            f"{self.name}: first {len(images)} training images (green frame = positive, "
            f"red = negative): {path}"
        ]

    def _decode(self, path, label):
        """(path, int32 pixels [max_len], label); all zero when the file is not a whole PNG."""
        import tensorflow as tf

        contents = tf.io.read_file(path)
        tail = tf.maximum(tf.strings.length(contents) - 8, 0)
        whole = tf.logical_and(
            tf.equal(tf.strings.substr(contents, 0, 8), PNG_SIGNATURE),
            tf.equal(tf.strings.substr(contents, tail, 4), b"IEND"),
        )
        pixels = tf.cond(
            whole,
            lambda: tf.reshape(
                tf.cast(tf.io.decode_png(contents, channels=1), tf.int32), [self.max_len]
            ),
            lambda: tf.zeros([self.max_len], tf.int32),
        )
        return path, pixels, label

    def _generate(self, root):
        sources.check_generation(self, sources.places(root, self.subfolders))
        target = Path(root) / self.generator_config.release_path
        if target.exists():  # where the generator writes, but no metadata/0.npy (else found)
            raise BadDataError(
                f"{self.name}: {target} exists but holds no {FIRST_METADATA}",
                "a release-layout folder (imgs/, metadata/0.npy, ...) or none there",
                "restore its metadata from the LRA release, or delete it to generate the data",
            )
        count = self.num_examples or self.default_num_examples
        log.info("%s: no release layout in %s; generating %d images", self.name, root, count)
        with sources.generator_writing(
            f"{self.name}: no {FIRST_METADATA} in {sources.places(root, self.subfolders)}",
            "the LRA release there, or a writable folder",
            "pass --data-dir=DIR with DIR holding the LRA release (e.g. lra_release/) or writable",
        ):
            return generator.write_dataset(
                root, self.generator_config, count, self.generator_seed or 0, self.processes
            )

    def _check_generated(self, folder):
        """Refuse generated data made with other settings than this task asks for."""
        info = generator.read_info(folder)
        if info is None:
            return
        asked = generator.dataset_info(
            self.generator_config,
            info["seed"] if self.generator_seed is None else self.generator_seed,
            self.num_examples or info["num_examples"],
            info["images_per_folder"],
        )
        differences = [
            f"{key}={info.get(key)} where {key}={asked[key]} was asked for"
            for key in asked
            if info.get(key) != asked[key]
        ]
        if differences:
            raise BadDataError(
                f"{self.name}: {folder}/{generator.INFO_FILE} records generated data with "
                f"{', '.join(differences)}",
                "data generated with the settings asked for",
                f"pass the same values, another data_dir, or delete {folder} to generate it again",
            )


def _keep(path, pixels, label):
    """tf.data filter: keep images with a non-zero pixel; warn about the others."""
    import tensorflow as tf

    return tf.cond(
        tf.reduce_any(pixels > 0),
        lambda: tf.constant(True),
        lambda: tf.reshape(tf.py_function(_skip, [path], tf.bool), []),
    )
