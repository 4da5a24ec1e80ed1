"""The inference bench, a driver of Efficiency Pentathlon's protocol: exported models x runtimes x
precisions x scenarios, or any Pentathlon submission, -> one row each.

    python -m serving.bench runs/listops-performer --runtime tf,onnxruntime --precision fp32,bf16 \\
        --scenario all --device cpu --out runs/serving/performer
    python -m serving.bench --command "python my_submission.py" --task=listops \\
        --data-dir=data/listops --scenario fixed_batch,random_batch

A RUN_DIR target is `python -m serving.submission RUN_DIR --runtime R --precision P` for each
runtime and precision; a --command target is that command (the reference submission's shape:
`--offline` appended for the offline scenario, or --offline-command). Each target runs in one
process for all its online scenarios (a fresh one after a failure) and a second, started with
--offline, for the offline scenario; both speak Pentathlon's stdio protocol
(arena_tf/serving/protocol.py): the task split's rows in (python -m arena_tf.data rows), label
strings out. Scenarios, names and defaults are Pentathlon's (arena_tf/serving/scenarios.py), plus
our server scenario.

Each row records accuracy (outputs compared as strings with the rows' targets), Pentathlon's
metrics (time, latency per batch, instances/s, output words/s), latency percentiles end to end and
inside the model process (from the submission's side channel on stderr, which also says the runtime
and precision it used), peak RSS and GPU memory, energy, parameters, size on disk and MOROCCO
fitness. A combination that cannot run is an "unsupported" row; a submission that prints the
sentinel, crashes or hangs (killed after --timeout), or answers the wrong number of outputs is a
"failed" row; one whose outputs are not strings of the task's label set is an "invalid" row, with
no timings and out of the ratio tables; the next row runs either way. Results go to
OUT/results.jsonl, results.csv, results.md (rewritten atomically after every row), radar and
bubble charts (PNG), and the model processes' logs to OUT/logs/; OUT defaults to runs/serving/<run
names>. The offline scenario's files go to OUT/work/offline/ (serving.submission gets
--offline-dir OUT/work and touches no other path). One bench holds OUT at a time (a lock naming its
pid); an OUT that holds an earlier run's results.jsonl is refused unless --append (keep its rows,
add these) or --overwrite (replace them) says what to do with them, except the rows of a run that
stopped or failed, which the next run replaces (arena_tf/serving/results_dir.py).

Exit status: 0 when every row ran or was unsupported and at least one was measured; 1 when nothing
was measured (every row unsupported, failed or invalid) or a row failed or was invalid; 2 on a
user's mistake (bad arguments, a missing run directory, unknown names). Errors are one line on
stderr, `error: <what>; expected <what>; <how to fix>` (`--debug` shows the traceback); progress
goes to stdout.
"""

import dataclasses
import json
import math
import os
import pathlib
import shlex
import subprocess
import sys

from arena_tf import cli, tasks
from arena_tf.host import cpu_model
from arena_tf.precision import SYNONYMS as PRECISION_SYNONYMS
from arena_tf.serving import (
    artifacts,
    gpu,
    instances,
    loadgen,
    plots,
    report,
    results_dir,
    runtimes,
    scenarios,
)
from arena_tf.serving.metrics import fitness, latency_summary
from arena_tf.serving.outputs import InvalidOutputs
from arena_tf.serving.protocol import ModelError, ModelProcess, peak_rss_bytes
from arena_tf.serving.runner import Settings, run_scenario

PROJECT_ROOT = pathlib.Path(__file__).resolve().parents[2]  # the checkout holding arena_tf/
DEFAULT_OUT_ROOT = pathlib.Path("runs") / "serving"


class BenchError(cli.UsageError):
    """A user's mistake on the command line (exit 2): `BenchError(what, expected, fix)`."""


class NothingMeasured(cli.RunError):
    """The run itself measured nothing (exit 1)."""


@dataclasses.dataclass
class Target:
    """One submission under test in one configuration: its task, how to start it online and
    offline, or why it cannot run. A RUN_DIR target (`run_dir` set) is serving.submission over an
    exported artifact."""

    model: str
    runtime: str
    precision: str
    task: str
    task_config: dict
    metadata: dict
    command: list = None
    offline_command: list = None
    run_dir: str = None
    artifact: str = None
    unsupported: str = ""

    @property
    def label(self):
        return f"{self.model} {self.runtime}/{self.precision}"


# -- arguments ----------------------------------------------------------------------------------


def names(items, allowed, option):
    """The list flag's `items`, each checked against `allowed`."""
    unknown = [item for item in items if item not in allowed]
    if unknown or not items:
        raise BenchError(
            f"{option} {','.join(items)!r}: unknown {', '.join(unknown) or 'empty list'}",
            f"a comma-separated list of {', '.join(allowed)}",
            f"fix {option}",
        )
    return items


def counts(items):
    """{scenario: count} from repeated --count SCENARIO=N."""
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        known = scenarios.available()
        if name not in known or not value.isdecimal() or int(value) < 1:
            raise BenchError(
                f"--count {item!r} is invalid",
                f"SCENARIO=N with N >= 1 and SCENARIO one of {', '.join(known)}",
                "fix --count",
            )
        out[name] = int(value)
    return out


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m serving.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "run_dirs",
        nargs="*",
        metavar="RUN_DIR",
        help="run directories holding exported artifacts (export/)",
    )
    parser.add_argument(
        "--runtime",
        action=cli.Items,
        default=["tf", "onnxruntime"],
        metavar="RUNTIME",
        help=f"some of {', '.join(runtimes.available())}",
    )
    parser.add_argument(
        "--precision",
        action=cli.Items,
        default=["fp32"],
        metavar="PRECISION",
        help="some of fp32, fp16, bf16",
    )
    parser.add_argument(
        "--scenario",
        action=cli.Items,
        default=["all"],
        metavar="SCENARIO",
        help=f"all, or some of {', '.join(scenarios.available())}",
    )
    parser.add_argument("--device", default="cpu", choices=runtimes.DEVICES)
    parser.add_argument("--out", help=f"output directory (default {DEFAULT_OUT_ROOT}/<run names>)")
    results_dir.add_arguments(parser)
    parser.add_argument(
        "--command",
        help="benchmark this Pentathlon submission (a command line) "
        "instead of the exported artifacts; rows of RUN_DIR's task or --task",
    )
    parser.add_argument(
        "--offline-command",
        help="with --command: the offline scenario's "
        "command (default: --command with --offline appended)",
    )
    parser.add_argument("--name", help="the model's name in the report for --command")
    parser.add_argument("--task", help="with --command and no RUN_DIR: the task whose rows to send")
    parser.add_argument("--data-dir", help="where the task's data is (default: the run's config)")
    parser.add_argument(
        "--batch-size", type=int, default=scenarios.BATCH_SIZE, help="fixed_batch's batch size"
    )
    parser.add_argument(
        "--poisson-mean",
        type=float,
        default=float(scenarios.BATCH_SIZE),
        help="random_batch's mean batch size (Poisson lambda)",
    )
    parser.add_argument(
        "--poisson-draws",
        type=int,
        default=scenarios.POISSON_DRAWS,
        help="random_batch's number of Poisson draws (at most that many batches)",
    )
    parser.add_argument(
        "--count",
        action="append",
        default=[],
        metavar="SCENARIO=N",
        help="instances of a scenario (defaults: fixed_batch the whole test "
        "split, random_batch 4000, single_stream 1000, offline 8000, server 1000 "
        "per trial)",
    )
    parser.add_argument(
        "--limit",
        type=int,
        help="Pentathlon's --limit: keep N instances of each "
        "online scenario (a seeded choice), the first N offline (single_stream "
        "still repeats them up to --min-duration and --min-queries)",
    )
    parser.add_argument("--server-max-batch", type=int, default=8)
    parser.add_argument("--server-max-wait-ms", type=float, default=5.0)
    parser.add_argument(
        "--server-p99-ms",
        type=float,
        default=100.0,
        help="the p99 latency bound of the server scenario",
    )
    parser.add_argument("--server-trials", type=int, default=6, help="rates tried by the search")
    parser.add_argument(
        "--server-rate",
        type=float,
        help="first rate tried (default: half the throughput of one max-size batch)",
    )
    parser.add_argument(
        "--min-duration",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="MLPerf's minimum duration: single_stream repeats its schedule, and "
        "each server trial draws arrivals, until a run lasts this long",
    )
    parser.add_argument(
        "--min-queries",
        type=int,
        default=1000,
        metavar="N",
        help="MLPerf's minimum query count for single_stream and each server trial "
        "(0 and --min-duration 0: Pentathlon's single pass)",
    )
    parser.add_argument(
        "--loadgen",
        action="store_true",
        help="also run SingleStream, Server and Offline through MLPerf LoadGen",
    )
    parser.add_argument(
        "--loadgen-min-ms",
        type=float,
        default=10_000.0,
        help="LoadGen's minimum duration per scenario",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for any answer before killing the model",
    )
    parser.add_argument(
        "--startup-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the first answer (model loading)",
    )
    parser.add_argument(
        "--bare-loop",
        action="store_true",
        help="after each single-stream row, time the same rows in a bare "
        "predict loop (serving/bare_loop.py) and report the row's latency over it",
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="no progress bars (they show on a terminal only, on stdout)",
    )
    return parser.parse_args(argv)


def scenario_options(args):
    positive = {
        "--batch-size": args.batch_size,
        "--poisson-mean": args.poisson_mean,
        "--poisson-draws": args.poisson_draws,
        "--server-max-batch": args.server_max_batch,
        "--server-trials": args.server_trials,
        "--timeout": args.timeout,
        "--startup-timeout": args.startup_timeout,
        "--server-p99-ms": args.server_p99_ms,
        "--limit": args.limit,
        "--server-rate": args.server_rate,
    }
    non_negative = {
        "--server-max-wait-ms": args.server_max_wait_ms,
        "--loadgen-min-ms": args.loadgen_min_ms,
        "--min-duration": args.min_duration,
        "--min-queries": args.min_queries,
    }
    bad = [
        f"{k}={v:g}"
        for k, v in positive.items()
        if v is not None and not (math.isfinite(v) and v > 0)
    ]  # NaN and infinity too
    if bad:
        raise BenchError(f"{', '.join(bad)} is not positive", "a positive number", "fix the value")
    bad = [f"{k}={v:g}" for k, v in non_negative.items() if not (math.isfinite(v) and v >= 0)]
    if bad:
        raise BenchError(
            f"{', '.join(bad)} is negative or not finite", "zero or more, finite", "fix the value"
        )
    return scenarios.ScenarioOptions(
        batch_size=args.batch_size,
        poisson_mean=args.poisson_mean,
        poisson_draws=args.poisson_draws,
        counts=counts(args.count),
        limit=args.limit,
        server_max_batch=args.server_max_batch,
        server_max_wait_ms=args.server_max_wait_ms,
        server_p99_ms=args.server_p99_ms,
        server_trials=args.server_trials,
        server_start_rate=args.server_rate,
        loadgen_min_duration_ms=args.loadgen_min_ms,
        min_duration_s=args.min_duration,
        min_queries=args.min_queries,
    )


def scenario_names(args):
    chosen = (
        scenarios.available()
        if args.scenario == ["all"]
        else names(args.scenario, scenarios.available(), "--scenario")
    )
    if args.loadgen:
        try:
            loadgen.require()
        except loadgen.LoadgenMissing:
            raise BenchError(
                "--loadgen needs MLPerf LoadGen, which is not installed",
                "the mlperf_loadgen module",
                "pip install mlcommons-loadgen (the serving extra)",
            ) from None
        chosen += list(loadgen.SCENARIOS)
    return chosen


def check_device(device):
    ok, reason = gpu.available() if device == "gpu" else (True, "")
    if not ok:
        raise BenchError(
            f"--device gpu, but {' '.join(reason.split('; '))}",
            "a visible NVIDIA GPU with NVML",
            "run on a machine with an NVIDIA GPU or use --device cpu",
        )


def out_dir(args, targets):
    """--out, or runs/serving/<the models' names> (relative to the current directory, as every
    command's runs/), made; UsageError where a file stands there or on its way, or it cannot be
    made or written (`cli.output_dir`)."""
    if args.out:
        return cli.output_dir(args.out, "--out")
    models = "+".join(dict.fromkeys(t.model for t in targets))
    return cli.output_dir(DEFAULT_OUT_ROOT / (plots.safe_name(models)[:100] or "bench"), None)


# -- targets ------------------------------------------------------------------------------------


def read_runs(run_dirs, need_artifacts):
    """The run directories; BenchError for one that is missing, or (`need_artifacts`) that holds
    no exported artifact at all."""
    runs = []
    for path in run_dirs:
        if not pathlib.Path(path).is_dir():
            what = "is not a directory" if pathlib.Path(path).exists() else "does not exist"
            raise BenchError(
                f"run directory {path} {what}",
                "a directory written by python -m arena_tf.train and export/",
                "check the path",
            )
        try:
            run = artifacts.RunInfo.read(path)
        except (ValueError, OSError) as error:  # a broken config.yaml
            raise BenchError(
                f"run directory {path} cannot be read: {one_line(error)}",
                "a config.yaml written by python -m arena_tf.train",
                "fix or remove the file",
            ) from None
        if need_artifacts and not any((run.path / n).exists() for n in artifacts.ARTIFACT_NAMES):
            raise BenchError(
                f"run directory {path} holds no exported model",
                f"one of {', '.join(artifacts.ARTIFACT_NAMES)} in it",
                f"export it first: python export/to_savedmodel.py {path} (and export/to_onnx.py)",
            )
        if not need_artifacts and not (run.metadata.get("task") or run.task_config.get("name")):
            raise BenchError(
                f"run directory {path} names no task",
                "an exported artifact's metadata or a config.yaml naming the task",
                "pass a run directory written by arena_tf.train, or --task",
            )
        runs.append(run)
    return runs


def submission_command(run_dir, runtime, precision, device):
    """serving.submission over one artifact of `run_dir`, online (add --offline for offline)."""
    return [
        sys.executable,
        "-m",
        "arena_tf.serving.submission",
        str(run_dir),
        "--runtime",
        runtime,
        "--precision",
        precision,
        "--device",
        device,
    ]


def task_of(run):
    return run.task_config.get("name") or run.metadata.get("task")


def artifact_targets(run, runtime_names, precisions, args):
    """Every runtime x precision of one run: serving.submission's command, or why it cannot run."""
    targets = []
    for runtime in runtime_names:
        for precision in precisions:
            target = Target(
                run.name,
                runtime,
                precision,
                task_of(run),
                run.task_config,
                run.metadata,
                run_dir=str(run.path),
            )
            try:
                target.artifact = str(
                    runtimes.artifact_path(run.path, runtime, precision, args.device)
                )
            except runtimes.Unsupported as error:
                target.unsupported = str(error)
            else:
                target.command = submission_command(run.path, runtime, precision, args.device)
                target.offline_command = target.command + ["--offline"]
            targets.append(target)
    return targets


def check_task(name):
    """BenchError unless `name` is a known task."""
    try:
        tasks.lookup(name)
    except ValueError:
        raise BenchError(
            f"--task {name!r} is unknown", f"one of {', '.join(tasks.available())}", "fix --task"
        ) from None


def split_command(text, option):
    """A command line as a list; BenchError when it cannot be parsed or is empty."""
    try:
        command = shlex.split(text)
    except ValueError as error:
        raise BenchError(
            f"{option} {text!r} cannot be parsed: {error}",
            "a shell-style command line",
            "fix the quoting",
        ) from None
    if not command:
        raise BenchError(
            f"{option} is empty",
            "the command that starts the submission",
            f'pass {option} "python my_submission.py"',
        )
    return command


def command_targets(runs, args):
    """The --command submission, once per run (its task's rows) or once for --task."""
    command = split_command(args.command, "--command")
    offline = (
        split_command(args.offline_command, "--offline-command")
        if args.offline_command
        else command + ["--offline"]
    )
    if not runs and not args.task:
        raise BenchError(
            "--command needs a RUN_DIR or --task to know which rows to send",
            "a run directory or --task NAME",
            "add one of them",
        )
    if args.task:
        check_task(args.task)
    sources = [(run.name, task_of(run), run.task_config, run.metadata) for run in runs] or [
        (args.task, args.task, {"name": args.task}, {"task": args.task})
    ]
    return [
        Target(
            args.name or name,
            "command",
            "-",
            task,
            task_config,
            metadata,
            command=command,
            offline_command=offline,
            artifact=args.command,
        )
        for name, task, task_config, metadata in sources
    ]


def all_targets(args):
    runs = read_runs(args.run_dirs, need_artifacts=not args.command)
    if args.command:
        return command_targets(runs, args)
    if not runs:
        raise BenchError(
            "no RUN_DIR given",
            "one or more run directories, or --command with --task",
            "python -m serving.bench runs/<run>",
        )
    runtime_names = names(args.runtime, runtimes.available(), "--runtime")
    precisions = names(
        [PRECISION_SYNONYMS.get(p, p) for p in args.precision],
        runtimes.PRECISIONS,
        "--precision",
    )
    return [t for run in runs for t in artifact_targets(run, runtime_names, precisions, args)]


# -- rows ---------------------------------------------------------------------------------------


def load_pool(target, args, cache):
    """The rows of a target's task (cached per task and data): (pool, error)."""
    config = target.task_config
    key = (
        target.task,
        args.data_dir or config.get("data_dir"),
        json.dumps(config.get("params") or {}, sort_keys=True, default=str),
    )
    if key not in cache:
        try:
            cache[key] = (instances.load(target.task, config, args.data_dir), "")
        except cli.UsageError:  # no data where the user said: refused (`run` loads before --out)
            raise
        except Exception as error:  # noqa: BLE001 (recorded in every row of this model)
            cache[key] = (None, f"cannot read the rows: {type(error).__name__}: {one_line(error)}")
    return cache[key]


def child_env(device):
    """A child process's environment: the project importable, quiet TensorFlow, and no visible GPU
    when the device is the CPU."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


class Processes:
    """A target's submission processes: one online process kept across its online rows (a fresh
    one once it has died, e.g. after a failed row), and one --offline process per offline row.
    stderr (and so the side channel) goes to OUT/logs/<target>[-offline].log."""

    def __init__(self, target, settings, log_dir):
        self.target, self.settings = target, settings
        self.stem = log_dir / plots.safe_name(f"{target.model}-{target.runtime}-{target.precision}")
        self.online = None

    def get(self, online):
        """A started process for an online row (the kept one while it lives) or an offline one."""
        if online and self.online is not None and self.online.alive:
            return self.online
        command = self.target.command if online else self.offline_command()
        log = f"{self.stem}.log" if online else f"{self.stem}-offline.log"
        process = ModelProcess(command, child_env(self.settings.device), log).start()
        if online:
            self.online = process
        return process

    def offline_command(self):
        command = self.target.offline_command
        if self.target.run_dir and self.settings.work_dir:
            command = command + ["--offline-dir", str(self.settings.work_dir)]
        return command

    def close(self):
        """End the online process (killed if it does not exit within the timeout)."""
        if self.online is not None:
            self.online.close(self.settings.timeout)
            self.online.kill()


def base_row(target, scenario, device, pool):
    meta = target.metadata
    size = artifacts.size_on_disk(target.artifact) if target.run_dir and target.artifact else None
    return {
        "model": target.model,
        "runtime": target.runtime,
        "precision": target.precision,
        "device": device,
        "scenario": scenario,
        "status": None,
        "note": "",
        "task": target.task,
        "mechanism": meta.get("mechanism"),
        "instances": pool.source if pool else None,
        "parameters": meta.get("parameters"),
        "size_bytes": size,
        "artifact": target.artifact,
        **machine_fields(),
    }


def machine_fields():
    """Where and under what load a row ran: the CPU's model, its cores, the 1-minute load
    average as the row starts."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load_average": round(os.getloadavg()[0], 2),
    }


def measure(target, name, pool, options, settings, process, log_dir):
    """Run scenario `name` on a started process; the measured fields."""
    if name in loadgen.SCENARIOS:
        return loadgen.run(name, process, pool, options, settings, log_dir / "loadgen" / name)
    scenario = scenarios.get(name)(options)
    schedule = scenario.schedule(len(pool))
    fields = run_scenario(process, pool, scenario, schedule, settings, f"{target.label} {name}")
    cycled = (
        f"cycled through the {len(pool)}-row split ({schedule.count} instances)"
        if schedule.cycled
        else ""
    )
    return {
        "count": schedule.count,
        "batches": len(schedule.batches) if scenario.online else 1,
        "cycled": cycled,
        **fields,
    }  # the runner's count and batches win where it gives them


def is_online(name):
    """Whether scenario `name` runs on the online process (LoadGen's all do)."""
    return name not in scenarios.available() or scenarios.get(name).online


def side_fields(events, first_of_row, timed):
    """Row fields from the submission's side-channel events (serving/submission.py), those from
    index `first_of_row` on being this row's: in-model latency of the timed batches, the runtime
    it used, its offline prediction time."""
    loaded = next((e for e in events if e.get("event") == "loaded"), {})
    events = events[first_of_row:]
    seconds = [e.get("predict_seconds") for e in events if e.get("event") == "batch"]
    first, count = timed or (0, 0)
    timed_seconds = seconds[first : first + count if count is not None else None] if timed else []
    offline = next((e for e in events if e.get("event") == "offline"), {})
    return {
        **latency_summary(timed_seconds, "model_latency"),
        "runtime_used": loaded.get("runtime"),
        "precision_used": loaded.get("precision"),
        "providers": loaded.get("providers"),
        "load_seconds": loaded.get("load_seconds"),
        "model_offline_seconds": offline.get("seconds"),
    }


def peak_rss(process, events):
    """The model process's peak resident memory so far: /proc while it runs, else what it said as
    it exited (its side channel), else what was read at its end."""
    if process.alive:
        return peak_rss_bytes(process.pid)
    said = next((e.get("peak_rss_bytes") for e in events if e.get("event") == "exit"), None)
    return said or (process.exit or {}).get("peak_rss_bytes")


# Joined into the row's note.
NOTE_FIELDS = ("cycled", "repeated", "server_note", "loadgen_invalid_reason")


def execute(target, name, pool, options, settings, process, log_dir):
    """Measure scenario `name` on `process`: (fields, status, reasons). A process that failed is
    killed (the next online row starts a new one); an offline process is ended here."""
    try:
        fields = measure(target, name, pool, options, settings, process, log_dir)
        if not is_online(name):
            ended = process.close(settings.timeout)
            if ended["killed"] or ended["returncode"]:
                return fields, "ok", [f"after the run the model {exit_words(ended)}"]
        return fields, "ok", []
    except ModelError as error:
        status = "unsupported" if error.kind == "unsupported" else "failed"
        process.kill()
        return {}, status, [str(error) + ("; killed" if error.kind == "timeout" else "")]
    except InvalidOutputs as error:  # answered, but not with labels of the task: no timings
        return {}, "invalid", [str(error)]
    except Exception as error:  # noqa: BLE001 (a bad answer or a bench-side failure: this row only)
        process.kill()
        return {}, "failed", [f"{type(error).__name__}: {error}"]


def run_row(target, name, pool, pool_error, options, settings, processes):
    """One row: run the scenario on the target's process, collect every metric."""
    row = base_row(target, name, settings.device, pool)
    if target.unsupported or pool_error:
        return {
            **row,
            "status": "unsupported" if target.unsupported else "failed",
            "note": target.unsupported or pool_error,
        }
    try:
        process = processes.get(is_online(name))
    except ModelError as error:
        return {**row, "status": "failed", "note": str(error)}
    before = len(process.events())
    fields, status, reasons = execute(
        target,
        name,
        pool,
        options,
        settings,
        process,
        processes.stem.parent
        / plots.safe_name(f"{target.model}-{target.runtime}-{target.precision}-{name}"),
    )
    events = process.events()
    row.update({k: v for k, v in fields.items() if k not in NOTE_FIELDS and k[0] != "_"})
    row.update(side_fields(events, before, fields.get("_timed_batches")))
    notes = [*reasons, *(fields.get(k) for k in NOTE_FIELDS)]
    row.update(
        status=status,
        note="; ".join(n for n in notes if n),
        peak_rss_bytes=peak_rss(process, events),
        log=str(process.log_path),
    )
    memory = row.get("peak_gpu_bytes") or row["peak_rss_bytes"]
    row["fitness"] = fitness(row.get("accuracy"), row.get("throughput"), memory)
    if settings.bare_loop and name == "single_stream" and status == "ok" and target.run_dir:
        compared = compare_with_bare_loop(row, target, pool, options, settings, processes.stem)
        failure = compared.pop("note", "")
        row.update(compared, note="; ".join(n for n in (row["note"], failure) if n))
    return row


def compare_with_bare_loop(row, target, pool, options, settings, stem):
    """The single-stream row's rows timed by serving.bare_loop in a fresh process, and the ratios
    of the row's mean latencies (end to end, and inside the model process) to that loop's."""
    schedule = scenarios.get("single_stream")(options).schedule(len(pool))
    rows, summary = stem.with_suffix(".bare.in.jsonl"), stem.with_suffix(".bare.json")
    log = stem.with_suffix(".bare.log")
    rows.write_bytes(b"".join(pool.fragments[i] + b"\n" for i in schedule.indices))
    command = [
        sys.executable,
        "-m",
        "arena_tf.serving.bare_loop",
        target.run_dir,
        "--runtime",
        target.runtime,
        "--precision",
        target.precision,
        "--device",
        settings.device,
        "--rows",
        str(rows),
        "--out",
        str(summary),
    ]
    with open(log, "wb") as log_file:
        try:
            subprocess.run(
                command,
                env=child_env(settings.device),
                stdout=log_file,
                stderr=log_file,
                timeout=settings.startup_timeout,
                check=True,
            )
        except (subprocess.SubprocessError, OSError) as error:
            return {"note": f"the bare loop failed ({error}); see {log}"}
        finally:
            rows.unlink(missing_ok=True)
    fields = read_json(summary)
    bare = fields.get("bare_loop_latency_mean_ms")
    ratios = {
        f"{kind}_over_bare_loop": row[key] / bare if bare and row.get(key) else None
        for kind, key in (
            ("end_to_end", "request_latency_mean_ms"),
            ("in_model", "model_latency_mean_ms"),
        )
    }
    return {**fields, **ratios}


def read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return {}


def exit_words(ended):
    return (
        "did not exit and was killed"
        if ended["killed"]
        else f"exited with code {ended['returncode']}"
    )


def summary_line(index, total, row):
    parts = [
        f"[{index}/{total}] {row['model']} {row['runtime']}/{row['precision']} "
        f"{row['scenario']}: {row['status']}"
    ]
    if row.get("throughput") is not None:
        parts.append(f"{row['throughput']:.1f} inst/s")
    if row.get("request_latency_p99_ms") is not None:
        parts.append(f"p99 {row['request_latency_p99_ms']:.2f} ms")
    if row.get("note"):
        parts.append(row["note"][:200])
    return ", ".join(parts)


def one_line(text, limit=200):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def nothing_to_run(targets):
    """NothingMeasured when no target can run here (known before any process starts or anything
    is written)."""
    reasons = list(
        dict.fromkeys(f"{t.runtime}/{t.precision}: {one_line(t.unsupported, 120)}" for t in targets)
    )
    more = f" and {len(reasons) - 3} more" if len(reasons) > 3 else ""
    return NothingMeasured(
        f"nothing to measure: every one of the {len(targets)} runtime/precision combinations is "
        f"unsupported here ({' | '.join(reasons[:3])}{more})",
        "at least one combination this machine can run",
        f"pick others with --runtime ({', '.join(runtimes.available())}) and --precision "
        f"({', '.join(runtimes.PRECISIONS)}), or export the missing artifacts",
    )


def outcome(rows, out):
    """None when something was measured and no row failed; the RunError to raise otherwise."""
    count = {status: sum(r["status"] == status for r in rows) for status in results_dir.STATUSES}
    tally = ", ".join(f"{n} {status}" for status, n in count.items() if n and status != "ok")
    first = next((r for r in rows if r["status"] in ("failed", "invalid")), rows[0])
    example = (
        f"{first['model']} {first['runtime']}/{first['precision']} {first['scenario']}: "
        f"{one_line(first['note'])}"
    )
    where = f"see {out}/results.md and the model logs in {out}/logs"
    if not count["ok"]:
        return NothingMeasured(
            f"nothing was measured: {tally} of {len(rows)} rows (first: {example})",
            "at least one row that runs with valid outputs",
            where,
        )
    if count["failed"] or count["invalid"]:
        return cli.RunError(
            f"{tally} of {len(rows)} rows (first: {example})",
            "every row to run with valid outputs or be unsupported",
            where,
        )
    return None


def run_target(target, chosen, pools, args, options, settings, out, rows, total, kept=()):
    """Every chosen scenario of one target, appended to `rows` (reports rewritten after each,
    after the `kept` rows of an earlier run)."""
    pool, pool_error = load_pool(target, args, pools)
    processes = Processes(target, settings, out / "logs")
    try:
        for name in chosen:
            rows.append(run_row(target, name, pool, pool_error, options, settings, processes))
            print(summary_line(len(rows), total, rows[-1]), flush=True)
            report.write_all(
                [*kept, *rows],
                out,
                report.notes([*kept, *rows]) + [results_dir.unfinished_note(len(rows), total)],
            )
    finally:
        processes.close()


def run(args):
    chosen = scenario_names(args)
    options = scenario_options(args)
    check_device(args.device)
    targets = all_targets(args)
    if all(t.unsupported for t in targets):
        raise nothing_to_run(targets)
    pools = {}
    for target in targets:  # the data read before --out is made: a mistake there writes nothing
        if not target.unsupported:
            load_pool(target, args, pools)
    out = out_dir(args, targets)
    with results_dir.claim(out, args.existing) as kept:  # one bench per --out (locked)
        report.check_numbers(
            kept,
            out / results_dir.RESULTS,  # before measuring, not after
            "fix or delete that row, or pass --overwrite",
        )
        return bench_into(args, chosen, options, targets, out, list(kept), pools)


def bench_into(args, chosen, options, targets, out, kept, pools):
    """Every row of every target into `out`, after the `kept` rows of an earlier run (`pools`:
    load_pool's cache)."""
    (out / "logs").mkdir(parents=True, exist_ok=True)
    results_dir.started(out, len(kept))
    work_dir = (out / "work").resolve()  # serving.submission's --offline-dir: offline files only
    work_dir.mkdir(exist_ok=True)
    settings = Settings(
        device=args.device,
        timeout=args.timeout,
        startup_timeout=args.startup_timeout,
        work_dir=work_dir,
        progress=not args.quiet,
        bare_loop=args.bare_loop,
    )
    rows = []
    try:
        for target in targets:
            run_target(
                target,
                chosen,
                pools,
                args,
                options,
                settings,
                out,
                rows,
                len(targets) * len(chosen),
                kept,
            )
    finally:
        try:
            work_dir.rmdir()  # empty after every row; kept (for a look) if a file was left
        except OSError:
            pass
    error = outcome(rows, out)
    paths, notes = plots.write_all([*kept, *rows], out)
    unfinished = [results_dir.unfinished_note(len(rows), len(rows))] if error else []
    report.write_all([*kept, *rows], out, report.notes([*kept, *rows]) + notes + unfinished)
    for note in notes:
        print(note)
    print(f"wrote {out}/results.jsonl, results.csv, results.md and {len(paths)} plots", flush=True)
    if error:
        raise error
    results_dir.finished(out)
    return 0


def main(argv=None):
    """Command line: run the serving bench over its targets, one row each.

    Args:
        argv: the command-line arguments after the program name (default: sys.argv[1:]);
            `--help` lists them.

    Exit status:
        0 when every row ran or was unsupported and at least one was measured; 1 when nothing
            was measured or a row failed or was invalid; 2 on a user's mistake.

    Example:
        python -m serving.bench runs/listops-performer --runtime onnxruntime --scenario all

    References:
        Peng et al., 2023, "Efficiency Pentathlon: A Standardized Arena for Efficiency
            Evaluation", arXiv:2307.09701; github.com/allenai/efficiency-pentathlon.
    """
    args = parse_args(argv)
    return cli.run_main(lambda: run(args), debug=args.debug, failures=(OSError,))


if __name__ == "__main__":
    cli.prepare_process()  # before the rows' task imports TensorFlow
    sys.exit(main())
