"""Training, in pieces: `experiment` (the config and data a command describes, checked),
`run_dir` (the lock, and which run a directory belongs to), `console` (progress lines),
`errors` (one-line failures), `verdict` (learns or smoke run), `events` (reading TensorBoard
scalars back) and `tf_trainer` (the loop on tf.distribute). The command line is
`python -m arena_tf.train`."""
