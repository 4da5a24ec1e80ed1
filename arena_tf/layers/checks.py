"""One-line validation of mechanism parameters: what was wrong, what is accepted."""

import math


def fail(owner, name, value, expected):
    raise ValueError(f"{owner}: {name}={value!r} is invalid; expected {expected}")


def positive_int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        fail(owner, name, value, "a positive integer")
    return value


def non_negative_int(owner, name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        fail(owner, name, value, "an integer >= 0")
    return value


def positive_float(owner, name, value):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value > 0)
    ):
        fail(owner, name, value, "a positive number")
    return float(value)


def probability(owner, name, value):
    if (
        isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1
    ):  # NaN too
        fail(owner, name, value, "a number in [0, 1)")
    return float(value)


def boolean(owner, name, value):
    if not isinstance(value, bool):
        fail(owner, name, value, "True or False")
    return value


def one_of(owner, name, value, choices):
    if value not in choices:
        fail(owner, name, value, f"one of {', '.join(map(repr, choices))}")
    return value


def int_list(owner, name, value):
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        fail(owner, name, value, "a list of non-negative integer positions")
    return [int(v) for v in value]
