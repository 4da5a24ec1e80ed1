"""Config merging: files, presets and --set; every bad key or value named with where it came from."""

import pytest

from arena_tf.config import ConfigError, load_experiment, parse_override

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
    config = load_experiment("listops", "local", ["model.attention_params.block_size=8"],
                             preset="tiny", derived=DERIVED, configs_dir=configs)
    assert config.model.num_layers == 3
    assert config.train.batch_size == 4
    assert config.task.max_len == 100
    assert config.model.attention_params == {"block_size": 8}


def test_unknown_key_names_the_file_and_the_accepted_keys(configs):
    write(configs / "tasks" / "listops.yaml", "model:\n  num_layer: 3\n")
    with pytest.raises(ConfigError, match=r"listops.yaml: unknown key model.num_layer; expected .*num_layers"):
        load_experiment("listops", "local", derived=DERIVED, configs_dir=configs)


def test_wrong_type_names_the_source(configs):
    with pytest.raises(ConfigError, match=r"--set train.batch_size=big: batch_size='big' has the wrong type"):
        load_experiment("listops", "local", ["train.batch_size=big"], derived=DERIVED, configs_dir=configs)


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


def test_set_reaches_any_depth_and_reads_exponent_numbers(configs):
    write(configs / "presets" / "tiny.listops.yaml",
          "task:\n  params:\n    generator_spec: {train: 100, test: 10}\n")
    config = load_experiment("listops", "local", ["task.params.generator_spec.train=500",
                                                  "train.learning_rate=1e-3"],
                             preset="tiny", derived=DERIVED, configs_dir=configs)
    assert config.task.params == {"generator_spec": {"train": 500, "test": 10}}
    assert config.train.learning_rate == 0.001
