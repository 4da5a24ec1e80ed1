"""The commands' shared entry point (arena_tf/cli.py) as a user meets it in a shell."""

import subprocess
import sys

import pytest

from arena_tf import cli

MANY_LINES = (
    "import sys; from arena_tf import cli; "
    "sys.exit(cli.run_main(lambda: [print(i) for i in range(200_000)] and None))"
)


@pytest.mark.slow
def test_output_cut_short_by_its_reader_ends_quietly():
    """`python -m arena_tf.reproduce SUITE --list | head -1`: the reader leaves after one line; the
    command stops with the shells' status for it and no traceback (200,000 lines overfill the
    pipe, so the writer is still writing when the reader closes it)."""
    child = subprocess.Popen(
        [sys.executable, "-c", MANY_LINES],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline() == "0\n"
    child.stdout.close()
    assert child.wait(timeout=120) == cli.EXIT_BROKEN_PIPE
    assert child.stderr.read() == ""


def test_a_broken_pipe_that_is_not_stdout_is_an_internal_error(capsys):
    """A child process that went away is a fault to see (one line, exit 1; --debug: the
    traceback), not a reader that had enough."""

    def body():
        raise BrokenPipeError(32, "Broken pipe")

    assert cli.run_main(body) == cli.EXIT_FAILURE
    assert "internal error: BrokenPipeError" in capsys.readouterr().err
    with pytest.raises(BrokenPipeError):
        cli.run_main(body, debug=True)


def test_a_backend_arena_tf_runs_on_but_not_installed_is_one_line(capsys, monkeypatch):
    real = cli.importlib.util.find_spec
    monkeypatch.setattr(
        cli.importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "jax" else real(name, *rest),
    )
    with pytest.raises(SystemExit) as ended:
        cli.check_keras_backend({"KERAS_BACKEND": "jax"})
    assert ended.value.code == cli.EXIT_USAGE
    assert capsys.readouterr().err == (
        "error: KERAS_BACKEND=jax but jax is not installed; expected jax installed, or another "
        'backend arena_tf runs on; install it: pip install -c constraints.txt -e ".[jax]"\n'
    )
    cli.check_keras_backend({"KERAS_BACKEND": "tensorflow"})  # installed here: no word


def test_an_output_that_is_one_of_the_inputs_is_refused(tmp_path):
    data = tmp_path / "basic_test.tsv"
    data.write_text("keep")
    (tmp_path / "link.tsv").symlink_to(data)
    for same in (data, tmp_path / "link.tsv", tmp_path / "." / "basic_test.tsv"):
        with pytest.raises(cli.UsageError, match="one of the files this command reads"):
            cli.output_file(same, inputs=[data])
    assert cli.output_file(tmp_path / "rows.jsonl", inputs=[data]) == tmp_path / "rows.jsonl"
    with pytest.raises(cli.UsageError, match="one of the files this command reads"):
        cli.output_file(tmp_path / "new.json", inputs=[tmp_path / "." / "new.json"])  # neither yet
    assert data.read_text() == "keep"
