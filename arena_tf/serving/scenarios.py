"""The Efficiency Pentathlon scenarios, with its names, seeds and defaults (plus an MLPerf-style
server), as schedules of batches of pool indices (allenai/efficiency-pentathlon;
docs/guide/serving-and-pentathlon.md).

    fixed_batch    the whole split shuffled with random.Random(42), batches of 128
    random_batch   4,000 sampled instances; batch sizes np.random.poisson(lam=128, size=100) after
                   np.random.seed(42), zeros skipped, until the instances run out
    single_stream  1,000 sampled instances, one per batch
    offline        8,000 sampled instances written as JSON Lines, one handshake (the submission
                   batches); --limit travels in the config line, the submission keeps the first N
    server         (ours) 1,000 sampled queries arriving as a Poisson process, batched by a dynamic
                   batcher; the highest rate whose p99 latency stays within a bound

MLPerf's minimums (beyond Pentathlon, which times one pass): single_stream goes through its
schedule again and again until the run has lasted `min_duration_s` and sent `min_queries` queries;
each server trial draws arrivals until there are `min_queries` and the last one comes at or after
`min_duration_s` (LoadGen's pre-generated schedule). The defaults, 10 s and 1,000 queries (at
least one pass of Pentathlon's 1,000 single-stream instances, and more than the 662 that LoadGen's
p99 early-stopping estimate needs), keep a small model's single_stream row at about 10 s and its
server row (six trials) at about a minute on a CPU; 0 and 0 give Pentathlon's single pass.

Sampling N instances: the rows repeated until there are enough, `random.Random(0).sample(rows,
k=N)`, then `random.Random(42).shuffle`. `--limit N` (online) keeps `np.random.choice(len, size=N,
replace=False)` of them, drawn from the same seed-42 numpy state as the Poisson sizes (first).
The warm-up is the scenario's last batch, sent once, untimed (none offline). A schedule depends
only on the pool size and the options, never on the model.

    options = ScenarioOptions(counts={"single_stream": 100})
    schedule = scenarios.get("single_stream")(options).schedule(pool_size=2000)
"""

import dataclasses
import math
import random

import numpy as np

from arena_tf.serving.registry import Registry

SHUFFLE_SEED = 42  # random.Random(42): the order of every scenario's instances
SAMPLE_SEED = 0  # random.Random(0).sample: which instances
NUMPY_SEED = 42  # np.random.seed(42): --limit's choice, then the Poisson batch sizes
BATCH_SIZE = 128  # EXPECTED_BATCH_SIZE
POISSON_DRAWS = 100

SCENARIOS = Registry("scenario")  # in the order they run
register, available, get = SCENARIOS.register, SCENARIOS.available, SCENARIOS.get


@dataclasses.dataclass(frozen=True)
class ScenarioOptions:
    """Every scenario knob, Pentathlon's defaults. counts: {scenario: instances} overriding the
    defaults; limit: Pentathlon's --limit."""

    batch_size: int = BATCH_SIZE
    poisson_mean: float = float(BATCH_SIZE)
    poisson_draws: int = POISSON_DRAWS
    counts: dict = dataclasses.field(default_factory=dict)
    limit: int = None
    server_max_batch: int = 8
    server_max_wait_ms: float = 5.0
    server_p99_ms: float = 100.0
    server_trials: int = 6
    server_start_rate: float = None
    loadgen_min_duration_ms: float = 10_000.0
    min_duration_s: float = 10.0
    min_queries: int = 1000


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Pool indices per batch, in sending order; `limit` is the offline config line's."""

    scenario: str
    batches: tuple
    pool_size: int
    limit: int = -1

    @property
    def count(self):
        return sum(len(b) for b in self.batches)

    @property
    def indices(self):
        return np.concatenate(self.batches) if self.batches else np.zeros(0, int)

    @property
    def cycled(self):
        return self.count > self.pool_size


def shuffled(pool_size):
    """The pool's indices shuffled with random.Random(42) (fixed_batch's instances)."""
    order = list(range(pool_size))
    random.Random(SHUFFLE_SEED).shuffle(order)
    return order


def sampled(pool_size, count):
    """`count` pool indices: the pool repeated until there are enough, random.Random(0).sample,
    then random.Random(42).shuffle."""
    repeated = list(range(pool_size)) * math.ceil(count / pool_size)
    picked = random.Random(SAMPLE_SEED).sample(repeated, k=count)
    random.Random(SHUFFLE_SEED).shuffle(picked)
    return picked


def limited(indices, limit, state):
    """Pentathlon's --limit: `state.choice(len, size=limit, replace=False)` of the instances when
    there are more than `limit`."""
    if limit is None or limit <= 0 or len(indices) <= limit:
        return list(indices)
    return [indices[i] for i in state.choice(list(range(len(indices))), size=limit, replace=False)]


def chunks(indices, size):
    return [indices[start : start + size] for start in range(0, len(indices), size)]


class Scenario:
    """A named schedule. Subclasses, registered under a name, set `default_count` (None: the whole
    split, shuffled) and `online` (False: every instance at once) and implement `batches`."""

    name = None
    default_count = None
    online = True
    repeats = False  # whether MLPerf's minimum duration and query count apply

    def enough(self, seconds, queries):
        """Whether a run that has lasted `seconds` and sent `queries` may stop (at once for a
        scenario that does not repeat)."""
        options = self.options
        return not self.repeats or (
            seconds >= options.min_duration_s and queries >= options.min_queries
        )

    def __init__(self, options=None):
        self.options = options or ScenarioOptions()

    def count(self):
        """Instances to sample (None: the whole split)."""
        return self.options.counts.get(self.name, self.default_count)

    def instances(self, pool_size):
        count = self.count()
        return shuffled(pool_size) if count is None else sampled(pool_size, count)

    def schedule(self, pool_size):
        """The batches for a pool of `pool_size` instances (seeded: the same for every model)."""
        if pool_size < 1:
            raise ValueError("the instance pool is empty")
        state = np.random.RandomState(NUMPY_SEED)  # np.random.seed(42) as the step is built
        indices = self.instances(pool_size)
        if self.online:
            indices = limited(indices, self.options.limit, state)
        batches = tuple(np.asarray(b, dtype=int) for b in self.batches(indices, state))
        limit = -1 if self.online or not self.options.limit else self.options.limit
        return Schedule(self.name, batches, pool_size, limit)

    def batches(self, indices, state):
        """Consecutive batches of `indices`."""
        raise NotImplementedError


@register("fixed_batch")
class FixedBatch(Scenario):
    """The whole split, shuffled, in batches of --batch-size."""

    def batches(self, indices, state):
        return chunks(indices, self.options.batch_size)


@register("random_batch")
class RandomBatch(Scenario):
    """Batch sizes drawn from Poisson(mean), zeros skipped, until the instances or draws run out
    (the last batch takes what is left)."""

    default_count = 4000

    def batches(self, indices, state):
        batches, start = [], 0
        for size in state.poisson(lam=self.options.poisson_mean, size=self.options.poisson_draws):
            if start >= len(indices):
                break
            if size:
                batches.append(indices[start : start + size])
                start += size
        return batches


@register("single_stream")
class SingleStream(Scenario):
    """One instance at a time, the schedule repeated up to MLPerf's minimums."""

    default_count = 1000
    repeats = True

    def batches(self, indices, state):
        return chunks(indices, 1)


@register("offline")
class Offline(Scenario):
    """Every instance written at once; --limit goes to the config line (the first N are
    predicted)."""

    default_count = 8000
    online = False

    def batches(self, indices, state):
        return [indices]


@register("server")
class Server(Scenario):
    """Queries (one instance each) arriving as a Poisson process; `arrivals(rate)` gives their
    times. The same exponential gaps, scaled by 1 / rate, are used at every rate."""

    default_count = 1000
    repeats = True
    GAP_BLOCK = 1024  # gaps are drawn in blocks, so a longer trial extends a shorter one

    def batches(self, indices, state):
        return chunks(indices, 1)

    def arrivals(self, rate, count):
        """Arrival times in seconds from the start of a trial at `rate` / s: `count` queries, or
        more up to MLPerf's minimums (min_queries, the last arrival at or after min_duration_s)."""
        rng = np.random.default_rng([SHUFFLE_SEED, 1])
        count = max(count, self.options.min_queries)
        times = np.zeros(0)
        while len(times) < count or times[-1] < self.options.min_duration_s:
            gaps = rng.exponential(1.0, self.GAP_BLOCK)
            times = np.concatenate(
                [times, (times[-1] if len(times) else 0.0) + np.cumsum(gaps) / rate]
            )
        late = np.flatnonzero(times >= self.options.min_duration_s)
        return times[: max(count, late[0] + 1)]
