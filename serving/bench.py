"""`python -m serving.bench RUN_DIR`: the serving bench, arena_tf.serving.bench (its --help says the
rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.serving.bench", run_name="__main__", alter_sys=True)
