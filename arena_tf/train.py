"""Train an LRA model on any tf.distribute strategy, watched in TensorBoard.

    python -m arena_tf.train --task=image --model=linformer
    python -m arena_tf.train --task=listops --model=performer --preset=tiny --set train.batch_size=8
    python -m arena_tf.train --task=text --model=bigbird --precision=mixed_bfloat16 --tpu=local

One custom loop over `strategy.run` inside `tf.function` serves every strategy (Keras 3's
`model.fit` fails under MultiWorkerMirroredStrategy, keras-team/keras#20585). The run directory
holds config.yaml, TensorBoard events (train/, validation/), checkpoints/, metrics.json and
model.keras; a restarted run resumes from its newest checkpoint at the same step and data position.
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
from arena_tf.distribute import StrategyError, describe, is_chief, make_strategy
from arena_tf.models import build_classifier, count_parameters
from arena_tf.schedules import make_optimizer


class TrainingError(RuntimeError):
    """Training cannot go on (bad run directory, diverged loss); the message says what to do."""


def peak_memory_mb():
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the run directory --------------------------------------------------------------------------


def differences(saved, current, prefix=""):
    """'key: saved X, now Y' lines for every leaf that differs between two nested dicts."""
    lines = []
    for key in sorted(set(saved) | set(current)):
        old, new = saved.get(key), current.get(key)
        if isinstance(old, dict) and isinstance(new, dict):
            lines += differences(old, new, f"{prefix}{key}.")
        elif old != new:
            lines.append(f"{prefix}{key}: saved {old!r}, now {new!r}")
    return lines


def prepare_run_dir(run_dir, config, chief):
    """Create the run directory (or accept the same experiment's); save the merged config."""
    run_dir = pathlib.Path(run_dir)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=run_dir):
            pass
    except OSError as error:
        raise TrainingError(
            f"cannot write to run directory {run_dir} ({error.strerror}); choose another --run_dir"
        ) from None
    saved_path = run_dir / "config.yaml"
    if saved_path.exists():
        changed = differences(read_yaml(saved_path), config.to_dict())
        if changed:
            raise TrainingError(
                f"run directory {run_dir} belongs to another configuration ({'; '.join(changed)}); "
                "use a new --run_dir, or the same settings to resume"
            )
    elif chief:
        files.write_text(saved_path, config.to_yaml())
    return run_dir


# -- one training run ---------------------------------------------------------------------------


class Trainer:
    """The loop: distributed steps, TensorBoard, evaluation, checkpoints, final artifacts."""

    def __init__(self, config, task, run_dir, strategy, verbose=True):
        self.config, self.task, self.strategy = config, task, strategy
        self.train = config.train
        self.chief = is_chief(strategy)
        self.verbose = verbose and self.chief
        self.run_dir = prepare_run_dir(run_dir, config, self.chief)
        keras.mixed_precision.set_global_policy(self.train.precision)
        keras.utils.set_random_seed(self.train.seed)
        with strategy.scope():
            self.model = build_classifier(config.model)
            self.optimizer = make_optimizer(self.train)
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.checkpoint = tf.train.Checkpoint(
            step=self.step,
            model=[v.value for v in self.model.variables],
            optimizer=[v.value for v in self.optimizer.variables],
        )
        directory = self.run_dir / "checkpoints" if self.chief else tempfile.mkdtemp()
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, directory, max_to_keep=self.train.keep_checkpoints
        )
        self.writers = {
            split: tf.summary.create_file_writer(str(self.run_dir / split))
            if self.chief
            else tf.summary.create_noop_writer()
            for split in ("train", "validation")
        }

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
    def _eval_step(self, batch):
        sums = self.strategy.run(lambda x, y: self._sums(x, y, training=False)[1], args=batch)
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, sums, axis=None)

    def _distribute(self, dataset):
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        return self.strategy.experimental_distribute_dataset(dataset.with_options(options))

    # -- phases ---------------------------------------------------------------------------------

    def evaluate(self, split, max_batches=None):
        """{'loss', 'accuracy', 'examples'} over a split (or its first max_batches batches)."""
        data = self.task.dataset(split, self.train.batch_size, shuffle=False)
        if max_batches:
            data = data.take(max_batches)
        total = np.zeros(3)
        for batch in self._distribute(data):
            total += self._eval_step(batch).numpy()
        loss_sum, correct, count = total
        return {"loss": loss_sum / max(count, 1), "accuracy": correct / max(count, 1),
                "examples": int(count)}

    def resume(self):
        """Restore the newest checkpoint, if any; the step it holds."""
        latest = self.manager.latest_checkpoint
        if latest:
            self.checkpoint.restore(latest).assert_existing_objects_matched()
            self.say(f"resumed from {latest} at step {int(self.step)}")
        return int(self.step)

    def say(self, text):
        if self.verbose:
            print(text, flush=True)

    def _log_train(self, step, sums, seconds, steps):
        loss, accuracy = sums[0] / sums[2], sums[1] / sums[2]
        lr = self.optimizer.learning_rate
        lr = float(lr(step) if callable(lr) else lr)
        with self.writers["train"].as_default(step=step):
            for name, value in (("loss", loss), ("accuracy", accuracy), ("learning_rate", lr),
                                ("steps_per_second", steps / seconds),
                                ("examples_per_second", sums[2] / seconds),
                                ("peak_memory_mb", peak_memory_mb())):
                tf.summary.scalar(name, value)
        return loss, accuracy

    def _validate(self, step):
        result = self.evaluate("validation", self.train.eval_batches)
        with self.writers["validation"].as_default(step=step):
            tf.summary.scalar("loss", result["loss"])
            tf.summary.scalar("accuracy", result["accuracy"])
        self.say(f"\nstep {step}: validation loss {result['loss']:.4f}, "
                 f"accuracy {result['accuracy']:.4f}")
        return result

    def _check_finite(self, step, loss):
        if not np.isfinite(loss):
            latest = self.manager.latest_checkpoint or "none yet"
            raise TrainingError(
                f"loss became {loss} at step {step}; last good checkpoint: {latest}; lower "
                "train.learning_rate or set train.grad_clip, then rerun with the same --run_dir "
                "to resume from it"
            )

    def fit(self):
        """Train to num_train_steps (resuming if possible), evaluate, write the artifacts."""
        start = self.resume()
        total = self.train.num_train_steps
        data = self.task.dataset("train", self.train.batch_size, repeat=True).skip(start)
        iterator = iter(self._distribute(data))
        progress = keras.utils.Progbar(total, verbose=1 if self.verbose else 0,
                                       stateful_metrics=["loss", "accuracy", "steps/s"])
        began, tick, window = time.perf_counter(), time.perf_counter(), np.zeros(3)
        validation = None
        for step in range(start + 1, total + 1):
            sums = self._train_step(iterator).numpy()
            self._check_finite(step, sums[0])
            window += sums
            if step % self.train.log_every == 0 or step == total:
                seconds = time.perf_counter() - tick
                steps = self.train.log_every if step % self.train.log_every == 0 else step % self.train.log_every
                loss, accuracy = self._log_train(step, window, seconds, steps)
                progress.update(step, [("loss", loss), ("accuracy", accuracy),
                                       ("steps/s", steps / seconds)])
                tick, window = time.perf_counter(), np.zeros(3)
            if step % self.train.eval_every == 0 or step == total:
                validation = self._validate(step)
            if step % self.train.checkpoint_every == 0 or step == total:
                self.manager.save(checkpoint_number=step)
        wall = time.perf_counter() - began
        return self.finish(validation, start, wall)

    def finish(self, validation, start, wall):
        """Test evaluation, metrics.json and model.keras (chief only, written atomically)."""
        validation = validation or self.evaluate("validation", self.train.eval_batches)
        test = self.evaluate("test")
        steps = self.train.num_train_steps - start
        metrics = {
            "task": self.config.task.name,
            "model": self.config.model.attention,
            "steps": int(self.step),
            "test_accuracy": test["accuracy"],
            "test_loss": test["loss"],
            "test_examples": test["examples"],
            "validation_accuracy": validation["accuracy"],
            "validation_loss": validation["loss"],
            "wall_time_s": wall,
            "examples_per_second": steps * self.train.batch_size / wall if steps else None,
            "parameters": count_parameters(self.model),
            "peak_memory_mb": peak_memory_mb(),
            "replicas": self.strategy.num_replicas_in_sync,
        }
        if self.chief:
            files.write_json(self.run_dir / "metrics.json", metrics)
            with files.atomic_path(self.run_dir / "model.keras") as tmp:
                self.model.save(tmp)
        self.say(f"test accuracy {test['accuracy']:.4f} on {test['examples']} examples; "
                 f"run directory {self.run_dir}")
        return metrics


# -- command line -------------------------------------------------------------------------------


def build_experiment(task_name, model_name, overrides=(), preset=None, data_dir=None):
    """The merged, validated config and the task it trains on (model fields the task decides)."""
    if data_dir:
        overrides = [*overrides, f"task.data_dir={data_dir}"]
    tasks.lookup(task_name)
    config = load_experiment(task_name, model_name, overrides, preset)
    task = tasks.get(task_name, data_dir=config.task.data_dir, max_len=config.task.max_len,
                     seed=config.train.seed, **config.task.params)
    derived = dict(vocab_size=task.vocab_size, num_classes=task.num_classes,
                   padding_id=task.padding_id, max_len=task.max_len,
                   two_tower=task.num_inputs == 2)
    model = dataclasses.replace(config.model, **derived)
    return ExperimentConfig(task=config.task, model=model, train=config.train), task


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
    parser.add_argument("--tpu", help="TPU name or 'local' for a TPU VM")
    return parser.parse_args(argv)


def run(args):
    overrides = list(args.overrides)
    if args.precision:
        overrides.append(f"train.precision={args.precision}")
    strategy = make_strategy(args.tpu)
    config, task = build_experiment(args.task, args.model, overrides, args.preset, args.data_dir)
    run_dir = args.run_dir or f"runs/{args.task}-{args.model}" + (f"-{args.preset}" if args.preset else "")
    chief = is_chief(strategy)
    if chief:
        print(config.to_yaml(), end="")
        print(f"strategy: {describe(strategy)}")
        print(f"TensorBoard: tensorboard --logdir {run_dir}")
    trainer = Trainer(config, task, run_dir, strategy)
    return trainer.fit()


def main(argv=None):
    args = parse_args(argv)
    try:
        run(args)
    except (ConfigError, tasks.DataNotFoundError, StrategyError, TrainingError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
