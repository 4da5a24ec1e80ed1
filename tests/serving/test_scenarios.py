"""Each scenario's schedule against the numbers Pentathlon's own code gives for the same seeds,
computed here from `random` and numpy's global state as Pentathlon does
(docs/guide/serving-and-pentathlon.md): rows are stand-ins (their indices), so the schedules must
pick the same rows in the same order."""

import math
import random

import numpy as np
import pytest

from arena_tf.serving import scenarios
from arena_tf.serving.scenarios import ScenarioOptions


def schedule(name, pool_size, **options):
    return scenarios.get(name)(ScenarioOptions(**options)).schedule(pool_size)


def sent(plan):
    return [[int(i) for i in batch] for batch in plan.batches]


def pentathlon_instances(rows, count=None):
    """Pentathlon's instances: the whole split shuffled with Random(42), or `count` sampled
    (repeated rows, Random(0).sample, Random(42).shuffle)."""
    if count is None:
        instances = list(rows)
    else:
        instances = random.Random(0).sample(list(rows) * math.ceil(count / len(rows)), k=count)
    random.Random(42).shuffle(instances)
    return instances


def pentathlon_limit(instances, limit):
    """After np.random.seed(42) (the step's constructor): --limit's choice."""
    if limit is not None and limit > 0 and len(instances) > limit:
        indices = np.random.choice(list(range(len(instances))), size=limit, replace=False)
        instances = [instances[i] for i in indices]
    return instances


def pentathlon_batches(scenario, rows, count=None, limit=None, batch_size=128, lam=128, draws=100):
    np.random.seed(42)
    instances = pentathlon_limit(pentathlon_instances(rows, count), limit)
    if scenario != "random_batch":
        size = 1 if scenario == "single_stream" else batch_size
        return [instances[i : i + size] for i in range(0, len(instances), size)]
    batches, idx = [], 0
    for n in np.random.poisson(lam=lam, size=draws):
        if n == 0:
            continue
        batches.append(instances[idx : idx + n])
        idx += n
        if idx >= len(instances):
            break
    return batches


def test_scenarios_have_pentathlons_names_and_ours_last():
    assert scenarios.available() == [
        "fixed_batch",
        "random_batch",
        "single_stream",
        "offline",
        "server",
    ]
    assert ScenarioOptions().batch_size == 128 and ScenarioOptions().poisson_mean == 128
    assert ScenarioOptions().poisson_draws == 100


@pytest.mark.parametrize("pool_size", [300, 1000])
def test_fixed_batch_is_the_whole_split_shuffled_with_random_42_in_batches_of_128(pool_size):
    plan = schedule("fixed_batch", pool_size)
    assert sent(plan) == pentathlon_batches("fixed_batch", range(pool_size))
    assert len(plan.batches) == math.ceil(pool_size / 128) and not plan.cycled
    assert sorted(plan.indices.tolist()) == list(range(pool_size))


@pytest.mark.parametrize("pool_size", [300, 5000])
def test_random_batch_draws_poisson_128_sizes_over_4000_sampled_instances(pool_size):
    plan = schedule("random_batch", pool_size)
    assert sent(plan) == pentathlon_batches("random_batch", range(pool_size), count=4000)
    sizes = [len(b) for b in plan.batches]
    assert plan.count == 4000 and len(sizes) <= 100 and min(sizes) >= 1


def test_random_batch_stops_after_its_draws_when_instances_remain():
    plan = schedule("random_batch", 300, poisson_draws=10)
    expected = pentathlon_batches("random_batch", range(300), count=4000, draws=10)
    assert sent(plan) == expected and len(plan.batches) == 10 and plan.count < 4000


def test_single_stream_sends_1000_sampled_instances_one_at_a_time():
    plan = schedule("single_stream", 300)
    assert sent(plan) == pentathlon_batches("single_stream", range(300), count=1000)
    assert len(plan.batches) == 1000 and plan.cycled


def test_offline_writes_8000_sampled_instances_and_sends_the_limit_in_its_config():
    plan = schedule("offline", 300)
    assert plan.indices.tolist() == pentathlon_instances(range(300), 8000)
    assert len(plan.batches) == 1 and plan.limit == -1
    limited = schedule("offline", 300, limit=50)
    assert limited.indices.tolist() == plan.indices.tolist() and limited.limit == 50


@pytest.mark.parametrize(
    "name, count", [("fixed_batch", None), ("random_batch", 4000), ("single_stream", 1000)]
)
def test_limit_keeps_pentathlons_seeded_choice(name, count):
    plan = schedule(name, 300, limit=200)
    assert sent(plan) == pentathlon_batches(name, range(300), count=count, limit=200)
    assert plan.count == 200


def test_options_change_each_default():
    plan = schedule("random_batch", 300, poisson_mean=4, counts={"random_batch": 24})
    assert sent(plan) == pentathlon_batches("random_batch", range(300), count=24, lam=4)
    plan = schedule("fixed_batch", 20, batch_size=8)
    assert [len(b) for b in plan.batches] == [8, 8, 4]
    assert schedule("single_stream", 20, counts={"single_stream": 30}).count == 30


def test_the_same_schedule_for_every_model():
    assert sent(schedule("random_batch", 500)) == sent(schedule("random_batch", 500))


def test_server_arrivals_are_a_seeded_poisson_process_scaled_by_the_rate():
    server = scenarios.get("server")(ScenarioOptions())
    slow, fast = server.arrivals(50.0, 5000), server.arrivals(100.0, 5000)
    gaps = np.diff(slow)
    assert np.all(gaps > 0)
    assert abs(gaps.mean() - 1 / 50) < 0.002  # mean gap 1 / rate
    assert abs(gaps.std() / gaps.mean() - 1) < 0.1  # exponential: std equals mean
    np.testing.assert_allclose(fast, slow / 2)
    assert schedule("server", 300).indices.tolist() == pentathlon_instances(range(300), 1000)


def test_unknown_scenario_names_the_choices():
    with pytest.raises(ValueError, match="expected one of fixed_batch, random_batch"):
        scenarios.get("batchy")
