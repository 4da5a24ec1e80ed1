"""Attention rollout (Abnar and Zuidema, 2020, "Quantifying Attention Flow in Transformers").

Each block adds its attention's output to a residual stream, so position i after a block holds
itself plus what it attended to. Rollout models this as A' = 0.5 A + 0.5 I with rows normalised,
and multiplies across layers, R = A'_n ... A'_2 A'_1: row i of R is how much each input position
contributes to position i at the top of the encoder.

    R = rollout([layer_1_weights, layer_2_weights])      # each [..., L, L], heads averaged
"""

import numpy as np


def with_residual(weights):
    """0.5 A + 0.5 I with every row normalised to sum to 1 ([..., L, L])."""
    mixed = 0.5 * weights + 0.5 * np.eye(weights.shape[-1], dtype=weights.dtype)
    return mixed / mixed.sum(axis=-1, keepdims=True)


def rollout(layer_weights):
    """R [..., L, L] = A'_n ... A'_1 for the weights of layers 1..n (first layer first), with
    A' = `with_residual(A)`; each A [..., L, L] is a row distribution (heads averaged)."""
    result = None
    for weights in layer_weights:
        step = with_residual(weights)
        result = step if result is None else step @ result
    if result is None:
        raise ValueError("rollout needs the weights of at least one layer; got none")
    return result
