"""The bench's --out directory, claimed for one run at a time.

Two benches given the same --out would each rewrite results.jsonl with their own rows, and the
first one's rows would be lost without a word. `claim` locks the directory (`.bench.lock`,
arena_tf/locks.py: a second bench is refused naming the holder's pid, the lock dies with its
process) and refuses a directory that holds another run's results unless told what to do with
them: `--append` (keep their rows, add these) or `--overwrite` (replace them). A run that did not
finish with every row measured (stopped, crashed, or a row failed) leaves `UNFINISHED` beside its
rows; the next bench on that directory replaces them without being told, so that the command that
failed, run again once its cause is mended, is never refused.
"""

import contextlib
import json
import pathlib

from arena_tf import cli
from arena_tf.locks import FileLock

LOCK_NAME = ".bench.lock"
RESULTS = "results.jsonl"
UNFINISHED = ".unfinished"  # beside the rows of a run that stopped or failed
MODES = ("append", "overwrite")
KEY_FIELDS = ("model", "runtime", "precision", "scenario")  # what names a row, each a string
STATUSES = ("ok", "unsupported", "failed", "invalid")  # how a row ended


def add_arguments(parser):
    """--append / --overwrite, one or the other."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--append",
        dest="existing",
        action="store_const",
        const="append",
        help="--out holds an earlier run's results: keep its rows and add these",
    )
    group.add_argument(
        "--overwrite",
        dest="existing",
        action="store_const",
        const="overwrite",
        help="--out holds an earlier run's results: replace them",
    )


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
        if not isinstance(row, dict) or not {*KEY_FIELDS, "status"} <= row.keys():
            raise cli.UsageError(
                f"{path}:{number} is not a row of serving.bench ({line[:60]!r})",
                "the results.jsonl an earlier serving.bench wrote",
                fix,
            )
        for key in KEY_FIELDS:
            if not isinstance(row[key], str):
                raise cli.UsageError(
                    f"{path}:{number} holds {key} {str(row[key])[:40]!r}",
                    f"a name (a string) for {key}, as serving.bench writes",
                    fix,
                )
        if row["status"] not in STATUSES:
            raise cli.UsageError(
                f"{path}:{number} holds status {str(row['status'])[:40]!r}",
                f"one of {', '.join(STATUSES)}",
                fix,
            )
        rows.append(row)
    return rows


@contextlib.contextmanager
def claim(out, existing=None, say=print):
    """Hold `out` for this run; yields the rows to keep
    (those of results.jsonl with existing='append', else none). UsageError when another bench
    holds it, or when it holds the results of a finished run and `existing` is None (an
    unfinished run's are replaced, `say` telling so)."""
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)

    def busy(who):
        return cli.UsageError(
            f"--out {out} is in use by another serving.bench ({who})",
            "one bench per output directory at a time",
            f"wait for {who} to finish, or pass another --out",
        )

    with FileLock(out / LOCK_NAME, busy=busy):
        results = out / RESULTS
        if results.exists() and existing is None and (out / UNFINISHED).exists():
            rows = read_rows(results)
            before = rows[: earlier_rows(out)]  # an --append run's: not the unfinished run's
            count = len(rows) - len(before)
            say(
                f"replacing the {count} row{'s' * (count != 1)} of an unfinished run in {out}"
                + (f", keeping the {len(before)} before it" if before else "")
            )
            yield before
            return
        if results.exists() and existing is None:
            count = len(read_rows(results))
            rows = f"{count} row{'s' * (count != 1)}"
            raise cli.UsageError(
                f"--out {out} holds another run's results ({RESULTS}, {rows})",
                "an empty or new directory, or --append / --overwrite",
                "pass --append to add these rows to them, --overwrite to replace them, or "
                "another --out",
            )
        yield read_rows(results) if results.exists() and existing == "append" else []


def started(out, earlier=0):
    """Mark the run in `out` unfinished (before its first row) until `finished(out)`; `earlier`:
    how many rows of results.jsonl are an earlier run's (kept with --append), which a rerun
    keeps."""
    (pathlib.Path(out) / UNFINISHED).write_text(f"{earlier}\n")


def earlier_rows(out):
    """How many rows before the unfinished run's its marker records (0 when unreadable)."""
    text = (pathlib.Path(out) / UNFINISHED).read_text(errors="replace").strip()
    return int(text) if text.isdigit() else 0


def finished(out):
    """Mark the run in `out` finished: its rows now need --append or --overwrite to be touched."""
    (pathlib.Path(out) / UNFINISHED).unlink(missing_ok=True)


def unfinished_note(done, total):
    """The results' note while a run is under way (or after it stopped)."""
    return (
        f"unfinished: {done} of {total} rows, not all measured; the same command run "
        "again replaces these rows"
    )
