"""Train an LRA model on any tf.distribute strategy, watched in TensorBoard.

    python -m arena_tf.train --task=image --model=linformer
    python -m arena_tf.train --task=listops --model=performer --preset=tiny --set train.batch_size=8
    python -m arena_tf.train --task=listops --model=full --preset=tiny --strategy=mirrored --cpu_devices=2
    python -m arena_tf.train --task=text --model=bigbird --precision=mixed_bfloat16 --tpu=local

One custom loop over `strategy.run` inside `tf.function` serves every strategy (Keras 3's
`model.fit` fails under MultiWorkerMirroredStrategy, keras-team/keras#20585). The run directory
holds config.yaml, TensorBoard events (train/, validation/), checkpoints/, metrics.json and
model.keras; only the chief process writes it.

Resuming: a run started again with the same --run_dir continues from its newest checkpoint at the
same step, data position (the training stream is replayed up to that step) and random state (the
dropout seed generators are model variables, so the checkpoint holds them): it ends with the same
weights as a run never interrupted. The settings must be the same, except the loop settings in
ADJUSTABLE (e.g. a lower train.learning_rate after the loss diverged, or more train.num_train_steps).
With several workers, every worker resumes from the chief's checkpoints/, so the run directory must
be on a filesystem they all see.
"""

import argparse
import dataclasses
import pathlib
import resource
import sys
import tempfile
import time

import numpy as np
import tensorflow as tf

import keras

import arena_tf.tasks as tasks
from arena_tf import files
from arena_tf.config import ConfigError, ExperimentConfig, load_experiment, read_yaml
from arena_tf.distribute import STRATEGIES, StrategyError, describe, is_chief, make_strategy
from arena_tf.models import build_classifier
from arena_tf.schedules import make_optimizer

# Settings a resumed run may change: they steer the loop, not what the model and data are.
ADJUSTABLE = {
    f"train.{name}"
    for name in ("learning_rate", "grad_clip", "num_train_steps", "eval_every", "eval_batches",
                 "checkpoint_every", "keep_checkpoints", "log_every")
}


class TrainingError(RuntimeError):
    """Training cannot go on (bad run directory, diverged loss); the message says what to do."""


def peak_memory_mb():
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the run directory --------------------------------------------------------------------------


def differences(saved, current, prefix=""):
    """{'section.key': 'saved X, now Y'} for every leaf that differs between two nested dicts."""
    changed = {}
    for key in sorted(set(saved) | set(current)):
        old, new = saved.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            changed.update(differences(old, new, f"{prefix}{key}."))
        elif old != new:
            changed[f"{prefix}{key}"] = f"saved {old!r}, now {new!r}"
    return changed


def check_writable(run_dir):
    """Create `run_dir` and prove a file can be written in it; TrainingError otherwise."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=run_dir):
            pass
    except OSError as error:
        raise TrainingError(
            f"cannot write to run directory {run_dir} ({error.strerror or error}); choose another "
            "--run_dir"
        ) from None


def check_same_experiment(run_dir, config):
    """Refuse a run directory saved by another configuration; the ADJUSTABLE changes it allows."""
    saved_path = run_dir / "config.yaml"
    if not saved_path.exists():
        return {}
    changed = differences(read_yaml(saved_path), config.to_dict())
    refused = {key: text for key, text in changed.items() if key not in ADJUSTABLE}
    if refused:
        listed = "; ".join(f"{key}: {text}" for key, text in refused.items())
        raise TrainingError(
            f"run directory {run_dir} belongs to another configuration ({listed}); use a new "
            "--run_dir, or the saved settings to resume"
        )
    return changed


def prepare_run_dir(run_dir, config, chief):
    """Check the run directory is this experiment's (every process) and, on the chief, writable;
    the chief saves the config. Returns {key: change} of the ADJUSTABLE settings changed."""
    run_dir = pathlib.Path(run_dir)
    if chief:
        check_writable(run_dir)
    changed = check_same_experiment(run_dir, config)
    if chief and (changed or not (run_dir / "config.yaml").exists()):
        files.write_text(run_dir / "config.yaml", config.to_yaml())
    return changed


# -- progress on the console --------------------------------------------------------------------


class Progress:
    """Training progress: Keras's bar redrawn in place on a terminal, one plain line per update when
    the output goes to a file or pipe (Keras's Progbar redraws with backspaces on any POSIX
    stream, which makes a log one endless line)."""

    def __init__(self, total, enabled, stream=None):
        self.stream = stream or sys.stdout
        self.total = total
        self.enabled = enabled
        self.bar = None
        if enabled and hasattr(self.stream, "isatty") and self.stream.isatty():
            self.bar = keras.utils.Progbar(total, stateful_metrics=["loss", "accuracy", "steps/s"])
        self.mid_line = False

    def update(self, step, values):
        """Show the step and {name: value}."""
        if self.bar:
            self.bar.update(step, list(values.items()))
            self.mid_line = step < self.total
        elif self.enabled:
            shown = ", ".join(f"{name} {value:.4g}" for name, value in values.items())
            self.note(f"step {step}/{self.total}: {shown}")

    def note(self, text):
        """A line of its own (below the bar on a terminal)."""
        if self.enabled:
            print(("\n" if self.mid_line else "") + text, file=self.stream, flush=True)
            self.mid_line = False


class Window:
    """Sums of (loss, correct, examples) and time over the training steps since the last log."""

    def __init__(self):
        self.sums, self.steps, self.seconds = np.zeros(3), 0, 0.0

    def add(self, sums, seconds, steps=1):
        self.sums += sums
        self.steps += steps
        self.seconds += seconds

    def scalars(self):
        """The TensorBoard scalars this window gives (all but learning_rate and peak_memory_mb)."""
        loss_sum, correct, count = self.sums
        seconds = max(self.seconds, 1e-9)
        return {"loss": loss_sum / max(count, 1), "accuracy": correct / max(count, 1),
                "steps_per_second": self.steps / seconds, "examples_per_second": count / seconds}


# -- one training run ---------------------------------------------------------------------------


class Trainer:
    """The loop: distributed steps, TensorBoard, evaluation, checkpoints, final artifacts."""

    def __init__(self, config, task, run_dir, strategy, verbose=True):
        self.config, self.task, self.strategy = config, task, strategy
        self.train = config.train
        self.chief = is_chief(strategy)
        self.verbose = verbose and self.chief
        self.run_dir = pathlib.Path(run_dir)
        for key, change in prepare_run_dir(self.run_dir, config, self.chief).items():
            self.say(f"resuming with {key} changed: {change}")
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
        # Non-chief workers take part in saving (collectives) but into a private directory.
        self._scratch = None if self.chief else tempfile.TemporaryDirectory(prefix="arena_tf_worker_")
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
        self.metrics = None

    @property
    def checkpoint_dir(self):
        return self.run_dir / "checkpoints"

    # -- distributed computations ---------------------------------------------------------------

    def _sums(self, inputs, labels, training):
        logits = self.model(inputs, training=training)
        losses = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        correct = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.float32)
        count = tf.cast(tf.size(labels), tf.float32)
        return losses, tf.stack([tf.reduce_sum(losses), tf.reduce_sum(correct), count])

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
    def _eval_sums(self, batches):
        """(loss sum, correct, examples) and the number of batches over a distributed dataset, in
        one graph (one trace for every split, whatever the size of the last batch)."""
        total, count = tf.zeros(3), tf.constant(0)
        for batch in batches:
            sums = self.strategy.run(lambda x, y: self._sums(x, y, training=False)[1], args=batch)
            total += self.strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)
            count += 1
        return total, count

    def _distribute(self, dataset):
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        return self.strategy.experimental_distribute_dataset(dataset.with_options(options))

    # -- phases ---------------------------------------------------------------------------------

    def evaluate(self, split, max_batches=None):
        """{'loss', 'accuracy', 'examples', 'steps_per_second', 'examples_per_second'} over a
        split (or its first max_batches batches)."""
        data = self.task.dataset(split, self.train.batch_size, shuffle=False)
        if max_batches:
            data = data.take(max_batches)
        window = Window()
        began = time.perf_counter()
        sums, batches = self._eval_sums(self._distribute(data))
        window.add(sums.numpy(), time.perf_counter() - began, int(batches))
        return {**window.scalars(), "examples": int(window.sums[2])}

    def resume(self):
        """Restore the chief's newest checkpoint, if any; the step it holds."""
        latest = tf.train.latest_checkpoint(str(self.checkpoint_dir))
        if latest:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
            self.say(f"resumed from {latest} at step {self.current_step()}")
        return self.current_step()

    def current_step(self):
        return int(self.step.numpy())

    def say(self, text):
        if self.verbose:
            print(text, flush=True)

    def _write_scalars(self, split, step, scalars):
        """One TensorBoard point per scalar, with the learning rate and peak memory added."""
        lr = self.optimizer.learning_rate
        scalars = {**scalars, "learning_rate": float(lr(step) if callable(lr) else lr),
                   "peak_memory_mb": peak_memory_mb()}
        with self.writers[split].as_default(step=step):
            for name, value in scalars.items():
                tf.summary.scalar(name, value)

    def _log_train(self, step, window, progress):
        scalars = window.scalars()
        self._write_scalars("train", step, scalars)
        progress.update(step, {"loss": scalars["loss"], "accuracy": scalars["accuracy"],
                               "steps/s": scalars["steps_per_second"]})

    def _validate(self, step, progress):
        result = self.evaluate("validation", self.train.eval_batches)
        self._write_scalars("validation", step, {k: v for k, v in result.items() if k != "examples"})
        progress.note(f"step {step}: validation loss {result['loss']:.4f}, "
                      f"accuracy {result['accuracy']:.4f}")
        return result

    def _stop(self, step, what):
        """TrainingError for a diverged run: the step, and where a rerun would resume."""
        latest = tf.train.latest_checkpoint(str(self.checkpoint_dir))
        resume = (f"rerun with the same --run_dir to resume from its last checkpoint {latest}"
                  if latest else "no checkpoint was written yet, so a rerun starts from step 0")
        raise TrainingError(
            f"{what} at step {step}; lower train.learning_rate or set train.grad_clip, and "
            f"{resume}"
        )

    def _save(self, step):
        """Checkpoint `step`, unless the weights are no longer finite (then stop)."""
        if not all(np.isfinite(v.numpy()).all() for v in self.model.trainable_variables):
            self._stop(step, "the weights became inf or nan")
        self.manager.save(checkpoint_number=step)

    def fit(self):
        """Train to num_train_steps (resuming if possible), evaluate, write the artifacts."""
        start = self.resume()
        total = self.train.num_train_steps
        data = self.task.dataset("train", self.train.batch_size, repeat=True).skip(start)
        iterator = iter(self._distribute(data))
        progress = Progress(total, self.verbose)
        began, trained, window = time.perf_counter(), Window(), Window()
        validation = None
        for step in range(start + 1, total + 1):
            tick = time.perf_counter()
            sums = self._train_step(iterator).numpy()
            if not np.isfinite(sums[0]):
                self._stop(step, f"the training loss became {sums[0]}")
            window.add(sums, time.perf_counter() - tick)
            trained.add(sums, time.perf_counter() - tick)
            if step % self.train.log_every == 0 or step == total:
                self._log_train(step, window, progress)
                window = Window()
            if step % self.train.eval_every == 0 or step == total:
                validation = self._validate(step, progress)
            if step % self.train.checkpoint_every == 0 or step == total:
                self._save(step)
        return self.finish(validation, trained, time.perf_counter() - began)

    def finish(self, validation, trained, wall):
        """Test evaluation, metrics.json and model.keras (chief only, written atomically)."""
        validation = validation or self.evaluate("validation", self.train.eval_batches)
        test = self.evaluate("test")
        self.metrics = {
            "task": self.config.task.name,
            "model": self.config.model.attention,
            "steps": self.current_step(),
            "trained_steps": trained.steps,
            "test_accuracy": test["accuracy"],
            "test_loss": test["loss"],
            "test_examples": test["examples"],
            "validation_accuracy": validation["accuracy"],
            "validation_loss": validation["loss"],
            "wall_time_s": wall,
            "examples_per_second": trained.scalars()["examples_per_second"] if trained.steps else None,
            "parameters": self.model.count_params(),
            "peak_memory_mb": peak_memory_mb(),
            "replicas": self.strategy.num_replicas_in_sync,
        }
        for writer in self.writers.values():
            writer.close()
        if self.chief:
            files.write_json(self.run_dir / "metrics.json", self.metrics)
            with files.atomic_path(self.run_dir / "model.keras") as tmp:
                self.model.save(tmp)
        else:
            self._scratch.cleanup()
        self.say(f"test accuracy {test['accuracy']:.4f} on {test['examples']} examples; "
                 f"run directory {self.run_dir}")
        return self.metrics


# -- command line -------------------------------------------------------------------------------


def build_experiment(task_name, model_name, overrides=(), preset=None, data_dir=None):
    """The merged, validated config and the task it trains on (model fields the task decides)."""
    if data_dir:
        overrides = [*overrides, f"task.data_dir={data_dir}"]
    tasks.lookup(task_name)
    config = load_experiment(task_name, model_name, overrides, preset)
    task = tasks.from_config(config.task, seed=config.train.seed)
    derived = dict(vocab_size=task.vocab_size, num_classes=task.num_classes,
                   padding_id=task.padding_id, max_len=task.max_len,
                   two_tower=task.num_inputs == 2)
    model = dataclasses.replace(config.model, **derived)
    return ExperimentConfig(task=config.task, model=model, train=config.train), task


def positive_int(text):
    """argparse type: a whole number >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m arena_tf.train", description="Train an LRA model.",
    )
    parser.add_argument("--task", required=True, help=f"one of {', '.join(tasks.TASKS)}")
    parser.add_argument("--model", required=True, help="an attention mechanism (configs/models)")
    parser.add_argument("--preset", help="a preset from configs/presets, e.g. tiny")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="SECTION.KEY=VALUE", help="override any config field; repeatable")
    parser.add_argument("--data_dir", help="where the task's data is or will be generated")
    parser.add_argument("--run_dir", help="default runs/<task>-<model>[-<preset>]")
    parser.add_argument("--precision", choices=["float32", "mixed_float16", "mixed_bfloat16"])
    parser.add_argument(
        "--strategy", choices=list(STRATEGIES), default="auto",
        help="auto (default): TPU if --tpu, several workers if TF_CONFIG names them, several "
             "local GPUs or logical CPUs, else one device; mirrored: all local GPUs, or the "
             "logical CPUs without a GPU; multi_worker: the workers TF_CONFIG names; default: one "
             "device",
    )
    parser.add_argument(
        "--cpu_devices", type=positive_int, metavar="N",
        help="split the CPU into N logical devices, one replica each (with auto or mirrored): "
             "tries multi-replica training without GPUs",
    )
    parser.add_argument("--tpu", help="TPU name or 'local' for a TPU VM")
    return parser.parse_args(argv)


def default_run_dir(args):
    return f"runs/{args.task}-{args.model}" + (f"-{args.preset}" if args.preset else "")


def setup(args):
    """The Trainer the arguments describe. The checks of names, shapes and parameters that tasks,
    layers and generators make raise ValueError; here they become ConfigError (one line on the
    command line), while a ValueError during training is a bug and keeps its traceback."""
    overrides = list(args.overrides)
    if args.precision:
        overrides.append(f"train.precision={args.precision}")
    strategy = make_strategy(args.strategy, args.tpu, args.cpu_devices)
    try:
        config, task = build_experiment(args.task, args.model, overrides, args.preset,
                                        args.data_dir)
        task.load_split("train")  # missing data stops here, before a run directory is made
        return Trainer(config, task, args.run_dir or default_run_dir(args), strategy), config
    except ConfigError:
        raise
    except ValueError as error:
        raise ConfigError(str(error)) from error


def run(args):
    """Build everything the arguments name, train, and return the Trainer (its .metrics set)."""
    trainer, config = setup(args)
    trainer.say(config.to_yaml().rstrip())
    trainer.say(f"strategy: {describe(trainer.strategy)}")
    trainer.say(f"TensorBoard: tensorboard --logdir {trainer.run_dir}")
    trainer.fit()
    return trainer


ERRORS = (ConfigError, tasks.DataNotFoundError, StrategyError, TrainingError, tf.errors.OpError)


def main(argv=None):
    """Command-line entry: 0 on success, 2 with one `error: ...` line on bad input or divergence."""
    args = parse_args(argv)
    try:
        run(args)
    except ERRORS as error:
        message = getattr(error, "message", None) or str(error)
        print(f"error: {message.strip().splitlines()[0]}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
