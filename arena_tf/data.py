"""Build or check a task's data.

    python -m arena_tf.data prepare --task=NAME [--data-dir=DIR] [--preview] [--preview-dir=DIR]
    python -m arena_tf.data bench --task=NAME [--data-dir=DIR] [--batch-size=32] [--batches=200]
    python -m arena_tf.data rows --task=NAME [--data-dir=DIR] [--split=test] [--limit=N]
        [--out=FILE]

All take `--set task.params.KEY=VALUE` (repeatable, as training does) for the task's own
parameters, e.g. `--set task.params.max_bad_images=20` or
`--set 'task.params.generator_spec={train: 2000, validation: 100, test: 100}'`.

Prints where the data comes from, each split's size and label balance; with --preview, a few
examples decoded by the task (text lines; image tasks also save PNGs under --preview-dir).
`bench` times the training pipeline alone (shuffled, batched, prefetched, as training reads it) and
prints examples/s, to compare with the examples/s of training in a run's metrics.json.
`rows` writes a split's examples in the task's row form, the instances an Efficiency Pentathlon
driver sends to a submission, as JSON Lines (stdout, or --out written atomically): `{"input": str,
"target": str}` for listops and text, `{"input": [8-bit pixels], "target": str}` for image,
pathfinder and pathx, `{"input1": str, "input2": str, "target": str}` for retrieval; the first
--limit rows of the split's fixed order (arena_tf/tasks/base.py).

Optional task hooks: `location()` returns a string naming where the data is (printed first);
`preview(out_dir, count=3)` returns a list of printable lines describing a few examples and may
write files (images) under `out_dir`, creating it. A task without them is summarised only.

Errors: one line on stderr, `error: <what was wrong>; expected <what>; <how to fix>` (see
arena_tf/cli.py): exit 2 for the user's mistake (an unknown task, a bad flag, missing or malformed
data), exit 1 when the command itself failed (TensorFlow or the disk); `--debug` shows the
traceback instead. Long steps (generating, checking files, counting labels) print a progress line
every few seconds on stderr.
"""

import itertools
import json
import logging
import sys
import time
from pathlib import Path

import arena_tf.tasks as tasks
from arena_tf import cli
from arena_tf.benchmark import memory
from arena_tf.config import ConfigError, deep_merge, parse_override
from arena_tf.files import atomic_writer
from arena_tf.progress import Progress
from arena_tf.tasks import SPLITS, sources


def build_parser():
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.data", description="Build or check task data."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="build or check one task's data")
    prepare.add_argument("--task", required=True, help="task name, e.g. listops")
    prepare.add_argument("--data-dir", default=None, help="where the task's data is (or goes)")
    add_set(prepare)
    prepare.add_argument("--preview", action="store_true", help="show a few decoded examples")
    prepare.add_argument(
        "--preview-dir", default=None, help="where previews write files (default DATA_DIR/preview)"
    )
    bench = commands.add_parser("bench", help="time one task's training input pipeline")
    bench.add_argument("--task", required=True, help="task name, e.g. listops")
    bench.add_argument("--data-dir", default=None, help="where the task's data is (or goes)")
    add_set(bench)
    bench.add_argument("--batch-size", type=cli.positive_int, default=32)
    bench.add_argument(
        "--batches", type=cli.positive_int, default=200, help="timed batches, after 5 warm-up"
    )
    rows = commands.add_parser("rows", help="write one task split's rows as JSON Lines")
    rows.add_argument("--task", required=True, help="task name, e.g. listops")
    rows.add_argument("--data-dir", default=None, help="where the task's data is (or goes)")
    add_set(rows)
    rows.add_argument("--split", default="test", help="train, validation or test (default test)")
    rows.add_argument("--limit", type=cli.positive_int, default=None, help="the first N rows only")
    rows.add_argument("--out", default=None, help="the JSON Lines file (default: stdout)")
    return parser


def add_set(parser):
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="task.params.KEY=VALUE",
        help="a task parameter (YAML value), as training's --set; repeatable",
    )


def task_params(overrides):
    """{KEY: value} of `--set task.params.KEY=VALUE` overrides; ConfigError for anything else."""
    params = {}
    for text in overrides:
        layer = parse_override(text)
        if (
            set(layer) != {"task"}
            or set(layer["task"]) != {"params"}
            or not isinstance(layer["task"]["params"], dict)
        ):
            raise ConfigError(
                f"--set {text!r} is not a task parameter",
                "task.params.KEY=VALUE (this command builds data only)",
                "set model and train values when training",
            )
        params = deep_merge(params, layer["task"]["params"])
    return params


def make_task(tasks, args):
    """The task the arguments name; ConfigError for an unknown task or parameter."""
    params = task_params(args.overrides)
    task_class = tasks.lookup(args.task)
    try:
        return task_class(data_dir=args.data_dir, **params)
    except cli.CommandError:
        raise
    except (TypeError, ValueError) as error:  # the task's or its generator's checks of params
        if not params:
            raise
        raise ConfigError(
            f"--set task.params for {args.task}: {' '.join(str(error).split())}",
            f"parameters the {args.task} task accepts (see its class in "
            f"arena_tf/tasks/{args.task}.py)",
            "correct or drop that --set",
        ) from None


# Batches alive at once in `bench` (the one timed, the one being built, tf.data's prefetched
# ones): 2.3 measured on ListOps by tools/data_batch_memory.py (a 2-core AMD EPYC), rounded up.
BATCHES_HELD = 3


def check_batch_fits(task, batch_size, available=None):
    """UsageError when `batch_size` batches of int32 token ids (BATCHES_HELD of them at once)
    would not fit in the memory available: refused in one line, not killed by the kernel."""
    needed = BATCHES_HELD * batch_size * task.max_len * task.num_inputs * 4 / 1e9
    available = memory.available_gb() if available is None else available
    if needed > available:
        raise cli.UsageError(
            f"--batch-size {batch_size} needs about {needed:.1f} GB for {BATCHES_HELD} batches of "
            f"{task.max_len}-token inputs, but this machine has {available:.1f} GB available",
            "batches that fit in the memory available",
            "lower --batch-size",
        )


def bench(task, args):
    """Print the training pipeline's examples/s over `args.batches` batches."""
    check_batch_fits(task, args.batch_size)
    batches = iter(task.dataset("train", args.batch_size, repeat=True))
    with Progress(f"{task.name}: warming up the pipeline", 5, "batches") as progress:
        for _ in range(5):
            next(batches)
            progress.update()
    start = time.perf_counter()
    with Progress(f"{task.name}: timing", args.batches, "batches") as progress:
        for _ in range(args.batches):
            next(batches)
            progress.update()
    seconds = time.perf_counter() - start
    print(
        f"{task.name}: {args.batches * args.batch_size / seconds:,.0f} examples/s "
        f"({args.batches} batches of {args.batch_size}, {seconds:.1f} s)"
    )


def write_rows(task, args):
    """Write the split's rows (the first --limit) as JSON Lines to --out (atomically) or stdout."""
    if args.split not in SPLITS:
        raise cli.UsageError(
            f"unknown split {args.split!r}",
            f"one of {', '.join(SPLITS)}",
            "pass --split with one of them",
        )
    if args.out is not None:
        cli.output_file(args.out)
        refuse_overwriting_data(Path(args.out), sources.data_root(task.name, args.data_dir))
    rows = itertools.islice(task.rows(args.split), args.limit)
    with Progress(f"{task.name}: writing {args.split} rows", args.limit, "rows") as progress:
        if args.out is None:
            count = write_lines(rows, sys.stdout, progress)
        else:
            with atomic_writer(args.out) as out:
                count = write_lines(rows, out, progress)
    print(
        f"{task.name}: {count} {args.split} rows written to {args.out or 'stdout'}", file=sys.stderr
    )


def refuse_overwriting_data(out, root):
    """UsageError when `out` is a file already in the data directory `root` (a split's own file,
    say), which writing the rows would replace."""
    if out.exists() and out.resolve().is_relative_to(Path(root).resolve()):
        raise cli.UsageError(
            f"--out {out} is a file of the data directory {root}, which this command reads",
            "an output apart from the data",
            f"name a file outside {root}, e.g. --out {out.stem}.jsonl",
        )


def write_lines(rows, out, progress):
    """Write each row as one JSON line (ASCII); the number written."""
    count = 0
    for row in rows:
        out.write(json.dumps(row) + "\n")
        count += 1
        progress.update()
    return count


def prepare(task, args):
    """Print where the data is and each split's size and labels (and previews)."""
    summary = task.prepare()
    if hasattr(task, "location"):
        print(f"{task.name}: data in {task.location()}")
    print("\n".join(format_summary(summary)))
    if args.preview and hasattr(task, "preview"):
        root = sources.data_root(task.name, args.data_dir)
        out_dir = args.preview_dir or Path(root, "preview")
        print("\n".join(task.preview(out_dir)))


COMMANDS = {"prepare": prepare, "bench": bench, "rows": write_rows}


def format_summary(summary):
    """One line per split: examples, then each label's count and share."""
    lines = []
    for split, stats in summary.items():
        total = stats["examples"]
        balance = "  ".join(
            f"{label}: {count} ({count / total:.1%})" for label, count in stats["labels"].items()
        )
        lines.append(f"{split:<10} {total:>7} examples   {balance}")
    return lines


def run(args):
    """Run the command on the task; CommandErrors (cli) for what went wrong."""
    # Imported here, not at the top: spawned generator workers re-import this module (as
    # __mp_main__) and should not load TensorFlow.
    import tensorflow as tf

    task = make_task(tasks, args)
    try:
        COMMANDS[args.command](task, args)
    except tf.errors.OpError as error:  # the data passed the checks, TensorFlow could not read it
        cause = " ".join(str(getattr(error, "message", error)).split())[-300:]
        raise cli.RunError(
            f"{task.name}: TensorFlow could not read the data ({cause})",
            "data that passed the task's checks to be readable",
            "rerun with --debug for the details",
        ) from error
    except OSError as error:
        raise cli.RunError(
            f"{task.name}: {error}",
            "the data and the output folders to be readable and writable",
            "check the paths and free disk space",
        ) from error
    return 0


def main(argv=None):
    """Command line: `prepare`, `bench` or `rows` for a task's data.

    Args:
        argv: the command-line arguments after the program name (default: sys.argv[1:]);
            `--help` lists them.

    Exit status:
        0 on success; 2 for the user's mistake (an unknown task, a bad flag, missing or
            malformed data); 1 when the command itself failed (TensorFlow or the disk).

    Example:
        python -m arena_tf.data prepare --task=listops --preview

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("arena_tf").setLevel(logging.INFO)  # skipped lines, generation notes
    logging.getLogger("absl").setLevel(logging.ERROR)  # TFDS's notes while probing a data dir
    args = build_parser().parse_args(argv)
    return cli.run_main(lambda: run(args), debug=args.debug)


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
