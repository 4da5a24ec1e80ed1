"""Pick the tf.distribute strategy: TPU, several workers, several local devices, or one device.

    strategy = make_strategy()                                  # "auto": the rules below
    strategy = make_strategy("mirrored", cpu_devices=2)         # two replicas on this CPU
    python -m arena_tf.train ... --tpu=my-tpu                   # TPUStrategy
    python -m arena_tf.train ... --strategy=mirrored --cpu-devices=2
    TF_CONFIG='{"cluster": {"worker": [...]}, "task": {...}}' python -m arena_tf.train ...

`kind` (the `--strategy` flag) names the strategy; "auto" picks, in order:

1. `tpu` given (`--tpu NAME`, or "local" on a TPU VM): TPUStrategy; a clear error if unreachable.
2. TF_CONFIG naming two or more workers: MultiWorkerMirroredStrategy (one process per machine).
3. Two or more local GPUs (or, without a GPU, logical CPU devices): MirroredStrategy over them.
4. Otherwise the default strategy on the one device (a GPU when present, else the CPU).

"mirrored" asks for MirroredStrategy explicitly: over the local GPUs, or over the CPU's logical
devices when there is no GPU. `cpu_devices=N` splits the CPU into N logical devices first (it must
happen before TensorFlow uses any device, so at the start of a process), which runs the several-
replica code paths on a laptop: the replicas share the same cores, so it is for checking, not speed.
"""

import json
import os

import tensorflow as tf

from arena_tf.training.errors import StrategyError  # noqa: F401 (raised here, named here before)

TF_CONFIG_EXAMPLE = (
    '{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}'
)


def cluster_workers():
    """Number of workers TF_CONFIG names (0 when unset); a clear error on malformed TF_CONFIG."""
    text = os.environ.get("TF_CONFIG")
    if not text:
        return 0
    try:
        cluster = json.loads(text).get("cluster", {})
    except (ValueError, AttributeError):
        raise StrategyError(
            "TF_CONFIG is not valid JSON",
            f"e.g. {TF_CONFIG_EXAMPLE}",
            "fix TF_CONFIG, or unset it to train on this machine alone",
        ) from None
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def split_cpu(count):
    """Make `count` logical CPU devices (once per process, before TensorFlow uses a device)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if len(current or [None]) == count:
        return
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
        )
    except RuntimeError:
        raise StrategyError(
            f"cannot split the CPU into {count} logical devices: TensorFlow already started its "
            "devices in this process",
            "--cpu-devices before TensorFlow uses any device",
            "pass --cpu-devices at the start of a fresh process",
        ) from None


def tpu_strategy(tpu):
    """TPUStrategy on the named TPU ("local": this TPU VM's own)."""
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu="" if tpu == "local" else tpu
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, OSError, tf.errors.OpError, RuntimeError) as error:
        reason = (str(error).splitlines() or [type(error).__name__])[0]
        raise StrategyError(
            f"TPU {tpu!r} could not be reached ({reason})",
            "the name of a TPU this machine can reach ('local' on a TPU VM)",
            "check the TPU name and that this machine is a TPU VM or can reach the TPU, or drop "
            "--tpu",
        ) from None
    return tf.distribute.TPUStrategy(resolver)


def mirrored_strategy():
    """MirroredStrategy over the local GPUs, or over the CPU's logical devices without a GPU."""
    gpus = tf.config.list_logical_devices("GPU")
    devices = gpus or tf.config.list_logical_devices("CPU")
    return tf.distribute.MirroredStrategy([device.name for device in devices])


def multi_worker_strategy():
    """MultiWorkerMirroredStrategy over the workers TF_CONFIG names."""
    if cluster_workers() < 2:
        raise StrategyError(
            "--strategy=multi_worker needs TF_CONFIG naming two or more workers",
            f"TF_CONFIG such as {TF_CONFIG_EXAMPLE}",
            "set TF_CONFIG on every worker, or use --strategy=auto on one machine",
        )
    return tf.distribute.MultiWorkerMirroredStrategy()


def auto_strategy():
    """Several workers, else several GPUs (or logical CPUs), else the one device (rules 2-4)."""
    if cluster_workers() > 1:
        return multi_worker_strategy()
    gpus = tf.config.list_logical_devices("GPU")
    if len(gpus) > 1 or (not gpus and len(tf.config.list_logical_devices("CPU")) > 1):
        return mirrored_strategy()
    return tf.distribute.get_strategy()


STRATEGIES = {
    "auto": auto_strategy,
    "default": tf.distribute.get_strategy,
    "mirrored": mirrored_strategy,
    "multi_worker": multi_worker_strategy,
}


def make_strategy(kind="auto", tpu=None, cpu_devices=None):
    """The strategy `kind` names (see STRATEGIES); `tpu` takes precedence over `kind`."""
    if kind not in STRATEGIES:
        raise StrategyError(
            f"unknown strategy {kind!r}",
            f"one of {', '.join(STRATEGIES)}",
            "pass one of them to --strategy",
        )
    if cpu_devices:
        split_cpu(cpu_devices)
    if tpu:
        return tpu_strategy(tpu)
    return STRATEGIES[kind]()


def is_chief(strategy):
    """True on the one process that writes summaries, checkpoints and exports."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not cluster_workers():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    return task_type == "chief" or (
        task_type == "worker" and task_id == 0 and "chief" not in resolver.cluster_spec().as_dict()
    )


def replica_devices(strategy):
    """Names of the devices the strategy's local replicas run on."""
    try:
        return list(strategy.extended.worker_devices)
    except RuntimeError:  # the default strategy: the first GPU, else the CPU
        return [
            (tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU"))[0].name
        ]


# Class names of strategies whose public name differs.
PUBLIC_NAMES = {
    "CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy",
    "_DefaultDistributionStrategy": "default strategy",
}


def describe(strategy):
    """One line for the log: strategy, replicas and the devices they run on."""
    accelerators = [
        d.name for d in tf.config.list_logical_devices() if d.device_type in ("GPU", "TPU")
    ]
    hardware = "" if accelerators else "; CPU only (no GPU or TPU found)"
    devices = ", ".join(replica_devices(strategy))
    name = type(strategy).__name__
    return (
        f"{PUBLIC_NAMES.get(name, name)} with {strategy.num_replicas_in_sync} replica(s) on "
        f"{devices}{hardware}"
    )
