"""The learns / smoke verdict a run ends with: above chance by three standard errors or not."""

from arena_tf.training.verdict import summary, verdict


def test_a_run_learns_only_three_standard_errors_above_chance():
    # chance 0.5 on 400 examples: one standard error is 0.025, so the bar is 0.575
    assert verdict(0.58, 0.5, 400) == "learns"
    assert verdict(0.57, 0.5, 400) == "smoke"
    assert verdict(0.5, 0.5, 400) == "smoke"


def test_the_closing_line_says_smoke_run_at_chance_and_learns_above_it():
    assert summary(0.324, 0.142, 500).startswith(
        "test accuracy 32.4% on 500 examples, chance 14.2%: the model learns"
    )
    at_chance = summary(0.51, 0.5, 2000)
    assert "a smoke run" in at_chance and "not that the model learns" in at_chance
