"""How many batches `python -m arena_tf.data bench` holds at once: the measurement behind
`arena_tf.data.BATCHES_HELD`, the factor its memory guard multiplies one batch's bytes by.

    python tools/data_batch_memory.py [--task listops] [--data-dir data/listops]
        [--batch-sizes 256,4096] [--batches 30]

Runs `data bench` once per batch size in its own process and reads that process's peak resident
memory (wait4's rusage). The growth of the peak between two batch sizes, divided by the growth of
one batch's int32 token ids, is the number of batches alive at once (pipeline buffers included);
the fixed part (TensorFlow, the parsed split) cancels out. Prints one line per batch size, then
that ratio. Runs on the machine at hand (name it beside the numbers).
"""

import argparse
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from arena_tf import cli  # noqa: E402 (after the path above)

cli.prepare_process()  # before TensorFlow and Keras are imported

from arena_tf import tasks  # noqa: E402


def peak_rss_bytes(command):
    """The peak resident memory (bytes) of `command`, run to its end (non-zero exit: an error)."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed (status {status})")
    return usage.ru_maxrss * 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="listops")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument(
        "--batch-sizes", action=cli.Items, type=cli.positive_int, default=[256, 4096]
    )
    parser.add_argument("--batches", type=cli.positive_int, default=30)
    args = parser.parse_args()
    task = tasks.get(args.task, data_dir=args.data_dir)
    batch_bytes = {size: size * task.max_len * task.num_inputs * 4 for size in args.batch_sizes}
    peaks = {}
    for size in args.batch_sizes:
        command = [
            sys.executable,
            "-m",
            "arena_tf.data",
            "bench",
            f"--task={args.task}",
            f"--batch-size={size}",
            f"--batches={args.batches}",
            *([f"--data-dir={args.data_dir}"] if args.data_dir else []),
        ]
        peaks[size] = peak_rss_bytes(command)
        print(
            f"batch {size:>6}: one batch {batch_bytes[size] / 1e6:8.1f} MB, peak RSS "
            f"{peaks[size] / 1e6:8.1f} MB",
            flush=True,
        )
    small, large = min(args.batch_sizes), max(args.batch_sizes)
    held = (peaks[large] - peaks[small]) / (batch_bytes[large] - batch_bytes[small])
    print(f"batches held at once: {held:.1f} (peak growth / batch growth, {small} -> {large})")


if __name__ == "__main__":
    main()
