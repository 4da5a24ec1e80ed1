"""The clock the bench schedules and times by, injectable so that tests run on simulated time.

    clock = clock_module.SYSTEM          # time.perf_counter / time.sleep
    start = clock.now(); clock.sleep(0.005); elapsed = clock.now() - start

Anything with `now()` (monotonic seconds, a float) and `sleep(seconds)` will do. Everything in
serving/ that waits to schedule work (the server scenario's dynamic batcher, LoadGen's batcher) or
times it (batch round trips, measurement windows, the worker's and the bare loop's predict calls)
reads the clock it was given; tests give one whose time advances only when something sleeps or
simulates work (tests/serving/fake_clock.py), so their assertions are exact on any machine.
Deadlines that only guard against a hanging model (the protocol's answer timeout) stay on the
real clock: they bound real waiting.
"""

import time


class SystemClock:
    """The real clock: `time.perf_counter` and `time.sleep`."""

    def now(self):
        return time.perf_counter()

    def sleep(self, seconds):
        if seconds > 0:
            time.sleep(seconds)


SYSTEM = SystemClock()
