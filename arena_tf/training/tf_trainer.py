"""The training loop on tf.distribute (`loop.Loop` holds what every backend shares): one custom
loop over `strategy.run` inside `tf.function` serves every strategy (Keras 3's `model.fit` fails
under MultiWorkerMirroredStrategy, keras-team/keras#20585). Checkpoints are tf.train.Checkpoint
files (`ckpt-STEP.index` and its shards) written by a CheckpointManager; TensorBoard scalars by
tf.summary. With several workers, every worker resumes from the chief's checkpoints/, so the run
directory must be on a filesystem they all see; non-chief workers take part in saving (collectives)
into a private directory.
"""

import contextlib
import tempfile

import keras
import tensorflow as tf

from arena_tf import distribute
from arena_tf.tasks import SPLITS
from arena_tf.training import events
from arena_tf.training.errors import (
    DataMismatchError,
    RunDirError,
    StrategyError,
    TrainingError,
    first_line,
    op_error_cause,
)
from arena_tf.training.loop import Loop, cpu_device


class Distribution:
    """A tf.distribute strategy as the shared loop sees it: replicas, the chief, one line."""

    def __init__(self, kind="auto", tpu=None, cpu_devices=None, cluster=None):
        if cluster is not None:
            raise StrategyError(
                "--coordinator, --num-processes and --process-id name the processes of a JAX "
                "run; TensorFlow's workers come from TF_CONFIG",
                "TF_CONFIG with --strategy=multi_worker under KERAS_BACKEND=tensorflow",
                "drop those flags and set TF_CONFIG, or train with KERAS_BACKEND=jax",
            )
        self.strategy = distribute.make_strategy(kind, tpu, cpu_devices)
        self.replicas = self.strategy.num_replicas_in_sync
        self.chief = distribute.is_chief(self.strategy)

    def describe(self):
        return distribute.describe(self.strategy)

    def device(self):
        """What results name the device: the GPU's or TPU's name (x replicas), else the CPU."""
        accelerators = tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices(
            "TPU"
        )
        if not accelerators:
            return cpu_device()
        details = tf.config.experimental.get_device_details(accelerators[0])
        return f"{details.get('device_name', accelerators[0].device_type)} x{self.replicas}"


class Trainer(Loop):
    """The loop on a tf.distribute strategy (`Distribution`)."""

    checkpoint_format = "tensorflow"

    def _scope(self):
        return self.distribution.strategy.scope()

    @property
    def strategy(self):
        return self.distribution.strategy

    def _after_build(self):
        with self.strategy.scope():
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # model.variables includes the dropout SeedGenerator states: resuming restores them.
        self.checkpoint = tf.train.Checkpoint(
            step=self.step,
            model=[v.value for v in self.model.variables],
            optimizer=[v.value for v in self.optimizer.variables],
        )
        self._scratch = None
        self.manager = None

    def checkpoint_path(self, step):
        """The checkpoint's prefix (TensorFlow names its files after it)."""
        return self.checkpoint_dir / f"ckpt-{step}"

    def current_step(self):
        return int(self.step.numpy())

    # -- distributed computations ---------------------------------------------------------------

    def _sums(self, inputs, labels, training):
        logits = self.model(inputs, training=training)
        losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
        count = tf.cast(tf.size(labels), tf.float32)
        classes = self.config.model.num_classes
        per_class = tf.math.bincount(labels, minlength=classes, maxlength=classes, dtype=tf.float32)
        return losses, tf.concat(
            [[tf.reduce_sum(losses), tf.reduce_sum(correct), count], per_class], 0
        )

    def _train_replica(self, inputs, labels):
        with tf.GradientTape() as tape:
            losses, sums = self._sums(inputs, labels, training=True)
            loss = tf.nn.compute_average_loss(losses, global_batch_size=self.train.batch_size)
            scaled = self.optimizer.scale_loss(loss)
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(scaled, variables), variables))
        return sums

    @tf.function
    def _distributed_step(self, iterator):
        sums = self.strategy.run(self._train_replica, args=next(iterator))
        self.step.assign_add(1)
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)

    def _train_step(self, iterator):
        return self._distributed_step(iterator).numpy()

    def _train_stream(self, start):
        data = self.task.dataset(
            "train", self.train.batch_size, repeat=True, length_buckets=self.train.length_buckets
        ).skip(start)
        return iter(self._distribute(data))

    @tf.function
    def _eval_batch(self, iterator):
        """(loss sum, correct, examples) of the iterator's next batch and whether there was one;
        one trace per split whatever the size of the last batch (the iterator's spec has no batch
        size), and every worker takes the same branch (the distributed optional agrees)."""
        optional = iterator.get_next_as_optional()

        def batch_sums():
            sums = self.strategy.run(
                lambda x, y: self._sums(x, y, training=False)[1], args=optional.get_value()
            )
            return self.strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)

        has_value = optional.has_value()
        return tf.cond(has_value, batch_sums, lambda: tf.zeros(self._sums_size)), has_value

    def _distribute(self, dataset):
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = (
            tf.data.experimental.AutoShardPolicy.DATA
        )
        return self.strategy.experimental_distribute_dataset(dataset.with_options(options))

    def _eval_batches(self, split, max_batches):
        """(number of batches if known, an iterator of each batch's sums)."""
        data = self.task.dataset(split, self.train.batch_size, shuffle=False)
        if max_batches:
            data = data.take(max_batches)

        def sums():
            iterator = iter(self._distribute(data))
            while True:
                batch, more = self._eval_batch(iterator)
                if not bool(more):
                    return
                yield batch.numpy()

        return int(data.cardinality()), sums()

    # -- checkpoints and TensorBoard --------------------------------------------------------------

    def resume(self):
        check_state_file(self.checkpoint_dir)
        return super().resume()

    def _restore(self, prefix):
        """None when the checkpoint at `prefix` was restored, else why it cannot be read."""
        reason = unreadable(str(prefix))
        if reason is None:
            try:
                self.checkpoint.restore(str(prefix)).assert_existing_objects_matched()
            except (tf.errors.OpError, AssertionError, ValueError, IndexError) as error:
                reason = first_line(error)
        return reason

    def _write_checkpoint(self, step):
        self.manager.save(checkpoint_number=step)

    def _open_writers(self):
        """Checkpoint manager and TensorBoard writers (the chief's in the run directory)."""
        if not self.chief:
            self._scratch = tempfile.TemporaryDirectory(prefix="arena_tf_worker_")
        directory = self.checkpoint_dir if self.chief else self._scratch.name
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=self.train.keep_checkpoints
        )
        return events.open_writers(self.run_dir, self.chief)

    def _finished(self):
        if not self.chief:
            self._scratch.cleanup()

    @contextlib.contextmanager
    def _backend_failures(self):
        """TensorFlow's runtime errors as one-line TrainingErrors (out of memory named)."""
        try:
            yield
        except tf.errors.ResourceExhaustedError as error:
            raise TrainingError(
                f"out of memory {self._where()} ({op_error_cause(error)})",
                "a batch and model that fit in memory",
                f"lower train.batch_size or the model's size; {self._resume_hint()}",
            ) from None
        except tf.errors.OpError as error:
            raise TrainingError(
                f"TensorFlow stopped the run {self._where()}: {op_error_cause(error)}",
                "every step to run",
                f"rerun with --debug for the details; {self._resume_hint()}",
            ) from None


def check_state_file(checkpoint_dir):
    """RunDirError, before anything is written, when checkpoints/checkpoint (TensorFlow's record of
    the newest checkpoint, which its CheckpointManager reads) cannot be read; the run finds its
    checkpoints by their names, so deleting the file loses nothing."""
    state = checkpoint_dir / "checkpoint"
    if not state.is_file():
        return
    try:
        tf.train.get_checkpoint_state(str(checkpoint_dir))
    except Exception as error:  # noqa: BLE001 (any failure to read means unreadable)
        # UnicodeDecodeError, protobuf's text_format.ParseError, ...
        raise RunDirError(
            f"{state} cannot be read ({type(error).__name__}: {first_line(error)[:200]})",
            "TensorFlow's checkpoint state file, as training writes it",
            f"delete {state}: the run resumes from its newest ckpt-N all the same",
        ) from None


@contextlib.contextmanager
def setup_failures():
    """TensorFlow's runtime errors while the devices or data are set up, as one line."""
    try:
        yield
    except tf.errors.OpError as error:
        raise TrainingError(
            f"TensorFlow stopped the run: {op_error_cause(error)}",
            "the run to start",
            "rerun with --debug for the details",
        ) from None


def first_example(task, where):
    """The first training example as NumPy (inputs, label), None for an empty split; every split
    is opened first (DataNotFoundError for a missing one)."""
    for split in SPLITS:
        task.load_split(split)
    try:
        inputs, label = next(iter(task.load_split("train").take(1)))
    except StopIteration:
        return None
    except tf.errors.OpError as error:
        raise DataMismatchError(
            f"{where} cannot be read: {op_error_cause(error)}",
            f"examples of {task.max_len} tokens (task.max_len)",
            "check --data-dir and task.max_len, or delete generated data to generate it again",
        ) from None
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else inputs
    return tf.nest.map_structure(lambda t: t.numpy(), inputs), label.numpy()


def unreadable(prefix):
    """Why the checkpoint at `prefix` cannot be read (every tensor is read), None if it can. A
    damaged file fails in many ways (DataLossError, IndexError on a short read, ...)."""
    try:
        reader = tf.train.load_checkpoint(prefix)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except Exception as error:  # noqa: BLE001 (any failure to read means unreadable)
        return first_line(error)
    return None
