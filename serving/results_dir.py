"""The bench's --out directory, claimed for one run at a time.

Two benches given the same --out would each rewrite results.jsonl with their own rows, and the
first one's rows would be lost without a word. `claim` locks the directory (`.bench.lock`,
arena_tf/locks.py: a second bench is refused naming the holder's pid, the lock dies with its
process) and refuses a directory that holds another run's results unless told what to do with
them: `--append` (keep their rows, add these) or `--overwrite` (replace them).
"""

import contextlib
import json
import pathlib

from arena_tf import cli
from arena_tf.locks import FileLock

LOCK_NAME = ".bench.lock"
RESULTS = "results.jsonl"
MODES = ("append", "overwrite")


def add_arguments(parser):
    """--append / --overwrite, one or the other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--append", dest="existing", action="store_const", const="append",
                       help="--out holds an earlier run's results: keep its rows and add these")
    group.add_argument("--overwrite", dest="existing", action="store_const", const="overwrite",
                       help="--out holds an earlier run's results: replace them")


OVERWRITE_FIX = "pass --overwrite to replace it, or another --out"


def read_rows(path, fix=OVERWRITE_FIX):
    """The rows of a results.jsonl, each a JSON object with its row's keys; otherwise UsageError,
    whose advice is `fix` (the bench's by default: the reading command's flags differ)."""
    rows = []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            row = "not JSON"
        if row is None:
            continue
        if not isinstance(row, dict) or not {"model", "runtime", "precision", "scenario",
                                             "status"} <= row.keys():
            raise cli.UsageError(f"{path}:{number} is not a row of serving.bench ({line[:60]!r})",
                                 "the results.jsonl an earlier serving.bench wrote",
                                 fix)
        rows.append(row)
    return rows


@contextlib.contextmanager
def claim(out, existing=None):
    """Hold `out` for this run; yields the rows to keep (those of results.jsonl with
    existing='append', else none). UsageError when another bench holds it, or when it holds
    results and `existing` is None."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    def busy(who):
        return cli.UsageError(f"--out {out} is in use by another serving.bench ({who})",
                              "one bench per output directory at a time",
                              f"wait for {who} to finish, or pass another --out")

    with FileLock(out / LOCK_NAME, busy=busy):
        results = out / RESULTS
        if results.exists() and existing is None:
            count = len(read_rows(results))
            rows = f"{count} row{'s' * (count != 1)}"
            raise cli.UsageError(
                f"--out {out} holds another run's results ({RESULTS}, {rows})",
                "an empty or new directory, or --append / --overwrite",
                "pass --append to add these rows to them, --overwrite to replace them, or "
                "another --out")
        yield read_rows(results) if results.exists() and existing == "append" else []
