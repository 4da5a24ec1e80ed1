"""The errors of task data: not found, malformed, or a row not in the task's form (each a user's
mistake in the one-line style of `arena_tf.cli`)."""

from arena_tf.cli import UsageError


class DataNotFoundError(UsageError, RuntimeError):
    """No source could serve a task's data; the message says what was looked for and how to get it.

    A user's mistake (exit 2 on the command line, `arena_tf.cli`): raise it with three parts,
    `DataNotFoundError(what, expected, fix)`, read as `<what>; expected <expected>; <fix>`. Still a
    RuntimeError, for the `except` clauses written before."""


class BadDataError(DataNotFoundError, ValueError):
    """The data is there but not in the task's format (a malformed line, unreadable images,
    generated with other settings); the message names the file (and line) and how to repair it.
    Also a ValueError, as these checks raised before."""


class RowError(UsageError, ValueError):
    """A row that is not in the task's row form (a missing field, a token outside the vocabulary,
    pixels of the wrong count or range); the message says which row and what was expected."""
