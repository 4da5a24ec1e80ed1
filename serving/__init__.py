"""The serving commands as the README spells them, run from the repository's root:
`python -m serving.bench`, `serving.report`, `serving.submission`, `serving.bare_loop`. Each runs
its module of `arena_tf.serving`, where the bench and the runtimes live."""
