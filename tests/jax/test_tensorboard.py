"""The TensorBoard checks of tests/training/test_tensorboard.py, run under JAX (KERAS_BACKEND=jax):
the JAX trainer writes the same events without TensorFlow."""

from tests.training.test_tensorboard import (  # noqa: F401 (collected here, under JAX)
    run_dir,
    test_every_scalar_sits_in_a_group_and_states_its_unit,
    test_the_final_test_accuracy_is_in_the_run_as_in_metrics_json,
    test_the_run_holds_its_config_as_text_and_an_hparams_record,
    test_validation_holds_what_evaluation_measures_and_training_the_rest,
)
