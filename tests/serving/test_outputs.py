"""Outputs are checked against the task's label strings before they count as predictions."""

import pytest

from arena_tf.serving.outputs import InvalidOutputs, check

LABELS = tuple(str(i) for i in range(10))


def test_strings_of_the_label_set_are_outputs():
    assert check(["0", "9", "3"], LABELS) == ["0", "9", "3"]
    assert check([], LABELS) == []


@pytest.mark.parametrize(
    "values, reason",
    [
        (["0", "10"], "1 of 2 outputs invalid (output 1: '10' is not a label of the task)"),
        ([7], "7 is a JSON number, not a string"),
        ([True], "true is a JSON boolean, not a string"),
        ([[0.1] * 10], "is a JSON array, not a string"),
        ([" 3"], "' 3' is not a label of the task"),
        ([None, None, "1"], "2 of 3 outputs invalid (output 0: null is a JSON null, not a string"),
    ],
)
def test_anything_else_is_invalid_naming_how_many_and_the_first(values, reason):
    with pytest.raises(InvalidOutputs) as error:
        check(values, LABELS)
    assert reason in str(error.value)
    assert str(error.value).endswith(
        "expected one of the task's target strings ('0', '1', '2', "
        "'3', '4', '5', '6', '7', '8', '9') per row"
    )
