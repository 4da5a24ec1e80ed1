"""The training precision `train.precision: auto` (the default) resolves to: mixed_bfloat16 where
a GPU is detected (its tensor cores run bf16 matmuls at several times the float32 rate; the
weights stay float32, softmaxes and normalisers are computed in float32, arena_tf/layers/base.py),
float32 elsewhere (a CPU, where bfloat16 has not paid here: `python -m arena_tf.benchmark
precision`). A precision the user names (`--precision`, `train.precision=...`) is kept as named,
and a resumed run keeps the precision its checkpoints were saved in (its config.yaml's), on any
device. The run's config.yaml holds the resolved precision; metrics.json states it and what was
asked (`precision`, `precision_requested`).
"""

import dataclasses
import pathlib

AUTO = "auto"
ON_GPU, ELSEWHERE = "mixed_bfloat16", "float32"


def gpu_detected():
    """Whether this process's Keras backend sees a GPU."""
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return any(device.platform == "gpu" for device in jax.devices())
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_physical_devices("GPU"))
    return False


def resolve(requested, gpu=None):
    """The Keras dtype policy a run trains in: `requested`, unless it is AUTO, which becomes
    ON_GPU where a GPU is detected (`gpu`, or `gpu_detected()` when None) and ELSEWHERE
    otherwise."""
    if requested != AUTO:
        return requested
    return ON_GPU if (gpu_detected() if gpu is None else gpu) else ELSEWHERE


def resolved(config, run_dir, gpu=None):
    """ExperimentConfig `config` with train.precision AUTO resolved: to the precision of the run
    saved in `run_dir` (a resumed run), else by the device (`resolve`)."""
    if config.train.precision != AUTO:
        return config
    saved = saved_precision(run_dir)
    precision = saved if saved not in (None, AUTO) else resolve(AUTO, gpu)
    return dataclasses.replace(config, train=dataclasses.replace(config.train, precision=precision))


def saved_precision(run_dir):
    """train.precision of the config.yaml saved in `run_dir`, or None where there is none."""
    from arena_tf.config import read_run_config

    if not (pathlib.Path(run_dir) / "config.yaml").is_file():
        return None
    return read_run_config(run_dir).train.precision
