"""The README's first command: an end-to-end run on data the project generates itself.

    python -m arena_tf.demo [--model linformer] [--task listops] [--debug]

Generates the tiny ListOps set (20,000 / 500 / 500 expressions) once, trains a small model with
the tiny preset, evaluates it on the test split, and says where the run directory and its
TensorBoard logs are. Later steps (export, serving bench) take that run directory. Errors are one
line, as with `python -m arena_tf.train` (exit 2: a wrong argument or input; 1: the run failed).
"""

import json
import pathlib
import sys

from arena_tf import cli

MEASURED = pathlib.Path(__file__).resolve().parent.parent / "docs" / "results" / "presets.json"


def measured_time(task, model):
    """'about 4 min 16 s (measured on 2 cores beside one busy process)' from
    docs/results/presets.json, or None when that preset was not measured."""
    try:
        measured = json.loads(MEASURED.read_text())
        rows, cores = measured["rows"], measured.get("cores", "?")
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for row in rows:
        if row.get("task") == task and row.get("model") == model and row.get("seconds"):
            seconds = round(row["seconds"])
            busy = row.get("busy", 0)
            beside = f" beside {busy} busy process{'es' if busy > 1 else ''}" if busy else ""
            return (
                f"about {seconds // 60} min {seconds % 60:02d} s, data generation included "
                f"(measured on {cores} cores{beside})"
            )
    return None


def main(argv=None):
    """Command line: generate the tiny ListOps set, train, evaluate, say where the run is.

    Args:
        argv: --task and --model, both optional (default: sys.argv[1:]).

    Exit status:
        0 on success; 2 for a wrong argument or input; 1 when the run failed (`--debug`: the
            traceback).

    Example:
        python -m arena_tf.demo --model linformer --task listops

    References:
        Tay et al., 2021, "Long Range Arena: A Benchmark for Efficient Transformers",
            arXiv:2011.04006; github.com/google-research/long-range-arena.
    """
    parser = cli.ArgumentParser(prog="python -m arena_tf.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="listops", help="a task whose data the project generates")
    parser.add_argument("--model", default="linformer", help="an attention mechanism")
    args = parser.parse_args(argv)
    return cli.run_main(lambda: demo(args), debug=args.debug)


def demo(args):
    """Train, evaluate and report; the training's exit status where it failed."""
    run_dir = f"runs/demo-{args.task}-{args.model}"
    expected = measured_time(args.task, args.model)
    print(
        f"demo: train {args.model} on the tiny {args.task} preset (its data is generated on first "
        f"use), evaluate it on the test split, then report; "
        f"{expected or 'a few minutes on a laptop-class CPU'}",
        flush=True,
    )
    print("loading TensorFlow", flush=True)
    from arena_tf import train  # TensorFlow and Keras: after the line saying they load

    status = train.main(
        [
            f"--task={args.task}",
            f"--model={args.model}",
            "--preset=tiny",
            f"--run-dir={run_dir}",
            *(["--debug"] if args.debug else []),
        ]
    )
    if status:
        return status
    with open(f"{run_dir}/metrics.json") as file:
        metrics = json.load(file)
    shows = "the model learns" if metrics["test_verdict"] == "learns" else "a smoke run"
    print(
        f"\n{args.model} on tiny {args.task}: test accuracy {metrics['test_accuracy']:.1%} "
        f"(chance {metrics['test_chance']:.1%}: {shows}) after {metrics['steps']} steps "
        f"({metrics['parameters']:,} parameters).\n"
        f"Run directory: {run_dir} (config.yaml, metrics.json, model.keras, checkpoints/)\n"
        f"TensorBoard:   tensorboard --logdir {run_dir}"
    )
    return 0


if __name__ == "__main__":
    cli.prepare_process()
    sys.exit(main())
