"""`build_classifier(config)`: the LRA classifiers, one input or two towers sharing one encoder.

from arena_tf.config import ModelConfig
from arena_tf.models import build_classifier
model = build_classifier(ModelConfig(attention="performer", max_len=1024, num_classes=2))
logits = model(tokens)                     # tokens int32 [batch, length], logits [batch, 2]
"""

import keras

from arena_tf.config import ModelConfig
from arena_tf.encoder import Encoder


def classifier_head(config, features, name):
    """Dense(mlp) -> ReLU -> Dense(classes); logits in float32 under mixed precision."""
    hidden = keras.layers.Dense(config.mlp_dim, activation="relu", name=f"{name}_hidden")(features)
    return keras.layers.Dense(config.num_classes, dtype="float32", name=f"{name}_logits")(hidden)


def build_classifier(config, remat=False):
    """A keras.Model from tokens (two inputs when `config.two_tower`) to class logits; `remat`
    recomputes each encoder block in the backward pass (`arena_tf.remat`)."""
    if isinstance(config, dict):
        config = ModelConfig(**config)
    encoder = Encoder(config, remat=remat, name="encoder")
    if not config.two_tower:
        tokens = keras.Input((None,), dtype="int32", name="tokens")
        logits = classifier_head(config, encoder(tokens), "classifier")
        return keras.Model(tokens, logits, name=f"{config.attention}_classifier")
    first = keras.Input((None,), dtype="int32", name="tokens_1")
    second = keras.Input((None,), dtype="int32", name="tokens_2")
    x1, x2 = encoder(first), encoder(second)
    combined = keras.layers.Concatenate(name="combine")([x1, x2, x1 * x2, x1 - x2])
    logits = classifier_head(config, combined, "classifier")
    return keras.Model([first, second], logits, name=f"{config.attention}_two_tower")


def load_classifier(path):
    """A saved classifier (`model.keras`); importing this module registers arena_tf's layers,
    which plain `keras.saving.load_model` needs first."""
    return keras.saving.load_model(path)


def state_space_variables(model):
    """The variables of the state spaces in `model`'s encoder (what each mechanism declares in
    `state_space_weights`), for their own optimiser group (`arena_tf.schedules.make_optimizer`)."""
    mechanisms = [block.attention for block in model.get_layer("encoder").blocks]
    return [getattr(m, name) for m in mechanisms for name in m.state_space_weights]
