"""Configuration dataclasses; every field is validated, so a bad value fails at once with its name.

    config = ModelConfig(attention="linformer", attention_params={"projected_length": 32},
                         num_layers=2, num_heads=4, emb_dim=64, qkv_dim=64, mlp_dim=128,
                         max_len=1024, vocab_size=257, num_classes=2)
"""

import dataclasses
from typing import Optional

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
}


def check_types(config):
    """Raise ConfigError naming the first field whose value has the wrong type."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        accepted = _ACCEPTED[field.type]
        if not isinstance(value, accepted) or (isinstance(value, bool) and bool not in accepted):
            expected = " or ".join(t.__name__ for t in accepted)
            raise ConfigError(f"{field.name}={value!r} has the wrong type; expected {expected}")
