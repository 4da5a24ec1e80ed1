"""An exported run as an Efficiency Pentathlon submission: rows in, label strings out, on stdio.

    python -m serving.submission RUN_DIR [--runtime onnxruntime|tf|openvino|xla|tensorrt]
        [--precision fp32|fp16|bf16]
        [--device cpu|gpu] [--offline [--offline-dir DIR]]

so that `efficiency-benchmark run --task T --scenario S -- python -m serving.submission RUN_DIR`
drives it (docs/guide/serving-and-pentathlon.md has the protocol; arena_tf/serving/protocol.py its
fixed lines). It is also the serving bench's model process (python -m serving.bench RUN_DIR). The
task and its settings (max_len, task parameters) come from RUN_DIR/config.yaml; the model is the
artifact the runtime reads for the precision (arena_tf/serving/runtimes.py, the export contract).
Rows are tokenized here by the task's own `rows_to_arrays`, exactly as training encoded them
(arena_tf/tasks/base.py); a prediction is the argmax of the logits as the task's target string ("7"
for ListOps).

Online (default): each stdin line is a JSON list of rows (`{"input": ...}` or `{"input1": ...,
"input2": ...}`; other fields such as "target" are ignored); each gets one stdout line, the JSON
list of label strings in order.

Offline (--offline): stdin brings one line `{"offline_data_path": P, "offline_output_path": Q,
"limit": N}`. The rows of P (JSON Lines; the first N when N > 0) are read, then stdout says
`Model and data loaded. Start the timer.`; they are predicted in batches of OFFLINE_BATCH; stdout
says `Offiline prediction done. Stop the timer.` (Pentathlon's spelling); Q receives one
`{"output": "<label>"}` line per row in input order (written atomically); stdout says `Offiline
outputs written. Exit.` With --offline-dir, both paths must lie inside that directory (the bench
passes its work directory); any other is an error.

Errors: anything that goes wrong (arguments, a missing artifact, a malformed request or row) prints
`Efficiency benchmark exception: SubprocessError` and then the traceback on stdout, and the exit
status is non-zero (2 for bad arguments, 1 otherwise).

Stdout carries the protocol only: from the start, whatever else writes to file descriptor 1
(print, TensorFlow, ONNX Runtime, --help) goes to stderr.

Side channel, for our bench and never seen by a Pentathlon driver: stderr lines
`arena_tf.submission: <JSON object>`, one per event, its "event" field naming it:

    {"event": "loaded", "runtime", "precision", "device", "providers", "artifact",
     "artifact_precision", "load_seconds"}               the runtime actually used, once loaded
    {"event": "batch", "instances", "predict_seconds"}    each model call (in-model latency: the
                                                          runtime's predict, without tokenizing)
    {"event": "offline", "instances", "seconds"}          the offline prediction, as timed here
    {"event": "exit", "peak_rss_bytes"}                   last, whatever the outcome
"""

import json
import os
import resource
import sys
import time
import traceback

from arena_tf import cli, tasks
from arena_tf.config import read_run_config
from arena_tf.files import atomic_writer
from arena_tf.serving import artifacts, confine, runtimes
from arena_tf.serving.protocol import (
    LOADED,
    PREDICTED,
    SENTINEL,
    SIDE_PREFIX,
    WRITTEN,
    peak_rss_bytes,
)

OFFLINE_BATCH = 128
DEFAULT_RUNTIME = "onnxruntime"


def side(event, **fields):
    """One side-channel line on stderr: SIDE_PREFIX and a JSON object with `event` and `fields`."""
    sys.stderr.write(SIDE_PREFIX + json.dumps({"event": event, **fields}) + "\n")
    sys.stderr.flush()


def run_task(run_dir):
    """The task a run trained on, from its config.yaml (no TensorFlow or Keras imported)."""
    config = read_run_config(run_dir)
    return tasks.from_config(config.task, seed=config.train.seed)


class Submission:
    """A loaded model and its task: `predict(rows)` -> label strings, each model call reported."""

    def __init__(self, task, runtime):
        self.task = task
        self.runtime = runtime

    @classmethod
    def load(cls, run_dir, runtime="onnxruntime", precision="fp32", device="cpu"):
        """The run's task (from config.yaml) and its artifact for `runtime` and `precision`, loaded
        on `device`; runtimes.Unsupported when it cannot run so, a UsageError when the artifact's
        input length is not the task's."""
        task = run_task(run_dir)
        path = runtimes.artifact_path(run_dir, runtime, precision, device)
        metadata = artifacts.read_metadata(path)
        if metadata.get("max_len") not in (None, task.max_len):
            raise cli.UsageError(
                f"{path} takes {metadata['max_len']} tokens per input but the task "
                f"in {run_dir}/config.yaml reads {task.max_len}",
                "an artifact exported from this run as it is now",
                f"re-export the run: python {runtimes.get(runtime).exporter} {run_dir}",
            )
        model = runtimes.get(runtime)(path, precision, device, metadata)
        start = time.perf_counter()
        model.load()
        side(
            "loaded",
            **model.describe(),
            artifact=str(path),
            artifact_precision=metadata.get("precision"),
            load_seconds=time.perf_counter() - start,
        )
        return cls(task, model)

    def predict(self, rows):
        """The predicted label string of each row, in order; RowError for a malformed row."""
        if not rows:
            return []
        arrays = self.task.rows_to_arrays(rows)
        start = time.perf_counter()
        logits = self.runtime.predict(arrays)
        side("batch", instances=len(rows), predict_seconds=time.perf_counter() - start)
        return [self.task.target(label) for label in logits.argmax(axis=-1)]

    def predict_all(self, rows, batch_size=OFFLINE_BATCH):
        """`predict` over `rows` in batches of `batch_size`."""
        return [
            label
            for start in range(0, len(rows), batch_size)
            for label in self.predict(rows[start : start + batch_size])
        ]


class RequestError(cli.UsageError):
    """A request line or offline file that is not what the protocol sends (not JSON, not the shape
    it names, a file that cannot be read or written); the message says which and what was
    expected."""


def parse_batch(line):
    """The rows of one request line; RequestError unless it is a JSON list."""
    batch = json_value(line, "a request line")
    if not isinstance(batch, list):
        raise RequestError(
            f"a request is a JSON {type(batch).__name__}", "a JSON list of rows, one line per batch"
        )
    return batch


def json_value(text, what):
    """The JSON value of `text`; RequestError naming `what` when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError as error:
        raise RequestError(
            f"{what} is not JSON ({error})",
            "one JSON value per line",
            "send lines as json.dumps writes them",
        ) from None


def offline_request(line):
    """(data path, output path, limit) of the offline handshake's config line; RequestError unless
    it is a JSON object with the two paths as strings and an integer limit (default -1)."""
    config = json_value(line, "the offline config line")
    config = config if isinstance(config, dict) else {}
    paths, limit = [config.get(key) for key in OFFLINE_PATHS], config.get("limit", -1)
    if not all(isinstance(path, str) for path in paths) or type(limit) is not int:
        raise RequestError(
            f"the offline config line is {line.strip()[:200]!r}",
            'a JSON object {"offline_data_path": str, "offline_output_path": str, "limit": int}',
            "send it as Pentathlon's offline driver does",
        )
    return (*paths, limit)


OFFLINE_PATHS = ("offline_data_path", "offline_output_path")


def serve_online(submission, requests, answers):
    """Answer each request line with one line of label strings until end of input."""
    for line in requests:
        if line.strip():
            say(answers, json.dumps(submission.predict(parse_batch(line))))


def serve_offline(submission, requests, answers, offline_dir=None):
    """The offline handshake: one config line in, three fixed lines out, the outputs file (both
    paths inside `offline_dir` when one is given)."""
    *paths, limit = offline_request(requests.readline())
    data_path, output_path = (
        confined(path, offline_dir, key) for path, key in zip(paths, OFFLINE_PATHS)
    )
    rows = read_rows(data_path, limit)
    say(answers, LOADED)
    start = time.perf_counter()
    labels = submission.predict_all(rows)
    seconds = time.perf_counter() - start
    say(answers, PREDICTED)
    side("offline", instances=len(rows), seconds=seconds)
    write_outputs(output_path, labels)
    say(answers, WRITTEN)


def confined(path, offline_dir, what):
    """`path`, checked to lie inside `offline_dir` when one is given
    (arena_tf/serving/confine.py)."""
    return path if offline_dir is None else confine.inside(path, offline_dir, what)


def read_rows(path, limit):
    """The JSON Lines rows of `path`, the first `limit` when it is positive (Pentathlon: -1 means
    all); RequestError when it cannot be read or a line is not JSON."""
    try:
        with open(path, encoding="utf-8") as lines:
            rows = [
                json_value(line, f"line {number} of {path}")
                for number, line in enumerate(lines, 1)
                if line.strip()
            ]
    except (OSError, UnicodeDecodeError) as error:
        raise RequestError(
            f"offline_data_path {str(path)[:200]!r} cannot be read ({error})",
            "a JSON Lines file of rows, UTF-8",
            "check the path the driver sent",
        ) from None
    return rows[:limit] if limit > 0 else rows


def write_outputs(path, labels):
    """`{"output": label}` JSON Lines, in order, replacing `path` at once; RequestError when it
    cannot be written."""
    try:
        with atomic_writer(path) as out:
            out.writelines(json.dumps({"output": label}) + "\n" for label in labels)
    except OSError as error:
        raise RequestError(
            f"offline_output_path {str(path)[:200]!r} cannot be written ({error})",
            "a file in a writable directory",
            "check the path the driver sent and the free disk space",
        ) from None


def say(answers, line):
    """One protocol line on the answer stream, sent at once."""
    answers.write(line + "\n")
    answers.flush()


def answer_stream():
    """The process's stdout, kept for protocol lines alone; file descriptor 1 (print, library and
    C++ logs) goes to stderr from now on."""
    sys.stdout.flush()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", newline="\n")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return answers


def build_parser():
    parser = cli.ArgumentParser(
        prog="python -m serving.submission",
        description="Serve an exported run as a Pentathlon submission.",
    )
    parser.add_argument("run_dir", help="a run directory with config.yaml and exported artifacts")
    runtimes.add_arguments(parser, runtime_default=DEFAULT_RUNTIME)
    parser.add_argument(
        "--offline", action="store_true", help="the offline handshake instead of online batches"
    )
    parser.add_argument(
        "--offline-dir",
        help="offline files only inside this directory (the "
        "bench passes its work directory; default: any path the driver names)",
    )
    return parser


def serve(argv, requests, answers):
    """Parse the arguments, load the model, then serve `requests` (online or offline)."""
    args = build_parser().parse_args(argv)
    submission = Submission.load(args.run_dir, args.runtime, args.precision, args.device)
    if args.offline:
        serve_offline(submission, requests, answers, args.offline_dir)
    else:
        serve_online(submission, requests, answers)


def exit_status(error):
    """A non-zero status for `error`: argparse's own (2) for bad arguments, else 1."""
    if isinstance(error, SystemExit) and isinstance(error.code, int) and error.code:
        return error.code
    return 1


def main(argv=None):
    """Command line: serve RUN_DIR's exported model on stdio, online or --offline.

    Args:
        argv: the command-line arguments after the program name (default: sys.argv[1:]);
            `--help` lists them.

    Exit status:
        0 on success; non-zero after `Efficiency benchmark exception: SubprocessError` and the
            traceback on stdout: 2 for bad arguments, 1 otherwise.

    Example:
        python -m serving.submission runs/listops-performer --runtime onnxruntime

    References:
        Peng et al., 2023, "Efficiency Pentathlon: A Standardized Arena for Efficiency
            Evaluation", arXiv:2307.09701; github.com/allenai/efficiency-pentathlon.
    """
    answers = answer_stream()
    try:
        serve(argv, sys.stdin.buffer, answers)
    except SystemExit as stop:
        if stop.code in (0, None):  # --help
            return 0
        report_failure(answers)  # argparse has written its own line on stderr
        return exit_status(stop)
    except BaseException as error:  # noqa: BLE001 (the protocol's contract: every failure reported)
        report_failure(answers)
        return tell_stderr(error, exit_status(error))
    finally:
        side("exit", peak_rss_bytes=own_peak_rss())
    return 0


def own_peak_rss():
    """This process's peak resident memory in bytes: /proc's VmHWM, which starts afresh at exec
    (the rusage maximum does not: it keeps the size of the process that started this one, such
    as a bench holding TensorFlow), else the rusage maximum where /proc is missing."""
    return peak_rss_bytes(os.getpid()) or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def tell_stderr(error, status):
    """One line on stderr for a person reading the log (stdout keeps the protocol's sentinel and
    traceback); `status` back."""
    line, _ = cli.outcome(error, failures=TOLD_FAILURES)
    cli.report(line)
    return status


# Not bugs, though not CommandErrors: an artifact that cannot run here, an offline path outside
# --offline-dir (RequestError, the protocol's own, is a CommandError); their message is the line.
TOLD_FAILURES = (runtimes.Unsupported, confine.OutsideDirectory)


def report_failure(answers):
    """The sentinel line, then the traceback, on the protocol stream (the driver stops there)."""
    try:
        say(answers, SENTINEL)
        say(answers, traceback.format_exc().rstrip("\n"))
    except OSError:  # the driver has gone: nobody to tell
        pass


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
