"""Build or check a task's data.

    python -m arena_tf.data prepare --task=NAME [--data_dir=DIR] [--preview] [--preview_dir=DIR]
    python -m arena_tf.data bench --task=NAME [--data_dir=DIR] [--batch_size=32] [--batches=200]

Prints where the data comes from, each split's size and label balance; with --preview, a few
examples decoded by the task (text lines; image tasks also save PNGs under --preview_dir).
`bench` times the training pipeline alone (shuffled, batched, prefetched, as training reads it) and
prints examples/s, to compare with the examples/s of training in a run's metrics.json.

Optional task hooks: `location()` returns a string naming where the data is (printed first);
`preview(out_dir, count=3)` returns a list of printable lines describing a few examples and may
write files (images) under `out_dir`, creating it. A task without them is summarised only.

Bad input (an unknown task, a bad flag) prints one line and exits 2; missing data prints the task's
DataNotFoundError message and exits 1.
"""

import argparse
import logging
import os
import sys
from pathlib import Path

EXIT_USAGE = 2
EXIT_NO_DATA = 1


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see --help)\n")


def build_parser():
    parser = _OneLineParser(prog="python -m arena_tf.data", description="Build or check task data.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    prepare = commands.add_parser("prepare", help="build or check one task's data")
    prepare.add_argument("--task", required=True, help="task name, e.g. listops")
    prepare.add_argument("--data_dir", default=None, help="where the task's data is (or goes)")
    prepare.add_argument("--preview", action="store_true", help="show a few decoded examples")
    prepare.add_argument(
        "--preview_dir", default=None, help="where previews write files (default DATA_DIR/preview)"
    )
    bench = commands.add_parser("bench", help="time one task's training input pipeline")
    bench.add_argument("--task", required=True, help="task name, e.g. listops")
    bench.add_argument("--data_dir", default=None, help="where the task's data is (or goes)")
    bench.add_argument("--batch_size", type=int, default=32)
    bench.add_argument("--batches", type=int, default=200, help="timed batches, after 5 warm-up")
    return parser


def bench(task, args):
    """Print the training pipeline's examples/s over `args.batches` batches."""
    import time

    batches = iter(task.dataset("train", args.batch_size, repeat=True))
    for _ in range(5):
        next(batches)
    start = time.perf_counter()
    for _ in range(args.batches):
        next(batches)
    seconds = time.perf_counter() - start
    print(f"{task.name}: {args.batches * args.batch_size / seconds:,.0f} examples/s "
          f"({args.batches} batches of {args.batch_size}, {seconds:.1f} s)")


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
    """Run the command on the task; return the exit code."""
    # Imported here, not at the top: spawned generator workers re-import this module (as
    # __mp_main__) and should not load TensorFlow.
    import arena_tf.tasks as tasks
    from arena_tf.tasks import sources

    try:
        task = tasks.get(args.task, data_dir=args.data_dir)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.command == "bench":
            bench(task, args)
            return 0
        summary = task.prepare()
        if hasattr(task, "location"):
            print(f"{task.name}: data in {task.location()}")
        print("\n".join(format_summary(summary)))
        if args.preview and hasattr(task, "preview"):
            root = sources.data_root(task.name, args.data_dir)
            out_dir = args.preview_dir or Path(root, "preview")
            print("\n".join(task.preview(out_dir)))
    except tasks.DataNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_NO_DATA
    return 0


def main(argv=None):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("arena_tf").setLevel(logging.INFO)  # generation progress, skipped lines
    logging.getLogger("absl").setLevel(logging.ERROR)  # TFDS's notes while probing a data dir
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
