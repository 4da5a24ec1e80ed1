"""Train an LRA model on TensorFlow (any tf.distribute strategy) or JAX, watched in TensorBoard.

    python -m arena_tf.train --task=image --model=linformer
    python -m arena_tf.train --task=listops --model=performer --preset=tiny --set train.batch_size=8
    python -m arena_tf.train --task=listops --model=full --preset=tiny --strategy=mirrored \\
        --cpu-devices=2
    python -m arena_tf.train --task=text --model=bigbird --precision=mixed_bfloat16 --tpu=local
    KERAS_BACKEND=jax python -m arena_tf.train --task=listops --model=performer --preset=tiny
    KERAS_BACKEND=jax python -m arena_tf.train --task=listops --model=full --preset=tiny \\
        --coordinator=10.0.0.1:1234 --num-processes=2 --process-id=0   # and --process-id=1

The backend is Keras' (KERAS_BACKEND, default tensorflow); `BACKENDS` names the module holding
each one's loop (`arena_tf/training/`), and both write the same run directory. Before anything is
written into it, everything that can be checked is: the config, the data (present, readable, and of
the shape and range the model takes), the model (built), and the run directory (another
configuration's checkpoints are refused; one trainer at a time). A run started again with the same
--run-dir resumes where it stopped, bit for bit.

Errors are one line (`arena_tf.cli`): exit 2 for a mistake in the input (config, data, run
directory), exit 1 when the run itself fails (diverged, stopped by the backend); `--debug` shows the
traceback. Progress goes to stdout: the plan, a line while the first step compiles, then a line at
least every few seconds (ARENA_TF_PROGRESS_EVERY, default 3) with the step, steps/s and the ETA,
and the batches done while evaluating.
"""

import importlib
import os
import sys

from arena_tf import cli

if __name__ == "__main__":  # before TensorFlow and Keras are imported
    cli.prepare_process()
if __name__ == "__main__" and not {"-h", "--help"} & set(sys.argv[1:]):
    # the import alone takes seconds
    print(
        f"loading {'JAX' if os.environ.get('KERAS_BACKEND') == 'jax' else 'TensorFlow'}", flush=True
    )


import keras  # noqa: E402

import arena_tf.tasks as tasks  # noqa: E402
from arena_tf import memory_guard  # noqa: E402
from arena_tf.config import ConfigError  # noqa: E402
from arena_tf.progress import Progress  # noqa: E402
from arena_tf.training.cluster import DEFAULT_TIMEOUT_S, ENVIRONMENT, Cluster  # noqa: E402
from arena_tf.training.errors import StrategyError, first_line  # noqa: E402
from arena_tf.training.experiment import build_experiment, check_data, plan_line  # noqa: E402
from arena_tf.training.loop import EXIT_PAUSED  # noqa: E402

# Keras backend -> the module of its training loop (Trainer, Distribution, first_example,
# setup_failures).
BACKENDS = {"tensorflow": "arena_tf.training.tf_trainer", "jax": "arena_tf.training.jax_trainer"}
# --strategy names; each backend says what they mean on its devices (or refuses one in one line).
STRATEGIES = ("auto", "default", "mirrored", "multi_worker")


def load_backend(name):
    """The training module of Keras backend `name`; a one-line error for a backend without one."""
    if name not in BACKENDS:
        raise cli.UsageError(
            f"KERAS_BACKEND={name} has no trainer here",
            f"one of {', '.join(BACKENDS)}",
            "set KERAS_BACKEND=tensorflow or KERAS_BACKEND=jax",
        )
    return importlib.import_module(BACKENDS[name])


backend = load_backend(keras.backend.backend()) if keras.backend.backend() in BACKENDS else None
Trainer = backend.Trainer if backend else None


def parse_args(argv):
    parser = cli.ArgumentParser(
        prog="python -m arena_tf.train",
        description="Train an LRA model.",
    )
    parser.add_argument("--task", required=True, help=f"one of {', '.join(tasks.TASKS)}")
    parser.add_argument("--model", required=True, help="an attention mechanism (configs/models)")
    parser.add_argument("--preset", help="a preset from configs/presets, e.g. tiny")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="override any config field; repeatable",
    )
    parser.add_argument("--data-dir", help="where the task's data is or will be generated")
    parser.add_argument("--run-dir", help="default runs/<task>-<model>[-<preset>]")
    parser.add_argument(
        "--precision",
        type=cli.keras_precision,
        metavar="{fp32,bf16,fp16}",
        help="compute precision (Keras' float32, mixed_bfloat16, mixed_float16 "
        "are accepted too; default: the config's)",
    )
    parser.add_argument(
        "--strategy",
        choices=list(STRATEGIES),
        default="auto",
        help="auto (default): TPU if --tpu, several workers if TF_CONFIG names them, several "
        "local GPUs or logical CPUs, else one device; mirrored: all local GPUs, or the "
        "logical CPUs without a GPU; multi_worker: the workers TF_CONFIG names; default: one "
        "device (JAX: auto and mirrored are keras.distribution.DataParallel over the local "
        "devices, multi_worker over every device of the processes --coordinator, "
        "--num-processes and --process-id name, or that JAX detects; --tpu is TensorFlow's)",
    )
    processes = parser.add_argument_group(
        "several processes under JAX (the same flags on every process but --process-id; "
        "default: the KERAS_DISTRIBUTION_* variables of keras.distribution.initialize)"
    )
    processes.add_argument(
        "--coordinator", metavar="HOST:PORT", help="address and a free port of process 0's host"
    )
    processes.add_argument(
        "--num-processes", type=cli.positive_int, metavar="N", help="how many processes the run has"
    )
    processes.add_argument(
        "--process-id",
        type=cli.whole_number(0),
        metavar="I",
        help="this process's number, 0 to N-1; process 0 writes the run directory",
    )
    processes.add_argument(
        "--join-timeout",
        type=cli.positive_int,
        metavar="SECONDS",
        default=DEFAULT_TIMEOUT_S,
        help=f"how long to wait for every process to join (default {DEFAULT_TIMEOUT_S})",
    )
    parser.add_argument(
        "--cpu-devices",
        type=cli.positive_int,
        metavar="N",
        help="split the CPU into N logical devices, one replica each (with auto or mirrored): "
        "tries multi-replica training without GPUs (JAX: before JAX starts, in this process)",
    )
    parser.add_argument("--tpu", help="TPU name or 'local' for a TPU VM")
    parser.add_argument(
        "--time-limit",
        type=cli.whole_number(0),
        metavar="SECONDS",
        help=f"stop after this many seconds of training, at a checkpoint, with exit status "
        f"{EXIT_PAUSED}; the same command resumes there (long runs in chunks)",
    )
    return parser.parse_args(argv)


def cluster_of(args):
    """The processes of a multi-process run that the flags or Keras' KERAS_DISTRIBUTION_*
    variables name; None for a one-process run (or one whose processes JAX detects, with
    --strategy=multi_worker and none of them)."""
    flags = (
        getattr(args, "coordinator", None),
        getattr(args, "num_processes", None),
        getattr(args, "process_id", None),
    )
    named = any(value is not None for value in flags) or any(
        os.environ.get(variable) for variable in ENVIRONMENT.values()
    )
    if not named:
        return None
    return Cluster.named(*flags, timeout=getattr(args, "join_timeout", DEFAULT_TIMEOUT_S))


def default_run_dir(args):
    return f"runs/{args.task}-{args.model}" + (f"-{args.preset}" if args.preset else "")


def as_config_error(error):
    """A ValueError of a task, layer or generator check, as a one-line user error."""
    text = first_line(error)
    if "; expected " in text:
        return (
            cli.UsageError(text)
            if text.count("; ") >= 2
            else cli.UsageError(text, None, "change the value with --set or in the config YAML")
        )
    return cli.UsageError(
        text,
        "a configuration the task and model accept",
        "change the value with --set or in the config YAML",
    )


def setup(args, progress=None):
    """The Trainer the arguments describe, with everything checked and nothing written yet. The
    checks of names, shapes and parameters that tasks, layers and generators make raise
    ValueError; here they become one-line errors, while a ValueError during training is a bug and
    keeps its traceback."""
    overrides = list(args.overrides)
    if args.precision:
        overrides.append(f"train.precision={args.precision}")
    distribution = backend.Distribution(args.strategy, args.tpu, args.cpu_devices, cluster_of(args))
    progress = progress or Progress.steps(None)
    progress.enabled = progress.enabled and distribution.chief
    run_dir = args.run_dir or default_run_dir(args)
    try:
        config, task = build_experiment(
            args.task, args.model, overrides, args.preset, args.data_dir
        )
        progress.note(config.to_yaml().rstrip())
        progress.note(f"strategy: {distribution.describe()}")
        progress.note(f"TensorBoard: tensorboard --logdir {run_dir}")
        progress.note(plan_line(config, distribution.replicas, run_dir))
        with progress.working(f"checking the {args.task} data (generated when absent)"):
            check_data(config, task, backend.first_example)
        with progress.working(f"building the {args.model} model"):
            trainer = Trainer(
                config,
                task,
                run_dir,
                distribution,
                verbose=progress.enabled,
                progress=progress,
                time_limit=getattr(args, "time_limit", None),
            )
        # the model built (its parameters checked), nothing written yet, before the first step
        memory_guard.check_fits(config.model, config.train.batch_size)
        return trainer, config
    except (ConfigError, cli.CommandError, tasks.DataNotFoundError):
        raise
    except ValueError as error:
        raise as_config_error(error) from error


def run(args):
    """Build everything the arguments name, train, and return the Trainer (its .metrics set)."""
    progress = Progress.steps(None)
    try:
        trainer, _ = setup(args, progress)
        trainer.fit()
    finally:
        progress.close()
    return trainer


def main(argv=None):
    """Command-line entry of training.

    Args:
        argv: --task, --model and the other flags `--help` lists (default: sys.argv[1:]).

    Exit status:
        0 once the run is trained and evaluated; 2 and one `error: ...` line on stderr for a
            user's mistake; 1 when training failed (`--debug` shows the traceback instead).

    Example:
        python -m arena_tf.train --task=listops --model=performer --preset=tiny

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    args = parse_args(argv)

    def body():
        load_backend(keras.backend.backend())
        with backend.setup_failures():  # outside the loop: setting up the devices or data
            return EXIT_PAUSED if run(args).paused else 0

    return cli.run_main(
        body, debug=args.debug, usage=(ConfigError, tasks.DataNotFoundError, StrategyError)
    )


if __name__ == "__main__":
    status = main()
    sys.exit(backend.leave(status) if hasattr(backend, "leave") else status)
