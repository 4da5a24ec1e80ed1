"""Metrics of a bench row: Pentathlon's (time, latency per batch, instances/s, output words/s),
latency summaries, accuracy, MOROCCO fitness.

Percentiles are nearest-rank (the smallest observed latency with at least p% of requests at or
below it), as latency bounds are read: "p99 <= 100 ms" means 99% of requests took 100 ms or less.
"""

import math

import numpy as np

PERCENTILES = (50, 90, 99)


def latency_summary(seconds, prefix):
    """{prefix_mean_ms, prefix_p50_ms, prefix_p90_ms, prefix_p99_ms, prefix_max_ms} of a list of
    durations in seconds; None values when there are none."""
    values = np.asarray(seconds if seconds is not None else [], dtype=float) * 1e3
    keys = ["mean", *(f"p{p}" for p in PERCENTILES), "max"]
    if not values.size:
        return {f"{prefix}_{k}_ms": None for k in keys}
    stats = [values.mean(), *(nearest_rank(values, p) for p in PERCENTILES), values.max()]
    return {f"{prefix}_{k}_ms": float(v) for k, v in zip(keys, stats)}


def nearest_rank(values, percent):
    """The nearest-rank percentile: sorted(values)[ceil(p / 100 * n) - 1]."""
    ordered = np.sort(np.asarray(values, dtype=float))
    rank = max(1, math.ceil(percent / 100 * len(ordered) - 1e-9))
    return float(ordered[rank - 1])


def per_request(batch_seconds, batch_sizes):
    """Each request's latency when requests travel in batches: its batch's latency, once per
    instance of that batch."""
    return np.repeat(np.asarray(batch_seconds, dtype=float), np.asarray(batch_sizes, dtype=int))


def throughput(instances, seconds):
    """Instances per second (None for a zero or unknown duration)."""
    return instances / seconds if seconds else None


def pentathlon(count, seconds, outputs, batches=None):
    """Pentathlon's metrics of a timed run: time (s), latency (s per batch; online only),
    throughput (instances/s) and throughput_words (output words/s, words split on whitespace)."""
    words = sum(len(output.split()) for output in outputs)
    fields = {
        "time": seconds,
        "throughput": throughput(count, seconds),
        "throughput_words": throughput(words, seconds),
    }
    if batches is not None:
        fields["latency"] = seconds / batches if batches else None
    return fields


def accuracy(outputs, targets):
    """Share of outputs equal (as strings) to the targets; None when any target is unknown."""
    if not len(outputs) or any(target is None for target in targets):
        return None
    return sum(o == t for o, t in zip(outputs, targets, strict=True)) / len(outputs)


def fitness(quality, throughput_per_s, memory_bytes):
    """MOROCCO fitness: quality x throughput / ln(memory in bytes); None if any is unknown."""
    if quality is None or not throughput_per_s or not memory_bytes or memory_bytes <= 1:
        return None
    return quality * throughput_per_s / math.log(memory_bytes)
