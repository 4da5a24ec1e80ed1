"""The model process: one exported artifact served over the Pentathlon stdio protocol.

    python -m serving.worker RUN_DIR/model.onnx --runtime onnxruntime --precision fp32 --device cpu \
        --offline-dir WORK_DIR

It loads the artifact, then answers request lines on stdin (see serving/protocol.py) until end of
input. Inside, it times each `predict` call (the latency the model itself sees, without the
protocol); the offline handshake batches all instances in batches of `--offline-batch-size` (its
own choice, as the scenario allows). Offline requests may name files inside `--offline-dir` only
(the bench passes the work directory it created); any other path, or any path when no directory
was given, is refused with one error line. It writes a JSON report (runtime, providers, load time,
those timings, its peak RSS) to `--report` (default: $ARENA_TF_SERVING_REPORT) after loading and at
exit.

Exit codes: 0 after end of input; 3 when the runtime cannot run as asked (`{"error": ...,
"unsupported": true}` on stdout first); 2 when the arguments or the artifact are wrong (the
artifact cannot be loaded: an error line on stdout first); each with one line `error: ...` on
stderr.
"""

import argparse
import json
import os
import pathlib
import sys

import numpy as np

from arena_tf import cli
from serving import artifacts, confine, protocol, runtimes
from serving import clock as clocks

REPORT_ENV = "ARENA_TF_SERVING_REPORT"
DEFAULT_OFFLINE_BATCH = 32


class WorkerUnsupported(cli.RunError):
    """The runtime cannot run as asked here (exit 3; the bench reports the row as unsupported)."""

    exit_code = 3


class ModelServer:
    """The protocol handler: instances -> int32 arrays -> runtime -> logits, timed on `clock`.
    Offline files are read and written only inside `offline_dir` (None: no offline requests)."""

    def __init__(self, runtime, metadata, offline_batch_size=DEFAULT_OFFLINE_BATCH,
                 offline_dir=None, clock=clocks.SYSTEM):
        self.runtime = runtime
        self.num_inputs = int(metadata.get("num_inputs") or 1)
        self.max_len = metadata.get("max_len")
        self.vocab_size = metadata.get("vocab_size")
        self.offline_batch_size = offline_batch_size
        self.offline_dir = offline_dir
        self.clock = clock
        self.predict_seconds = []
        self.offline_seconds = None

    def predict(self, instances):
        inputs = self.to_arrays(instances)
        start = self.clock.now()
        logits = self.runtime.predict(inputs)
        self.predict_seconds.append(self.clock.now() - start)
        return logits.tolist()

    def offline(self, input_file, output_file, say):
        input_path = confine.inside(input_file, self.offline_dir, "input_file")
        output_path = confine.inside(output_file, self.offline_dir, "output_file")
        with open(input_path, "rb") as lines:
            instances = [json.loads(line) for line in lines if line.strip()]
        inputs = self.to_arrays(instances)
        say("ready")
        start = self.clock.now()
        size = self.offline_batch_size
        logits = np.concatenate([
            self.runtime.predict(tuple(x[i:i + size] for x in inputs))
            for i in range(0, len(instances), size)
        ])
        self.offline_seconds = self.clock.now() - start
        say("predicted")
        with confine.open_output(output_path) as out:
            out.writelines(json.dumps(row) + "\n" for row in logits.tolist())
        say("written")

    def to_arrays(self, instances):
        """A tuple of int32 [batch, max_len] arrays, one per model input; ProtocolError naming what
        is wrong with the instances otherwise."""
        shape = f"{self.max_len or 'L'} token ids"
        expected = shape if self.num_inputs == 1 else f"{self.num_inputs} lists of {shape}"
        try:
            array = np.asarray(instances)
        except ValueError:
            array = np.asarray([], dtype=object)
        rank = 2 if self.num_inputs == 1 else 3
        if (array.dtype.kind not in "iu" or array.ndim != rank
                or (rank == 3 and array.shape[1] != self.num_inputs)
                or (self.max_len and array.shape[-1] != self.max_len)):
            raise protocol.ProtocolError(f"instances must each be {expected}; got "
                                         f"{describe_instances(instances)}")
        if self.vocab_size and (array.min() < 0 or array.max() >= self.vocab_size):
            raise protocol.ProtocolError(f"token ids must be in [0, {self.vocab_size}); got ids "
                                         f"from {array.min()} to {array.max()}")
        array = array.astype(np.int32)
        return (array,) if rank == 2 else tuple(array[:, i] for i in range(self.num_inputs))


def describe_instances(instances):
    """A short description of what arrived, for error lines."""
    first = instances[0] if instances else None
    if isinstance(first, list):
        return f"{len(instances)} instances, the first a list of {len(first)} items"
    return f"{len(instances)} instances, the first a {type(first).__name__}"


def write_report(path, report):
    if path:
        from arena_tf.files import write_json

        write_json(path, report)


def positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def parse_args(argv):
    parser = cli.ArgumentParser(prog="python -m serving.worker",
                                description="Serve one exported model over stdio.")
    parser.add_argument("artifact", help="a SavedModel directory or an .onnx file")
    parser.add_argument("--runtime", required=True, choices=runtimes.available())
    parser.add_argument("--precision", default="fp32", choices=runtimes.PRECISIONS)
    parser.add_argument("--device", default="cpu", choices=runtimes.DEVICES)
    parser.add_argument("--offline-batch-size", type=positive_int, default=DEFAULT_OFFLINE_BATCH)
    parser.add_argument("--offline-dir", help="the only directory offline requests may read and "
                        "write files in (default: none, offline requests are refused)")
    parser.add_argument("--report", default=os.environ.get(REPORT_ENV),
                        help="where to write the JSON report (default $%s)" % REPORT_ENV)
    return parser.parse_args(argv)


def check_args(args):
    """UsageError (exit 2) for an --offline-dir that is not a directory."""
    if args.offline_dir is not None and not pathlib.Path(args.offline_dir).is_dir():
        raise cli.UsageError(f"--offline-dir {args.offline_dir} is not a directory",
                             "an existing directory for the offline scenario's files",
                             "create it or pass the bench's work directory")


def load(args, out, clock=clocks.SYSTEM):
    """(runtime, metadata, report) with the runtime loaded; an error line on the protocol and a
    cli error (exit 3 unsupported, 2 unloadable) if it cannot."""
    report = {"artifact": str(args.artifact), "runtime": args.runtime,
              "precision": args.precision, "device": args.device}
    if not pathlib.Path(args.artifact).exists():
        fail(out, args.report, report, cli.UsageError(
            f"artifact {args.artifact} does not exist", "a SavedModel directory or an .onnx file",
            "export it (export/) or check the path"))
    metadata = artifacts.read_metadata(args.artifact)
    runtime = runtimes.get(args.runtime)(args.artifact, args.precision, args.device, metadata)
    report.update(runtime.describe())
    start = clock.now()
    try:
        runtime.load()
    except runtimes.Unsupported as error:
        fail(out, args.report, report, WorkerUnsupported(str(error)), unsupported=True)
    except Exception as error:  # any load failure is one error line and exit code 2
        fail(out, args.report, report, cli.UsageError(
            f"cannot load {args.artifact}: {' '.join(str(error).split())[:300]}",
            f"an artifact {args.runtime} can load", "re-export it (export/)"))
    report.update(runtime.describe(), load_seconds=clock.now() - start)
    write_report(args.report, report)
    return runtime, metadata, report


def protocol_stdout():
    """The real stdout for protocol lines only; anything else printing to stdout (libraries,
    print) goes to stderr from now on, so it cannot corrupt the protocol."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return out


def fail(out, report_path, report, error, unsupported=False):
    """Tell the bench on the protocol (an error line), record it in the report, then raise the cli
    `error` (one line on stderr, its exit code)."""
    line = {"error": str(error), **({"unsupported": True} if unsupported else {})}
    write_report(report_path, {**report, **line})
    out.write(protocol.encode_line(line))
    out.flush()
    raise error


def serve(args):
    check_args(args)
    out = protocol_stdout()
    runtime, metadata, report = load(args, out)
    server = ModelServer(runtime, metadata, args.offline_batch_size, offline_dir=args.offline_dir)
    protocol.serve(server, sys.stdin.buffer, out)
    report.update(
        predict_seconds=server.predict_seconds,
        offline_predict_seconds=server.offline_seconds,
        peak_rss_bytes=protocol.peak_rss_bytes(os.getpid()),
    )
    write_report(args.report, report)


def main(argv=None):
    args = parse_args(argv)
    return cli.run_main(lambda: serve(args), debug=args.debug)


if __name__ == "__main__":
    sys.exit(main())
