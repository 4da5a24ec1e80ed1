"""A/B timing of one of our layers (a) against a variant of it (b), both built in one process with
the same weights, forward + backward at 4,096 tokens, batch 1, width 256 (4 heads of 64), no mask:
the pair's outputs and gradients are compared, then 9 rounds of 3 calls each alternate a and b
(ABBA / BAAB) and the median of the rounds' a / b time ratios is printed (above 1: b is faster).
Run from the repository root: `python archive/efficiency/NAME.py`."""

import time

import numpy as np
import tensorflow as tf

LENGTH, WIDTH, HEADS, HEAD_DIM = 4096, 256, 4, 64


def performer_with_exp_kernel(kernel):
    """A PerformerAttention subclass whose "exp" feature maps are `kernel` (the signature of
    `performer.exp_kernel`)."""
    from arena_tf.layers import performer

    class Variant(performer.PerformerAttention):
        def attend(self, q, k, v, mask, training=False):
            saved, performer.KERNELS["exp"] = performer.KERNELS["exp"], kernel
            try:
                return super().attend(q, k, v, mask, training)
            finally:
                performer.KERNELS["exp"] = saved

    return Variant


def train_step(layer):
    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x, training=True) ** 2)
        return tape.gradient(loss, [x, *layer.trainable_weights])

    return step


def relative(a, b):
    return float(tf.reduce_max(tf.abs(a - b)) / tf.reduce_max(tf.abs(a)))


def compare(name, current, variant):
    x = tf.random.normal((1, LENGTH, WIDTH), seed=0)
    current(x), variant(x)
    variant.set_weights(current.get_weights())
    steps = train_step(current), train_step(variant)
    grads = [step(x) for step in steps]
    scale = max(float(tf.reduce_max(tf.abs(g))) for g in grads[0])
    gradient_error = max(float(tf.reduce_max(tf.abs(a - b))) for a, b in zip(*grads)) / scale
    for _ in range(3):
        [step(x) for step in steps]
    ratios, times = [], ([], [])
    for round_ in range(9):
        order = (0, 1, 1, 0) if round_ % 2 == 0 else (1, 0, 0, 1)
        spent = ([], [])
        for side in order + order[:2]:
            start = time.perf_counter()
            steps[side](x)[0].numpy()
            spent[side].append(time.perf_counter() - start)
        ratios.append(np.median(spent[0]) / np.median(spent[1]))
        times[0].extend(spent[0]), times[1].extend(spent[1])
    current_ms, variant_ms = (1e3 * np.median(spent) for spent in times)
    print(f"{name}: outputs differ by {relative(current(x), variant(x)):.1e}, gradients by "
          f"{gradient_error:.1e} (relative to the largest gradient); current {current_ms:.1f} ms, "
          f"variant {variant_ms:.1f} ms; current / variant {np.median(ratios):.3f} "
          f"[{min(ratios):.3f}-{max(ratios):.3f}]")
