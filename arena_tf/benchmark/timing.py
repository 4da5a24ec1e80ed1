"""Repeated wall-clock timing: warm-up excluded, median and spread of the rest."""

import time

import numpy as np


def summarize(seconds):
    """{median_ms, p25_ms, p75_ms, min_ms, max_ms, samples_ms} of a list of durations in seconds."""
    ms = np.asarray(seconds, dtype=float) * 1e3
    return {
        "median_ms": float(np.median(ms)),
        "p25_ms": float(np.percentile(ms, 25)),
        "p75_ms": float(np.percentile(ms, 75)),
        "min_ms": float(ms.min()),
        "max_ms": float(ms.max()),
        "samples_ms": [round(float(t), 3) for t in ms],
    }


# The keys of a measurement spec that `time_calls` takes (the command's --warmup, --repeats and
# --max-seconds).
CALL_OPTIONS = ("warmup", "repeats", "max_seconds")


def call_options(spec):
    """The `time_calls` keyword arguments a measurement spec gives (the defaults for the rest)."""
    return {key: spec[key] for key in CALL_OPTIONS if key in spec}


def time_calls(call, warmup=1, repeats=5, max_seconds=30.0, min_repeats=3):
    """Run `call()` (which must block until its result exists) `warmup` times untimed, then up to
    `repeats` timed times, stopping early after `min_repeats` once `max_seconds` of timed calls
    have passed. Returns `summarize` of the timed calls."""
    for _ in range(warmup):
        call()
    seconds = []
    while len(seconds) < repeats:
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
        if len(seconds) >= min_repeats and sum(seconds) > max_seconds:
            break
    return summarize(seconds)


def spread(stats):
    """Relative interquartile spread (p75 - p25) / median of a `summarize` record."""
    return (stats["p75_ms"] - stats["p25_ms"]) / stats["median_ms"]
