"""What TensorBoard shows of a run (under the backend of the test pass; tests/jax runs it under
JAX): train/ holds the training window's loss and accuracy with the learning rate, speed and memory;
validation/ only what evaluation measures (loss and accuracy), so the two share the metrics charts
and nothing else; every tag sits in a group and says its unit; the run directory holds the config as
text and an hparams record (every config field, and the metrics its dashboard lists, the final test
accuracy among them)."""

import json

import pytest
import yaml
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.util.tensor_util import make_ndarray

from arena_tf import train
from arena_tf.training import events
from tests.training.conftest import TINY, loop

# One worker runs this module (--dist loadgroup), so its module fixtures are built once.
pytestmark = pytest.mark.xdist_group("test_tensorboard")

TRAIN_TAGS = {
    "metrics/loss",
    "metrics/accuracy",
    "optimizer/learning_rate",
    "speed/steps_per_second",
    "speed/examples_per_second",
    "memory/peak_mb",
    "time/train_seconds",
}
VALIDATION_TAGS = {"metrics/loss", "metrics/accuracy"}
UNITS = {
    "metrics/loss": "(nats)",
    "speed/steps_per_second": "(steps/s)",
    "speed/examples_per_second": "(examples/s)",
    "memory/peak_mb": "(MiB)",
    "time/train_seconds": "(s)",
    "metrics/accuracy": "(0 to 1)",
}


@pytest.fixture(scope="module")
def run_dir(listops_dir, tmp_path_factory):
    """A tiny run of 4 steps: train points at 2 and 4, validation at 2 and 4."""
    config, task = train.build_experiment(
        "listops", "full", [*TINY, *loop(4, log_every=2, eval_every=2)], data_dir=listops_dir
    )
    trainer = train.Trainer(
        config,
        task,
        tmp_path_factory.mktemp("run") / "tiny",
        train.backend.Distribution(),
        verbose=False,
    )
    trainer.fit()
    return trainer.run_dir


def values(directory):
    """{tag: [(step, plugin name, description, Summary.Value)]} of one TensorBoard run directory."""
    found = {}
    for path in sorted(directory.glob("events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                found.setdefault(value.tag, []).append(
                    (
                        event.step,
                        value.metadata.plugin_data.plugin_name,
                        value.metadata.summary_description,
                        value,
                    )
                )
    return found


def test_validation_holds_what_evaluation_measures_and_training_the_rest(run_dir):
    train_values, validation_values = values(run_dir / "train"), values(run_dir / "validation")
    assert set(train_values) == TRAIN_TAGS
    assert set(validation_values) == VALIDATION_TAGS
    assert [step for step, *_ in validation_values["metrics/accuracy"]] == [2, 4]
    assert [step for step, *_ in train_values["speed/steps_per_second"]] == [2, 4]


def test_every_scalar_sits_in_a_group_and_states_its_unit(run_dir):
    for split in ("train", "validation"):
        for tag, points in values(run_dir / split).items():
            group, _, name = tag.partition("/")
            assert group and name, tag
            plugins, descriptions = {p for _, p, _, _ in points}, {d for _, _, d, _ in points}
            assert plugins == {"scalars"}, tag
            assert all(descriptions), f"{tag} has no description"
            assert UNITS.get(tag, "") in descriptions.pop()


def test_the_run_holds_its_config_as_text_and_an_hparams_record(run_dir):
    root = values(run_dir)
    ((_, plugin, _, config_text),) = root[events.CONFIG_TAG]
    assert plugin == "text"
    shown = make_ndarray(config_text.tensor).item().decode()
    assert yaml.safe_load("\n".join(line[4:] for line in shown.splitlines())) == yaml.safe_load(
        (run_dir / "config.yaml").read_text()
    )

    ((_, plugin, _, start),) = root[hparams_metadata.SESSION_START_INFO_TAG]
    assert plugin == hparams_metadata.PLUGIN_NAME
    session = hparams_metadata.parse_session_start_info_plugin_data(
        start.metadata.plugin_data.content
    )
    hparams = {name: value.ListFields()[0][1] for name, value in session.hparams.items()}
    assert hparams["model.attention"] == "full" and hparams["train.num_train_steps"] == 4
    assert hparams["train.learning_rate"] == pytest.approx(0.003)

    ((_, _, _, experiment),) = root[hparams_metadata.EXPERIMENT_TAG]
    listed = hparams_metadata.parse_experiment_plugin_data(experiment.metadata.plugin_data.content)
    metrics = {(m.name.group, m.name.tag) for m in listed.metric_infos}
    assert {("", "final/test_accuracy"), ("validation", "metrics/accuracy")} <= metrics
    assert {h.name for h in listed.hparam_infos} == set(hparams)


def test_the_final_test_accuracy_is_in_the_run_as_in_metrics_json(run_dir):
    metrics = json.loads((run_dir / "metrics.json").read_text())
    final = events.read_scalars(run_dir)
    assert final["test_accuracy"] == {4: pytest.approx(metrics["test_accuracy"])}
    assert final["test_loss"] == {4: pytest.approx(metrics["test_loss"])}
