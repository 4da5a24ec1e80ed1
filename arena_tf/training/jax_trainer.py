"""The training loop on JAX (`loop.Loop` holds what every backend shares), without TensorFlow.

One step is a `jax.jit` of Keras' stateless calls: `model.stateless_call` inside `jax.grad`, then
`optimizer.stateless_apply`; the model, optimizer and dropout-seed states travel through the step
as arrays and are written back into the Keras variables only to checkpoint and save. The data comes
from the tasks' backend-neutral batches (`Task.batches`, NumPy), which continue at any step's batch,
so a resumed run replays nothing. Checkpoints are one NumPy archive per step (`ckpt-STEP.npz`: the
step, every model variable, seed states included, and every optimizer variable), written
atomically; TensorBoard events are written by arena_tf/training/events.py with the tensorboard
package's own event writer, in the format tf.summary writes (as under TensorFlow).

Distribution is keras.distribution: `--strategy=mirrored` (or `auto` with several local devices) is
DataParallel over the local devices, the batch split across them and the variables replicated;
`--cpu-devices=N` makes N CPU devices first (it must happen before JAX starts its devices).
`--tpu` names TensorFlow's TPUStrategy and is refused in one line.

Several processes (hosts): `--strategy=multi_worker`, or a `cluster.Cluster` (--coordinator,
--num-processes, --process-id), joins them with `jax.distributed.initialize` (CPU collectives
through gloo), then DataParallel spans every device of every process. Each process reads only its
part of each global batch (`Task.batches(shard=...)`: the global batches do not depend on the
number of processes); process 0 alone writes the run directory, and on resuming reads its
checkpoint and hands it to the others (`multihost_utils.broadcast_one_to_all`), so the others need
no shared filesystem. When another process dies, JAX's collectives fail in the next step: one line,
and `leave` ends the process without JAX's shutdown barrier (which would wait for the dead one and
then abort). When process 0 itself dies, JAX's runtime ends the others at once with its own fatal
report.
"""

import contextlib
import itertools
import math
import os
import sys
import threading
import types

import jax
import keras
import numpy as np
from keras import ops

from arena_tf import cli, files
from arena_tf.tasks import SPLITS
from arena_tf.training import events
from arena_tf.training.cluster import Cluster
from arena_tf.training.errors import StrategyError, TrainingError, first_line
from arena_tf.training.loop import Loop, cpu_device

# TensorBoard's file I/O uses TensorFlow when it can import it (looked up at the first write, not at
# import); this module (TensorBoard's own switch for builds without TensorFlow) makes it use its
# pure-Python stand-in, so a JAX run never loads TensorFlow, also where both are installed.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))


# What gloo says when a collective loses a peer (JAX raises it as a ValueError).
COLLECTIVE_FAILURE = "Gloo"


def split_cpu(count):
    """Make `count` CPU devices (once per process, before JAX starts its devices; JAX refuses
    the setting afterwards, which is fine when the count is already the one asked for)."""
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:
        if len(jax.devices("cpu")) != count:
            raise StrategyError(
                f"cannot split the CPU into {count} devices: JAX already started its devices in "
                "this process",
                "--cpu-devices before JAX uses any device",
                "pass --cpu-devices at the start of a fresh process",
            ) from None


def join(cluster):
    """Join the processes of `cluster` (a `cluster.Cluster`) with jax.distributed.initialize, CPU
    collectives through gloo. Waits at most cluster.timeout seconds for them all: then one line
    and exit 2 from this process (JAX's own deadline would abort it with a C++ report, and the
    wait cannot be interrupted from Python)."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")

    def give_up():
        cli.report(
            StrategyError(
                f"the processes of the run did not all join within {cluster.timeout} s "
                f"({cluster.describe()})",
                "every process started with the same --coordinator and "
                "--num-processes and its own --process-id",
                "start the missing processes, check that "
                "this host reaches the coordinator's address and port, or raise --join-timeout",
            )
        )
        sys.stdout.flush()
        os._exit(2)

    watchdog = threading.Timer(cluster.timeout, give_up)
    watchdog.daemon = True
    watchdog.start()
    try:
        jax.distributed.initialize(
            cluster.coordinator,
            cluster.processes,
            cluster.process_id,
            initialization_timeout=cluster.timeout + 60,
        )
    except (ValueError, RuntimeError) as error:  # nothing to detect, or already joined
        raise StrategyError(
            f"JAX could not join the run's processes: {first_line(error)}",
            "a cluster JAX detects (Cloud TPU, SLURM) or one the flags name",
            "pass --coordinator, --num-processes and --process-id",
        ) from None
    finally:
        watchdog.cancel()


def leave(code):
    """The exit status `code`, after which a multi-process run that failed ends at once: JAX's
    shutdown at exit waits for every process at a barrier, and aborts with a C++ report when one
    of them is gone."""
    if code and jax.distributed.is_initialized():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


class Distribution:
    """What --strategy means under JAX: keras.distribution.DataParallel over the local devices
    (`mirrored`, or `auto` with several), over every process's devices (`multi_worker`, or a
    `cluster`), else one device (`default`, or `auto` with one)."""

    def __init__(self, kind="auto", tpu=None, cpu_devices=None, cluster=None):
        if tpu:
            raise StrategyError(
                "--tpu names TensorFlow's TPUStrategy, which JAX does not use",
                "no --tpu under KERAS_BACKEND=jax (a TPU VM's chips are local devices to JAX)",
                "drop --tpu and pass --strategy=mirrored, or train with KERAS_BACKEND=tensorflow",
            )
        if cpu_devices:
            split_cpu(cpu_devices)
        if kind == "multi_worker" or cluster is not None:
            join(cluster or Cluster())
        devices = jax.devices()  # every process's (the local ones in a one-process run)
        self.processes, self.process = jax.process_count(), jax.process_index()
        parallel = kind == "mirrored" or self.processes > 1 or kind == "auto" and len(devices) > 1
        self.keras_distribution = (
            keras.distribution.DataParallel(devices=devices) if parallel else None
        )
        self.devices = devices if parallel else devices[:1]
        self.replicas = len(self.devices)
        self.chief = self.process == 0

    def describe(self):
        platform = self.devices[0].platform.upper()
        hardware = "; CPU only (no GPU or TPU found)" if platform == "CPU" else ""
        name = "DataParallel" if self.keras_distribution else "one device"
        processes = (
            f" in {self.processes} processes (this one: {self.process})"
            if self.processes > 1
            else ""
        )
        return (
            f"{name} (keras.distribution, JAX) with {self.replicas} replica(s){processes} on "
            f"{', '.join(str(d) for d in self.devices)}{hardware}"
        )

    def shard(self):
        """(index, count): this process's part of each global batch (`Task.batches`)."""
        return self.process, self.processes

    def device(self):
        """What results name the device: the accelerator's kind (x replicas), else the CPU."""
        first = self.devices[0]
        return cpu_device() if first.platform == "cpu" else f"{first.device_kind} x{self.replicas}"

    def scope(self):
        return (
            self.keras_distribution.scope()
            if self.keras_distribution
            else (contextlib.nullcontext())
        )

    def place(self, batch):
        """A training batch split over the replicas (as it is, on one device): this process's
        part of the global batch, the parts of all processes making one array."""
        if not self.keras_distribution:
            return batch

        def place(x):
            shape = (x.shape[0] * self.processes, *x.shape[1:])
            layout = self.keras_distribution.get_data_layout(shape).backend_layout
            return jax.make_array_from_process_local_data(layout, x, shape)

        return jax.tree_util.tree_map(place, batch)


class Trainer(Loop):
    """The loop on JAX, on one device or DataParallel (`Distribution`)."""

    checkpoint_format = "jax"

    def _scope(self):
        return self.distribution.scope()

    def _after_build(self):
        if self.train.batch_size % self.distribution.replicas:
            raise StrategyError(
                f"train.batch_size={self.train.batch_size} does not split over "
                f"{self.distribution.replicas} replicas",
                "a batch size divisible by the number of replicas",
                "change train.batch_size, --cpu-devices or --num-processes",
            )
        self._step = 0
        self._state = self._variables_state()
        self._jit_train = jax.jit(self._stateless_train_step)
        self._jit_eval = jax.jit(self._stateless_eval_sums)

    def current_step(self):
        return self._step

    # -- the stateless computations ---------------------------------------------------------------

    def _variables_state(self):
        """(trainable, non-trainable, optimizer) values, read from the Keras variables."""
        return tuple(
            [v.value for v in variables]
            for variables in (
                self.model.trainable_variables,
                self.model.non_trainable_variables,
                self.optimizer.variables,
            )
        )

    def _sync_variables(self):
        for variables, values in zip(
            (
                self.model.trainable_variables,
                self.model.non_trainable_variables,
                self.optimizer.variables,
            ),
            self._state,
        ):
            for variable, value in zip(variables, values):
                variable.assign(value)

    def _sums(self, logits, labels):
        """The per-example losses and (loss sum, correct, examples, examples of each class)."""
        losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        correct = ops.cast(ops.equal(ops.argmax(logits, -1), labels), "float32")
        per_class = ops.sum(ops.one_hot(labels, self.config.model.num_classes), axis=0)
        count = ops.cast(ops.shape(labels)[0], "float32")
        return losses, ops.concatenate(
            [
                ops.stack([ops.sum(ops.cast(losses, "float32")), ops.sum(correct), count]),
                ops.cast(per_class, "float32"),
            ]
        )

    def _stateless_train_step(self, state, inputs, labels):
        trainable, non_trainable, optimizer_values = state

        def scaled_loss(trainable):
            logits, updated = self.model.stateless_call(
                trainable, non_trainable, inputs, training=True
            )
            losses, sums = self._sums(logits, labels)
            loss = ops.sum(losses) / self.train.batch_size
            mapping = list(zip(self.optimizer.variables, optimizer_values))
            with keras.StatelessScope(state_mapping=mapping):
                loss = self.optimizer.scale_loss(loss)
            return loss, (updated, sums)

        grads, (non_trainable, sums) = jax.grad(scaled_loss, has_aux=True)(trainable)
        trainable, optimizer_values = self.optimizer.stateless_apply(
            optimizer_values, grads, trainable
        )
        return (trainable, non_trainable, optimizer_values), sums

    def _stateless_eval_sums(self, trainable, non_trainable, inputs, labels):
        logits, _ = self.model.stateless_call(trainable, non_trainable, inputs, training=False)
        return self._sums(logits, labels)[1]

    # -- the loop's steps -------------------------------------------------------------------------

    def _train_stream(self, start):
        return self.task.batches(
            "train",
            self.train.batch_size,
            repeat=True,
            start=start,
            length_buckets=self.train.length_buckets,
            shard=self.distribution.shard(),
        )

    def _train_step(self, stream):
        inputs, labels = self.distribution.place(next(stream))
        self._state, sums = self._jit_train(self._state, inputs, labels)
        self._step += 1
        return np.asarray(sums)

    def _eval_batches(self, split, max_batches):
        """(number of batches, an iterator of each batch's sums)."""
        size = len(self.task.held_arrays(split)[1])
        known = math.ceil(size / self.train.batch_size)
        batches = self.task.batches(split, self.train.batch_size, shuffle=False)
        if max_batches:
            known = min(known, max_batches)
            batches = itertools.islice(batches, max_batches)
        trainable, non_trainable, _ = self._state
        return known, (
            np.asarray(self._jit_eval(trainable, non_trainable, inputs, labels))
            for inputs, labels in batches
        )

    # -- checkpoints and TensorBoard --------------------------------------------------------------

    def _checkpointed(self):
        """{name: variable} of everything a checkpoint holds, in a fixed order."""
        named = {f"model/{i}": v for i, v in enumerate(self.model.variables)}
        named.update({f"optimizer/{i}": v for i, v in enumerate(self.optimizer.variables)})
        return named

    def _write_checkpoint(self, step):
        if not self.chief:  # the state is replicated: process 0's copy is every process's
            return
        arrays = {name: keras.ops.convert_to_numpy(v) for name, v in self._checkpointed().items()}
        with files.atomic_path(self.checkpoint_path(step)) as tmp:
            with open(tmp, "wb") as stream:
                np.savez(stream, step=np.int64(step), **arrays)
        kept = sorted(
            self.checkpoint_dir.glob("ckpt-*.npz"),
            key=lambda path: int(path.stem[len("ckpt-") :]),
            reverse=True,
        )
        for old in kept[self.train.keep_checkpoints :]:
            old.unlink(missing_ok=True)

    def _restore(self, path):
        """None when the checkpoint at `path` was restored, else why it cannot be read."""
        variables = self._checkpointed()
        try:
            with np.load(path) as archive:
                arrays = {name: archive[name] for name in [*variables, "step"]}
        except Exception as error:  # noqa: BLE001 (any failure to read means unreadable)
            return first_line(error)
        for name, variable in variables.items():
            if tuple(arrays[name].shape) != tuple(variable.shape):
                return (
                    f"{name} has shape {list(arrays[name].shape)}, the model's "
                    f"{list(variable.shape)}"
                )
        self._step = int(arrays["step"])
        if self.distribution.processes > 1:  # `resume` assigns them in every process at once
            self._restored = [arrays[name] for name in variables]
            return None
        for name, variable in variables.items():
            variable.assign(arrays[name])
        self._state = self._variables_state()
        return None

    def resume(self):
        """The loop's resume on process 0, whose step and state then go to every process."""
        if self.distribution.processes == 1:
            return super().resume()
        from jax.experimental import multihost_utils

        variables = list(self._checkpointed().values())
        self._restored = None
        if self.chief:  # reads its checkpoint into self._restored, assigning nothing yet
            super().resume()
        values = self._restored or [keras.ops.convert_to_numpy(v) for v in variables]
        values, step = multihost_utils.broadcast_one_to_all(
            (values, np.int64(self._step)), is_source=self.chief
        )
        for variable, value in zip(variables, values):  # every process, as sharding needs
            variable.assign(np.asarray(value))
        self._step = int(step)
        self._state = self._variables_state()
        return self._step

    def _open_writers(self):
        if self.chief:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        return events.open_writers(self.run_dir, self.chief)

    @contextlib.contextmanager
    def _backend_failures(self):
        """JAX's runtime errors as one-line TrainingErrors (out of memory named)."""
        try:
            yield
        except (jax.errors.JaxRuntimeError, ValueError) as error:
            cause = first_line(error)
            if self.distribution.processes > 1 and COLLECTIVE_FAILURE in cause:
                raise TrainingError(
                    f"another process of the run stopped {self._where()}: {cause[:200]}",
                    "every process to run every step",
                    "see the other processes' output for "
                    f"why, then start them all again; {self._resume_hint()}",
                ) from None
            if not isinstance(error, jax.errors.JaxRuntimeError):
                raise
            what = "out of memory" if "RESOURCE_EXHAUSTED" in cause else "JAX stopped the run"
            raise TrainingError(
                f"{what} {self._where()}: {cause}",
                "every step to run",
                f"lower train.batch_size or the model's size, or rerun with "
                f"--debug for the details; {self._resume_hint()}",
            ) from None


@contextlib.contextmanager
def setup_failures():
    """JAX's runtime errors while the devices or data are set up, as one line."""
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        raise TrainingError(
            f"JAX stopped the run: {first_line(error)}",
            "the run to start",
            "rerun with --debug for the details",
        ) from None


def first_example(task, where):
    """The first training example as NumPy (inputs, label), None for an empty split; every split
    is read first (DataNotFoundError for a missing one)."""
    for split in SPLITS:
        task.arrays(split)
    inputs, labels = task.arrays("train")
    if not len(labels):
        return None
    first = tuple(x[0] for x in inputs) if isinstance(inputs, tuple) else inputs[0]
    return first, labels[0]
