"""The errors an export reports as one line (what was wrong, what was expected, how to fix it)."""


class ExportError(RuntimeError):
    """An export cannot run or cannot finish: bad input, failed conversion or failed parity."""


class ParityError(ExportError):
    """A new artifact disagrees with the Keras model beyond the thresholds; nothing was replaced.

    `published`: {artifact path: parity report} of the artifacts of the same export that passed.
    """

    def __init__(self, message, published=None):
        super().__init__(message)
        self.published = published or {}


def one_line(error, limit=300):
    """An exception (or text) as a single line of at most `limit` characters, for messages."""
    text = " ".join(str(error).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
