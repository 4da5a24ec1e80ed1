"""Shared helpers for the tasks: where data lives, the TFDS-or-explain logic, safe writing, tokens.

Every task reads its data from, in order, a directory the user names, TFDS (for the tasks that
have a TFDS source, downloading only where the machine is online) or the project's generator, and
raises `DataNotFoundError` with one message when none serves. The parts the tasks share:

    root = data_root("listops", data_dir)                  # data_dir, or ./data/listops
    folder = find_folder(root, ["basic_train.tsv"], ("", "listops-1000"))
    with atomic_writer(root / "basic_train.tsv") as f:    # readers never see half a file
        f.write("Source\\tTarget\\n")
    tokens = encode_bytes(tf.constant("text"), max_len=1000)   # UTF-8 bytes + 1, 0 = padding

`atomic_writer` lives in `arena_tf.files` (which stays free of TensorFlow, for generator
workers) and is re-exported here.

Rows (see arena_tf/tasks/base.py): `ByteTextRows` and `PixelRows` give the row form of the byte-text
tasks (text, retrieval) and the pixel tasks (image, pathfinder, pathx); `row_text` turns raw bytes
into a row's string so that `byte_ids` gives back exactly the bytes (invalid UTF-8 travels as
lone surrogates, Python's "surrogateescape", which JSON carries as \\udcXX escapes).

`TfdsTask` is the base of the TFDS-backed tasks (text, image): a subclass names the TFDS dataset,
maps each task split to a TFDS split, and encodes one (features, label) pair.

Downloads: on by default; `ARENA_TF_DOWNLOAD=0` (or `download=False` on a TfdsTask) turns them off.
Before any download the dataset's host is probed for ARENA_TF_DOWNLOAD_TIMEOUT seconds (default
10), so an offline machine stops at once with the explanation instead of hanging in retries.
"""

import abc
import collections
import contextlib
import inspect
import logging
import os
import socket
import sys
from pathlib import Path

import numpy as np

from arena_tf import cli
from arena_tf.config import ConfigError
from arena_tf.files import atomic_writer  # noqa: F401 (shared with the tasks from here)
from arena_tf.locks import FileLock
from arena_tf.progress import Progress
from arena_tf.tasks.base import SPLITS, DataNotFoundError, RowError, Task

log = logging.getLogger(__name__)

DEFAULT_DATA_ROOT = Path("data")
DOWNLOAD_ENV = "ARENA_TF_DOWNLOAD"
TIMEOUT_ENV = "ARENA_TF_DOWNLOAD_TIMEOUT"


def data_root(task_name, data_dir=None):
    """The directory a task reads and writes: `data_dir` if given, else ./data/<task_name>."""
    return Path(data_dir) if data_dir else DEFAULT_DATA_ROOT / task_name


def check_split(split):
    """`split` if it is one of SPLITS; a one-line ValueError naming them otherwise."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split


def find_folder(root, filenames, subfolders=("",)):
    """The first of root/<subfolder> (in the given order) that holds every file in `filenames`;
    None if no candidate holds them all."""
    for sub in subfolders:
        folder = Path(root) / sub
        if all((folder / name).is_file() for name in filenames):
            return folder
    return None


class _Generating(Exception):
    """Another process holds the generation lock: its str names the pid."""


def found_or_generated(task, root, dataset, find, generate):
    """find()'s folder; where it finds none, generate()'s, holding a lock named after `dataset`
    (what generate() writes, e.g. 'pathfinder32/curv_contour_length_9') in `root`, so that a second
    process asking for the same data meanwhile (two runs started side by side on a fresh machine)
    waits for the first, in one line, and then finds what it wrote, instead of writing the same
    files alongside it. A task that may not generate (`task.generate` False) takes no lock and
    creates nothing; where `root` cannot hold the lock, generate() runs unguarded (and says why it
    cannot write there, if it cannot)."""
    folder = find()
    if folder is not None or not task.generate:
        return folder or generate()
    path = Path(root) / f".{str(dataset).replace('/', '-')}.generating.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(path, busy=_Generating).acquire()
    except _Generating as holder:
        print(
            f"waiting for {holder}, which is generating {dataset} in {root}",
            file=sys.stderr,
            flush=True,
        )
        lock = FileLock(path).acquire()
    except OSError:
        return generate()
    try:
        return find() or generate()
    finally:
        lock.release()


def present_files(root, filenames, subfolders=("",)):
    """Paths of the files in `filenames` found in any candidate folder (to report partial data); a
    DataNotFoundError for one of those names that is there but not a file (a folder)."""
    paths = [
        Path(root) / sub / name
        for sub in subfolders
        for name in filenames
        if (Path(root) / sub / name).exists()
    ]
    other = next((path for path in paths if not path.is_file()), None)
    if other is not None:
        raise DataNotFoundError(
            f"{other} is a folder, where the data file {other.name} is read",
            f"the file {other.name}, or nothing of that name",
            "move that folder away, or pass another --data-dir",
        )
    return paths


def places(root, subfolders):
    """'a, a/b or a/c': the candidate folders, for error messages."""
    names = [str(Path(root) / sub) for sub in subfolders]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def fit_length(ids, max_len):
    """Cut a 1-D int32 tensor to `max_len` and right-pad it with 0; the result has static shape."""
    import tensorflow as tf

    ids = ids[:max_len]
    ids = tf.pad(ids, [[0, max_len - tf.shape(ids)[0]]])
    return tf.ensure_shape(ids, [max_len])


def encode_bytes(text, max_len):
    """A scalar string tensor as int32 [max_len]: UTF-8 byte + 1 (ids 1..256), 0 = padding."""
    import tensorflow as tf

    ids = tf.cast(tf.io.decode_raw(text, tf.uint8), tf.int32) + 1
    return fit_length(ids, max_len)


def decode_bytes(ids):
    """Inverse of `encode_bytes` for display: padding dropped, invalid UTF-8 replaced."""
    return bytes(int(i) - 1 for i in ids if i > 0).decode("utf-8", errors="replace")


def row_text(raw):
    """A row's string for raw bytes: UTF-8, undecodable bytes as lone surrogates (surrogateescape),
    so that `byte_ids` encodes exactly these bytes again."""
    return raw.decode("utf-8", errors="surrogateescape")


def fit_ids(ids, max_len):
    """NumPy twin of `fit_length`: int32 [max_len], cut to `max_len`, right-padded with 0."""
    fitted = np.zeros(max_len, np.int32)
    ids = np.asarray(ids, np.int32)[:max_len]
    fitted[: len(ids)] = ids
    return fitted


def byte_ids(text, max_len):
    """NumPy twin of `encode_bytes` for a row's string (see `row_text`): UTF-8 byte + 1, cut and
    padded to `max_len`; RowError for anything but such a string."""
    if not isinstance(text, str):
        raise RowError(
            f"a text input is a {type(text).__name__}", "a string", "send the text itself"
        )
    try:
        raw = text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError as error:
        raise RowError(
            f"a text input holds {text[error.start]!r}, which no UTF-8 byte encodes",
            "text, with undecodable bytes as \\udc80-\\udcff",
            "fix the row",
        ) from None
    return fit_ids(np.frombuffer(raw, np.uint8).astype(np.int32) + 1, max_len)


def pixel_ids(pixels, max_len):
    """A pixel row input as int32 [max_len]: exactly `max_len` whole numbers 0..255, row-major;
    RowError otherwise."""
    array = _whole_numbers(pixels)
    if array is None or len(array) != max_len or array.min() < 0 or array.max() > 255:
        shown = (
            f"a list of {len(pixels)} items"
            if isinstance(pixels, list)
            else f"a {type(pixels).__name__}"
        )
        raise RowError(
            f"a pixel input is not {max_len} whole numbers 0..255 ({shown})",
            f"a list of {max_len} 8-bit pixel values, row by row",
            "send the pixels as `python -m arena_tf.data rows` writes them",
        )
    return array.astype(np.int32)


def _whole_numbers(value):
    """`value` as a 1-D integer array when it is a non-empty list of whole numbers, else None."""
    if not isinstance(value, list) or not value:
        return None
    try:
        array = np.asarray(value)
    except (ValueError, OverflowError):  # ragged nesting, numbers beyond int64
        return None
    return array if array.ndim == 1 and array.dtype.kind in "iu" else None


class ByteTextRows:
    """Mixin for tasks whose inputs are UTF-8 text tokenized as bytes: a row input is the text."""

    def encode_input(self, value):
        return byte_ids(value, self.max_len)


class PixelRows:
    """Mixin for tasks whose tokens are 8-bit pixels: a row input is the pixel list itself, as
    load_split gives it."""

    def rows(self, split):
        for pixels, label in self.load_split(split).as_numpy_iterator():
            yield {"input": pixels.tolist(), "target": self.target(label)}

    def encode_input(self, value):
        return pixel_ids(value, self.max_len)


def summarize(dataset, batch_size=1024, what="counting labels"):
    """{"examples": n, "labels": {label: count}} of an (inputs, label) dataset, with a progress
    line every few seconds (`what: done/total examples, rate, ETA`; the total where known)."""
    counts = collections.Counter()
    total = int(dataset.cardinality())
    progress = Progress(what, total if total > 0 else None, "examples")
    labels = dataset.map(lambda inputs, label: label).batch(batch_size)
    for batch in labels.as_numpy_iterator():
        counts.update(batch.tolist())
        progress.update(len(batch))
    progress.finish()
    return {"examples": sum(counts.values()), "labels": dict(sorted(counts.items()))}


def take_examples(task, split="train", count=3):
    """The first `count` (inputs, label) pairs of a task split as NumPy values, for previews."""
    return list(task.load_split(split).take(count).as_numpy_iterator())


def preview_lines(task, decode, count=3, width=120):
    """`count` training examples as 'train[i] label y: text' lines, each input decoded by `decode`
    and cut to `width` characters (two inputs are shown side by side, separated by ' || ')."""
    lines = []
    for index, (inputs, label) in enumerate(take_examples(task, "train", count)):
        parts = inputs if isinstance(inputs, tuple) else (inputs,)
        shown = " || ".join(_clip(decode(part), width // len(parts)) for part in parts)
        lines.append(f"train[{index}] label {label}: {shown}")
    return lines


class TextPreview:
    """Mixin for tasks whose inputs read as text: `preview` shows a few decoded training examples
    through the task's `decode(tokens) -> str`."""

    def preview(self, out_dir, count=3):
        """A few training examples as text lines (`out_dir` is unused: nothing to draw)."""
        return preview_lines(self, self.decode, count)


def require_max_len(task, length, why):
    """A ConfigError (a ValueError) unless `task.max_len` is `length` (tasks whose length is
    fixed)."""
    if task.max_len != length:
        raise ConfigError(
            f"{task.name}: max_len {task.max_len} is invalid",
            f"max_len {length} ({why})",
            "leave task.max_len unset for this task",
        )


def _clip(text, width):
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def save_png(path, pixels, scale=4):
    """Write a 2-D uint8 array as a grayscale PNG, each pixel a `scale` x `scale` square."""
    import numpy as np
    from PIL import Image

    pixels = np.kron(np.asarray(pixels, np.uint8), np.ones((scale, scale), np.uint8))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels, mode="L").save(path)
    return Path(path)


def download_enabled(download=None):
    """`download` if given, else the ARENA_TF_DOWNLOAD environment variable (default on)."""
    if download is not None:
        return bool(download)
    return os.environ.get(DOWNLOAD_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def host_reachable(host, port, timeout=None):
    """True if a TCP connection to host:port opens within `timeout` seconds (default
    ARENA_TF_DOWNLOAD_TIMEOUT, else 10): a quick test of being online before a download that would
    otherwise retry for long."""
    timeout = float(os.environ.get(TIMEOUT_ENV, 10)) if timeout is None else timeout
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def read_only_arguments(task_class):
    """Constructor arguments making a task read only what exists: no download, no generation."""
    arguments = {}
    if issubclass(task_class, TfdsTask):
        arguments["download"] = False
    if "generate" in inspect.signature(task_class).parameters:
        arguments["generate"] = False
    return arguments


def check_generation(task, where):
    """Stop a task whose data is missing from generating it when it was built with
    `generate=False` (reading only, as export does)."""
    if not task.generate:
        raise DataNotFoundError(
            f"{task.name}: no data in {where}, and generating it is off (generate=False)",
            "the task's data there",
            "pass --data-dir=DIR with DIR holding the data, or let training generate it first",
        )


@contextlib.contextmanager
def generator_writing(missing, expected, fix):
    """Run a task's generator; a place it cannot write (OSError, or cli.PlaceError whose `what`
    names the place and why) becomes one DataNotFoundError: `missing` (what was looked for where)
    "and the generator could not write there (why)", with `expected` and `fix`."""
    try:
        yield
    except (OSError, cli.PlaceError) as error:
        raise DataNotFoundError(
            f"{missing} and the generator could not write there ({getattr(error, 'what', error)})",
            expected,
            fix,
        ) from error


class TfdsTask(Task):
    """A task served by a TFDS dataset: a prepared TFDS directory, else a download where possible.

    Subclasses set `tfds_name`, `tfds_splits` ({task split: TFDS split spec}), `download_host`
    ((host, port) probed before downloading) and implement `encode(features, label)` returning
    (int32 tokens [max_len], int32 label).

    With `data_dir` the dataset is looked for (and downloaded) there; without it, in TFDS's own
    data directory (~/tensorflow_datasets or TFDS_DATA_DIR).
    """

    tfds_name = None
    tfds_splits = {}
    download_host = None

    def __init__(self, data_dir=None, max_len=None, seed=0, download=None):
        super().__init__(data_dir=data_dir, max_len=max_len, seed=seed)
        self.download = download

    @abc.abstractmethod
    def encode(self, features, label):
        """(int32 tokens [max_len], int32 label) from one TFDS (features, label) pair."""

    def load_split(self, split):
        import tensorflow as tf

        return self.tfds_examples(split).map(
            self.encode, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    def tfds_examples(self, split):
        """The TFDS (features, label) pairs of a task split, before `encode`, in file order."""
        return self._load_tfds(self.tfds_splits[check_split(split)])

    def prepare(self):
        return {split: summarize(self.load_split(split)) for split in self.tfds_splits}

    def _load_tfds(self, spec):
        """The TFDS split `spec` as (features, label) pairs in file order; downloads if allowed."""
        import tensorflow_datasets as tfds

        def load(download):
            return tfds.load(
                self.tfds_name,
                split=spec,
                data_dir=self.data_dir,
                download=download,
                as_supervised=True,
                shuffle_files=False,
            )

        try:
            return load(download=False)
        except AssertionError:  # TFDS's signal for "not prepared in data_dir"
            pass
        blocker = self._download_blocker()
        if blocker:
            raise DataNotFoundError(*self._missing_message(blocker))
        log.info("%s: downloading TFDS %s into %s", self.name, self.tfds_name, self.location())
        try:
            return load(download=True)
        except Exception as error:  # noqa: BLE001 (any failure means no source served)
            # network, disk or TFDS failures all mean "no source served"
            problem = " ".join(str(error).split())[:200]
            raise DataNotFoundError(*self._missing_message(f"the download failed ({problem})"))

    def _download_blocker(self):
        """Why no download can be tried now, or None when it can."""
        if not download_enabled(self.download):
            return f"downloading is off ({DOWNLOAD_ENV}=0 or download=False)"
        host, port = self.download_host
        if not host_reachable(host, port):
            return f"{host}:{port} is unreachable (offline?)"
        return None

    def location(self):
        """Where the dataset is looked for, for messages."""
        return self.data_dir or "TFDS's data directory (~/tensorflow_datasets or TFDS_DATA_DIR)"

    def _missing_message(self, blocker):
        """(what, expected, fix) of a DataNotFoundError: the dataset is missing and why no
        download served it."""
        target = f" --data-dir={self.data_dir}" if self.data_dir else ""
        command = f"python -m arena_tf.data prepare --task={self.name}{target}"
        return (
            f"{self.name}: TFDS dataset {self.tfds_name!r} is not prepared in {self.location()} "
            f"and {blocker}",
            f"a prepared copy (DIR/{self.tfds_name}/) or a machine online",
            f"run `{command}` where the machine is online (TFDS downloads it), or pass "
            f"--data-dir=DIR with DIR holding a prepared copy",
        )
