"""Outputs are checked against the task's label set before they count as predictions."""

import pytest

from serving.outputs import InvalidOutputs, predictions


def test_class_ids_and_logits_of_the_label_set_are_predictions():
    assert predictions([0, 9, [0.1, 2.0, -1.0] + [0.0] * 7], num_classes=10) == [0, 9, 1]
    assert predictions([[1, 3], [2.5, -1e30]], num_classes=2) == [1, 0]  # ints are numbers too


@pytest.mark.parametrize("values, reason", [
    ([0, 10], "1 of 2 outputs invalid (output 1: class id 10 is out of range)"),
    ([-1], "class id -1 is out of range"),
    ([True], "True is a boolean, not a class id"),
    ([2.0], "2.0 is neither a class id nor a list of logits"),
    ([[0.0] * 3], "3 logits, not 10"),
    ([[]], "an empty list of logits"),
    ([[0.0] * 9 + [float("inf")]], "a logit inf that is not finite"),
    ([[0.0] * 9 + ["x"]], "a logit 'x' that is not a number"),
    ([{"label": 1}], "is neither a class id nor a list of logits"),
    ([None, None, 1], "2 of 3 outputs invalid (output 0: None is neither"),
])
def test_anything_else_is_invalid_naming_how_many_and_the_first(values, reason):
    with pytest.raises(InvalidOutputs) as error:
        predictions(values, num_classes=10)
    assert reason in str(error.value)
    assert str(error.value).endswith("expected a class id in [0, 10) or a list of 10 finite "
                                     "logits per instance")


def test_without_a_label_set_logits_must_agree_in_length():
    assert predictions([5, [0.0, 1.0]]) == [5, 1]
    with pytest.raises(InvalidOutputs, match=r"output 1: 3 logits, not 2\).*all of one length"):
        predictions([[0.0, 1.0], [0.0, 1.0, 2.0]])
