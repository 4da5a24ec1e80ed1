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

import importlib

# The package's names, imported on first use (PEP 562): `python -m arena_tf.analysis` runs this file
# before its command can check KERAS_BACKEND, so it must not import Keras itself.
_HOMES = {
    "rollout": ("rollout", "with_residual"),
    "span": ("SpanAccumulator", "head_spans", "uniform_span"),
    "weights": ("MAX_POSITIONS", "as_distribution", "implied_weights", "layer_weights"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_HOME_OF)


def __getattr__(name):
    if name not in _HOME_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME_OF[name]}"), name)
