"""arena_tf: the efficient Transformers of Long Range Arena for TensorFlow / Keras 3."""

from arena_tf.cli import check_keras_backend, quiet_interrupts, quiet_tensorflow

# TensorFlow's C++ log (CUDA absent, oneDNN, CPU features) is noise for our commands.
quiet_tensorflow()
# A misspelt KERAS_BACKEND: one line, before Keras' own import fails with a traceback.
check_keras_backend()
# Ctrl-C while a command imports TensorFlow: one line, as inside the command (arena_tf.cli).
quiet_interrupts()

__version__ = "0.1.0"
