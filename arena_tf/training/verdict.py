"""Does a model beat chance? The bar a test accuracy must clear to say that it learns.

Chance is the share of the test split's most common label (what always answering that label
scores). A model "learns" when its test accuracy is above chance by STANDARD_ERRORS binomial
standard errors of that share on the test examples; otherwise the run is a smoke run: it shows that
the pipeline runs, not that the model learns.
"""

import math

STANDARD_ERRORS = 3


def verdict(accuracy, chance, examples):
    """'learns' when `accuracy` beats `chance` by STANDARD_ERRORS standard errors, else 'smoke'."""
    bar = chance + STANDARD_ERRORS * math.sqrt(chance * (1 - chance) / examples)
    return "learns" if accuracy > bar else "smoke"


def summary(accuracy, chance, examples):
    """The closing words of a run: its test accuracy beside chance, and what that shows."""
    said = f"test accuracy {accuracy:.1%} on {examples} examples, chance {chance:.1%}"
    if verdict(accuracy, chance, examples) == "learns":
        return (
            f"{said}: the model learns (above chance by more than {STANDARD_ERRORS} standard "
            "errors)"
        )
    return (
        f"{said}: a smoke run (not above chance by {STANDARD_ERRORS} standard errors): it shows "
        "that training runs, not that the model learns; train longer for that"
    )
