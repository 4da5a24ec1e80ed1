"""What a results.json row must hold, declared once, and its check.

Every writer of results.json (`record_all`, and `merge` through it) checks each row completely
before anything is written, and every reader (`read_results`, behind `reproduce report`) checks the
rows it reads: a row holding only its key fields is refused in one line naming the row and the
field, never written and then failing every later report with a KeyError.
"""

import math

from arena_tf import cli


def text(value):
    return isinstance(value, str) and bool(value.strip())


def whole(low):
    return lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= low


def fraction(value):
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 0 <= value <= 1
    )


def seconds(value):
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def curve(value):
    return isinstance(value, list) and all(
        isinstance(point, list) and len(point) == 2 and whole(0)(point[0]) and fraction(point[1])
        for point in value
    )


def optional(check):
    return lambda value: value is None or check(value)


def session(value):
    return (
        isinstance(value, dict) and seconds(value.get("seconds")) and whole(0)(value.get("steps"))
    )


def listed(value):
    return isinstance(value, list) and all(isinstance(entry, dict) for entry in value)


# field -> (check, what it must be): REQUIRED are in every row (what `reproduce report` reads of
# each), OPTIONAL may be absent, and are checked where present.
REQUIRED = {
    "suite": (text, "the suite's name"),
    "task": (text, "the task's name"),
    "mechanism": (text, "the mechanism's name"),
    "seed": (whole(0), "an integer >= 0"),
    "test_accuracy": (fraction, "a fraction in [0, 1]"),
    "best_val_accuracy": (fraction, "a fraction in [0, 1]"),
    "steps": (whole(1), "an integer >= 1"),
    "train_seconds": (optional(seconds), "seconds >= 0, or null with last_session"),
    "device": (text, "the device it trained on"),
    "git_commit": (optional(text), "a commit or null"),
    "command": (text, "the command that reproduces it"),
}
OPTIONAL = {
    "test_examples": (whole(1), "an integer >= 1"),
    "date": (text, "the date it was recorded"),
    "validation_curve": (curve, "a list of [step, accuracy] pairs"),
    "chance": (optional(fraction), "a fraction in [0, 1] or null"),
    "final_train_accuracy": (optional(fraction), "a fraction in [0, 1] or null"),
    "backend": (optional(text), "a Keras backend or null"),
    "dtype": (text, "the precision it trained in"),
    "last_session": (session, "{seconds, steps} of the last session"),
    "reruns": (listed, "a list of re-run records"),
}


def problem(row):
    """What is wrong with `row` (a phrase naming the field), or None when it is a whole row."""
    if not isinstance(row, dict):
        return f"a {type(row).__name__}, not a row"
    missing = [name for name in REQUIRED if name not in row]
    if missing:
        return f"no {', '.join(missing)}"
    for name, (check, expected) in {**REQUIRED, **OPTIONAL}.items():
        if name in row and not check(row[name]):
            return f"{name}={row[name]!r} is not {expected}"
    if row["train_seconds"] is None and "last_session" not in row:
        return "train_seconds is null without last_session"
    return None


def check_rows(rows, where):
    """Raise UsageError naming the first row of `rows` (from `where`) that is not whole."""
    for index, row in enumerate(rows):
        wrong = problem(row)
        if wrong:
            key = (
                "/".join(str(row.get(k)) for k in ("suite", "task", "mechanism", "seed"))
                if isinstance(row, dict)
                else f"#{index}"
            )
            raise cli.UsageError(
                f"{where}: row {index} ({key}) is not a whole result: {wrong}",
                f"every field of a results.json row ({', '.join(REQUIRED)})",
                "use the rows `python -m arena_tf.reproduce SUITE` wrote",
            )
    return rows
