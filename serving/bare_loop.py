"""The yardstick of the bench's own overhead: a bare loop of `predict` calls, no protocol.

    python -m serving.bare_loop RUN_DIR/model.onnx --runtime onnxruntime --precision fp32 \\
        --instances single_stream.jsonl --out bare.json

It loads the artifact with the same runtime class the worker uses, reads the instances (one JSON
instance per line, in the order the scenario sent them), turns them all into arrays before any
timing, predicts the first one untimed (the warm-up), then times one `predict` call per instance:
for ONNX Runtime that is `session.run`, for TensorFlow the signature call. It writes the latency
summary (as `bare_loop_latency_*_ms`) to `--out`. `python -m serving.bench --bare-loop` runs it
after each single-stream row, on that row's instances, and reports how the row's latencies compare.
"""

import json
import pathlib
import sys

from arena_tf import cli
from arena_tf.files import write_json
from serving import artifacts, runtimes
from serving import clock as clocks
from serving.metrics import latency_summary
from serving.protocol import ProtocolError
from serving.worker import ModelServer


def time_predictions(runtime, metadata, instances, clock=clocks.SYSTEM):
    """Seconds (on `clock`) of each `predict` call on one instance at a time, after one untimed
    call."""
    server = ModelServer(runtime, metadata)
    arrays = [server.to_arrays([instance]) for instance in instances]
    runtime.predict(arrays[0])
    seconds = []
    for inputs in arrays:
        start = clock.now()
        runtime.predict(inputs)
        seconds.append(clock.now() - start)
    return seconds


def measure(artifact, runtime_name, precision, device, instances):
    """{"bare_loop_latency_{mean,p50,p90,p99,max}_ms", "bare_loop_count"} of one artifact."""
    metadata = artifacts.read_metadata(artifact)
    runtime = runtimes.get(runtime_name)(artifact, precision, device, metadata).load()
    seconds = time_predictions(runtime, metadata, instances)
    return {**latency_summary(seconds, "bare_loop_latency"), "bare_loop_count": len(seconds)}


def parse_args(argv):
    parser = cli.ArgumentParser(prog="python -m serving.bare_loop",
                                description=__doc__.split("\n\n")[0])
    parser.add_argument("artifact", help="a SavedModel directory or an .onnx file")
    parser.add_argument("--runtime", required=True, choices=runtimes.available())
    parser.add_argument("--precision", default="fp32", choices=runtimes.PRECISIONS)
    parser.add_argument("--device", default="cpu", choices=runtimes.DEVICES)
    parser.add_argument("--instances", required=True, help="JSON lines, one instance each")
    parser.add_argument("--out", required=True, help="where to write the JSON summary")
    return parser.parse_args(argv)


def read_instances(path):
    """The instances of a JSON-lines file; UsageError (exit 2) when it cannot give any."""
    expected, fix = "one JSON instance per line", "pass the file the bench wrote"
    try:
        with open(path, "rb") as lines:
            instances = [json.loads(line) for line in lines if line.strip()]
    except OSError as error:
        raise cli.UsageError(f"cannot read {path}: {error.strerror}", expected, fix) from None
    except ValueError as error:
        raise cli.UsageError(f"{path} is not JSON lines ({error})", expected, fix) from None
    if not instances:
        raise cli.UsageError(f"{path} holds no instances", expected, fix)
    return instances


def run(args):
    if not pathlib.Path(args.artifact).exists():
        raise cli.UsageError(f"artifact {args.artifact} does not exist",
                             "a SavedModel directory or an .onnx file", "check the path")
    instances = read_instances(args.instances)
    write_json(args.out, measure(args.artifact, args.runtime, args.precision, args.device,
                                 instances))


def main(argv=None):
    args = parse_args(argv)
    return cli.run_main(lambda: run(args), debug=args.debug, usage=(ProtocolError,),
                        failures=(runtimes.Unsupported, OSError))


if __name__ == "__main__":
    sys.exit(main())
