"""`python -m serving.submission RUN_DIR`: an exported run as a Pentathlon submission,
arena_tf.serving.submission (its --help says the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.serving.submission", run_name="__main__", alter_sys=True)
