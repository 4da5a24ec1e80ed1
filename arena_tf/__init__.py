"""arena_tf: the efficient Transformers of Long Range Arena for TensorFlow / Keras 3."""

import os

# TensorFlow's start-up banners (CUDA absent, oneDNN, CPU features) are noise for our commands.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

__version__ = "0.1.0"
