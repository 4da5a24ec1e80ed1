"""Command line of the analysis: `python -m arena_tf.analysis span|attention|distance-baseline|
listops-baselines`.

    python -m arena_tf.analysis span runs/pathfinder-full [runs/text-full ...] [--examples 1000]
                                [--out runs/analysis/span.png]
    python -m arena_tf.analysis attention runs/pathfinder-full --example 3
    python -m arena_tf.analysis distance-baseline data/pathfinder/pathfinder32/curv_baseline
    python -m arena_tf.analysis listops-baselines data/listops [--levels 0,1,2,3]

`span` writes span.json into every run directory and, for several runs (or with --out), a bar
chart (default runs/analysis/span.png); `attention` writes attention_example_<N>.png into the run
directory. Errors are one line on stderr (arena_tf.cli's style): exit 2 for a user's mistake.
"""

import pathlib
import sys

from arena_tf import cli, files
from arena_tf.generators import pathfinder as generator
from arena_tf.tasks.pathfinder import split_distance_baseline

DEFAULT_CHART = "runs/analysis/span.png"


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.analysis",
        description="Required attention span and attention maps of trained LRA models.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    span = commands.add_parser("span", help="mean required attention span (LRA section 2.3)")
    span.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories of training")
    span.add_argument(
        "--examples",
        type=cli.positive_int,
        default=1000,
        help="validation examples to average over (default 1000, as LRA)",
    )
    span.add_argument("--out", help=f"bar chart PNG (default {DEFAULT_CHART} for several runs)")
    baseline = commands.add_parser(
        "distance-baseline",
        help="the marker-distance rule on a generated Pathfinder dataset's "
        "own splits: fitted on all of its train split, scored on all of its test split",
    )
    baseline.add_argument(
        "dataset_dir",
        metavar="DIR",
        help="a dataset the Pathfinder generator wrote (holding generator.json)",
    )
    baseline.add_argument(
        "--size",
        type=int,
        choices=sorted(generator.CONFIGS),
        help="refuse the dataset unless its generator.json records this size",
    )
    baseline.add_argument(
        "--difficulty",
        choices=list(generator.DIFFICULTIES),
        help="refuse the dataset unless its generator.json records this difficulty",
    )
    rules = commands.add_parser(
        "listops-baselines",
        help="rules that read a ListOps tree only so far (the majority "
        "value, the root operator, the root over its children, deeper levels), fitted on the "
        "train split, scored on every tree of the test split",
    )
    rules.add_argument(
        "data_dir",
        metavar="DIR",
        help="a ListOps data directory (the release files, or generated ones)",
    )
    rules.add_argument(
        "--levels",
        action=cli.Items,
        type=cli.whole_number(0),
        default=[0, 1, 2, 3],
        help="levels below the root read exactly (default 0,1,2,3)",
    )
    rules.add_argument(
        "--fit-trees",
        type=cli.positive_int,
        default=10_000,
        help="train trees the usual values are fitted on (default 10000)",
    )
    rules.add_argument(
        "--out",
        help="also write the numbers as JSON (the reproduction report "
        "reads docs/results/reproduction/listops-baselines.json)",
    )
    attention = commands.add_parser("attention", help="attention maps and rollout of one example")
    attention.add_argument("run_dir", metavar="RUN_DIR", help="run directory of training")
    attention.add_argument(
        "--example",
        type=cli.whole_number(0),
        default=0,
        help="index of the validation example (default 0)",
    )
    return parser.parse_args(argv)


def span_command(args):
    out = args.out or (DEFAULT_CHART if len(args.run_dirs) > 1 else None)
    if out:  # not a file of a run it reads (config.yaml, model.keras)
        cli.output_file(
            out,
            "--out",
            example="span.png",
            inputs=[path for run_dir in args.run_dirs for path in pathlib.Path(run_dir).glob("*")],
        )
    # Keras, TensorFlow and matplotlib: loaded once the arguments are known good (--help is quick)
    from arena_tf.analysis import plots
    from arena_tf.analysis.commands import measure_span, span_summary

    results = []
    for run_dir in args.run_dirs:
        results.append(measure_span(run_dir, args.examples))
        print(span_summary(results[-1]), flush=True)
    if out:
        print(f"bar chart of {len(results)} runs: {plots.draw_span_chart(out, results)}")


def distance_baseline_command(args):
    """Print the marker-distance baseline of a generated Pathfinder dataset's test split (its
    markers drawn again from the seed and settings it records)."""
    result = split_distance_baseline(args.dataset_dir, args.size, args.difficulty)
    print(
        generator.baseline_line(
            result.config,
            result.threshold,
            result.train_accuracy,
            result.test_accuracy,
            f"the test split of {args.dataset_dir}, {result.test_count} images",
            f"its train split of {result.train_count} images",
        )
    )
    return 0


def listops_baselines_command(args):
    """Print the rule baselines of a ListOps data directory's test split."""
    from arena_tf.tasks import listops

    if args.out:
        cli.output_file(
            args.out,
            "--out",
            example="listops-baselines.json",
            inputs=pathlib.Path(args.data_dir).glob("**/*.tsv"),
        )
    task = listops.ListOps(data_dir=args.data_dir, generate=False)
    result = listops.rule_baselines(task, tuple(args.levels), args.fit_trees)
    print(
        f"listops rules on the test split of {args.data_dir}, {result.scored} trees (usual "
        f"values fitted on {result.fitted} train trees; chance 10%):"
    )
    print(f"majority value ({result.majority[0]}): {result.majority[1]:.1%}")
    for level, accuracy in result.levels.items():
        name = listops.RULE_LEVELS.get(level, f"{level} levels")
        print(f"level {level}, {name}: {accuracy:.1%}")
    if args.out:
        files.write_json(
            args.out,
            {
                "data_dir": args.data_dir,
                "scored": result.scored,
                "fitted": result.fitted,
                "majority": {"value": result.majority[0], "accuracy": result.majority[1]},
                "levels": {str(level): accuracy for level, accuracy in result.levels.items()},
                "names": {
                    str(level): listops.RULE_LEVELS.get(level, f"{level} levels")
                    for level in result.levels
                },
            },
        )
        print(f"written to {args.out}")
    return 0


def attention_command(args):
    from arena_tf.analysis.commands import draw_attention  # Keras and TensorFlow, as above

    for path in draw_attention(args.run_dir, args.example):
        print(f"attention maps: {path}")


COMMANDS = {
    "span": span_command,
    "attention": attention_command,
    "distance-baseline": distance_baseline_command,
    "listops-baselines": listops_baselines_command,
}


def main(argv=None):
    """Command line: `span` or `attention` analysis of trained runs, the `distance-baseline` of
    a generated Pathfinder dataset, or the `listops-baselines` of a ListOps data directory.

    Args:
        argv: `span`, `attention`, `distance-baseline` or `listops-baselines`, then the run
            directories (the data directory) and flags (default: sys.argv[1:]).

    Exit status:
        0 when the analysis is written; 2 and one `error: ...` line on stderr for a user's
            mistake; 1 when the analysis failed (`--debug` shows the traceback instead).

    Example:
        python -m arena_tf.analysis attention runs/pathfinder-full --example 3

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    args = parse_args(argv)
    return cli.run_main(lambda: COMMANDS[args.command](args), debug=args.debug)


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
