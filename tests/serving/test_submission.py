"""`python -m serving.submission` under a Pentathlon driver written from
docs/guide/serving-and-pentathlon.md (tests/serving/pentathlon_driver.py): the tiny exported ListOps
run, under ONNX Runtime, TF, OpenVINO and XLA, answers fixed_batch, single_stream and offline with
the model's own predictions on the rows, and a malformed request with the sentinel and a non-zero
exit. One online process per runtime serves both online scenarios and then the malformed request;
one more serves offline."""

import json
import os
import pathlib
import random
import subprocess
import sys

import numpy as np
import pytest
import yaml

from arena_tf import data
from arena_tf.analysis import rundir
from arena_tf.serving import artifacts, runtimes
from arena_tf.serving.submission import SIDE_PREFIX
from tests.serving import pentathlon_driver as driver

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = [pytest.mark.xdist_group("tiny_run"), pytest.mark.slow]

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNTIMES = ("onnxruntime", "tf", "openvino", "xla")


def command(run_dir, runtime, *flags):
    """The submission's command line, as `efficiency-benchmark run ... -- CMD` would start it."""
    return [sys.executable, "-m", "serving.submission", str(run_dir), "--runtime", runtime, *flags]


@pytest.fixture(scope="module", autouse=True)
def _quiet_and_importable():
    """The submission finds this checkout and keeps TensorFlow's C++ log quiet."""
    saved = dict(os.environ)
    os.environ.update(PYTHONPATH=str(ROOT), TF_CPP_MIN_LOG_LEVEL="3")
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def rows(tiny_run, tmp_path_factory):
    """The run's test split as `python -m arena_tf.data rows` writes it."""
    data_dir = yaml.safe_load((tiny_run / "config.yaml").read_text())["task"]["data_dir"]
    out = tmp_path_factory.mktemp("rows") / "test.jsonl"
    assert data.main(["rows", "--task=listops", f"--data_dir={data_dir}", f"--out={out}"]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def own_predictions(run_dir, runtime):
    """(labels, {row input: predicted label string}): the test split's labels and the model's
    predictions on load_split's ids, run in this process."""
    task = rundir.make_task(rundir.read_config(run_dir))
    examples = list(task.load_split("test").as_numpy_iterator())
    path = runtimes.artifact_path(run_dir, runtime, "fp32")
    model = runtimes.get(runtime)(path, metadata=artifacts.read_metadata(path)).load()
    logits = model.predict((np.stack([tokens for tokens, _ in examples]),))
    return [str(label) for _, label in examples], [str(label) for label in logits.argmax(-1)]


@pytest.fixture(scope="module", params=RUNTIMES)
def served(request, tiny_run, rows, tmp_path_factory):
    """What the driver saw of one runtime: each scenario's instances and outputs, the failure of
    a malformed request, the exit status after it, stderr, and the model's own predictions."""
    runtime = request.param
    scenarios = {
        "fixed_batch": driver.fixed_batch(rows),
        "single_stream": driver.single_stream(rows),
    }
    seen = {"runtime": runtime}
    with driver.Online(command(tiny_run, runtime)) as online:
        for name, batches in scenarios.items():
            seen[name] = ([row for batch in batches for row in batch], online.run(batches))
        with pytest.raises(driver.SubmissionFailed) as failed:
            online.predict([rows[0], {"input": "( [MAX 2 nope ] )", "target": "2"}])
        seen["failure"], seen["status"], seen["stderr"] = (
            str(failed.value),
            online.close(),
            online.stderr(),
        )
    instances = driver.offline_instances(rows)
    seen["offline"] = (
        instances,
        driver.offline(
            command(tiny_run, runtime, "--offline"), instances, tmp_path_factory.mktemp("offline")
        ),
    )
    labels, predicted = own_predictions(tiny_run, runtime)
    seen["labels"], seen["own"] = labels, dict(zip((row["input"] for row in rows), predicted))
    return seen


def accuracy(outputs, targets):
    return sum(o == t for o, t in zip(outputs, targets, strict=True)) / len(targets)


@pytest.mark.parametrize("scenario", ["fixed_batch", "single_stream", "offline"])
def test_every_scenario_answers_the_models_own_predictions(served, scenario):
    instances, outputs = served[scenario]
    assert outputs == [served["own"][row["input"]] for row in instances]


def test_fixed_batch_covers_the_split_and_its_accuracy_is_the_models(served, rows):
    instances, outputs = served["fixed_batch"]
    assert sorted(map(json.dumps, instances)) == sorted(map(json.dumps, rows))
    own = [served["own"][row["input"]] for row in rows]
    targets = [row["target"] for row in instances]
    assert accuracy(outputs, targets) == accuracy(own, served["labels"])
    assert [row["target"] for row in rows] == served["labels"]


def test_single_stream_and_offline_send_pentathlons_instance_counts(served):
    assert len(served["single_stream"][1]) == driver.SINGLE_STREAM_INSTANCES
    assert len(served["offline"][1]) == driver.OFFLINE_INSTANCES


def test_a_malformed_request_gives_the_sentinel_traceback_and_a_non_zero_exit(served):
    assert served["failure"].startswith("Traceback (most recent call last):")
    assert "RowError: row 1: 'nope' is not a ListOps token" in served["failure"]
    assert served["status"] != 0


def test_the_side_channel_reports_the_runtime_and_each_model_call(served):
    events = [
        json.loads(line[len(SIDE_PREFIX) :])
        for line in served["stderr"].splitlines()
        if line.startswith(SIDE_PREFIX)
    ]
    loaded, *batches, last = events
    assert loaded["event"] == "loaded" and loaded["runtime"] == served["runtime"]
    assert loaded["precision"] == loaded["artifact_precision"] == "fp32"
    calls = 2 + 1 + driver.SINGLE_STREAM_INSTANCES  # each scenario's warm-up and batches (the
    assert [b["event"] for b in batches] == ["batch"] * calls  # malformed one reaches no model)
    assert all(b["predict_seconds"] >= 0 for b in batches)
    assert last["event"] == "exit" and last["peak_rss_bytes"] > 0


def test_the_schedules_follow_pentathlons_seeds(rows):
    shuffled = list(rows)
    random.Random(42).shuffle(shuffled)
    assert [row for batch in driver.fixed_batch(rows) for row in batch] == shuffled
    assert [len(batch) for batch in driver.fixed_batch(rows * 7)] == [128, 12]
    assert all(len(batch) == 1 for batch in driver.single_stream(rows))
    np.random.seed(42)
    kept = [shuffled[i] for i in np.random.choice(len(rows), size=5, replace=False)]
    assert driver.fixed_batch(rows, limit=5) == [kept]


class FixedLogits:
    """A runtime stand-in: logits favouring class (first token id) % 10 of each row."""

    def predict(self, inputs):
        (tokens,) = inputs
        return np.eye(10, dtype=np.float32)[tokens[:, 0] % 10]


def test_predict_answers_label_strings_in_order_and_an_empty_batch_with_nothing():
    import arena_tf.tasks as tasks
    from arena_tf.serving.submission import Submission

    submission = Submission(tasks.get("listops", max_len=8), FixedLogits())
    rows = [{"input": "( [MAX 2 9 ] )"}, {"input": "7"}, {"input": "[SM 1 ]", "target": "1"}]
    assert submission.predict(rows) == ["2", "8", "4"]  # first ids: [MAX 12, 7 -> 8, [SM 14
    assert submission.predict_all(rows, batch_size=2) == ["2", "8", "4"]
    assert submission.predict([]) == []


def test_requests_must_be_lists_and_offline_limits_keep_the_first_rows(tmp_path):
    from arena_tf.serving.submission import RequestError, parse_batch, read_rows

    assert parse_batch(b'[{"input": "1"}]\n') == [{"input": "1"}]
    with pytest.raises(RequestError, match="a request is a JSON dict; expected a JSON list"):
        parse_batch('{"input": "1"}')
    path = tmp_path / "data.json"
    path.write_text("".join(json.dumps({"input": str(i)}) + "\n" for i in range(5)) + "\n")
    assert [len(read_rows(path, limit)) for limit in (-1, 0, 3, 9)] == [5, 5, 3, 5]


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_an_onnxruntime_or_openvino_submission_loads_neither_tensorflow_nor_keras(
    tiny_run, rows, runtime
):
    """Its memory and start-up are the runtime's own, as a deployment without TensorFlow has it."""
    if runtime == "openvino":
        pytest.importorskip("openvino")
    script = (
        "import json, sys\n"
        "from arena_tf.serving.submission import Submission\n"
        "submission = Submission.load(sys.argv[1], sys.argv[3])\n"
        "print(json.dumps(submission.predict(json.loads(sys.argv[2]))))\n"
        "print(json.dumps(sorted({'tensorflow', 'keras'} & set(sys.modules))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tiny_run), json.dumps(rows[:3]), runtime],
        capture_output=True,
        text=True,
        check=True,
    )
    predicted, imported = map(json.loads, done.stdout.splitlines())
    assert len(predicted) == 3 and imported == []
