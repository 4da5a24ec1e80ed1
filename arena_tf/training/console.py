"""The trainer's console: what the run is doing, never silent for more than a few seconds."""

import contextlib
import sys
import threading
import time

import keras

from arena_tf.progress import duration, interval


class Progress:
    """What the run is doing, never silent for more than a few seconds.

    Keras's bar redrawn in place on a terminal, plain lines when the output goes to a file or pipe
    (Keras's Progbar redraws with backspaces on any POSIX stream, which makes a log one endless
    line). Besides the log_every lines (`update`) and notes, a status line is printed whenever
    `every` seconds passed without output: the step, steps/s and the ETA while training, or the
    phase under way (`working`) with its batches done. A background thread prints these while one
    TensorFlow call blocks (the first step's compilation, a slow step, an evaluation); `clock`
    is injectable, and `tick()` is what the thread calls (`thread=False`: none is started).
    """

    def __init__(self, total, enabled, stream=None, every=None, clock=None, thread=True):
        self.stream = stream or sys.stdout
        self.thread = thread  # False: status lines only from the caller's calls (tests)
        self.enabled = enabled
        self._total = None
        self.every = interval() if every is None else every
        self.clock = clock or time.monotonic
        self.bar = None
        self.mid_line = False
        self.lock = threading.RLock()
        self.shown_at = self.clock()
        self.phase = None  # [what, started, done, of] of the phase under way
        self.step = None
        self.timed_from = None  # (clock, step) after the first (compiling) step: the speed's base
        self._stop = threading.Event()
        self._thread = None
        self.total = total

    @property
    def total(self):
        """The last step; setting it on an enabled terminal makes the bar."""
        return self._total

    @total.setter
    def total(self, total):
        self._total = total
        terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        if self.enabled and total and terminal and (self.bar is None or self.bar.target != total):
            self.bar = keras.utils.Progbar(total, stateful_metrics=["loss", "accuracy", "steps/s"])

    # -- what the caller reports ----------------------------------------------------------------

    def update(self, step, values):
        """A log_every line: the step and {name: value}, with the ETA while steps remain."""
        with self.lock:
            self.step = step
            if self.bar:
                self.bar.update(step, list(values.items()))
                self.mid_line = step < self.total
                self.shown_at = self.clock()
            elif self.enabled:
                shown = ", ".join(f"{name} {value:.4g}" for name, value in values.items())
                eta = self.eta()
                self.note(f"step {step}/{self.total}: {shown}" + (f", ETA {eta}" if eta else ""))

    def note(self, text):
        """A line of its own (below the bar on a terminal)."""
        with self.lock:
            if self.enabled:
                print(("\n" if self.mid_line else "") + text, file=self.stream, flush=True)
                self.mid_line = False
                self.shown_at = self.clock()

    def stepped(self, step):
        """Training reached `step`; the first call marks the end of the compiling step."""
        with self.lock:
            self.step = step
            if self.timed_from is None:
                self.timed_from = (self.clock(), step)
        self.tick()

    @contextlib.contextmanager
    def working(self, what, of=None, announce=None):
        """A phase under way (`advance` counts its batches, `of` is their number when known):
        status lines name it. `announce` is a line printed at once."""
        with self.lock:
            outer, self.phase = self.phase, [what, self.clock(), 0, of]
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

    def close(self):
        """Stop the status thread."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    # -- status lines ---------------------------------------------------------------------------

    def rate(self):
        """Steps per second since the first step (compilation excluded), None before it is known."""
        if self.timed_from is None or self.step is None:
            return None
        began, first = self.timed_from
        elapsed = self.clock() - began
        if self.step <= first or elapsed <= 0:
            return None
        return (self.step - first) / elapsed

    def eta(self):
        """The time left at the current speed ('1 min 05 s'), None when unknown or done."""
        rate = self.rate()
        if not rate or not self.total or self.step >= self.total:
            return None
        return duration((self.total - self.step) / rate)

    def status(self):
        """The status line for now, None when nothing is under way."""
        if self.phase:
            what, started, done, of = self.phase
            count = f"batch {done}/{of}" if of else (f"batch {done}" if done else "")
            elapsed = f"{duration(self.clock() - started)} so far"
            return f"{what}: " + ", ".join(part for part in (count, elapsed) if part)
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
            if not self.enabled or self.clock() - self.shown_at < self.every:
                return
            text = self.status()
            if text is None:
                return
            if self.bar and not self.phase:
                self.bar.update(self.step)
                self.mid_line = self.step < self.total
                self.shown_at = self.clock()
            else:
                self.note(text)

    def _start(self):
        if not self.enabled or not self.thread or self._thread is not None:
            return
        self._stop.clear()
        period = min(max(self.every, 0.2), 1.0)

        def beat():
            while not self._stop.wait(period):
                self.tick()

        self._thread = threading.Thread(target=beat, name="train-progress", daemon=True)
        self._thread.start()
