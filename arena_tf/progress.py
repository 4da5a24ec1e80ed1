"""Progress on the console for long work, never silent for more than a few seconds: one class for
the data steps (generating, checking, counting) and for training.

Counting work: `update(count)` adds what was done; a line is printed when at least `every` seconds
(default 3, `ARENA_TF_PROGRESS_EVERY`) passed since the start or the last line, so a step shorter
than that prints nothing; a closing line follows when a line was printed:

    with Progress("listops: generating into data/listops", total=100_000, unit="expressions") as p:
        for shard in shards:
            p.update(len(shard))
    # listops: generating into data/listops: 12,000/100,000 expressions (12%), 4,000/s, ETA 22 s
    # listops: generating into data/listops: 100,000 expressions in 25 s   (only after a line)

`with progress.ticking():` also prints while no update arrives (work done in large pieces).

Training (`Progress.steps(total)`, on stdout): `stepped(step)` as steps finish, `log(step, values)`
for the log_every lines (Keras's bar redrawn in place on a terminal, plain lines in a file or pipe,
where Keras's Progbar would make one endless line of backspaces), `note(text)` for a line of its
own, and `working(what)` / `advance()` for a named phase (compiling, evaluating, saving) whose
status line gives its batches and time. A background thread prints the status while one call
blocks; `thread=False` starts none (tests call `tick()`).

Lines go straight to the stream (not through `logging`), so they show whatever logging is
configured. `clock` is this module's time source (tests replace it, or pass `clock=`). No
TensorFlow here: generator workers import this module (Keras only for a terminal's bar).
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
    """Work done towards `total` (None when unknown), shown every `every` seconds.

    Args:
        what: what is being done, the lines' prefix (None for training's step lines).
        total: the count (or last step) the work reaches, None when unknown.
        unit: what is counted ('expressions'); `scale` divides counts for display (1e6 with 'MB').
        stream: where lines go (default: stderr, looked up at each line).
        enabled: False prints nothing.
        clock: the time source (default: this module's `clock`, looked up at each reading).
        thread: False never starts the background status thread.
        bar: Keras's progress bar when `stream` is a terminal (training).
    """

    def __init__(
        self,
        what=None,
        total=None,
        unit="",
        every=None,
        scale=1,
        stream=None,
        enabled=True,
        clock=None,
        thread=True,
        bar=False,
    ):
        self.what, self.unit, self.scale = what, unit, scale
        self.every = interval() if every is None else every
        self.stream, self.enabled, self.thread, self.wants_bar = stream, enabled, thread, bar
        self._clock = clock
        self.lock = threading.RLock()
        self.bar, self.mid_line = None, False
        self.started = self.shown_at = self.now()
        self.done = self.lines = 0
        self.phase = None  # [what, started, done, of] of the phase under way
        self.step = None
        self.timed_from = None  # (clock, step) after the first (compiling) step: the speed's base
        self._stop, self._thread = threading.Event(), None
        self._total = None
        self.total = total

    @classmethod
    def steps(cls, total, enabled=True, stream=None, every=None, clock=None, thread=True):
        """The trainer's progress: steps towards `total`, on stdout, with a bar on a terminal."""
        return cls(
            None,
            total,
            "steps",
            every=every,
            stream=stream or sys.stdout,
            enabled=enabled,
            clock=clock,
            thread=thread,
            bar=True,
        )

    def now(self):
        return (self._clock or clock)()

    @property
    def total(self):
        """The count the work reaches; setting it on an enabled terminal (training) makes the
        bar."""
        return self._total

    @total.setter
    def total(self, total):
        self._total = total
        terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        if (
            self.wants_bar
            and self.enabled
            and total
            and terminal
            and (self.bar is None or self.bar.target != total)
        ):
            import keras  # a terminal's bar only: the data steps' workers never load Keras

            self.bar = keras.utils.Progbar(total, stateful_metrics=["loss", "accuracy", "steps/s"])

    # -- what the caller reports ----------------------------------------------------------------

    def update(self, count=1):
        """`count` more units of work done."""
        with self.lock:
            self.done += count
        self.tick()

    def stepped(self, step):
        """Training reached `step`; the first call marks the end of the compiling step."""
        with self.lock:
            self.step = step
            if self.timed_from is None:
                self.timed_from = (self.now(), step)
        self.tick()

    def log(self, step, values):
        """A log_every line: the step and {name: value}, with the ETA while steps remain."""
        with self.lock:
            self.step = step
            if self.bar:
                self.bar.update(step, list(values.items()))
                self.mid_line = step < self.total
                self.shown_at = self.now()
            elif self.enabled:
                shown = ", ".join(f"{name} {value:.4g}" for name, value in values.items())
                eta = self.eta()
                self.note(f"step {step}/{self.total}: {shown}" + (f", ETA {eta}" if eta else ""))

    def note(self, text):
        """A line of its own (below the bar on a terminal)."""
        with self.lock:
            if self.enabled:
                self._print(text)
                self.shown_at = self.now()

    @contextlib.contextmanager
    def working(self, what, of=None, announce=None):
        """A phase under way (`advance` counts its batches, `of` is their number when known):
        status lines name it. `announce` is a line printed at once."""
        with self.lock:
            outer, self.phase = self.phase, [what, self.now(), 0, of]
            if announce:
                self.note(announce)
        self._start()
        try:
            yield self
        finally:
            with self.lock:
                self.phase = outer

    def advance(self, count=1):
        """One more batch of the phase under way."""
        with self.lock:
            if self.phase:
                self.phase[2] += count
        self.tick()

    @contextlib.contextmanager
    def ticking(self):
        """Also print from a background thread while no update comes (work handed out in large
        pieces, e.g. to worker processes): the line repeats the count with the elapsed rate."""
        self._start()
        try:
            yield self
        finally:
            self.close()

    def finish(self):
        """After a progress line was printed: one closing line with the count and the time."""
        if self.lines and self.enabled:
            seconds = self.now() - self.started
            self._print(
                f"{self.what}: {self._count(self.done)} {self.unit} in {duration(seconds)}".replace(
                    "  ", " "
                )
            )

    def close(self):
        """Stop the status thread."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, trace):
        self.close()
        if kind is None:
            self.finish()
        return False

    # -- status lines ---------------------------------------------------------------------------

    def line(self, now=None):
        """The counting line for the work done so far: done/total, share, rate and ETA."""
        elapsed = max((self.now() if now is None else now) - self.started, 1e-9)
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

    def rate(self):
        """Steps per second since the first step (compilation excluded), None before it is known."""
        if self.timed_from is None or self.step is None:
            return None
        began, first = self.timed_from
        elapsed = self.now() - began
        if self.step <= first or elapsed <= 0:
            return None
        return (self.step - first) / elapsed

    def eta(self):
        """The time left at the current speed ('1 min 05 s'), None when unknown or done."""
        rate = self.rate()
        if not rate or not self.total or self.step >= self.total:
            return None
        return duration((self.total - self.step) / rate)

    def status(self, now=None):
        """The status line for now: the phase under way, else the count (`what` given), else the
        step with steps/s and ETA; None when nothing is under way."""
        if self.phase:
            what, started, done, of = self.phase
            count = f"batch {done}/{of}" if of else (f"batch {done}" if done else "")
            elapsed = f"{duration((self.now() if now is None else now) - started)} so far"
            return f"{what}: " + ", ".join(part for part in (count, elapsed) if part)
        if self.what is not None:
            return self.line(now)
        if self.step is None:
            return None
        rate, eta = self.rate(), self.eta()
        text = f"step {self.step}/{self.total}"
        if rate:
            text += f": {rate:.3g} steps/s" + (f", ETA {eta}" if eta else "")
        return text

    def tick(self):
        """Print the status if `every` seconds passed without output."""
        with self.lock:
            now = self.now()
            if not self.enabled or now - self.shown_at < self.every:
                return
            text = self.status(now)
            if text is None:
                return
            self.shown_at = now
            if self.bar and not self.phase:
                self.bar.update(self.step)
                self.mid_line = self.step < self.total
            else:
                self._print(text)

    def _start(self):
        if not self.enabled or not self.thread or self._thread is not None:
            return
        self._stop.clear()
        period = min(max(self.every, 0.2), 1.0)

        def beat():
            while not self._stop.wait(period):
                self.tick()

        self._thread = threading.Thread(target=beat, name="progress", daemon=True)
        self._thread.start()

    def _count(self, value):
        value = value / self.scale
        return f"{value:,.0f}" if self.scale == 1 or value >= 10 else f"{value:,.1f}"

    def _print(self, text):
        self.lines += 1
        print(("\n" if self.mid_line else "") + text, file=self.stream or sys.stderr, flush=True)
        self.mid_line = False
