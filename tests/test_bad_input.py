"""Bad input gets one clear line: each case feeds one exact bad input to a command, as a user types
it, and asserts the exit code, one line on stderr in the shared style (`error: <what>; expected
<what>; <how to fix>`) holding the documented words, and that nothing was left behind.

docs/bad_input.md is generated from CASES and FAULTS (`python -m tests.test_bad_input`); a test
checks it. FAULTS are the findings that are not one bad command line (a killed writer, a second
trainer, a model answering nonsense): each names the area test that feeds that exact input, and a
test checks that it exists. Area tests (tests/train, tests/export, tests/serving, tests/tasks) hold
the finer cases.
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
from tests.tasks.helpers import PATHFINDER_DIR, pathfinder_set, write_listops

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


GOOD_LISTOPS = "( ( [MAX 2 9 ] ) )\t9\n"


def train(tmp, *arguments, model="full"):
    """`python -m arena_tf.train` on a small hand-written ListOps set in `tmp`, its run directory
    in `tmp` too (so that "nothing left behind" covers it)."""
    data = write_listops(tmp / "listops", GOOD_LISTOPS * 3)
    return ["arena_tf.train", "--task=listops", f"--model={model}", "--preset=tiny",
            f"--data_dir={data}", f"--run_dir={tmp / 'run'}", *arguments]


def prepare_listops(tmp, bad_row):
    data = write_listops(tmp / "listops", GOOD_LISTOPS + bad_row + "\n")
    return ["arena_tf.data", "prepare", "--task=listops", f"--data_dir={data}"]


def prepare_pathfinder(tmp, damage):
    """12 generated Pathfinder images in `tmp`, `damage(dataset_dir)` applied."""
    pathfinder_set(tmp, 12)
    damage(tmp / PATHFINDER_DIR)
    return ["arena_tf.data", "prepare", "--task=pathfinder", f"--data_dir={tmp}"]


def short_metadata_line(directory):
    with open(directory / "metadata" / "1.npy", "a") as metadata:
        metadata.write("imgs/1 sample_0.png 6\n")


def unfinished_run(tmp):
    (tmp / "run").mkdir()
    (tmp / "run" / "config.yaml").write_text("task: {name: listops}\n")
    return ["arena_tf.analysis", "span", str(tmp / "run")]


def mixer_run(tmp):
    from tests.export.conftest import write_run_dir

    write_run_dir(tmp / "run", "s4d")
    return ["arena_tf.analysis", "span", str(tmp / "run")]


CASES = {
    "unknown-flag": Case(
        "a flag the command does not have", lambda tmp: ["arena_tf.presets", "measure", "--nope"],
        "unrecognized arguments: --nope; expected the arguments in"),
    "analysis-unfinished-run": Case(
        "a run directory without model.keras", unfinished_run,
        "holds no trained model; expected model.keras"),
    "analysis-state-space-mixer": Case(
        "attention analysis of an s4d run (a state-space mixer)", mixer_run,
        "s4d is a state-space mixer: it has no attention weights to recover"),
    "analysis-bad-count": Case(
        "`--examples 0`", lambda tmp: ["arena_tf.analysis", "span", str(tmp), "--examples", "0"],
        "'0' is not a positive count"),
    "benchmark-report-without-results": Case(
        "no benchmark results to report",
        lambda tmp: ["arena_tf.benchmark", "report", "--layers", str(tmp / "a.json"), "--train",
                     str(tmp / "b.json"), "--pairs", str(tmp / "c.json"), "--output",
                     str(tmp / "out.md")],
        "expected the JSON results of the benchmarks"),
    "export-missing-run": Case(
        "an export of a run directory that does not exist",
        lambda tmp: ["export.to_savedmodel", str(tmp / "nope")],
        "does not exist; expected a run directory holding model.keras"),
    "export-bad-opset": Case(
        "`--opset 99`", lambda tmp: ["export.to_onnx", str(tmp / "nope"), "--opset", "99"],
        "opset 99 is not supported; expected 13 to 18"),
    "export-openvino-precision": Case(
        "`export/to_openvino.py --precision bf16` (OpenVINO IRs are FP32 and FP16)",
        lambda tmp: ["export.to_openvino", str(tmp / "nope"), "--precision", "bf16"],
        "invalid choice: 'bf16'"),
    "train-set-invalid-yaml": Case(
        "`--set 'train.batch_size=[1,'` (YAML that does not parse)",
        lambda tmp: train(tmp, "--set", "train.batch_size=[1,"),
        "the value '[1,' is not valid YAML"),
    "train-set-duplicate-key": Case(
        "`--set 'model.attention_params={projected_length: 8, projected_length: 9}'`",
        lambda tmp: train(tmp, "--set",
                          "model.attention_params={projected_length: 8, projected_length: 9}",
                          model="linformer"),
        "gives the key projected_length twice; expected each key once"),
    "train-shape-mismatch": Case(
        "`--set model.max_len=100` against the tiny preset's data of 256 tokens (no run directory is made)",
        lambda tmp: train(tmp, "--set", "model.max_len=100"),
        "disagrees with the listops data, whose examples are 256 tokens long"),
    "train-intensity-on-text": Case(
        "`--set model.token_embedding=intensity` on ListOps (its tokens are symbols, not pixels)",
        lambda tmp: train(tmp, "--set", "model.token_embedding=intensity"),
        "reads token ids as pixel brightness, but listops's tokens are not pixels"),
    "prepare-listops-one-column": Case(
        "a ListOps TSV row with one column", lambda tmp: prepare_listops(tmp, "[MIN 3 4 ]"),
        "basic_train.tsv:3: 1 tab-separated column instead of 2 ('[MIN 3 4 ]'); expected "
        "'EXPRESSION<tab>VALUE'"),
    "prepare-listops-unbalanced": Case(
        "a ListOps TSV row with unbalanced brackets",
        lambda tmp: prepare_listops(tmp, "[MIN 3 4 ] ]\t3"),
        "basic_train.tsv:3: unbalanced brackets (1 operator, 2 ']')"),
    "prepare-pathfinder-metadata": Case(
        "a Pathfinder metadata line with too few fields",
        lambda tmp: prepare_pathfinder(tmp, short_metadata_line),
        "metadata/1.npy:7: malformed line 'imgs/1 sample_0.png 6'"),
    "prepare-pathfinder-empty-png": Case(
        "a zero-byte PNG among 12 images (above the 1% that may be skipped)",
        lambda tmp: prepare_pathfinder(
            tmp, lambda directory: (directory / "imgs/0/sample_1.png").write_bytes(b"")),
        "1 of 12 images in"),
    "bench-missing-run": Case(
        "`serving.bench` on a run directory that does not exist",
        lambda tmp: ["serving.bench", str(tmp / "nope")],
        "does not exist; expected a directory written by python -m arena_tf.train"),
    "bench-unexported-run": Case(
        "`serving.bench` on a run directory that was never exported",
        lambda tmp: (tmp / "run").mkdir() or ["serving.bench", str(tmp / "run")],
        "holds no exported model; expected one of saved_model"),
    "presets-unknown-task": Case(
        "an unknown task in `--tasks`",
        lambda tmp: ["arena_tf.presets", "measure", "--tasks", "nope", "--out", str(tmp)],
        "unknown task 'nope' in --tasks"),
}


@dataclasses.dataclass
class Fault:
    """A finding that is not one bad command line: what happens, and the test that shows it."""

    fault: str
    outcome: str
    test: str  # path::function


FAULTS = [
    Fault("a second trainer on a run directory in use", "one line naming the holder's pid, exit 2",
          "tests/train/test_run_dir.py::test_a_second_trainer_on_a_busy_run_dir_is_refused_naming_the_pid"),
    Fault("the lock file of a killed trainer", "no effect: the next run takes the directory",
          "tests/train/test_run_dir.py::test_a_stale_lock_of_a_dead_trainer_does_not_block"),
    Fault("a start refused by validation, then the corrected rerun", "nothing written; the rerun "
          "trains", "tests/train/test_run_dir.py::"
          "test_a_start_refused_by_validation_leaves_nothing_and_the_corrected_rerun_proceeds"),
    Fault("a truncated newest checkpoint", "one warning line; resumes from the newest intact one",
          "tests/train/test_run_dir.py::"
          "test_a_truncated_newest_checkpoint_gives_way_to_the_newest_intact_one"),
    Fault("SIGKILL mid-training, then a rerun", "resumes bit-exact",
          "tests/train/test_resume.py::test_resumed_run_ends_with_the_uninterrupted_weights"),
    Fault("an export killed mid-write", "its temporaries removed by the next export",
          "tests/export/test_leftovers.py::test_the_next_export_removes_what_a_killed_export_left"),
    Fault("a reduced precision failing its parity check", "FP32 written, the precision reported "
          "with its figure, exit 0",
          "tests/export/test_atomic_and_errors.py::test_refused_reduced_precisions_do_not_stop_fp32"),
    Fault("token id -1 or past the vocabulary to the export runners", "one line, no logits",
          "tests/export/test_contract.py::test_runners_refuse_ids_outside_the_vocabulary_in_one_line"),
    Fault("`serving.bench --runtime tensorrt` on a CPU-only machine", "one line 'nothing to "
          "measure', exit 1, nothing written", "tests/serving/test_bench.py::"
          "test_nothing_to_measure_is_one_line_exit_1_and_writes_nothing"),
    Fault("a model answering outputs outside the label set", "the row is invalid, not timed",
          "tests/serving/test_bench.py::test_nonsense_outputs_of_the_right_count_make_invalid_rows"),
    Fault("an offline request naming a path outside the submission's --offline-dir",
          "refused: Pentathlon's error sentinel and exit 1; the bench reports the row and goes on",
          "tests/serving/test_protocol.py::"
          "test_worker_refuses_offline_files_outside_its_offline_dir_and_goes_on"),
]


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


@pytest.mark.parametrize("fault", FAULTS, ids=lambda fault: fault.test.split("::")[1])
def test_each_fault_names_a_test_that_exists(fault):
    path, function = fault.test.split("::")
    assert f"\ndef {function}(" in (ROOT / path).read_text(), f"{fault.test} is gone"


def render():
    rows = [[f"`{name}`", case.bad_input, f"`{case.words}`", case.exit]
            for name, case in sorted(CASES.items())]
    faults = [[fault.fault, fault.outcome, f"`{fault.test}`"] for fault in FAULTS]
    return ("# Bad input: one line and an exit code\n\n"
            "Generated from `tests/test_bad_input.py` (`python -m tests.test_bad_input`), whose "
            "test runs each case and checks its exit code, that the line on stderr reads "
            "`error: <what was wrong>; expected <what>; <how to fix>` and holds the words shown, "
            "and that nothing was left behind. Exit 2: the user's mistake; exit 1: the run "
            "itself failed. `--debug` shows the traceback instead.\n\n"
            + table(["case", "bad input", "error line holds", "exit"], rows) + "\n\n"
            "## Faults\n\n"
            "Findings that are not one bad command line, each with the test that feeds it:\n\n"
            + table(["fault", "what happens", "test"], faults) + "\n")


def test_the_doc_table_is_generated_from_the_cases():
    assert DOC.read_text() == render(), "run `python -m tests.test_bad_input`"


if __name__ == "__main__":
    DOC.write_text(render())
