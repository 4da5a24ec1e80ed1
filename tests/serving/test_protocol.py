"""Pentathlon's stdio protocol, the driver's side (arena_tf/serving/protocol.py): request lines byte
for byte as Pentathlon writes them, noise skipped, answers counted, the sentinel, crashing and
hanging submissions, the offline handshake, the side channel; serving.submission's --offline-dir."""

import io
import json
import os
import sys

import pytest

from arena_tf.serving import protocol
from arena_tf.serving.bench import child_env
from arena_tf.serving.protocol import ModelError, ModelProcess, batch_line, encode_line

from .conftest import REFERENCE

# One worker runs every test of tiny_run (--dist loadgroup), so it is built once.
pytestmark = [pytest.mark.xdist_group("tiny_run"), pytest.mark.slow]

ROWS = [
    {"input": "( [MAX 2 9 ] )", "target": "9"},
    {"input": "[SM [MIN 1 ] 2 ]", "target": "3"},
    {"input": "7", "target": "7"},
]


def reference(mode, tmp_path, *flags):
    return ModelProcess([*REFERENCE, mode, *flags], child_env("cpu"), tmp_path / "ref.log").start()


def line_of(rows):
    return batch_line([json.dumps(row).encode() for row in rows])


def test_a_request_line_is_byte_for_byte_what_pentathlon_writes():
    assert line_of(ROWS) == (json.dumps(ROWS) + "\n").encode()
    assert encode_line({"limit": -1}) == b'{"limit": -1}\n'


def test_side_events_are_the_prefixed_stderr_lines():
    text = (
        'noise\narena_tf.submission: {"event": "batch", "instances": 2}\n'
        "arena_tf.submission: not json\n"
    )
    assert protocol.side_events(text) == [{"event": "batch", "instances": 2}]


def test_a_failure_is_the_tracebacks_last_line_unsupported_when_it_cannot_run():
    trace = "Traceback (most recent call last):\n  File ...\nValueError: nope\n"
    error = protocol.failure(trace)
    assert error.kind == "error" and str(error) == "the submission failed: ValueError: nope"
    assert protocol.failure("serving.runtimes.Unsupported: no CUDA").kind == "unsupported"


def test_noise_is_skipped_and_answers_are_the_rule_on_the_rows(tmp_path):
    process = reference("answer", tmp_path)
    assert process.request(line_of(ROWS), 3, timeout=30) == ["1", "2", "0"]
    process.close(timeout=60)


def test_the_wrong_number_of_outputs_is_a_protocol_error(tmp_path):
    process = reference("short", tmp_path)
    with pytest.raises(ModelError, match="2 outputs for 3 rows") as error:
        process.request(line_of(ROWS), 3, timeout=30)
    assert error.value.kind == "protocol"
    process.kill()


def test_the_sentinel_raises_the_tracebacks_exception(tmp_path):
    process = reference("sentinel", tmp_path)
    with pytest.raises(
        ModelError, match="the submission failed: ValueError: this submission refuses everything"
    ) as error:
        process.request(line_of(ROWS), 3, timeout=30)
    assert error.value.kind == "error"
    assert process.close(timeout=60)["returncode"] == 1


def test_a_crashing_submission_is_reported_with_its_exit_code_and_last_log_line(tmp_path):
    process = reference("crash", tmp_path)
    with pytest.raises(
        ModelError, match="exited with code 3 .*reference submission crashed"
    ) as error:
        process.request(line_of(ROWS), 3, timeout=30)
    assert error.value.kind == "exited"


def test_a_hanging_submission_times_out_and_is_killed(tmp_path):
    process = reference("hang", tmp_path)
    with pytest.raises(ModelError, match="no answer within 1 s") as error:
        process.request(line_of(ROWS), 3, timeout=1)
    assert error.value.kind == "timeout"
    process.kill()
    assert process.exit["killed"] and not process.alive
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)  # gone and reaped


def test_the_offline_handshake_reads_the_three_lines_in_order(tmp_path):
    data, output = tmp_path / "data.json", tmp_path / "outputs.json"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    process = reference("answer", tmp_path, "--offline")
    seen = []
    process.offline(
        {"offline_data_path": str(data), "offline_output_path": str(output), "limit": 2},
        timeout=30,
        on_line={line: (lambda line=line: seen.append(line)) for line in protocol.OFFLINE_LINES},
    )
    assert seen == list(protocol.OFFLINE_LINES)
    assert [json.loads(line) for line in output.read_text().splitlines()] == [
        {"output": "1"},
        {"output": "2"},
    ]
    assert process.close(timeout=60)["returncode"] == 0


class Constant:
    """A serving.submission Submission stand-in: "0" for every row."""

    def predict(self, rows):
        return ["0"] * len(rows)

    predict_all = predict


def serve_offline(data, output, offline_dir):
    """serving.submission's offline handshake in this process: its answer lines."""
    from arena_tf.serving import submission

    answers = io.StringIO()
    config = json.dumps(
        {"offline_data_path": str(data), "offline_output_path": str(output), "limit": -1}
    )
    submission.serve_offline(Constant(), io.StringIO(config + "\n"), answers, offline_dir)
    return answers.getvalue().splitlines()


@pytest.fixture
def offline_dir(tmp_path):
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data.json").write_text('{"input": "1"}\n{"input": "2"}\n')
    (tmp_path / "outside.json").write_text('{"input": "5"}\n')
    return tmp_path / "work"


def test_submission_offline_files_inside_its_offline_dir_are_read_and_written(offline_dir):
    lines = serve_offline(offline_dir / "data.json", offline_dir / "out.json", offline_dir)
    assert lines == list(protocol.OFFLINE_LINES)
    assert (offline_dir / "out.json").read_text() == '{"output": "0"}\n{"output": "0"}\n'


@pytest.mark.parametrize(
    "data, output, words",
    [
        (
            "{work}/data.json",
            "{tmp}/written.json",
            "offline_output_path '{tmp}/written.json' is outside the offline directory {work}",
        ),
        (
            "{tmp}/outside.json",
            "{work}/out.json",
            "offline_data_path '{tmp}/outside.json' is outside",
        ),
        ("{work}/data.json", "{work}/../written.json", "is outside"),
        (
            "{work}/data.json",
            "{work}/link.json",
            "offline_output_path '{work}/link.json' is outside",
        ),
        ("/etc/hostname", "{work}/out.json", "offline_data_path '/etc/hostname' is outside"),
    ],
)
def test_submission_offline_files_outside_it_are_refused(offline_dir, data, output, words):
    from arena_tf.serving.confine import OutsideDirectory

    tmp = offline_dir.parent
    (offline_dir / "link.json").symlink_to(tmp / "outside.json")  # a way out through a link
    names = {"work": offline_dir, "tmp": tmp}
    with pytest.raises(OutsideDirectory) as error:
        serve_offline(data.format(**names), output.format(**names), offline_dir)
    assert words.format(**names) in str(error.value)
    assert sorted(p.name for p in tmp.iterdir()) == ["outside.json", "work"]
    assert (tmp / "outside.json").read_text() == '{"input": "5"}\n'


def offline_config(**changes):
    config = {
        "offline_data_path": "{work}/data.json",
        "offline_output_path": "{work}/out.json",
        "limit": -1,
        **changes,
    }
    return json.dumps({key: value for key, value in config.items() if value is not None})


@pytest.mark.parametrize(
    "online, offline, words",
    [
        ("not json", None, "a request line is not JSON (Expecting value: line 1 column 1"),
        ('{"input": "1"}', None, "a request is a JSON dict; expected a JSON list of rows"),
        (None, "[]", "the offline config line is '[]'; expected a JSON object"),
        (None, offline_config(offline_output_path=None), "the offline config line is '{"),
        (None, offline_config(limit="all"), '"limit": int}'),
        (
            None,
            offline_config(offline_data_path="{work}/broken.json"),
            "line 2 of {work}/broken.json is not JSON",
        ),
        (
            None,
            offline_config(offline_data_path="{work}/absent.json"),
            "offline_data_path '{work}/absent.json' cannot be read ([Errno 2] No such file",
        ),
        (
            None,
            offline_config(offline_output_path="{work}/folder"),
            "{work}/folder is a folder, where a file is to be written",
        ),
    ],
)
def test_requests_the_protocol_does_not_send_are_told_in_one_line(
    offline_dir, online, offline, words
):
    from arena_tf import cli
    from arena_tf.serving import submission

    (offline_dir / "broken.json").write_text('{"input": "1"}\n{"input": \n')
    (offline_dir / "folder").mkdir()
    with pytest.raises(cli.CommandError) as error:
        if online is not None:
            submission.serve_online(Constant(), io.StringIO(online + "\n"), io.StringIO())
        else:
            config = offline.replace("{work}", str(offline_dir))
            submission.serve_offline(Constant(), io.StringIO(config + "\n"), io.StringIO())
    line, status = cli.outcome(error.value, failures=submission.TOLD_FAILURES)
    assert words.replace("{work}", str(offline_dir)) in line and "; expected " in line
    assert not line.startswith("internal error") and "\n" not in line
    if offline is not None:
        assert not (offline_dir / "out.json").exists()


def test_a_bug_is_still_an_internal_error_in_the_submissions_line():
    from arena_tf import cli
    from arena_tf.serving import submission

    line, _ = cli.outcome(ValueError("a bug"), failures=submission.TOLD_FAILURES)
    assert line.startswith("internal error: ValueError: a bug")


def test_an_unsupported_provider_is_an_unsupported_failure_not_a_cpu_run(tiny_run, tmp_path):
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime has CUDA")
    command = [
        sys.executable,
        "-m",
        "serving.submission",
        str(tiny_run),
        "--runtime",
        "onnxruntime",
        "--device",
        "gpu",
    ]
    process = ModelProcess(command, child_env("gpu"), tmp_path / "s.log").start()
    with pytest.raises(
        ModelError, match="Unsupported: CUDAExecutionProvider is not in this onnxruntime"
    ) as error:
        process.request(line_of(ROWS), 3, timeout=120)
    assert error.value.kind == "unsupported"
    assert process.close(timeout=120)["returncode"] == 1
    assert process.events()[-1]["event"] == "exit"


def test_a_failure_at_load_is_read_even_when_the_submission_exited_before_the_request(
    tiny_run, tmp_path
):
    """The request meets a closed pipe; the sentinel and traceback already on stdout still say
    why (here: an OpenVINO precision or a provider this machine lacks), not just the exit code."""
    command = [
        sys.executable,
        "-m",
        "serving.submission",
        str(tiny_run),
        "--runtime",
        "onnxruntime",
        "--precision",
        "bf16",
    ]
    process = ModelProcess(command, child_env("cpu"), tmp_path / "s.log").start()
    process.process.wait(timeout=120)
    with pytest.raises(ModelError, match="Unsupported: onnxruntime has no bf16 artifact") as error:
        process.request(line_of(ROWS), 3, timeout=120)
    assert error.value.kind == "unsupported"


def test_worker_refuses_offline_files_outside_its_offline_dir_and_goes_on(tiny_run, offline_dir):
    """The bench's worker, serving.submission --offline --offline-dir (docs/guide/bad-input.md's
    fault): a config line naming a path outside it gets the sentinel and OutsideDirectory, nothing
    is written there, and the bench goes on with its next row (a fresh process)."""
    tmp = offline_dir.parent
    command = [
        sys.executable,
        "-m",
        "serving.submission",
        str(tiny_run),
        "--runtime",
        "onnxruntime",
        "--offline",
        "--offline-dir",
        str(offline_dir),
    ]
    process = ModelProcess(command, child_env("cpu"), tmp / "s.log").start()
    with pytest.raises(
        ModelError,
        match="OutsideDirectory: offline_output_path .* is outside the offline directory",
    ) as error:
        process.offline(
            {
                "offline_data_path": str(offline_dir / "data.json"),
                "offline_output_path": str(tmp / "stolen.json"),
                "limit": -1,
            },
            timeout=120,
        )
    assert error.value.kind == "error" and process.close(timeout=120)["returncode"] == 1
    assert not (tmp / "stolen.json").exists()
