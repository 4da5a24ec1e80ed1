"""Each scenario's schedule: sizes, counts, order and seeds exactly as specified."""

import numpy as np
import pytest

from serving import scenarios
from serving.scenarios import ScenarioOptions


def schedule(name, pool_size, **options):
    return scenarios.get(name)(ScenarioOptions(**options)).schedule(pool_size)


def seeded_order(pool_size, count, seed=scenarios.DEFAULT_SEED):
    """What every scenario sends: a seeded permutation of the pool, cycled to `count`."""
    return np.resize(np.random.default_rng(seed).permutation(pool_size), count)


def test_scenarios_run_in_pentathlon_order():
    assert scenarios.available() == ["fixed", "poisson", "single_stream", "offline", "server"]


def test_fixed_batching_covers_the_whole_split_once_in_batches_of_the_chosen_size():
    plan = schedule("fixed", 50, batch_size=16)
    assert [len(b) for b in plan.batches] == [16, 16, 16, 2]
    assert sorted(plan.indices.tolist()) == list(range(50))
    np.testing.assert_array_equal(plan.indices, seeded_order(50, 50))
    assert not plan.cycled


def test_poisson_batching_draws_4000_instances_in_poisson_sized_batches():
    plan = schedule("poisson", 3000, poisson_mean=32)
    sizes = np.array([len(b) for b in plan.batches])
    assert plan.count == 4000 and sizes.min() >= 1
    assert abs(sizes[:-1].mean() - 32) < 2.5  # about 125 batches of mean 32
    assert sizes.std() > 3  # not a fixed size
    np.testing.assert_array_equal(plan.indices, seeded_order(3000, 4000))
    assert plan.cycled


def test_single_stream_sends_1000_instances_one_at_a_time():
    plan = schedule("single_stream", 2000)
    assert len(plan.batches) == 1000 and {len(b) for b in plan.batches} == {1}
    np.testing.assert_array_equal(plan.indices, seeded_order(2000, 1000))


def test_offline_gives_8000_instances_at_once_cycling_a_small_pool():
    plan = schedule("offline", 2000)
    assert len(plan.batches) == 1 and plan.count == 8000 and plan.cycled
    counts = np.bincount(plan.indices, minlength=2000)
    assert counts.min() == counts.max() == 4  # each instance exactly four times


def test_same_instances_same_order_for_every_model_and_seed_changes_them():
    first, again = schedule("poisson", 500), schedule("poisson", 500)
    assert [b.tolist() for b in first.batches] == [b.tolist() for b in again.batches]
    other = schedule("poisson", 500, seed=7)
    assert first.indices.tolist() != other.indices.tolist()


def test_counts_and_limit_shrink_a_run():
    assert schedule("single_stream", 100, counts={"single_stream": 30}).count == 30
    assert schedule("offline", 100, limit=64).count == 64
    assert schedule("fixed", 100, limit=10).count == 10


def test_server_arrivals_are_a_seeded_poisson_process_scaled_by_the_rate():
    server = scenarios.get("server")(ScenarioOptions())
    slow, fast = server.arrivals(50.0, 5000), server.arrivals(100.0, 5000)
    gaps = np.diff(slow)
    assert np.all(gaps > 0)
    assert abs(gaps.mean() - 1 / 50) < 0.002  # mean gap 1 / rate
    assert abs(gaps.std() / gaps.mean() - 1) < 0.1  # exponential: std equals mean
    np.testing.assert_allclose(fast, slow / 2)


def test_unknown_scenario_names_the_choices():
    with pytest.raises(ValueError, match="expected one of fixed, poisson"):
        scenarios.get("batchy")
