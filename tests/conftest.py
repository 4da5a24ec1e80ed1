"""Test settings: quiet TensorFlow, deterministic seeds, float32 policy restored after each test."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # as every arena_tf command (cli.quiet_tensorflow)
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _float32_policy_and_seed():
    keras.utils.set_random_seed(0)
    yield
    keras.mixed_precision.set_global_policy("float32")
