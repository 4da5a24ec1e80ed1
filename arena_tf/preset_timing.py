"""Times the tiny presets (configs/presets/tiny.yaml) as a user runs them: wall time (data
generation included) and test accuracy against chance.

    python -m arena_tf.preset_timing measure [--tasks listops,pathfinder] [--model linformer]
        [--busy 1]
    python -m arena_tf.preset_timing table    # the Markdown table of docs/results/presets.json

`measure` trains each task's tiny preset the way a user would (`python -m arena_tf.train
--preset=tiny`) in a fresh process, on data generated into a fresh folder so that generation is
timed too, optionally beside `--busy N` CPU-bound processes (a user's machine is rarely idle). A
run "learns" when its test accuracy beats chance (the share of the test split's most common label)
by three standard errors of that share on the test set's size; otherwise it is a smoke run, which
shows that the pipeline works and nothing more. A task whose data cannot be had here (TFDS offline,
the LRA release absent) is recorded as not measured, with the reason; `--mock-data` times those
tasks on random stand-ins of the same shapes instead (TFDS's `mock_data` for text and image, random
AAN-format files for retrieval), whose accuracy means nothing and is not reported. Each row replaces
the row of the same task, model and load in `--results` (a JSON file); measuring never edits a
page: `make docs` (tools/regenerate_docs.py) writes the table into
docs/guide/training-and-configs.md, run by hand.
"""

import datetime
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

from arena_tf import cli, config, files
from arena_tf.host import cpu_model
from arena_tf.markdown import table
from arena_tf.training.verdict import verdict

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results" / "presets.json"
SECTION = "presets"  # the markers of the table in the training guide (make docs)
TASKS = ("listops", "text", "retrieval", "image", "pathfinder", "pathx")
MOCK_TFDS_TASKS = ("text", "image")
MOCK_EXAMPLES = {"train": 2000, "validation": 200, "test": 200}
# Runs the trainer inside TFDS's mock: random examples with the real features' shapes and types.
MOCK_TFDS_TRAIN = (
    "import sys, tensorflow_datasets as tfds\n"
    "from arena_tf import train\n"
    f"with tfds.testing.mock_data(num_examples={MOCK_EXAMPLES['train']}):\n"
    "    sys.exit(train.main(sys.argv[1:]))"
)
RETRIEVAL_FILES = {
    "train": "new_aan_pairs.train.tsv",
    "validation": "new_aan_pairs.eval.tsv",
    "test": "new_aan_pairs.test.tsv",
}


def busy_processes(count):
    """`count` processes that each keep one core busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def train_command(task, model, run_dir, data_dir, mock):
    arguments = [
        f"--task={task}",
        f"--model={model}",
        "--preset=tiny",
        f"--run-dir={run_dir}",
        f"--data-dir={data_dir}",
    ]
    if mock and task in MOCK_TFDS_TASKS:
        return [sys.executable, "-c", MOCK_TFDS_TRAIN, *arguments]
    return [sys.executable, "-m", "arena_tf.train", *arguments]


def write_mock_retrieval(data_dir, document_bytes=300, seed=0):
    """Random AAN-format split files (label, two ids, two documents of printable bytes)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    data_dir.mkdir(parents=True, exist_ok=True)
    for split, name in RETRIEVAL_FILES.items():
        lines = []
        for index in range(MOCK_EXAMPLES[split]):
            first, second = (
                rng.integers(32, 127, document_bytes).astype("uint8").tobytes().decode()
                for _ in range(2)
            )
            lines.append(f"{rng.integers(0, 2)}\ta{index}\tb{index}\t{first}\t{second}\n")
        (data_dir / name).write_text("".join(lines))


def measure_one(task, model, busy, out, timeout, mock=False):
    """Train one tiny preset from scratch (fresh data and run dirs); its result row."""
    mock = mock and task in (*MOCK_TFDS_TASKS, "retrieval")
    run_dir, data_dir = out / f"{task}-{model}", out / "data" / task
    for path in (run_dir, data_dir):
        shutil.rmtree(path, ignore_errors=True)
    row = {
        "task": task,
        "model": model,
        "busy": busy,
        "date": datetime.date.today().isoformat(),
        "load_before": round(os.getloadavg()[0], 2),
        "data": "mock" if mock else "real",
    }
    if mock and task == "retrieval":
        write_mock_retrieval(data_dir)
    hogs = busy_processes(busy)
    started = time.perf_counter()
    try:
        process = subprocess.run(
            train_command(task, model, run_dir, data_dir, mock),
            timeout=timeout,
            stderr=subprocess.PIPE,
            text=True,
        )
    except subprocess.TimeoutExpired:
        return {**row, "status": "timed out", "seconds": timeout}
    finally:
        for hog in hogs:
            hog.kill()
    row["seconds"] = round(time.perf_counter() - started, 1)
    if process.returncode:
        sys.stderr.write(process.stderr)
        lines = process.stderr.strip().splitlines()
        return {**row, "status": "not measured", "note": lines[-1] if lines else "failed"}
    metrics = json.loads((run_dir / "metrics.json").read_text())
    if mock:
        return {
            **row,
            "status": "timed on mock data",
            "steps": metrics["steps"],
            "train_seconds": round(metrics["wall_time_s"], 1),
        }
    chance, examples = metrics["test_chance"], metrics["test_examples"]
    return {
        **row,
        "status": "measured",
        "steps": metrics["steps"],
        "train_seconds": round(metrics["wall_time_s"], 1),
        "test_accuracy": metrics["test_accuracy"],
        "test_examples": examples,
        "chance": chance,
        "verdict": verdict(metrics["test_accuracy"], chance, examples),
    }


def merge(results, rows):
    """`results` with `rows` replacing the rows of the same task, model and load."""
    key = lambda row: (row["task"], row["model"], row["busy"])  # noqa: E731
    fresh = {key(row) for row in rows}
    kept = [row for row in results.get("rows", []) if key(row) not in fresh]
    ordered = sorted(kept + rows, key=lambda r: (TASKS.index(r["task"]), r["model"], r["busy"]))
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "rows": ordered}


def minutes(seconds):
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s"


def result_cell(row):
    if row["status"] == "timed on mock data":
        return "none: timed on random stand-in data (the real data needs a download)"
    if row["status"] != "measured":
        return row["status"] + (f": {row['note']}" if row.get("note") else "")
    return (
        f"{row['test_accuracy']:.1%} (chance {row['chance']:.1%}, {row['test_examples']} "
        f"examples): {row['verdict']}"
    )


def machine_cell(row):
    """How loaded the machine was: the busy processes started, and the load average before."""
    busy = "idle" if row["busy"] == 0 else f"beside {row['busy']} busy process"
    return f"{busy}{'es' if row['busy'] > 1 else ''}, load {row['load_before']:.1f} before"


def markdown_table(results):
    """The table of the measurements (`make docs` shows it in the training guide): one line per
    measured row."""
    rows = [
        [
            f"`{r['task']}`",
            f"`{r['model']}`",
            machine_cell(r),
            minutes(r["seconds"]),
            r.get("steps", ""),
            result_cell(r),
            r["date"],
        ]
        for r in results["rows"]
    ]
    header = [
        "task",
        "model",
        "machine",
        "time (data included)",
        "steps",
        "test accuracy",
        "measured",
    ]
    return table(header, rows)


MARKER = ".preset_timing"  # in an --out this command made: its run and data folders are its own


def claim_out(out):
    """--out, made and marked as this command's: measure_one deletes the run and data folders it
    reuses, so a folder holding other files and no marker (`--out .`) is refused."""
    out = cli.output_dir(out, "--out", make=False)
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise cli.UsageError(
            f"--out {out} holds files preset_timing did not write",
            "a new or empty folder, or the --out of an earlier measure (its "
            "run and data folders are replaced)",
            "pass another --out",
        )
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).touch()
    return out


def measure(args):
    tasks = args.tasks
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        raise cli.UsageError(
            f"unknown task {unknown[0]!r} in --tasks",
            f"some of {', '.join(TASKS)}",
            "fix the --tasks list",
        )
    config.named_file(config.CONFIGS_DIR, "models", args.model, "--model")
    results_path = cli.output_file(args.results, "--results", example="presets.json")
    old = read_results(results_path) or {}  # a bad results file refused before --out is made
    out = claim_out(args.out)
    rows = []
    for task in tasks:
        print(
            f"presets: {task} with {args.model}, tiny preset, beside {args.busy} busy "
            f"process(es); timing starts now (data generation included)",
            flush=True,
        )
        rows.append(measure_one(task, args.model, args.busy, out, args.timeout, args.mock_data))
        print(
            f"presets: {task}: {minutes(rows[-1]['seconds'])}, {result_cell(rows[-1])}", flush=True
        )
    results = merge(old, rows)
    files.write_json(results_path, results)
    print(f"presets: wrote {results_path}; `make docs` shows it in the training guide")


ROW_KEYS = ("task", "model", "busy", "status", "seconds", "date", "load_before")


def read_results(path):
    """The results file at `path` ({"rows": [...]}, each row with ROW_KEYS), None where it is
    missing; UsageError for any other JSON, before anything is measured or written."""
    results = files.read_json(path)
    rows = results.get("rows") if isinstance(results, dict) else None
    if results is not None and not (
        isinstance(rows, list)
        and all(isinstance(row, dict) and set(ROW_KEYS) <= row.keys() for row in rows)
    ):
        raise cli.UsageError(
            f"{path} is not a results file of preset_timing",
            f'{{"rows": [...]}}, each row holding {", ".join(ROW_KEYS)}',
            "pass the --results that `preset_timing measure` wrote",
        )
    return results


def show_table(args):
    results = read_results(args.results)
    if results is None:
        raise cli.UsageError(
            f"--results {args.results} does not exist",
            "a results file that `preset_timing measure` wrote",
            "run measure first, or pass its --results",
        )
    print(markdown_table(results))


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.preset_timing", description=__doc__.split("\n\n")[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("measure", help="train tiny presets from scratch and time them")
    run.add_argument(
        "--tasks",
        action=cli.Items,
        default=["listops", "pathfinder", "pathx"],
        metavar="TASK",
        help=f"tasks among {', '.join(TASKS)}",
    )
    run.add_argument("--model", default="linformer", help="the attention mechanism (as make run)")
    run.add_argument(
        "--busy", type=cli.whole_number(0), default=0, help="CPU-bound processes running beside"
    )
    run.add_argument("--out", default="runs/presets", help="run and data directories")
    run.add_argument(
        "--timeout",
        type=cli.positive_number,
        default=1800.0,
        help="seconds before a run is stopped",
    )
    run.add_argument("--results", default=str(RESULTS))
    run.add_argument(
        "--mock-data",
        action="store_true",
        help="time text, image and retrieval on random stand-ins of their data",
    )
    run.set_defaults(run=measure)
    show = commands.add_parser("table", help="print the Markdown table of the results")
    show.add_argument("--results", default=str(RESULTS))
    show.set_defaults(run=show_table)
    return parser.parse_args(argv)


def main(argv=None):
    """Command line: `measure` the tiny presets or print their `table`.

    Args:
        argv: `measure` or `table`, then its flags (default: sys.argv[1:]).

    Exit status:
        0 when the presets are measured or the table printed; 2 for a user's mistake (one
            `error: ...` line on stderr); 1 when a measurement failed (`--debug`: the traceback).

    Example:
        python -m arena_tf.preset_timing table

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    args = parse_args(argv)
    return cli.run_main(lambda: args.run(args), debug=args.debug)


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
