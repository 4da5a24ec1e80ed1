"""A run's model and its config.yaml must describe the same classifier.

Training writes both; a model.keras copied beside another run's config.yaml (a ListOps model with
a Pathfinder config) would otherwise export with its parity "passed" on the wrong task's examples
and metadata naming the wrong task. `check_pair` compares what fixes the model's inputs and
outputs (its task's input length, vocabulary, classes, inputs, mechanism) before an export or a
bench uses the pair, and refuses a disagreement in one line (exit 2).
"""

from arena_tf.cli import UsageError

# The model fields a task decides or that change what the model computes on its inputs.
PAIRED = ("task", "attention", "max_len", "vocab_size", "num_classes", "two_tower", "padding_id")


def differences(model, config_model):
    """['max_len 2000 vs 1024', ...]: the PAIRED fields where `model` (a dict of the model's own
    config) and `config_model` (config.yaml's model section) disagree; fields config.yaml omits
    are not compared."""
    return [f"{name} {model.get(name)!r} vs {config_model[name]!r}" for name in PAIRED
            if name in config_model and model.get(name) != config_model[name]]


def check_pair(model, config_model, model_path, config_path, task=None):
    """UsageError when the model (`model`: its ModelConfig as a dict) and config.yaml's model
    section disagree."""
    wrong = differences(model, config_model or {})
    if wrong:
        of_task = f" (task {task})" if task else ""
        raise UsageError(
            f"{model_path} does not match {config_path}{of_task}: {', '.join(wrong)} (the "
            "model's vs the config's)",
            "the model.keras and config.yaml one training run wrote",
            "pass the run directory training wrote, or retrain into a fresh run directory")
