"""The six LRA tasks, one file each, behind one registry.

    import arena_tf.tasks as tasks
    tasks.available()          # ['image', 'listops', 'pathfinder', 'pathx', 'retrieval', 'text']
    task = tasks.get("listops", data_dir="data/")
"""

import importlib

from arena_tf.config import ConfigError
from arena_tf.tasks.base import SPLITS, BadDataError, DataNotFoundError, RowError, Task

_REGISTRY = {}

TASKS = ("listops", "text", "retrieval", "image", "pathfinder", "pathx")


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
        raise ConfigError(f"unknown task {name!r}", f"one of {', '.join(available())}",
                          "pass --task with one of them")
    return _REGISTRY[name]


def get(name, **kwargs):
    """An instance of task `name` (kwargs: data_dir, max_len, seed)."""
    return lookup(name)(**kwargs)


def from_config(task_config, seed=0):
    """The task a `TaskConfig` names, with its data dir, length and constructor parameters."""
    return get(task_config.name, data_dir=task_config.data_dir, max_len=task_config.max_len,
               seed=seed, **task_config.params)


for _module in TASKS:  # importing a module registers what it defines
    importlib.import_module(f"arena_tf.tasks.{_module}")

__all__ = ["SPLITS", "BadDataError", "DataNotFoundError", "RowError", "Task", "available",
           "from_config", "get", "lookup", "register"]
