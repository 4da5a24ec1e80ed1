"""The early-stopping estimate against LoadGen's own procedure, written out step by step here as
loadgen/early_stopping.cc and results.cc run it (binomial odds, a binary search for the fewest
passing queries, the loop over discarded queries), on latencies of many lengths."""

import math

import numpy as np
import pytest

from arena_tf.serving import early_stopping


def loadgen_odds(h, t, p):
    """Odds of t or fewer slow queries in h + t, each slow with probability 1 - p."""
    n = h + t
    return sum(math.comb(n, x) * (1 - p) ** x * p ** (n - x) for x in range(t + 1))


def loadgen_min_passing(t, p, c=0.99):
    """The fewest fast queries h with odds(h, t, p) < 1 - c (LoadGen's find_min_passing)."""
    low, high = 0, 1
    while loadgen_odds(high, t, p) >= 1 - c:
        high *= 2
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if loadgen_odds(middle, t, p) < 1 - c else (middle + 1, high)
    return low


def loadgen_estimate(latencies, p):
    """results.cc, single stream: None below h_min + 1 queries, else the t-th slowest latency."""
    ordered, n = sorted(latencies), len(latencies)
    if n < loadgen_min_passing(1, p) + 1:
        return None
    t = 1
    for i in range(2, n + 1):
        if n < loadgen_min_passing(i, p) + i:
            t = i - 1
            break
    return ordered[n - t]


def test_the_fewest_queries_for_an_estimate_are_loadgens_64_and_662():
    assert early_stopping.min_queries(0.90) == loadgen_min_passing(1, 0.90) + 1 == 64
    assert early_stopping.min_queries(0.99) == loadgen_min_passing(1, 0.99) + 1 == 662


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 200, 661, 662, 700, 1500])
@pytest.mark.parametrize("percentile", [0.90, 0.99])
def test_the_estimate_is_loadgens_on_latencies_of_every_length(n, percentile):
    latencies = np.random.default_rng(n).lognormal(0.0, 0.5, n)
    expected = loadgen_estimate(list(latencies), percentile)
    assert early_stopping.percentile_estimate(latencies, percentile) == expected


def test_the_estimate_bounds_the_plain_percentile_from_above():
    latencies = np.random.default_rng(0).exponential(1.0, 5000)
    for percentile in (0.90, 0.99):
        plain = np.sort(latencies)[math.ceil(percentile * len(latencies)) - 1]
        assert plain < early_stopping.percentile_estimate(latencies, percentile)


@pytest.mark.parametrize("slow", [0, 1, 3, 5, 9, 20])
def test_the_server_rule_is_loadgens(slow):
    latencies = [0.01] * (1000 - slow) + [1.0] * slow  # 1,000 queries, `slow` over a 0.1 s bound
    expected = 1000 >= loadgen_min_passing(slow, 0.99) + slow
    assert early_stopping.server_passes(latencies, 0.1) == expected
    assert expected == (slow <= 2)  # at 99% confidence, 1,000 queries prove p99 with 2 slow


def test_row_fields_are_milliseconds_and_none_when_too_few():
    latencies = np.arange(1, 101) / 1000  # 100 queries: a p90 estimate, too few for p99
    fields = early_stopping.estimate_fields(latencies, "request_latency")
    assert fields == {
        "request_latency_p90_early_ms": loadgen_estimate(latencies, 0.90) * 1e3,
        "request_latency_p99_early_ms": None,
    }
    assert fields["request_latency_p90_early_ms"] > 90.0  # the plain p90
    assert early_stopping.estimate_fields([], "x") == {
        "x_p90_early_ms": None,
        "x_p99_early_ms": None,
    }
