"""The parity check every export runs: an artifact's logits against the Keras FP32 model's.

FP32 artifacts: logits within `fp32_max_abs_diff` (1e-4) of Keras everywhere. Reduced precision
(bf16, fp16): argmax agreement with Keras >= 99% and, where the examples have labels, accuracy
within 0.5 points of Keras's. The report (a dict, saved as `<artifact>.parity.json`) also holds the
examples' origin, comparisons with other models (the SavedModel, the FP32 ONNX) and, for ONNX,
the providers the session really ran on.

    reference = Reference(source, examples)          # Keras FP32 logits, computed once
    report = parity_report("model.onnx", "fp16", logits, reference, others={"model.onnx": fp32})
    report["passed"], failure_line(report)
"""

import dataclasses
import platform

import keras
import numpy as np
import onnxruntime
import tensorflow as tf
import tf2onnx

from export.precision import model_in_precision
from export.runners import keras_predictor, run_batched

REFERENCE = "keras_fp32"


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Pass marks: FP32 max |logit difference|; reduced precision argmax agreement and accuracy."""

    fp32_max_abs_diff: float = 1e-4
    min_argmax_agreement: float = 0.99
    max_accuracy_drop_points: float = 0.5


class Reference:
    """The Keras FP32 model (rebuilt in float32 whatever policy it was trained under) and its
    logits on the parity examples, computed once per export."""

    def __init__(self, source, examples):
        self.source, self.examples = source, examples
        self.model = model_in_precision(source.model, source.config, "fp32")
        self.logits = run_batched(keras_predictor(self.model), examples.arrays)


def compare(logits, reference_logits):
    """Max and mean |difference| and argmax agreement of two logit arrays; for the examples
    whose class differs, the largest reference margin (top-1 minus top-2 logit): a small one
    means near-ties flipped by rounding, a large one a real disagreement."""
    difference = np.abs(logits.astype("float64") - reference_logits)
    agree = logits.argmax(-1) == reference_logits.argmax(-1)
    top_two = np.sort(reference_logits, axis=-1)[:, -2:]
    margins = (top_two[:, 1] - top_two[:, 0])[~agree]
    return {
        "max_abs_diff": float(np.max(difference)),
        "mean_abs_diff": float(np.mean(difference)),
        "argmax_agreement": float(np.mean(agree)),
        "disagreements": int(np.sum(~agree)),
        "largest_margin_flipped": float(margins.max()) if margins.size else None,
        "finite": bool(np.isfinite(logits).all()),
    }


def accuracy(logits, labels):
    return float(np.mean(logits.argmax(-1) == labels))


def _check(name, value, limit, passed):
    return {"name": name, "value": value, "limit": limit, "passed": bool(passed)}


def max_abs_diff_check(report, thresholds):
    diff = report["comparisons"][REFERENCE]["max_abs_diff"]
    limit = thresholds.fp32_max_abs_diff
    return _check("max |logit - keras fp32 logit|", diff, limit, diff <= limit)


def agreement_check(report, thresholds):
    agreement = report["comparisons"][REFERENCE]["argmax_agreement"]
    limit = thresholds.min_argmax_agreement
    return _check("argmax agreement with keras fp32", agreement, limit, agreement >= limit)


def accuracy_check(report, thresholds):
    if "accuracy" not in report:
        return None  # generated examples have no labels
    drop = 100 * (report["accuracy"][REFERENCE] - report["accuracy"]["artifact"])
    limit = thresholds.max_accuracy_drop_points
    return _check("accuracy drop vs keras fp32 (points)", drop, limit, drop <= limit)


def finite_check(report, thresholds):
    finite = report["comparisons"][REFERENCE]["finite"]
    return _check("all logits finite", finite, True, finite)


CHECKS = {
    "fp32": (finite_check, max_abs_diff_check),
    "bf16": (finite_check, agreement_check, accuracy_check),
    "fp16": (finite_check, agreement_check, accuracy_check),
}


def versions():
    """Library versions that produced and checked the artifact."""
    return {"python": platform.python_version(), "tensorflow": tf.__version__,
            "keras": keras.__version__, "tf2onnx": tf2onnx.__version__,
            "onnxruntime": onnxruntime.__version__}


def parity_report(artifact, precision, logits, reference, others=None, thresholds=Thresholds(),
                  **details):
    """The parity report of `artifact`'s `logits` against the reference (and `others`: {name:
    logits} compared for information); `details` (providers, ...) are stored as given."""
    examples = reference.examples
    report = {
        "artifact": str(artifact),
        "precision": precision,
        "examples": examples.describe(),
        "comparisons": {REFERENCE: compare(logits, reference.logits)},
        **details,
    }
    for name, other in (others or {}).items():
        report["comparisons"][name] = compare(logits, other)
    if examples.labels is not None:
        report["accuracy"] = {REFERENCE: accuracy(reference.logits, examples.labels),
                              "artifact": accuracy(logits, examples.labels)}
    checks = [check(report, thresholds) for check in CHECKS[precision]]
    report["checks"] = [c for c in checks if c is not None]
    report["passed"] = all(c["passed"] for c in report["checks"])
    report["versions"] = versions()
    return report


def summary(report):
    """'max |diff| 3.1e-07, argmax agreement 100.0% on 256 examples (generated)' for the console."""
    comparison, examples = report["comparisons"][REFERENCE], report["examples"]
    return (f"max |diff| {comparison['max_abs_diff']:.1e}, argmax agreement "
            f"{100 * comparison['argmax_agreement']:.1f}% on {examples['count']} examples "
            f"({examples['origin'].split(':')[0]})")


def failure_line(report):
    """One line naming the failed checks of a report."""
    failed = [f"{c['name']} = {c['value']:.4g} (limit {c['limit']:.4g})"
              for c in report["checks"] if not c["passed"]]
    examples = report["examples"]
    return f"{'; '.join(failed)} on {examples['count']} examples ({examples['origin']})"
