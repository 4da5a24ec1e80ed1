"""Pick the tf.distribute strategy for the machine: TPU, several workers, several GPUs, or one device.

    strategy = make_strategy(tpu=None)     # the rules below, in order
    python -m arena_tf.train ... --tpu=my-tpu       # TPUStrategy
    TF_CONFIG='{"cluster": {"worker": [...]}, "task": {...}}' python -m arena_tf.train ...

1. `--tpu NAME` (or "local"): TPUStrategy on that TPU; a clear error if it cannot be reached.
2. TF_CONFIG naming two or more workers: MultiWorkerMirroredStrategy (one process per machine).
3. Two or more local GPUs: MirroredStrategy over them.
4. Otherwise the default strategy on the one device (a GPU when present, else the CPU).
"""

import json
import os

import tensorflow as tf


class StrategyError(RuntimeError):
    """The requested hardware is absent or unreachable."""


def cluster_workers():
    """Number of workers TF_CONFIG names (0 when unset); a clear error on malformed TF_CONFIG."""
    text = os.environ.get("TF_CONFIG")
    if not text:
        return 0
    try:
        cluster = json.loads(text).get("cluster", {})
    except (ValueError, AttributeError):
        raise StrategyError(
            "TF_CONFIG is not valid JSON; expected e.g. "
            '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}'
        ) from None
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def tpu_strategy(tpu):
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu="" if tpu == "local" else tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, tf.errors.OpError, RuntimeError) as error:
        raise StrategyError(
            f"TPU {tpu!r} could not be reached ({str(error).splitlines()[0]}); check the TPU name "
            "and that this machine is a TPU VM or can reach the TPU, or drop --tpu"
        ) from None
    return tf.distribute.TPUStrategy(resolver)


def make_strategy(tpu=None):
    """The strategy for this machine, by the rules in the module docstring."""
    if tpu:
        return tpu_strategy(tpu)
    if cluster_workers() > 1:
        return tf.distribute.MultiWorkerMirroredStrategy()
    if len(tf.config.list_logical_devices("GPU")) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.get_strategy()


def is_chief(strategy):
    """True on the one process that writes summaries, checkpoints and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not cluster_workers():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type == "chief" or (task_type == "worker" and task_id == 0 and
                                    "chief" not in resolver.cluster_spec().as_dict())


def describe(strategy):
    """One line for the log: strategy, replicas and devices."""
    devices = [d.name for d in tf.config.list_logical_devices() if d.device_type in ("GPU", "TPU")]
    hardware = ", ".join(devices) if devices else "CPU only (no GPU or TPU found)"
    return f"{type(strategy).__name__} with {strategy.num_replicas_in_sync} replica(s); {hardware}"
