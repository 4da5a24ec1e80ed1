"""Training speed with and without length buckets, one suite's run trained both ways.

    python tools/length_bucket_timing.py [--suite cpu-listops-ssm] [--mechanism s4d]
        [--buckets 8] [--steps 300] [--out runs/length-bucket-timing]

Trains the suite's command for `--steps` steps twice in this process's machine, one after the
other: every batch padded to the task's max_len (train.length_buckets=0), then grouped by length
into `--buckets` buckets. Prints the examples/s of each (metrics.json's examples_per_second) and
their ratio. An epoch is the same examples either way, so the ratio is the speed-up per epoch.
Name the machine beside the numbers; other work on the machine slows both runs.
"""

import argparse
import json
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena_tf.reproduce import suites  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="cpu-listops-ssm")
    parser.add_argument("--mechanism", default="s4d")
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--out", default="runs/length-bucket-timing")
    args = parser.parse_args()
    run = suites.Run(suites.load_suite(args.suite), args.mechanism, 0, pathlib.Path(args.out))
    rates = {}
    for buckets in (0, args.buckets):
        run_dir = pathlib.Path(args.out, f"buckets-{buckets}")
        shutil.rmtree(run_dir, ignore_errors=True)
        command = [
            sys.executable,
            "-m",
            "arena_tf.train",
            *(a for a in run.arguments if not a.startswith("--run-dir=")),
            f"--set=train.num_train_steps={args.steps}",
            f"--set=train.eval_every={args.steps}",
            "--set=train.eval_batches=1",
            f"--set=train.length_buckets={buckets}",
            f"--run-dir={run_dir}",
        ]
        subprocess.run(command, check=True, cwd=ROOT)
        rates[buckets] = json.loads((run_dir / "metrics.json").read_text())["examples_per_second"]
        print(f"train.length_buckets={buckets}: {rates[buckets]:.1f} examples/s", flush=True)
    print(
        f"{args.suite} {args.mechanism}, {args.steps} steps: {args.buckets} buckets "
        f"{rates[args.buckets] / rates[0]:.2f}x the examples/s of batches padded to max_len"
    )


if __name__ == "__main__":
    main()
