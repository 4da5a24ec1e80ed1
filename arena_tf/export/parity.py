"""The parity check every export runs: an artifact's logits against the Keras FP32 model's.

FP32 artifacts: logits within `fp32_max_abs_diff` (1e-4) of Keras everywhere.

Reduced precision (bf16, fp16) rounds every activation, so logits move by a small error and an
example whose top two classes nearly tie may swap them; that is rounding, not a broken export.
The check therefore asks two things, both measured against the precision's *expected logit
error* ε = K · u · S, where u is the precision's unit roundoff (bf16 2^-8, fp16 2^-11), S the
root mean square of the FP32 logits on the parity examples (their scale) and K = 32 the
allowance for the growth of rounding error through the network, several times what the test
suite's tiny models of all 14 mechanisms show in FP16 ONNX (median example 0.8 to 2.6 u·S, largest
1.9 to 9.1 u·S; `pytest -rA tests/export/test_export_mechanisms.py -k fp16` prints them):
headroom for deeper, wider models that the suite does not measure:

1. the median example's logit error (max over its classes of |logit - FP32 logit|) is at most ε:
   a graph computing something else (a wrong op, an overflow) misses by about S, ~1/u times more;
2. every *decided* example keeps its FP32 class, where decided means an FP32 margin (top-1 minus
   top-2 logit) above 2ε: each of the two logits moves by at most ε when rounding behaves, so only
   an error beyond what the precision explains can swap them. No flip is allowed among them (one
   is a real defect on that input, e.g. a hash bucket moved); examples at or below the margin may
   flip and are only counted (`comparisons.keras_fp32.disagreements`).

Accuracy is reported (labelled examples) but not checked: it can only change through flipped
examples, near-ties included, so a fixed limit in points sits on the same edge as a fixed
agreement rate (one flip of 256 is 0.4 points). The report (a dict, saved as
`<artifact>.parity.json`) holds all figures: ε and how it was derived, the measured error
quantiles, the decided count, comparisons with other models (the SavedModel, the FP32 ONNX),
the examples' origin and, for ONNX, the providers the session really ran on.

    reference = Reference(source, examples)          # Keras FP32 logits, computed once
    report = parity_report("model.onnx", "fp16", logits, reference, others={"model.onnx": fp32})
    report["passed"], failure_line(report)
"""

import dataclasses

import numpy as np

from arena_tf.benchmark import machine
from arena_tf.export.precision import model_in_precision
from arena_tf.export.runners import keras_predictor, run_batched

REFERENCE = "keras_fp32"


# Unit roundoff (half the distance from 1 to the next number) of each compute precision.
UNIT_ROUNDOFF = {"fp32": 2.0**-24, "bf16": 2.0**-8, "fp16": 2.0**-11}


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """Pass marks: FP32 max |logit difference|; for reduced precision the allowance K of the
    expected logit error K * u * S (see the module docstring)."""

    fp32_max_abs_diff: float = 1e-4
    error_allowance: float = 32.0
    # int64 vs int32 ids, a shorter input vs the same padded: the same graph input, so the same
    # logits (measured: identical)
    contract_max_abs_diff: float = 1e-5


class Reference:
    """The Keras FP32 model (rebuilt in float32 whatever policy it was trained under) and its
    logits on the parity examples, computed once per export."""

    def __init__(self, source, examples):
        self.source, self.examples = source, examples
        self.model = model_in_precision(source.model, source.config, "fp32")
        self.logits = run_batched(keras_predictor(self.model), examples.arrays)


def margins(logits):
    """Top-1 minus top-2 logit of each example."""
    top_two = np.sort(logits, axis=-1)[:, -2:]
    return top_two[:, 1] - top_two[:, 0]


def example_errors(logits, reference_logits):
    """Per example, the largest |logit - reference logit| over its classes (float64)."""
    return np.abs(logits.astype("float64") - reference_logits).max(axis=-1)


def compare(logits, reference_logits):
    """Max and mean |difference| and argmax agreement of two logit arrays; for the examples
    whose class differs, the largest reference margin (top-1 minus top-2 logit): a small one
    means near-ties flipped by rounding, a large one a real disagreement."""
    difference = np.abs(logits.astype("float64") - reference_logits)
    agree = logits.argmax(-1) == reference_logits.argmax(-1)
    flipped = margins(reference_logits)[~agree]
    return {
        "max_abs_diff": float(np.max(difference)),
        "mean_abs_diff": float(np.mean(difference)),
        "argmax_agreement": float(np.mean(agree)),
        "disagreements": int(np.sum(~agree)),
        "largest_margin_flipped": float(flipped.max()) if flipped.size else None,
        "finite": bool(np.isfinite(logits).all()),
    }


def expected_error(precision, logits, reference_logits, thresholds):
    """The expected logit error of `precision` on these examples and the measured one."""
    unit, scale = UNIT_ROUNDOFF[precision], float(np.sqrt(np.mean(np.square(reference_logits))))
    epsilon = thresholds.error_allowance * unit * scale
    errors = example_errors(logits, reference_logits)
    quantiles = {
        q: float(np.quantile(errors, q)) if np.isfinite(errors).all() else float("inf")
        for q in (0.5, 0.95, 1.0)
    }
    agree = logits.argmax(-1) == reference_logits.argmax(-1)
    decided = margins(reference_logits) > 2 * epsilon
    rounding = unit * scale
    return {
        "expected_logit_error": epsilon,
        "derivation": (
            f"K * u * S = {thresholds.error_allowance:g} * {unit:.3g} * {scale:.4g}: "
            f"K the allowance for rounding error growing through the network, u the "
            f"unit roundoff of {precision}, S the RMS of the FP32 logits"
        ),
        "allowance": thresholds.error_allowance,
        "unit_roundoff": unit,
        "logit_scale_rms": scale,
        "measured_error": {
            "median": quantiles[0.5],
            "p95": quantiles[0.95],
            "max": quantiles[1.0],
            "median_in_u_s": quantiles[0.5] / rounding if rounding else None,
            "max_in_u_s": quantiles[1.0] / rounding if rounding else None,
        },
        "decided": {
            "margin_above": 2 * epsilon,
            "count": int(decided.sum()),
            "flipped": int((decided & ~agree).sum()),
            "undecided_flipped": int((~decided & ~agree).sum()),
        },
    }


def accuracy(logits, labels):
    return float(np.mean(logits.argmax(-1) == labels))


def _check(name, value, limit, passed, detail=None):
    check = {"name": name, "value": value, "limit": limit, "passed": bool(passed)}
    return {**check, "detail": detail} if detail else check


def max_abs_diff_check(report, thresholds):
    diff = report["comparisons"][REFERENCE]["max_abs_diff"]
    limit = thresholds.fp32_max_abs_diff
    return _check("max |logit - keras fp32 logit|", diff, limit, diff <= limit)


def median_error_check(report, thresholds):
    error = report["error"]
    median, limit = error["measured_error"]["median"], error["expected_logit_error"]
    return _check("median logit error vs keras fp32", median, limit, median <= limit)


def decided_flips_check(report, thresholds):
    decided = report["error"]["decided"]
    detail = f"{decided['count']} examples with an FP32 margin above {decided['margin_above']:.3g}"
    return _check(
        "class flips among decided examples",
        decided["flipped"],
        0,
        decided["flipped"] == 0,
        detail=detail,
    )


def finite_check(report, thresholds):
    finite = report["comparisons"][REFERENCE]["finite"]
    return _check("all logits finite", finite, True, finite)


CHECKS = {
    "fp32": (finite_check, max_abs_diff_check),
    "bf16": (finite_check, median_error_check, decided_flips_check),
    "fp16": (finite_check, median_error_check, decided_flips_check),
}


def contract_checks(predict, arrays, config, limit, predict_int64=None, rows=8):
    """Checks that an artifact keeps the input contract (arena_tf/export/contract.py) on the first
    `rows` examples: int64 ids give the int32 logits (`predict_int64`, SavedModels), and where the
    length is dynamic, an input cut to half of max_len gives the logits of that input padded to
    max_len with the padding id. `predict`: a batch of arrays -> logits, as the runners make."""
    sample = [np.asarray(a[:rows]) for a in arrays]
    checks = []
    if predict_int64 is not None:
        diff = _max_diff(predict_int64([a.astype("int64") for a in sample]), predict(sample))
        checks.append(
            _check("int64 ids vs int32 ids: max |logit difference|", diff, limit, diff <= limit)
        )
    if config.padding_id is not None:
        short = [a[:, : max(1, config.max_len // 2)] for a in sample]
        padded = [
            np.pad(a, [(0, 0), (0, config.max_len - a.shape[1])], constant_values=config.padding_id)
            for a in short
        ]
        diff = _max_diff(predict(short), predict(padded))
        checks.append(
            _check(
                f"length {short[0].shape[1]} ids vs the same padded to "
                f"{config.max_len}: max |logit difference|",
                diff,
                limit,
                diff <= limit,
            )
        )
    return checks


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, "float64") - np.asarray(b, "float64"))))


LIBRARIES = ("tensorflow", "keras", "tf2onnx", "onnxruntime", "jax")


def versions():
    """Versions of the libraries installed where the artifact was produced and checked (read
    without importing them: a JAX-only export has no TensorFlow)."""
    return machine.versions(LIBRARIES)


def parity_report(
    artifact,
    precision,
    logits,
    reference,
    others=None,
    thresholds=Thresholds(),
    extra_checks=(),
    **details,
):
    """The parity report of `artifact`'s `logits` against the reference (and `others`: {name:
    logits} compared for information); `extra_checks`: more check dicts (the signature's
    contract); `details` (providers, ...) are stored as given."""
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
    if precision != "fp32":
        report["error"] = expected_error(precision, logits, reference.logits, thresholds)
    if examples.labels is not None:
        report["accuracy"] = {
            REFERENCE: accuracy(reference.logits, examples.labels),
            "artifact": accuracy(logits, examples.labels),
        }
    report["checks"] = [check(report, thresholds) for check in CHECKS[precision]]
    report["checks"] += list(extra_checks)
    report["passed"] = all(c["passed"] for c in report["checks"])
    report["versions"] = versions()
    return report


def summary(report):
    """'max |diff| 3.1e-07 on 256 examples (generated)' for FP32; for reduced precision the
    measured error against the expected one and the decided examples."""
    comparison, examples = report["comparisons"][REFERENCE], report["examples"]
    where = f"on {examples['count']} examples ({examples['origin'].split(':')[0]})"
    if "error" not in report:
        return f"max |diff| {comparison['max_abs_diff']:.1e} {where}"
    error = report["error"]
    decided = error["decided"]
    return (
        f"median |diff| {error['measured_error']['median']:.1e} (expected <= "
        f"{error['expected_logit_error']:.1e}), {decided['flipped']} of {decided['count']} "
        f"decided examples flipped, {decided['undecided_flipped']} near-ties flipped, {where}"
    )


def failure_line(report):
    """One line naming the failed checks of a report."""
    failed = [
        f"{c['name']} = {_figure(c['value'])} (limit {_figure(c['limit'])}"
        + (f", {c['detail']})" if c.get("detail") else ")")
        for c in report["checks"]
        if not c["passed"]
    ]
    examples = report["examples"]
    origin = examples["origin"].replace(";", ",")  # one line of `what; expected; fix` parts
    return f"{', '.join(failed)} on {examples['count']} examples ({origin})"


def _figure(value):
    return f"{value:.4g}" if isinstance(value, float) else str(value)
