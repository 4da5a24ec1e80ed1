"""python -m arena_tf.reproduce: run a suite, list it, re-run its rows, report, merge, pack."""

import sys

from arena_tf import cli

if __name__ == "__main__":  # before TensorFlow and Keras are imported
    cli.prepare_process()

from arena_tf.reproduce import report, running  # noqa: E402
from arena_tf.reproduce.results import RESULTS, merge, recorded_runs  # noqa: E402
from arena_tf.reproduce.suites import load_suite, plan, suite_paths  # noqa: E402


def show_plan(suite, runs):
    recorded = recorded_runs(suite)
    for run in runs:
        state = run.state()
        shown = "recorded" if state == "new" and run.key in recorded else state
        print(f"{shown:12s} {run.command}")


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.reproduce", description=__doc__.splitlines()[0]
    )
    parser.add_argument("suite", help="a suite of configs/suites/, 'report', 'merge' or 'pack'")
    parser.add_argument(
        "files",
        nargs="*",
        help="with merge: results.json files to add rows "
        "from; with pack: the suites (default: all)",
    )
    parser.add_argument(
        "--mechanisms", action=cli.Items, metavar="NAME", help="a subset of the suite's mechanisms"
    )
    parser.add_argument(
        "--seeds",
        action=cli.Items,
        type=cli.whole_number(0),
        metavar="SEED",
        help="seeds (default: the suite's)",
    )
    parser.add_argument(
        "--tasks", action=cli.Items, metavar="TASK", help="a subset of the suite's tasks"
    )
    parser.add_argument("--resume", action="store_true", help="continue interrupted runs")
    parser.add_argument("--list", action="store_true", help="show each run's state; train nothing")
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="re-run recorded rows with their own commands (runs/rerun/) and add "
        "each result to its row's reruns",
    )
    parser.add_argument(
        "--time-limit",
        type=cli.positive_int,
        metavar="SECONDS",
        help="stop at a checkpoint after this many seconds (e.g. a GPU "
        "machine's ten-minute command); --resume goes on",
    )
    return parser.parse_args(argv)


def main(argv=None):
    """Command line: run a suite, list it, re-run its rows, report, merge, pack.

    Args:
        argv: the suite, its result files and the flags `--help` lists (default: sys.argv[1:]).

    Exit status:
        0 when the suite's rows ran or its report, merge or pack is written; 2 and one
            `error: ...` line for a user's mistake; 1 when a run failed (`--debug`: the traceback).

    Example:
        python -m arena_tf.reproduce cpu-listops --list

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    args = parse_args(argv)

    def body():
        if args.suite == "report":
            print(f"reproduce: wrote {report.write()}")
            return 0
        if args.suite == "pack":
            names = args.files or sorted(suite_paths())
            running.pack_unfinished([run for name in names for run in plan(load_suite(name))])
            print(f"reproduce: wrote {report.write()}")
            return 0
        if args.suite == "merge" or args.files:
            if args.suite != "merge" or not args.files:
                raise cli.UsageError(
                    "results files are read by `merge` alone",
                    "python -m arena_tf.reproduce merge FILE [FILE ...]",
                    "name the files after merge, or drop them",
                )
            added = merge(args.files)
            print(f"reproduce: added {added} row(s) to {RESULTS}; wrote {report.write()}")
            return 0
        suite = load_suite(args.suite)
        runs = plan(suite, args.mechanisms, args.seeds, tasks=args.tasks)
        if args.list:
            show_plan(suite, runs)
            return 0
        if args.rerun:
            running.rerun_rows(suite, runs, time_limit=args.time_limit)
            return 0
        running.run_suite(suite, runs, args.resume, time_limit=args.time_limit)
        return 0

    return cli.run_main(body, debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
