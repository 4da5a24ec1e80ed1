"""Attention maps of one example: what the pooled query attends to, per layer and rolled out.

The pooled query is the one the classifier reads: the CLS token (position 0) for CLS pooling, or
the average over the real query positions for mean pooling. Each layer's map is that query's row
of the head-averaged attention distribution (`weights.as_distribution`); the rollout map is its row
of `rollout.rollout` over all layers. Maps are returned over the input tokens (the CLS column is
dropped, so entry t is token t), as NumPy [length] arrays.

    maps = example_maps(encoder, tokens)   # {"layers": [map_1, ...], "rollout": map, "cls": ...}
"""

import numpy as np

from arena_tf.analysis.rollout import rollout
from arena_tf.analysis.walk import token_offset
from arena_tf.analysis.weights import as_distribution, layer_weights


def cls_query(matrix, mask):
    """Row 0 of [L, L]: what the CLS token attends to."""
    return matrix[0]


def mean_query(matrix, mask):
    """The average row of [L, L] over the real query positions (mask bool [L])."""
    return matrix[mask].mean(axis=0)


# Pooling (ModelConfig.pooling) -> the query the classifier reads.
POOLED_QUERIES = {"cls": cls_query, "mean": mean_query}

QUERY_NAMES = {"cls": "the CLS token", "mean": "the mean of the real positions"}


def example_maps(encoder, tokens):
    """{'layers': [[length] per layer], 'rollout': [length], 'query': description} for one
    sequence of int tokens [length]: the pooled query's attention over the input tokens."""
    pooling = encoder.config.pooling
    pooled = POOLED_QUERIES[pooling]
    matrices, mask = [], None
    for weights, mask in layer_weights(encoder, np.asarray(tokens)[None]):
        matrices.append(as_distribution(weights[0]).mean(axis=0))
    mask = mask[0]
    offset = token_offset(encoder)
    return {
        "layers": [pooled(matrix, mask)[offset:] for matrix in matrices],
        "rollout": pooled(rollout(matrices), mask)[offset:],
        "query": QUERY_NAMES[pooling],
    }
