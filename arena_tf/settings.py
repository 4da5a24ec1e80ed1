"""Every numeric setting's range, declared once, and the relations between settings.

`RANGES[section][name]` is the one declaration of what a number in a config section may be
(`arena_tf/config.py` checks each section against it when the section is made, so before any
command writes anything); `RELATIONS` are the checks that read several settings at once. A value
outside its range is refused with one line naming the setting (`ConfigError`, exit 2). Every range
is finite: NaN and the infinities are never accepted (`x <= 0` is False for NaN, so a bare
comparison would let it through). Upper bounds keep a setting inside the shapes it makes: TensorFlow
and XLA index a tensor's elements with 32-bit integers in places, and a length or width beyond
them fails deep in a kernel; what does not fit the machine's memory is the memory guard's part
(`arena_tf/memory_guard.py`).

Attention parameters (`model.attention_params`) are checked by each mechanism
(`arena_tf/layers/checks.py`) when the model is built, which is also before anything is written; the
length-like ones are related to the model's length here.
"""

import dataclasses
import math
from typing import Optional

INT32_MAX = 2**31 - 1  # the largest element index or dimension the kernels take
LONGEST = 2**20  # tokens per input: Path-X is 16,384; a million is past any LRA task
WIDEST = 2**16  # emb_dim, qkv_dim: a 65,536-wide model is past any machine this code runs on


@dataclasses.dataclass(frozen=True)
class Range:
    """A finite number in [low, high] (`low_open`/`high_open` exclude the end); `none` says what
    None (YAML null) means where it is accepted; `fix` is the advice of a refusal."""

    low: float
    high: float = INT32_MAX
    low_open: bool = False
    high_open: bool = False
    none: Optional[str] = None
    fix: Optional[str] = None

    def accepts(self, value):
        if value is None:
            return self.none is not None
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self):
        """'in [0, 1)', 'in (0, infinity)', 'in [1, 1,048,576]', with what None means."""
        text = (
            f"in {'(' if self.low_open else '['}{number(self.low)}, {number(self.high)}"
            f"{')' if self.high_open or self.high == math.inf else ']'}"
        )
        return text + (f", or null ({self.none})" if self.none is not None else "")


def number(value):
    """1048576 -> '1,048,576'; 0.5 -> '0.5'; inf -> 'infinity'."""
    if value == math.inf:
        return "infinity"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def count(low=1, high=INT32_MAX, **kwargs):
    return Range(low, high, **kwargs)


RATE = Range(0, 1, high_open=True, fix="a rate such as 0.1")
DERIVED = "leave it to the task (it is derived from the data)"

RANGES = {
    "task": {
        "max_len": count(1, LONGEST, none="the task's own length"),
    },
    "model": {
        "num_layers": count(1, 1024),
        "num_heads": count(1, WIDEST),
        "emb_dim": count(1, WIDEST),
        "qkv_dim": count(1, WIDEST),
        "mlp_dim": count(1, 4 * WIDEST),
        "dropout": RATE,
        "attention_dropout": RATE,
        "max_len": count(1, LONGEST),
        "vocab_size": count(2, INT32_MAX, fix=DERIVED),
        "num_classes": count(2, 2**20, fix=DERIVED),
        "padding_id": count(
            0,
            INT32_MAX,
            none="every token id is real, as for pixels",
            fix="leave padding_id to the task",
        ),
        "seed": count(0, 2**32 - 1),
    },
    "train": {
        "batch_size": count(1, 2**20),
        "learning_rate": Range(
            0, math.inf, low_open=True, high_open=True, fix="a positive number such as 0.001"
        ),
        "warmup_steps": count(0),
        "num_train_steps": count(1),
        "weight_decay": Range(0, math.inf, high_open=True, fix="0 or more, such as 0.1"),
        "grad_clip": Range(
            0,
            math.inf,
            low_open=True,
            high_open=True,
            none="no clipping",
            fix="a positive gradient norm such as 1.0, or null",
        ),
        "eval_every": count(1),
        "eval_batches": count(
            1,
            none="every batch of the split",
            fix="a number of batches such as 16, or null for all",
        ),
        "checkpoint_every": count(1),
        "keep_checkpoints": count(1, 1000),
        "log_every": count(1),
        "length_buckets": count(0, 1024),
        "state_space_learning_rate_scale": Range(
            0, math.inf, low_open=True, high_open=True, fix="a positive factor such as 0.1"
        ),
        "seed": count(0, 2**32 - 1),
    },
}

# The settings whose huge values are accepted and left to a later check, with that check.
ACCEPTED_LATER = {
    "train.state_space_learning_rate_scale": "accepted, as train.learning_rate is: a factor of it",
    "train.learning_rate": "accepted (no shape or memory depends on it); the loss or the weights "
    "ceasing to be finite stop the run at that step (exit 1, 'lower "
    "train.learning_rate')",
    "train.weight_decay": "accepted (no shape or memory depends on it); the loss or the weights "
    "ceasing to be finite stop the run at that step (exit 1)",
    "train.grad_clip": "a norm larger than any gradient's clips nothing, as null does",
}


def check_ranges(section, config, error):
    """Raise `error(what, expected, fix)` naming the first setting of `config` (a dataclass of
    `section`) outside its declared range."""
    for name, declared in RANGES[section].items():
        value = getattr(config, name)
        if not declared.accepts(value):
            key = f"{section}.{name}"
            raise error(
                f"{key}={value!r} is invalid",
                declared.describe(),
                declared.fix
                if declared.fix and declared.fix.startswith("leave")
                else f"set {key} to {declared.fix or 'a value in that range'}",
            )


# Attention parameters that project the positions onto that many: more than the encoder's length
# only costs memory (a Linformer projection of a 256-token input onto 100,000 positions grows to
# gigabytes). Blocks and chunks longer than the input are padded and stay cheap (tiny presets use
# them); the memory guard watches what they cost.
LENGTH_PARAMS = ("projected_length",)


def check_model_relations(model, error):
    """The model settings that must agree with each other."""
    if model.qkv_dim % model.num_heads:
        raise error(
            f"qkv_dim={model.qkv_dim} is not divisible by num_heads={model.num_heads}",
            "a qkv_dim that is a multiple of num_heads",
            "change model.qkv_dim or model.num_heads",
        )
    if model.padding_id is not None and not model.padding_id < model.vocab_size:
        raise error(
            f"padding_id={model.padding_id} is outside the vocabulary",
            f"0 <= padding_id < vocab_size={model.vocab_size}, or None",
            "leave padding_id to the task",
        )


def check_attention_lengths(model, error):
    """Attention parameters that are a number of positions, against the model's length."""
    for name in LENGTH_PARAMS:
        value = model.attention_params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > model.encoder_len:
            cls = " plus the CLS token" if model.pooling == "cls" else ""
            raise error(
                f"model.attention_params.{name}={value} is longer than the input",
                f"at most the encoder's {model.encoder_len} positions (model.max_len="
                f"{model.max_len}{cls})",
                f"set model.attention_params.{name} to {model.encoder_len} or less",
            )


def check_with_the_data(experiment, error):
    """The relations that read the model's length, once it is the data's (a config starts with
    model.max_len's default; arena_tf/training/experiment.py calls this after the task set it)."""
    check_attention_lengths(experiment.model, error)
    check_grid_positions(experiment.model, error)
    check_activations(experiment, error)


def check_grid_positions(model, error):
    """Row-and-column positions need pixels of a square image, read row by row."""
    if model.position_embedding != "sinusoidal_2d":
        return
    fix = "use it with the image, pathfinder or pathx task, or another position embedding"
    if not model.reads_pixels:
        raise error(
            f"model.position_embedding=sinusoidal_2d gives each token an image row and "
            f"column, but these tokens are not pixels (the task pads with id "
            f"{model.padding_id})",
            "a pixel task (image, pathfinder, pathx)",
            fix,
        )
    side = math.isqrt(model.max_len)
    if side * side != model.max_len:
        raise error(
            f"model.position_embedding=sinusoidal_2d needs a square image, but the input "
            f"has {model.max_len} positions",
            "a max_len that is a square (1024 = 32 x 32)",
            fix,
        )


def check_activations(experiment, error):
    """The largest activation of a batch (its elements) must stay indexable by the kernels."""
    model, train = experiment.model, experiment.train
    towers = 2 if model.two_tower else 1
    widest = max(model.emb_dim, model.qkv_dim, model.mlp_dim)
    elements = train.batch_size * towers * model.encoder_len * widest
    if elements > INT32_MAX:
        most = max(1, INT32_MAX // (towers * model.encoder_len * widest))
        raise error(
            f"train.batch_size={train.batch_size} makes activations of {elements:,} "
            f"elements ({model.encoder_len} positions x {widest} wide)",
            f"at most {INT32_MAX:,} elements in one tensor",
            f"set train.batch_size to {most} or less",
        )


NUMERIC = (int, float, Optional[int], Optional[float])


def undeclared(sections):
    """Numeric fields of the config dataclasses without a declared range (a test keeps it empty)."""
    return sorted(
        f"{name}.{field.name}"
        for name, cls in sections.items()
        for field in dataclasses.fields(cls)
        if field.type in NUMERIC and field.name not in RANGES[name]
    )
