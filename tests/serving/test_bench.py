"""The bench end to end, a driver of Pentathlon's protocol: every scenario under TensorFlow and ONNX
Runtime (serving.submission over the tiny exported run), a reference-style submission (rows in,
strings out) through --command, unsupported rows, failing submissions, invalid outputs, bad command
lines, where outputs go, LoadGen.

Nothing here depends on the machine's speed: timeouts only guard against hangs (generous, except
where a hanging model is the point), and the server scenario's p99 bound is one no loaded machine
misses, so its rate search always finds a passing rate."""

import json
import math
import re
import shlex
import sys

import pytest
import yaml

from arena_tf.serving import bench
from tests.one_line import assert_one_error_line

from .conftest import REFERENCE
from .test_scenarios import pentathlon_batches

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = pytest.mark.xdist_group("tiny_run")

SMALL = [
    "--batch-size",
    "8",
    "--poisson-mean",
    "4",
    "--count",
    "random_batch=24",
    "--count",
    "single_stream=30",
    "--count",
    "offline=40",
    "--count",
    "server=500",
    "--server-trials",
    "2",
    "--server-max-batch",
    "4",
    "--server-p99-ms",
    "600000",
    "--min-duration",
    "0",
    "--min-queries",
    "0",
    "--quiet",
]
SCENARIOS = ("fixed_batch", "random_batch", "single_stream", "offline", "server")


def run_bench(*args):
    """(exit status, rows of results.jsonl) of `python -m serving.bench ARGS`."""
    out = args[args.index("--out") + 1]
    status = bench.main([str(a) for a in args])
    results = out / "results.jsonl"
    lines = results.read_text().splitlines() if results.exists() else []
    return status, [json.loads(line) for line in lines]


def split_rows(data_dir):
    """The ListOps test split's rows, as the bench reads them."""
    from arena_tf.serving import instances

    return [json.loads(f) for f in instances.load("listops", data_dir=str(data_dir)).fragments]


def reference_command(mode="answer"):
    return shlex.join([*REFERENCE, mode])


def rule_accuracy(rows):
    """The reference submission's rule (tests/serving/reference_submission.py) on `rows`."""
    from tests.serving.reference_submission import rule

    return sum(rule(row) == row["target"] for row in rows) / len(rows)


@pytest.fixture(scope="module")
def every_scenario(tiny_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    status, rows = run_bench(
        tiny_run, "--runtime", "tf,onnxruntime", "--scenario", "all", "--out", out, *SMALL
    )
    return status, rows, out


def test_every_scenario_runs_under_tensorflow_and_onnxruntime(every_scenario):
    status, rows, _ = every_scenario
    assert status == 0
    assert [(r["runtime"], r["scenario"]) for r in rows] == [
        (runtime, scenario) for runtime in ("tf", "onnxruntime") for scenario in SCENARIOS
    ]
    assert {r["status"] for r in rows} == {"ok"}, [r["note"] for r in rows]
    counts = {(r["runtime"], r["scenario"]): (r.get("count"), r.get("batches")) for r in rows}
    assert counts[("tf", "fixed_batch")] == (20, 3)  # the whole 20-row test split, batches of 8
    assert counts[("onnxruntime", "single_stream")] == (30, 30)
    assert counts[("tf", "offline")] == (40, 1)
    for row in rows:
        assert row["throughput"] > 0 and row["instances"] == "listops test split, 20 rows"
        assert row["energy_wh"] is not None or row["energy_note"]  # a number, or why not
        assert row["parameters"] > 0 and row["size_bytes"] > 0
        assert (row["runtime_used"], row["precision_used"]) == (row["runtime"], "fp32")
        assert row["time"] > 0 and row["throughput_words"] == row["throughput"]  # one word each
        assert row["cpu"] and row["cores"] >= 1 and row["load_average"] >= 0  # where it ran


def test_one_online_process_per_runtime_and_one_offline(every_scenario):
    _, _, out = every_scenario
    logs = sorted(p.name for p in (out / "logs").glob("*.log"))
    assert logs == [
        "tiny-onnxruntime-fp32-offline.log",
        "tiny-onnxruntime-fp32.log",
        "tiny-tf-fp32-offline.log",
        "tiny-tf-fp32.log",
    ]
    loaded = [
        line
        for line in (out / "logs" / "tiny-tf-fp32.log").read_text().splitlines()
        if '"event": "loaded"' in line
    ]
    assert len(loaded) == 1


def test_rows_report_pentathlons_metrics_and_latencies_in_and_out_of_the_model(every_scenario):
    _, rows, _ = every_scenario
    by = {(r["runtime"], r["scenario"]): r for r in rows}
    assert "cycled through the 20-row split (30 instances)" in by[("tf", "single_stream")]["note"]
    assert by[("tf", "fixed_batch")]["note"] == ""
    for key in [k for k in by if k[1] != "offline"]:
        row = by[key]
        assert 0 < row["model_latency_mean_ms"] <= row["batch_latency_mean_ms"]
        assert row["request_latency_p50_ms"] <= row["request_latency_p99_ms"]
        assert row["latency"] == pytest.approx(row["time"] / row["batches"])
        assert row["throughput"] == pytest.approx(row["count"] / row["time"])
    server = by[("onnxruntime", "server")]
    assert len(server["server_trials"]) == 2 and server["server_p99_bound_ms"] == 600000.0
    assert all(trial["passed"] for trial in server["server_trials"])
    assert by[("tf", "offline")]["model_offline_seconds"] > 0
    assert "latency" not in by[("tf", "offline")]  # Pentathlon has no per-batch latency offline


def test_openvino_and_onnxruntime_rows_agree_on_the_same_instances(tiny_run, tmp_path):
    status, rows = run_bench(
        tiny_run,
        "--runtime",
        "onnxruntime,openvino",
        "--scenario",
        "fixed_batch",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 0 and [(r["runtime"], r["status"]) for r in rows] == [
        ("onnxruntime", "ok"),
        ("openvino", "ok"),
    ]
    onnxruntime, openvino = rows
    assert openvino["accuracy"] == onnxruntime["accuracy"]
    assert (
        (openvino["count"], openvino["batches"])
        == (onnxruntime["count"], onnxruntime["batches"])
        == (20, 3)
    )
    assert openvino["runtime_used"] == "openvino" and openvino["providers"] == ["CPU (f32)"]


def test_memory_is_the_model_process_own(every_scenario):
    _, rows, _ = every_scenario
    peak = {(r["runtime"], r["scenario"]): r["peak_rss_bytes"] for r in rows}
    assert 10e6 < peak[("onnxruntime", "server")] < peak[("tf", "server")]
    # The offline process reports its own peak as it exits: not the bench's size before its exec
    # (the rusage maximum), which holds TensorFlow.
    assert 10e6 < peak[("onnxruntime", "offline")] < peak[("tf", "offline")] / 2


def test_accuracy_is_that_of_the_model_on_the_test_split(every_scenario, tiny_run):
    from tests.serving.test_submission import own_predictions

    _, rows, _ = every_scenario
    labels, predicted = own_predictions(tiny_run, "onnxruntime")
    expected = sum(p == t for p, t in zip(predicted, labels)) / len(labels)
    fixed = [r for r in rows if r["scenario"] == "fixed_batch"]
    assert [r["accuracy"] for r in fixed] == [pytest.approx(expected)] * 2


def test_reports_and_plots_are_written(every_scenario):
    _, rows, out = every_scenario
    table, ratios = (out / "results.md").read_text().split("Throughput ratios")
    assert len([line for line in table.splitlines() if line.startswith("| tiny |")]) == len(rows)
    assert "| tiny | fixed_batch |" in ratios  # ONNX Runtime over TensorFlow, both in FP32
    assert (out / "results.csv").read_text().count("\n") == len(rows) + 1
    pytest.importorskip("matplotlib")
    assert (out / "radar_tiny.png").read_bytes().startswith(b"\x89PNG")
    assert (out / "bubbles.png").is_file()


def test_a_reference_style_submission_gets_pentathlons_fixed_and_random_batches(
    listops_300, tmp_path
):
    status, rows = run_bench(
        "--command",
        reference_command(),
        "--task=listops",
        f"--data-dir={listops_300}",
        "--scenario",
        "fixed_batch,random_batch",
        "--out",
        tmp_path,
        "--quiet",
    )
    assert status == 0 and [r["status"] for r in rows] == ["ok", "ok"], rows
    fixed, random_batch = rows
    split = split_rows(listops_300)
    assert (fixed["count"], fixed["batches"]) == (300, math.ceil(300 / 128))
    assert fixed["accuracy"] == pytest.approx(rule_accuracy(split))
    sizes = [len(batch) for batch in pentathlon_batches("random_batch", split, count=4000)]
    assert (random_batch["count"], random_batch["batches"]) == (sum(sizes), len(sizes))
    assert random_batch["count"] <= 4000 and random_batch["batches"] <= 100
    assert random_batch["model"] == "listops" and random_batch["runtime"] == "command"
    assert random_batch["model_latency_mean_ms"] is None  # no side channel: not ours to know


def test_offline_and_limit_as_pentathlon_applies_them(listops_300, tmp_path):
    offline = reference_command() + " --offline"
    status, rows = run_bench(
        "--command",
        reference_command(),
        "--offline-command",
        offline,
        "--task=listops",
        f"--data-dir={listops_300}",
        "--scenario",
        "single_stream,offline",
        "--limit",
        "100",
        "--out",
        tmp_path,
        "--min-duration",
        "0",
        "--min-queries",
        "0",
        "--quiet",
    )
    assert status == 0 and [r["status"] for r in rows] == ["ok", "ok"], rows
    single, offline = rows
    split = split_rows(listops_300)
    sent = [
        row
        for batch in pentathlon_batches("single_stream", split, 1000, limit=100)
        for row in batch
    ]
    assert (single["count"], single["batches"]) == (100, 100)
    assert single["accuracy"] == pytest.approx(rule_accuracy(sent))
    assert (offline["count"], offline["batches"]) == (100, 1)  # the first 100 of the 8,000
    assert not (tmp_path / "work").exists()  # the offline files are removed


def test_unsupported_combinations_are_rows_and_start_no_process(tiny_run, tmp_path):
    status, rows = run_bench(
        tiny_run,
        "--runtime",
        "onnxruntime,tensorrt",
        "--precision",
        "fp32,fp16",
        "--scenario",
        "single_stream",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 0
    assert [r["status"] for r in rows] == ["ok", "unsupported", "unsupported", "unsupported"]
    assert "model.fp16.onnx is missing" in rows[1]["note"]
    assert "tensorrt runs on gpu, not cpu" in rows[2]["note"]
    assert [p.name for p in (tmp_path / "logs").glob("*.log")] == ["tiny-onnxruntime-fp32.log"]


def test_nothing_to_measure_is_one_line_exit_1_and_writes_nothing(tiny_run, tmp_path, capsys):
    before = sorted(p.name for p in tiny_run.iterdir())
    status = bench.main([str(tiny_run), "--runtime", "tensorrt", "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 1 and captured.out == ""
    assert_one_error_line(
        captured.err,
        "nothing to measure: every one of the 1 runtime/precision "
        "combinations is unsupported here (tensorrt/fp32: tensorrt runs on gpu, "
        "not cpu)",
        "expected at least one combination this machine can run",
    )
    assert not (tmp_path / "out").exists() and sorted(p.name for p in tiny_run.iterdir()) == before


def test_outputs_go_under_runs_by_default_and_nothing_else_into_the_current_directory(
    tiny_run, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tiny_run.iterdir())
    status = bench.main(
        [
            str(tiny_run),
            "--command",
            reference_command(),
            "--scenario",
            "fixed_batch,offline",
            *SMALL,
        ]
    )
    assert status == 0
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    out = tmp_path / "runs" / "serving" / "tiny"
    names = {p.name for p in out.iterdir()}
    assert {"logs", "results.csv", "results.jsonl", "results.md"} <= names
    assert "work" not in names  # the offline files' directory is removed when empty
    assert sorted(p.name for p in tiny_run.iterdir()) == before


def test_rows_end_in_one_error_line_and_exit_1_when_some_failed():
    rows = [
        {
            "model": "m",
            "runtime": "tf",
            "precision": "fp32",
            "scenario": s,
            "status": status,
            "note": note,
        }
        for s, status, note in [("fixed_batch", "ok", ""), ("offline", "invalid", "bad\noutputs")]
    ]
    error = bench.outcome(rows, "OUT")
    assert error.exit_code == 1 and str(error) == (
        "1 invalid of 2 rows (first: m tf/fp32 offline: bad outputs); expected every row to run "
        "with valid outputs or be unsupported; see OUT/results.md and the model logs in OUT/logs"
    )
    assert bench.outcome(rows[:1], "OUT") is None
    assert isinstance(bench.outcome(rows[1:], "OUT"), bench.NothingMeasured)


def test_a_run_dirs_rows_go_to_a_command_named_in_the_report(tiny_run, tmp_path):
    status, rows = run_bench(
        tiny_run,
        "--command",
        reference_command(),
        "--name",
        "rule",
        "--scenario",
        "fixed_batch,offline",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 0 and [r["status"] for r in rows] == ["ok", "ok"]
    data_dir = yaml.safe_load((tiny_run / "config.yaml").read_text())["task"]["data_dir"]
    assert rows[0]["accuracy"] == pytest.approx(rule_accuracy(split_rows(data_dir)))
    assert rows[0]["model"] == "rule" and rows[0]["model_latency_mean_ms"] is None


@pytest.mark.parametrize(
    "mode, timeout, reason",
    [
        ("sentinel", 600, "the submission failed: ValueError: this submission refuses everything"),
        ("crash", 600, "exited with code 3 before answering: reference submission crashed"),
        ("hang", 1, "no answer within 1 s; killed"),  # only a hanging model waits out its timeout
    ],
)
def test_failing_submissions_are_failed_rows_and_the_next_row_runs(
    listops_300, tmp_path, capsys, mode, timeout, reason
):
    status, rows = run_bench(
        "--command",
        reference_command(mode),
        "--task=listops",
        f"--data-dir={listops_300}",
        "--scenario",
        "single_stream,fixed_batch,offline",
        "--timeout",
        timeout,
        "--startup-timeout",
        timeout,
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 1
    assert [(r["scenario"], r["status"]) for r in rows] == [
        ("single_stream", "failed"),
        ("fixed_batch", "failed"),
        ("offline", "failed"),
    ]
    assert all(reason in r["note"] for r in rows), [r["note"] for r in rows]
    assert_one_error_line(
        capsys.readouterr().err, "nothing was measured: 3 failed of 3 rows", reason
    )


def test_the_wrong_number_of_outputs_is_a_failed_row(listops_300, tmp_path):
    status, rows = run_bench(
        "--command",
        reference_command("short"),
        "--task=listops",
        f"--data-dir={listops_300}",
        "--scenario",
        "fixed_batch",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 1 and rows[0]["status"] == "failed"
    assert rows[0]["note"] == "3 outputs for 4 rows"  # the warm-up: the last batch, 300 % 8 rows


@pytest.mark.parametrize(
    "mode, reason",
    [
        ("not_labels", r"outputs invalid \(output 0: 'x' is not a label of the task\)"),
        ("numbers", r"outputs invalid \(output 0: \d is a JSON number, not a string\)"),
    ],
)
def test_nonsense_outputs_of_the_right_count_make_invalid_rows(
    listops_300, tmp_path, capsys, mode, reason
):
    status, rows = run_bench(
        "--command",
        reference_command(mode),
        "--task=listops",
        f"--data-dir={listops_300}",
        "--scenario",
        "fixed_batch,offline",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 1 and [r["status"] for r in rows] == ["invalid", "invalid"]
    for row in rows:
        assert re.search(reason, row["note"])
        assert "expected one of the task's target strings ('0', '1'" in row["note"]
        assert all(
            row.get(k) is None
            for k in ("throughput", "time", "accuracy", "request_latency_p50_ms", "fitness")
        )
    assert_one_error_line(capsys.readouterr().err, "nothing was measured: 2 invalid of 2 rows")
    assert "| invalid |" in (tmp_path / "results.md").read_text()


def test_a_data_dir_without_the_split_is_refused_before_anything_is_written(tmp_path, capsys):
    """A user's mistake, one line and exit 2; no --out left to block the corrected rerun."""
    status, rows = run_bench(
        "--command",
        reference_command(),
        "--task=listops",
        f"--data-dir={tmp_path / 'none'}",
        "--scenario",
        "fixed_batch",
        "--out",
        tmp_path / "out",
        "--quiet",
    )
    assert status == 2 and rows == []
    assert_one_error_line(capsys.readouterr().err, "listops: no data in")
    assert not (tmp_path / "none").exists()  # the ListOps generator did not run
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["{missing}"], "run directory .* does not exist; expected a directory written by"),
        (["{empty}"], "run directory .* holds no exported model; expected one of saved_model"),
        (["{run}", "--runtime", "tvm"], "--runtime 'tvm': unknown tvm; expected .*onnxruntime"),
        (["{run}", "--precision", "int8"], "--precision 'int8': unknown int8; expected .*fp32"),
        (["{run}", "--scenario", "fixed_batch,burst"], "unknown burst"),
        (["{run}", "--count", "single_stream=0"], "--count 'single_stream=0' is invalid"),
        (
            ["{run}", "--count", "offline=²"],
            "--count 'offline=²' is invalid",
        ),  # a digit int() refuses
        (
            ["{run}", "--batch-size", "0"],
            "--batch-size=0 is not positive; expected a positive number",
        ),
        (["{run}", "--timeout", "-1"], "--timeout=-1 is not positive"),
        (["{run}", "--device", "gpu"], "--device gpu, but no NVIDIA GPU is visible"),
        (["{run}", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["{run}", "--nope"], "unrecognized arguments: --nope"),
        (["--command", "python model.py"], "--command needs a RUN_DIR or --task"),
        (["--command", "python 'model.py"], '--command "python \'model.py" cannot be parsed'),
        (
            ["--command", "python m.py", "--task", "listops", "--offline-command", " "],
            "--offline-command is empty",
        ),
        (["{run}", "--poisson-draws", "0"], "--poisson-draws=0 is not positive"),
        (
            ["--command", "python model.py", "--task", "nope"],
            "--task 'nope' is unknown; expected one",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(tiny_run, tmp_path, capsys, args, message):
    from arena_tf.serving import gpu

    if "gpu" in args and gpu.available()[0]:
        pytest.skip("this machine has a GPU")
    (tmp_path / "empty").mkdir()
    args = [
        a.format(run=tiny_run, missing=tmp_path / "nope", empty=tmp_path / "empty") for a in args
    ]
    try:
        status = bench.main([*args, "--out", str(tmp_path / "out")])
    except SystemExit as exit_:  # argparse's own errors
        status = exit_.code
    assert status == 2
    captured = capsys.readouterr()
    assert_one_error_line(captured.err)  # one line, no traceback
    assert re.search(message, captured.err)
    assert not (tmp_path / "out").exists()


def test_debug_shows_the_traceback_instead(tmp_path):
    with pytest.raises(bench.BenchError, match="does not exist"):
        bench.main([str(tmp_path / "nope"), "--debug"])


def test_out_naming_a_file_is_a_mistake(tiny_run, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert bench.main([str(tiny_run), "--out", str(tmp_path / "file")]) == 2
    assert_one_error_line(capsys.readouterr().err, "is a file, not a folder; expected a folder")


def test_loadgen_missing_says_how_to_install_it(tiny_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlperf_loadgen", None)
    assert bench.main([str(tiny_run), "--loadgen", "--out", str(tmp_path)]) == 2
    assert_one_error_line(capsys.readouterr().err, "pip install mlcommons-loadgen")


def test_loadgen_runs_single_stream_server_and_offline(tiny_run, tmp_path):
    pytest.importorskip("mlperf_loadgen")
    status, rows = run_bench(
        tiny_run,
        "--runtime",
        "onnxruntime",
        "--scenario",
        "single_stream",
        "--loadgen",
        "--loadgen-min-ms",
        "200",
        "--server-rate",
        "50",
        "--out",
        tmp_path,
        *SMALL,
    )
    loadgen_rows = {r["scenario"]: r for r in rows[1:]}
    assert status == 0 and list(loadgen_rows) == [
        "loadgen_single_stream",
        "loadgen_server",
        "loadgen_offline",
    ]
    for row in loadgen_rows.values():
        assert row["status"] == "ok" and row["throughput"] > 0
        assert row["loadgen_validity"] in ("VALID", "INVALID")
        assert (
            tmp_path / "logs" / row["loadgen_log"].split("/logs/")[1] / "mlperf_log_summary.txt"
        ).is_file()
    assert loadgen_rows["loadgen_server"]["server_max_rate"] == pytest.approx(50, rel=0.3)
    assert loadgen_rows["loadgen_single_stream"]["request_latency_p90_ms"] > 0


def test_loadgen_and_the_bench_both_give_early_stopping_estimates(tiny_run, tmp_path):
    pytest.importorskip("mlperf_loadgen")
    status, rows = run_bench(
        tiny_run,
        "--runtime",
        "onnxruntime",
        "--scenario",
        "single_stream",
        "--loadgen",
        "--loadgen-min-ms",
        "0",
        "--out",
        tmp_path,
        *SMALL,
        "--count",
        "single_stream=700",
    )
    ours, loadgen_row = rows[0], rows[1]
    assert status == 0 and ours["count"] == 700
    assert loadgen_row["scenario"] == "loadgen_single_stream"
    for row in (ours, loadgen_row):  # 700 queries: enough for both estimates, each at or above
        for p in ("p90", "p99"):  # its plain percentile and at most the slowest query
            early = row[f"request_latency_{p}_early_ms"]
            assert row[f"request_latency_{p}_ms"] <= early <= row["request_latency_max_ms"]
