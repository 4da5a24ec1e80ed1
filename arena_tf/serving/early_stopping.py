"""MLPerf LoadGen's early-stopping estimate of a latency percentile, and its server criterion.

A plain p90 of n measured latencies says nothing about how sure it is. LoadGen's rule (its
`early_stopping.cc` and `results.cc`, MLPerf Inference v2.0 on) asks instead: treating each query
as over the bound with probability 1 - p, how many of the slowest queries may be set aside while
the odds of seeing so few slow queries stay below 1 - confidence? With t = the largest such count,
the estimate is the t-th slowest latency: an upper bound on the true p-th percentile at that
confidence (0.99, no tolerance, as LoadGen). Too few queries give no estimate at all.

The odds are P[Binomial(n, 1 - p) <= t], LoadGen's BetaRegularized[p, n - t, 1 + t]; they are
summed here in log space over the binomial's terms, exact to float rounding for any n.

    percentile_estimate(latencies, 0.90)     # LoadGen's single-stream p90 estimate, or None
    min_queries(0.90), min_queries(0.99)     # 64 and 662: fewer queries give no estimate
    server_passes(latencies, bound, 0.99)    # LoadGen's server rule: enough queries under bound
"""

import math

import numpy as np

CONFIDENCE = 0.99  # LoadGen's, fixed in results.cc
PERCENTILES = (0.90, 0.99)  # single stream's target, and the one LoadGen infers multi-stream from


def below_odds(n, percentile):
    """[P[Binomial(n, 1 - percentile) <= t] for t = 0 .. n]: the odds that at most t of n queries
    are slow when each is slow with probability 1 - percentile."""
    slow, fast = math.log1p(-percentile), math.log(percentile)
    t = np.arange(n + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log(n - t[:-1]) - np.log(t[1:]))])
    log_terms = log_choose + t * slow + (n - t) * fast
    return np.exp(np.logaddexp.accumulate(log_terms))


def discarded(n, percentile, confidence=CONFIDENCE):
    """How many of the slowest of n queries LoadGen sets aside (its t): the largest t with
    odds(t) < 1 - confidence, or 0 when even t = 1 fails (too few queries for an estimate)."""
    passing = int(np.count_nonzero(below_odds(n, percentile) < 1 - confidence)) if n >= 2 else 0
    return passing - 1 if passing >= 2 else 0


def min_queries(percentile, confidence=CONFIDENCE):
    """The fewest queries that give an estimate (LoadGen's "Need to process at least N queries")."""
    n = 1
    while discarded(n, percentile, confidence) < 1:
        n *= 2
    low, high = n // 2, n  # the count of queries that can be set aside grows with n
    while high - low > 1:
        middle = (low + high) // 2
        enough = discarded(middle, percentile, confidence) >= 1
        low, high = (low, middle) if enough else (middle, high)
    return high


def percentile_estimate(latencies, percentile, confidence=CONFIDENCE):
    """LoadGen's early-stopping estimate of the `percentile` latency (same unit as `latencies`):
    the t-th slowest; None when there are fewer than `min_queries(percentile)` latencies."""
    ordered = np.sort(np.asarray(latencies, dtype=float))
    t = discarded(len(ordered), percentile, confidence)
    return float(ordered[len(ordered) - t]) if t >= 1 else None


def server_passes(latencies, bound, percentile=0.99, confidence=CONFIDENCE):
    """LoadGen's server rule: with t queries over `bound`, the run passes when the odds of t or
    fewer slow queries among all of them are below 1 - confidence."""
    latencies = np.asarray(latencies, dtype=float)
    slow = int(np.count_nonzero(latencies > bound))
    return bool(len(latencies) and below_odds(len(latencies), percentile)[slow] < 1 - confidence)


def estimate_fields(latencies_seconds, prefix):
    """{prefix_p90_early_ms, prefix_p99_early_ms}: the estimates in milliseconds (None: too few)."""
    latencies = [] if latencies_seconds is None else latencies_seconds
    estimates = {p: percentile_estimate(latencies, p) for p in PERCENTILES}
    return {
        f"{prefix}_p{round(p * 100)}_early_ms": None if value is None else value * 1e3
        for p, value in estimates.items()
    }
