"""Bad input stops the command line with one `error: ...` line and exit status 2, no traceback: the
line says what was wrong and what to do. A run that fails on its own (diverged, stopped by
TensorFlow) exits 1, also with one line."""

import re

import pytest
import tensorflow as tf
import yaml

from arena_tf import train
from arena_tf.tasks.listops import ListOps
from tests.one_line import assert_one_error_line
from tests.training.conftest import MAX_LEN, TINY, TRAIN, cli_args, loop, run


def fails_with(capsys, argv, code=2):
    """The one stderr line of a failed `main(argv)` (asserting the status and nothing else)."""
    assert train.main([str(arg) for arg in argv]) == code
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def fails_in_style(capsys, argv, *fragments, code=2):
    """As fails_with, and the line reads `error: <what>; expected <what>; <fix>` with
    `fragments`."""
    assert train.main([str(arg) for arg in argv]) == code
    err = capsys.readouterr().err
    assert_one_error_line(err, *fragments)
    return err.strip()


def patch_examples(monkeypatch, change):
    """ListOps examples passed through `change(tokens, label, index)` (a tf function)."""
    load_split = ListOps.load_split

    def changed(self, split):
        return (
            load_split(self, split)
            .enumerate()
            .map(lambda index, example: change(example[0], example[1], index))
        )

    monkeypatch.setattr(ListOps, "load_split", changed)


def test_unknown_task_lists_the_tasks(capsys, tmp_path):
    line = fails_in_style(capsys, ["--task=nope", "--model=full", f"--run_dir={tmp_path}/run"])
    assert "unknown task 'nope'" in line and "listops, pathfinder" in line


def test_unknown_model_lists_the_models(capsys, tmp_path):
    line = fails_with(capsys, ["--task=listops", "--model=nope", f"--run_dir={tmp_path}/run"])
    assert "unknown model 'nope'" in line and "bigbird, full, linear" in line


def test_unknown_set_key_names_it_and_the_known_keys(capsys, listops_dir, tmp_path):
    line = fails_with(capsys, cli_args(listops_dir, tmp_path / "run", ["train.nope=1"]))
    assert "train.nope" in line and "batch_size" in line


def test_missing_data_gives_the_task_message_before_any_run_directory(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    line = fails_with(
        capsys,
        [
            "--task=retrieval",
            "--model=full",
            f"--data_dir={tmp_path}/empty",
            f"--run_dir={tmp_path}/run",
        ],
    )
    assert "retrieval: AAN release files" in line and "--data-dir" in line
    assert not (tmp_path / "run").exists()


def test_unwritable_run_directory(capsys, listops_dir, tmp_path):
    (tmp_path / "file").write_text("not a directory")
    line = fails_in_style(capsys, cli_args(listops_dir, tmp_path / "file" / "run", TINY))
    assert f"cannot write to run directory {tmp_path}/file/run" in line and "--run-dir" in line
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_nan_loss_names_the_step_and_the_checkpoint_to_resume_from(capsys, listops_dir, tmp_path):
    """The run itself failed: exit 1."""
    diverging = [
        *TINY,
        "train.learning_rate=1.0e+30",
        "train.schedule=constant",
        *loop(20, checkpoint_every=1),
    ]
    line = fails_in_style(capsys, cli_args(listops_dir, tmp_path, diverging), code=1)
    found = re.search(
        r"became (-?inf|nan|inf or nan) at step (\d+);.* last checkpoint (\S+)$", line
    )
    assert found, line
    step, checkpoint = int(found.group(2)), found.group(3)
    assert 1 < step < 20 and checkpoint.endswith(f"ckpt-{step - 1}")
    assert (tmp_path / "checkpoints" / f"ckpt-{step - 1}.index").exists()
    assert not (tmp_path / "metrics.json").exists()


def test_run_directory_of_another_configuration_says_what_differs(capsys, listops_dir, tmp_path):
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 0
    capsys.readouterr()
    line = fails_in_style(
        capsys,
        cli_args(
            listops_dir, tmp_path, [*TINY, *loop(1), "model.num_layers=2", "train.batch_size=16"]
        ),
    )
    assert "belongs to another configuration" in line
    assert (
        "model.num_layers: saved 1, now 2" in line and "train.batch_size: saved 32, now 16" in line
    )


def test_a_run_saved_before_a_setting_existed_resumes_at_its_default(capsys, listops_dir, tmp_path):
    """A config.yaml without a newer setting (here train.learning_rate_scales) is read with the
    setting at its default: the same command resumes it, and setting it is a change refused."""
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 0
    saved = yaml.safe_load((tmp_path / "config.yaml").read_text())
    del saved["train"]["learning_rate_scales"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(2)])) == 0
    capsys.readouterr()
    line = fails_in_style(
        capsys,
        cli_args(listops_dir, tmp_path, [*TINY, *loop(3), "train.learning_rate_scales.kernel=0.5"]),
    )
    assert "train.learning_rate_scales.kernel: saved None, now 0.5" in line


def test_a_set_max_len_that_disagrees_with_the_data_names_both(capsys, listops_dir, tmp_path):
    """`--set model.max_len` other than the data's length (it was silently replaced by the
    task's) is refused before anything is written, naming the value and the data."""
    line = fails_in_style(
        capsys,
        cli_args(listops_dir, tmp_path / "run", [*TINY, *loop(1), "model.max_len=16"]),
        "--set model.max_len=16 disagrees with the listops data",
        f"task.max_len={MAX_LEN}",
    )
    assert "set task.max_len=16" in line
    assert not (tmp_path / "run").exists()


def test_data_of_another_length_than_max_len_is_refused_before_training(
    capsys, monkeypatch, listops_dir, tmp_path
):
    """Data made for another length (here 8 tokens longer than task.max_len) stops before the
    run directory is made, not at the first step (a ValueError's traceback before)."""
    patch_examples(monkeypatch, lambda tokens, label, index: (tf.pad(tokens, [[0, 8]]), label))
    fails_in_style(
        capsys,
        cli_args(listops_dir, tmp_path / "run", [*TINY, *loop(1)]),
        f"has examples of shape [{MAX_LEN + 8}] but model.max_len={MAX_LEN}",
        "--data-dir",
    )
    assert not (tmp_path / "run").exists()


def test_a_label_outside_the_classes_is_refused_before_training(
    capsys, monkeypatch, listops_dir, tmp_path
):
    patch_examples(monkeypatch, lambda tokens, label, index: (tokens, label + 10))
    fails_in_style(
        capsys,
        cli_args(listops_dir, tmp_path / "run", [*TINY, *loop(1)]),
        "outside model.num_classes=10",
    )
    assert not (tmp_path / "run").exists()


def test_tensorflow_stopping_a_step_is_one_line_with_the_cause_and_exit_1(
    capsys, monkeypatch, listops_dir, tmp_path
):
    """A bad example past the first one passes the checks and stops a step: one line with
    TensorFlow's own reason, not its bare `Graph execution error:`."""
    patch_examples(
        monkeypatch,
        lambda tokens, label, index: (
            tokens,
            tf.where(index > 0, tf.constant(99, tf.int32), label),
        ),
    )
    line = fails_in_style(
        capsys,
        cli_args(listops_dir, tmp_path / "run", [*TINY, *loop(2)]),
        "TensorFlow stopped the run at step 1",
        "label value of 99",
        code=1,
    )
    assert "Graph execution error" not in line


def test_impossible_mechanism_parameter_is_one_line(capsys, listops_dir, tmp_path):
    line = fails_in_style(
        capsys,
        cli_args(
            listops_dir,
            tmp_path / "run",
            [*TINY, "model.attention_params.block_size=0"],
            model="local",
        ),
    )
    assert "block_size=0 is invalid; expected a positive integer" in line
    assert not (tmp_path / "run").exists()


def test_a_value_error_while_training_is_a_bug_in_one_line_and_debug_keeps_its_traceback(
    monkeypatch, capsys, listops_dir, tmp_path
):
    def broken_fit(self):
        raise ValueError("a bug in the loop")

    monkeypatch.setattr(train.Trainer, "fit", broken_fit)
    args = cli_args(listops_dir, tmp_path / "run", [*TINY, *loop(1)])
    assert train.main(args) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()[-1:]
    assert line.startswith("error: internal error: ValueError: a bug in the loop")
    assert "--debug" in line
    with pytest.raises(ValueError, match="a bug in the loop"):
        train.main([*args, "--debug"])


def test_unreachable_tpu(capsys, tmp_path):
    line = fails_in_style(
        capsys, ["--task=listops", "--model=full", "--tpu=nonexistent", f"--run_dir={tmp_path}"]
    )
    assert "TPU 'nonexistent' could not be reached" in line and "--tpu" in line


def test_multi_worker_without_tf_config(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    line = fails_in_style(
        capsys,
        ["--task=listops", "--model=full", "--strategy=multi_worker", f"--run_dir={tmp_path}"],
    )
    assert "needs TF_CONFIG naming two or more workers" in line


def test_jax_process_flags_under_tensorflow(capsys, tmp_path):
    line = fails_in_style(
        capsys,
        [
            "--task=listops",
            "--model=full",
            "--coordinator=10.0.0.1:1234",
            "--num-processes=2",
            "--process-id=0",
            f"--run_dir={tmp_path}",
        ],
    )
    assert "name the processes of a JAX run; TensorFlow's workers come from TF_CONFIG" in line


def test_cpu_devices_once_tensorflow_has_started(capsys, tmp_path):
    tf.config.list_logical_devices()  # start TensorFlow's devices, as any earlier work would
    line = fails_in_style(
        capsys, ["--task=listops", "--model=full", "--cpu_devices=3", f"--run_dir={tmp_path}"]
    )
    assert "cannot split the CPU into 3 logical devices" in line and "fresh process" in line


def test_command_line_exits_2_with_one_error_line(tmp_path):
    code, out, err = run(TRAIN + ["--task=listops", "--model=nope", f"--run_dir={tmp_path}"])
    assert code == 2 and "Traceback" not in err
    assert err.splitlines()[-1].startswith("error: unknown model 'nope'")


@pytest.mark.parametrize(
    "flag, value", [("--cpu_devices", "0"), ("--cpu_devices", "two"), ("--strategy", "nope")]
)
def test_bad_flags_are_refused_by_the_parser(flag, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.parse_args(["--task=listops", "--model=full", f"{flag}={value}"])
    assert exit_info.value.code == 2
    assert f"argument {flag.replace('_', '-')}: " in capsys.readouterr().err


@pytest.mark.tensorflow_only("TensorFlow's checkpoint state file")
def test_a_garbage_checkpoint_state_file_is_one_line_before_anything_is_written(
    capsys, listops_dir, tmp_path
):
    assert train.main(cli_args(listops_dir, tmp_path, [*TINY, *loop(1)])) == 0
    (tmp_path / "checkpoints" / "checkpoint").write_bytes(b"\xff\xfe garbage \x00" * 10)
    config = (tmp_path / "config.yaml").read_bytes()
    capsys.readouterr()
    line = fails_in_style(capsys, cli_args(listops_dir, tmp_path, [*TINY, *loop(2)]))
    assert "checkpoints/checkpoint cannot be read (UnicodeDecodeError" in line
    assert "delete" in line and (tmp_path / "config.yaml").read_bytes() == config
