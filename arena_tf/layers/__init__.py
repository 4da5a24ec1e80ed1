"""Attention mechanisms of Long Range Arena and state-space mixers, one file each, behind one
registry.

    import arena_tf.layers as layers
    layers.available()                         # ['bigbird', 'full', ...]
    attention = layers.get("performer", num_heads=4, head_dim=32, num_features=256)
    y = attention(x, mask=mask, training=False)
"""

import importlib

from arena_tf.layers.base import Attention
from arena_tf.layers.registry import available, get, lookup, register

MECHANISMS = (
    "full",
    "local",
    "linear",
    "performer",
    "linformer",
    "synthesizer",
    "sparse",
    "longformer",
    "bigbird",
    "sinkhorn",
    "reformer",
    "s4d",
    "s5",
    "mega",
)

for _module in MECHANISMS:  # importing a module registers what it defines
    importlib.import_module(f"arena_tf.layers.{_module}")

__all__ = ["Attention", "available", "get", "lookup", "register"]
