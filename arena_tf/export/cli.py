"""The entry points every export script shares: the path-level call (`export_path`) and the
whole command line (`main`: arguments, quiet logs, one line per outcome).

Each written artifact prints one line on stdout with its parity summary; each reduced precision
that failed its parity check prints one `warning: ... not written ...` line on stderr with the
figures and its `<artifact>.parity.failed.json`, and does not change the exit status. Errors are
one line in the style of every arena_tf command (`arena_tf.cli`):
`error: <what>; expected <what>; <how to fix>`, exit status 2 for a wrong argument or input (bad
path, not a run directory, unknown precision), 1 when the export itself failed (a conversion,
the FP32 parity check, a write that failed, nothing written at all); `--debug` shows the
traceback instead.
"""

import logging
import sys

from arena_tf import cli
from arena_tf.export.context import prepare
from arena_tf.export.errors import ExportError, ParityError
from arena_tf.export.examples import DEFAULT_COUNT
from arena_tf.export.parity import summary
from arena_tf.export.publish import refusal_line


def export_path(path, precisions, check, export_models, count=None, thresholds=None, **options):
    """Check each of `precisions` with `check` before the model is loaded, then
    `export_models(context, precisions, **options)` of the run directory or .keras file at `path`
    ({artifact path: parity report})."""
    for precision in precisions:
        check(precision)
    return export_models(prepare(path, count, thresholds), precisions, **options)


def export_command(argv, *, script, doc, export, precisions, what, choices=None, options=None):
    """The command line of `python export/<script>`: path, --examples, --debug, --precision (which
    `what` to write: the keys of `precisions`, all by default; `choices` widens what it takes),
    then `options` {flag: add_argument keywords}; `export(args)` -> {artifact: report}, one line
    per outcome; the exit status."""
    arg_parser = parser(f"python export/{script}", doc)
    add_precisions(arg_parser, choices or precisions, precisions, what)
    for flag, keywords in (options or {}).items():
        arg_parser.add_argument(flag, **keywords)
    return run(export, arg_parser, argv)


def parser(prog, doc):
    """An arena_tf.cli.ArgumentParser with the arguments every export takes (path, --examples,
    --debug)."""
    result = cli.ArgumentParser(prog=prog, description=doc.split("\n\n")[0])
    result.add_argument("path", help="run directory (model.keras, config.yaml) or a .keras file")
    result.add_argument(
        "--examples",
        type=cli.positive_int,
        default=DEFAULT_COUNT,
        help=f"parity examples: task test split or generated (default {DEFAULT_COUNT})",
    )
    return result


def add_precisions(parser, choices, default, what):
    """--precision: the precisions to write, a list in the one vocabulary (fp32, bf16, fp16; the
    Keras names float32, mixed_bfloat16, mixed_float16 are synonyms)."""
    parser.add_argument(
        "--precision",
        action=cli.Items,
        type=cli.precision,
        choices=list(choices),
        default=list(default),
        help=f"which {what} to write",
    )


def quiet_logs():
    """Keep TensorFlow's and tf2onnx's progress chatter off the console."""
    for name in ("tensorflow", "tf2onnx", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)


def run(export, arg_parser, argv=None):
    """Parse `argv`, call `export(args)` -> {artifact: report}, print one line each; exit status."""
    args = arg_parser.parse_args(argv)
    quiet_logs()
    # OSError, or TensorFlow's own error for a write (the disk filled, `ulimit -f`, a directory
    # that could not be written): the export failed (exit 1)
    failures = (OSError,)
    if "tensorflow" in sys.modules:  # not imported by a JAX-only export (export/to_stablehlo.py)
        failures += (sys.modules["tensorflow"].errors.OpError,)
    return cli.run_main(lambda: outcome(export, args), debug=args.debug, failures=failures)


def outcome(export, args):
    """Run the export, print what was written and what was refused; raise when it failed."""
    try:
        reports = export(args)
    except ParityError as error:  # an FP32 artifact was refused: show what was written anyway
        print_outcomes(error.reports, refused_fp32=True)
        raise
    print_outcomes(reports)
    if not any(report["passed"] for report in reports.values()):
        raise ExportError(
            "no artifact passed its parity check, nothing was written",
            "at least one precision within its parity check",
            "see the warnings above and the .parity.failed.json files",
        )
    return 0


def print_outcomes(reports, refused_fp32=False):
    """One line per artifact: written (stdout) or refused (stderr; an FP32 refusal is the
    error line itself, printed by the caller)."""
    for artifact, report in reports.items():
        if report["passed"]:
            print(
                f"{artifact}: parity passed ({summary(report)}), written in "
                f"{report['export_seconds']:.1f} s",
                flush=True,
            )
        elif not (refused_fp32 and report["precision"] == "fp32"):
            print(f"warning: {refusal_line(report)}", file=sys.stderr, flush=True)
