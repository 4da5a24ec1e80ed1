"""The JAX trainer learns as the TensorFlow one does: the tiny ListOps learning check of
tests/training/test_learning.py, run here under KERAS_BACKEND=jax (the trainer the GPU machines
use)."""

from tests.training.test_learning import (  # noqa: F401 (collected here, under JAX)
    test_tiny_transformer_beats_the_majority_class_on_listops,
)
