"""Why `s5` scans by doubling under TensorFlow: the first (tracing) call and the step time of one
tf.function forward + backward step of each of its two scans, over s5's state sizes.

    python tools/s5_scan_timing.py [--lengths 64,2048] [--batch 8]

Prints one line per (length, scan): seconds of the first call and the median of 5 later calls.
Keras' TensorFlow `associative_scan` unrolls its log-depth recursion into the graph; the doubling
scan is one while loop. Runs on the machine at hand (name it beside the numbers).
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"

import tensorflow as tf  # noqa: E402

from arena_tf.layers import s5  # noqa: E402

SCANS = {"associative": s5.associative_scan, "doubling": s5.doubling_scan}
MODES = 32  # the complex modes of s5 at its default state_size, 64 (P / 2)


def step_function(scan):
    @tf.function
    def step(factor, inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            states = scan(factor, inputs)
            loss = tf.add_n([tf.reduce_sum(tf.square(state)) for state in states])
        return tape.gradient(loss, inputs)
    return step


def timed(step, *arguments):
    start = time.perf_counter()
    step(*arguments)
    return time.perf_counter() - start


def measure(scan, length, batch):
    angle = tf.random.uniform([MODES], 0.0, 3.0)
    factor = (0.9 * tf.cos(angle), 0.9 * tf.sin(angle))  # |a| < 1, as exp(dt Lambda) is
    inputs = (tf.random.normal([batch, length, MODES]), tf.random.normal([batch, length, MODES]))
    step = step_function(SCANS[scan])
    first = timed(step, factor, inputs)
    later = statistics.median(timed(step, factor, inputs) for _ in range(5))
    print(f"length {length:6d}  {scan:11s}  first call {first:7.2f} s  step {later:.3f} s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="64,2048")
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args(argv)
    for length in (int(n) for n in args.lengths.split(",")):
        for scan in SCANS:
            measure(scan, length, args.batch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
