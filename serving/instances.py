"""The instances a bench run sends: a task's test split, or generated tokens where it has none.

    pool = instances.load(metadata, task_config, kind="auto")
    pool.source            # 'listops test split, 2000 instances' or 'generated tokens (...)'
    pool.fragments[i]      # instance i as JSON bytes, encoded once before any timing
    pool.labels            # int array, or None for generated tokens
    pool.num_classes       # the task's label set, [0, num_classes), that outputs are checked against

Every scenario draws from the same pool with fixed seeds, so every model sees the same instances in
the same order.
"""

import dataclasses
import json

import numpy as np

KINDS = ("auto", "test", "generated")


@dataclasses.dataclass
class Instances:
    """A pool of encoded instances, their labels (None when unknown), where they came from and the
    number of classes of their task (None when unknown)."""

    fragments: list
    labels: object
    source: str
    num_classes: int = None

    def __len__(self):
        return len(self.fragments)

    @classmethod
    def from_tokens(cls, tokens, labels, source, num_classes=None):
        """From int tokens [n, num_inputs, max_len]: one input is sent as a list of ids, two as a
        list of two lists (the protocol's instance format)."""
        single = tokens.shape[1] == 1
        fragments = [json.dumps(row[0].tolist() if single else row.tolist(),
                                separators=(",", ":")).encode() for row in tokens]
        return cls(fragments=fragments, labels=labels, source=source, num_classes=num_classes)


def load(metadata, task_config=None, kind="auto", data_dir=None, generated_count=2000, seed=0):
    """The instance pool for a model described by `metadata` (task, max_len, vocab_size, ...).

    kind "test": the task's test split (errors propagate); "generated": random tokens; "auto": the
    test split where it can be read, otherwise generated tokens, with the reason in `source`.
    The pool's `num_classes` is the metadata's, else that of the task's class.
    """
    pool = _load(metadata, task_config, kind, data_dir, generated_count, seed)
    pool.num_classes = label_count(metadata, task_config)
    return pool


def label_count(metadata, task_config=None):
    """The number of classes of a model's task: its metadata's num_classes, else its task class's;
    None when neither says."""
    if metadata.get("num_classes"):
        return int(metadata["num_classes"])
    name = metadata.get("task") or (task_config or {}).get("name")
    try:
        from arena_tf import tasks

        return tasks.lookup(name).num_classes if name else None
    except (ImportError, ValueError):
        return None


def _load(metadata, task_config, kind, data_dir, generated_count, seed):
    if kind not in KINDS:
        raise ValueError(f"unknown instances kind {kind!r}; expected one of {', '.join(KINDS)}")
    if kind == "generated":
        return generated(metadata, generated_count, seed, "asked for with --instances generated")
    try:
        return test_split(metadata, task_config or {}, data_dir)
    except Exception as error:  # reported in every row's instance source, never hidden
        if kind == "test":
            raise
        reason = f"test split unavailable: {type(error).__name__}: {str(error)[:200]}"
        return generated(metadata, generated_count, seed, reason)


def test_split(metadata, task_config, data_dir=None):
    """The task's whole test split, padded or cut to the model's max_len."""
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")  # the bench must not take the model's GPU memory
    from arena_tf import tasks
    from arena_tf.config import TaskConfig
    from arena_tf.tasks import sources

    name = metadata.get("task") or task_config.get("name")
    if not name:
        raise ValueError("the run names no task (no metadata task, no config.yaml task.name)")
    params = {**(task_config.get("params") or {}),
              **sources.read_only_arguments(tasks.lookup(name))}  # never download or generate
    task = tasks.from_config(TaskConfig(
        name=name, data_dir=data_dir or task_config.get("data_dir"),
        max_len=metadata.get("max_len") or task_config.get("max_len"), params=params))
    tokens, labels = [], []
    for inputs, label in task.load_split("test").as_numpy_iterator():
        tokens.append(np.stack(inputs) if isinstance(inputs, tuple) else inputs[None])
        labels.append(int(label))
    if not tokens:
        raise ValueError(f"{name} test split is empty")
    return Instances.from_tokens(np.stack(tokens), np.asarray(labels),
                                 f"{name} test split, {len(tokens)} instances")


def generated(metadata, count, seed, reason):
    """`count` random token sequences of the model's full max_len (ids avoid padding), no labels."""
    missing = [k for k in ("max_len", "vocab_size") if not metadata.get(k)]
    if missing:
        raise ValueError(f"cannot generate tokens: the model metadata lacks {', '.join(missing)}")
    low = 0 if metadata.get("padding_id", 0) is None else 1
    shape = (count, int(metadata.get("num_inputs") or 1), int(metadata["max_len"]))
    tokens = np.random.default_rng(seed).integers(low, int(metadata["vocab_size"]), shape)
    source = (f"generated tokens: {count} random sequences of {shape[2]} ids, seed {seed}, "
              f"no labels ({reason})")
    return Instances.from_tokens(tokens, None, source)
