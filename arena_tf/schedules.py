"""Learning-rate schedules of LRA: linear warmup then rsqrt decay, or warmup then cosine decay."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="arena_tf")
class WarmupRsqrt(keras.optimizers.schedules.LearningRateSchedule):
    """base * min(1, step / warmup) / sqrt(max(step, warmup)), as the LRA code's 'rsqrt_decay'."""

    def __init__(self, base, warmup_steps):
        self.base = base
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = float(max(self.warmup_steps, 1))
        return self.base * ops.minimum(1.0, step / warmup) / ops.sqrt(ops.maximum(step, warmup))

    def get_config(self):
        return {"base": self.base, "warmup_steps": self.warmup_steps}


def _cosine(train):
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0,
        decay_steps=max(train.num_train_steps - train.warmup_steps, 1),
        warmup_target=train.learning_rate,
        warmup_steps=train.warmup_steps,
    )


SCHEDULES = {
    "rsqrt": lambda train: WarmupRsqrt(train.learning_rate, train.warmup_steps),
    "cosine": _cosine,
    "constant": lambda train: train.learning_rate,
}


def make_schedule(train):
    """The schedule a TrainConfig names (config.SCHEDULES lists the same names)."""
    return SCHEDULES[train.schedule](train)


def make_optimizer(train):
    """AdamW as in LRA (b1 0.9, b2 0.98, eps 1e-9, decoupled weight decay, optional clipping);
    wrapped in a loss-scale optimizer under mixed_float16."""
    optimizer = keras.optimizers.AdamW(
        learning_rate=make_schedule(train),
        weight_decay=train.weight_decay,
        beta_1=0.9,
        beta_2=0.98,
        epsilon=1e-9,
        global_clipnorm=train.grad_clip,
    )
    if train.precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
