"""Everything the exports of one model share: the source, the parity examples, the Keras FP32
reference logits and the pass marks, prepared once.

    context = prepare("runs/text-performer", count=256)
    context.source.config.attention, context.examples.origin, context.reference.logits.shape
"""

import dataclasses

from arena_tf.export.examples import DEFAULT_COUNT, Examples, load_examples
from arena_tf.export.parity import Reference, Thresholds
from arena_tf.export.source import Source, load_source


@dataclasses.dataclass
class ExportContext:
    """The inputs of every export of one model."""

    source: Source
    examples: Examples
    reference: Reference
    thresholds: Thresholds


def prepare(path, count=None, thresholds=None):
    """Load the model at `path`, pick `count` (default 256) parity examples, compute the Keras
    FP32 logits."""
    source = load_source(path)
    examples = load_examples(source, count or DEFAULT_COUNT)
    return ExportContext(source, examples, Reference(source, examples), thresholds or Thresholds())
