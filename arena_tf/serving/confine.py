"""Paths a model process may read or write on request, confined to one directory.

The offline scenario names an input and an output file in its request; the worker reads and writes
only inside the directory given on its own command line (`--offline-dir`; the bench passes the work
directory it created), whatever the request says. Independent of the wire format: it checks path
strings, wherever they came from.

    path = confine.inside(request_path, root, "output_file")   # resolved Path, or OutsideDirectory
    with confine.open_output(path) as out: ...                  # refuses a symlink put there since
"""

import os
import pathlib


class OutsideDirectory(ValueError):
    """A requested path that resolves outside the allowed directory (or no directory allowed)."""


def inside(path, root, what="path"):
    """`path` resolved (symlinks followed, relative to the current directory), if it lies inside
    directory `root`; OutsideDirectory otherwise. `root` None allows nothing."""
    if root is None:
        raise OutsideDirectory(
            f"{what} {str(path)[:200]!r} refused: this model process allows no "
            "file access; expected it started with --offline-dir DIR naming "
            "where offline files may be read and written"
        )
    base = pathlib.Path(root).resolve()
    try:
        resolved = pathlib.Path(os.fsdecode(path)).resolve()
    except (TypeError, ValueError, OSError) as error:
        raise OutsideDirectory(
            f"{what} {str(path)[:200]!r} is not a usable path ({error}); "
            f"expected a file inside {base}"
        ) from None
    if resolved == base or not resolved.is_relative_to(base):
        raise OutsideDirectory(
            f"{what} {str(path)[:200]!r} is outside the offline directory "
            f"{base}; expected a file inside it (--offline-dir)"
        )
    return resolved


def open_output(path):
    """Open a checked output path for writing (text), without following a symlink at the path
    itself (one created after the check cannot redirect the write)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as error:
        raise OutsideDirectory(
            f"output_file {str(path)[:200]!r} cannot be written safely "
            f"({error.strerror}); expected a plain file path"
        ) from None
    return os.fdopen(fd, "w")
