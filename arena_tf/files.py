"""Atomic writes: a file or directory appears complete under its final name, or not at all.

`atomic_path(path)` writes into a hidden temporary directory beside `path`, named
`.NAME.PID.RANDOM` (PID: the writing process). A process killed mid-write leaves that directory
behind; `remove_stale_temporaries(path)` removes the ones whose process is gone (every
`atomic_path` call does it for its own path first, and exports do it for all their targets when
they start), so a temporary of a writer still running is never touched.
"""

import contextlib
import json
import os
import pathlib
import re
import shutil
import tempfile

from arena_tf import cli

OLD = "old"  # inside a temporary directory: the previous directory while it is being replaced


def _temporary_prefix(path):
    return f".{path.name}."


def _owner(name, path):
    """The pid that created the temporary directory `name` beside `path`; 0 when the name has
    none (written before temporaries carried their pid); None when `name` is not a temporary
    of `path`."""
    prefix = _temporary_prefix(path)
    if not name.startswith(prefix):
        return None
    match = re.fullmatch(r"(?:(\d+)\.)?[A-Za-z0-9_]{8}", name[len(prefix) :])
    if match is None:
        return None
    return int(match.group(1) or 0)


def _alive(pid):
    if pid <= 0:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stale_temporaries(path):
    """The temporary directories `atomic_path(path)` left beside `path` in processes that no longer
    run (killed mid-write). Only directories holding nothing but `NAME` and `old` count."""
    path = pathlib.Path(path)
    if not path.parent.is_dir():
        return []
    found = []
    for entry in path.parent.iterdir():
        owner = _owner(entry.name, path)
        if owner is None or not entry.is_dir() or entry.is_symlink() or _alive(owner):
            continue
        if {child.name for child in entry.iterdir()} <= {path.name, OLD}:
            found.append(entry)
    return sorted(found)


def remove_stale_temporaries(path):
    """Remove what killed writers of `path` left beside it; the removed paths.

    A writer killed between moving the previous directory aside and moving the new one in left
    `path` missing and the previous version in `old`: that version is put back first."""
    path = pathlib.Path(path)
    removed = []
    for leftover in stale_temporaries(path):
        previous = leftover / OLD
        if previous.exists() and not path.exists():
            os.replace(previous, path)
        shutil.rmtree(leftover, ignore_errors=True)
        removed.append(leftover)
    return removed


@contextlib.contextmanager
def _explained(folder):
    """An OSError of making `folder` or a temporary in it becomes `cli.output_dir`'s one line
    (no probe on the way of a write that succeeds)."""
    try:
        yield
    except OSError:
        cli.output_dir(folder, flag=None)  # raises PlaceError saying why
        raise


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path` (same name); on success it replaces `path` at once.

    Works for files and directories; on error the temporary is removed and `path` is untouched.
    Temporaries that killed writers of `path` left behind are removed first.
    """
    path = pathlib.Path(path)
    with _explained(path.parent):
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path)
        prefix = f"{_temporary_prefix(path)}{os.getpid()}."
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=prefix, dir=path.parent)) / path.name
    try:
        yield tmp
        cli.place_for(path, folder=tmp.is_dir())
        if path.is_dir() and tmp.is_dir():
            old = tmp.parent / OLD
            os.replace(path, old)  # a directory cannot be replaced in one step; keep the old one
            try:  # until the new one is in place
                os.replace(tmp, path)
            except BaseException:
                os.replace(old, path)  # the new one could not move in: the old one goes back
                raise
        else:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


@contextlib.contextmanager
def staged(directory):
    """A temporary directory beside the files a command writes into `directory`: on success each
    file written there replaces its namesake in `directory`; on error none does (a report and its
    plots are written whole or not at all)."""
    directory = pathlib.Path(directory)
    created = not directory.exists()
    with _explained(directory):
        directory.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(directory / STAGE)  # those of killed writers
        stage = pathlib.Path(
            tempfile.mkdtemp(
                prefix=f"{_temporary_prefix(directory / STAGE)}{os.getpid()}.", dir=directory
            )
        )
    try:
        yield stage
        written = sorted(stage.iterdir())
        for each in written:  # every target checked before the first file moves in
            cli.place_for(directory / each.name, folder=each.is_dir())
        for each in written:
            os.replace(each, directory / each.name)
    except BaseException:
        if created:
            shutil.rmtree(directory, ignore_errors=True)  # made for this output alone
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


STAGE = ".staged"  # the name whose temporaries are a staged output's


@contextlib.contextmanager
def atomic_writer(path, mode="w"):
    """An open file that replaces `path` when the block ends without error (text mode: UTF-8,
    '\n' line ends on every platform)."""
    options = {} if "b" in mode else {"newline": "\n", "encoding": "utf-8"}
    with atomic_path(path) as tmp:
        with open(tmp, mode, **options) as handle:
            yield handle


def write_text(path, text):
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def json_text(data):
    """The project's JSON file form: indented, keys sorted, a final newline."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def write_json(path, data):
    write_text(path, json_text(data))


def read_json(path):
    """The JSON in `path`, None where it is missing; a one-line cli.UsageError where it cannot be
    read as JSON (a truncated file, a folder), before anything is written."""
    path = pathlib.Path(path)
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (ValueError, OSError) as error:
        raise cli.UsageError(
            f"{path} cannot be read as JSON ({' '.join(str(error).split())})",
            "the whole JSON file a benchmark or training run wrote",
            f"rerun what writes {path.name}, or move it away",
        ) from None
