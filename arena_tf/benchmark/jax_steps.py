"""Training steps/s of an LRA classifier under JAX (`gpu`'s Table 2 and ListOps parts); no
TensorFlow.

One step is what `arena_tf.training.jax_trainer` runs: `jax.jit` of Keras' stateless calls
(`model.stateless_call` inside `jax.value_and_grad`, then `optimizer.stateless_apply`), AdamW as
the trainer's (`schedules.make_optimizer`), dropout on, on random tokens. The step is lowered and
compiled first (the seconds it took are stored as `compile_s`), then timed by `timing.time_calls`
with `jax.block_until_ready`; its memory is XLA's memory analysis of the compiled step (arguments +
outputs + temporaries - aliased buffers): what the step needs, not a high-water mark of the process.
"""

import time

import jax
import jax.numpy as jnp
import keras
import numpy as np

from arena_tf.benchmark import jax_measure, timing
from arena_tf.config import TrainConfig
from arena_tf.models import build_classifier
from arena_tf.schedules import make_optimizer


def build(config):
    """(model, optimizer) of ModelConfig `config` under the global dtype policy, built."""
    keras.utils.set_random_seed(0)
    model = build_classifier(config)
    optimizer = make_optimizer(TrainConfig())
    optimizer.build(model.trainable_variables)
    return model, optimizer


def train_step(model, optimizer):
    """A pure step (state, tokens, labels) -> (loss, state), state = (trainable, non-trainable,
    optimizer variables)."""

    def loss_of(trainable, non_trainable, tokens, labels):
        logits, non_trainable = model.stateless_call(
            trainable, non_trainable, tokens, training=True
        )
        loss = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        return jnp.mean(loss), non_trainable

    gradient = jax.value_and_grad(loss_of, has_aux=True)

    def step(state, tokens, labels):
        trainable, non_trainable, optimizer_values = state
        (loss, non_trainable), grads = gradient(trainable, non_trainable, tokens, labels)
        trainable, optimizer_values = optimizer.stateless_apply(optimizer_values, grads, trainable)
        return loss, (trainable, non_trainable, optimizer_values)

    return step


def measure(config, batch, spec):
    """{steps_per_second, step (timing), compile_s, memory_mb, compiled}: training steps of
    ModelConfig `config` on `batch` random sequences of config.max_len tokens."""
    model, optimizer = build(config)
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(1, config.vocab_size, (batch, config.max_len)), jnp.int32)
    labels = jnp.asarray(rng.integers(0, config.num_classes, batch), jnp.int32)
    state = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )
    start = time.perf_counter()
    executable = (
        jax.jit(train_step(model, optimizer), donate_argnums=0)
        .lower(state, tokens, labels)
        .compile()
    )
    compile_s = time.perf_counter() - start
    holder = [state]

    def one_step():
        loss, holder[0] = executable(holder[0], tokens, labels)
        jax.block_until_ready(loss)

    stats = timing.time_calls(one_step, **timing.call_options(spec))
    analysed = jax_measure.analysed_mb(executable)
    needed = (
        analysed["argument_mb"] + analysed["output_mb"] + analysed["temp_mb"] - analysed["alias_mb"]
    )
    return {
        "steps_per_second": 1e3 / stats["median_ms"],
        "step": stats,
        "compile_s": compile_s,
        "memory_mb": needed,
        "compiled": analysed,
        "device_peak_mb": jax_measure.device_peak_mb(),
    }
