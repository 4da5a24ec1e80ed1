"""Configuration: validated dataclasses, merged from YAML files and `--set key=value` overrides.

    config = ModelConfig(attention="linformer", attention_params={"projected_length": 32},
                         num_layers=2, num_heads=4, emb_dim=64, qkv_dim=64, mlp_dim=128,
                         max_len=1024, vocab_size=257, num_classes=2)
    experiment = load_experiment("image", "linformer", overrides=["train.batch_size=64"])

Every field is checked, so an unknown key, a wrong type or an impossible value fails at once with
the key and the file it came from.
"""

import copy
import dataclasses
import pathlib
import re
from typing import Optional

import yaml

CONFIGS_DIR = pathlib.Path(__file__).resolve().parent.parent / "configs"

POOLINGS = ("cls", "mean")
POSITION_EMBEDDINGS = ("sinusoidal", "learned")


class ConfigError(ValueError):
    """A configuration value is unknown, of the wrong type or impossible."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Everything `arena_tf.models.build_classifier` needs.

    attention / attention_params: the mechanism's registry name and its own parameters.
    qkv_dim: total width of queries, keys and values over all heads (head width = qkv_dim / heads).
    max_len: longest input sequence (per input; a CLS token adds one position inside the encoder).
    padding_id: the token id of padding (masked out), or None where every id is real (pixels).
    two_tower: two inputs through one shared encoder, combined as [x1, x2, x1*x2, x1-x2].
    """

    attention: str = "full"
    attention_params: dict = dataclasses.field(default_factory=dict)
    num_layers: int = 2
    num_heads: int = 4
    emb_dim: int = 64
    qkv_dim: int = 64
    mlp_dim: int = 128
    dropout: float = 0.1
    attention_dropout: float = 0.1
    max_len: int = 1024
    vocab_size: int = 257
    num_classes: int = 2
    pooling: str = "cls"
    position_embedding: str = "sinusoidal"
    two_tower: bool = False
    padding_id: Optional[int] = 0
    seed: int = 0

    def __post_init__(self):
        check_types(self)
        for name in ("num_layers", "num_heads", "emb_dim", "qkv_dim", "mlp_dim", "max_len"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} is invalid; expected >= 1")
        if self.num_classes < 2 or self.vocab_size < 2:
            raise ConfigError("num_classes and vocab_size must be >= 2")
        for name in ("dropout", "attention_dropout"):
            if not 0 <= getattr(self, name) < 1:
                raise ConfigError(f"{name}={getattr(self, name)} is invalid; expected in [0, 1)")
        if self.qkv_dim % self.num_heads:
            raise ConfigError(
                f"qkv_dim={self.qkv_dim} is not divisible by num_heads={self.num_heads}; choose "
                "a qkv_dim that is a multiple of num_heads"
            )
        for name, choices in (("pooling", POOLINGS), ("position_embedding", POSITION_EMBEDDINGS)):
            if getattr(self, name) not in choices:
                raise ConfigError(
                    f"{name}={getattr(self, name)!r} is invalid; expected one of {', '.join(choices)}"
                )
        if self.padding_id is not None and not 0 <= self.padding_id < self.vocab_size:
            raise ConfigError(f"padding_id={self.padding_id} is outside the vocabulary")

    @property
    def head_dim(self):
        return self.qkv_dim // self.num_heads

    @property
    def encoder_len(self):
        """Positions the attention sees: the input plus the CLS token when pooling by CLS."""
        return self.max_len + (self.pooling == "cls")

    def to_dict(self):
        return dataclasses.asdict(self)


# Python types each annotation accepts (an int is a valid float; a bool is never a number).
_ACCEPTED = {
    int: (int,),
    float: (int, float),
    str: (str,),
    bool: (bool,),
    dict: (dict,),
    Optional[int]: (int, type(None)),
    Optional[float]: (int, float, type(None)),
    Optional[str]: (str, type(None)),
}


def check_types(config):
    """Raise ConfigError naming the first field whose value has the wrong type."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        accepted = _ACCEPTED[field.type]
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            expected = " or ".join(t.__name__ for t in accepted)
            raise ConfigError(f"{field.name}={value!r} has the wrong type; expected {expected}")


SCHEDULES = ("rsqrt", "cosine", "constant")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """Which task, where its data is, and task constructor parameters (e.g. generated set sizes)."""

    name: str = "listops"
    data_dir: Optional[str] = None
    max_len: Optional[int] = None
    params: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        check_types(self)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Optimiser, schedule and loop settings (LRA: AdamW b1 0.9, b2 0.98, eps 1e-9)."""

    batch_size: int = 32
    learning_rate: float = 0.05
    schedule: str = "rsqrt"
    warmup_steps: int = 1000
    num_train_steps: int = 5000
    weight_decay: float = 0.1
    grad_clip: Optional[float] = None
    eval_every: int = 500
    eval_batches: Optional[int] = None
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    log_every: int = 50
    precision: str = "float32"
    seed: int = 0

    def __post_init__(self):
        check_types(self)
        for name in ("batch_size", "num_train_steps", "eval_every", "checkpoint_every",
                     "keep_checkpoints", "log_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"train.{name}={getattr(self, name)} is invalid; expected >= 1")
        if self.learning_rate <= 0 or self.weight_decay < 0 or self.warmup_steps < 0:
            raise ConfigError("train.learning_rate must be > 0, weight_decay and warmup_steps >= 0")
        for name, choices in (("schedule", SCHEDULES), ("precision", PRECISIONS)):
            if getattr(self, name) not in choices:
                raise ConfigError(
                    f"train.{name}={getattr(self, name)!r} is invalid; expected one of "
                    f"{', '.join(choices)}"
                )


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    task: TaskConfig
    model: ModelConfig
    train: TrainConfig

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_yaml(self):
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


SECTIONS = {"task": TaskConfig, "model": ModelConfig, "train": TrainConfig}


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)
    and reads 1e-3 as a number (YAML 1.1 asks for 1.0e-3)."""

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if repeated:
            raise yaml.constructor.ConstructorError(
                None, None, f"key(s) {', '.join(repeated)} given twice", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def read_yaml(path):
    """A YAML mapping of sections; a clear error naming the file otherwise."""
    try:
        data = yaml.load(pathlib.Path(path).read_text(), Loader=_UniqueKeyLoader) or {}
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({' '.join(str(error).split())})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections {', '.join(SECTIONS)}")
    return data


def deep_merge(old, new):
    """`new` over `old`: dicts merge key by key at every depth, anything else is replaced."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {**old, **{k: deep_merge(old.get(k), v) for k, v in new.items()}}
    return copy.deepcopy(new)


def merge_into(raw, layer, source):
    """Merge one {section: {key: value}} layer into raw, checking sections and keys."""
    for section, values in layer.items():
        if section not in SECTIONS:
            raise ConfigError(
                f"{source}: unknown section {section!r}; expected one of {', '.join(SECTIONS)}"
            )
        known = {f.name for f in dataclasses.fields(SECTIONS[section])}
        for key, value in (values or {}).items():
            if key not in known:
                raise ConfigError(
                    f"{source}: unknown key {section}.{key}; expected one of "
                    f"{', '.join(sorted(known))}"
                )
            target = raw.setdefault(section, {})
            target[key] = deep_merge(target.get(key), value)
            raw.setdefault("_sources", {})[f"{section}.{key}"] = str(source)


def parse_override(text):
    """'train.batch_size=8' -> {'train': {'batch_size': 8}}; values are parsed as YAML, and deeper
    keys reach into dict fields: 'task.params.generator_spec.train=500'."""
    key, sep, value = text.partition("=")
    path = key.strip().split(".")
    if not sep or len(path) < 2 or not all(path):
        raise ConfigError(
            f"--set {text!r} is invalid; expected section.key=value, e.g. train.batch_size=8"
        )
    nested = yaml.load(value, Loader=_UniqueKeyLoader)
    for name in reversed(path[1:]):
        nested = {name: nested}
    return {path[0]: nested}


def build_section(section, values, sources):
    """Instantiate one section's dataclass, naming the file of a bad value in the error."""
    try:
        return SECTIONS[section](**values)
    except ConfigError as error:
        field = re.match(r"(?:\w+\.)?(\w+)=", str(error))
        source = sources.get(f"{section}.{field.group(1)}") if field else None
        raise ConfigError(f"{source or section}: {error}") from None


def config_layers(task, model, preset=None, configs_dir=CONFIGS_DIR):
    """The YAML files that make an experiment, in merge order (missing optional ones skipped)."""
    configs_dir = pathlib.Path(configs_dir)
    required = [configs_dir / "tasks" / f"{task}.yaml", configs_dir / "models" / f"{model}.yaml"]
    for path, kind, folder in ((required[0], "task", "tasks"), (required[1], "model", "models")):
        if not path.exists():
            names = sorted(p.stem for p in (configs_dir / folder).glob("*.yaml") if "." not in p.stem)
            raise ConfigError(
                f"unknown {kind} {path.stem!r}: no {path}; expected one of {', '.join(names)}"
            )
    layers = list(required)
    per_model = configs_dir / "tasks" / f"{task}.models.yaml"
    if per_model.exists():
        layers.append((per_model, model))
    if preset is not None:
        path = configs_dir / "presets" / f"{preset}.yaml"
        if not path.exists():
            names = sorted(p.stem for p in (configs_dir / "presets").glob("*.yaml") if "." not in p.stem)
            raise ConfigError(f"unknown preset {preset!r}; expected one of {', '.join(names)}")
        layers.append(path)
        per_task = configs_dir / "presets" / f"{preset}.{task}.yaml"
        if per_task.exists():
            layers.append(per_task)
    return layers


def load_experiment(task, model, overrides=(), preset=None, derived=None, configs_dir=CONFIGS_DIR):
    """Merge task YAML, model YAML, per-task model overrides, preset and --set into one config.

    `derived` holds model fields the task decides (vocab_size, num_classes, padding_id, two_tower,
    max_len); they are applied last, after the YAML, and cannot be set in YAML.
    """
    raw = {"task": {"name": task}, "model": {"attention": model}}
    for layer in config_layers(task, model, preset, configs_dir):
        if isinstance(layer, tuple):
            path, key = layer
            merge_into(raw, read_yaml(path).get(key, {}), f"{path} [{key}]")
        else:
            merge_into(raw, read_yaml(layer), layer)
    for text in overrides:
        merge_into(raw, parse_override(text), f"--set {text}")
    sources = raw.pop("_sources", {})
    raw["model"].update(derived or {})
    return ExperimentConfig(**{s: build_section(s, raw.get(s, {}), sources) for s in SECTIONS})
