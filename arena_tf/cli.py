"""One error style for every command of the garden.

A user's mistake prints one line on stderr and exits 2; a failure of the run itself prints one line
and exits 1; `--debug` shows the traceback instead. The line reads

    error: <what was wrong>; expected <what>; <how to fix>

Commands raise `UsageError` / `RunError` (or subclasses) with those three parts, parse their
arguments with `ArgumentParser` (whose own errors take the same form) and call `run_main`:

    def main(argv=None):
        args = parser.parse_args(argv)
        return run_main(lambda: run(args), debug=args.debug)

`run_main` is each command's one error boundary: any other exception is one line `error: internal
error: <type>: <message>; ...; rerun with --debug` (exit 1), Ctrl-C one line (exit 130), a reader
that left stdout (`| head`) a quiet exit 141. Before any of that, each command calls
`prepare_process` first thing when run as a program, before TensorFlow and Keras are imported: it
quiets TensorFlow's C++ log, checks KERAS_BACKEND (Keras' own import would fail with a traceback)
and makes a Ctrl-C while TensorFlow imports the same one line. Importing arena_tf as a library does
none of that: the process is the importer's.
"""

import argparse
import importlib.util
import math
import os
import pathlib
import select
import sys
import tempfile

from arena_tf import precision as precisions

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


class PlaceError(UsageError):
    """A place a command cannot write (`output_dir`, `place_for`): exit 2. `what` says why."""


class RunError(CommandError):
    """The run itself failed (diverged, crashed, nothing measured): exit 1."""

    exit_code = EXIT_FAILURE


def report(error, stream=None):
    """Print `error: <message>` (its first line only) on stderr; `error` may be the line itself."""
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
    """Call `body()` and return its exit status (None means 0): the one error boundary of a command.

    `CommandError`s, and the exception types listed in `usage` (exit 2) or `failures` (exit 1),
    become their one line on stderr; any other exception is a bug, reported in one line as an
    internal error (exit 1); Ctrl-C is one line and exit 130; output whose reader went away
    (`... | head`) ends the command quietly with 141. `debug` (or ARENA_TF_DEBUG) re-raises instead,
    for the traceback.
    """
    debug = debug or bool(os.environ.get("ARENA_TF_DEBUG"))
    try:
        status = body() or 0
        sys.stdout.flush()  # a reader gone shows here, not in Python's flush at exit
        return status
    except BaseException as error:  # noqa: BLE001 (the boundary: every error becomes one line)
        if debug or isinstance(error, SystemExit):
            raise
        return ended(error, usage, failures)


def ended(error, usage=(), failures=()):
    """The exit status for `error` caught at a command's boundary, its one line printed."""
    if stdout_reader_left(error):
        # What is left in stdout's buffer would fail again when Python flushes it at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    line, status = outcome(error, usage, failures)
    report(line)
    return status


def outcome(error, usage=(), failures=()):
    """(the one line, the exit status) for `error`: a CommandError's own; a listed exception's
    message (exit 2 for `usage`, 1 for `failures`); Ctrl-C; memory that ran out (exit 1);
    anything else an internal error."""
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED, EXIT_INTERRUPTED
    if isinstance(error, MemoryError):
        return error_line(
            f"out of memory ({' '.join(str(error).split())[:200] or 'MemoryError'})",
            "a run that fits in the memory available",
            "ask for less (fewer examples, a smaller batch or length)",
        ), EXIT_FAILURE
    if isinstance(error, CommandError):
        return str(error), error.exit_code
    if isinstance(error, tuple(usage) + tuple(failures)):
        status = EXIT_USAGE if isinstance(error, tuple(usage)) else EXIT_FAILURE
        styled = "; expected " in str(error)
        return (str(error) if styled else error_line(error, *KNOWN_EXPECTED[status])), status
    return internal_error_line(error), EXIT_FAILURE


EXIT_INTERRUPTED = 130  # the shells' status of a command stopped by Ctrl-C (128 + SIGINT)
INTERRUPTED = error_line(
    "interrupted (Ctrl-C)",
    "the command to run to its end",
    "rerun it; outputs are written whole or not at all",
)
KNOWN_EXPECTED = {  # the rest of the line for a listed exception that does not say it
    EXIT_USAGE: ("the inputs the command's --help describes", "correct them and rerun"),
    EXIT_FAILURE: (
        "the run to complete",
        "check the paths, permissions and free disk space, "
        "then rerun (--debug shows the traceback)",
    ),
}


def internal_error_line(error):
    """`internal error: <type>: <message>; expected ...; ... rerun with --debug`, one line."""
    message = " ".join(str(error).split())[:300] or "(no message)"
    return error_line(
        f"internal error: {type(error).__name__}: {message}",
        "no internal error",
        "please report it; rerun with --debug for the traceback",
    )


def stdout_reader_left(error):
    """True when `error` (or the error it was raised from) is a broken pipe on a stdout whose
    reader is gone; a child process's broken pipe is not the user's doing."""
    causes = (error, error.__cause__, error.__context__)
    return any(isinstance(e, BrokenPipeError) for e in causes) and stdout_reader_gone()


def quiet_interrupts():
    """Ctrl-C outside a command's boundary (while TensorFlow imports, before `run_main` is
    called) prints the one line instead of a traceback (ARENA_TF_DEBUG keeps the traceback); the
    process still ends by SIGINT (status 130 in a shell). `prepare_process` installs it."""
    previous = sys.excepthook

    def hook(kind, error, traceback):
        if issubclass(kind, KeyboardInterrupt) and not os.environ.get("ARENA_TF_DEBUG"):
            report(INTERRUPTED)
            return
        previous(kind, error, traceback)

    sys.excepthook = hook


KERAS_BACKENDS = ("tensorflow", "jax", "torch", "numpy", "openvino")
RUNS_ON = {"tensorflow": "tf", "jax": "jax"}  # the backends arena_tf runs on: their setup.py extras


def check_keras_backend(environ=os.environ):
    """Exit with one line (status 2) when KERAS_BACKEND names a backend arena_tf does not run on,
    or one whose package is not installed: Keras' own import would fail with a traceback (or warn)
    before any command could report it. Call before Keras is imported (`prepare_process` does)."""
    name = environ.get("KERAS_BACKEND")
    if name is None:
        return
    expected = "tensorflow or jax, the backends arena_tf runs on"
    fix = "set KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax, or unset it"
    if name not in RUNS_ON:
        kind = (
            "a Keras backend arena_tf does not run on"
            if name in KERAS_BACKENDS
            else ("not a Keras backend")
        )
        line = error_line(f"KERAS_BACKEND={name!r} is {kind}", expected, fix)
    elif importlib.util.find_spec(name) is None:
        line = error_line(
            f"KERAS_BACKEND={name} but {name} is not installed",
            f"{name} installed, or another backend arena_tf runs on",
            f'install it: pip install -c constraints.txt -e ".[{RUNS_ON[name]}]"',
        )
    else:
        return
    report(line)
    raise SystemExit(EXIT_USAGE)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """The one --help layout: the description as written, then each flag with its help and its
    default (unless the help already says it)."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=32, width=100)

    def _format_args(self, action, default_metavar):
        if isinstance(action, Items):  # `--tasks NAME,...`, not argparse's `NAME [NAME ...]`
            name = self._metavar_formatter(action, default_metavar or action.dest.upper())(1)[0]
            return f"{name},..." if action.nargs != "*" else f"[{name},...]"
        return super()._format_args(action, default_metavar)

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or "default" in text
            or default is argparse.SUPPRESS
            or default in (None, False, [])
        ):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})".strip()


GRAMMAR = (
    "flags are --kebab-case (also accepted with underscores for hyphens); a list takes\n"
    "commas or spaces (--tasks a,b or --tasks a b); precision is fp32, bf16 or fp16;\n"
    "--debug shows the traceback of an error"
)


def kebab(name):
    """`--data_dir` -> `--data-dir`; positional names and short flags unchanged."""
    return "--" + name[2:].replace("_", "-") if name.startswith("--") else name


def output_file(path, flag="--out", example="out.jsonl", inputs=()):
    """`path` as a file a command may write: UsageError when it names a directory, one of the
    files the command reads (`inputs`), or its folder cannot be made or written (`output_dir`),
    found before anything is written."""
    path = pathlib.Path(path)
    if path.is_dir():
        raise UsageError(
            f"{flag} {path} is a directory",
            "the path of a file to write",
            f"name a file, e.g. {flag} {path / example}",
        )
    read = next((p for p in map(pathlib.Path, inputs) if same_file(p, path)), None)
    if read is not None:
        also = f" ({read})" if str(read) != str(path) else ""
        raise UsageError(
            f"{flag} {path} is one of the files this command reads{also}",
            "an output apart from the inputs",
            f"name another file, e.g. {flag} {path.parent / example}",
        )
    output_dir(path.parent, flag, make=False)
    return path


def same_file(a, b):
    """Whether paths `a` and `b` name one file (through links where both exist)."""
    a, b = pathlib.Path(a), pathlib.Path(b)
    return os.path.samefile(a, b) if a.exists() and b.exists() else a.resolve() == b.resolve()


def output_dir(path, flag="--out-dir", make=True):
    """`path` as a folder a command may write into: UsageError, before anything is written, when a
    file stands there or on its way, or it cannot be made or written (no such place, no
    permission, a read-only disk). `flag`: the option that named it (None for a place the command
    chose). `make`: make it now (else only its nearest existing folder is tried, so that a
    command that fails later leaves no empty folder)."""
    path = pathlib.Path(path)
    named, fix = (
        (f"{flag} {path}", f"choose another {flag}")
        if flag
        else (f"{path}", "free that place or write elsewhere")
    )
    nearest = next(p for p in (path, *path.parents) if p.exists())
    if not nearest.is_dir():
        where = "" if nearest == path else f": {nearest}"
        raise PlaceError(
            f"{named}{where} is a file, not a folder",
            "a folder, or a path whose folders are folders",
            fix,
        )
    try:
        if make:
            path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path if make else nearest).close()  # what mkdir lets through
    except OSError as error:
        raise PlaceError(
            f"{named}: cannot write there ({error.strerror or error})",
            "a folder this user can create and write",
            fix,
        ) from None
    return path


def place_for(path, folder):
    """UsageError when something of the other kind stands at `path`, where a folder (`folder`
    true) or a file is to be written: a file is not replaced by a folder, nor a folder by a file."""
    path = pathlib.Path(path)
    found, wanted = ("file", "folder") if folder else ("folder", "file")
    if os.path.lexists(path) and path.is_dir() != folder:  # a dangling link counts as a file
        raise PlaceError(
            f"{path} is a {found}, where a {wanted} is to be written",
            f"a {wanted} or nothing at that path",
            f"move that {found} away, or write elsewhere",
        )
    return path


class ArgumentParser(argparse.ArgumentParser):
    """argparse in the garden's one grammar: `--kebab-case` flags (a flag declared `--snake_case`
    is registered as `--snake-case`; the underscore spelling stays accepted, hidden from --help),
    one --help layout (`HelpFormatter`, `GRAMMAR` as epilog), `--debug` (before or after a
    subcommand) and usage errors in the one-line style (exit 2)."""

    debug_default = False

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("epilog", GRAMMAR)
        super().__init__(*args, **kwargs)
        self.add_argument(
            "--debug",
            action="store_true",
            default=self.debug_default,
            help="show the full traceback of an error instead of one line",
        )

    def _add_action(self, action):
        action.option_strings = list(dict.fromkeys(map(kebab, action.option_strings)))
        return super()._add_action(action)

    def _add_container_actions(self, container):  # parents=[...]: their flags become kebab too
        for action in container._actions:
            action.option_strings = list(dict.fromkeys(map(kebab, action.option_strings)))
        return super()._add_container_actions(container)

    def add_argument_group(self, *args, **kwargs):
        return kebab_group(super().add_argument_group(*args, **kwargs))

    def add_subparsers(self, **kwargs):
        kwargs.setdefault("parser_class", SubcommandParser)
        return super().add_subparsers(**kwargs)

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(self.kebab_flags(args), namespace)

    def kebab_flags(self, args):
        """`args` with each `--snake_case[=value]` of a flag this parser knows as `--snake-case`
        spelled that way (before a `--`); other tokens, and a subcommand's flags, unchanged."""
        out = []
        for position, token in enumerate(args):
            if token == "--":
                return out + args[position:]
            name, equals, value = token.partition("=")
            if name.startswith("--") and kebab(name) in self._option_string_actions:
                token = kebab(name) + equals + value
            out.append(token)
        return out

    def error(self, message):
        self.exit(
            EXIT_USAGE,
            f"error: {message}; expected the arguments in "
            f"`{self.prog} --help`; fix the command line\n",
        )


def kebab_group(group):
    """An argument group whose flags are registered in kebab case, as the parser's own."""
    add = group.add_argument
    group.add_argument = lambda *names, **kwargs: add(*map(kebab, names), **kwargs)
    return group


class SubcommandParser(ArgumentParser):
    """A subcommand's parser: its --debug only sets the flag, never resets the main parser's."""

    debug_default = argparse.SUPPRESS


def whole_number(minimum):
    """argparse type: a whole number >= `minimum`, e.g. `type=cli.whole_number(0)`."""

    def parse(text):
        if not str(text).strip().isdecimal() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= {minimum}")
        return int(text)

    return parse


positive_int = whole_number(1)  # argparse type: a count of at least 1


def positive_number(text):
    """A finite number above 0 (argparse's type): NaN and infinity are refused too."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a finite number above 0")
    return value


class Items(argparse.Action):
    """A list flag, given comma- or space-separated (`--tasks a,b` or `--tasks a b`; given twice,
    the last one counts, as any flag): `type` converts each item and `choices` checks it.

        parser.add_argument("--seeds", action=cli.Items, type=cli.whole_number(0), default=[0])
    """

    def __init__(self, option_strings, dest, nargs="+", type=None, choices=None, **kwargs):
        self.item_type, self.allowed = type or str, choices
        if choices is not None and "metavar" not in kwargs:
            kwargs["metavar"] = "{" + ",".join(map(str, choices)) + "}"
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        items = [part.strip() for value in values for part in str(value).split(",")]
        items = [self.item(part) for part in items if part]
        if not items and self.nargs != "*":
            raise argparse.ArgumentError(self, "expected at least one item")
        setattr(namespace, self.dest, items)

    def item(self, text):
        try:
            value = self.item_type(text)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as error:
            raise argparse.ArgumentError(self, f"invalid item {text!r} ({error})") from None
        if self.allowed is not None and value not in self.allowed:
            raise argparse.ArgumentError(
                self, f"invalid choice: {text!r} (choose from {', '.join(map(repr, self.allowed))})"
            )
        return value


def precision(text):
    """argparse type: a precision in any spelling of arena_tf.precision (fp32, fp16, bf16, or
    Keras's policy names) -> the short name."""
    try:
        return precisions.short_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def keras_precision(text):
    """argparse type: a precision in any spelling -> Keras's dtype policy name."""
    return precisions.POLICIES[precision(text)]


def prepare_process():
    """What a command does to its own process before TensorFlow and Keras are imported: print one
    line for a Ctrl-C outside the command's boundary (`quiet_interrupts`), quiet TensorFlow's C++
    log (`quiet_tensorflow`) and exit with one line on a KERAS_BACKEND arena_tf does not run on
    (`check_keras_backend`). Each command calls it at its top when run as a program; the library
    never does."""
    quiet_interrupts()
    quiet_tensorflow()
    check_keras_backend()


def quiet_tensorflow():
    """Hide TensorFlow's C++ log (oneDNN notices, the failed CUDA probe of a machine without a GPU)
    unless the user set TF_CPP_MIN_LOG_LEVEL; Python exceptions still report real errors.
    Call before TensorFlow is imported."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
