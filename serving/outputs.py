"""What a model's outputs must be: one per instance, each a class id of the task's label set or a
list of that many finite logits. Independent of the wire format: outputs arrive as decoded JSON
values (int, float, list, ...) whichever protocol carried them.

    predictions = outputs.predictions(values, num_classes=10)   # class ids; InvalidOutputs if not

A row whose outputs are not all valid is "invalid": it is not timed as a success, has no accuracy
and stays out of the ratio tables and charts.
"""

import math
import numbers


class InvalidOutputs(ValueError):
    """The model answered with outputs that are not predictions of the task; the message names
    how many and the first one, and says what was expected."""


def expected(num_classes):
    """What a valid output is, in words."""
    if num_classes:
        return (f"a class id in [0, {num_classes}) or a list of {num_classes} finite logits "
                "per instance")
    return "a class id >= 0 or a list of finite logits (all of one length) per instance"


def problem(output, num_classes, length):
    """Why `output` is not valid (a short phrase), or '' when it is. `length`: the logits length
    every list must have (num_classes, or the first list's length when the label set is unknown)."""
    if isinstance(output, bool):
        return f"{output!r:.40} is a boolean, not a class id"
    if isinstance(output, int):
        if output < 0 or (num_classes and output >= num_classes):
            return f"class id {output} is out of range"
        return ""
    if isinstance(output, list):
        if not output:
            return "an empty list of logits"
        if length is not None and len(output) != length:
            return f"{len(output)} logits, not {length}"
        for value in output:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                return f"a logit {value!r:.40} that is not a number"
            if not math.isfinite(value):
                return f"a logit {value!r} that is not finite"
        return ""
    return f"{output!r:.60} is neither a class id nor a list of logits"


def predictions(values, num_classes=None):
    """The predicted class of each output (a class id as is, the argmax of logits); InvalidOutputs
    when any output is not valid for a task of `num_classes` labels (None: the label set is
    unknown; class ids must then be >= 0 and logits lists all of one length)."""
    values = list(values)
    length = num_classes or next((len(v) for v in values if isinstance(v, list) and v), None)
    bad = [(i, reason) for i, v in enumerate(values) for reason in [problem(v, num_classes, length)]
           if reason]
    if bad:
        index, reason = bad[0]
        raise InvalidOutputs(f"{len(bad)} of {len(values)} outputs invalid (output {index}: "
                             f"{reason}); expected {expected(num_classes)}")
    return [v if isinstance(v, int) else max(range(len(v)), key=v.__getitem__) for v in values]
