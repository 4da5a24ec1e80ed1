"""Metrics from known timings; energy sources; the server's batcher and rate search, on a fake
clock; output checks in a timed row."""

import json
import math
import pathlib
import sys
import types

import numpy as np
import pytest

from arena_tf.serving import energy, metrics, outputs, runner, scenarios
from arena_tf.serving.instances import Rows
from arena_tf.serving.protocol import OFFLINE_LINES

from .fake_clock import FakeClock, TimedModel


def test_latency_summary_is_in_milliseconds_with_nearest_rank_percentiles():
    summary = metrics.latency_summary([i / 1000 for i in range(1, 101)], "request_latency")
    assert summary == pytest.approx(
        {
            "request_latency_mean_ms": 50.5,
            "request_latency_p50_ms": 50.0,
            "request_latency_p90_ms": 90.0,
            "request_latency_p99_ms": 99.0,
            "request_latency_max_ms": 100.0,
        }
    )
    assert metrics.nearest_rank([0.3, 0.1, 0.2], 50) == 0.2
    assert set(metrics.latency_summary([], "x").values()) == {None}


def test_each_request_in_a_batch_waits_for_its_whole_batch():
    latencies = metrics.per_request([0.010, 0.030], [3, 1])
    np.testing.assert_allclose(latencies, [0.010, 0.010, 0.010, 0.030])
    assert metrics.latency_summary(latencies, "r")["r_p50_ms"] == pytest.approx(10.0)


def test_throughput_accuracy_and_morocco_fitness():
    assert metrics.throughput(100, 2.0) == 50.0
    assert metrics.accuracy(["1", "2", "3", "4"], ["1", "2", "0", "0"]) == 0.5
    assert metrics.accuracy(["1"], [None]) is None
    assert metrics.fitness(0.5, 100.0, math.exp(10)) == pytest.approx(5.0)
    assert metrics.fitness(None, 100.0, 1e9) is None


def test_pentathlons_metrics_are_time_latency_per_batch_and_instances_and_words_per_second():
    fields = metrics.pentathlon(8, 2.0, ["a b", "c", "d e f", ""] * 2, batches=4)
    assert fields == {"time": 2.0, "latency": 0.5, "throughput": 4.0, "throughput_words": 6.0}
    assert "latency" not in metrics.pentathlon(8, 2.0, ["a"] * 8)  # offline: no batches


def fake_rapl(root, energy_uj, max_range=1000):
    zone = root / "intel-rapl:0"
    zone.mkdir(parents=True, exist_ok=True)
    (zone / "max_energy_range_uj").write_text(f"{max_range}\n")
    (zone / "energy_uj").write_text(f"{energy_uj}\n")
    (root / "intel-rapl:0:0").mkdir(exist_ok=True)  # a sub-zone, already counted in its package


def test_rapl_counts_package_energy_across_a_counter_wraparound(tmp_path):
    fake_rapl(tmp_path, 900)
    meter = energy.EnergyMeter(measured=[lambda: energy.Rapl(tmp_path)], estimators=())
    meter.start()
    fake_rapl(tmp_path, 260)  # wrapped: 900 -> 1000 -> 0 -> 260 is 361 uJ
    reading = meter.stop()
    assert reading.source == "rapl" and not reading.estimated
    assert reading.wh == pytest.approx(361 / 1e6 / 3600)


def test_an_estimate_is_labelled_estimated(monkeypatch):
    class Tracker:
        def __init__(self, **kwargs):
            self.final_emissions_data = types.SimpleNamespace(energy_consumed=2e-6)  # kWh

        def start(self):
            pass

        def stop(self):
            pass

    monkeypatch.setitem(
        sys.modules, "codecarbon", types.SimpleNamespace(OfflineEmissionsTracker=Tracker)
    )
    meter = energy.EnergyMeter(measured=[lambda: energy.Rapl("/nonexistent")]).start()
    reading = meter.stop()
    assert reading.estimated and reading.source == "codecarbon (estimated)"
    assert reading.wh == pytest.approx(2e-3)
    assert "RAPL: no /nonexistent" in reading.note


def test_no_energy_source_gives_none_with_every_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "codecarbon", None)  # import fails
    reading = energy.EnergyMeter(measured=[lambda: energy.Rapl("/nonexistent")]).start().stop()
    assert reading.wh is None and reading.source is None
    assert "RAPL" in reading.note and "codecarbon: not installed" in reading.note


def pool_of(count, target="0", labels=("0", "1")):
    """`count` stand-in rows, each with `target`, of a task labelled `labels`."""
    return Rows([b'{"input": "1"}'] * count, [target] * count, labels, "test")


def test_dynamic_batcher_waits_at_most_max_wait_and_latency_includes_queueing():
    # Simulated time (tests/serving/fake_clock.py): exact on any machine. Powers of two keep the
    # float sums exact: each batch takes 1/16 s, queries arrive every 1/128 s.
    clock = FakeClock()
    model = TimedModel(clock, 1 / 16)
    pool = pool_of(4)
    arrivals = np.array([0, 1, 2, 3]) / 128
    latency, seconds, sizes, outputs = runner.serve_arrivals(
        model, pool, [0, 1, 2, 3], arrivals, max_batch=2, max_wait=1 / 32, timeout=5, clock=clock
    )
    assert sizes == model.sizes == [2, 2]  # the first batch fills at once; the next two queue
    assert model.sent_at == [1 / 128, 9 / 128]  # sent when full, then as soon as the model is free
    assert clock.sleeps == [1 / 128]  # the only wait: for query 1 to arrive
    assert seconds == [1 / 16, 1 / 16]
    # latency = queueing + the batch: query 2 waited for the first batch (2/128 -> 9/128), then its
    # own 1/16 s.
    assert latency.tolist() == [9 / 128, 8 / 128, 15 / 128, 14 / 128]
    assert outputs == ["0", "0", "0", "0"]


def test_dynamic_batcher_sends_a_partial_batch_after_max_wait_and_the_last_at_once():
    clock = FakeClock()
    model = TimedModel(clock, 1 / 16)
    pool = pool_of(2)
    latency, _, sizes, _ = runner.serve_arrivals(
        model,
        pool,
        [0, 1],
        np.array([0, 0.25]),
        max_batch=4,
        max_wait=1 / 32,
        timeout=5,
        clock=clock,
    )
    assert sizes == [1, 1]
    assert model.sent_at == [1 / 32, 0.25]  # query 0 waited exactly max_wait; query 1 is the last
    assert clock.sleeps == [1 / 32, 0.25 - 3 / 32]  # max_wait, then idle until query 1 arrives
    assert latency.tolist() == [1 / 32 + 1 / 16, 1 / 16]


class StillMeter:
    """An energy meter that reads nothing (no RAPL, no codecarbon in a unit test)."""

    def __init__(self, device):
        pass

    def start(self):
        return self

    def stop(self):
        return energy.Reading(None, None, False, "test")


def online_row(monkeypatch, output):
    monkeypatch.setattr(runner.energy, "EnergyMeter", StillMeter)
    clock = FakeClock(start=100.0)
    model = TimedModel(clock, 0.25, output)
    pool = pool_of(8, labels=tuple(str(i) for i in range(10)))
    scenario = scenarios.get("fixed_batch")(scenarios.ScenarioOptions(batch_size=4))
    settings = runner.Settings(progress=False, clock=clock)
    return runner.run_scenario(model, pool, scenario, scenario.schedule(8), settings), model


def test_a_row_is_timed_on_the_settings_clock(monkeypatch):
    row, model = online_row(monkeypatch, output="0")
    assert model.sizes == [4, 4, 4]  # the warm-up (the last batch), then two timed batches
    assert row["time"] == 0.5 and row["throughput"] == 16.0  # 8 instances in 2 x 0.25 s
    assert row["latency"] == 0.25 and row["throughput_words"] == 16.0
    assert row["batch_latency_mean_ms"] == row["request_latency_p99_ms"] == 250.0
    assert row["accuracy"] == 1.0


@pytest.mark.parametrize(
    "output, words",
    [
        ("10", "4 of 4 outputs invalid (output 0: '10' is not a label of the task)"),  # warm-up
        (0, "(output 0: 0 is a JSON number, not a string)"),
        ([0.5] * 10, "is a JSON array, not a string"),
        (lambda batch: "-1" if batch == 2 else "0", "'-1' is not a label"),  # in the timed part
    ],
)
def test_outputs_outside_the_label_set_make_the_row_invalid_not_timed(monkeypatch, output, words):
    with pytest.raises(outputs.InvalidOutputs) as error:
        online_row(monkeypatch, output)
    assert words in str(error.value)
    assert "expected one of the task's target strings ('0', '1'" in str(error.value)


class OfflineModel(TimedModel):
    """The offline handshake on a fake clock: 1/8 s to read the inputs, `seconds` to predict,
    1/16 s to write the outputs."""

    def offline(self, config, timeout, on_line):
        loaded, predicted, written = OFFLINE_LINES
        count = len(pathlib.Path(config["offline_data_path"]).read_text().splitlines())
        count = min(count, config["limit"]) if config["limit"] > 0 else count
        self.clock.work(1 / 8)
        on_line[loaded]()
        self.clock.work(self.seconds)
        on_line[predicted]()
        output = json.dumps({"output": self.output}) + "\n"
        pathlib.Path(config["offline_output_path"]).write_text(output * count)
        self.clock.work(1 / 16)
        on_line[written]()


def test_offline_times_ready_to_predicted_without_the_meters_start_and_stop(monkeypatch, tmp_path):
    clock = FakeClock()

    class SlowMeter(StillMeter):  # codecarbon takes seconds to start, a fraction to stop
        def start(self):
            clock.work(2.0)
            return self

        def stop(self):
            clock.work(0.25)
            return super().stop()

    monkeypatch.setattr(runner.energy, "EnergyMeter", SlowMeter)
    model = OfflineModel(clock, 0.5, output="1")
    pool = pool_of(8, target="1")
    scenario = scenarios.get("offline")(scenarios.ScenarioOptions(counts={"offline": 8}))
    settings = runner.Settings(progress=False, clock=clock, work_dir=tmp_path)
    row = runner.run_scenario(model, pool, scenario, scenario.schedule(8), settings)
    assert row["time"] == 0.5 and row["throughput"] == 16.0
    assert row["offline_total_seconds"] == 0.5625  # loaded -> written, no meter in between
    assert row["accuracy"] == 1.0 and row["count"] == 8 and "latency" not in row
    assert list(tmp_path.iterdir()) == []  # the offline files are removed


def test_loadgen_batcher_batches_on_its_clock_and_checks_answers():
    pytest.importorskip("mlperf_loadgen")  # serving.loadgen imports nothing of it until run
    from arena_tf.serving import loadgen

    completed = []
    lg = types.SimpleNamespace(
        QuerySampleResponse=lambda id_, data, size: id_, QuerySamplesComplete=completed.extend
    )
    samples = [types.SimpleNamespace(id=100 + i, index=i) for i in range(3)]

    def batcher(output):
        clock = FakeClock()
        model = TimedModel(clock, 0.5, output)
        pool = pool_of(3)
        instance = loadgen.Batcher(
            lg, model, pool, max_batch=2, max_wait=0.0, timeout=5, clock=clock
        )
        for item in [*samples, None]:
            instance.queue.put(item)
        instance.run()  # in this thread: the queue already holds everything
        return instance, model

    good, model = batcher(output="1")
    assert good.error is None and model.sizes == [2, 1] and completed == [100, 101, 102]
    completed.clear()
    bad, model = batcher(output="7")
    assert isinstance(bad.error, outputs.InvalidOutputs) and "'7' is not a label" in str(bad.error)
    assert model.sizes == [2] and completed == [100, 101, 102]  # none left waiting


def test_rate_search_doubles_halves_and_bisects_to_the_highest_passing_rate():
    tried = []

    def trial(rate):
        tried.append(rate)
        return {"rate": rate, "passed": rate <= 10}

    best, results = runner.search_rate(trial, start_rate=4, attempts=6)
    assert tried == [4, 8, 16, 12, 10, 11]
    assert best["rate"] == 10 and len(results) == 6
    assert runner.search_rate(lambda r: {"rate": r, "passed": False}, 4, 3)[0] is None


def timed_row(monkeypatch, name, seconds, **options):
    """A row of scenario `name` over 8 stand-in rows on a model taking `seconds` per batch."""
    monkeypatch.setattr(runner.energy, "EnergyMeter", StillMeter)
    clock = FakeClock()
    model = TimedModel(clock, seconds)
    scenario = scenarios.get(name)(scenarios.ScenarioOptions(batch_size=4, **options))
    settings = runner.Settings(progress=False, clock=clock)
    schedule = scenario.schedule(8)
    return runner.run_scenario(model, pool_of(8), scenario, schedule, settings), model, schedule


def test_single_stream_goes_round_its_schedule_until_mlperfs_minimum_duration(monkeypatch):
    row, model, schedule = timed_row(
        monkeypatch,
        "single_stream",
        1 / 4,
        min_duration_s=8.0,
        min_queries=10,
        counts={"single_stream": 5},
    )
    assert model.sizes == [1] * 33  # the warm-up, then 32 queries of 1/4 s make the 8 s
    assert row["time"] == 8.0 and row["count"] == row["batches"] == 32
    assert row["passes"] == 32 / 5 and "repeated the 5-instance schedule" in row["repeated"]
    sent = np.resize(schedule.indices, 32)  # the same queries again, in the schedule's order
    assert row["accuracy"] == 1.0 and len(sent) == row["count"]


def test_single_stream_meets_the_minimum_query_count_too_and_zero_means_one_pass(monkeypatch):
    row, _, _ = timed_row(
        monkeypatch,
        "single_stream",
        1 / 4,
        min_duration_s=1.0,
        min_queries=12,
        counts={"single_stream": 5},
    )
    assert (row["count"], row["time"]) == (12, 3.0)
    row, _, _ = timed_row(
        monkeypatch,
        "single_stream",
        1 / 4,
        min_duration_s=0.0,
        min_queries=0,
        counts={"single_stream": 5},
    )
    assert (row["count"], row["passes"], row["repeated"]) == (5, 1.0, "")


def test_batch_scenarios_time_pentathlons_one_pass_whatever_the_minimums(monkeypatch):
    row, model, _ = timed_row(monkeypatch, "fixed_batch", 1 / 4, min_duration_s=60.0)
    assert model.sizes == [4, 4, 4] and row["count"] == 8 and row["repeated"] == ""


def test_single_stream_rows_carry_loadgens_early_stopping_estimates(monkeypatch):
    row, _, _ = timed_row(
        monkeypatch,
        "single_stream",
        1 / 8,
        min_duration_s=0.0,
        min_queries=100,
        counts={"single_stream": 100},
    )
    assert row["request_latency_p90_ms"] == row["request_latency_p90_early_ms"] == 125.0
    assert row["request_latency_p99_early_ms"] is None  # 662 queries needed


def test_server_trials_arrive_until_mlperfs_minimums_on_the_same_gaps():
    short = scenarios.get("server")(scenarios.ScenarioOptions(min_duration_s=0, min_queries=0))
    longer = scenarios.get("server")(
        scenarios.ScenarioOptions(min_duration_s=30.0, min_queries=100)
    )
    first, extended = short.arrivals(100.0, 16), longer.arrivals(100.0, 16)
    assert len(first) == 16 and extended[-1] >= 30.0 > extended[-2]
    np.testing.assert_allclose(extended[:16], first)
    assert len(longer.arrivals(1.0, 16)) == 100  # at 1/s, 100 queries outlast 30 s
