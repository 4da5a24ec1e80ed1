"""What trained LRA models attend to: exact attention weights of any mechanism, the required
attention span (LRA paper, section 2.3) and attention maps with rollout (its appendix figure 5).

    python -m arena_tf.analysis span runs/pathfinder-full --examples 1000
    python -m arena_tf.analysis attention runs/pathfinder-full --example 3

Modules, one concept each:

- `walk`: the input every block's attention reads, by walking a trained encoder.
- `weights`: the implied attention matrix A (out = A v) of any mechanism, recovered exactly by
  calling its `attend` on columns of the identity matrix.
- `span`: the weighted mean query-key distance per head, layer and model.
- `rollout`: attention rollout across layers (Abnar and Zuidema, 2020).
- `maps`: the pooled query's attention per layer and rolled out, for one example.
- `plots`: the PNG figures.
- `rundir`: reading a training run directory (config.yaml, model.keras) and its task's data.
- `commands`: the two commands behind `python -m arena_tf.analysis`.
"""

from arena_tf.analysis.rollout import rollout, with_residual
from arena_tf.analysis.span import SpanAccumulator, head_spans, uniform_span
from arena_tf.analysis.weights import MAX_POSITIONS, as_distribution, implied_weights, layer_weights

__all__ = [
    "MAX_POSITIONS",
    "SpanAccumulator",
    "as_distribution",
    "head_spans",
    "implied_weights",
    "layer_weights",
    "rollout",
    "uniform_span",
    "with_residual",
]
