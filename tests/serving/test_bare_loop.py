"""The bare predict loop the bench's overhead is measured against, alone and through --bare-loop."""

import json

import numpy as np
import pytest

from arena_tf.serving import bare_loop
from tests.one_line import assert_one_error_line

from .fake_clock import FakeClock
from .test_bench import SMALL, run_bench

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = pytest.mark.xdist_group("tiny_run")


class CountingRuntime:
    """Records each predict call's batch; each call takes `seconds` on `clock` (if given)."""

    def __init__(self, clock=None, seconds=0.0):
        self.batches = []
        self.clock, self.seconds = clock, seconds

    def predict(self, inputs):
        self.batches.append(inputs[0].copy())
        if self.clock:
            self.clock.work(self.seconds * len(self.batches))
        return np.zeros((len(inputs[0]), 2), np.float32)


def listops(max_len=8):
    from arena_tf import tasks

    return tasks.get("listops", max_len=max_len)


def test_every_row_is_timed_once_alone_after_one_untimed_call():
    clock = FakeClock()
    runtime = CountingRuntime(clock, seconds=0.125)  # call n takes n / 8 s
    rows = [{"input": str(i)} for i in range(1, 6)]
    seconds = bare_loop.time_predictions(runtime, bare_loop.arrays_of(listops(), rows), clock=clock)
    assert seconds == [0.25, 0.375, 0.5, 0.625, 0.75]  # calls 2 to 6; call 1 was the warm-up
    expected = [listops().rows_to_arrays([row])[0] for row in rows]
    assert [b.tolist() for b in runtime.batches] == [e.tolist() for e in expected[:1] + expected]
    assert all(b.dtype == np.int32 for b in runtime.batches)


def test_bad_rows_are_refused_before_timing():
    from arena_tf.tasks.base import RowError

    with pytest.raises(RowError, match="'nope' is not a ListOps token"):
        bare_loop.arrays_of(listops(), [{"input": "1"}, {"input": "nope"}])


def test_the_command_writes_a_latency_summary(tiny_run, tmp_path):
    rows = tmp_path / "in.jsonl"
    rows.write_text("".join(json.dumps({"input": "[MAX 1 2 ]"}) + "\n" for _ in range(7)))
    out = tmp_path / "bare.json"
    bare_loop.main(
        [str(tiny_run), "--runtime", "onnxruntime", "--rows", str(rows), "--out", str(out)]
    )
    summary = json.loads(out.read_text())
    assert summary["bare_loop_count"] == 7
    assert 0 < summary["bare_loop_latency_p50_ms"] <= summary["bare_loop_latency_max_ms"]


def test_single_stream_rows_report_their_latency_over_the_bare_loop(tiny_run, tmp_path):
    status, rows = run_bench(
        tiny_run,
        "--runtime",
        "onnxruntime",
        "--scenario",
        "single_stream,fixed_batch",
        "--bare-loop",
        "--out",
        tmp_path,
        *SMALL,
    )
    assert status == 0
    single, fixed = rows
    assert single["bare_loop_count"] == single["count"] == 30
    assert single["end_to_end_over_bare_loop"] == pytest.approx(
        single["request_latency_mean_ms"] / single["bare_loop_latency_mean_ms"]
    )
    assert single["in_model_over_bare_loop"] == pytest.approx(
        single["model_latency_mean_ms"] / single["bare_loop_latency_mean_ms"]
    )
    assert "bare_loop_count" not in fixed  # only single stream is compared
    assert "mean latency / bare loop" in (tmp_path / "results.md").read_text()


def test_command_line_mistakes_are_one_line_and_exit_2(tiny_run, tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    common = ["--runtime", "onnxruntime", "--out", str(tmp_path / "bare.json")]
    assert bare_loop.main([str(tmp_path / "nope"), "--rows", str(empty), *common]) == 2
    assert_one_error_line(
        capsys.readouterr().err, "run directory {} has no config.yaml".format(tmp_path / "nope")
    )
    assert bare_loop.main([str(tiny_run), "--rows", str(empty), *common]) == 2
    assert_one_error_line(capsys.readouterr().err, "holds no rows; expected one JSON row")
    assert not (tmp_path / "bare.json").exists()
    not_a_row = tmp_path / "numbers.jsonl"
    not_a_row.write_text("1\n")
    assert bare_loop.main([str(tiny_run), "--rows", str(not_a_row), *common]) == 2
    assert_one_error_line(capsys.readouterr().err, "row 0: listops: a row is a int")  # not loaded
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"input": "[MAX 1 2 ]", "target": "2"}\n')
    same = ["--runtime", "onnxruntime", "--rows", str(rows), "--out", str(rows)]
    assert bare_loop.main([str(tiny_run), *same]) == 2
    assert_one_error_line(
        capsys.readouterr().err,
        "one of the files this command reads; expected an output apart from the inputs",
    )
    assert rows.read_text() == '{"input": "[MAX 1 2 ]", "target": "2"}\n'  # the rows kept
