"""Every numeric setting of every config section against NaN, the infinities, negatives, zero and
huge values (Hypothesis): each value is accepted exactly when its declared range
(arena_tf/settings.py) accepts it, and refused otherwise with one line in the shared style naming
the setting. In-process, so that many values stay fast; tests/test_bad_input.py feeds a few of them
through the command line."""

import dataclasses
import math
from typing import Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena_tf import settings as declared
from arena_tf.config import SECTIONS, ConfigError, load_experiment
from tests.one_line import assert_one_error_line

SPECIAL = [math.nan, math.inf, -math.inf, 0, 0.0, -1, -1e-9, 1e-300, 2**31, 2**63, 1e308, 10**30]
FIELDS = [(section, name) for section, ranges in declared.RANGES.items() for name in ranges]


def numbers():
    """NaN, the infinities, negatives, zero, huge values, and everything between."""
    return st.one_of(
        st.sampled_from(SPECIAL),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(allow_nan=True, allow_infinity=True),
    )


def field_type(section, name):
    return next(f.type for f in dataclasses.fields(SECTIONS[section]) if f.name == name)


def well_typed(section, name, value):
    """Whether `value` has a type the field takes (an int field refuses floats, NaN included)."""
    return isinstance(value, int) or field_type(section, name) in (float, Optional[float])


def build(section, name, value):
    """The section's dataclass with its defaults and `value` for `name` (the model's width kept a
    multiple of its heads where qkv_dim is not the setting under test)."""
    values = {name: value}
    if section == "model" and name == "num_heads" and isinstance(value, int) and value > 0:
        values["qkv_dim"] = value
    return SECTIONS[section](**values)


def assert_refused_naming(error, section, name):
    """One line in the shared style naming the setting (`train.grad_clip=-1 ...`, or the field
    alone where the type is wrong: `emb_dim=nan has the wrong type`)."""
    assert_one_error_line(f"error: {error}\n", f"{name}=")


@pytest.mark.parametrize("section, name", FIELDS, ids=[f"{s}.{n}" for s, n in FIELDS])
@settings(
    max_examples=60,
    deadline=None,
    database=None,  # no example database: every run draws afresh
    suppress_health_check=[HealthCheck.too_slow],
)
@given(value=numbers())
def test_each_numeric_setting_is_accepted_exactly_in_its_declared_range(section, name, value):
    accepted = well_typed(section, name, value) and declared.RANGES[section][name].accepts(value)
    if not math.isfinite(value) or value < 0:
        assert not accepted, "NaN, the infinities and negatives are never a setting"
    if abs(value) > 2**63 and f"{section}.{name}" not in declared.ACCEPTED_LATER:
        assert not accepted, "a huge value is refused unless its acceptance is documented"
    try:
        build(section, name, value)
    except ConfigError as error:
        assert not accepted or "divisible" in str(error) or "vocabulary" in str(error), str(error)
        assert_refused_naming(error, section, name)
    else:
        assert accepted, f"{section}.{name}={value!r} was accepted"


@pytest.mark.parametrize("text", [".nan", ".inf", "-.inf", "-1", "0", "1e400", "1000000000000"])
def test_every_numeric_setting_given_by_set_is_refused_or_in_range(text):
    """The same through --set's YAML (`.nan`, `.inf`), in the order a user meets it."""
    for section, name in FIELDS:
        try:
            config = load_experiment("listops", "full", [f"{section}.{name}={text}"])
        except ConfigError as error:
            assert_refused_naming(error, section, name)
        else:
            value = getattr(getattr(config, section), name)
            assert declared.RANGES[section][name].accepts(value), f"{section}.{name}={text}"


def test_every_numeric_field_has_a_declared_range():
    assert declared.undeclared(SECTIONS) == []


def test_attention_lengths_past_the_input_are_refused_once_the_length_is_known():
    config = load_experiment(
        "listops", "linformer", ["model.attention_params.projected_length=300"]
    ).model
    model = dataclasses.replace(config, max_len=256)
    with pytest.raises(ConfigError) as refused:
        declared.check_attention_lengths(model, ConfigError)
    assert_one_error_line(
        f"error: {refused.value}\n",
        "model.attention_params.projected_length=300 is longer than the input",
    )
    declared.check_attention_lengths(dataclasses.replace(config, max_len=300), ConfigError)


def test_row_and_column_positions_are_refused_on_a_sequence_that_is_not_a_square_image():
    config = load_experiment("image", "full", ["model.position_embedding=sinusoidal_2d"]).model
    pixels = dataclasses.replace(config, padding_id=None)
    with pytest.raises(ConfigError) as refused:
        declared.check_grid_positions(dataclasses.replace(pixels, max_len=2000), ConfigError)
    assert_one_error_line(
        f"error: {refused.value}\n", "needs a square image, but the input has 2000 positions"
    )
    declared.check_grid_positions(dataclasses.replace(pixels, max_len=1024), ConfigError)


def test_row_and_column_positions_are_refused_on_tokens_that_are_not_pixels():
    config = load_experiment("text", "full", ["model.position_embedding=sinusoidal_2d"]).model
    with pytest.raises(ConfigError) as refused:
        declared.check_grid_positions(dataclasses.replace(config, max_len=1024), ConfigError)
    assert_one_error_line(f"error: {refused.value}\n", "these tokens are not pixels")


def test_a_batch_whose_activations_overflow_32_bit_indices_is_refused_with_the_data_length():
    experiment = load_experiment("listops", "full", ["train.batch_size=65000"], preset="tiny")
    short = dataclasses.replace(
        experiment, model=dataclasses.replace(experiment.model, max_len=256)
    )
    declared.check_with_the_data(short, ConfigError)  # 65,000 x 257 x 128 elements fit
    with pytest.raises(
        ConfigError,
        match=r"train.batch_size=65000 makes activations of "
        r"8,528,000,000 elements \(1025 positions x 128 wide\); "
        r"expected at most 2,147,483,647",
    ):
        declared.check_with_the_data(experiment, ConfigError)


def test_the_documented_acceptances_are_declared():
    for key in declared.ACCEPTED_LATER:
        section, name = key.split(".")
        assert declared.RANGES[section][name].high == math.inf
