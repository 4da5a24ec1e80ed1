"""arena_tf: the efficient Transformers of Long Range Arena for TensorFlow / Keras 3."""

__version__ = "0.1.0"
