"""The training loop every backend shares: the run directory claimed and written, the steps,
logging, validation, checkpoints kept and resumed, and the final artifacts. A backend module
(`tf_trainer`, `jax_trainer`) subclasses `Loop` with what only it knows: how the model and
optimizer are built on its devices, one training step, the sums of one evaluation batch, how a
checkpoint is written and read, and how TensorBoard scalars are written.

The run directory holds config.yaml, TensorBoard events (train/, validation/), checkpoints/,
metrics.json and model.keras; only the chief process writes it. Resuming: a run started again with
the same run directory continues from its newest readable checkpoint at the same step, data position
(the training stream continues at that step's batch) and random state (the dropout seed generators
are model variables, so the checkpoint holds them): it ends with the same weights as a run never
interrupted. An unreadable (e.g. truncated) newest checkpoint is skipped, with one warning, for the
newest intact one. The settings must be the same, except the loop settings in
`run_dir.ADJUSTABLE`.
"""

import contextlib
import os
import pathlib
import resource
import sys
import time

import keras
import numpy as np

from arena_tf import files
from arena_tf.host import cpu_model
from arena_tf.models import build_classifier, state_space_variables
from arena_tf.progress import Progress, duration
from arena_tf.schedules import describe_groups, make_optimizer
from arena_tf.training import auto_precision, events, sessions, utilisation
from arena_tf.training.errors import Interrupted, RunDirError, TrainingError
from arena_tf.training.run_dir import (
    CHECKPOINT_FORMATS,
    RunLock,
    check_same_experiment,
    check_writable,
    checkpoint_steps,
    first_existing,
    remove_created,
    stale_artifacts,
)
from arena_tf.training.verdict import summary, verdict

# The train scalar beside each checkpoint: seconds of training so far, over all the run's sessions.
TRAIN_SECONDS = "train_seconds"
# The exit status of a run that stopped at its --time-limit with a checkpoint to resume from.
EXIT_PAUSED = 3


def cpu_device():
    """This machine's CPU, as results name the device: 'CPU: <model>, <n> cores'."""
    return f"CPU: {cpu_model()}, {os.cpu_count()} cores"


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
        """Loss, accuracy and speed over this window (events.SCALARS' short names)."""
        loss_sum, correct, count = self.sums[:3]
        seconds = max(self.seconds, 1e-9)
        return {
            "loss": loss_sum / max(count, 1),
            "accuracy": correct / max(count, 1),
            "steps_per_second": self.steps / seconds,
            "examples_per_second": count / seconds,
        }


class Loop:
    """The loop: steps, TensorBoard, evaluation, checkpoints, final artifacts.

    Building one writes nothing: it checks the run directory (another configuration's checkpoints
    are refused) and builds the model. `fit` locks the run directory, saves the config and trains.
    With `time_limit` (seconds of training; 0 stops after one step) the loop stops at the first
    step past it, checkpoints
    that step and returns None (`paused` set): the same run resumes from there, so a long run can
    go in chunks (a GPU machine's ten-minute commands).

    Subclasses set `checkpoint_format` (a key of run_dir.CHECKPOINT_FORMATS) and implement
    `_scope`, `_after_build`, `_train_stream(start)`, `_train_step(stream)`, `_eval_batches(split,
    max_batches)`, `_restore(path)`, `_write_checkpoint(step)` and `_open_writers()` (the
    TensorBoard writers of `events.open_writers`); `_backend_failures()` maps their runtime errors.
    TensorBoard: training logs its window's loss and accuracy with the learning rate, speed and
    memory; validation what evaluation measures; the run directory the config, the hyperparameters
    and the test results (arena_tf/training/events.py).
    """

    checkpoint_format = None

    def __init__(
        self, config, task, run_dir, distribution, verbose=True, progress=None, time_limit=None
    ):
        self.precision_requested, gpu = config.train.precision, auto_precision.gpu_detected()
        config = auto_precision.resolved(config, run_dir, gpu)  # auto: bf16 on a GPU
        self.config, self.task, self.distribution = config, task, distribution
        self.time_limit, self.paused = time_limit, False
        self.train = config.train
        self.chief = distribution.chief
        self.verbose = verbose and self.chief
        self.run_dir = pathlib.Path(run_dir)
        check_writable(self.run_dir)
        check_same_experiment(self.run_dir, config)  # early; checked again under the lock
        self.progress = progress or Progress.steps(self.train.num_train_steps, self.verbose)
        self.progress.total = self.train.num_train_steps
        self.precision = self.train.precision
        keras.mixed_precision.set_global_policy(self.precision)
        self.utilisation = utilisation.for_run(config, gpu)  # None off a GPU
        keras.utils.set_random_seed(self.train.seed)
        with self._scope():
            self.model = build_classifier(config.model, remat=config.train.remat)
            state_space = state_space_variables(self.model)
            self.optimizer = make_optimizer(self.train, state_space)
            self.optimizer.build(self.model.trainable_variables)
        self.optimizer_groups = describe_groups(self.train, state_space)
        self.running = None  # the step under way (1-based), for error messages
        self._seconds_before, self._began = 0.0, None  # training time of earlier sessions; start
        self._sessions = []  # [(start step, device)] of the run's sessions, this one last
        self._committed = False  # whether this run wrote into the run directory yet
        self.writers = None
        self.metrics = None
        self._after_build()

    @property
    def _sums_size(self):
        """(loss sum, correct, examples) and the examples of each class."""
        return 3 + self.config.model.num_classes

    def _window(self):
        return Window(self._sums_size)

    @property
    def checkpoint_dir(self):
        return self.run_dir / "checkpoints"

    def checkpoint_path(self, step):
        return self.checkpoint_dir / f"ckpt-{step}{CHECKPOINT_FORMATS[self.checkpoint_format]}"

    def say(self, text):
        if self.verbose:
            self.progress.note(text)

    # -- evaluation -------------------------------------------------------------------------------

    def evaluate(self, split, max_batches=None, what=None):
        """{'loss', 'accuracy', 'examples', 'steps_per_second', 'examples_per_second', 'chance'}
        over a split (or its first max_batches batches); progress names `what` and the batches
        done."""
        known, batches = self._eval_batches(split, max_batches)
        window, sums, count = self._window(), 0.0, 0
        began = time.perf_counter()
        with self.progress.working(
            what or f"evaluating {split}", of=known if known and known > 0 else max_batches
        ):
            for batch in batches:
                sums += batch
                count += 1
                self.progress.advance()
        window.add(sums, time.perf_counter() - began, count)
        per_class = window.sums[3:]
        return {
            **window.scalars(),
            "examples": int(window.sums[2]),
            "chance": float(per_class.max() / max(per_class.sum(), 1)),
        }

    def _validate(self, step):
        result = self.evaluate(
            "validation", self.train.eval_batches, what=f"validation at step {step}"
        )
        self._write_scalars("validation", step, {k: result[k] for k in events.EVALUATED})
        self.say(
            f"step {step}: validation loss {result['loss']:.4f}, accuracy {result['accuracy']:.4f}"
        )
        return result

    # -- checkpoints ------------------------------------------------------------------------------

    def resume(self):
        """Restore the newest readable checkpoint of the chief's checkpoints/, if any (an
        unreadable newer one is skipped with a warning); the step it holds."""
        self._refuse_foreign_checkpoints()
        broken = []
        for step in checkpoint_steps(self.checkpoint_dir, self.checkpoint_format):
            path = self.checkpoint_path(step)
            reason = self._restore(path)
            if reason is None:
                if broken and self.verbose:
                    names = ", ".join(pathlib.Path(p).name for p, _ in broken)
                    print(
                        f"warning: checkpoint {names} in {self.checkpoint_dir} is unreadable "
                        f"({broken[0][1]}); resuming from the newest intact one, {path}",
                        file=sys.stderr,
                        flush=True,
                    )
                self.say(f"resumed from {path} at step {self.current_step()}")
                return self.current_step()
            broken.append((path, reason))
        if broken:
            names = ", ".join(pathlib.Path(path).name for path, _ in broken)
            raise RunDirError(
                f"no checkpoint in {self.checkpoint_dir} can be read ({names}: {broken[0][1]})",
                "an intact checkpoint to resume from",
                f"delete {self.checkpoint_dir} to start again from step 0, or choose another "
                "--run-dir",
            )
        return self.current_step()

    def _refuse_foreign_checkpoints(self):
        """RunDirError when the run directory holds only another backend's checkpoints."""
        if checkpoint_steps(self.checkpoint_dir, self.checkpoint_format):
            return
        for other in CHECKPOINT_FORMATS:
            if other != self.checkpoint_format and checkpoint_steps(self.checkpoint_dir, other):
                raise RunDirError(
                    f"run directory {self.run_dir} holds checkpoints of the {other} backend, "
                    f"not of {self.checkpoint_format}",
                    "a run resumed with the backend that started it",
                    f"resume with KERAS_BACKEND={other}, or choose another --run-dir",
                )

    def _resume_hint(self):
        """Where a rerun with the same --run-dir would start."""
        steps = checkpoint_steps(self.checkpoint_dir)
        if not steps:
            return "no checkpoint was written yet, so a rerun starts from step 0"
        return (
            "rerun with the same --run-dir to resume from its last checkpoint "
            f"{self.checkpoint_path(steps[0])}"
        )

    def _stop(self, step, what):
        """TrainingError for a diverged run: the step, and where a rerun would resume."""
        raise TrainingError(
            f"{what} at step {step}",
            "finite losses and weights",
            f"lower train.learning_rate or set train.grad_clip, and {self._resume_hint()}",
        )

    def _save(self, step):
        """Checkpoint `step`, unless the weights are no longer finite (then stop)."""
        self._sync_variables()
        if not all(
            np.isfinite(keras.ops.convert_to_numpy(v)).all() for v in self.model.trainable_variables
        ):
            self._stop(step, "the weights became inf or nan")
        with self.progress.working(f"saving checkpoint {step}"):
            self._write_checkpoint(step)
        self._log_train_seconds(step)

    def _log_train_seconds(self, step):
        """The run's training time so far, beside each checkpoint (flushed with it), so that a run
        resumed from that checkpoint can add its own time to it."""
        if self._seconds_before is None:
            return
        seconds = self._seconds_before + time.perf_counter() - self._began
        self._write_scalars("train", step, {TRAIN_SECONDS: seconds})
        for writer in self.writers.values():
            writer.flush()

    def _train_seconds_before(self, start):
        """The training seconds of the sessions before this one: 0 for a new run, None when the
        checkpoint resumed from has no time beside it (written before times were kept)."""
        if not start:
            return 0.0
        return events.read_scalars(self.run_dir / "train").get(TRAIN_SECONDS, {}).get(start)

    def _sync_variables(self):
        """Make the Keras variables hold the current state (a backend keeping it elsewhere)."""

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
                    "a directory this user can create and write",
                    "choose another --run-dir",
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
                self.say(
                    f"starting afresh in {self.run_dir}: it holds no checkpoint to resume "
                    "from, so the files of an earlier start are replaced"
                )
            for path in stale:
                path.unlink()
        if changed or not (self.run_dir / "config.yaml").exists():
            files.write_text(self.run_dir / "config.yaml", self.config.to_yaml())

    def _where(self):
        """'at step N' (the step under way), or where the run was before its loop."""
        if self.running:
            return f"at step {self.running}"
        return "before its first step"

    # -- the run ----------------------------------------------------------------------------------

    def fit(self):
        """Train to num_train_steps (resuming if possible), evaluate, write the artifacts."""
        try:
            with self._backend_failures(), self._claimed() as changed:
                with self.progress.working("restoring the checkpoint"):
                    start = self.resume()
                self._seconds_before = self._train_seconds_before(start)
                self._sessions = [
                    *sessions.earlier(self.run_dir, start),
                    (start, self.distribution.device()),
                ]
                for key, change in changed.items():
                    self.say(f"resuming with {key} changed: {change}")
                for name, group in self.optimizer_groups.items():
                    self.say(
                        f"optimizer group {name}: {', '.join(group['weights'])} "
                        f"({group['variables']} variables) at "
                        f"{group['learning_rate_scale']:g} x the learning rate, "
                        f"{'with' if group['weight_decay'] else 'without'} weight decay"
                    )
                self._commit(changed)
                self.writers = self._open_writers()
                events.write_run_record(
                    self.writers["run"], self.config.to_yaml(), self.config.to_dict()
                )
                sessions.record(self.writers["run"], *self._sessions[-1])
                if start:
                    left = self.train.num_train_steps - start
                    self.say(
                        f"{left} of {self.train.num_train_steps} steps to go"
                        if left > 0
                        else f"all {self.train.num_train_steps} steps done: evaluating only"
                    )
                try:
                    return self._loop(start)
                finally:
                    for writer in self.writers.values():
                        writer.close()
        except KeyboardInterrupt:
            raise Interrupted(
                f"interrupted{f' at step {self.running}' if self.running else ''}",
                "the run to reach its last step",
                self._resume_hint(),
            ) from None
        finally:
            self.progress.close()

    def _write_scalars(self, split, step, scalars):
        """One TensorBoard point per scalar ({short name of events.SCALARS: value})."""
        self.writers[split].scalars(step, scalars)

    def _log_train(self, step, window):
        """The window's loss, accuracy and speed, with the learning rate and peak memory."""
        scalars = window.scalars()
        lr = self.optimizer.learning_rate
        self._write_scalars(
            "train",
            step,
            {
                **scalars,
                "learning_rate": float(lr(step) if callable(lr) else lr),
                "peak_memory_mb": peak_memory_mb(),
            },
        )
        shown = {
            "loss": scalars["loss"],
            "accuracy": scalars["accuracy"],
            "steps/s": scalars["steps_per_second"],
        }
        if self.utilisation:  # on a GPU: model FLOP utilisation against the bf16 matmul rate
            shown["MFU"] = self.utilisation.fraction(scalars["steps_per_second"])
        self.progress.log(step, shown)

    def _first_step(self, stream):
        """The first step of this process, which compiles: announced, and its time reported."""
        tick = time.perf_counter()
        with self.progress.working(
            "compiling the training step",
            announce="compiling the training step (the first step builds the graph; "
            "later steps are faster)",
        ):
            sums = self._train_step(stream)
        self.say(f"first step done in {duration(time.perf_counter() - tick)}")
        return sums

    def _loop(self, start):
        total = self.train.num_train_steps
        stream = self._train_stream(start)
        began, trained, window = time.perf_counter(), self._window(), self._window()
        self._began = began
        validation = None
        for step in range(start + 1, total + 1):
            self.running = step
            tick = time.perf_counter()
            sums = self._first_step(stream) if step == start + 1 else self._train_step(stream)
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
            pausing = step < total and self._out_of_time(began)  # read the clock once
            if step % self.train.checkpoint_every == 0 or step == total or pausing:
                self._save(step)
            if pausing:
                return self._pause(step)
        return self.finish(validation, trained, time.perf_counter() - began)

    def _out_of_time(self, began):
        return self.time_limit is not None and time.perf_counter() - began >= self.time_limit

    def _pause(self, step):
        """Stop at `step` (checkpointed) because the time limit passed."""
        self.paused = True
        self.say(
            f"paused at step {step} of {self.train.num_train_steps}: the time limit of "
            f"{self.time_limit:g} s passed; rerun the same command to resume from "
            f"{self.checkpoint_path(step)}"
        )
        self._finished()
        return None

    def finish(self, validation, trained, wall):
        """Test evaluation, metrics.json and model.keras (chief only, written atomically)."""
        validation = validation or self.evaluate(
            "validation", self.train.eval_batches, what="validation"
        )
        test = self.evaluate("test", what="test")
        self._write_scalars(
            "run",
            self.current_step(),
            {"test_accuracy": test["accuracy"], "test_loss": test["loss"]},
        )
        self._sync_variables()
        self.metrics = {
            "task": self.config.task.name,
            "model": self.config.model.attention,
            "block": self.config.model.block,
            "optimizer_groups": self.optimizer_groups,
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
            "train_seconds": None if self._seconds_before is None else self._seconds_before + wall,
            "examples_per_second": (
                trained.scalars()["examples_per_second"] if trained.steps else None
            ),
            "parameters": self.model.count_params(),
            "peak_memory_mb": peak_memory_mb(),
            "replicas": self.distribution.replicas,
            "backend": keras.backend.backend(),
            "device": sessions.described(self._sessions, self.current_step()),
            "precision": self.precision,
            "precision_requested": self.precision_requested,
            **(
                self.utilisation.record(trained.scalars()["steps_per_second"])
                if self.utilisation and trained.steps
                else {}
            ),
        }
        if self.chief:
            files.write_json(self.run_dir / "metrics.json", self.metrics)
            with self.progress.working("writing model.keras"):
                with files.atomic_path(self.run_dir / "model.keras") as tmp:
                    self.model.save(tmp)
        self._finished()
        self.say(
            f"{summary(test['accuracy'], test['chance'], test['examples'])}; run directory "
            f"{self.run_dir}"
        )
        return self.metrics

    def _finished(self):
        """What a backend cleans up after the artifacts are written."""

    # -- what a backend implements ----------------------------------------------------------------

    def _scope(self):
        raise NotImplementedError

    def _after_build(self):
        raise NotImplementedError

    def current_step(self):
        raise NotImplementedError

    @contextlib.contextmanager
    def _backend_failures(self):
        yield
