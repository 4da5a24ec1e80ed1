"""The JAX job of `make test` (KERAS_BACKEND=jax): these tests train with the JAX backend in this
process, so the TensorFlow job skips them; both jobs share tests/training's small ListOps set."""

import keras
import pytest

from tests.training.conftest import listops_dir  # noqa: F401 (the shared fixture)

collect_ignore_glob = [] if keras.backend.backend() == "jax" else ["test_*.py"]


@pytest.fixture
def jax_env():
    """Environment for a `python -m arena_tf.train` child on JAX."""
    return {"KERAS_BACKEND": "jax"}
