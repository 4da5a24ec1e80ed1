"""The yardstick of the bench's own overhead: a bare loop of `predict` calls, no protocol.

    python -m serving.bare_loop RUN_DIR --runtime onnxruntime --precision fp32 \\
        --rows single_stream.jsonl --out bare.json

It loads the run's artifact as serving.submission does (the same task and runtime class), reads the
rows (JSON Lines, in the order the scenario sent them), turns them all into arrays before any
timing, predicts the first one untimed (the warm-up), then times one `predict` call per row:
for ONNX Runtime that is `session.run`, for TensorFlow the signature call. It writes the latency
summary (as `bare_loop_latency_*_ms`) to `--out`. `python -m serving.bench --bare-loop` runs it
after each single-stream row, on that row's instances, and reports how the row's latencies compare.
"""

import json
import pathlib
import sys

from arena_tf import cli
from arena_tf.files import write_json
from arena_tf.serving import clock as clocks
from arena_tf.serving import runtimes
from arena_tf.serving.metrics import latency_summary
from arena_tf.serving.submission import Submission, run_task


def arrays_of(task, rows):
    """Each row as the task's model inputs of one row; RowError for a row that is not the task's."""
    return [task.rows_to_arrays([row]) for row in rows]


def time_predictions(runtime, arrays, clock=clocks.SYSTEM):
    """Seconds (on `clock`) of each `predict` call on one row's `arrays` at a time, after one
    untimed call."""
    runtime.predict(arrays[0])
    seconds = []
    for inputs in arrays:
        start = clock.now()
        runtime.predict(inputs)
        seconds.append(clock.now() - start)
    return seconds


def measure(run_dir, runtime_name, precision, device, rows):
    """{"bare_loop_latency_{mean,p50,p90,p99,max}_ms", "bare_loop_count"} of a run's artifact; the
    rows are checked before the artifact is loaded (a bad one refused in one line)."""
    arrays = arrays_of(run_task(run_dir), rows)
    submission = Submission.load(run_dir, runtime_name, precision, device)
    seconds = time_predictions(submission.runtime, arrays)
    return {**latency_summary(seconds, "bare_loop_latency"), "bare_loop_count": len(seconds)}


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m serving.bare_loop", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("run_dir", help="a run directory with config.yaml and exported artifacts")
    runtimes.add_arguments(parser)
    parser.add_argument("--rows", required=True, help="JSON Lines, one row each")
    parser.add_argument("--out", required=True, help="where to write the JSON summary")
    return parser.parse_args(argv)


def read_rows(path):
    """The rows of a JSON Lines file; UsageError (exit 2) when it cannot give any."""
    expected, fix = "one JSON row per line", "pass the file the bench wrote"
    try:
        with open(path, "rb") as lines:
            rows = [json.loads(line) for line in lines if line.strip()]
    except OSError as error:
        raise cli.UsageError(f"cannot read {path}: {error.strerror}", expected, fix) from None
    except ValueError as error:
        raise cli.UsageError(f"{path} is not JSON lines ({error})", expected, fix) from None
    if not rows:
        raise cli.UsageError(f"{path} holds no rows", expected, fix)
    return rows


def run(args):
    if not pathlib.Path(args.run_dir, "config.yaml").is_file():
        raise cli.UsageError(
            f"run directory {args.run_dir} has no config.yaml",
            "a run directory written by python -m arena_tf.train",
            "check the path",
        )
    rows = read_rows(args.rows)
    out = cli.output_file(args.out, "--out", example="bare.json", inputs=[args.rows])
    write_json(out, measure(args.run_dir, args.runtime, args.precision, args.device, rows))


def main(argv=None):
    args = parse_args(argv)
    return cli.run_main(
        lambda: run(args), debug=args.debug, failures=(runtimes.Unsupported, OSError)
    )


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
