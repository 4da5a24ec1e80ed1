"""Model FLOP utilisation (MFU) of a GPU training run: the model's FLOPs per step (the matmul
FLOPs of the encoder's forward + backward, `benchmark.costs.model_train_flops`) times steps/s,
over the bf16 matmul rate measured on the device at the start of the run (a jitted 8192-cube
matmul, the best of 10 calls). Measured only on a GPU: on a CPU the rate would cost seconds and
say little; `for_run` then gives None and nothing is logged.
"""

import dataclasses
import functools

from arena_tf.benchmark import costs

MATMUL_SIZE = 8192


@dataclasses.dataclass(frozen=True)
class Utilisation:
    flops_per_step: float
    matmul_tflops: float

    def fraction(self, steps_per_second):
        """The model FLOP utilisation at `steps_per_second`, 0 to 1."""
        return self.flops_per_step * steps_per_second / (self.matmul_tflops * 1e12)

    def record(self, steps_per_second):
        """What metrics.json states."""
        return {
            "model_flops_per_step": self.flops_per_step,
            "matmul_bf16_tflops": self.matmul_tflops,
            "model_flop_utilisation": self.fraction(steps_per_second),
        }


def model_flops_per_step(model, batch_size):
    """Forward + backward matmul FLOPs of one training step of ModelConfig `model` (its CLS token
    adds one position)."""
    shape = costs.Shape(
        batch_size, model.max_len + 1, model.num_heads, model.qkv_dim // model.num_heads
    )
    return costs.model_train_flops(
        model.attention, shape, model.attention_params, model.num_layers, model.mlp_dim
    )


def bf16_matmul_tflops(size=MATMUL_SIZE):
    """The bf16 matmul rate of this process's Keras backend's device, TFLOP/s."""
    import keras

    from arena_tf.benchmark import machine

    if keras.backend.backend() == "jax":
        from arena_tf.benchmark import jax_measure

        product = functools.partial(jax_measure.matmul_product, dtype="bfloat16")
    else:
        product = tensorflow_bf16_product
    return machine.matmul_rate(product, size) / 1e3


def tensorflow_bf16_product(size):
    """A blocking call of a traced bf16 tf.matmul of two [size, size] matrices."""
    import tensorflow as tf

    from arena_tf.benchmark import machine

    a, b = (tf.cast(tf.constant(x), tf.bfloat16) for x in machine.operands(size))
    product = tf.function(tf.matmul)
    return lambda: product(a, b).numpy()


def for_run(config, gpu):
    """The Utilisation of a run of ExperimentConfig `config` on a GPU (`gpu` True), else None."""
    if not gpu:
        return None
    return Utilisation(
        model_flops_per_step(config.model, config.train.batch_size), bf16_matmul_tflops()
    )
