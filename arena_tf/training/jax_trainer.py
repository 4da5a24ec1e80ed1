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
`multi_worker` and `--tpu` name TensorFlow's strategies and are refused in one line.
"""

import contextlib
import itertools
import math
import sys
import types

import numpy as np

import jax
import keras
from keras import ops

from arena_tf import files
from arena_tf.tasks import SPLITS
from arena_tf.training import events
from arena_tf.training.errors import StrategyError, TrainingError, first_line
from arena_tf.training.loop import Loop, cpu_device

# TensorBoard's file I/O uses TensorFlow when it can import it (looked up at the first write, not at
# import); this module (TensorBoard's own switch for builds without TensorFlow) makes it use its
# pure-Python stand-in, so a JAX run never loads TensorFlow, also where both are installed.
sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))


def split_cpu(count):
    """Make `count` CPU devices (once per process, before JAX starts its devices; JAX refuses
    the setting afterwards, which is fine when the count is already the one asked for)."""
    try:
        jax.config.update("jax_num_cpu_devices", count)
    except RuntimeError:
        if len(jax.devices("cpu")) != count:
            raise StrategyError(
                f"cannot split the CPU into {count} devices: JAX already started its devices in "
                "this process", "--cpu-devices before JAX uses any device",
                "pass --cpu-devices at the start of a fresh process") from None


class Distribution:
    """What --strategy means under JAX: keras.distribution.DataParallel over the local devices
    (`mirrored`, or `auto` with several), else one device (`default`, or `auto` with one)."""

    def __init__(self, kind="auto", tpu=None, cpu_devices=None):
        if tpu:
            raise StrategyError("--tpu names TensorFlow's TPUStrategy, which JAX does not use",
                                "no --tpu under KERAS_BACKEND=jax (a TPU VM's chips are local "
                                "devices to JAX)",
                                "drop --tpu and pass --strategy=mirrored, or train with "
                                "KERAS_BACKEND=tensorflow")
        if kind == "multi_worker":
            raise StrategyError("--strategy=multi_worker is TensorFlow's MultiWorkerMirrored"
                                "Strategy (TF_CONFIG), which JAX does not use",
                                "auto, default or mirrored under KERAS_BACKEND=jax",
                                "train on one machine's devices, or with "
                                "KERAS_BACKEND=tensorflow")
        if cpu_devices:
            split_cpu(cpu_devices)
        devices = jax.local_devices()
        parallel = kind == "mirrored" or (kind == "auto" and len(devices) > 1)
        self.keras_distribution = (keras.distribution.DataParallel(devices=devices)
                                   if parallel else None)
        self.devices = devices if parallel else devices[:1]
        self.replicas = len(self.devices)
        self.chief = jax.process_index() == 0

    def describe(self):
        platform = self.devices[0].platform.upper()
        hardware = "; CPU only (no GPU or TPU found)" if platform == "CPU" else ""
        name = "DataParallel" if self.keras_distribution else "one device"
        return (f"{name} (keras.distribution, JAX) with {self.replicas} replica(s) on "
                f"{', '.join(str(d) for d in self.devices)}{hardware}")

    def device(self):
        """What results name the device: the accelerator's kind (x replicas), else the CPU."""
        first = self.devices[0]
        return cpu_device() if first.platform == "cpu" else f"{first.device_kind} x{self.replicas}"

    def scope(self):
        return self.keras_distribution.scope() if self.keras_distribution else (
            contextlib.nullcontext())

    def place(self, batch):
        """A training batch split over the replicas (as it is, on one device)."""
        if not self.keras_distribution:
            return batch
        return jax.tree_util.tree_map(
            lambda x: jax.device_put(
                x, self.keras_distribution.get_data_layout(x.shape).backend_layout), batch)


class Trainer(Loop):
    """The loop on JAX, on one device or DataParallel (`Distribution`)."""

    checkpoint_format = "jax"

    def _scope(self):
        return self.distribution.scope()

    def _after_build(self):
        if self.train.batch_size % self.distribution.replicas:
            raise StrategyError(
                f"train.batch_size={self.train.batch_size} does not split over "
                f"{self.distribution.replicas} replicas", "a batch size divisible by the "
                "number of replicas", "change train.batch_size or --cpu-devices")
        self._step = 0
        self._state = self._variables_state()
        self._jit_train = jax.jit(self._stateless_train_step)
        self._jit_eval = jax.jit(self._stateless_eval_sums)

    def current_step(self):
        return self._step

    # -- the stateless computations ---------------------------------------------------------------

    def _variables_state(self):
        """(trainable, non-trainable, optimizer) values, read from the Keras variables."""
        return tuple([v.value for v in variables] for variables in (
            self.model.trainable_variables, self.model.non_trainable_variables,
            self.optimizer.variables))

    def _sync_variables(self):
        for variables, values in zip((self.model.trainable_variables,
                                      self.model.non_trainable_variables,
                                      self.optimizer.variables), self._state):
            for variable, value in zip(variables, values):
                variable.assign(value)

    def _sums(self, logits, labels):
        """The per-example losses and (loss sum, correct, examples, examples of each class)."""
        losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        correct = ops.cast(ops.equal(ops.argmax(logits, -1), labels), "float32")
        per_class = ops.sum(ops.one_hot(labels, self.config.model.num_classes), axis=0)
        count = ops.cast(ops.shape(labels)[0], "float32")
        return losses, ops.concatenate(
            [ops.stack([ops.sum(ops.cast(losses, "float32")), ops.sum(correct), count]),
             ops.cast(per_class, "float32")])

    def _stateless_train_step(self, state, inputs, labels):
        trainable, non_trainable, optimizer_values = state

        def scaled_loss(trainable):
            logits, updated = self.model.stateless_call(trainable, non_trainable, inputs,
                                                        training=True)
            losses, sums = self._sums(logits, labels)
            loss = ops.sum(losses) / self.train.batch_size
            mapping = list(zip(self.optimizer.variables, optimizer_values))
            with keras.StatelessScope(state_mapping=mapping):
                loss = self.optimizer.scale_loss(loss)
            return loss, (updated, sums)

        grads, (non_trainable, sums) = jax.grad(scaled_loss, has_aux=True)(trainable)
        trainable, optimizer_values = self.optimizer.stateless_apply(optimizer_values, grads,
                                                                     trainable)
        return (trainable, non_trainable, optimizer_values), sums

    def _stateless_eval_sums(self, trainable, non_trainable, inputs, labels):
        logits, _ = self.model.stateless_call(trainable, non_trainable, inputs, training=False)
        return self._sums(logits, labels)[1]

    # -- the loop's steps -------------------------------------------------------------------------

    def _train_stream(self, start):
        return self.task.batches("train", self.train.batch_size, repeat=True, start=start,
                                 length_buckets=self.train.length_buckets)

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
        return known, (np.asarray(self._jit_eval(trainable, non_trainable, inputs, labels))
                       for inputs, labels in batches)

    # -- checkpoints and TensorBoard --------------------------------------------------------------

    def _checkpointed(self):
        """{name: variable} of everything a checkpoint holds, in a fixed order."""
        named = {f"model/{i}": v for i, v in enumerate(self.model.variables)}
        named.update({f"optimizer/{i}": v for i, v in enumerate(self.optimizer.variables)})
        return named

    def _write_checkpoint(self, step):
        arrays = {name: keras.ops.convert_to_numpy(v) for name, v in self._checkpointed().items()}
        with files.atomic_path(self.checkpoint_path(step)) as tmp:
            with open(tmp, "wb") as stream:
                np.savez(stream, step=np.int64(step), **arrays)
        kept = sorted(self.checkpoint_dir.glob("ckpt-*.npz"),
                      key=lambda path: int(path.stem[len("ckpt-"):]), reverse=True)
        for old in kept[self.train.keep_checkpoints:]:
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
                return (f"{name} has shape {list(arrays[name].shape)}, the model's "
                        f"{list(variable.shape)}")
        for name, variable in variables.items():
            variable.assign(arrays[name])
        self._step = int(arrays["step"])
        self._state = self._variables_state()
        return None

    def _open_writers(self):
        self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        return events.open_writers(self.run_dir)

    @contextlib.contextmanager
    def _backend_failures(self):
        """JAX's runtime errors as one-line TrainingErrors (out of memory named)."""
        try:
            yield
        except jax.errors.JaxRuntimeError as error:
            cause = first_line(error)
            what = "out of memory" if "RESOURCE_EXHAUSTED" in cause else "JAX stopped the run"
            raise TrainingError(f"{what} {self._where()}: {cause}", "every step to run",
                                f"lower train.batch_size or the model's size, or rerun with "
                                f"--debug for the details; {self._resume_hint()}") from None


@contextlib.contextmanager
def setup_failures():
    """JAX's runtime errors while the devices or data are set up, as one line."""
    try:
        yield
    except jax.errors.JaxRuntimeError as error:
        raise TrainingError(f"JAX stopped the run: {first_line(error)}", "the run to start",
                            "rerun with --debug for the details") from None


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
