"""The Efficiency Pentathlon scenarios (plus an MLPerf-style server) as schedules of batches.

A schedule lists, in sending order, the pool indices of each batch. It depends only on the pool
size, the counts and the seed, never on the model, so every model gets the same instances in the
same order (and, for Poisson batching, the same batch sizes). Instances are a seeded shuffle of
the pool; a scenario that needs more instances than the pool holds cycles through that shuffle
(`Schedule.cycled` says so).

    fixed          shuffle, batches of --batch-size, the whole test split
    poisson        batch sizes drawn from Poisson(--poisson-mean), 4000 instances
    single_stream  batch size 1, 1000 instances
    offline        8000 instances given at once (file handshake); the model picks its batching
    server         Poisson arrivals at a rate, batched by a dynamic batcher (max batch, max wait);
                   the highest rate whose p99 latency stays within a bound (1000 queries a trial)

    options = ScenarioOptions(batch_size=16, counts={"single_stream": 100})
    schedule = scenarios.get("single_stream")(options).schedule(pool_size=2000)
"""

import dataclasses

import numpy as np

from serving.registry import Registry

DEFAULT_SEED = 42  # Pentathlon's

SCENARIOS = Registry("scenario")  # in the order they run
register, available, get = SCENARIOS.register, SCENARIOS.available, SCENARIOS.get


@dataclasses.dataclass(frozen=True)
class ScenarioOptions:
    """Every scenario knob. counts: {scenario: instances} overriding the defaults; limit caps every
    count (to shrink a run)."""

    seed: int = DEFAULT_SEED
    batch_size: int = 32
    poisson_mean: float = 32.0
    counts: dict = dataclasses.field(default_factory=dict)
    limit: int = None
    server_max_batch: int = 8
    server_max_wait_ms: float = 5.0
    server_p99_ms: float = 100.0
    server_trials: int = 6
    server_start_rate: float = None
    loadgen_min_duration_ms: float = 10_000.0


@dataclasses.dataclass(frozen=True)
class Schedule:
    """Pool indices per batch, in sending order."""

    scenario: str
    batches: tuple
    pool_size: int

    @property
    def count(self):
        return sum(len(b) for b in self.batches)

    @property
    def indices(self):
        return np.concatenate(self.batches) if self.batches else np.zeros(0, int)

    @property
    def cycled(self):
        return self.count > self.pool_size


def shuffled(pool_size, count, rng):
    """`count` pool indices: a seeded permutation of the pool, cycled when count > pool_size."""
    if pool_size < 1:
        raise ValueError("the instance pool is empty")
    return np.resize(rng.permutation(pool_size), count)


class Scenario:
    """A named schedule of batches. Subclasses, registered under a name, set `default_count` (None:
    the pool) and `online` (False: every instance at once) and implement `batch_sizes`."""

    name = None
    default_count = None
    online = True

    def __init__(self, options=None):
        self.options = options or ScenarioOptions()

    def count(self, pool_size):
        count = self.options.counts.get(self.name, self.default_count) or pool_size
        return min(count, self.options.limit) if self.options.limit else count

    def schedule(self, pool_size):
        """The batches for a pool of `pool_size` instances (seeded: same for every model)."""
        rng = np.random.default_rng(self.options.seed)
        indices = shuffled(pool_size, self.count(pool_size), rng)
        bounds = np.cumsum(self.batch_sizes(len(indices), rng))[:-1]
        return Schedule(self.name, tuple(np.split(indices, bounds)), pool_size)

    def batch_sizes(self, count, rng):
        """Sizes of consecutive batches summing to `count`."""
        raise NotImplementedError


def chunk_sizes(count, size):
    return [size] * (count // size) + ([count % size] if count % size else [])


@register("fixed")
class FixedBatching(Scenario):
    """Shuffled, then batches of a fixed size over the whole test split (accuracy is measured)."""


    def batch_sizes(self, count, rng):
        return chunk_sizes(count, self.options.batch_size)


@register("poisson")
class PoissonBatching(Scenario):
    """Batch sizes drawn from Poisson(mean) (zeros skipped, the last one cut to the count)."""

    default_count = 4000

    def batch_sizes(self, count, rng):
        sizes, total = [], 0
        while total < count:
            size = int(rng.poisson(self.options.poisson_mean))
            if size:
                sizes.append(min(size, count - total))
                total += sizes[-1]
        return sizes


@register("single_stream")
class SingleStream(Scenario):
    """One instance at a time."""

    default_count = 1000

    def batch_sizes(self, count, rng):
        return [1] * count


@register("offline")
class Offline(Scenario):
    """Every instance at once, through the file handshake; the model picks its batching."""

    default_count = 8000
    online = False

    def batch_sizes(self, count, rng):
        return [count]


@register("server")
class Server(Scenario):
    """Queries (one instance each) arriving as a Poisson process; `arrivals(rate)` gives their
    times. The same exponential gaps, scaled by 1 / rate, are used at every rate."""

    default_count = 1000

    def batch_sizes(self, count, rng):
        return [1] * count

    def arrivals(self, rate, count):
        """Arrival times in seconds from the start of a trial, for `count` queries at `rate` / s."""
        gaps = np.random.default_rng([self.options.seed, 1]).exponential(1.0, count)
        return np.cumsum(gaps) / rate
