"""The README's first command: an end-to-end run on data the project generates itself.

    python -m arena_tf.demo [--model linformer] [--task listops]

Generates the tiny ListOps set (2,000 / 200 / 200 short expressions) once, trains a small model
with the tiny preset, evaluates it on the test split, and says where the run directory and its
TensorBoard logs are. Later steps (export, serving bench) take that run directory.
"""

import argparse
import json
import sys

from arena_tf import train


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="listops", help="a task whose data the project generates")
    parser.add_argument("--model", default="linformer", help="an attention mechanism")
    args = parser.parse_args(argv)
    run_dir = f"runs/demo-{args.task}-{args.model}"
    status = train.main([f"--task={args.task}", f"--model={args.model}", "--preset=tiny",
                         f"--run_dir={run_dir}"])
    if status:
        return status
    with open(f"{run_dir}/metrics.json") as file:
        metrics = json.load(file)
    print(
        f"\n{args.model} on tiny {args.task}: test accuracy {metrics['test_accuracy']:.1%} "
        f"after {metrics['steps']} steps ({metrics['parameters']:,} parameters).\n"
        f"Run directory: {run_dir} (config.yaml, metrics.json, model.keras, checkpoints/)\n"
        f"TensorBoard:   tensorboard --logdir {run_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
