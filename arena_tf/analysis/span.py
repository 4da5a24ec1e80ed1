"""Required attention span (LRA paper, section 2.3) of a trained model.

For one attention module, one head and one sequence, the span is the mean over the real query
positions i of sum_j w_ij |i - j|: the distance between a query and the positions it attends to,
weighted by the attention weights w (`weights.as_distribution` of the implied matrix: the attention
weights themselves for softmax mechanisms). The span of a model averages it over heads, layers
(attention modules) and sequences; `per_layer` and `per_head` keep the finer averages.

Distances are in encoder positions, all real positions taking part (the CLS token too, at position
0, when the model pools by CLS); padding is neither a query nor a key.

    accumulator = SpanAccumulator(num_layers=4, num_heads=4)
    for layer, (weights, mask) in enumerate(layer_weights(encoder, tokens)):
        accumulator.add(layer, weights, mask)
    accumulator.result()     # {"span": ..., "per_layer": [...], "per_head": [[...]], ...}
"""

import numpy as np

from arena_tf.analysis.weights import as_distribution, weight_summary


def distances(length):
    """|i - j| for every pair of positions, [length, length] float32."""
    positions = np.arange(length, dtype="float32")
    return np.abs(positions[:, None] - positions[None, :])


def uniform_span(length):
    """Span of uniform attention over `length` positions: mean |i - j| = (L^2 - 1) / (3 L)."""
    return (length**2 - 1) / (3 * length)


def head_spans(weights, mask):
    """[batch, heads] spans: per head, the mean over real queries i of sum_j w_ij |i - j|, with w
    the row-normalised |weights| ([batch, heads, L, L]) and mask bool [batch, L] (True = real)."""
    per_query = np.einsum("bhij,ij->bhi", as_distribution(weights), distances(weights.shape[-1]))
    real = mask.astype("float32")[:, None, :]
    return (per_query * real).sum(axis=-1) / np.maximum(real.sum(axis=-1), 1.0)


class SpanAccumulator:
    """Sums spans per (layer, head) over batches of sequences; `result` averages them."""

    def __init__(self, num_layers, num_heads):
        self.totals = np.zeros((num_layers, num_heads))
        self.counts = np.zeros(num_layers)
        self.summaries = []

    def add(self, layer, weights, mask):
        """Add one layer's weights [batch, heads, L, L] over a batch of sequences (mask [b, L])."""
        self.totals[layer] += head_spans(weights, mask).sum(axis=0)
        self.counts[layer] += weights.shape[0]
        self.summaries.append(weight_summary(weights, mask))

    def result(self):
        """{'span', 'per_layer', 'per_head', 'sequences', 'row_sum_min', 'row_sum_max',
        'negative_mass'} over everything added."""
        per_head = self.totals / np.maximum(self.counts, 1)[:, None]
        return {
            "span": float(per_head.mean()),
            "per_layer": per_head.mean(axis=1).tolist(),
            "per_head": per_head.tolist(),
            "sequences": int(self.counts[0]),
            "row_sum_min": min(s["row_sum_min"] for s in self.summaries),
            "row_sum_max": max(s["row_sum_max"] for s in self.summaries),
            "negative_mass": max(s["negative_mass"] for s in self.summaries),
        }
