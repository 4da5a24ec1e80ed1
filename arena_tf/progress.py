"""Progress lines for long data steps (generating, checking, counting), on stderr.

A step reports what it has done with `update(count)`; a line is printed when at least `every`
seconds (default 3, `ARENA_TF_PROGRESS_EVERY`) have passed since the start or the last line, so a
step shorter than that prints nothing and a longer one is never silent for more than a few seconds:

    with Progress("listops: generating into data/listops", total=100_000, unit="expressions") as p:
        for shard in shards:
            p.update(len(shard))
    # listops: generating into data/listops: 12,000/100,000 expressions (12%), 4,000/s, ETA 22 s
    # listops: generating into data/listops: 100,000 expressions in 25 s   (only after a line)

`with progress.ticking():` also prints while no update arrives (work done in large pieces).

Lines go straight to stderr (not through `logging`), so they show under any command, training
included, whatever logging is configured. `clock` is this module's time source (tests replace it).
No TensorFlow here: generator workers import this module.
"""

import contextlib
import os
import sys
import threading
import time

EVERY_ENV = "ARENA_TF_PROGRESS_EVERY"
DEFAULT_EVERY = 3.0

clock = time.monotonic


def interval():
    """Seconds between lines: ARENA_TF_PROGRESS_EVERY, else 3 (0 prints a line at every update)."""
    try:
        return max(0.0, float(os.environ.get(EVERY_ENV, DEFAULT_EVERY)))
    except ValueError:
        return DEFAULT_EVERY


def duration(seconds):
    """'35 s', '4 min 05 s' or '2 h 03 min'."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Counts work done towards `total` (None when unknown) and prints a line every few seconds:
    done/total, share, rate and ETA. `scale` divides the counts for display (1e6 with unit 'MB'
    for a count of bytes)."""

    def __init__(self, what, total=None, unit="", every=None, scale=1, stream=None):
        self.what, self.total, self.unit, self.scale = what, total, unit, scale
        self.every = interval() if every is None else every
        self.stream = stream
        self.started = self.shown_at = clock()
        self.done = 0
        self.lines = 0
        self._lock = threading.Lock()

    def update(self, count=1):
        with self._lock:
            self.done += count
            now = clock()
            if now - self.shown_at < self.every:
                return
            self.shown_at = now
            text = self.line(now)
        self._print(text)

    def line(self, now=None):
        """The progress line for the work done so far."""
        elapsed = max((clock() if now is None else now) - self.started, 1e-9)
        rate = self.done / elapsed
        shown = f"{self._count(self.done)}"
        if self.total:
            share = f"{self.done / self.total:.0%}"
            shown += f"/{self._count(self.total)} {self.unit} ({share})".replace("  ", " ")
        elif self.unit:
            shown += f" {self.unit}"
        if not self.done:
            return f"{self.what}: {shown}, nothing finished yet after {duration(elapsed)}"
        shown += f", {self._count(rate)}{'' if self.scale == 1 else ' ' + self.unit}/s"
        if self.total:
            shown += f", ETA {duration(max(self.total - self.done, 0) / rate)}"
        return f"{self.what}: {shown}"

    def finish(self):
        """After a progress line was printed: one closing line with the count and the time."""
        if self.lines:
            seconds = clock() - self.started
            self._print(f"{self.what}: {self._count(self.done)} {self.unit} in "
                        f"{duration(seconds)}".replace("  ", " "))

    @contextlib.contextmanager
    def ticking(self):
        """Also print from a background thread while no update comes (work handed out in large
        pieces, e.g. to worker processes): the line repeats the count with the elapsed rate."""
        stop = threading.Event()

        def tick():
            while not stop.wait(max(self.every, 1.0)):
                self.update(0)

        thread = threading.Thread(target=tick, name="progress", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        if kind is None:
            self.finish()
        return False

    def _count(self, value):
        value = value / self.scale
        return f"{value:,.0f}" if self.scale == 1 or value >= 10 else f"{value:,.1f}"

    def _print(self, text):
        self.lines += 1
        stream = self.stream or sys.stderr
        print(text, file=stream, flush=True)
