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
import math
import pathlib
import re
from typing import Optional

import yaml

from arena_tf import precision as precisions
from arena_tf.cli import UsageError
from arena_tf.settings import check_model_relations, check_ranges

CONFIGS_DIR = pathlib.Path(__file__).resolve().parent.parent / "configs"

POOLINGS = ("cls", "mean")
POSITION_EMBEDDINGS = ("sinusoidal", "sinusoidal_2d", "learned", "none")
TOKEN_EMBEDDINGS = ("table", "intensity")
# model.block: the encoder's block layouts (arena_tf/blocks.py: BLOCKS).
BLOCKS = ("transformer", "s4", "s5", "mega")


class ConfigError(UsageError, ValueError):
    """A configuration value is unknown, of the wrong type or impossible.

    A user's mistake (exit 2 on the command line, `arena_tf.cli`), raised with three parts,
    `ConfigError(what, expected, fix)`, read as `<what>; expected <expected>; <fix>`. Still a
    ValueError, for the `except` clauses written before."""

    def prefixed(self, source):
        """The same error with `source: ` (a file, a --set) before what was wrong."""
        return ConfigError(f"{source}: {self.what}", self.expected, self.fix)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Everything `arena_tf.models.build_classifier` needs.

    attention / attention_params: the mechanism's registry name and its own parameters.
    qkv_dim: total width of queries, keys and values over all heads (head width = qkv_dim / heads).
    max_len: longest input sequence (per input; a CLS token adds one position inside the encoder).
    padding_id: the token id of padding (masked out), or None where every id is real (pixels).
    token_embedding: "table", one learned vector per token id (the LRA code's, also for pixels), or
        "intensity", for pixel tasks: id t read as a brightness, (2 t / (vocab_size - 1) - 1) times
        one learned vector plus another (S4's and Mega's image input: a linear map of the
        normalised pixel).
    two_tower: two inputs through one shared encoder, combined as [x1, x2, x1*x2, x1-x2].
    block: the encoder's block layout (`arena_tf.blocks`): "transformer" (pre-LayerNorm, with an
        MLP; any mechanism), "s4" (S4's post-norm block with a GLU, s4d or s5), "s5" (S5's
        pre-norm block with a half-GLU, s4d or s5) or "mega" (Mega's gated residual and
        post-norm MLP, mega). Default "transformer". s4 and s5 run the state space on the
        emb_dim channels of the residual stream itself: num_heads and qkv_dim do not apply.
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
    token_embedding: str = "table"
    two_tower: bool = False
    padding_id: Optional[int] = 0
    block: str = "transformer"
    seed: int = 0

    def __post_init__(self):
        check_types(self)
        check_ranges("model", self, ConfigError)
        for name, choices in (
            ("pooling", POOLINGS),
            ("position_embedding", POSITION_EMBEDDINGS),
            ("token_embedding", TOKEN_EMBEDDINGS),
            ("block", BLOCKS),
        ):
            if getattr(self, name) not in choices:
                raise ConfigError(
                    f"{name}={getattr(self, name)!r} is invalid",
                    f"one of {', '.join(choices)}",
                    f"set model.{name} to one of them",
                )
        check_model_relations(self, ConfigError)

    @property
    def head_dim(self):
        return self.qkv_dim // self.num_heads

    @property
    def reads_pixels(self):
        """Whether the tokens are pixels (image, pathfinder, pathx): every id is real, none pads."""
        return self.padding_id is None

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
            raise ConfigError(
                f"{field.name}={value!r} has the wrong type",
                f"a value of type {expected}",
                f"correct the value of {field.name}",
            )


SCHEDULES = ("rsqrt", "cosine", "constant")
# Keras's policy names, or "auto" (arena_tf/precision.py)
PRECISIONS = (precisions.AUTO, *precisions.POLICIES.values())


@dataclasses.dataclass(frozen=True)
class TaskConfig:
    """Which task, where its data is, and task constructor parameters (e.g. generated set sizes)."""

    name: str = "listops"
    data_dir: Optional[str] = None
    max_len: Optional[int] = None
    params: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        check_types(self)
        check_ranges("task", self, ConfigError)


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
    precision: str = "auto"  # mixed_bfloat16 on a GPU, float32 elsewhere
    remat: bool = False  # recompute each encoder block in the backward pass (arena_tf/remat.py)
    # Step-size factors by weight name, e.g. {skip: 0.5} (arena_tf/schedules.py: ScaledAdamW).
    learning_rate_scales: dict = dataclasses.field(default_factory=dict)
    # The weights each state-space layer declares its state space (`state_space_weights`: S4D's
    # log_dt, log_a_real, a_imag; S5's Lambda and log_dt; Mega's EMA): their step-size factor,
    # and whether weight decay acts on them. S4 and S5 train them at a tenth of the rate (S4:
    # 0.001 against 0.01) without weight decay: 0.1 and false.
    state_space_learning_rate_scale: float = 1.0
    state_space_weight_decay: bool = True
    # 0: every training batch padded to the task's max_len; N: training examples grouped by length
    # into N buckets up to max_len, each batch cut to its bucket's length (Task.dataset under
    # TensorFlow, Task.batches under JAX), for the tasks with padding; evaluation batches stay
    # padded to max_len.
    length_buckets: int = 0
    seed: int = 0

    def __post_init__(self):
        check_types(self)
        check_ranges("train", self, ConfigError)
        for name, choices in (("schedule", SCHEDULES), ("precision", PRECISIONS)):
            if getattr(self, name) not in choices:
                raise ConfigError(
                    f"train.{name}={getattr(self, name)!r} is invalid",
                    f"one of {', '.join(choices)}",
                    f"set train.{name} to one of them",
                )
        for name, scale in self.learning_rate_scales.items():
            if (
                isinstance(scale, bool)
                or not isinstance(scale, (int, float))
                or not (math.isfinite(scale) and scale > 0)
            ):
                raise ConfigError(
                    f"train.learning_rate_scales.{name}={scale!r} is invalid",
                    "a positive number (a factor of the learning rate)",
                    f"set train.learning_rate_scales.{name} to e.g. 0.1",
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


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping gives a key twice; `keys` lists them."""

    def __init__(self, keys, mark):
        self.keys = keys
        super().__init__(None, None, f"key(s) {', '.join(keys)} given twice", mark)


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last silently)
    and any alias (`*name`: a few hundred bytes of nested aliases stand for a value too large to
    print or copy; a config spells each value out), and reads 1e-3 as a number (YAML 1.1 asks for
    1.0e-3)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"found the alias *{event.anchor[:40]}, and aliases are not accepted "
                "(write the value out)",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if repeated:
            raise DuplicateKeyError(repeated, node.start_mark)
        return super().construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _yaml_problem(error):
    """(what PyYAML found wrong, in one line; the 1-based line of the problem or None)."""
    problem = getattr(error, "problem", None) or str(error)
    context = getattr(error, "context", None)
    if context and not isinstance(error, DuplicateKeyError):
        problem = f"{context}, {problem}"
    mark = getattr(error, "problem_mark", None)
    return " ".join(str(problem).split()), (mark.line + 1 if mark is not None else None)


def read_yaml(path, keys=None):
    """A YAML mapping of sections (or of `keys`, for another kind of file); a clear error naming
    the file (and line) otherwise."""
    try:
        data = (
            yaml.load(pathlib.Path(path).read_text(encoding="utf-8"), Loader=_UniqueKeyLoader) or {}
        )
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {error.start}: "
            f"{error.object[error.start : error.start + 1]!r})",
            "a YAML file in UTF-8",
            f"save {path} as UTF-8",
        ) from None
    except yaml.YAMLError as error:
        problem, line = _yaml_problem(error)
        where = f" at line {line}" if line else ""
        if isinstance(error, DuplicateKeyError):
            raise ConfigError(
                f"{path}: not valid YAML{where} ({problem})",
                "each key once in a mapping",
                f"keep one {error.keys[0]}: line in {path}",
            ) from None
        raise ConfigError(
            f"{path}: not valid YAML{where} ({problem})",
            "a YAML mapping" + (" of sections" if keys is None else ""),
            f"correct the YAML of {path}{where}",
        ) from None
    except OSError as error:
        raise ConfigError(
            f"cannot read {path} ({error.strerror or error})",
            "a readable YAML file",
            "check the path and its permissions",
        ) from None
    if not isinstance(data, dict):
        expected, form = (
            (f"sections {', '.join(SECTIONS)}", "`section:` blocks of `key: value`")
            if keys is None
            else (", ".join(keys), "`key: value`")
        )
        raise ConfigError(
            f"{path}: holds a {type(data).__name__}, not a mapping",
            f"a mapping of {expected}",
            f"write {path} as {form} lines",
        )
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
                f"{source}: unknown section {section!r}",
                f"one of {', '.join(SECTIONS)}",
                "correct the section name",
            )
        known = {f.name for f in dataclasses.fields(SECTIONS[section])}
        if values is not None and not isinstance(values, dict):
            raise ConfigError(
                f"{source}: section {section} holds {values!r}, not keys and values",
                f"a mapping of {section} keys ({', '.join(sorted(known))})",
                f"write the {section} settings as `key: value` lines under it",
            )
        for key, value in (values or {}).items():
            if key not in known:
                raise ConfigError(
                    f"{source}: unknown key {section}.{key}",
                    f"one of {', '.join(sorted(known))}",
                    "correct the key name",
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
            f"--set {text!r} is invalid",
            "section.key=value, e.g. train.batch_size=8",
            "name the section and the key before the '='",
        )
    try:
        nested = yaml.load(value, Loader=_UniqueKeyLoader)
    except DuplicateKeyError as error:
        raise ConfigError(
            f"--set {text!r} gives the key {' and '.join(error.keys)} twice",
            "each key once in a mapping",
            f"keep one {error.keys[0]}: in the value",
        ) from None
    except yaml.YAMLError as error:
        problem, _ = _yaml_problem(error)
        raise ConfigError(
            f"--set {text!r}: the value {value!r} is not valid YAML ({problem})",
            "a YAML value after the '=', e.g. train.batch_size=8 or "
            "'model.attention_params={projected_length: 8}'",
            "close every bracket and quote, and quote the whole --set for the shell",
        ) from None
    for name in reversed(path[1:]):
        nested = {name: nested}
    return {path[0]: nested}


def build_section(section, values, sources):
    """Instantiate one section's dataclass, naming the file of a bad value in the error."""
    try:
        return SECTIONS[section](**values)
    except ConfigError as error:
        field = re.match(r"(?:\w+\.)?(\w+)=", str(error.what))
        source = sources.get(f"{section}.{field.group(1)}") if field else None
        raise error.prefixed(source or section) from None


def named_file(configs_dir, folder, name, flag, or_none=""):
    """configs_dir/folder/name.yaml, where `name` is one of that folder's names (a path, such as
    '../tasks/listops', is not); otherwise ConfigError listing them."""
    names = sorted(p.stem for p in (configs_dir / folder).glob("*.yaml") if "." not in p.stem)
    if name not in names:
        raise ConfigError(
            f"unknown {flag[2:]} {name!r}",
            f"one of {', '.join(names)}",
            f"pass {flag} with one of them{or_none}",
        )
    return configs_dir / folder / f"{name}.yaml"


def config_layers(task, model, preset=None, configs_dir=CONFIGS_DIR):
    """The YAML files that make an experiment, in merge order (missing optional ones skipped)."""
    configs_dir = pathlib.Path(configs_dir)
    layers = [
        named_file(configs_dir, "tasks", task, "--task"),
        named_file(configs_dir, "models", model, "--model"),
    ]
    per_model = configs_dir / "tasks" / f"{task}.models.yaml"
    if per_model.exists():
        layers.append((per_model, model))
    if preset is not None:
        layers.append(named_file(configs_dir, "presets", preset, "--preset", ", or none"))
        per_task = configs_dir / "presets" / f"{preset}.{task}.yaml"
        if per_task.exists():
            layers.append(per_task)
    return layers


def refuse_changed_choices(raw, sources, task, model):
    """ConfigError where a YAML file or --set changed the task or mechanism --task / --model chose
    (the run would train one thing under the other's name)."""
    for section, key, flag, chosen in (
        ("task", "name", "--task", task),
        ("model", "attention", "--model", model),
    ):
        value = raw[section][key]
        if value != chosen:
            raise ConfigError(
                f"{sources.get(f'{section}.{key}')}: sets {section}.{key} to "
                f"{value!r}, but {flag} chose {chosen!r}",
                f"{flag} alone to pick the {section}",
                f"pass {flag}={value} instead",
            )


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
    refuse_changed_choices(raw, sources, task, model)
    raw["model"].update(derived or {})
    return ExperimentConfig(**{s: build_section(s, raw.get(s, {}), sources) for s in SECTIONS})


def read_run_config(run_dir, required=()):
    """The ExperimentConfig a training run saved in run_dir/config.yaml; a ConfigError when there
    is none, it does not hold a valid config or it lacks one of the `required` sections (which
    would otherwise read as their defaults)."""
    path = pathlib.Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} has no config.yaml",
            "a run directory of `python -m arena_tf.train`",
            "pass the --run-dir of a finished training run",
        )
    raw = read_yaml(path)
    if not raw.keys() & SECTIONS.keys():  # an empty file would read as every default
        raise ConfigError(
            f"{path} holds none of the sections {', '.join(SECTIONS)}",
            "the config.yaml that training wrote",
            "retrain into a fresh run directory, or restore the file",
        )
    for name in required:
        if name not in raw:
            raise ConfigError(
                f"{path}: no {name} section",
                "the config.yaml that training wrote",
                "retrain into a fresh run directory, or restore the file",
            )
    for name in SECTIONS:
        if not isinstance(raw.get(name, {}), dict):
            raise ConfigError(
                f"{path}: section {name} holds {raw[name]!r}, not keys and values",
                "the config.yaml that training wrote",
                "retrain into a fresh run directory, or restore the file",
            )
    try:
        return ExperimentConfig(
            **{name: cls(**raw.get(name, {})) for name, cls in SECTIONS.items()}
        )
    except (TypeError, ConfigError) as error:
        raise ConfigError(
            f"{path} is not a valid experiment config ({error})",
            "the config.yaml that training wrote",
            "retrain into a fresh --run-dir",
        ) from None
