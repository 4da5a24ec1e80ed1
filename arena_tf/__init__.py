"""arena_tf: the efficient Transformers of Long Range Arena for TensorFlow / Keras 3."""

from arena_tf.cli import quiet_tensorflow

# TensorFlow's C++ log (CUDA absent, oneDNN, CPU features) is noise for our commands.
quiet_tensorflow()

__version__ = "0.1.0"
