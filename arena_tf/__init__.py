"""arena_tf: the efficient Transformers of Long Range Arena for TensorFlow / Keras 3.

Importing it (or any of its modules) leaves the process as it was: the commands prepare their own
process (`arena_tf.cli.prepare_process`)."""

__version__ = "0.1.0"
