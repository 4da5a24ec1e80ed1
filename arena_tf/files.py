"""Atomic writes: a file or directory appears complete under its final name, or not at all."""

import contextlib
import json
import os
import pathlib
import shutil
import tempfile


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside `path` (same suffix); on success it replaces `path` at once.

    Works for files and directories; on error the temporary is removed and `path` is untouched.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent)) / path.name
    try:
        yield tmp
        if path.is_dir() and tmp.is_dir():
            old = tmp.parent / "old"
            os.replace(path, old)  # a directory cannot be replaced in one step; keep the old one
            os.replace(tmp, path)  # until the new one is in place
        else:
            os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


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


def write_json(path, data):
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
