"""Command line: `python -m arena_tf.benchmark
layers|pairs|train|xla|precision|gpu|report|profile [options]` (--help)."""

import pathlib
import sys

from arena_tf import cli

if __name__ == "__main__":  # before TensorFlow and Keras are imported
    cli.prepare_process()

import arena_tf.layers as attention_layers  # noqa: E402
from arena_tf.benchmark import (  # noqa: E402
    backends,
    gpu,
    layer_sweep,
    lra_table2,
    pairs,
    peers,
    precision,
    profiling,
    report,
    xla,
)

RESULTS = pathlib.Path("docs/results/efficiency")
DRY_RUNS = pathlib.Path("runs/benchmark/dry-run")  # where a gpu --dry-run writes by default
MODELS = pathlib.Path(__file__).resolve().parents[2] / "configs" / "models"
SWITCH_MODES = {"both": (False, True), "off": (False,), "on": (True,)}


def common_options(parser, lengths, output):
    parser.add_argument(
        "--mechanisms",
        action=cli.Items,
        default=attention_layers.available(),
        choices=attention_layers.available(),
        metavar="NAME",
        help="mechanisms to measure (default: all)",
    )
    parser.add_argument("--lengths", action=cli.Items, type=cli.positive_int, default=list(lengths))
    parser.add_argument(
        "--memory-cap-gb",
        type=cli.positive_number,
        default=16.0,
        help="skip a configuration whose estimated memory exceeds this",
    )
    run_options(parser, output)


def run_options(parser, output):
    """--timeout, --output and --in-process of a sweep of child processes."""
    parser.add_argument(
        "--timeout",
        type=cli.positive_number,
        default=1800.0,
        help="seconds one configuration may take before it is given up",
    )
    output_option(parser, output)
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="measure in this process (quick checks; memory peaks not separate)",
    )


def output_option(parser, default):
    """--output, a file checked before anything is measured (`check_outputs`); its default's name
    is the example of a file name in the refusal of a folder."""
    parser.add_argument("--output", type=pathlib.Path, default=default)
    parser.set_defaults(output_example=default.name)


def check_outputs(options):
    """UsageError, before anything is measured or written, where --output (gpu: and --report)
    cannot be written; gpu --report-only reads --output instead (`gpu_report.read`)."""
    inputs = (
        [path for name in REPORT_INPUTS for path in listed(getattr(options, name))]
        if (options.command == "report")
        else []
    )
    if hasattr(options, "output") and not getattr(options, "report_only", False):
        cli.output_file(options.output, "--output", example=options.output_example, inputs=inputs)
    if options.command == "gpu":  # its --output is an input of its --report
        cli.output_file(options.report, "--report", example="gpu.md", inputs=[options.output])


REPORT_INPUTS = ("layers", "train", "mixers", "pairs", "exact", "gpu")  # the files it reads


def listed(value):
    """`value` as a list of paths: none, one or a list of them."""
    return [] if value is None else value if isinstance(value, list) else [value]


def matmul_option(parser):
    parser.add_argument(
        "--matmul-size",
        type=cli.positive_int,
        default=4096,
        help="largest square matmul of the rate benchmark (1024 and 2048 too)",
    )


def layer_parser(commands):
    parser = commands.add_parser("layers", help="each mechanism and peer alone")
    common_options(parser, layer_sweep.DEFAULT_LENGTHS, RESULTS / "layers.json")
    by_backend = "; ".join(f"{name}: {', '.join(peers.names(name))}" for name in peers.BY_BACKEND)
    parser.add_argument(
        "--backend",
        default=backends.DEFAULT,
        metavar="NAME",
        help=f"Keras backend to measure under, one of "
        f"{', '.join(backends.BACKENDS)} (default: {backends.DEFAULT}); each "
        "measurement runs in a child process with KERAS_BACKEND set to it",
    )
    parser.add_argument(
        "--peers",
        action=cli.Items,
        nargs="*",
        default=None,
        choices=peers.names(),
        metavar="PEER",
        help=f"peers to compare (default: all of the backend's; {by_backend})",
    )
    parser.add_argument("--batch", type=cli.positive_int, default=1)
    parser.add_argument("--heads", type=cli.positive_int, default=4)
    parser.add_argument("--head-dim", type=cli.positive_int, default=64)
    parser.add_argument(
        "--warmup", type=cli.whole_number(0), default=1, help="untimed calls after the trace"
    )
    parser.add_argument("--repeats", type=cli.positive_int, default=5, help="timed calls (at most)")
    parser.add_argument(
        "--max-seconds",
        type=cli.positive_number,
        default=20.0,
        help="stop repeating (after 3 calls) once timed calls took this long",
    )
    matmul_option(parser)
    parser.add_argument("--agreement-length", type=cli.positive_int, default=512)
    parser.add_argument("--no-profile", action="store_true", help="skip the profiler FLOP count")
    parser.set_defaults(run=layer_sweep.run)


def pair_parser(commands):
    parser = commands.add_parser(
        "pairs",
        help="ours and each peer side by side in one process, "
        "interleaved rounds: ratios with their spread",
    )
    parser.add_argument(
        "--pairs",
        action=cli.Items,
        default=list(pairs.KNOWN),
        metavar="OURS:PEER",
        help=f"pairs to measure (default: all: {', '.join(pairs.KNOWN)})",
    )
    parser.add_argument("--length", type=cli.positive_int, default=pairs.DEFAULT_LENGTH)
    parser.add_argument("--batches", action=cli.Items, type=cli.positive_int, default=[1, 4])
    parser.add_argument(
        "--masks",
        action=cli.Items,
        choices=list(pairs.MASKS),
        default=list(pairs.MASKS),
        help="padded: the last quarter is padding",
    )
    parser.add_argument("--rounds", type=cli.positive_int, default=7, help="interleaved rounds")
    parser.add_argument(
        "--calls", type=cli.positive_int, default=3, help="timed calls of each per round"
    )
    parser.add_argument(
        "--runs",
        type=cli.positive_int,
        default=2,
        help="fresh processes per configuration (the sweep repeated)",
    )
    parser.add_argument(
        "--warmup",
        type=cli.positive_int,
        default=2,
        help="untimed calls of each before the rounds (the first traces)",
    )
    matmul_option(parser)
    run_options(parser, RESULTS / "pairs.json")
    parser.set_defaults(run=pairs.run)


def train_parser(commands):
    parser = commands.add_parser("train", help="LRA Table 2: training steps/s and memory")
    common_options(parser, lra_table2.DEFAULT_LENGTHS, RESULTS / "train.json")
    parser.add_argument(
        "--batch", type=cli.positive_int, default=2, help="LRA used 32 (halved if over the cap)"
    )
    parser.add_argument(
        "--warmup", type=cli.whole_number(0), default=1, help="untimed steps (the first compiles)"
    )
    parser.add_argument("--steps", type=cli.positive_int, default=3, help="timed steps (at most)")
    parser.add_argument(
        "--max-seconds",
        type=cli.positive_number,
        default=30.0,
        help="stop stepping (after 2 steps) once timed steps took this long",
    )
    parser.add_argument("--xla", choices=list(SWITCH_MODES), default="both")
    parser.add_argument(
        "--remat",
        choices=list(SWITCH_MODES),
        default="off",
        help="train.remat: recompute each block in the backward pass",
    )
    parser.add_argument(
        "--update",
        action="store_true",
        help="re-measure: replace these rows of --output, keep the others",
    )
    parser.set_defaults(run=lra_table2.run)


def xla_parser(commands):
    parser = commands.add_parser("xla", help="why XLA is slower and larger here: rates and plans")
    parser.add_argument(
        "--mechanisms",
        action=cli.Items,
        default=["full", "linear"],
        choices=attention_layers.available(),
        metavar="NAME",
    )
    parser.add_argument("--length", type=cli.positive_int, default=4096)
    parser.add_argument("--batch", type=cli.positive_int, default=2)
    parser.add_argument("--steps", type=cli.positive_int, default=2, help="timed training steps")
    parser.add_argument("--timeout", type=cli.positive_number, default=1800.0)
    output_option(parser, RESULTS / "xla.json")
    parser.set_defaults(run=xla.run)


def precision_parser(commands):
    parser = commands.add_parser(
        "precision", help="training steps/s in float32 and mixed_bfloat16 at the cpu suites' shapes"
    )
    parser.add_argument(
        "--shapes",
        action=cli.Items,
        default=list(precision.SHAPES),
        choices=list(precision.SHAPES),
        help="suites whose model and batch to time",
    )
    parser.add_argument(
        "--mechanisms",
        action=cli.Items,
        default=["linformer", "full"],
        choices=sorted(p.stem for p in MODELS.glob("*.yaml")),
        metavar="NAME",
        help="models of configs/models/ (default: linformer full)",
    )
    parser.add_argument("--rounds", type=cli.positive_int, default=4, help="interleaved rounds")
    parser.add_argument(
        "--steps", type=cli.positive_int, default=3, help="timed steps per dtype per round"
    )
    parser.add_argument(
        "--matmul-size",
        type=cli.positive_int,
        default=4096,
        help="square matmul timed in both dtypes (the CPU's bfloat16 rate)",
    )
    run_options(parser, RESULTS / "precision.json")
    parser.set_defaults(run=precision.run)


def gpu_parser(commands):
    parser = commands.add_parser(
        "gpu",
        help="on one GPU under JAX, in one call of about 8 minutes: every layer at 1K-64K "
        "beside the fused kernel, LRA Table 2, ListOps steps/s",
        description=gpu.__doc__,
    )
    parser.add_argument(
        "--parts",
        action=cli.Items,
        choices=list(gpu.PARTS),
        default=list(gpu.PARTS),
        help="what to measure: layers (forward + backward of one layer, bf16 and "
        "float32, 1K-64K), table2 (LRA Table 2's steps/s and memory), "
        "listops (the paper's ListOps model)",
    )
    parser.add_argument(
        "--mechanisms",
        action=cli.Items,
        default=attention_layers.available(),
        choices=attention_layers.available(),
        metavar="NAME",
        help="mechanisms to measure (default: all)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="tiny sizes, any device (the CPU too): checks the whole path in "
        "seconds; its tables say so",
    )
    parser.add_argument(
        "--memory-cap-gb",
        type=cli.positive_number,
        default=None,
        help="skip a row whose estimated memory exceeds this (default: 90%% of the GPU's memory)",
    )
    parser.add_argument(
        "--output",
        type=pathlib.Path,
        default=None,
        help=f"the results (default {RESULTS / 'gpu.json'}; with --dry-run "
        f"{DRY_RUNS / 'gpu.json'}, so that a dry run never replaces them)",
    )
    parser.set_defaults(output_example="gpu.json")
    parser.add_argument(
        "--report",
        type=pathlib.Path,
        default=None,
        help=f"the GPU tables generated from --output (default "
        f"{RESULTS / 'gpu.md'}; with --dry-run {DRY_RUNS / 'gpu.md'})",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="measure nothing: regenerate --report from --output",
    )
    parser.set_defaults(
        run=lambda options: (gpu.render_only if options.report_only else gpu.run)(options)
    )


def default_gpu_paths(options):
    """gpu's --output and --report where not given: the committed results, or files under
    DRY_RUNS for a --dry-run (its tiny sizes must not replace the GPU's numbers)."""
    folder = DRY_RUNS if options.dry_run else RESULTS
    options.output = options.output or folder / "gpu.json"
    options.report = options.report or folder / "gpu.md"


def report_parser(commands):
    parser = commands.add_parser(
        "report", help="docs/results/efficiency/report.md and plots from the results"
    )
    parser.add_argument("--layers", type=pathlib.Path, default=RESULTS / "layers.json")
    parser.add_argument("--train", type=pathlib.Path, default=RESULTS / "train.json")
    parser.add_argument(
        "--mixers",
        type=pathlib.Path,
        action=cli.Items,
        nargs="*",
        default=[RESULTS / "mixers.json", RESULTS / "mixers-131k.json"],
        help="the state-space mixers' layer results, each a run of `layers "
        "--mechanisms ... --peers --output ...` (missing files are skipped)",
    )
    parser.add_argument(
        "--runs",
        type=pathlib.Path,
        default=pathlib.Path("runs"),
        help="run directories (<task>-<model>/metrics.json) for our accuracies",
    )
    parser.add_argument(
        "--pairs",
        type=pathlib.Path,
        default=RESULTS / "pairs.json",
        help="the results of `pairs` (skipped when missing)",
    )
    parser.add_argument(
        "--exact",
        type=pathlib.Path,
        default=RESULTS / "exact.json",
        help="`full` across its switch to blockwise attention, a run of `layers "
        "--mechanisms full --lengths 4096 8192 16384 --peers ...` (skipped "
        "when missing)",
    )
    parser.add_argument(
        "--gpu",
        type=pathlib.Path,
        action=cli.Items,
        nargs="*",
        default=[RESULTS / "gpu-h200.json"],
        help="layer results measured under JAX on a GPU machine "
        "(tools/device_round_trip.sh; missing files are skipped)",
    )
    parser.add_argument(
        "--notes",
        type=pathlib.Path,
        default=RESULTS / "notes.md",
        help="hand-written findings included in the report when present",
    )
    output_option(parser, RESULTS / "report.md")
    parser.set_defaults(run=report.run)


def profile_parser(commands):
    parser = commands.add_parser("profile", help="per-op time of one mechanism or peer")
    parser.add_argument(
        "name",
        choices=[*attention_layers.available(), *peers.names()],
        metavar="NAME",
        help="a mechanism or a peer",
    )
    parser.add_argument("--length", type=cli.positive_int, default=4096)
    parser.add_argument("--batch", type=cli.positive_int, default=1)
    parser.add_argument("--heads", type=cli.positive_int, default=4)
    parser.add_argument("--head-dim", type=cli.positive_int, default=64)
    parser.add_argument("--stage", choices=["forward", "train"], default="train")
    parser.add_argument("--calls", type=cli.positive_int, default=3)
    parser.add_argument("--top", type=cli.positive_int, default=15)
    parser.set_defaults(run=profiling.run)


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.benchmark", description="Efficiency benchmarks of the mechanisms."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for add in (
        layer_parser,
        pair_parser,
        train_parser,
        xla_parser,
        precision_parser,
        gpu_parser,
        report_parser,
        profile_parser,
    ):
        add(commands)
    options = parser.parse_args(argv)
    if options.command == "train":
        options.xla_modes = SWITCH_MODES[options.xla]
        options.remat_modes = SWITCH_MODES[options.remat]
    return options


def main(argv=None):
    """Command line: measure layers, pairs, training, XLA, precision or GPU, or report.

    Args:
        argv: a subcommand and its flags (default: sys.argv[1:]); `--help` lists the subcommands.

    Exit status:
        0 once the measurements or the report are written; 2 and one `error: ...` line on stderr
            for a user's mistake; 1 when a measurement failed (`--debug`: the traceback).

    Example:
        python -m arena_tf.benchmark layers --help

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    options = parse_args(argv)

    def measure():
        if options.command == "gpu":
            default_gpu_paths(options)
        check_outputs(options)
        options.run(options)

    return cli.run_main(measure, debug=options.debug)


if __name__ == "__main__":
    sys.exit(main())
