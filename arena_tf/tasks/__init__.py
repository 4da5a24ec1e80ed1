"""The six LRA tasks, one file each, behind one registry.

import arena_tf.tasks as tasks
tasks.available()          # ['image', 'listops', 'pathfinder', 'pathx', 'retrieval', 'text']
task = tasks.get("listops", data_dir="data/")
"""

import importlib
import inspect

from arena_tf.config import ConfigError
from arena_tf.tasks.base import SPLITS, BadDataError, DataNotFoundError, RowError, Task

_REGISTRY = {}

TASKS = ("listops", "text", "retrieval", "image", "pathfinder", "pathx")
COMMON = ("data_dir", "max_len", "seed")  # what every task takes, from task: and the run


def register(cls):
    """Class decorator: make a Task available under its `name`."""
    if cls.name in _REGISTRY:
        raise ValueError(f"task {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def available():
    """Sorted names of the registered tasks."""
    return sorted(_REGISTRY)


def lookup(name):
    """The Task class registered under `name`; a ConfigError (a ValueError, exit 2 on the command
    line) listing the names otherwise."""
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown task {name!r}",
            f"one of {', '.join(available())}",
            "pass --task with one of them",
        )
    return _REGISTRY[name]


def params_of(cls):
    """The task parameters (task.params) a Task class's constructor takes."""
    signature = inspect.signature(cls.__init__).parameters
    return [name for name in signature if name not in ("self", *COMMON)]


def get(name, **kwargs):
    """An instance of task `name` (kwargs: data_dir, max_len, seed and its own parameters); a
    ConfigError naming the accepted parameters for any other."""
    cls = lookup(name)
    unknown = sorted(set(kwargs) - set(COMMON) - set(params_of(cls)))
    if unknown:
        accepted = ", ".join(params_of(cls)) or "none"
        raise ConfigError(
            f"task {name} has no parameter {', '.join(unknown)}",
            f"task.params among: {accepted}",
            "correct or drop it in --set task.params.NAME or the config",
        )
    return cls(**kwargs)


def from_config(task_config, seed=0):
    """The task a `TaskConfig` names, with its data dir, length and constructor parameters."""
    return get(
        task_config.name,
        data_dir=task_config.data_dir,
        max_len=task_config.max_len,
        seed=seed,
        **task_config.params,
    )


for _module in TASKS:  # importing a module registers what it defines
    importlib.import_module(f"arena_tf.tasks.{_module}")

__all__ = [
    "SPLITS",
    "BadDataError",
    "DataNotFoundError",
    "RowError",
    "Task",
    "available",
    "from_config",
    "get",
    "lookup",
    "register",
]
