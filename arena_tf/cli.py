"""One error style for every command of the garden.

A user's mistake prints one line on stderr and exits 2; a failure of the run itself prints one line
and exits 1; `--debug` shows the traceback instead. The line reads

    error: <what was wrong>; expected <what>; <how to fix>

Commands raise `UsageError` / `RunError` (or subclasses) with those three parts, parse their
arguments with `ArgumentParser` (whose own errors take the same form) and call `run_main`:

    def main(argv=None):
        args = parser.parse_args(argv)
        return run_main(lambda: run(args), debug=args.debug)
"""

import argparse
import os
import select
import sys

EXIT_USAGE = 2
EXIT_FAILURE = 1
EXIT_BROKEN_PIPE = 141  # the shells' status of a writer whose reader left (128 + SIGPIPE)


def error_line(what, expected=None, fix=None):
    """The one line: `what; expected EXPECTED; FIX`, omitting missing parts."""
    parts = [str(what).strip().splitlines()[0] if str(what).strip() else "unknown error"]
    if expected:
        parts.append(f"expected {expected}")
    if fix:
        parts.append(str(fix))
    return "; ".join(parts)


class CommandError(Exception):
    """An error a command reports in one line. `exit_code` says whose fault it was."""

    exit_code = EXIT_FAILURE

    def __init__(self, what, expected=None, fix=None):
        self.what, self.expected, self.fix = what, expected, fix
        super().__init__(error_line(what, expected, fix))


class UsageError(CommandError):
    """The user's mistake (bad argument, bad file, bad config): exit 2."""

    exit_code = EXIT_USAGE


class RunError(CommandError):
    """The run itself failed (diverged, crashed, nothing measured): exit 1."""

    exit_code = EXIT_FAILURE


def report(error, stream=None):
    """Print `error: <message>` (its first line only) on stderr."""
    message = str(error).strip().splitlines()
    print(f"error: {message[0] if message else type(error).__name__}", file=stream or sys.stderr)


def stdout_reader_gone():
    """True when stdout is a pipe whose reading end is closed (poll reports an error on it)."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a descriptor
        return False
    poller = select.poll()
    poller.register(descriptor, 0)  # errors and hang-ups are reported whatever is asked
    return any(events & select.POLLERR for _, events in poller.poll(0))


def run_main(body, debug=False, usage=(), failures=()):
    """Call `body()` and return its exit status (None means 0).

    `CommandError`s, and the exception types listed in `usage` (exit 2) or `failures` (exit 1),
    become one line on stderr; anything else is a bug and keeps its traceback. `debug` re-raises.
    Output whose reader went away (`... --list | head`) ends the command quietly (exit 141); a
    broken pipe elsewhere (a child process's) is not the user's doing and keeps its traceback.
    """
    try:
        return body() or 0
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        # What is left in stdout's buffer would fail again when Python flushes it at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except (CommandError, *usage, *failures) as error:
        if debug or os.environ.get("ARENA_TF_DEBUG"):
            raise
        report(error)
        if isinstance(error, CommandError):
            return error.exit_code
        return EXIT_USAGE if isinstance(error, tuple(usage)) else EXIT_FAILURE


class ArgumentParser(argparse.ArgumentParser):
    """argparse with `--debug` (before or after a subcommand) and usage errors in the one-line
    style (exit 2)."""

    debug_default = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument("--debug", action="store_true", default=self.debug_default,
                          help="show the full traceback of an error instead of one line")

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("parser_class", SubcommandParser)
        return super().add_subparsers(**kwargs)

    def error(self, message):
        self.exit(EXIT_USAGE, f"error: {message}; expected the arguments in "
                              f"`{self.prog} --help`; fix the command line\n")


class SubcommandParser(ArgumentParser):
    """A subcommand's parser: its --debug only sets the flag, never resets the main parser's."""

    debug_default = argparse.SUPPRESS


def quiet_tensorflow():
    """Hide TensorFlow's C++ log (oneDNN notices, the failed CUDA probe of a machine without a GPU)
    unless the user set TF_CPP_MIN_LOG_LEVEL; Python exceptions still report real errors.
    Call before TensorFlow is imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
