"""Generators for the synthetic LRA tasks (ListOps, Pathfinder), deterministic under a seed.

Each writes its output once, in the LRA release format, into a data directory the task then reads,
through `atomic_writer` so that a reader never sees half a file. This package does not import
TensorFlow (generator worker processes stay light).

    from arena_tf.generators import listops
    listops.generate("data/listops", listops.ListOpsSpec(seed=0))   # basic_{train,val,test}.tsv
"""

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_writer(path, mode="w"):
    """Open a temporary file beside `path`; on success it replaces `path` in one rename, on error it
    is removed. Text mode writes '\\n' line ends on every platform."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    text_options = {} if "b" in mode else {"newline": "\n", "encoding": "utf-8"}
    try:
        with os.fdopen(handle, mode, **text_options) as f:
            yield f
        os.chmod(temp, 0o644)  # mkstemp made it private; the data is not
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
