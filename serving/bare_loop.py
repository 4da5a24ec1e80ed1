"""`python -m serving.bare_loop RUN_DIR`: the bare timing loop, arena_tf.serving.bare_loop (its
--help says the rest)."""

import runpy

if __name__ == "__main__":
    runpy.run_module("arena_tf.serving.bare_loop", run_name="__main__", alter_sys=True)
