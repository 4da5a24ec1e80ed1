"""Bad input gets one clear line: each case feeds one exact bad input to a command, as a user types
it, and asserts the exit code, one line on stderr in the shared style (`error: <what>; expected
<what>; <how to fix>`) holding the documented words, and that nothing was left behind.

docs/bad_input.md is generated from CASES (`python -m tests.test_bad_input`); a test checks it.
Area tests (tests/train, tests/export, tests/serving, tests/tasks) hold the finer cases.
"""

import dataclasses
import os
import pathlib
import subprocess
import sys
from typing import Callable

import pytest

from arena_tf.markdown import table
from tests.one_line import assert_one_error_line

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "bad_input.md"


@dataclasses.dataclass
class Case:
    """`setup(tmp)` makes the input files in `tmp` and returns the command's arguments after
    `python -m`; `words` must appear in the error line; `exit` is the expected status."""

    bad_input: str
    setup: Callable
    words: str
    exit: int = 2


def unfinished_run(tmp):
    (tmp / "run").mkdir()
    (tmp / "run" / "config.yaml").write_text("task: {name: listops}\n")
    return ["arena_tf.analysis", "span", str(tmp / "run")]


CASES = {
    "unknown-flag": Case(
        "a flag the command does not have", lambda tmp: ["arena_tf.presets", "measure", "--nope"],
        "unrecognized arguments: --nope; expected the arguments in"),
    "analysis-unfinished-run": Case(
        "a run directory without model.keras", unfinished_run,
        "holds no trained model; expected model.keras"),
    "analysis-bad-count": Case(
        "`--examples 0`", lambda tmp: ["arena_tf.analysis", "span", str(tmp), "--examples", "0"],
        "'0' is not a positive count"),
    "benchmark-report-without-results": Case(
        "no benchmark results to report",
        lambda tmp: ["arena_tf.benchmark", "report", "--layers", str(tmp / "a.json"), "--train",
                     str(tmp / "b.json"), "--output", str(tmp / "out.md")],
        "expected the JSON results of the benchmarks"),
    "export-missing-run": Case(
        "an export of a run directory that does not exist",
        lambda tmp: ["export.to_savedmodel", str(tmp / "nope")],
        "does not exist; expected a run directory holding model.keras"),
    "export-bad-opset": Case(
        "`--opset 99`", lambda tmp: ["export.to_onnx", str(tmp / "nope"), "--opset", "99"],
        "opset 99 is not supported; expected 13 to 18"),
    "presets-unknown-task": Case(
        "an unknown task in `--tasks`",
        lambda tmp: ["arena_tf.presets", "measure", "--tasks", "nope", "--out", str(tmp)],
        "unknown task 'nope' in --tasks"),
}


def files_under(path):
    return sorted(p.relative_to(path) for p in path.rglob("*"))


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_is_one_line_with_its_exit_code_and_leaves_nothing(name, tmp_path):
    case = CASES[name]
    work, cwd = tmp_path / "input", tmp_path / "cwd"
    work.mkdir()
    cwd.mkdir()
    arguments = case.setup(work)
    before = files_under(work)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", *arguments], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == case.exit, result.stderr[-3000:]
    assert_one_error_line(result.stderr, case.words)
    assert files_under(work) == before, "the command left files behind"
    assert not any(cwd.iterdir()), "the command wrote into the working directory"


def render():
    rows = [[f"`{name}`", case.bad_input, f"`{case.words}`", case.exit]
            for name, case in sorted(CASES.items())]
    return ("# Bad input: one line and an exit code\n\n"
            "Generated from `tests/test_bad_input.py` (`python -m tests.test_bad_input`), whose "
            "test runs each case and checks its exit code, that the line on stderr reads "
            "`error: <what was wrong>; expected <what>; <how to fix>` and holds the words shown, "
            "and that nothing was left behind. Exit 2: the user's mistake; exit 1: the run "
            "itself failed. `--debug` shows the traceback instead.\n\n"
            + table(["case", "bad input", "error line holds", "exit"], rows) + "\n")


def test_the_doc_table_is_generated_from_the_cases():
    assert DOC.read_text() == render(), "run `python -m tests.test_bad_input`"


if __name__ == "__main__":
    DOC.write_text(render())
