"""What a training run fails with, each one line on the command line (`arena_tf.cli`): exit 2
for a mistake in the input (config, data, run directory), exit 1 when the run itself fails
(diverged, stopped by TensorFlow), 130 for Ctrl-C; and TensorFlow's long error messages cut to the
line that says what went wrong."""

import re

from arena_tf import cli


class RunDirError(cli.UsageError):
    """The run directory cannot take this run: unwritable, busy, another configuration's, or its
    checkpoints are unreadable (exit 2)."""


class StrategyError(cli.UsageError, RuntimeError):
    """The requested hardware or distribution is absent, unreachable or misconfigured, or has no
    meaning on this backend (exit 2)."""


class DataMismatchError(cli.UsageError):
    """The data and the config disagree (length, inputs, labels, token ids) (exit 2)."""


class TrainingError(cli.RunError, RuntimeError):
    """The run itself failed (the loss or weights diverged, TensorFlow stopped a step) (exit 1)."""


class Interrupted(cli.RunError):
    """Ctrl-C: the step reached and where a rerun resumes (exit 130, as shells report SIGINT)."""

    exit_code = 130


def first_line(error):
    """The first non-empty line of an exception's message (its type name if none)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def op_error_cause(error):
    """The line of a TensorFlow OpError that says what went wrong, not `Graph execution error:`
    and the Python stack TensorFlow appends."""
    message = getattr(error, "message", None) or str(error)
    causes = [
        line.strip()
        for line in message.splitlines()
        if line.strip()
        and not line[0].isspace()
        and not line.startswith(("[[", "Detected at node"))
        and line.strip() not in ("Graph execution error:",)
    ]
    cause = causes[-1] if causes else first_line(error)
    cause = re.sub(r"\s*\[\[.*$|\s*\[Op:.*$", "", cause)
    cause = cause.split("  ")[0].strip() or cause  # details after two spaces: label lists, shapes
    return cause if len(cause) <= 300 else cause[:297] + "..."
