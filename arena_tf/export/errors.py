"""The errors an export reports as one line, in the style of every arena_tf command
(`arena_tf.cli`): `<what was wrong>; expected <what>; <how to fix>`.

    ExportError        the export itself failed (tf2onnx, ONNX Runtime, FP32 parity): exit 1
    ExportUsageError   the user's input is wrong (path, file, precision, opset, token ids): exit 2
    ParityError        an FP32 artifact disagrees with Keras beyond its threshold: exit 1

Every one is an `ExportError`, so `except ExportError` (arena_tf/serving/artifacts.py) catches them
all.
"""

from arena_tf import cli


class ExportError(cli.RunError):
    """An export cannot finish: failed conversion, unloadable result or failed FP32 parity."""


class ExportUsageError(cli.UsageError, ExportError):
    """The input of an export (or of a runner) is wrong; the user can fix it. Exit status 2."""


class ParityError(ExportError):
    """An FP32 artifact disagrees with the Keras model beyond the threshold; it was not written.

    `reports`: {artifact path: parity report} of every artifact of the same export, written or
    not (a report's `passed` says which).
    """

    def __init__(self, what, expected=None, fix=None, reports=None):
        super().__init__(what, expected, fix)
        self.reports = reports or {}

    @property
    def published(self):
        """{artifact path: report} of the artifacts that were written."""
        return {path: report for path, report in self.reports.items() if report["passed"]}


def one_line(error, limit=300):
    """An exception (or text) as a single line of at most `limit` characters, for messages."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
