"""Config merging: files, presets and --set; every bad key or value named with where it came
from."""

import os
import pathlib
import subprocess
import sys

import pytest

from arena_tf import cli
from arena_tf.config import ConfigError, load_experiment, parse_override, read_yaml
from tests.one_line import STYLE, assert_one_error_line

ROOT = pathlib.Path(__file__).resolve().parent.parent

DERIVED = dict(vocab_size=16, num_classes=10, padding_id=0, max_len=2000)


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def configs(tmp_path):
    write(tmp_path / "tasks" / "listops.yaml", "model:\n  num_layers: 3\ntrain:\n  batch_size: 8\n")
    write(tmp_path / "models" / "local.yaml", "model:\n  attention_params:\n    block_size: 50\n")
    write(tmp_path / "presets" / "tiny.yaml", "train:\n  batch_size: 4\n")
    write(tmp_path / "presets" / "tiny.listops.yaml", "task:\n  max_len: 100\n")
    return tmp_path


def test_layers_merge_in_order_and_set_reaches_into_mechanism_params(configs):
    config = load_experiment(
        "listops",
        "local",
        ["model.attention_params.block_size=8"],
        preset="tiny",
        derived=DERIVED,
        configs_dir=configs,
    )
    assert config.model.num_layers == 3
    assert config.train.batch_size == 4
    assert config.task.max_len == 100
    assert config.model.attention_params == {"block_size": 8}


def test_unknown_key_names_the_file_and_the_accepted_keys(configs):
    write(configs / "tasks" / "listops.yaml", "model:\n  num_layer: 3\n")
    with pytest.raises(
        ConfigError, match=r"listops.yaml: unknown key model.num_layer; expected .*num_layers"
    ):
        load_experiment("listops", "local", derived=DERIVED, configs_dir=configs)


def test_wrong_type_names_the_source(configs):
    with pytest.raises(
        ConfigError, match=r"--set train.batch_size=big: batch_size='big' has the wrong type"
    ):
        load_experiment(
            "listops", "local", ["train.batch_size=big"], derived=DERIVED, configs_dir=configs
        )


def test_a_key_given_twice_in_one_file_is_refused(configs):
    write(configs / "models" / "local.yaml", "model:\n  dropout: 0.1\n  dropout: 0.2\n")
    with pytest.raises(ConfigError, match="local.yaml: not valid YAML .*dropout given twice"):
        load_experiment("listops", "local", derived=DERIVED, configs_dir=configs)


@pytest.mark.parametrize("text", ["batch_size=3", "train.batch_size", "train..x=1"])
def test_malformed_override_is_one_clear_error(text):
    with pytest.raises(ConfigError, match="expected section.key=value"):
        parse_override(text)


def test_unknown_task_model_and_preset_list_the_known_ones(configs):
    with pytest.raises(ConfigError, match="unknown task 'lists'.*listops"):
        load_experiment("lists", "local", configs_dir=configs)
    with pytest.raises(ConfigError, match="unknown model 'locale'.*local"):
        load_experiment("listops", "locale", configs_dir=configs)
    with pytest.raises(ConfigError, match="unknown preset 'huge'; expected one of tiny"):
        load_experiment("listops", "local", preset="huge", configs_dir=configs)


@pytest.mark.parametrize(
    "task, model, preset",
    [
        ("../models/local", "local", None),
        ("listops", "../presets/tiny", None),
        ("listops", "local", "../tasks/listops"),
    ],
)
def test_a_path_for_a_task_model_or_preset_is_refused_though_the_file_exists(
    configs, task, model, preset
):
    with pytest.raises(ConfigError, match=r"unknown \w+ '\.\./"):
        load_experiment(task, model, preset=preset, derived=DERIVED, configs_dir=configs)


@pytest.mark.parametrize(
    "override, flag",
    [("task.name=image", "--task=image"), ("model.attention=full", "--model=full")],
)
def test_set_cannot_change_the_task_or_mechanism_the_flags_chose(configs, override, flag):
    with pytest.raises(
        ConfigError, match=f"--set {override}: sets .* but .* chose .*; pass {flag}"
    ):
        load_experiment("listops", "local", [override], derived=DERIVED, configs_dir=configs)
    write(configs / "presets" / "tiny.yaml", "task:\n  name: image\n")
    with pytest.raises(ConfigError, match=r"tiny.yaml: sets task.name to 'image'"):
        load_experiment("listops", "local", preset="tiny", derived=DERIVED, configs_dir=configs)
    assert (
        load_experiment(
            "listops", "local", ["model.attention=local"], derived=DERIVED, configs_dir=configs
        ).model.attention
        == "local"
    )


def test_set_reaches_any_depth_and_reads_exponent_numbers(configs):
    write(
        configs / "presets" / "tiny.listops.yaml",
        "task:\n  params:\n    generator_spec: {train: 100, test: 10}\n",
    )
    config = load_experiment(
        "listops",
        "local",
        ["task.params.generator_spec.train=500", "train.learning_rate=1e-3"],
        preset="tiny",
        derived=DERIVED,
        configs_dir=configs,
    )
    assert config.task.params == {"generator_spec": {"train": 500, "test": 10}}
    assert config.train.learning_rate == 0.001


# -- bad input on the command line: one line in the shared style, exit 2, nothing written ---------


def test_config_errors_are_usage_errors_and_still_value_errors():
    assert issubclass(ConfigError, cli.UsageError) and issubclass(ConfigError, ValueError)
    error = ConfigError("x=1 is invalid", ">= 2", "set x to 2")
    assert str(error) == "x=1 is invalid; expected >= 2; set x to 2" and error.exit_code == 2


@pytest.mark.slow
def test_set_with_invalid_yaml_is_one_line_through_the_cli(tmp_path):
    """The probe's input, as a user types it: `--set 'train.batch_size=[1,'`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "arena_tf.train",
            "--task=listops",
            "--model=linformer",
            "--preset=tiny",
            "--set",
            "train.batch_size=[1,",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    assert_one_error_line(
        done.stderr,
        "--set 'train.batch_size=[1,': the value '[1,' is not valid YAML",
        "expected a YAML value after the '='",
    )
    assert not any(tmp_path.iterdir()), "the command left files behind (runs/, data/)"


@pytest.mark.parametrize(
    "override, says",
    [
        (
            "model.attention_params={projected_length: 8, projected_length: 9}",
            "--set 'model.attention_params={projected_length: 8, projected_length: 9}' gives the "
            "key projected_length twice; expected each key once in a mapping",
        ),
        ("train.batch_size=[1,", "the value '[1,' is not valid YAML"),
        ("train.learning_rate='0.1", 'the value "\'0.1" is not valid YAML'),
        ("task.params=!!python/object:os.system x", "could not determine a constructor"),
        ("model.attention_params={[1]: 2}", "not valid YAML (while constructing a mapping"),
    ],
)
def test_bad_set_values_are_one_line_and_exit_2(capsys, tmp_path, monkeypatch, override, says):
    monkeypatch.chdir(tmp_path)
    code = cli.run_main(
        lambda: load_experiment("listops", "linformer", [override], preset="tiny", derived=DERIVED)
    )
    assert code == 2
    assert_one_error_line(capsys.readouterr().err, says)
    assert not any(tmp_path.iterdir())


def test_bad_yaml_in_a_file_names_the_file_and_line(configs):
    write(configs / "presets" / "tiny.yaml", "train:\n  batch_size: 4\n  schedule: [cosine\n")
    with pytest.raises(
        ConfigError,
        match=r"tiny.yaml: not valid YAML at line 4 .*; expected a YAML "
        r"mapping of sections; correct the YAML of .*tiny.yaml",
    ):
        load_experiment("listops", "local", preset="tiny", derived=DERIVED, configs_dir=configs)


def test_a_section_that_is_not_a_mapping_is_one_clear_error(configs):
    write(configs / "presets" / "tiny.yaml", "train: 5\n")
    with pytest.raises(ConfigError, match=r"tiny.yaml: section train holds 5, not keys and values"):
        load_experiment("listops", "local", preset="tiny", derived=DERIVED, configs_dir=configs)


def test_every_config_error_reads_what_expected_fix(configs):
    bad = [
        "train.batch_size=0",
        "train.learning_rate=0",
        "train.schedule=linear",
        "model.dropout=1.5",
        "model.qkv_dim=30",
        "model.pooling=max",
        "train.batch_size=big",
        "train.nope=1",
        "nope.x=1",
        "train=1",
    ]
    for override in bad:
        with pytest.raises(ConfigError) as caught:
            load_experiment("listops", "local", [override], derived=DERIVED, configs_dir=configs)
        assert STYLE.match(f"error: {caught.value}\n"), (override, str(caught.value))


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    """A few hundred bytes of nested aliases stand for billions of values (printing or copying
    them exhausts the memory): a config spells each value out, so an alias is one line."""
    levels = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]'] + [
        f"{name}: &{name} [{', '.join([f'*{before}'] * 9)}]"
        for before, name in zip("abcdefgh", "bcdefghi")
    ]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(levels) + "\nmodel: {attention_params: {x: *i}}\n")
    with pytest.raises(
        ConfigError,
        match=r"bomb.yaml: not valid YAML at line 2 \(found the alias "
        r"\*a, and aliases are not accepted",
    ):
        read_yaml(bomb)
    with pytest.raises(ConfigError, match=r"found the alias \*a, and aliases are not accepted"):
        parse_override("model.attention_params={a: &a [1, 2], b: *a}")
