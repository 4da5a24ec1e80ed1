"""train.learning_rate_scales: AdamW whose step for the named weights is scaled (S4's lower rate
for its state matrix), checked against plain AdamW step by step; a name no weight has is refused
in one line before training."""

import keras
import numpy as np
import pytest

from arena_tf.config import ConfigError, TrainConfig
from arena_tf.schedules import ScaledAdamW, make_optimizer
from tests.training.conftest import TINY, cli_args, loop
from tests.training.test_errors import fails_in_style


def two_weights():
    a = keras.Variable(np.array([1.0, -2.0]), name="a")
    b = keras.Variable(np.array([0.5, 3.0]), name="b")
    return a, b


def steps(optimizer, variables, count=3):
    """Each variable's values after `count` steps of fixed, different gradients."""
    rng = np.random.default_rng(0)
    for _ in range(count):
        grads = [keras.ops.convert_to_tensor(rng.normal(size=2)) for _ in variables]
        optimizer.apply(grads, variables)
    return [keras.ops.convert_to_numpy(v) for v in variables]


def test_scaled_weights_move_by_the_factor_and_the_others_as_plain_adamw():
    settings = dict(learning_rate=0.01, beta_1=0.9, beta_2=0.98, epsilon=1e-9, weight_decay=0.0)
    plain = steps(keras.optimizers.AdamW(**settings), two_weights())
    start = [keras.ops.convert_to_numpy(v) for v in two_weights()]
    scaled = steps(ScaledAdamW(learning_rate_scales={"a": 0.1}, **settings), two_weights())
    # float32 weights near 1: their rounding (6e-8) bounds how exactly a difference is known.
    np.testing.assert_allclose(scaled[0] - start[0], 0.1 * (plain[0] - start[0]), atol=1e-6)
    np.testing.assert_allclose(scaled[1], plain[1], rtol=1e-6)
    assert np.all(np.abs(plain[0] - start[0]) > 1e-3)  # the step is not negligible


def test_make_optimizer_uses_the_scales_only_when_named():
    assert type(make_optimizer(TrainConfig())) is keras.optimizers.AdamW
    scaled = make_optimizer(TrainConfig(learning_rate_scales={"log_a_real": 0.1}))
    assert isinstance(scaled, ScaledAdamW) and scaled.learning_rate_scales == {"log_a_real": 0.1}


@pytest.mark.parametrize("scale", [0, -1, "fast", True])
def test_a_scale_that_is_not_a_positive_number_is_refused(scale):
    with pytest.raises(ConfigError, match="learning_rate_scales.a="):
        TrainConfig(learning_rate_scales={"a": scale})


def test_a_name_no_weight_has_is_one_line_before_training(capsys, listops_dir, tmp_path):
    line = fails_in_style(
        capsys,
        cli_args(
            listops_dir,
            tmp_path / "run",
            [*TINY, *loop(1), "train.learning_rate_scales.log_a_reel=0.1"],
        ),
        "train.learning_rate_scales names log_a_reel, which no weight of the model is called",
    )
    assert "expected names of the model's weights" in line
    assert not (tmp_path / "run").exists()
