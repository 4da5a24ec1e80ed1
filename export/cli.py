"""The command line both export scripts share: arguments, quiet logs, one line per outcome.

A problem with the input or a failed parity check prints one `error: ...` line on stderr and
exits with status 1 (no traceback); each written artifact prints one line with its parity summary.
"""

import argparse
import logging
import sys

from export.errors import ExportError
from export.examples import DEFAULT_COUNT
from export.parity import summary


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive integer")
    return value


def parser(prog, doc):
    """An ArgumentParser with the arguments every export takes (path, --examples)."""
    result = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    result.add_argument("path", help="run directory (model.keras, config.yaml) or a .keras file")
    result.add_argument("--examples", type=positive_int, default=DEFAULT_COUNT,
                        help="parity examples: task test split or generated "
                        f"(default {DEFAULT_COUNT})")
    return result


def quiet_logs():
    """Keep TensorFlow's and tf2onnx's progress chatter off the console."""
    for name in ("tensorflow", "tf2onnx", "absl"):
        logging.getLogger(name).setLevel(logging.ERROR)


def run(export, arg_parser, argv=None):
    """Parse `argv`, call `export(args)` -> {artifact: report}, print one line each; exit status."""
    args = arg_parser.parse_args(argv)
    quiet_logs()
    try:
        print_written(export(args))
    except ExportError as error:
        print_written(getattr(error, "published", {}))
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def print_written(reports):
    """One line per artifact written: its path, parity summary and export time."""
    for artifact, report in reports.items():
        print(f"{artifact}: parity passed ({summary(report)}), written in "
              f"{report['export_seconds']:.1f} s")
