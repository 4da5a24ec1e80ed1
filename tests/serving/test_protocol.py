"""The stdio protocol: round trips, error lines, the offline handshake, crashing and hanging models."""

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from serving import protocol
from serving.bench import worker_env
from serving.protocol import ModelError, ModelProcess, encode_line
from tests.one_line import assert_one_error_line

from .conftest import FAKE_MODEL, MAX_LEN


class SumModel:
    """A handler whose output for an instance is [sum of its tokens]."""

    def predict(self, instances):
        return [[sum(instance)] for instance in instances]

    def offline(self, input_file, output_file, say):
        for status in protocol.STATUSES:
            say(status)


def serve_lines(*lines):
    out = io.BytesIO()
    protocol.serve(SumModel(), io.BytesIO(b"".join(lines)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_batches_round_trip_in_order_with_one_answer_line_each():
    answers = serve_lines(encode_line([[1, 2], [3, 4]]), encode_line([[5]]))
    assert answers == [[[3], [7]], [[5]]]


def test_malformed_lines_get_an_error_line_and_the_model_goes_on():
    answers = serve_lines(b"not json\n", b'{"foo": 1}\n', b"[]\n", encode_line([[2, 2]]))
    assert [sorted(a) for a in answers[:3]] == [["error"]] * 3
    assert "not a JSON line" in answers[0]["error"]
    assert "empty batch" in answers[2]["error"]
    assert answers[3] == [[4]]


def test_offline_request_is_answered_with_the_three_statuses():
    request = encode_line({"input_file": "in", "output_file": "out"})
    assert serve_lines(request) == [{"status": s} for s in ("ready", "predicted", "written")]


@pytest.fixture
def onnx_worker(tiny_run, tmp_path):
    """The real model process over the tiny ONNX model, and a direct ONNX Runtime session."""
    import onnxruntime as ort

    report = tmp_path / "worker.json"
    (tmp_path / "offline").mkdir()
    command = [sys.executable, "-m", "serving.worker", str(tiny_run / "model.onnx"),
               "--runtime", "onnxruntime", "--offline-batch-size", "3",
               "--offline-dir", str(tmp_path / "offline")]
    process = ModelProcess(command, worker_env("cpu", report), tmp_path / "worker.log").start()
    session = ort.InferenceSession(str(tiny_run / "model.onnx"), providers=["CPUExecutionProvider"])
    yield process, session, report
    process.kill()


def tokens(count, seed=0):
    return np.random.default_rng(seed).integers(1, 16, (count, MAX_LEN)).astype(np.int32)


def test_worker_answers_logits_equal_to_onnxruntime_and_reports_its_timings(onnx_worker):
    process, session, report = onnx_worker
    batch = tokens(4)
    outputs = process.request(encode_line(batch.tolist()), 4, timeout=60)
    np.testing.assert_allclose(outputs, session.run(None, {"tokens": batch})[0], atol=1e-5)
    ended = process.close(timeout=120)  # a guard against a hang, not a speed limit
    assert ended["returncode"] == 0 and not ended["killed"]
    assert 10e6 < ended["peak_rss_bytes"] < 600e6  # the worker's own memory; no TensorFlow
    worker = json.loads(report.read_text())
    assert worker["providers"] == ["CPUExecutionProvider"] and len(worker["predict_seconds"]) == 1


def test_worker_sends_an_error_line_for_a_malformed_batch_then_serves_the_next(onnx_worker):
    process, session, _ = onnx_worker
    with pytest.raises(ModelError, match=f"instances must each be {MAX_LEN} token ids") as error:
        process.request(encode_line([[1, 2, 3]]), 1, timeout=60)
    assert error.value.kind == "error"
    with pytest.raises(ModelError, match=r"token ids must be in \[0, 16\)"):
        process.request(encode_line([[99] * MAX_LEN]), 1, timeout=60)
    assert len(process.request(encode_line(tokens(2).tolist()), 2, timeout=60)) == 2


def test_worker_offline_handshake_writes_outputs_in_input_order(onnx_worker, tmp_path):
    process, session, report = onnx_worker
    batch = tokens(7, seed=1)
    inputs, outputs = tmp_path / "offline" / "in.jsonl", tmp_path / "offline" / "out.jsonl"
    inputs.write_text("".join(json.dumps(row) + "\n" for row in batch.tolist()))
    times = process.offline(inputs, outputs, timeout=60)
    assert times["ready"] <= times["predicted"] <= times["written"]
    written = [json.loads(line) for line in outputs.read_text().splitlines()]
    np.testing.assert_allclose(written, session.run(None, {"tokens": batch})[0], atol=1e-5)
    process.close(timeout=120)
    assert json.loads(report.read_text())["offline_predict_seconds"] > 0


def test_worker_refuses_offline_files_outside_its_offline_dir_and_goes_on(onnx_worker, tmp_path):
    process, _, _ = onnx_worker
    inside = tmp_path / "offline" / "in.jsonl"
    inside.write_text(json.dumps([1] * MAX_LEN) + "\n")
    with pytest.raises(ModelError, match="output_file .* is outside the offline directory") as error:
        process.offline(inside, tmp_path / "stolen.jsonl", timeout=60)
    assert error.value.kind == "error"
    assert not (tmp_path / "stolen.jsonl").exists()
    assert len(process.request(encode_line(tokens(1).tolist()), 1, timeout=60)) == 1


def test_worker_reports_an_unsupported_provider_instead_of_running_on_the_cpu(tiny_run, tmp_path):
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has CUDA")
    command = [sys.executable, "-m", "serving.worker", str(tiny_run / "model.onnx"),
               "--runtime", "onnxruntime", "--device", "gpu"]
    process = ModelProcess(command, worker_env("gpu", tmp_path / "r.json"), tmp_path / "w.log")
    process.start()
    with pytest.raises(ModelError, match="CUDAExecutionProvider is not in this onnxruntime") as error:
        process.request(encode_line(tokens(1).tolist()), 1, timeout=60)
    assert error.value.kind == "unsupported"
    assert process.close(timeout=120)["returncode"] == 3
    log = (tmp_path / "w.log").read_text().strip().splitlines()
    assert log[-1].startswith("error: CUDAExecutionProvider is not in this onnxruntime")


def fake(mode, tmp_path):
    return ModelProcess([*FAKE_MODEL, mode], worker_env("cpu", tmp_path / "r.json"),
                        tmp_path / "fake.log").start()


def test_a_crashing_model_is_reported_with_its_exit_code_and_last_log_line(tmp_path):
    process = fake("crash", tmp_path)
    with pytest.raises(ModelError, match="exited with code 3 .*fake model crashed") as error:
        process.request(encode_line([[1]]), 1, timeout=30)
    assert error.value.kind == "exited"


def test_a_hanging_model_times_out_and_is_killed(tmp_path):
    process = fake("hang", tmp_path)
    with pytest.raises(ModelError, match="no answer within 1 s") as error:
        process.request(encode_line([[1]]), 1, timeout=1)
    assert error.value.kind == "timeout"
    process.kill()
    assert process.exit["killed"]
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)  # gone and reaped


def test_log_noise_on_stdout_is_skipped_and_answers_are_counted(tmp_path):
    process = fake("answer", tmp_path)
    assert process.request(encode_line([[1, 2], [3, 4]]), 2, timeout=30) == [3, 7]
    with pytest.raises(ModelError, match="2 outputs for 3 instances"):
        process.request(encode_line([[1], [2]]), 3, timeout=30)
    process.close(timeout=120)


def test_two_input_instances_reach_the_runtime_as_two_arrays():
    from serving.worker import ModelServer

    class Recorder:
        def predict(self, inputs):
            self.inputs = inputs
            return np.zeros((len(inputs[0]), 2), np.float32)

    runtime = Recorder()
    server = ModelServer(runtime, {"num_inputs": 2, "max_len": 3, "vocab_size": 10})
    assert server.predict([[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [1, 1, 1]]]) == [[0, 0], [0, 0]]
    first, second = runtime.inputs
    assert first.dtype == np.int32 and first.tolist() == [[1, 2, 3], [7, 8, 9]]
    assert second.tolist() == [[4, 5, 6], [1, 1, 1]]
    with pytest.raises(protocol.ProtocolError, match="2 lists of 3 token ids"):
        server.predict([[1, 2, 3]])


class ZeroRuntime:
    def predict(self, inputs):
        return np.zeros((len(inputs[0]), 2), np.float32)


def serve_offline(input_file, output_file, offline_dir):
    """The answer lines of an in-process worker (ModelServer) to one offline request."""
    from serving.worker import ModelServer

    server = ModelServer(ZeroRuntime(), {"max_len": 2, "vocab_size": 10}, offline_dir=offline_dir)
    out = io.BytesIO()
    request = {"input_file": str(input_file), "output_file": str(output_file)}
    protocol.serve(server, io.BytesIO(encode_line(request)), out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


@pytest.fixture
def offline_dir(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "in.jsonl").write_text("[1, 2]\n[3, 4]\n")
    (tmp_path / "outside.jsonl").write_text("[5, 6]\n")
    return tmp_path / "work"


def test_offline_files_inside_the_offline_dir_are_read_and_written(offline_dir):
    answers = serve_offline(offline_dir / "in.jsonl", offline_dir / "out.jsonl", offline_dir)
    assert answers == [{"status": s} for s in protocol.STATUSES]
    assert (offline_dir / "out.jsonl").read_text() == "[0.0, 0.0]\n[0.0, 0.0]\n"


@pytest.mark.parametrize("input_file, output_file, words", [
    ("{work}/in.jsonl", "{tmp}/written.jsonl", "output_file '{tmp}/written.jsonl' is outside the "
                                              "offline directory {work}"),
    ("{tmp}/outside.jsonl", "{work}/out.jsonl", "input_file '{tmp}/outside.jsonl' is outside"),
    ("{work}/in.jsonl", "{work}/../written.jsonl", "output_file '{work}/../written.jsonl' is "
                                                   "outside"),
    ("{work}/in.jsonl", "{work}/link.jsonl", "output_file '{work}/link.jsonl' is outside"),
    ("/etc/hostname", "{work}/out.jsonl", "input_file '/etc/hostname' is outside"),
    ("{work}/in.jsonl", "{work}", "is outside"),  # the directory itself is not a file in it
])
def test_offline_files_outside_it_are_refused_with_one_error_line(offline_dir, input_file,
                                                                  output_file, words):
    tmp = offline_dir.parent
    (offline_dir / "link.jsonl").symlink_to(tmp / "outside.jsonl")  # a way out through a link
    names = {"work": offline_dir, "tmp": tmp}
    answers = serve_offline(input_file.format(**names), output_file.format(**names), offline_dir)
    assert len(answers) == 1 and list(answers[0]) == ["error"]
    assert answers[0]["error"].startswith("OutsideDirectory: ")
    assert words.format(**names) in answers[0]["error"]
    assert sorted(p.name for p in tmp.iterdir()) == ["outside.jsonl", "work"]
    assert (tmp / "outside.jsonl").read_text() == "[5, 6]\n"  # not overwritten through the link
    assert sorted(p.name for p in offline_dir.iterdir()) == ["in.jsonl", "link.jsonl"]


def test_without_an_offline_dir_every_offline_request_is_refused(offline_dir):
    answers = serve_offline(offline_dir / "in.jsonl", offline_dir / "out.jsonl", None)
    assert len(answers) == 1
    assert "this model process allows no file access; expected it started with --offline-dir" in \
        answers[0]["error"]
    assert not (offline_dir / "out.jsonl").exists()


def test_worker_command_line_mistakes_are_one_line_and_exit_2(tmp_path, capsys):
    from serving import worker

    assert worker.main(["model.onnx", "--runtime", "onnxruntime", "--offline-dir",
                        str(tmp_path / "nope")]) == 2
    assert_one_error_line(capsys.readouterr().err, f"--offline-dir {tmp_path / 'nope'} is not a "
                                                   "directory")
    with pytest.raises(SystemExit) as exit_:
        worker.main(["model.onnx", "--runtime", "tvm"])
    assert exit_.value.code == 2
    assert_one_error_line(capsys.readouterr().err, "argument --runtime: invalid choice: 'tvm'")


def test_worker_with_a_missing_artifact_says_so_on_both_channels_and_exits_2(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "serving.worker", str(tmp_path / "nope.onnx"), "--runtime",
         "onnxruntime"], env=worker_env("cpu"), capture_output=True, text=True, timeout=600)
    assert result.returncode == 2
    assert_one_error_line(result.stderr, f"artifact {tmp_path / 'nope.onnx'} does not exist")
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {"error": result.stderr.strip()[len("error: "):]}]
