"""Runs one scenario against one submission process and measures it.

Every online scenario sends its last batch first, once, untimed (Pentathlon's warm-up); timing
starts after its answer. The offline scenario has no warm-up: it times the submission from its
"Start the timer." line to its "Stop the timer." line. A measurement window (wall clock, energy,
peak GPU memory of the model process) covers only the timed part. Request lines are joined from
rows encoded before timing, and outputs are checked after it, so the bench adds as little as it can
to what it measures. Outputs that are not strings of the task's label set raise `InvalidOutputs`
(arena_tf/serving/outputs.py): the row is invalid, not a timed success.

Every wait and every duration reads `settings.clock` (arena_tf/serving/clock.py; the real clock
unless a test gives another), so the scheduling of the server scenario can be checked on simulated
time.

    result = run_scenario(process, pool, scenario, schedule, settings)   # a dict of row fields
"""

import collections
import contextlib
import dataclasses
import json
import pathlib
import sys
import tempfile

import numpy as np

from arena_tf.serving import clock as clocks
from arena_tf.serving import early_stopping, energy, gpu, metrics
from arena_tf.serving import outputs as checks
from arena_tf.serving.protocol import OFFLINE_LINES, ModelError, batch_line


@dataclasses.dataclass
class Settings:
    """How rows run: the device, per-answer timeout, the first answer's timeout (model loading),
    where the offline files go (None: a temporary directory; the bench gives the work directory it
    created, which is also serving.submission's --offline-dir), whether to show progress bars,
    whether to compare single-stream rows with a bare predict loop, and the clock to schedule and
    time by."""

    device: str = "cpu"
    timeout: float = 120.0
    startup_timeout: float = 600.0
    work_dir: pathlib.Path = None
    progress: bool = True
    bare_loop: bool = False
    clock: object = clocks.SYSTEM


class Window:
    """The timed part of a row: elapsed seconds (on `clock`), energy and peak GPU memory of
    process `pid`."""

    def __init__(self, device, pid, clock=clocks.SYSTEM):
        self.device = device
        self.pid = pid
        self.clock = clock
        self.seconds = None
        self.meter = energy.EnergyMeter(device)  # opening sources can be slow: not in the window

    def arm(self):
        """Start the meters (codecarbon takes seconds to start: never inside the timed part)."""
        self.meter.start()
        self.sampler = gpu.MemorySampler(self.pid).start() if self.device == "gpu" else None
        return self

    def begin(self):
        """The timed part starts now."""
        self.started = self.clock.now()
        return self

    def start(self):
        return self.arm().begin()

    def end(self):
        """The timed part ends now; the meters run on until `stop()`."""
        self.seconds = self.clock.now() - self.started
        return self

    def stop(self):
        """End the timed part (unless `end()` did) and read the meters into `fields`."""
        if self.seconds is None:
            self.end()
        self.energy = self.meter.stop()
        peak, note = self.sampler.stop() if self.sampler else (None, "device cpu: no GPU memory")
        self.fields = {
            "time": self.seconds,
            "energy_wh": self.energy.wh,
            "energy_source": self.energy.source,
            "energy_note": self.energy.note,
            "peak_gpu_bytes": peak,
            "peak_gpu_note": note,
        }

    def abandon(self):
        """Stop the meters of a window that will not be used (the row failed), quietly."""
        if getattr(self, "sampler", False) is False or hasattr(self, "fields"):
            return  # never armed, or already stopped
        self.fields = {}
        for stop in (self.meter.stop, self.sampler.stop if self.sampler else None):
            try:
                stop and stop()
            except Exception:  # noqa: BLE001 (the row's own error is the one to report)
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is None:
            self.stop()
        else:
            self.abandon()
        return False


def progress_bar(settings, total, label):
    from tqdm import tqdm

    # On stdout (stderr is for the one error line); shown only on a terminal (disable=None).
    return tqdm(
        total=total,
        desc=label,
        unit="batch",
        disable=None if settings.progress else True,
        mininterval=0.5,
        leave=False,
        file=sys.stdout,
    )


def send(process, pool, indices, timeout, clock=clocks.SYSTEM):
    """One batch round trip: (outputs, seconds from sending the line to reading the answer)."""
    line = batch_line([pool.fragments[i] for i in indices])
    start = clock.now()
    outputs = process.request(line, len(indices), timeout)
    return outputs, clock.now() - start


def warm_up(process, pool, indices, settings):
    """The untimed batch; its answer means the model is ready (and its outputs must be valid).
    Returns its seconds."""
    answer, seconds = send(process, pool, indices, settings.startup_timeout, settings.clock)
    checks.check(answer, pool.labels)
    return seconds


def accuracy_fields(pool, indices, outputs):
    """{"accuracy"} of `outputs` against the rows' targets; InvalidOutputs when any output is not a
    string of the task's label set."""
    checks.check(outputs, pool.labels)
    return {"accuracy": metrics.accuracy(outputs, [pool.targets[i] for i in indices])}


def run_online(process, pool, scenario, schedule, settings, label=""):
    """fixed_batch, random_batch, single_stream: the last batch untimed, then every batch in
    order, one at a time; single_stream goes round again until MLPerf's minimums are met."""
    warm_up(process, pool, schedule.batches[-1], settings)
    outputs, batch_seconds, sent = [], [], []
    clock = settings.clock
    total = None if scenario.repeats else len(schedule.batches)
    with (
        progress_bar(settings, total, label) as bar,
        Window(settings.device, process.pid, clock) as window,
    ):
        start = clock.now()
        for batch in passes(
            schedule.batches, lambda: scenario.enough(clock.now() - start, len(outputs))
        ):
            answer, seconds = send(process, pool, batch, settings.timeout, clock)
            outputs += answer
            batch_seconds.append(seconds)
            sent.append(batch)
            bar.update()
    sizes = [len(b) for b in sent]
    request_seconds = metrics.per_request(batch_seconds, sizes)
    return {
        **window.fields,
        **accuracy_fields(pool, np.concatenate(sent), outputs),
        **metrics.pentathlon(len(outputs), window.seconds, outputs, len(sent)),
        **metrics.latency_summary(request_seconds, "request_latency"),
        **early_stopping.estimate_fields(request_seconds, "request_latency"),
        **metrics.latency_summary(batch_seconds, "batch_latency"),
        **repetition(scenario, schedule, len(outputs)),
        "batches": len(sent),
        "_timed_batches": (1, len(sent)),  # (warm-up, timed batches)
    }


def passes(batches, enough):
    """The batches once, then round again from the first while `enough()` is false (asked before
    each further batch)."""
    yield from batches
    while not enough():
        for batch in batches:
            if enough():
                return
            yield batch


def repetition(scenario, schedule, count):
    """{"count", "passes", "repeated"}: instances sent, passes through the schedule, and a note
    when MLPerf's minimums made it go round again."""
    options = scenario.options
    passes_made = count / schedule.count
    note = (
        f"repeated the {schedule.count}-instance schedule to MLPerf's minimums "
        f"({options.min_duration_s:g} s, {options.min_queries} queries): "
        f"{passes_made:.2f} passes"
        if count > schedule.count
        else ""
    )
    return {"count": count, "passes": passes_made, "repeated": note}


def run_offline(process, pool, scenario, schedule, settings, label=""):
    """Offline: the instances written as JSON Lines, one config line, Pentathlon's three lines;
    timed from "Start the timer." to "Stop the timer." as the bench reads them. The energy meters
    start before the config line and stop after the last line (starting and stopping them takes
    time that would otherwise delay reading the next line), so the energy also covers the model
    reading its input and writing its outputs."""
    if settings.work_dir is None:
        with tempfile.TemporaryDirectory(prefix="serving-offline-") as work_dir:
            return run_offline(
                process,
                pool,
                scenario,
                schedule,
                dataclasses.replace(settings, work_dir=pathlib.Path(work_dir)),
                label,
            )
    folder = pathlib.Path(settings.work_dir).resolve() / "offline"  # Pentathlon's <dir>/offline/
    folder.mkdir(parents=True, exist_ok=True)
    data, output = folder / "data.json", folder / "outputs.json"
    data.write_bytes(b"".join(pool.fragments[i] + b"\n" for i in schedule.indices))
    window = Window(settings.device, process.pid, settings.clock)
    window.arm()  # before the config line: the timed part must not wait for the meters to start
    times = {}

    def at(line, then=lambda: None):
        def mark():
            times[line] = settings.clock.now()  # as read by the bench, not after the meters
            then()

        return mark

    loaded, predicted, written = OFFLINE_LINES
    try:
        process.offline(
            {
                "offline_data_path": str(data),
                "offline_output_path": str(output),
                "limit": schedule.limit,
            },
            settings.timeout,
            on_line={
                loaded: at(loaded, window.begin),
                predicted: at(predicted, window.end),
                written: at(written),
            },
        )
        window.stop()
        count = schedule.count if schedule.limit < 0 else min(schedule.limit, schedule.count)
        outputs = read_outputs(output, count)
    finally:
        window.abandon()  # when the handshake failed before "predicted"; a no-op after it
        for path in (data, output):
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # kept (for a look) if the submission left a file
            folder.rmdir()
    seconds = times[predicted] - times[loaded]
    return {
        **window.fields,
        **accuracy_fields(pool, schedule.indices[:count], outputs),
        **metrics.pentathlon(count, seconds, outputs),
        "count": count,
        "offline_total_seconds": times[written] - times[loaded],
        "_timed_batches": (0, None),  # the submission's own batches, all timed
    }


def read_outputs(path, count):
    """The offline output file: `{"output": ...}` JSON Lines, `count` of them; their outputs."""
    try:
        lines = pathlib.Path(path).read_text().splitlines()
        outputs = [json.loads(line)["output"] for line in lines if line.strip()]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ModelError(
            "protocol", f"offline output file unreadable: {type(error).__name__}: {error}"
        ) from None
    if len(outputs) != count:
        raise ModelError(
            "protocol", f"offline output file has {len(outputs)} outputs for {count} rows"
        )
    return outputs


def serve_arrivals(
    process, pool, indices, arrivals, max_batch, max_wait, timeout, clock=clocks.SYSTEM
):
    """Queries arrive at `arrivals` (s from start); a dynamic batcher sends what is queued once it
    holds `max_batch` queries, its oldest query has waited `max_wait` s, or no query is left to
    come. Returns per-query latency (arrival to answer, queueing included), per-batch seconds and
    sizes, and outputs in query order. Waiting and timing use `clock` (now() and sleep())."""
    count = len(arrivals)
    latency, outputs = np.zeros(count), [None] * count
    batch_seconds, sizes, queue = [], [], collections.deque()
    arrived = done = 0
    start = clock.now()
    while done < count:
        now = clock.now() - start
        while arrived < count and arrivals[arrived] <= now:
            queue.append(arrived)
            arrived += 1
        if not queue:
            clock.sleep(max(0.0, arrivals[arrived] - now))
            continue
        dispatch_at = arrivals[queue[0]] + max_wait
        if len(queue) < max_batch and now < dispatch_at and arrived < count:
            clock.sleep(max(0.0, min(dispatch_at, arrivals[arrived]) - now))
            continue
        taken = [queue.popleft() for _ in range(min(max_batch, len(queue)))]
        answer, seconds = send(process, pool, [indices[q] for q in taken], timeout, clock)
        finished = clock.now() - start
        for query, output in zip(taken, answer):
            latency[query] = finished - arrivals[query]
            outputs[query] = output
        batch_seconds.append(seconds)
        sizes.append(len(taken))
        done += len(taken)
    return latency, batch_seconds, sizes, outputs


def search_rate(trial, start_rate, attempts):
    """The highest passing rate found in `attempts` trials: double while trials pass, halve while
    they fail, then bisect between the best pass and the lowest failure.

    `trial(rate)` returns a dict with at least "rate" and "passed". Returns (best or None, all).
    """
    low = high = None
    rate, results = start_rate, []
    for _ in range(attempts):
        result = trial(rate)
        results.append(result)
        if result["passed"]:
            low = max(rate, low or rate)
        else:
            high = min(rate, high or rate)
        rate = rate * 2 if high is None else rate / 2 if low is None else (low + high) / 2
    passed = [r for r in results if r["passed"]]
    return (max(passed, key=lambda r: r["rate"]) if passed else None), results


def run_server(process, pool, scenario, schedule, settings, label=""):
    """Server: the highest Poisson arrival rate whose p99 latency stays within the bound, and
    provably so by LoadGen's early-stopping rule (arena_tf/serving/early_stopping.py)."""
    options = scenario.options
    max_batch, max_wait = options.server_max_batch, options.server_max_wait_ms / 1e3
    bound = options.server_p99_ms / 1e3
    probe = schedule.indices[:max_batch]
    warm_up(process, pool, probe, settings)
    start_rate = options.server_start_rate or 0.5 * len(probe) / max(
        send(process, pool, probe, settings.timeout, settings.clock)[1], 1e-9
    )
    sent = [2]  # batches the worker has seen: warm-up and probe

    def trial(rate):
        arrivals = scenario.arrivals(rate, schedule.count)
        indices = np.resize(schedule.indices, len(arrivals))  # round again past the schedule
        with (
            progress_bar(settings, None, f"{label} {rate:.1f}/s") as bar,
            Window(settings.device, process.pid, settings.clock) as window,
        ):
            latency, seconds, sizes, outputs = serve_arrivals(
                process,
                pool,
                indices,
                arrivals,
                max_batch,
                max_wait,
                settings.timeout,
                settings.clock,
            )
            bar.update(len(seconds))
        p99 = metrics.nearest_rank(latency, 99)
        proven = early_stopping.server_passes(latency, bound)  # MLPerf: both make a valid run
        result = {
            "rate": rate,
            "passed": p99 <= bound and proven,
            "p99_ms": p99 * 1e3,
            "early_stopping_passed": proven,
            "batches": len(seconds),
            "_timed_batches": (sent[0], len(seconds)),
        }
        sent[0] += len(seconds)
        result.update(
            window.fields,
            **accuracy_fields(pool, indices, outputs),
            **metrics.pentathlon(len(indices), window.seconds, outputs, len(seconds)),
            **metrics.latency_summary(latency, "request_latency"),
            **early_stopping.estimate_fields(latency, "request_latency"),
            **metrics.latency_summary(seconds, "batch_latency"),
            **repetition(scenario, schedule, len(indices)),
        )
        return result

    best, trials = search_rate(trial, start_rate, options.server_trials)
    summary = [
        {k: t[k] for k in ("rate", "p99_ms", "passed", "early_stopping_passed", "count")}
        for t in trials
    ]
    fields = {
        k: v
        for k, v in (best or {}).items()
        if k not in ("rate", "passed", "p99_ms", "early_stopping_passed")
    }
    note = (
        ""
        if best
        else (
            f"no tried rate met p99 <= {options.server_p99_ms:g} ms with LoadGen's "
            f"early-stopping proof; lowest "
            f"tried {min(t['rate'] for t in trials):.3g}/s"
        )
    )
    return {
        **fields,
        "server_max_rate": best["rate"] if best else None,
        "server_p99_bound_ms": options.server_p99_ms,
        "server_trials": summary,
        "server_note": note,
        "_timed_batches": fields.get("_timed_batches", (0, 0)),
    }


RUNNERS = {
    "fixed_batch": run_online,
    "random_batch": run_online,
    "single_stream": run_online,
    "offline": run_offline,
    "server": run_server,
}


def run_scenario(process, pool, scenario, schedule, settings, label=""):
    """The measured fields of one scenario run (see the run_* functions)."""
    return RUNNERS[scenario.name](process, pool, scenario, schedule, settings, label)
