"""How `s5` runs its recurrence under TensorFlow: the first (tracing) call and the step time of one
tf.function forward + backward step of each exact form: the two scans and the FFT convolution of
the inputs with the powers of Lambda_bar (`s5.linear_recurrence_conv`).

    python tools/s5_scan_timing.py [--lengths 64,2048] [--batch 8] [--modes 32]

Prints one line per (length, form): seconds of the first call and the median of 5 later calls.
Keras' TensorFlow `associative_scan` unrolls its log-depth recursion into the graph; the doubling
scan is one while loop; the convolution is O(L log L) per mode. Runs on the machine at hand (name
it beside the numbers).
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

# Each form: (rate = dt Lambda as (real, imag), inputs) -> states.
FORMS = {
    "associative": lambda rate, inputs: s5.associative_scan(s5.aops.complex_exp(*rate), inputs),
    "doubling": lambda rate, inputs: s5.doubling_scan(s5.aops.complex_exp(*rate), inputs),
    "convolution": s5.linear_recurrence_conv,
}


def step_function(form):
    @tf.function
    def step(rate, inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            states = form(rate, inputs)
            loss = tf.add_n([tf.reduce_sum(tf.square(state)) for state in states])
        return tape.gradient(loss, inputs)

    return step


def timed(step, *arguments):
    start = time.perf_counter()
    step(*arguments)
    return time.perf_counter() - start


def measure(form, length, batch, modes):
    rate = (tf.fill([modes], -0.1), tf.random.uniform([modes], 0.0, 3.0))  # |exp(rate)| < 1
    inputs = (tf.random.normal([batch, length, modes]), tf.random.normal([batch, length, modes]))
    step = step_function(FORMS[form])
    first = timed(step, rate, inputs)
    later = statistics.median(timed(step, rate, inputs) for _ in range(5))
    print(
        f"length {length:6d}  modes {modes:3d}  {form:11s}  first call {first:7.2f} s  "
        f"step {later:.3f} s",
        flush=True,
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="64,2048")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument(
        "--modes",
        type=int,
        default=32,
        help="complex modes (P / 2; default 32, s5's default state_size 64)",
    )
    parser.add_argument(
        "--forms", default=",".join(FORMS), help="forms to time, of " + ", ".join(FORMS)
    )
    args = parser.parse_args(argv)
    for length in (int(n) for n in args.lengths.split(",")):
        for form in args.forms.split(","):
            measure(form, length, args.batch, args.modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
