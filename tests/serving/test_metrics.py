"""Metrics from known timings; energy sources; the server's batcher and rate search."""

import math
import sys
import types

import numpy as np
import pytest

from serving import energy, metrics, runner
from serving.instances import Instances


def test_latency_summary_is_in_milliseconds_with_nearest_rank_percentiles():
    summary = metrics.latency_summary([i / 1000 for i in range(1, 101)], "request_latency")
    assert summary == pytest.approx({
        "request_latency_mean_ms": 50.5, "request_latency_p50_ms": 50.0,
        "request_latency_p90_ms": 90.0, "request_latency_p99_ms": 99.0,
        "request_latency_max_ms": 100.0})
    assert metrics.nearest_rank([0.3, 0.1, 0.2], 50) == 0.2
    assert set(metrics.latency_summary([], "x").values()) == {None}


def test_each_request_in_a_batch_waits_for_its_whole_batch():
    latencies = metrics.per_request([0.010, 0.030], [3, 1])
    np.testing.assert_allclose(latencies, [0.010, 0.010, 0.010, 0.030])
    assert metrics.latency_summary(latencies, "r")["r_p50_ms"] == pytest.approx(10.0)


def test_throughput_accuracy_and_morocco_fitness():
    assert metrics.throughput(100, 2.0) == 50.0
    assert metrics.accuracy([1, 2, 3, 4], np.array([1, 2, 0, 0])) == 0.5
    assert metrics.accuracy([1], None) is None
    assert metrics.fitness(0.5, 100.0, math.exp(10)) == pytest.approx(5.0)
    assert metrics.fitness(None, 100.0, 1e9) is None


def test_outputs_are_class_ids_or_logits():
    assert metrics.predicted_class(3) == 3
    assert metrics.predicted_class([0.1, 2.0, -1.0]) == 1
    with pytest.raises(ValueError, match="class id or a list of logits"):
        metrics.predicted_class("positive")


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

    monkeypatch.setitem(sys.modules, "codecarbon",
                        types.SimpleNamespace(OfflineEmissionsTracker=Tracker))
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


class DelayModel:
    """A stand-in model process: each batch takes `seconds`."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.sizes = []

    def request(self, line, count, timeout):
        import time

        time.sleep(self.seconds)
        self.sizes.append(count)
        return [0] * count


def test_dynamic_batcher_waits_at_most_max_wait_and_latency_includes_queueing():
    pool = Instances([b"[1]"] * 4, None, "test")
    model = DelayModel(0.05)
    arrivals = np.array([0.0, 0.001, 0.002, 0.003])
    latency, seconds, sizes, _ = runner.serve_arrivals(model, pool, [0, 1, 2, 3], arrivals,
                                                       max_batch=2, max_wait=0.02, timeout=5)
    assert sizes == [2, 2]  # the first batch fills at once; the next two queue meanwhile
    assert latency[2] >= 0.095  # waited for the first batch, then its own
    assert latency[0] == pytest.approx(0.05, abs=0.03)


def test_rate_search_doubles_halves_and_bisects_to_the_highest_passing_rate():
    tried = []

    def trial(rate):
        tried.append(rate)
        return {"rate": rate, "passed": rate <= 10}

    best, results = runner.search_rate(trial, start_rate=4, attempts=6)
    assert tried == [4, 8, 16, 12, 10, 11]
    assert best["rate"] == 10 and len(results) == 6
    assert runner.search_rate(lambda r: {"rate": r, "passed": False}, 4, 3)[0] is None
