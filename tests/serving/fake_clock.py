"""Simulated time for the serving tests: it moves only when the code under test sleeps or a fake
model simulates work, so timings are exact on any machine, however loaded."""


class FakeClock:
    """A clock (arena_tf/serving/clock.py interface) whose `now()` advances only by `sleep()` and
    `work()`. `sleeps` records every sleep asked for."""

    def __init__(self, start=0.0):
        self.time = start
        self.sleeps = []

    def now(self):
        return self.time

    def sleep(self, seconds):
        assert seconds >= 0, f"asked to sleep {seconds} s"
        self.sleeps.append(seconds)
        self.time += seconds

    def work(self, seconds):
        """Simulated work (a model computing): time passes, nothing sleeps."""
        self.time += seconds


class TimedModel:
    """A stand-in model process on a fake clock: each batch takes `seconds` of simulated work and
    is answered with `output` (a label string) per instance (or `output(batch number)` when it is
    callable). `sizes` and `sent_at` record each batch."""

    pid = 0

    def __init__(self, clock, seconds, output="0"):
        self.clock, self.seconds, self.output = clock, seconds, output
        self.sizes, self.sent_at = [], []

    def request(self, line, count, timeout):
        self.sent_at.append(self.clock.now())
        self.sizes.append(count)
        self.clock.work(self.seconds)
        output = self.output(len(self.sizes) - 1) if callable(self.output) else self.output
        return [output] * count
