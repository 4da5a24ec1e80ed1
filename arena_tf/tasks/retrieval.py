"""Retrieval: does one ACL Anthology Network paper cite the other? Two byte sequences, two classes.

Data: the LRA release files `new_aan_pairs.{train,eval,test}.tsv` (train / validation / test) in
`data_dir` (default ./data/retrieval) or its `tsv_data/` or `lra_release/tsv_data/` subfolder. The
AAN data has no public mirror (google-research/long-range-arena#52) and no generator, so without
these files the task stops with DataNotFoundError.

Format: no header, tab separated, 5 columns: label (float; 1 = citation link), id1, id2, text1,
text2. Malformed lines (another column count, a label other than 0 / 1) are logged as warnings with
their file and line number, once per file, and skipped.

Encoding: each document as UTF-8 bytes + 1 (0 = padding, vocabulary 257), cut to max_len = 4000;
the two documents are two inputs for a two-tower model with shared weights.

Rows: `{"input1": TEXT1, "input2": TEXT2, "target": "0" or "1"}`, the documents whole (see
`sources.row_text` for bytes that are not UTF-8).

    task = arena_tf.tasks.get("retrieval", data_dir="lra_release")
    (doc1, doc2), label = next(iter(task.load_split("train")))   # int32 [4000] x 2, int32 0 / 1
"""

import collections
import logging
import os

import numpy as np

from arena_tf.progress import Progress
from arena_tf.tasks import register, sources
from arena_tf.tasks.base import BadDataError, DataNotFoundError, Task

log = logging.getLogger(__name__)

SPLIT_FILES = {
    "train": "new_aan_pairs.train.tsv",
    "validation": "new_aan_pairs.eval.tsv",
    "test": "new_aan_pairs.test.tsv",
}
SUBFOLDERS = ("", "tsv_data", "lra_release/tsv_data")
COLUMNS = 5
LABELS = {0.0: 0, 1.0: 1}
REPORTED_LINES = 20  # malformed lines logged one by one; more are counted


@register
class Retrieval(sources.ByteTextRows, sources.TextPreview, Task):
    """AAN document pairs as two byte-token inputs; malformed lines are reported and skipped."""

    name = "retrieval"
    num_classes = 2
    vocab_size = 257
    max_len = 4000
    num_inputs = 2
    padding_id = 0
    decode = staticmethod(sources.decode_bytes)  # token ids back to text, for previews

    def __init__(self, data_dir=None, max_len=None, seed=0):
        super().__init__(data_dir=data_dir, max_len=max_len, seed=seed)
        self._scans = {}

    def load_split(self, split):
        import tensorflow as tf

        return self._lines(split).map(
            self._parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True
        )

    def rows(self, split):
        for first, second, label in self._lines(split).map(_fields).as_numpy_iterator():
            yield {
                "input1": sources.row_text(first),
                "input2": sources.row_text(second),
                "target": self.target(label),
            }

    def _lines(self, split):
        """The split's valid lines, in file order."""
        import tensorflow as tf

        path = self.files()[sources.check_split(split)]
        valid = tf.constant(self.scan(path).valid)
        lines = tf.data.TextLineDataset(str(path)).enumerate()
        return lines.filter(lambda index, line: valid[index]).map(lambda index, line: line)

    def prepare(self):
        return {split: self.scan(path).summary for split, path in self.files().items()}

    def files(self):
        """{split: path} of the release files; DataNotFoundError if no folder holds them all."""
        root = sources.data_root(self.name, self.data_dir)
        folder = sources.find_folder(root, SPLIT_FILES.values(), SUBFOLDERS)
        if folder is None:
            raise DataNotFoundError(
                f"retrieval: AAN release files {', '.join(SPLIT_FILES.values())} not found in "
                f"{sources.places(root, SUBFOLDERS)}",
                "the LRA release's tsv_data/ files (the AAN data has no public mirror and cannot "
                "be generated)",
                "copy them from a copy of the LRA release (lra_release.gz, folder tsv_data/) and "
                "pass --data-dir=DIR",
            )
        return {split: folder / name for split, name in SPLIT_FILES.items()}

    def scan(self, path):
        """Check every line of `path` once (cached): which lines are valid, and label counts."""
        if path not in self._scans:
            self._scans[path] = scan_lines(path)
        return self._scans[path]

    def location(self):
        """The folder holding the split files."""
        return str(self.files()["train"].parent)

    def _parse(self, line):
        first, second, label = _fields(line)
        inputs = (
            sources.encode_bytes(first, self.max_len),
            sources.encode_bytes(second, self.max_len),
        )
        return inputs, label


def _fields(line):
    """(text1, text2, int32 label) of a valid line; a '\\r' ending the line is not text."""
    import tensorflow as tf

    fields = tf.strings.split(line, "\t")
    label = tf.cast(tf.strings.to_number(fields[0]), tf.int32)
    return fields[3], tf.strings.regex_replace(fields[4], "\r$", ""), label


Scan = collections.namedtuple("Scan", ["valid", "summary"])


def scan_lines(path):
    """Validate an AAN file line by line (split on '\\n' only, as TextLineDataset does): a boolean
    array of valid lines and the split summary. Malformed lines are logged with their number (the
    first REPORTED_LINES one by one, then a count)."""
    valid, labels, skipped = [], collections.Counter(), 0
    progress = Progress(f"retrieval: checking {path}", os.path.getsize(path), "MB", scale=1e6)
    with open(path, "rb") as f:
        for number, line in enumerate(f, start=1):
            progress.update(len(line))
            problem, label = _check_line(line.rstrip(b"\n").rstrip(b"\r"))
            valid.append(problem is None)
            if problem is None:
                labels[label] += 1
                continue
            skipped += 1
            if skipped <= REPORTED_LINES:
                log.warning("%s:%d: skipped malformed line: %s", path, number, problem)
    if skipped > REPORTED_LINES:
        log.warning(
            "%s: skipped %d malformed lines, the first %d listed", path, skipped, REPORTED_LINES
        )
    progress.finish()
    if not labels:
        raise BadDataError(
            f"retrieval: {path} holds no valid line",
            f"{COLUMNS} tab-separated columns: label id1 id2 text1 text2",
            "restore the file from the LRA release (lra_release.gz, folder tsv_data/)",
        )
    summary = {"examples": sum(labels.values()), "labels": dict(sorted(labels.items()))}
    return Scan(np.array(valid, dtype=bool), summary)


def _check_line(line):
    """(None, label) for a valid line, (what is wrong, None) otherwise."""
    fields = line.split(b"\t")
    if len(fields) != COLUMNS:
        return f"{len(fields)} tab-separated columns, expected {COLUMNS}", None
    try:
        label = LABELS.get(float(fields[0]))
    except ValueError:
        label = None
    if label is None:
        return f"label {fields[0][:20].decode('utf-8', 'replace')!r}, expected 0 or 1", None
    return None, label
