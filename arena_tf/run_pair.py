"""A run's model and its config.yaml must describe the same classifier.

Training writes both; a model.keras copied beside another run's config.yaml (a ListOps model with
a Pathfinder config) would otherwise export with its parity "passed" on the wrong task's examples
and metadata naming the wrong task. `check_pair` compares what fixes the model's inputs and
outputs (its task's input length, vocabulary, classes, inputs, mechanism) before an export or a
bench uses the pair, and refuses a disagreement in one line (exit 2). The task section is held to
the model too: the fields its task decides (`Task.model_fields`) must be the model's, so a model
whose config.yaml names another task (ListOps weights under a Pathfinder task section) is refused.
"""

from arena_tf.cli import UsageError

# The model fields a task decides or that change what the model computes on its inputs.
PAIRED = ("task", "attention", "max_len", "vocab_size", "num_classes", "two_tower", "padding_id")


def differences(model, config_model):
    """['max_len 2000 vs 1024', ...]: the PAIRED fields where `model` (a dict of the model's own
    config) and `config_model` (config.yaml's model section) disagree; fields config.yaml omits
    are not compared."""
    return [
        f"{name} {model.get(name)!r} vs {config_model[name]!r}"
        for name in PAIRED
        if name in config_model and model.get(name) != config_model[name]
    ]


def task_differences(model, task_config):
    """['vocab_size 16 vs 256 (pathfinder\'s)', ...]: the fields the task of `task_config` (a
    TaskConfig) decides where `model` (a dict of the model's own config) holds another value."""
    from arena_tf import tasks

    try:
        decided = tasks.from_config(task_config).model_fields()
    except ValueError as error:  # ConfigError included: the section names no task of its own
        text = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return [f"its task section makes no {task_config.name} task ({text[:160]})"]
    return [
        f"{name} {model[name]!r} vs {value!r} ({task_config.name}'s)"
        for name, value in decided.items()
        if name in model and model[name] != value
    ]


def check_pair(model, config_model, model_path, config_path, task=None, task_config=None):
    """UsageError when the model (`model`: its ModelConfig as a dict) and config.yaml's model
    section disagree, or (`task_config` given, the section's TaskConfig) the fields that task
    decides are not the model's."""
    wrong = differences(model, config_model or {})
    if task_config is not None:
        wrong += task_differences(model, task_config)
    if wrong:
        of_task = f" (task {task})" if task else ""
        raise UsageError(
            f"{model_path} does not match {config_path}{of_task}: {', '.join(wrong)} (the "
            "model's vs the config's)",
            "the model.keras and config.yaml one training run wrote",
            "pass the run directory training wrote, or retrain into a fresh run directory",
        )
