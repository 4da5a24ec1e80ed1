"""Why `s5` scans by doubling under TensorFlow: the first (tracing) call and the step time of one
tf.function forward + backward step of an s5 layer, with each of its two scans.

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

import arena_tf.layers as layers  # noqa: E402
from arena_tf.layers import s5  # noqa: E402

SCANS = {"associative": s5.associative_scan, "doubling": s5.doubling_scan}


def step_function(layer):
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(layer(x)))
        return tape.gradient(loss, layer.trainable_variables)
    return step


def timed(step, x):
    start = time.perf_counter()
    step(x)
    return time.perf_counter() - start


def measure(scan, length, batch):
    s5.backend_scan = lambda: SCANS[scan]
    step = step_function(layers.get("s5", num_heads=4, head_dim=32))
    x = tf.random.normal([batch, length, 128])
    first = timed(step, x)
    later = statistics.median(timed(step, x) for _ in range(5))
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
