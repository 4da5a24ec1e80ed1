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
    """AdamW whose step for a weight named in `learning_rate_scales` ({name: factor}), or given
    to `scale_variables`, is taken at the scheduled learning rate times that factor, as a
    parameter group with its own rate in PyTorch (S4 trains its state matrix at a tenth of the
    network's rate). Weight decay keeps the global rate. Every name must match at least one weight
    (`Variable.name`, e.g. "skip")."""

    def __init__(self, learning_rate_scales=None, **kwargs):
        super().__init__(**kwargs)
        self.learning_rate_scales = dict(learning_rate_scales or {})
        self._variable_scales = {}

    def scale_variables(self, var_list, factor):
        """Take the steps of the variables `var_list` at `factor` times the rate (called before
        `build`, as `exclude_from_weight_decay` is)."""
        self._variable_scales.update({self._var_key(v): factor for v in var_list})

    def build(self, variables):
        names = {variable.name for variable in variables}
        unmatched = sorted(set(self.learning_rate_scales) - names)
        if unmatched:
            raise ConfigError(
                f"train.learning_rate_scales names {', '.join(unmatched)}, which "
                "no weight of the model is called",
                f"names of the model's weights, e.g. {', '.join(sorted(names)[:4])}",
                "correct the name or drop it from train.learning_rate_scales",
            )
        self._scales = [
            self._variable_scales.get(
                self._var_key(variable), self.learning_rate_scales.get(variable.name, 1.0)
            )
            for variable in variables
        ]
        super().build(variables)

    def update_step(self, gradient, variable, learning_rate):
        scale = self._scales[self._get_variable_index(variable)]
        super().update_step(gradient, variable, learning_rate * scale)

    def get_config(self):
        return {**super().get_config(), "learning_rate_scales": self.learning_rate_scales}


def make_optimizer(train, state_space=()):
    """AdamW as in LRA (b1 0.9, b2 0.98, eps 1e-9, decoupled weight decay, optional clipping),
    `ScaledAdamW` where train.learning_rate_scales names weights or the state-space weights take
    their own rate; wrapped in a loss-scale optimizer under mixed_float16.

    Args:
        train: TrainConfig.
        state_space: the model's state-space variables (`models.state_space_variables`), which
            take train.state_space_learning_rate_scale times the rate, and no weight decay where
            train.state_space_weight_decay is false. Default: none.
    """
    scaled = bool(train.learning_rate_scales) or (
        bool(state_space) and train.state_space_learning_rate_scale != 1.0
    )
    optimizer = (ScaledAdamW if scaled else keras.optimizers.AdamW)(
        **({"learning_rate_scales": train.learning_rate_scales} if scaled else {}),
        learning_rate=make_schedule(train),
        weight_decay=train.weight_decay,
        beta_1=0.9,
        beta_2=0.98,
        epsilon=1e-9,
        global_clipnorm=train.grad_clip,
    )
    if scaled and state_space:
        optimizer.scale_variables(state_space, train.state_space_learning_rate_scale)
    if state_space and not train.state_space_weight_decay:
        optimizer.exclude_from_weight_decay(var_list=list(state_space))
    if train.precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def describe_groups(train, state_space):
    """The optimiser's groups as the run states them (printed and in metrics.json):
    {"state_space": {"weights": [names], "variables": n, "learning_rate_scale": f,
    "weight_decay": bool}}, or {}
    for a model without state-space weights."""
    if not state_space:
        return {}
    return {
        "state_space": {
            "weights": sorted({v.name for v in state_space}),
            "variables": len(state_space),
            "learning_rate_scale": train.state_space_learning_rate_scale,
            "weight_decay": train.state_space_weight_decay and bool(train.weight_decay),
        }
    }
