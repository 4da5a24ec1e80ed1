"""What a submission's outputs must be: one per row, each a string of the task's label set (its
target strings, "0" to "9" for ListOps), as Pentathlon compares outputs with targets.

    labels = outputs.check(values, ("0", "1", "2"))   # the strings; InvalidOutputs if not

A row whose outputs are not all valid is "invalid": it is not timed as a success, has no accuracy
and stays out of the ratio tables and charts.
"""

import json


class InvalidOutputs(ValueError):
    """The submission answered with outputs that are not labels of the task; the message names
    how many and the first one, and says what was expected."""


def expected(labels):
    """What a valid output is, in words."""
    shown = ", ".join(map(repr, list(labels)[:12])) + (", ..." if len(labels) > 12 else "")
    return f"one of the task's target strings ({shown}) per row"


JSON_TYPES = {
    bool: "boolean",
    int: "number",
    float: "number",
    list: "array",
    dict: "object",
    type(None): "null",
}


def problem(output, labels):
    """Why `output` is not valid (a short phrase), or '' when it is."""
    if not isinstance(output, str):
        return f"{json.dumps(output)[:60]} is a JSON {JSON_TYPES[type(output)]}, not a string"
    if output not in labels:
        return f"{output!r:.60} is not a label of the task"
    return ""


def check(values, labels):
    """`values` as a list of label strings; InvalidOutputs when any is not a string of `labels`."""
    values, labels = list(values), frozenset(labels)
    bad = [(i, reason) for i, v in enumerate(values) for reason in [problem(v, labels)] if reason]
    if bad:
        index, reason = bad[0]
        raise InvalidOutputs(
            f"{len(bad)} of {len(values)} outputs invalid (output {index}: "
            f"{reason}); expected {expected(sorted(labels, key=label_order))}"
        )
    return values


def label_order(label):
    """Numeric labels in numeric order, others after them alphabetically."""
    return (0, int(label), "") if label.isdecimal() else (1, 0, label)
