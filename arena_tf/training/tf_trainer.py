"""The training loop on tf.distribute: one custom loop over `strategy.run` inside `tf.function`
serves every strategy (Keras 3's `model.fit` fails under MultiWorkerMirroredStrategy,
keras-team/keras#20585). The run directory holds config.yaml, TensorBoard events (train/,
validation/), checkpoints/, metrics.json and model.keras; only the chief process writes it.

Resuming: a run started again with the same run directory continues from its newest checkpoint at
the same step, data position (the training stream is replayed up to that step) and random state
(the dropout seed generators are model variables, so the checkpoint holds them): it ends with the
same weights as a run never interrupted. An unreadable (e.g. truncated) newest checkpoint is
skipped, with one warning, for the newest intact one. The settings must be the same, except the
loop settings in `run_dir.ADJUSTABLE` (e.g. a lower train.learning_rate after the loss diverged, or
more train.num_train_steps). With several workers, every worker resumes from the chief's
checkpoints/, so the run directory must be on a filesystem they all see.
"""

import contextlib
import pathlib
import resource
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

import keras

from arena_tf import files
from arena_tf.distribute import is_chief
from arena_tf.models import build_classifier
from arena_tf.progress import duration
from arena_tf.schedules import make_optimizer
from arena_tf.training.console import Progress
from arena_tf.training.errors import (Interrupted, RunDirError, TrainingError, first_line,
                                      op_error_cause)
from arena_tf.training.verdict import summary, verdict
from arena_tf.training.run_dir import (RunLock, check_same_experiment, checkpoint_steps,
                                       first_existing, remove_created, stale_artifacts)

def peak_memory_mb():
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Window:
    """Sums of (loss, correct, examples, examples of each class) and time over some steps."""

    def __init__(self, size):
        self.sums, self.steps, self.seconds = np.zeros(size), 0, 0.0

    def add(self, sums, seconds, steps=1):
        self.sums += sums
        self.steps += steps
        self.seconds += seconds

    def scalars(self):
        """The TensorBoard scalars this window gives (all but learning_rate and peak_memory_mb)."""
        loss_sum, correct, count = self.sums[:3]
        seconds = max(self.seconds, 1e-9)
        return {"loss": loss_sum / max(count, 1), "accuracy": correct / max(count, 1),
                "steps_per_second": self.steps / seconds, "examples_per_second": count / seconds}


class Trainer:
    """The loop: distributed steps, TensorBoard, evaluation, checkpoints, final artifacts.

    Building one writes nothing: it checks the run directory (another configuration's checkpoints
    are refused) and builds the model. `fit` locks the run directory, saves the config and trains.
    """

    def __init__(self, config, task, run_dir, strategy, verbose=True, progress=None):
        self.config, self.task, self.strategy = config, task, strategy
        self.train = config.train
        self.chief = is_chief(strategy)
        self.verbose = verbose and self.chief
        self.run_dir = pathlib.Path(run_dir)
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise RunDirError(f"cannot write to run directory {self.run_dir} (a file is there)",
                              "a directory", "choose another --run_dir")
        check_same_experiment(self.run_dir, config)  # early; checked again under the lock
        self.progress = progress or Progress(self.train.num_train_steps, self.verbose)
        self.progress.total = self.train.num_train_steps
        keras.mixed_precision.set_global_policy(self.train.precision)
        keras.utils.set_random_seed(self.train.seed)
        with strategy.scope():
            self.model = build_classifier(config.model)
            self.optimizer = make_optimizer(self.train)
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        # model.variables includes the dropout SeedGenerator states: resuming restores them.
        self.checkpoint = tf.train.Checkpoint(
            step=self.step,
            model=[v.value for v in self.model.variables],
            optimizer=[v.value for v in self.optimizer.variables],
        )
        self._scratch = None
        self.running = None  # the step under way (1-based), for error messages
        self._committed = False  # whether this run wrote into the run directory yet
        self.manager = None
        self.writers = None
        self.metrics = None

    @property
    def _sums_size(self):
        """(loss sum, correct, examples) and the examples of each class."""
        return 3 + self.config.model.num_classes

    def _window(self):
        return Window(self._sums_size)

    @property
    def checkpoint_dir(self):
        return self.run_dir / "checkpoints"

    # -- distributed computations ---------------------------------------------------------------

    def _sums(self, inputs, labels, training):
        logits = self.model(inputs, training=training)
        losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
        count = tf.cast(tf.size(labels), tf.float32)
        classes = self.config.model.num_classes
        per_class = tf.math.bincount(labels, minlength=classes, maxlength=classes, dtype=tf.float32)
        return losses, tf.concat([[tf.reduce_sum(losses), tf.reduce_sum(correct), count],
                                  per_class], 0)

    def _train_replica(self, inputs, labels):
        with tf.GradientTape() as tape:
            losses, sums = self._sums(inputs, labels, training=True)
            loss = tf.nn.compute_average_loss(losses, global_batch_size=self.train.batch_size)
            scaled = self.optimizer.scale_loss(loss)
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(scaled, variables), variables))
        return sums

    @tf.function
    def _train_step(self, iterator):
        sums = self.strategy.run(self._train_replica, args=next(iterator))
        self.step.assign_add(1)
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)

    @tf.function
    def _eval_batch(self, iterator):
        """(loss sum, correct, examples) of the iterator's next batch and whether there was one;
        one trace per split whatever the size of the last batch (the iterator's spec has no batch
        size), and every worker takes the same branch (the distributed optional agrees)."""
        optional = iterator.get_next_as_optional()

        def batch_sums():
            sums = self.strategy.run(lambda x, y: self._sums(x, y, training=False)[1],
                                     args=optional.get_value())
            return self.strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)

        has_value = optional.has_value()
        return tf.cond(has_value, batch_sums, lambda: tf.zeros(self._sums_size)), has_value

    def _distribute(self, dataset):
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        return self.strategy.experimental_distribute_dataset(dataset.with_options(options))

    # -- phases ---------------------------------------------------------------------------------

    def evaluate(self, split, max_batches=None, what=None):
        """{'loss', 'accuracy', 'examples', 'steps_per_second', 'examples_per_second'} over a
        split (or its first max_batches batches); progress names `what` and the batches done."""
        data = self.task.dataset(split, self.train.batch_size, shuffle=False)
        if max_batches:
            data = data.take(max_batches)
        known = int(data.cardinality())
        window, sums, batches = self._window(), 0.0, 0
        began = time.perf_counter()
        with self.progress.working(what or f"evaluating {split}",
                                   of=known if known > 0 else max_batches):
            iterator = iter(self._distribute(data))
            while True:
                batch, more = self._eval_batch(iterator)
                if not bool(more):
                    break
                sums += batch.numpy()
                batches += 1
                self.progress.advance()
        window.add(sums, time.perf_counter() - began, batches)
        per_class = window.sums[3:]
        return {**window.scalars(), "examples": int(window.sums[2]),
                "chance": float(per_class.max() / max(per_class.sum(), 1))}

    def resume(self):
        """Restore the newest readable checkpoint of the chief's checkpoints/, if any (an
        unreadable newer one is skipped with a warning); the step it holds."""
        steps = checkpoint_steps(self.checkpoint_dir)
        broken = []
        for step in steps:
            prefix = str(self.checkpoint_dir / f"ckpt-{step}")
            reason = unreadable(prefix)
            if reason is None:
                try:
                    self.checkpoint.restore(prefix).assert_existing_objects_matched()
                except (tf.errors.OpError, AssertionError, ValueError, IndexError) as error:
                    reason = first_line(error)
            if reason is None:
                if broken and self.verbose:
                    names = ", ".join(pathlib.Path(path).name for path, _ in broken)
                    print(f"warning: checkpoint {names} in {self.checkpoint_dir} is unreadable "
                          f"({broken[0][1]}); resuming from the newest intact one, {prefix}",
                          file=sys.stderr, flush=True)
                self.say(f"resumed from {prefix} at step {self.current_step()}")
                return self.current_step()
            broken.append((prefix, reason))
        if broken:
            names = ", ".join(pathlib.Path(path).name for path, _ in broken)
            raise RunDirError(
                f"no checkpoint in {self.checkpoint_dir} can be read ({names}: {broken[0][1]})",
                "an intact checkpoint to resume from",
                f"delete {self.checkpoint_dir} to start again from step 0, or choose another "
                "--run_dir",
            )
        return self.current_step()

    def current_step(self):
        return int(self.step.numpy())

    def say(self, text):
        if self.verbose:
            self.progress.note(text)

    def _write_scalars(self, split, step, scalars):
        """One TensorBoard point per scalar, with the learning rate and peak memory added."""
        lr = self.optimizer.learning_rate
        scalars = {**scalars, "learning_rate": float(lr(step) if callable(lr) else lr),
                   "peak_memory_mb": peak_memory_mb()}
        with self.writers[split].as_default(step=step):
            for name, value in scalars.items():
                tf.summary.scalar(name, value)

    def _log_train(self, step, window):
        scalars = window.scalars()
        self._write_scalars("train", step, scalars)
        self.progress.update(step, {"loss": scalars["loss"], "accuracy": scalars["accuracy"],
                                    "steps/s": scalars["steps_per_second"]})

    def _validate(self, step):
        result = self.evaluate("validation", self.train.eval_batches,
                               what=f"validation at step {step}")
        self._write_scalars("validation", step, {k: v for k, v in result.items() if k not in ("examples", "chance")})
        self.say(f"step {step}: validation loss {result['loss']:.4f}, "
                 f"accuracy {result['accuracy']:.4f}")
        return result

    def _resume_hint(self):
        """Where a rerun with the same --run_dir would start."""
        steps = checkpoint_steps(self.checkpoint_dir)
        if not steps:
            return "no checkpoint was written yet, so a rerun starts from step 0"
        return ("rerun with the same --run_dir to resume from its last checkpoint "
                f"{self.checkpoint_dir / f'ckpt-{steps[0]}'}")

    def _stop(self, step, what):
        """TrainingError for a diverged run: the step, and where a rerun would resume."""
        raise TrainingError(
            f"{what} at step {step}", "finite losses and weights",
            f"lower train.learning_rate or set train.grad_clip, and {self._resume_hint()}",
        )

    def _save(self, step):
        """Checkpoint `step`, unless the weights are no longer finite (then stop)."""
        if not all(np.isfinite(v.numpy()).all() for v in self.model.trainable_variables):
            self._stop(step, "the weights became inf or nan")
        with self.progress.working(f"saving checkpoint {step}"):
            self.manager.save(checkpoint_number=step)

    # -- the run directory, claimed ---------------------------------------------------------------

    @contextlib.contextmanager
    def _claimed(self):
        """Lock the run directory (chief) and check it again under the lock; yield {key: change}
        of the ADJUSTABLE settings. Until `_commit` writes, a failure leaves the directory as it
        was (one this run made is removed)."""
        if not self.chief:
            yield check_same_experiment(self.run_dir, self.config)
            return
        existing = first_existing(self.run_dir)
        lock = RunLock(self.run_dir)
        self._committed = False
        try:
            try:
                self.run_dir.mkdir(parents=True, exist_ok=True)
                lock.acquire()
            except OSError as error:
                raise RunDirError(
                    f"cannot write to run directory {self.run_dir} ({error.strerror or error})",
                    "a directory this user can create and write", "choose another --run_dir",
                ) from None
            yield check_same_experiment(self.run_dir, self.config)
        finally:
            lock.release()
            if not self._committed:
                remove_created(self.run_dir, existing)

    def _commit(self, changed):
        """The first writes (chief): replace what a start without checkpoint left, save
        config.yaml (again when ADJUSTABLE settings changed)."""
        if not self.chief:
            return
        self._committed = True
        if not checkpoint_steps(self.checkpoint_dir):
            stale = stale_artifacts(self.run_dir)
            if any(path.name != "config.yaml" for path in stale):
                self.say(f"starting afresh in {self.run_dir}: it holds no checkpoint to resume "
                         "from, so the files of an earlier start are replaced")
            for path in stale:
                path.unlink()
        if changed or not (self.run_dir / "config.yaml").exists():
            files.write_text(self.run_dir / "config.yaml", self.config.to_yaml())

    def _where(self):
        """'at step N' (the step under way), or where the run was before its loop."""
        if self.running:
            return f"at step {self.running}"
        return "before its first step"

    def _open(self):
        """Checkpoint manager and TensorBoard writers (the chief's in the run directory)."""
        # Non-chief workers take part in saving (collectives) but into a private directory.
        if not self.chief:
            self._scratch = tempfile.TemporaryDirectory(prefix="arena_tf_worker_")
        directory = self.checkpoint_dir if self.chief else self._scratch.name
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=self.train.keep_checkpoints
        )
        self.writers = {
            split: tf.summary.create_file_writer(str(self.run_dir / split))
            if self.chief
            else tf.summary.create_noop_writer()
            for split in ("train", "validation")
        }

    def fit(self):
        """Train to num_train_steps (resuming if possible), evaluate, write the artifacts."""
        try:
            with self._claimed() as changed:
                with self.progress.working("restoring the checkpoint"):
                    start = self.resume()
                for key, change in changed.items():
                    self.say(f"resuming with {key} changed: {change}")
                self._commit(changed)
                self._open()
                if start:
                    left = self.train.num_train_steps - start
                    self.say(f"{left} of {self.train.num_train_steps} steps to go" if left > 0 else
                             f"all {self.train.num_train_steps} steps done: evaluating only")
                try:
                    return self._loop(start)
                finally:
                    for writer in self.writers.values():
                        writer.close()
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted{f' at step {self.running}' if self.running else ''}",
                "the run to reach its last step", self._resume_hint(),
            ) from None
        except tf.errors.ResourceExhaustedError as error:
            raise TrainingError(
                f"out of memory {self._where()} ({op_error_cause(error)})",
                "a batch and model that fit in memory",
                f"lower train.batch_size or the model's size; {self._resume_hint()}",
            ) from None
        except tf.errors.OpError as error:
            raise TrainingError(
                f"TensorFlow stopped the run {self._where()}: {op_error_cause(error)}",
                "every step to run", f"rerun with --debug for the details; {self._resume_hint()}",
            ) from None
        finally:
            self.progress.close()

    def _loop(self, start):
        total = self.train.num_train_steps
        data = self.task.dataset("train", self.train.batch_size, repeat=True).skip(start)
        iterator = iter(self._distribute(data))
        began, trained, window = time.perf_counter(), self._window(), self._window()
        validation = None
        for step in range(start + 1, total + 1):
            self.running = step
            tick = time.perf_counter()
            if step == start + 1:
                with self.progress.working(
                    "compiling the training step",
                    announce="compiling the training step (the first step builds the graph; "
                             "later steps are faster)"):
                    sums = self._train_step(iterator).numpy()
                self.say(f"first step done in {duration(time.perf_counter() - tick)}")
            else:
                sums = self._train_step(iterator).numpy()
            if not np.isfinite(sums[0]):
                self._stop(step, f"the training loss became {sums[0]}")
            window.add(sums, time.perf_counter() - tick)
            trained.add(sums, time.perf_counter() - tick)
            if step % self.train.log_every == 0 or step == total:
                self._log_train(step, window)
                window = self._window()
            self.progress.stepped(step)
            if step % self.train.eval_every == 0 or step == total:
                validation = self._validate(step)
            if step % self.train.checkpoint_every == 0 or step == total:
                self._save(step)
        return self.finish(validation, trained, time.perf_counter() - began)

    def finish(self, validation, trained, wall):
        """Test evaluation, metrics.json and model.keras (chief only, written atomically)."""
        validation = validation or self.evaluate("validation", self.train.eval_batches,
                                                 what="validation")
        test = self.evaluate("test", what="test")
        self.metrics = {
            "task": self.config.task.name,
            "model": self.config.model.attention,
            "steps": self.current_step(),
            "trained_steps": trained.steps,
            "test_accuracy": test["accuracy"],
            "test_loss": test["loss"],
            "test_examples": test["examples"],
            "test_chance": test["chance"],
            "test_verdict": verdict(test["accuracy"], test["chance"], test["examples"]),
            "validation_accuracy": validation["accuracy"],
            "validation_loss": validation["loss"],
            "wall_time_s": wall,
            "examples_per_second": trained.scalars()["examples_per_second"] if trained.steps else None,
            "parameters": self.model.count_params(),
            "peak_memory_mb": peak_memory_mb(),
            "replicas": self.strategy.num_replicas_in_sync,
        }
        if self.chief:
            files.write_json(self.run_dir / "metrics.json", self.metrics)
            with self.progress.working("writing model.keras"):
                with files.atomic_path(self.run_dir / "model.keras") as tmp:
                    self.model.save(tmp)
        else:
            self._scratch.cleanup()
        self.say(f"{summary(test['accuracy'], test['chance'], test['examples'])}; run directory "
                 f"{self.run_dir}")
        return self.metrics


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
