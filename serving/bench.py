"""The inference bench: exported models x runtimes x precisions x scenarios -> one row each.

    python -m serving.bench runs/listops-performer --runtime tf,onnxruntime --precision fp32,bf16 \\
        --scenario all --device cpu --out runs/serving/performer
    python -m serving.bench runs/listops-performer --command "python my_model.py" --name mine

Each row starts the model in its own process (`python -m serving.worker ARTIFACT ...`, or any
Pentathlon-style `--command`), drives it over the stdio protocol (serving/protocol.py) through one
scenario (serving/scenarios.py) and records accuracy, throughput, latency (end to end, and inside
the model process where it reports it), peak RSS and GPU memory, energy, parameters, size on disk
and MOROCCO fitness. A combination that cannot run is an "unsupported" row; a model that answers
with errors, crashes or hangs (killed after --timeout) is a "failed" row; a model whose outputs are
not predictions of the task (class ids out of range, logits of the wrong length, not numbers) is an
"invalid" row, with no timings and out of the ratio tables; the next row runs either way.
Results go to OUT/results.jsonl, results.csv, results.md (rewritten atomically after every row),
radar and bubble charts (PNG), and the model processes' logs to OUT/logs/; OUT defaults to
runs/serving/<run names>. The offline scenario's files go to OUT/work/, the only directory the
worker may read and write on request (its --offline-dir).

Exit status: 0 when every row ran or was unsupported and at least one was measured; 1 when nothing
was measured (every row unsupported, failed or invalid) or a row failed or was invalid; 2 on a
user's mistake (bad arguments, a missing run directory, unknown names). Errors are one line on
stderr, `error: <what>; expected <what>; <how to fix>` (`--debug` shows the traceback); progress
goes to stdout.
"""

import dataclasses
import json
import os
import pathlib
import shlex
import subprocess
import sys

from arena_tf import cli
from serving import artifacts, gpu, instances, loadgen, plots, report, runtimes, scenarios
from serving.metrics import fitness, latency_summary
from serving.outputs import InvalidOutputs
from serving.protocol import ModelError, ModelProcess
from serving.runner import Settings, run_scenario

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_GENERATED = 2000
DEFAULT_OUT_ROOT = pathlib.Path("runs") / "serving"
STATUSES = ("ok", "unsupported", "failed", "invalid")


class BenchError(cli.UsageError):
    """A user's mistake on the command line (exit 2): `BenchError(what, expected, fix)`."""


class NothingMeasured(cli.RunError):
    """The run itself measured nothing (exit 1)."""


@dataclasses.dataclass
class Target:
    """One model under test in one configuration: how to start it, or why it cannot run. A worker
    target (an exported artifact) gets --offline-dir when its row starts; a --command does not."""

    model: str
    runtime: str
    precision: str
    metadata: dict
    task_config: dict
    command: list = None
    artifact: str = None
    unsupported: str = ""

    @property
    def label(self):
        return f"{self.model} {self.runtime}/{self.precision}"

    @property
    def is_worker(self):
        return self.runtime != "command"


# -- arguments ----------------------------------------------------------------------------------


def names(text, allowed, option):
    """A comma-separated list, each item checked against `allowed`."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [item for item in items if item not in allowed]
    if unknown or not items:
        raise BenchError(f"{option} {text!r}: unknown {', '.join(unknown) or 'empty list'}",
                         f"a comma-separated list of {', '.join(allowed)}",
                         f"fix {option}")
    return items


def counts(items):
    """{scenario: count} from repeated --count SCENARIO=N."""
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        known = scenarios.available()
        if name not in known or not value.isdigit() or int(value) < 1:
            raise BenchError(f"--count {item!r} is invalid",
                             f"SCENARIO=N with N >= 1 and SCENARIO one of {', '.join(known)}",
                             "fix --count")
        out[name] = int(value)
    return out


def parse_args(argv):
    parser = cli.ArgumentParser(prog="python -m serving.bench",
                                description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", nargs="*", metavar="RUN_DIR",
                        help="run directories holding exported artifacts (export/)")
    parser.add_argument("--runtime", default="tf,onnxruntime",
                        help=f"comma-separated: {', '.join(runtimes.available())}")
    parser.add_argument("--precision", default="fp32", help="comma-separated: fp32, fp16, bf16")
    parser.add_argument("--scenario", default="all",
                        help=f"all, or comma-separated: {', '.join(scenarios.available())}")
    parser.add_argument("--device", default="cpu", choices=runtimes.DEVICES)
    parser.add_argument("--out", help=f"output directory (default {DEFAULT_OUT_ROOT}/<run names>)")
    parser.add_argument("--command", help="benchmark this Pentathlon-style stdio command instead "
                        "of the exported artifacts (instances from RUN_DIR or --task)")
    parser.add_argument("--name", help="the model's name in the report for --command")
    parser.add_argument("--task", help="with --command and no RUN_DIR: the task whose instances "
                        "to send (its default max_len unless --max-len)")
    parser.add_argument("--max-len", type=int, help="with --task: the model's sequence length")
    parser.add_argument("--instances", default="auto", choices=instances.KINDS,
                        help="test split, generated tokens, or auto (test split where readable)")
    parser.add_argument("--data-dir", help="where the task's data is (default: the run's config)")
    parser.add_argument("--generated", type=int, help="generated pool size (default: the largest "
                        f"scenario count, else {DEFAULT_GENERATED})")
    parser.add_argument("--batch-size", type=int, default=32, help="fixed batching batch size")
    parser.add_argument("--poisson-mean", type=float, default=32.0,
                        help="mean batch size of Poisson batching")
    parser.add_argument("--count", action="append", default=[], metavar="SCENARIO=N",
                        help="instances of a scenario (defaults: fixed the whole test split, "
                        "poisson 4000, single_stream 1000, offline 8000, server 1000 per trial)")
    parser.add_argument("--limit", type=int, help="cap every scenario's instance count")
    parser.add_argument("--offline-batch-size", type=int, default=32,
                        help="the batch size the worker picks in the offline scenario")
    parser.add_argument("--server-max-batch", type=int, default=8)
    parser.add_argument("--server-max-wait-ms", type=float, default=5.0)
    parser.add_argument("--server-p99-ms", type=float, default=100.0,
                        help="the p99 latency bound of the server scenario")
    parser.add_argument("--server-trials", type=int, default=6, help="rates tried by the search")
    parser.add_argument("--server-rate", type=float, help="first rate tried (default: half the "
                        "throughput of one max-size batch)")
    parser.add_argument("--loadgen", action="store_true",
                        help="also run SingleStream, Server and Offline through MLPerf LoadGen")
    parser.add_argument("--loadgen-min-ms", type=float, default=10_000.0,
                        help="LoadGen's minimum duration per scenario")
    parser.add_argument("--seed", type=int, default=scenarios.DEFAULT_SEED)
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds to wait for any answer before killing the model")
    parser.add_argument("--startup-timeout", type=float, default=600.0,
                        help="seconds to wait for the first answer (model loading)")
    parser.add_argument("--bare-loop", action="store_true",
                        help="after each single-stream row, time the same instances in a bare "
                        "predict loop (serving/bare_loop.py) and report the row's latency over it")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bars (they show on a terminal only, on stdout)")
    return parser.parse_args(argv)


def scenario_options(args):
    positive = {"--batch-size": args.batch_size, "--poisson-mean": args.poisson_mean,
                "--server-max-batch": args.server_max_batch, "--server-trials": args.server_trials,
                "--offline-batch-size": args.offline_batch_size, "--timeout": args.timeout,
                "--startup-timeout": args.startup_timeout, "--server-p99-ms": args.server_p99_ms,
                "--limit": args.limit, "--generated": args.generated, "--max-len": args.max_len,
                "--server-rate": args.server_rate}
    non_negative = {"--server-max-wait-ms": args.server_max_wait_ms,
                    "--loadgen-min-ms": args.loadgen_min_ms}
    bad = [f"{k}={v:g}" for k, v in positive.items() if v is not None and v <= 0]
    if bad:
        raise BenchError(f"{', '.join(bad)} is not positive", "a positive number",
                         "fix the value")
    bad = [f"{k}={v:g}" for k, v in non_negative.items() if v < 0]
    if bad:
        raise BenchError(f"{', '.join(bad)} is negative", "zero or more", "fix the value")
    return scenarios.ScenarioOptions(
        seed=args.seed, batch_size=args.batch_size, poisson_mean=args.poisson_mean,
        counts=counts(args.count), limit=args.limit, server_max_batch=args.server_max_batch,
        server_max_wait_ms=args.server_max_wait_ms, server_p99_ms=args.server_p99_ms,
        server_trials=args.server_trials, server_start_rate=args.server_rate,
        loadgen_min_duration_ms=args.loadgen_min_ms,
    )


def scenario_names(args):
    chosen = scenarios.available() if args.scenario == "all" else names(
        args.scenario, scenarios.available(), "--scenario")
    if args.loadgen:
        try:
            loadgen.require()
        except loadgen.LoadgenMissing:
            raise BenchError("--loadgen needs MLPerf LoadGen, which is not installed",
                             "the mlperf_loadgen module",
                             "pip install mlcommons-loadgen (the serving extra)") from None
        chosen += list(loadgen.SCENARIOS)
    return chosen


def check_device(device):
    ok, reason = gpu.available() if device == "gpu" else (True, "")
    if not ok:
        raise BenchError(f"--device gpu, but {' '.join(reason.split('; '))}",
                         "a visible NVIDIA GPU with NVML",
                         "run on a machine with an NVIDIA GPU or use --device cpu")


def out_dir(args, targets):
    """--out, or runs/serving/<the models' names> (relative to the current directory, as every
    command's runs/); BenchError if it names a file."""
    if args.out:
        out = pathlib.Path(args.out)
    else:
        models = "+".join(dict.fromkeys(t.model for t in targets))
        out = DEFAULT_OUT_ROOT / (plots.safe_name(models)[:100] or "bench")
    if out.exists() and not out.is_dir():
        raise BenchError(f"--out {out} is a file", "a directory for the results",
                         "pass another --out")
    return out


# -- targets ------------------------------------------------------------------------------------


def read_runs(run_dirs, need_artifacts):
    """The run directories; BenchError for one that is missing, or (`need_artifacts`) that holds
    no exported artifact at all."""
    runs = []
    for path in run_dirs:
        if not pathlib.Path(path).is_dir():
            what = "is not a directory" if pathlib.Path(path).exists() else "does not exist"
            raise BenchError(f"run directory {path} {what}",
                             "a directory written by python -m arena_tf.train and export/",
                             "check the path")
        try:
            run = artifacts.RunInfo.read(path)
        except (ValueError, OSError) as error:  # a broken config.yaml
            raise BenchError(f"run directory {path} cannot be read: {one_line(error)}",
                             "a config.yaml written by python -m arena_tf.train",
                             "fix or remove the file") from None
        if need_artifacts and not any((run.path / n).exists() for n in artifacts.ARTIFACT_NAMES):
            raise BenchError(f"run directory {path} holds no exported model",
                             f"one of {', '.join(artifacts.ARTIFACT_NAMES)} in it",
                             f"export it first: python export/to_savedmodel.py {path} "
                             f"(and export/to_onnx.py)")
        if not need_artifacts and not (run.metadata.get("task") or run.task_config.get("name")):
            raise BenchError(f"run directory {path} names no task",
                             "an exported artifact's metadata or a config.yaml naming the task",
                             "pass a run directory written by arena_tf.train, or --task")
        runs.append(run)
    return runs


def artifact_targets(run, runtime_names, precisions, args):
    """Every runtime x precision of one run: a worker command, or why it cannot run."""
    targets = []
    for runtime in runtime_names:
        for precision in precisions:
            target = Target(run.name, runtime, precision, run.metadata, run.task_config)
            try:
                path = runtimes.artifact_path(run.path, runtime, precision, args.device)
            except runtimes.Unsupported as error:
                target.unsupported = str(error)
            else:
                target.artifact = str(path)
                target.command = [sys.executable, "-m", "serving.worker", str(path),
                                  "--runtime", runtime, "--precision", precision,
                                  "--device", args.device,
                                  "--offline-batch-size", str(args.offline_batch_size)]
            targets.append(target)
    return targets


def task_metadata(name, max_len=None):
    """What the bench needs of a model that only names its task: shapes from the task class."""
    from arena_tf import tasks

    try:
        cls = tasks.lookup(name)
    except ValueError:
        raise BenchError(f"--task {name!r} is unknown", f"one of {', '.join(tasks.available())}",
                         "fix --task") from None
    return {"task": name, "max_len": max_len or cls.max_len, "vocab_size": cls.vocab_size,
            "num_inputs": cls.num_inputs, "padding_id": cls.padding_id,
            "num_classes": cls.num_classes}


def command_targets(runs, args):
    """The --command model, once per run (its instances) or once for --task."""
    try:
        command = shlex.split(args.command)
    except ValueError as error:
        raise BenchError(f"--command {args.command!r} cannot be parsed: {error}",
                         "a shell-style command line", "fix the quoting") from None
    if not command:
        raise BenchError("--command is empty", "the command that starts the model",
                         "pass --command \"python my_model.py\"")
    if not runs and not args.task:
        raise BenchError("--command needs a RUN_DIR or --task to know which instances to send",
                         "a run directory or --task NAME", "add one of them")
    sources = [(run.name, run.metadata, run.task_config) for run in runs] or [
        (args.task, task_metadata(args.task, args.max_len), {"name": args.task})]
    return [Target(args.name or name, "command", "-", metadata, task_config, command=command,
                   artifact=args.command) for name, metadata, task_config in sources]


def all_targets(args):
    runs = read_runs(args.run_dirs, need_artifacts=not args.command)
    if args.command:
        return command_targets(runs, args)
    if not runs:
        raise BenchError("no RUN_DIR given", "one or more run directories, or --command",
                         "python -m serving.bench runs/<run>")
    runtime_names = names(args.runtime, runtimes.available(), "--runtime")
    precisions = names(args.precision, runtimes.PRECISIONS, "--precision")
    return [t for run in runs for t in artifact_targets(run, runtime_names, precisions, args)]


# -- rows ---------------------------------------------------------------------------------------


def generated_size(args, options, chosen):
    if args.generated:
        return args.generated
    wanted = [options.counts.get(n, scenarios.get(n).default_count)
              for n in chosen if n in scenarios.available()]
    size = max([w for w in wanted if w] or [DEFAULT_GENERATED])
    return min(size, options.limit) if options.limit else size


def load_pool(target, args, size, cache):
    """The instance pool of a target's task (cached per task and shape): (pool, error)."""
    meta = target.metadata
    key = (meta.get("task"), meta.get("max_len"), meta.get("vocab_size"), meta.get("num_inputs"))
    if key not in cache:
        try:
            cache[key] = (instances.load(meta, target.task_config, args.instances, args.data_dir,
                                         size, args.seed), "")
        except Exception as error:  # recorded in every row of this model
            cache[key] = (None, f"cannot build instances: {type(error).__name__}: {error}")
    return cache[key]


def worker_env(device, report_path=None):
    """A child process's environment: the project importable, quiet TensorFlow, the worker's report
    path when given, and no visible GPU when the device is the CPU."""
    from serving.worker import REPORT_ENV

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH")]))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if report_path is not None:
        env[REPORT_ENV] = str(report_path)
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def base_row(target, scenario, device, pool):
    meta = target.metadata
    on_disk = target.artifact and target.runtime != "command"
    size = artifacts.size_on_disk(target.artifact) if on_disk else None
    return {"model": target.model, "runtime": target.runtime, "precision": target.precision,
            "device": device, "scenario": scenario, "status": None, "note": "",
            "task": meta.get("task"), "mechanism": meta.get("mechanism"),
            "instances": pool.source if pool else None, "parameters": meta.get("parameters"),
            "size_bytes": size, "artifact": target.artifact}


def measure(target, name, pool, options, settings, process, log_dir):
    """Run scenario `name` on a started process; the measured fields."""
    if name in loadgen.SCENARIOS:
        return loadgen.run(name, process, pool, options, settings, log_dir / "loadgen" / name)
    scenario = scenarios.get(name)(options)
    schedule = scenario.schedule(len(pool))
    fields = run_scenario(process, pool, scenario, schedule, settings, f"{target.label} {name}")
    cycled = (f"cycled through the {len(pool)}-instance pool ({schedule.count} instances)"
              if schedule.cycled else "")
    return {"count": schedule.count, "batches": len(schedule.batches), "cycled": cycled, **fields}


def model_latency(worker_report, timed):
    """In-process latency per batch from the worker's report, the timed batches only."""
    seconds = worker_report.get("predict_seconds")
    if seconds is None or timed is None:
        return latency_summary([], "model_latency")
    first, count = timed
    return latency_summary(seconds[first:first + count if count is not None else None],
                           "model_latency")


def read_json(path):
    try:
        return json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return {}


NOTE_FIELDS = ("cycled", "server_note", "loadgen_invalid_reason")  # joined into the row's note


def execute(target, name, pool, options, settings, process, log_dir):
    """Start the model, measure, stop it: (fields, status, reasons); the process never outlives
    this call."""
    try:
        process.start()
        fields = measure(target, name, pool, options, settings, process, log_dir)
        ended = process.close(settings.timeout)
        after = ended["killed"] or ended["returncode"]
        return fields, "ok", [f"after the run the model {exit_words(ended)}"] if after else []
    except ModelError as error:
        status = "unsupported" if error.kind == "unsupported" else "failed"
        return {}, status, [str(error) + ("; killed" if error.kind == "timeout" else "")]
    except InvalidOutputs as error:  # answered, but not with predictions of the task: no timings
        return {}, "invalid", [str(error)]
    except Exception as error:  # a bad answer or a bench-side failure: this row only
        return {}, "failed", [f"{type(error).__name__}: {error}"]
    finally:
        if process.process is not None:
            process.kill()


def run_row(target, name, pool, pool_error, options, settings, out):
    """One row: start the model, run the scenario, stop the model, collect every metric."""
    row = base_row(target, name, settings.device, pool)
    if target.unsupported or pool_error:
        return {**row, "status": "unsupported" if target.unsupported else "failed",
                "note": target.unsupported or pool_error}
    row_id = plots.safe_name(f"{target.model}-{target.runtime}-{target.precision}-{name}")
    log, report_path = out / "logs" / f"{row_id}.log", out / "logs" / f"{row_id}.worker.json"
    report_path.unlink(missing_ok=True)
    command = target.command + (["--offline-dir", str(settings.work_dir)]
                                if target.is_worker and settings.work_dir else [])
    process = ModelProcess(command, worker_env(settings.device, report_path), log)
    fields, status, reasons = execute(target, name, pool, options, settings, process,
                                      out / "logs" / row_id)
    worker = read_json(report_path)
    row.update({k: v for k, v in fields.items() if k not in NOTE_FIELDS and k[0] != "_"})
    row.update(model_latency(worker, fields.get("_timed_batches")))
    peak_rss = (process.exit or {}).get("peak_rss_bytes") or worker.get("peak_rss_bytes")
    notes = [*reasons, *(fields.get(k) for k in NOTE_FIELDS)]
    row.update(status=status, note="; ".join(n for n in notes if n),
               providers=worker.get("providers"), load_seconds=worker.get("load_seconds"),
               model_offline_seconds=worker.get("offline_predict_seconds"),
               peak_rss_bytes=peak_rss, log=str(log))
    memory = row.get("peak_gpu_bytes") or peak_rss
    row["fitness"] = fitness(row.get("accuracy"), row.get("throughput"), memory)
    if settings.bare_loop and name == "single_stream" and status == "ok" and target.artifact:
        compared = compare_with_bare_loop(row, target, pool, options, settings,
                                          out / "logs" / row_id)
        failure = compared.pop("note", "")
        row.update(compared, note="; ".join(n for n in (row["note"], failure) if n))
    return row


def compare_with_bare_loop(row, target, pool, options, settings, stem):
    """The single-stream row's instances timed by serving.bare_loop in a fresh process, and the
    ratios of the row's mean latencies (end to end, and inside the model process) to that loop's."""
    schedule = scenarios.get("single_stream")(options).schedule(len(pool))
    instances, summary = stem.with_suffix(".bare.in.jsonl"), stem.with_suffix(".bare.json")
    log = stem.with_suffix(".bare.log")
    instances.write_bytes(b"".join(pool.fragments[i] + b"\n" for i in schedule.indices))
    command = [sys.executable, "-m", "serving.bare_loop", target.artifact, "--runtime",
               target.runtime, "--precision", target.precision, "--device", settings.device,
               "--instances", str(instances), "--out", str(summary)]
    with open(log, "wb") as log_file:
        try:
            subprocess.run(command, env=worker_env(settings.device), stdout=log_file,
                           stderr=log_file, timeout=settings.startup_timeout, check=True)
        except (subprocess.SubprocessError, OSError) as error:
            return {"note": f"the bare loop failed ({error}); see {log}"}
        finally:
            instances.unlink(missing_ok=True)
    fields = read_json(summary)
    bare = fields.get("bare_loop_latency_mean_ms")
    ratios = {f"{kind}_over_bare_loop": row[key] / bare if bare and row.get(key) else None
              for kind, key in (("end_to_end", "request_latency_mean_ms"),
                                ("in_model", "model_latency_mean_ms"))}
    return {**fields, **ratios}


def exit_words(ended):
    return ("did not exit and was killed" if ended["killed"]
            else f"exited with code {ended['returncode']}")


def summary_line(index, total, row):
    parts = [f"[{index}/{total}] {row['model']} {row['runtime']}/{row['precision']} "
             f"{row['scenario']}: {row['status']}"]
    if row.get("throughput") is not None:
        parts.append(f"{row['throughput']:.1f} inst/s")
    if row.get("request_latency_p99_ms") is not None:
        parts.append(f"p99 {row['request_latency_p99_ms']:.2f} ms")
    if row.get("note"):
        parts.append(row["note"][:200])
    return ", ".join(parts)


def report_notes(rows, settings):
    sources = dict.fromkeys(f"instances of {r['model']}: {r['instances']}" for r in rows
                            if r.get("instances"))
    energy = dict.fromkeys(f"energy: {r['energy_source'] or 'none'}"
                           f"{' (' + r['energy_note'] + ')' if r.get('energy_note') else ''}"
                           for r in rows if "energy_source" in r)
    return [*sources, *energy, f"device: {settings.device}; latency is end to end across the "
            "stdio protocol; in-model latency is measured inside the model process"]


def one_line(text, limit=200):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def nothing_to_run(targets):
    """NothingMeasured when no target can run here (known before any process starts or anything
    is written)."""
    reasons = list(dict.fromkeys(f"{t.runtime}/{t.precision}: {one_line(t.unsupported, 120)}"
                                 for t in targets))
    more = f" and {len(reasons) - 3} more" if len(reasons) > 3 else ""
    return NothingMeasured(
        f"nothing to measure: every one of the {len(targets)} runtime/precision combinations is "
        f"unsupported here ({' | '.join(reasons[:3])}{more})",
        "at least one combination this machine can run",
        f"pick others with --runtime ({', '.join(runtimes.available())}) and --precision "
        f"({', '.join(runtimes.PRECISIONS)}), or export the missing artifacts")


def outcome(rows, out):
    """None when something was measured and no row failed; the RunError to raise otherwise."""
    count = {status: sum(r["status"] == status for r in rows) for status in STATUSES}
    tally = ", ".join(f"{n} {status}" for status, n in count.items() if n and status != "ok")
    first = next((r for r in rows if r["status"] in ("failed", "invalid")), rows[0])
    example = (f"{first['model']} {first['runtime']}/{first['precision']} {first['scenario']}: "
               f"{one_line(first['note'])}")
    where = f"see {out}/results.md and the model logs in {out}/logs"
    if not count["ok"]:
        return NothingMeasured(f"nothing was measured: {tally} of {len(rows)} rows (first: "
                               f"{example})", "at least one row that runs with valid outputs",
                               where)
    if count["failed"] or count["invalid"]:
        return cli.RunError(f"{tally} of {len(rows)} rows (first: {example})",
                            "every row to run with valid outputs or be unsupported", where)
    return None


def run(args):
    chosen = scenario_names(args)
    options = scenario_options(args)
    check_device(args.device)
    targets = all_targets(args)
    out = out_dir(args, targets)
    if all(t.unsupported for t in targets):
        raise nothing_to_run(targets)
    (out / "logs").mkdir(parents=True, exist_ok=True)
    work_dir = (out / "work").resolve()  # the worker's --offline-dir: offline files only here
    work_dir.mkdir(exist_ok=True)
    settings = Settings(device=args.device, timeout=args.timeout,
                        startup_timeout=args.startup_timeout, work_dir=work_dir,
                        progress=not args.quiet, bare_loop=args.bare_loop)
    size, pools, rows = generated_size(args, options, chosen), {}, []
    total = len(targets) * len(chosen)
    try:
        for target in targets:
            pool, pool_error = load_pool(target, args, size, pools)
            for name in chosen:
                rows.append(run_row(target, name, pool, pool_error, options, settings, out))
                print(summary_line(len(rows), total, rows[-1]), flush=True)
                report.write_all(rows, out, report_notes(rows, settings))
    finally:
        try:
            work_dir.rmdir()  # empty after every row; kept (for a look) if a file was left
        except OSError:
            pass
    paths, notes = plots.write_all(rows, out)
    report.write_all(rows, out, report_notes(rows, settings) + notes)
    for note in notes:
        print(note)
    print(f"wrote {out}/results.jsonl, results.csv, results.md and {len(paths)} plots", flush=True)
    error = outcome(rows, out)
    if error:
        raise error
    return 0


def main(argv=None):
    args = parse_args(argv)
    return cli.run_main(lambda: run(args), debug=args.debug, failures=(OSError,))


if __name__ == "__main__":
    cli.quiet_tensorflow()  # before the instance pool imports TensorFlow
    sys.exit(main())
