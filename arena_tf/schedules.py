"""Learning-rate schedules of LRA: linear warmup then rsqrt decay, or warmup then cosine decay;
and the optimizer (AdamW, with per-weight step-size factors where a config asks for them)."""

import keras
from keras import ops

from arena_tf.config import ConfigError


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


@keras.saving.register_keras_serializable(package="arena_tf")
class ScaledAdamW(keras.optimizers.AdamW):
    """AdamW whose step for a weight named in `learning_rate_scales` ({name: factor}) is taken
    at the scheduled learning rate times that factor, as a parameter group with its own rate in
    PyTorch (S4 trains its state matrix at a tenth of the network's rate). Weight decay keeps the
    global rate. Every name must match at least one weight (`Variable.name`, e.g. "log_a_real")."""

    def __init__(self, learning_rate_scales=None, **kwargs):
        super().__init__(**kwargs)
        self.learning_rate_scales = dict(learning_rate_scales or {})

    def build(self, variables):
        names = {variable.name for variable in variables}
        unmatched = sorted(set(self.learning_rate_scales) - names)
        if unmatched:
            raise ConfigError(f"train.learning_rate_scales names {', '.join(unmatched)}, which "
                              "no weight of the model is called",
                              f"names of the model's weights, e.g. {', '.join(sorted(names)[:4])}",
                              "correct the name or drop it from train.learning_rate_scales")
        self._scales = [self.learning_rate_scales.get(variable.name, 1.0)
                        for variable in variables]
        super().build(variables)

    def update_step(self, gradient, variable, learning_rate):
        scale = self._scales[self._get_variable_index(variable)]
        super().update_step(gradient, variable, learning_rate * scale)

    def get_config(self):
        return {**super().get_config(), "learning_rate_scales": self.learning_rate_scales}


def make_optimizer(train):
    """AdamW as in LRA (b1 0.9, b2 0.98, eps 1e-9, decoupled weight decay, optional clipping),
    `ScaledAdamW` where train.learning_rate_scales names weights; wrapped in a loss-scale
    optimizer under mixed_float16."""
    scaled = {"learning_rate_scales": train.learning_rate_scales} \
        if train.learning_rate_scales else {}
    optimizer = (ScaledAdamW if scaled else keras.optimizers.AdamW)(
        **scaled,
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
