"""MLPerf Inference LoadGen's SingleStream, Server and Offline scenarios over the model process.

LoadGen (PyPI `mlcommons-loadgen`, `import mlperf_loadgen`) issues the queries and times them;
this module is the system under test that forwards them, through a dynamic batcher, to the same
model process over the stdio protocol. Headline metrics as MLPerf defines them: SingleStream, the
90th percentile latency; Server, the completed queries per second at the target rate with the
99th percentile latency bound; Offline, samples per second. LoadGen's own verdict (VALID /
INVALID, e.g. too few queries for its early-stopping rule on a short run) is reported as is.

    fields = loadgen.run("loadgen_server", process, pool, options, settings, log_dir)
"""

import json
import pathlib
import queue
import threading

from arena_tf.serving import clock as clocks
from arena_tf.serving import metrics, outputs
from arena_tf.serving.runner import Window, send, warm_up

SCENARIOS = {
    "loadgen_single_stream": "SingleStream",
    "loadgen_server": "Server",
    "loadgen_offline": "Offline",
}
COUNT_OF = {
    "loadgen_single_stream": "single_stream",
    "loadgen_server": "server",
    "loadgen_offline": "offline",
}
DEFAULT_COUNTS = {"single_stream": 1000, "server": 1000, "offline": 8000}
INSTALL_HINT = (
    "--loadgen needs MLPerf LoadGen, which is not installed: pip install "
    "mlcommons-loadgen (it provides `import mlperf_loadgen`)"
)


class LoadgenMissing(ImportError):
    """mlperf_loadgen cannot be imported; the message says how to install it."""


def require():
    """The mlperf_loadgen module; LoadgenMissing with the install command otherwise."""
    try:
        import mlperf_loadgen
    except ImportError:
        raise LoadgenMissing(INSTALL_HINT) from None
    return mlperf_loadgen


class Batcher(threading.Thread):
    """Takes LoadGen samples from a queue, sends them in batches of at most `max_batch` (waiting at
    most `max_wait` s on `clock` for a batch to fill) and completes them. Answers are checked
    against the task's label strings (arena_tf/serving/outputs.py). A model failure or invalid
    answer is kept in `error` and later samples are completed unanswered, so LoadGen never waits
    forever. (LoadGen issues queries on the real clock; the wait for more samples blocks on the
    queue for what the clock says is left.)"""

    def __init__(self, lg, process, pool, max_batch, max_wait, timeout, clock=clocks.SYSTEM):
        super().__init__(daemon=True)
        self.lg, self.process, self.pool = lg, process, pool
        self.max_batch, self.max_wait, self.timeout = max_batch, max_wait, timeout
        self.clock = clock
        self.queue = queue.Queue()
        self.error = None

    def run(self):
        while True:
            first = self.queue.get()
            if first is None:
                return
            batch = [first] + self.fill(self.clock.now() + self.max_wait)
            if self.error is None:
                try:
                    answer, _ = send(
                        self.process, self.pool, [s.index for s in batch], self.timeout, self.clock
                    )
                    outputs.check(answer, self.pool.labels)
                except Exception as error:  # noqa: BLE001 (kept and reported as the row's failure)
                    self.error = error
            self.lg.QuerySamplesComplete([self.lg.QuerySampleResponse(s.id, 0, 0) for s in batch])

    def fill(self, deadline):
        more = []
        while len(more) + 1 < self.max_batch:
            try:
                item = self.queue.get(timeout=max(0.0, deadline - self.clock.now()))
            except queue.Empty:
                break
            if item is None:
                self.queue.put(None)
                break
            more.append(item)
        return more


def settings_for(lg, name, options, capacity):
    """LoadGen TestSettings for scenario `name`; `capacity` is a rough instances/s estimate."""
    key = COUNT_OF[name]
    count = options.counts.get(key, DEFAULT_COUNTS[key])
    count = min(count, options.limit) if options.limit else count
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, SCENARIOS[name])
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = int(options.loadgen_min_duration_ms)
    settings.min_query_count = count
    settings.max_query_count = count if name != "loadgen_offline" else 0
    settings.single_stream_expected_latency_ns = int(1e9 / capacity)
    settings.server_target_qps = options.server_start_rate or 0.5 * capacity
    settings.server_target_latency_ns = int(options.server_p99_ms * 1e6)
    settings.server_target_latency_percentile = 0.99
    settings.offline_expected_qps = capacity
    return settings


EARLY_STOPPING = "early_stopping_latency_"


def read_results(log_dir):
    """{key: value} of LoadGen's result_* entries (the prefix dropped) and its early-stopping
    estimates in mlperf_log_detail.txt."""
    results = {}
    for line in (pathlib.Path(log_dir) / "mlperf_log_detail.txt").read_text().splitlines():
        if line.startswith(":::MLLOG"):
            entry = json.loads(line[len(":::MLLOG") :])
            key = entry.get("key", "")
            if key.startswith("result_"):
                results[key[len("result_") :]] = entry["value"]
            elif key.startswith(EARLY_STOPPING):  # single stream's p90 (_ss) and p99 (_ms)
                results[key] = entry["value"]
    return results


def row_fields(name, results):
    """Row fields from LoadGen's results: latency (ns -> ms), throughput, validity."""
    latency = {
        f"request_latency_{k}_ms": results.get(v, 0) / 1e6 if v in results else None
        for k, v in (
            ("mean", "mean_latency_ns"),
            ("p50", "50.00_percentile_latency_ns"),
            ("p90", "90.00_percentile_latency_ns"),
            ("p99", "99.00_percentile_latency_ns"),
            ("max", "max_latency_ns"),
        )
    }
    early = {
        f"request_latency_{p}_early_ms": results[EARLY_STOPPING + k] / 1e6
        if results.get(EARLY_STOPPING + k)
        else None
        for p, k in (("p90", "ss"), ("p99", "ms"))
    }
    speed = next(
        (
            results[k]
            for k in (
                "samples_per_second",
                "completed_samples_per_sec",
                "qps_with_loadgen_overhead",
            )
            if k in results
        ),
        None,
    )
    return {
        **latency,
        **early,
        "throughput": speed,
        "loadgen_validity": results.get("validity"),
        "loadgen_invalid_reason": results.get("invalid_reason") or "",
        "server_max_rate": results.get("scheduled_samples_per_sec")
        if name == "loadgen_server"
        else None,
    }


def run(name, process, pool, options, settings, log_dir):
    """One LoadGen scenario against a started model process; the row's measured fields."""
    lg = require()
    max_batch = {
        "loadgen_single_stream": 1,
        "loadgen_server": options.server_max_batch,
        "loadgen_offline": options.batch_size,
    }[name]
    probe = list(range(min(max_batch, len(pool))))
    warm_up(process, pool, probe, settings)
    capacity = len(probe) / max(
        send(process, pool, probe, settings.timeout, settings.clock)[1], 1e-9
    )
    batcher = Batcher(
        lg,
        process,
        pool,
        max_batch,
        options.server_max_wait_ms / 1e3 if name == "loadgen_server" else 0.0,
        settings.timeout,
        settings.clock,
    )
    batcher.start()
    sut = lg.ConstructSUT(lambda samples: [batcher.queue.put(s) for s in samples], lambda: None)
    qsl = lg.ConstructQSL(len(pool), min(len(pool), 1024), lambda s: None, lambda s: None)
    log_settings = lg.LogSettings()
    pathlib.Path(log_dir).mkdir(parents=True, exist_ok=True)
    log_settings.log_output.outdir = str(log_dir)
    log_settings.log_output.copy_summary_to_stdout = False
    try:
        with Window(settings.device, process.pid, settings.clock) as window:
            lg.StartTestWithLogSettings(
                sut, qsl, settings_for(lg, name, options, capacity), log_settings
            )
    finally:
        batcher.queue.put(None)
        batcher.join()
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
    if batcher.error is not None:
        raise batcher.error
    return {
        **window.fields,
        **row_fields(name, read_results(log_dir)),
        "server_p99_bound_ms": options.server_p99_ms if name == "loadgen_server" else None,
        "loadgen_log": str(log_dir),
        "_timed_batches": (2, None),
        "accuracy": None,
        **metrics.latency_summary([], "batch_latency"),
    }
